/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Leases, in both directions.  We take one for two system calls to learn
 * whether anybody else has a file open (rule C's writer test), and we
 * open files without waiting on anybody's lease.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/*
 * What the kernel sends us if another process opens the file during the
 * test: ignored by default, unlike SIGIO, whose default kills.  A
 * program with a handler for it (out-of-band socket data) sees a call
 * it has to treat as spurious.
 */
#define LEASE_SIGNAL SIGURG
/* How long an open retries while a lease is broken: another locker's
 * test holds its lease for two system calls, a scheduling delay at most. */
#define LEASE_RETRY_MS 100
#define LEASE_RETRY_NS 1000000L

struct fd_owner {
	struct f_owner_ex owner;
	int sig;
};

/* A borrowed description (pidlock_lock_fd()) may have an owner and a
 * signal of its caller's; the lease's end resets both. */
static int owner_save(int fd, struct fd_owner *o)
{
	memset(o, 0, sizeof(*o));
	o->sig = fcntl(fd, F_GETSIG);
	if (o->sig < 0)
		return -errno;
	if (fcntl(fd, F_GETOWN_EX, &o->owner) < 0)
		return -errno;
	return 0;
}

static int owner_restore(int fd, const struct fd_owner *o)
{
	if (o->sig && fcntl(fd, F_SETSIG, o->sig) < 0)
		return -errno;
	if (o->owner.pid && fcntl(fd, F_SETOWN_EX, &o->owner) < 0)
		return -errno;
	return 0;
}

/*
 * An O_EXCL create makes the name visible a moment before its creator's
 * open counts as a writer (the kernel creates the inode, then opens it):
 * in that moment nobody else seems to have the file open.  So a file is
 * asked about only once it is LEASE_MIN_AGE_MS old by its mtime (which
 * the kernel stamps a clock tick late at most), and a younger one is
 * waited for, that long at most.  A creator stalled inside open(2) for
 * longer than that is a margin (doc/protocol.md, rule C).
 */
#define LEASE_MIN_AGE_MS 10

static void wait_min_age(const struct stat *st, unsigned int grace_ms)
{
	int64_t left = io_grace_left_ms(st, grace_ms);
	int64_t age = (int64_t)grace_ms - left;
	struct timespec pause = { 0 };

	if (left <= 0 || age >= LEASE_MIN_AGE_MS)
		return;
	pause.tv_nsec = (long)(LEASE_MIN_AGE_MS - age) * 1000000L;
	while (nanosleep(&pause, &pause) < 0 && errno == EINTR)
		;
}

/*
 * Is fd's open file description the only one on its inode?  A write
 * lease is granted only then (fcntl(2)), and is given back at once.
 * 1: alone; 0: another description is open (a writer between its
 * create and its write has one); -errno: no answer (another user's file
 * without CAP_LEASE, a file system without leases, leases disabled).
 * st and grace_ms: the file's age, waited for first (wait_min_age()).
 */
int lease_alone(int fd, const struct stat *st, unsigned int grace_ms)
{
	struct fd_owner saved;
	int r;

	wait_min_age(st, grace_ms);
	r = owner_save(fd, &saved);

	if (r < 0)
		return r;
	if (fcntl(fd, F_SETSIG, LEASE_SIGNAL) < 0)
		return -errno;
	if (fcntl(fd, F_SETLEASE, F_WRLCK) < 0) {
		r = errno == EAGAIN ? 0 : -errno;
		/* Refused: the lease never reset the signal. */
		if (fcntl(fd, F_SETSIG, saved.sig) < 0 && r == 0)
			r = -errno;
		return r;
	}
	if (fcntl(fd, F_SETLEASE, F_UNLCK) < 0)
		return -errno;
	r = owner_restore(fd, &saved);
	return r < 0 ? r : 1;
}

/*
 * open(2) of a file that must not hang us: flags carry O_NONBLOCK, so a
 * FIFO swapped in, or somebody's lease, answers at once.  A lease held
 * by another locker's lease_alone() is gone within a moment: retried.
 * Returns the descriptor or -errno (-EWOULDBLOCK: a lease held longer).
 */
int lease_open(const char *path, int flags)
{
	const struct timespec pause = { .tv_nsec = LEASE_RETRY_NS };
	int err = EWOULDBLOCK;

	for (int tries = 0; tries < LEASE_RETRY_MS && err == EWOULDBLOCK;
	     tries++) {
		int fd = open(path, flags);

		if (fd >= 0)
			return fd;
		err = errno;
		if (err == EWOULDBLOCK && nanosleep(&pause, NULL) < 0 &&
		    errno != EINTR)
			return -errno;
	}
	return -err;
}
