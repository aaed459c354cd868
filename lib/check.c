/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Is the lock still ours?  On a local file system nothing but our own
 * close takes a kernel lock away.  On a shared one the server holds the
 * locks for its client, and when the network cuts this host off, the
 * server drops them once the client has been silent for its own
 * timeout, and grants the lock to another host; after a heal the client
 * may even reopen our descriptor without its locks.  The path and the
 * record look the same to us throughout.  So the holder asks the
 * server: another's lock on the inode, a re-take of our own locks
 * without waiting, the path, and the record (doc/protocol.md, "Across
 * a partition").
 *
 * While the server does not answer, every one of those calls hangs, up
 * to the client's own timeout (79 s on a stock GlusterFS), and no
 * signal ends a FUSE call whose request the daemon has read.  So on a
 * shared file system the questions are put by a helper process, and the
 * caller waits for its answer only as long as it asked to.  An answer
 * that comes later is taken by the next check.
 *
 * A lost lock stays lost for the handle (hold.lost): the next holder
 * may have written already.  Refresh and release refuse to write then.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

/* An error that says the server no longer has our file or our
 * connection: the lock is gone with them. */
static int lost_errno(int err)
{
	if (err == ESTALE || err == ENOTCONN || err == ENOENT ||
	    err == EBADF || err == ENOLCK)
		return -ENOLCK;
	return -err;
}

/* Another's kernel lock on our inode: a writer's, or for an exclusive
 * hold anybody's.  Only OFD and classic locks can be asked about. */
static int others_lock(const struct pidlock *lock, int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	if (!(lock->set.kinds & PIDLOCK_KIND_OFD))
		return 0;
	if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
		return lost_errno(errno);
	if (fl.l_type == F_UNLCK)
		return 0;
	return lock->set.shared && fl.l_type == F_RDLCK ? 0 : -ENOLCK;
}

/* Our own locks again, without waiting: a no-op where they are ours
 * (same description, same type), refused where another has them. */
static int retake(const struct pidlock *lock, int fd)
{
	unsigned int busy = 0;
	int r = klock_take_mode(fd, lock->set.kinds, lock->set.shared, false,
				&busy);

	if (r == -EWOULDBLOCK)
		return -ENOLCK;
	return r < 0 ? lost_errno(-r) : 0;
}

/* From a second open file description, which our exclusive locks
 * exclude: 0 a conflict (someone holds them), -ENOLCK nobody does. */
static int probe_kinds(const struct pidlock *lock, int probe)
{
	if (lock->set.kinds & PIDLOCK_KIND_OFD) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

		if (fcntl(probe, F_OFD_GETLK, &fl) < 0)
			return lost_errno(errno);
		if (fl.l_type == F_UNLCK)
			return -ENOLCK;
	}
	if (lock->set.kinds & PIDLOCK_KIND_FLOCK) {
		if (flock(probe, LOCK_EX | LOCK_NB) == 0) {
			(void)flock(probe, LOCK_UN);
			return -ENOLCK;
		}
		if (errno != EWOULDBLOCK)
			return lost_errno(errno);
	}
	return 0;
}

/*
 * Are our exclusive locks still there?  Asked before the re-take, from a
 * second open file description of the file: a re-take from our own
 * cannot tell a lock still ours from one the server dropped and that is
 * free now (a file server restarted without its locks), and would take
 * the dropped one back in silence, though another host may have held it
 * in between.  A dropped lock is lost, for good.  Once this says someone
 * holds them, others_lock() and the re-take tell whether it is us.  A
 * shared hold cannot be told from another reader's: only re-taken.
 */
static int probe_own(const struct pidlock *lock, int fd)
{
	char path[40];
	int probe, r;

	if (lock->set.shared)
		return 0;
	(void)snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	probe = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	/* No /proc, or a file we may not read: not asked. */
	if (probe < 0 && (errno == ENOENT || errno == EACCES))
		return 0;
	if (probe < 0)
		return lost_errno(errno);
	r = probe_kinds(lock, probe);
	io_close_keep_errno(probe);
	return r;
}

