/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pidlock FD and pidlock -u FD: the lock on a descriptor that the shell
 * opened itself (exec 9<>FILE), as flock(1) FD takes it.  The path comes
 * from the descriptor (/proc/self/fd/FD); the library locks the shell's
 * open file description, checks that the path still names its file, and
 * writes a record that names the shell: of our ancestors that have the
 * open file description open, the furthest (a wrapper between, such as
 * timeout(1), has it too, and exits with us).  The lock then lasts as
 * long as the shell keeps the descriptor open, or until pidlock -u.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sysexits.h>
#include <unistd.h>

#include "cli.h"

/* kcmp(2)'s type for "the same open file description", from
 * <linux/kcmp.h>, which not every libc's headers (musl's) carry. */
#ifndef KCMP_FILE
#define KCMP_FILE 0
#endif

/* The descriptor's file, as the kernel names it: an absolute path, or
 * "/path (deleted)" once it was unlinked (the library then finds that
 * it no longer names the file). */
static int fd_path(int fd, char *buf, size_t size)
{
	char link[64];
	ssize_t n;

	text_set(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, size - 1);
	if (n < 0)
		return -errno;
	if ((size_t)n >= size - 1)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return 0;
}

/* Why the descriptor cannot carry the lock, said so that a script's
 * author knows what to change; NULL if it can. */
static const char *unusable_why(int fd)
{
	struct stat st;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return "is not open (open the lock file first: exec FD<>FILE)";
	if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode))
		return "is not a regular file";
	/* FD> and FD>> are flock(1)'s own examples: the library reads and
	 * writes the record of those through a second open of the inode. */
	if ((fl & O_ACCMODE) == O_RDONLY)
		return "is open for reading only (FD<FILE): the lock needs "
		       "writing; open it with exec FD<>FILE (or FD>>FILE)";
	return NULL;
}

/* ---- who keeps the descriptor open -------------------------------- */

/*
 * Is descriptor `theirs` of process pid our fd's open file description?
 * kcmp(2) knows.  Where it is not built in (ENOSYS), nothing else can
 * tell a description from another open of the same file (a supervisor's,
 * an `exec 8<FILE`), and naming such a process would leave a live pid in
 * the record after the real keeper is gone: unknown (-ENOSYS), and the
 * caller names the parent, as 1.2.0 did.  1, 0, or -errno (EPERM: not
 * ours to look at).
 */
static int same_description(pid_t pid, int theirs, int fd)
{
	long r = syscall(SYS_kcmp, getpid(), pid, KCMP_FILE, fd, theirs);

	if (r >= 0)
		return r == 0;
	if (errno == EBADF)
		return 0;	/* no such descriptor there */
	return -errno;
}

/* Has process pid our fd's open file description open, as any of its
 * descriptors?  The same number first: it is the inherited one. */
static int shares_description(pid_t pid, int fd)
{
	char dir[64];
	struct dirent *de;
	DIR *d;
	int r = same_description(pid, fd, fd);

	if (r != 0)
		return r;
	text_set(dir, sizeof(dir), "/proc/%ld/fd", (long)pid);
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while (r == 0 && (de = readdir(d)) != NULL) {
		char *end;
		long n = strtol(de->d_name, &end, 10);

		if (*end || end == de->d_name || n == fd || n < 0 || n > INT_MAX)
			continue;
		r = same_description(pid, (int)n, fd);
	}
	(void)closedir(d);	/* read-only: nothing to lose */
	return r;
}

/* The parent of pid, from /proc/PID/stat; 0 if unknown. */
static pid_t parent_of(pid_t pid)
{
	struct proc_stat st;

	return proc_stat(pid, &st) == 0 ? st.ppid : 0;
}

/*
 * The process the record names: of the chain of our ancestors that have
 * fd's open file description open, starting at our parent, the last one
 * (the shell that opened it keeps it after a wrapper between, such as
 * timeout(1), is gone).  Where the parent cannot be looked at (another
 * user's, or outside our pid namespace: 0), the parent, as before.  -1
 * when the parent certainly does not have it open (pidlock 9 9<>FILE,
 * exec pidlock 9): the lock would end as we exit.
 */
static pid_t keeper(int fd)
{
	pid_t pid = getppid(), up;
	int r = pid > 0 ? shares_description(pid, fd) : -ESRCH;

	if (r == 0)
		return -1;
	if (r < 0)
		return pid;
	while ((up = parent_of(pid)) > 0 && shares_description(up, fd) == 1)
		pid = up;
	return pid;
}

