/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Leases, in both directions.  We take one for two system calls to learn
 * whether anybody else has a file open (rule C's writer test), and we
 * open files without waiting on anybody's lease.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "internal.h"

/* The tester runs on a stack that the sanitizers did not give it. */
#if defined(__has_attribute)
#if __has_attribute(no_sanitize)
#define TESTER_ATTRS __attribute__((no_sanitize("address", "undefined")))
#endif
#endif
#ifndef TESTER_ATTRS
#define TESTER_ATTRS
#endif

/* How long an open retries while a lease is broken: another locker's
 * test holds its lease for two system calls, a scheduling delay at most. */
#define LEASE_RETRY_MS 100
#define LEASE_RETRY_NS 1000000L

/*
 * The tester's stack.  It calls fcntl(2) twice and returns: a few
 * hundred bytes; the rest is for a libc that checks the stack, and for
 * valgrind, which runs the tester as a forked process.
 */
#define TESTER_STACK 16384

/*
 * An O_EXCL create makes the name visible a moment before its creator's
 * open counts as a writer (the kernel creates the inode, then opens it):
 * in that moment nobody else seems to have the file open.  So a file is
 * asked about only once it is LEASE_MIN_AGE_MS old, and a younger one is
 * waited for, that long at most.  A creator stalled inside open(2) for
 * longer than that is a margin (doc/protocol.md, rule C).
 *
 * The age is the file's mtime's, and that stamp is early, not late: the
 * kernel takes it from its coarse clock, which is the time of the last
 * timer tick (4 ms apart at HZ=250, 10 ms at HZ=100, and a tick may come
 * late), so a file stamped at t was created up to a tick and a bit after
 * t (4.8 ms measured at HZ=250 on ext4 and tmpfs).  MTIME_EARLY_MS is
 * added to the age asked for, so that the real age is at least
 * LEASE_MIN_AGE_MS at HZ=100 too.
 */
#define LEASE_MIN_AGE_MS 10
#define MTIME_EARLY_MS 12

static void wait_min_age(const struct stat *st, unsigned int grace_ms)
{
	const int64_t need = LEASE_MIN_AGE_MS + MTIME_EARLY_MS;
	int64_t left = io_grace_left_ms(st, grace_ms);
	int64_t age = (int64_t)grace_ms - left;

	if (left <= 0 || age >= need)
		return;
	io_pause((long)(need - age) * 1000000L);
}

/* The tester's exit status: 0 granted (and given back), EAGAIN refused,
 * any other errno value no answer. */
static int TESTER_ATTRS tester(void *arg)
{
	int fd = *(const int *)arg;

	if (fcntl(fd, F_SETLEASE, F_WRLCK) < 0)
		return errno ? errno : EIO;
	if (fcntl(fd, F_SETLEASE, F_UNLCK) < 0)
		return errno ? errno : EIO;
	return 0;
}

/*
 * The lease taken in a process of its own, so that no signal reaches
 * our caller.  F_SETLEASE makes the caller the description's owner
 * (the kernel sets it to the current thread group), and another
 * process's open then signals the owner to give the lease back: our
 * caller's SIGURG handler, or any other handler, would see it.  So a
 * tester takes and drops the lease: a clone sharing our memory (the
 * parent waits, as for vfork(2)) and our descriptor table (clone.c says
 * why a copy would not do), with every signal blocked, so that the
 * break's signal stays pending in it and is discarded at its exit.  Its
 * exit signal is none: no SIGCHLD reaches the caller, and only a wait
 * for clone children (__WCLONE) reaps it, so the caller's own wait(2)
 * for any child never meets it.  Its answer comes back in its exit
 * status (valgrind runs it as a fork, with a copy of the table).
 * 1: alone; 0: another description is open; -errno: the kernel gave no
 * answer; LEASE_UNASKED: the question could not be put (the clone was
 * refused, by RLIMIT_NPROC or a full pids cgroup; the tester was killed
 * or reaped by somebody else's wait).
 */
static int lease_in_tester(int fd)
{
	char stack[TESTER_STACK] __attribute__((aligned(16)));
	sigset_t all, old;
	int status = 0, cancel, r;
	pid_t pid;

	/* waitpid(2) is a cancellation point: a cancellation there would
	 * leave the tester unreaped.  It has exited by then (vfork). */
	r = pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	if (r != 0)
		return -r;
	sigfillset(&all);
	r = pthread_sigmask(SIG_SETMASK, &all, &old);
	if (r != 0) {
		(void)pthread_setcancelstate(cancel, NULL);
		return -r;
	}
	pid = clone(tester, stack + sizeof(stack),
		    CLONE_VM | CLONE_VFORK | (int)clone_files_flag(), &fd);
	r = pid < 0 ? LEASE_UNASKED : 0;
	while (pid > 0 && waitpid(pid, &status, (int)__WCLONE) < 0) {
		if (errno != EINTR) {
			r = LEASE_UNASKED;	/* reaped by a caller's __WALL wait */
			break;
		}
	}
	/* Killed between its two calls, it left the lease in place: given
	 * back here, whatever it said (no change of owner for F_UNLCK;
	 * without a lease, EAGAIN and nothing done). */
	if (pid > 0)
		(void)fcntl(fd, F_SETLEASE, F_UNLCK);
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	(void)pthread_setcancelstate(cancel, NULL);
	if (r < 0)
		return r;
	if (!WIFEXITED(status))
		return LEASE_UNASKED;
	if (WEXITSTATUS(status) == 0)
		return 1;
	return WEXITSTATUS(status) == EAGAIN ? 0 : -WEXITSTATUS(status);
}

/* 1: alone; 0: another description is open; -errno: no answer. */
static int lease_test(int fd)
{
	struct f_owner_ex owner;
	int sig, r;

	/* A borrowed description (pidlock_lock_fd()) may have an owner and
	 * a signal of its caller's: the lease made the tester its owner,
	 * and its end cleared both. */
	sig = fcntl(fd, F_GETSIG);
	if (sig < 0 || fcntl(fd, F_GETOWN_EX, &owner) < 0)
		return -errno;
	r = lease_in_tester(fd);
	if ((fcntl(fd, F_SETOWN_EX, &owner) < 0 ||
	     fcntl(fd, F_SETSIG, sig) < 0) && r >= 0)
		r = -errno;
	return r;
}

/*
 * Is fd's open file description the only one on its inode?  A write
 * lease is granted only then (fcntl(2)), and is given back at once.
 * 1: alone; 0: another description is open (a writer between its
 * create and its write has one); -errno: no answer (another user's file
 * without CAP_LEASE, a file system without leases, leases disabled,
 * and a shared file system's client: fstype_others_unseen()).
 * st and grace_ms: the file's age, waited for first (wait_min_age()).
 */
int lease_alone(int fd, const struct stat *st, unsigned int grace_ms)
{
	int r = fstype_others_unseen(fd);

	if (r != 0)
		return r < 0 ? r : -EOPNOTSUPP;
	wait_min_age(st, grace_ms);
	return lease_test(fd);
}

/*
 * A release's question (release.c): does another description have the
 * file we hold open?  1 yes, 0 no, -errno no answer, as lease_alone()
 * inverted.  No wait for the file's age: a creator's open that does not
 * count yet made the file after ours, which it cannot have.  A question
 * that could not be put (LEASE_UNASKED) is a yes: the answer keeps a
 * second holder out, so not knowing it keeps the file (doc/protocol.md,
 * "Kept while used").
 */
int lease_others_open(int fd)
{
	int r = fstype_others_unseen(fd);

	if (r != 0)
		return r < 0 ? r : -EOPNOTSUPP;
	r = lease_test(fd);
	if (r == LEASE_UNASKED)
		return 1;
	return r < 0 ? r : !r;
}

/*
 * open(2) of a file that must not hang us: flags carry O_NONBLOCK, so a
 * FIFO swapped in, or somebody's lease, answers at once.  A lease held
 * by another locker's lease_alone() is gone within a moment: retried.
 * Returns the descriptor or -errno (-EWOULDBLOCK: a lease held longer).
 */
int lease_open(const char *path, int flags)
{
	int err = EWOULDBLOCK;

	for (int tries = 0; tries < LEASE_RETRY_MS && err == EWOULDBLOCK;
	     tries++) {
		int fd = open(path, flags);

		if (fd >= 0)
			return fd;
		err = errno;
		if (err == EWOULDBLOCK)
			io_pause(LEASE_RETRY_NS);
	}
	return -err;
}