/*
 * The record must still be the one we wrote: the next holder on another
 * host may have taken the file over in place, written its own, and died
 * without removing the file, so that nothing else tells.  Asked only on
 * a shared file system: on a local one a record changed under our locks
 * is a lockless writer's (a spec-only peer's, a person's), which our
 * next refresh repairs (pidlock_refresh(3)).  Shared holders write one
 * record among themselves, and one of them may be writing it as we
 * read: only its kind is asked.
 */
static int record_ours(const struct pidlock *lock, int fd)
{
	char buf[CONTENT_READ_MAX];
	struct content c;
	ssize_t n = io_read_bounded(fd, buf, sizeof(buf));
	size_t head;
	pid_t named;

	if (n < 0)
		return lost_errno((int)-n);
	/* The holder's own bytes after the record are not the record. */
	head = content_head(buf, (size_t)n);
	content_parse(buf, head ? head : (size_t)n, &c);
	if (c.released)
		return -ENOLCK;
	if (lock->set.shared)
		return c.shared ? 0 : -ENOLCK;
	named = c.pid ? c.pid : c.bare_pid;
	if (lock->hold.writer == 0)
		return 0;	/* nothing of ours written to compare */
	return named == lock->hold.writer && !host_foreign(&c) ? 0 : -ENOLCK;
}

static bool remote(const struct pidlock *lock);

/*
 * The questions, in the order that costs least when the answer is no:
 * 0 the lock is ours, -ENOLCK it is not, -errno the question failed.
 * fd is a descriptor of our open file description.  pidlock_check()'s
 * (record) asks the record, and whether the locks were dropped; the
 * write guard re-takes them, to write (a refresh repairs what a lockless
 * writer did under them).
 */
static int ask(struct pidlock *lock, int fd, bool record)
{
	struct stat st;
	int r;

	if (fstat(fd, &st) < 0)
		return lost_errno(errno);
	/* A descriptor the client reopened as another file. */
	if (st.st_dev != lock->hold.dev || st.st_ino != lock->hold.ino)
		return -ENOLCK;
	r = others_lock(lock, fd);
	if (r == 0 && record)
		r = probe_own(lock, fd);
	if (r == 0)
		r = retake(lock, fd);
	if (r == 0) {
		r = existing_same_inode(lock, fd, &st);
		if (r > 0)
			r = -ENOLCK;
		else if (r < 0)
			r = lost_errno(-r);
	}
	if (r == 0 && record && remote(lock))
		r = record_ours(lock, fd);
	return r;
}

/*
 * Does the held file live on a shared file system's client, where the
 * server may drop our locks and a call may hang?  Learned at the grant
 * (check_learn()), so that a check asks the file system nothing itself.
 */
static bool remote(const struct pidlock *lock)
{
	return !lock->cache.remote.known ||
	       lock->cache.remote.dev != lock->hold.dev ||
	       lock->cache.remote.caches;
}

void check_learn(struct pidlock *lock)
{
	struct statfs sf;

	lock->hold.reached_ms = io_boot_ms();
	if (lock->cache.remote.known && lock->cache.remote.dev ==
	    lock->hold.dev)
		return;
	if (fstatfs(lock->hold.fd, &sf) < 0)
		return;	/* not known: asked as a remote one */
	lock->cache.remote.known = true;
	lock->cache.remote.dev = lock->hold.dev;
	lock->cache.remote.caches = fstype_caching((unsigned long)sf.f_type);
}

/* An answer taken: what it says is kept in the hold. */
static int settle(struct pidlock *lock, int r, int64_t asked)
{
	if (r == -ENOLCK)
		lock->hold.lost = true;
	else if (r == 0 && asked > lock->hold.reached_ms)
		lock->hold.reached_ms = asked;
	return r;
}

/*
 * The write guard of refresh and release: the questions, put here and
 * now (a write hangs on an unanswering server anyway), but the record's:
 * a record changed under locks that are ours again (our re-take got
 * them) is a lockless writer's or a dead holder's, which the refresh
 * repairs, on FUSE file systems too (bindfs, fuse-overlayfs), as on a
 * local one; pidlock_check() asks it, and its -ENOLCK stays.  A release asks
 * only where the lock can be taken away: on a local file system our
 * locks are ours until our close, and its own checks suffice; they are
 * the cycle's cost.  A refresh, seldom, asks everywhere.
 */
