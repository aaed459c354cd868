/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A timed writer's place in the kernel's queue.  Shared acquirers give
 * way to a write request blocked in the kernel (klock_writer_waits(),
 * doc/protocol.md "Writers first"); a writer with a timeout cannot
 * block there itself, since nothing ends a blocked flock(2) or
 * F_OFD_SETLKW but a signal, and a library has none of its own.  So
 * while readers hold the file, its stand-in blocks for it: a child,
 * forked without the caller's fork handlers, asks F_OFD_SETLKW for a
 * write lock on the writer's own open file description.  Readers see
 * the request and back off; when the holds of the moment end, the
 * kernel grants it, to the description, which the writer then holds,
 * and the stand-in exits.  At the end of a round (its time, or a
 * signal for the writer) the stand-in is killed, which withdraws a
 * request not yet granted.
 *
 * Only the OFD lock is asked for: an OFD lock names no process, while a
 * flock(2) lock would name the stand-in, whose pid is soon free for any
 * other process, in /proc/locks as its holder.  The flock is taken by
 * the writer after the grant, without waiting; refused it (a flock-only
 * reader, flock(1) -s, still in), the writer gives the OFD lock back at
 * once and waits as before: a waiter holds nothing.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/*
 * The child: every signal blocked (inherited), killed with its parent
 * thread, it blocks until the write lock is granted to the description.
 * Exit status 0: granted.
 */
static __attribute__((noreturn)) void standin_run(int fd, pid_t parent)
{
	unsigned int busy = 0;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(1);
	_exit(klock_take(fd, PIDLOCK_KIND_OFD, true, &busy) == 0 ? 0 : 1);
}

/*
 * The stand-in is clone.c's fork: the child runs on a copy of our
 * memory, so what it does touches nothing of ours, and no fork handler
 * of the caller's (Python's among them) sees a child that runs no code
 * of theirs.  Its exit signal is none, as for lease.c's tester: no
 * SIGCHLD for the caller, and only a wait for clone children (__WCLONE)
 * reaps it.  It shares our descriptor table (clone.c says why); where
 * it cannot (valgrind), it is not started: a copy of the table would
 * keep our other lock files' locks alive, and close them in the child.
 * Returns the child's pid (and its pidfd in *pidfd), or -errno.
 */
static pid_t standin_start(int fd, int *pidfd)
{
	unsigned long files = clone_files_flag();
	pid_t parent = getpid(), pid;
	sigset_t all, old;
	int r;

	if (!files)
		return -ENOSYS;
	sigfillset(&all);
	r = pthread_sigmask(SIG_SETMASK, &all, &old);
	if (r != 0)
		return -r;
	pid = clone_fork(CLONE_PIDFD | files, pidfd);
	if (pid == 0)
		standin_run(fd, parent);
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	return pid;
}

/* Killed if still waiting, and reaped: 1 if it was granted, else 0
 * (not granted, or not known: reaped by a caller's __WALL wait). */
static int standin_end(pid_t pid, int pidfd)
{
	int status = 0;
	pid_t r;

	/* Through the pidfd: if a caller's __WALL wait reaped it, its pid
	 * may name somebody else by now. */
	(void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	do
		r = waitpid(pid, &status, (int)__WCLONE);
	while (r < 0 && errno == EINTR);
	io_close_keep_errno(pidfd);
	return r == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/*
 * After a grant: the flock too, without waiting.  A reader that found
 * no writer queued (the stand-in had just exited) may hold a flock of a
 * moment: it gives it back once our OFD lock refuses it its own, so a
 * refusal is tried again a few times.  Refused still (a flock-only
 * reader holds), the OFD lock is given back: a waiter holds nothing.
 */
#define FLOCK_TRIES 8
#define FLOCK_PAUSE_NS 250000L

static int standin_complete(int fd, unsigned int kinds)
{
	unsigned int busy = 0;

	if (!(kinds & PIDLOCK_KIND_FLOCK))
		return 0;
	for (int i = 0; i < FLOCK_TRIES; i++) {
		int r = klock_take(fd, PIDLOCK_KIND_FLOCK, false, &busy);

		if (r != -EWOULDBLOCK)
			return r;
		io_pause(FLOCK_PAUSE_NS);
	}
	return klock_drop(fd, PIDLOCK_KIND_OFD);
}

bool standin_wanted(const struct pidlock *lock, const struct watch *w,
		    int fd, int64_t deadline)
{
	return deadline > 0 && fd >= 0 && !lock->set.shared &&
	       (lock->set.kinds & PIDLOCK_KIND_OFD) && !w->standin_failed &&
	       klock_ofd_conflict(fd) == F_RDLCK;
}

/*
 * Sleep until the stand-in exits, the deadline, a signal, or the path
 * no longer names fd's file (looked at every poll interval: a release
 * by unlink grants the old inode at once, but a file replaced while its
 * holders stay would not).  1: it exited; 0: time is up or the file
 * was replaced; -errno (-EINTR: a signal handler ran).
 */
static int standin_sleep(const struct pidlock *lock, int fd, int pidfd,
			 int64_t deadline)
{
	for (;;) {
		struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
		int64_t left = deadline - io_now_ms();
		struct stat st;
		int n;

		if (left <= 0)
			return 0;
		if (left > (int64_t)lock->set.retry_ms)
			left = (int64_t)lock->set.retry_ms;
		n = poll(&pfd, 1, (int)left);
		if (n != 0)
			return n < 0 ? -errno : 1;
		n = existing_names_inode(lock, fd, &st);
		if (n != 0)
			return n < 0 ? n : 0;
	}
}

/*
 * Wait until deadline with a stand-in queued for fd's description.
 * 0: the wait is over, granted or not (the caller's next try on fd
 * tells); -EINTR: a signal handler ran; -errno.  A stand-in that could
 * not be started, or that failed, turns them off for the rest of this
 * wait (w->standin_failed), and the caller waits as without them.
 */
int standin_wait(const struct pidlock *lock, struct watch *w, int fd,
		 int64_t deadline)
{
	int pidfd = -1, r;
	pid_t pid = standin_start(fd, &pidfd);

	if (pid < 0) {
		w->standin_failed = true;
		return 0;
	}
	r = standin_sleep(lock, fd, pidfd, deadline);
	if (!standin_end(pid, pidfd)) {
		/* Exited at once without a grant: it cannot queue here. */
		if (r == 1)
			w->standin_failed = true;
		/* A grant we could not learn of is given back; without one,
		 * this changes nothing. */
		(void)klock_drop(fd, PIDLOCK_KIND_OFD);
		return r < 0 ? r : 0;
	}
	r = standin_complete(fd, lock->set.kinds);
	return r < 0 ? r : 0;
}