/* The handle for the descriptor's path, or an exit status. */
static int prepare(const struct opts *o, char *path, size_t size,
		   struct pidlock **lockp)
{
	const char *why = unusable_why(o->fd);
	int r;

	/* A descriptor that is not open: 65, the status flock(1) gives it
	 * (its flock(2) fails with EBADF), so that a script that tells it
	 * apart still can.  The other refusals are usage errors. */
	if (why) {
		warn_msg("descriptor %d %s", o->fd, why);
		return fcntl(o->fd, F_GETFD) < 0 ? EX_DATAERR : EX_USAGE;
	}
	r = fd_path(o->fd, path, size);
	if (r < 0) {
		warn_msg("descriptor %d: cannot read its path from "
			 "/proc/self/fd: %s", o->fd, strerror(-r));
		return EX_OSERR;
	}
	r = make_lock(o, path, lockp);
	if (r < 0)
		return fail_path(path, -r);
	return 0;
}

/* The file the shell opened is no longer at the path: its descriptor can
 * never hold the lock again, only a new open can. */
static int stale(const struct opts *o, const char *path, const char *done)
{
	warn_prefix(path);
	out(stderr, "descriptor %d's file was removed or replaced at this "
	    "path%s; open it again (exec %d<>FILE) and retry\n", o->fd, done,
	    o->fd);
	return EX_TEMPFAIL;
}

static int failed(const struct opts *o, const char *path, int err,
		  const char *done)
{
	if (err == ESTALE)
		return stale(o, path, done);
	if (err == EBADF) {
		warn_msg("descriptor %d is not open for writing "
			 "(exec %d<>FILE)", o->fd, o->fd);
		return EX_USAGE;
	}
	return fail_path(path, err);
}

/*
 * Busy, on an empty file through a descriptor that the shell opened with
 * FD>: that open emptied the holder's record, if it had one, before we ran
 * (the kernel locks still exclude, but a spec-only locker sees an empty
 * file).  Say so, with the forms that never truncate, while the cause is
 * at hand.
 */
static void say_truncated(const struct opts *o, const char *path)
{
	struct stat st;
	int fl = fcntl(o->fd, F_GETFL);

	if (o->quiet || fl < 0 || (fl & O_ACCMODE) != O_WRONLY ||
	    (fl & O_APPEND) || fstat(o->fd, &st) < 0 || st.st_size != 0)
		return;
	warn_file(path, "descriptor %d is open for writing (%d>FILE), which "
		  "emptied the file as the shell opened it, and any holder's "
		  "record with it; open it with %d>>FILE or %d<>FILE, which "
		  "never truncate", o->fd, o->fd, o->fd, o->fd);
}

int cmd_fd(const struct opts *o)
{
	char path[PATH_MAX + 16];
	struct pidlock *lock;
	struct opts mine = *o;
	int r = prepare(o, path, sizeof(path), &lock);

	if (r != 0)
		return r;
	mine.fd_pid = keeper(o->fd);
	if (mine.fd_pid < 0) {
		pidlock_free(lock);
		warn_msg("descriptor %d is not open in the parent process %ld: "
			 "the lock would end as pidlock exits; open it in the "
			 "shell itself (exec %d<>FILE), then run pidlock %d",
			 o->fd, (long)getppid(), o->fd, o->fd);
		return EX_USAGE;
	}
	r = acquire_lock(&mine, lock, o->timeout_ms, "lock is busy");
	pidlock_free(lock);	/* it holds nothing: the shell's fd does */
	if (r < 0)
		return failed(o, path, -r, "");
	if (r > 0) {
		say_truncated(o, path);
		return o->conflict_code;
	}
	if (o->verbose)
		warn_file(path, "locked through descriptor %d of process %ld",
			  o->fd, (long)mine.fd_pid);
	return o->fd_command ? run_fd_command(o) : 0;
}

int cmd_unlock(const struct opts *o)
{
	char path[PATH_MAX + 16];
	struct pidlock *lock;
	int r = prepare(o, path, sizeof(path), &lock);

	if (r != 0)
		return r;
	r = pidlock_unlock_fd(lock, o->fd);
	pidlock_free(lock);
	if (r == -ENOLCK) {
		warn_file(path, "descriptor %d does not hold the lock: another "
			  "process does; the file was left as it was", o->fd);
		return o->conflict_code;
	}
	if (r < 0)
		return failed(o, path, -r, " (its kernel locks are dropped)");
	if (o->verbose)
		warn_file(path, "released descriptor %d", o->fd);
	return 0;
}