int check_still_ours(struct pidlock *lock, bool everywhere)
{
	int64_t asked = io_boot_ms();

	if (lock->hold.lost)
		return -ENOLCK;
	if (!everywhere && !remote(lock))
		return 0;
	return settle(lock, ask(lock, lock->hold.fd, false), asked);
}

static void helper_close_fds(struct pidlock *lock)
{
	io_close_keep_errno(lock->check.pidfd);
	io_close_keep_errno(lock->check.rfd);
	io_close_keep_errno(lock->check.wfd);
	io_close_keep_errno(lock->check.cfd);
	lock->check.pid = 0;
}

/*
 * The helper shares our descriptor table (clone.c: a copy would close,
 * and so flush, every FUSE file the caller has open): it uses only its
 * own copy of the lock descriptor, cfd, and the pipe, which we close
 * once it has exited, and it closes nothing itself.  Every signal is
 * blocked in it; its parent's death kills it.
 */
static __attribute__((noreturn)) void helper_run(struct pidlock *lock,
						 pid_t parent)
{
	int r = 0;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(1);
	r = ask(lock, lock->check.cfd, true);
	if (write(lock->check.wfd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(1);
	_exit(0);
}

static int helper_start(struct pidlock *lock)
{
	unsigned long files = clone_files_flag();
	pid_t parent = getpid(), pid;
	sigset_t all, old;
	int p[2], r;

	if (!files)
		return -ENOSYS;
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	lock->check.rfd = p[0];
	lock->check.wfd = p[1];
	lock->check.cfd = fcntl(lock->hold.fd, F_DUPFD_CLOEXEC, 0);
	lock->check.pidfd = -1;
	if (lock->check.cfd < 0) {
		r = -errno;
		helper_close_fds(lock);
		return r;
	}
	lock->check.asked_ms = io_boot_ms();
	sigfillset(&all);
	r = pthread_sigmask(SIG_SETMASK, &all, &old);
	if (r != 0) {
		helper_close_fds(lock);
		return -r;
	}
	pid = clone_fork(CLONE_PIDFD | files, &lock->check.pidfd);
	if (pid == 0)
		helper_run(lock, parent);
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		lock->check.pidfd = -1;
		helper_close_fds(lock);
		return pid;
	}
	lock->check.pid = pid;
	return 0;
}

/* Not an answer: the helper died without one (killed with the thread
 * that started it), and is started again. */
#define HELPER_DIED 1

/* Reap the helper that has exited, and take its answer. */
static int helper_reap(struct pidlock *lock)
{
	int answer = HELPER_DIED;
	pid_t r;

	if (read(lock->check.rfd, &answer, sizeof(answer)) !=
	    (ssize_t)sizeof(answer))
		answer = HELPER_DIED;
	do
		r = waitpid(lock->check.pid, NULL, (int)__WCLONE);
	while (r < 0 && errno == EINTR);
	helper_close_fds(lock);
	return answer;
}

/* Wait up to ms for the helper under way: 1 it has exited (reaped,
 * *answer set), 0 not yet, -errno: -EINTR when a signal handler ran,
 * as every wait of the library says (the helper stays under way, and
 * the next check takes its answer).  Taken for "not yet", an interrupted
 * wait made a 1000 ms check say -ETIMEDOUT within microseconds under an
 * interval timer. */
static int helper_wait(struct pidlock *lock, int64_t ms, int *answer)
{
	struct pollfd pfd = { .fd = lock->check.pidfd, .events = POLLIN };
	int n;

	n = poll(&pfd, 1, ms > INT_MAX ? INT_MAX : (int)ms);
	if (n < 0)
		return -errno;
	if (n == 0)
		return 0;
	*answer = helper_reap(lock);
	return 1;
}

/* Enough for a killed helper to exit, beside two busy loops too (25 of
 * 25 reaped); paid in full only when the server holds the helper. */
#define ABANDON_WAIT_MS 10

/* Did the killed helper exit within ABANDON_WAIT_MS?  A signal handler
 * that runs meanwhile (an interval timer) ends a wait, not the time
 * given: ended by it, the helper was abandoned, and an unreaped zombie
 * kept per release until the process ended. */
static bool helper_died(struct pidlock *lock)
{
	int64_t end = io_now_ms() + ABANDON_WAIT_MS, left;
	int answer, r;

	do {
		left = end - io_now_ms();
		r = helper_wait(lock, left > 0 ? left : 0, &answer);
	} while (r == -EINTR && left > 0);
	return r == 1;
}

/*
 * The hold ends with a question unanswered: the helper is killed, and
 * reaped if it dies at once (within ABANDON_WAIT_MS).  One that the
 * server still holds may come back to its descriptors at any time, so
 * their numbers must not be freed for reuse under it, and its copy of
 * the lock descriptor must not keep our locks alive: both its
 * descriptors are replaced by an O_PATH descriptor, on which every
 * call it still makes fails (EBADF), and left, close-on-exec, until the
 * process ends.
 */
void check_abandon(struct pidlock *lock)
{
	int dead;

	if (lock->check.pid == 0)
		return;
	(void)syscall(SYS_pidfd_send_signal, lock->check.pidfd, SIGKILL, NULL,
		      0);
	if (helper_died(lock))
		return;
	dead = open("/", O_PATH | O_CLOEXEC | O_DIRECTORY);
	if (dead >= 0) {
		(void)dup3(dead, lock->check.cfd, O_CLOEXEC);
		(void)dup3(dead, lock->check.wfd, O_CLOEXEC);
		io_close_keep_errno(dead);
	}
	io_close_keep_errno(lock->check.rfd);
	io_close_keep_errno(lock->check.pidfd);
	lock->check.pid = 0;
}

/* The lease: lost once no call has reached the server for lease_ms,
 * suspends counted (io_boot_ms()), as the server counts them; so are
 * a check's bound and its answers' times, which are compared with it. */
static bool lease_over(struct pidlock *lock)
{
	if (!lock->set.lease_ms)
		return false;
	if (io_boot_ms() - lock->hold.reached_ms <= (int64_t)lock->set.lease_ms)
		return false;
	lock->hold.lost = true;
	return true;
}

/*
 * The questions by a helper, waited for until deadline.  A helper still
 * under way from an earlier check is waited for first: its "no" holds;
 * its "yes" is older than this call, so the question is put again.
 */
static int check_remote_timed(struct pidlock *lock, int64_t deadline)
{
	int64_t begun = io_boot_ms();
	int answer = 0, r;

	for (;;) {
		int64_t asked, left = deadline - io_boot_ms();

		if (lock->check.pid == 0) {
			r = helper_start(lock);
			if (r < 0)
				return r;
		}
		asked = lock->check.asked_ms;
		r = helper_wait(lock, left > 0 ? left : 0, &answer);
		if (r < 0)
			return r;
		if (r == 0)
			return -ETIMEDOUT;
		r = answer == HELPER_DIED ? HELPER_DIED
					  : settle(lock, answer, asked);
		if (r == -ENOLCK || (r != HELPER_DIED && asked >= begun))
			return r;
		if (io_boot_ms() >= deadline)
			return -ETIMEDOUT;
	}
}

static int check(struct pidlock *lock, int timeout_ms)
{
	int64_t asked = io_boot_ms();
	int r;

	if (!lock || timeout_ms < -1)
		return -EINVAL;
	if (lock->hold.fd < 0 || lock->hold.lost || lease_over(lock))
		return -ENOLCK;
	if (timeout_ms < 0 || !remote(lock) || !clone_files_flag())
		r = settle(lock, ask(lock, lock->hold.fd, true), asked);
	else
		r = check_remote_timed(lock, asked + timeout_ms);
	if (r == 0 && lease_over(lock))
		r = -ENOLCK;
	/* A question that could not be put says nothing: not "ours". */
	if (r == -ENOSYS || r == -EMFILE || r == -ENFILE || r == -ENOMEM)
		r = -EAGAIN;
	return r;
}

PIDLOCK_EXPORT int pidlock_check(struct pidlock *lock, int timeout_ms)
{
	int old = cancel_off();
	int r = check(lock, timeout_ms);

	cancel_restore(old);
	return io_rc_filter(r);
}

PIDLOCK_EXPORT int pidlock_set_lease(struct pidlock *lock, unsigned int ms)
{
	if (!lock || ms > PIDLOCK_LEASE_MAX_MS)
		return -EINVAL;
	lock->set.lease_ms = ms;
	return 0;
}
