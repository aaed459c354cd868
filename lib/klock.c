/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The two kernel locks.  flock(2) excludes flock-family peers
 * (fslock-guard, flock(1), libbsd pidfile(3)); an OFD write lock on the
 * whole file excludes fcntl-family peers (with-lock-ex, lockf, flock
 * --fcntl), since OFD and classic POSIX record locks conflict.  Both
 * belong to the open file description, so they vanish with its last
 * descriptor: a holder that dies frees the lock at once.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "internal.h"

static void whole_file(struct flock *fl, short type)
{
	memset(fl, 0, sizeof(*fl));
	fl->l_type = type;
	fl->l_whence = SEEK_SET;
	fl->l_start = 0;
	fl->l_len = 0;	/* to EOF and beyond: covers with-lock-ex's byte 0 */
}

/*
 * Always flock first, then OFD: two libpidlock waiters then never hold
 * one lock each and wait for the other's.  On failure the caller closes
 * the descriptor, which drops whatever was taken.
 */
int klock_take(int fd, unsigned int kinds, bool wait, unsigned int *busy)
{
	struct flock fl;

	if ((kinds & PIDLOCK_KIND_FLOCK) &&
	    flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) < 0) {
		if (errno != EWOULDBLOCK)
			return -errno;
		*busy = PIDLOCK_KIND_FLOCK;
		return -EWOULDBLOCK;
	}
	if (!(kinds & PIDLOCK_KIND_OFD))
		return 0;
	whole_file(&fl, F_WRLCK);
	if (fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) == 0)
		return 0;
	if (errno != EAGAIN && errno != EACCES)
		return -errno;
	*busy = PIDLOCK_KIND_OFD;
	return -EWOULDBLOCK;
}

/*
 * Which of `kinds` (ones we did not take) does somebody else hold?  The
 * OFD test is a query.  flock has no query, so we take it without
 * waiting and drop it again: we hold the fd's other lock meanwhile, so
 * nobody following our protocol can be hurt by the moment we hold it.
 */
int klock_test(int fd, unsigned int kinds, unsigned int *held)
{
	struct flock fl;

	*held = 0;
	if (kinds & PIDLOCK_KIND_OFD) {
		whole_file(&fl, F_WRLCK);
		if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
			return -errno;
		if (fl.l_type != F_UNLCK)
			*held |= PIDLOCK_KIND_OFD;
	}
	if (kinds & PIDLOCK_KIND_FLOCK) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			if (flock(fd, LOCK_UN) < 0)
				return -errno;
		} else if (errno == EWOULDBLOCK) {
			*held |= PIDLOCK_KIND_FLOCK;
		} else {
			return -errno;
		}
	}
	return 0;
}

/*
 * Let go of the locks while the descriptor stays open.  A process
 * forked during the hold shares the open file description, and with it
 * the locks: without this, a worker that merely inherited the
 * descriptor would keep every waiter out until it exits.
 */
int klock_drop(int fd, unsigned int kinds)
{
	struct flock fl;

	if ((kinds & PIDLOCK_KIND_FLOCK) && flock(fd, LOCK_UN) < 0)
		return -errno;
	if (!(kinds & PIDLOCK_KIND_OFD))
		return 0;
	whole_file(&fl, F_UNLCK);
	if (fcntl(fd, F_OFD_SETLK, &fl) < 0)
		return -errno;
	return 0;
}

/* Query the OFD/POSIX lock only; works on a read-only descriptor. */
int klock_query_ofd(int fd, pid_t *pid)
{
	struct flock fl;

	whole_file(&fl, F_WRLCK);
	if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
		return -errno;
	if (fl.l_type == F_UNLCK)
		return 0;
	if (fl.l_pid > 0 && pid && !*pid)
		*pid = fl.l_pid;
	return PIDLOCK_KIND_OFD;
}

/*
 * Kernel locks on dev/ino as /proc/locks lists them, without taking
 * any: the only way to name a flock(2) holder from outside.  Lines look
 * like "3: FLOCK  ADVISORY  WRITE 4359 00:1b:2 0 EOF"; waiters carry
 * "->" and are skipped.  Returns the PIDLOCK_KIND_* bits, or -errno if
 * /proc/locks cannot be read.  *elsewhere is set when a lock is listed
 * for the same inode number on another device: btrfs lists the file
 * system's device where stat(2) shows the subvolume's, so such a row
 * may well be ours.
 */
int klock_proc(dev_t dev, ino_t ino, pid_t *pid, bool *elsewhere)
{
	char line[256];
	FILE *f = fopen("/proc/locks", "re");
	int kinds = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char type[16];
		int lpid;
		unsigned int maj, min;
		unsigned long long lino;

		if (sscanf(line, "%*d: %15s %*s %*s %d %x:%x:%llu", type, &lpid,
			   &maj, &min, &lino) != 5)
			continue;
		if (lino != (unsigned long long)ino)
			continue;
		if (maj != major(dev) || min != minor(dev)) {
			if (elsewhere)
				*elsewhere = true;
			continue;
		}
		if (strcmp(type, "FLOCK") == 0)
			kinds |= PIDLOCK_KIND_FLOCK;
		else if (strcmp(type, "OFDLCK") == 0 || strcmp(type, "POSIX") == 0)
			kinds |= PIDLOCK_KIND_OFD;
		else
			continue;
		if (lpid > 0 && pid && !*pid)
			*pid = lpid;
	}
	(void)fclose(f);	/* read-only: nothing to flush */
	return kinds;
}

/*
 * Is an exclusive flock held on fd's file?  Asked by taking a shared one
 * without waiting and dropping it: for that instant an exclusive try by
 * somebody else would fail, so callers ask only when /proc/locks cannot
 * answer.  Returns 1, 0, or -errno.
 */
int klock_probe_flock(int fd)
{
	if (flock(fd, LOCK_SH | LOCK_NB) == 0)
		return flock(fd, LOCK_UN) < 0 ? -errno : 0;
	return errno == EWOULDBLOCK ? 1 : -errno;
}
