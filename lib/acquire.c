/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pidlock_acquire(): the loop over create, take over, and wait. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* How often a failed O_TMPFILE set-up or a contended temp name retries. */
#define CREATE_RETRIES 8
/* How often a try (timeout 0) starts over on a path that changed under
 * it before it reports the lock busy. */
#define TRY_AGAIN_MAX 64
/* Tries that found the file replaced, in a row, before a wait pauses
 * between them (again_pause()). */
#define AGAIN_FREE 4
/* Checked once per handle (handle_check_dir()); the directory may not
 * exist at pidlock_new(). */
static int check_dir(struct pidlock *lock)
{
	int r;

	if (lock->cache.dir_checked)
		return 0;
	r = handle_check_dir(lock->set.dir);
	if (r == 0)
		lock->cache.dir_checked = true;
	return r;
}

/*
 * The file system must keep what the protocol stands on: a second open
 * of the path reaches the inode we hold (FUSE file systems built on
 * paths may give each name its own inode), and our kernel locks keep
 * out another open file description (some forward or drop them), and
 * not only here (a network file system with no lock manager).  Asked
 * once per handle, on its first lock; where it fails, nothing we could
 * hold would exclude anybody.
 */
/* Taking the lock the second description must be refused is the
 * question: a query alone can be answered by a file system that then
 * grants the lock all the same (bindfs forwarding locks).  We hold the
 * lock meanwhile, so nobody else can be hurt by what we take. */
static bool ofd_excludes(int fd)
{
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET };

	if (fcntl(fd, F_OFD_SETLK, &fl) < 0)
		return errno == EAGAIN || errno == EACCES;
	fl.l_type = F_UNLCK;
	(void)fcntl(fd, F_OFD_SETLK, &fl);	/* the close drops it anyway */
	return false;
}

static bool locks_exclude(const struct pidlock *lock, int fd)
{
	/* Our read locks let other readers in: ask for a writer's. */
	if (lock->set.shared)
		return klock_shared_excludes(fd, lock->set.kinds);
	if ((lock->set.kinds & PIDLOCK_KIND_OFD) && !ofd_excludes(fd))
		return false;
	return !(lock->set.kinds & PIDLOCK_KIND_FLOCK) ||
	       klock_probe_flock(fd) == 1;
}

/*
 * Do the locks that fd (just locked, on inode dev/ino) holds keep anybody
 * out here?  Asked once per handle, by pidlock_acquire() and
 * pidlock_lock_fd() alike.
 */
int acquire_check_fs(struct pidlock *lock, int fd, dev_t dev, ino_t ino)
{
	struct stat st;
	int probe, r = 0;

	/* Our locks keep out this host only: another host's holder would
	 * be let in (doc/protocol.md, "Never silently local"). */
	if (remote_locks_local(lock, fd))
		return -ENOLCK;

	probe = open(lock->set.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
				     O_CLOEXEC | O_NOCTTY);
	/* A mode without read access for us (pidlock_set_mode(0200)):
	 * nothing to ask with; the check is skipped, not failed. */
	if (probe < 0 && errno == EACCES)
		return 0;
	if (probe < 0)
		return -errno;
	/* Ours: not somebody on the file to our release (opens.c). */
	opens_own(lock);
	if (fstat(probe, &st) < 0)
		r = -errno;
	else if (st.st_dev != dev || st.st_ino != ino)
		r = -ENOTSUP;
	else if (!locks_exclude(lock, probe))
		r = -ENOLCK;
	io_close_keep_errno(probe);
	return r;
}

/* The lock we just took is worth nothing here: give it back. */
static int refuse_fs(struct pidlock *lock, int error)
{
	(void)pidlock_release(lock);
	return error;
}

/*
 * Before a wait.  A descriptor kept from a try (a kernel-lock holder)
 * gets its inode watched for the holder's release; once the watch is in
 * place the caller must try again at once (returns 1), because the
 * release may have come before the watch did.  Without a file watch the
 * directory is watched, for the name going away, and the same holds
 * for a directory watch just set.  Whatever inotify refuses (no
 * instance, a full watch quota), the wait still sleeps: poll(2) with
 * nothing to watch is a plain sleep.
 */
int acquire_arm(struct pidlock *lock, struct watch *w, int *fdp)
{
	if (w->ifd == -2)
		wait_init(w, lock->set.dir);
	if (*fdp >= 0 && w->file_wd < 0 && !w->file_failed) {
		int r = wait_watch_file(w, lock->set.path, WATCH_RELEASE);

		if (r == 0) {
			acquire_check_kept(lock, w, fdp);
			return 1;
		}
		/* The name went between the try and the watch: the holder
		 * let go (or replaced the file).  Nothing to wait for, and
		 * the next file deserves a file watch again. */
		if (path_replaced(r)) {
			wait_drop_kept(w, fdp);
			return 1;
		}
		w->file_failed = true;
	}
	if (w->file_wd >= 0 || w->dir_wd != -1)
		return 0;
	wait_watch_dir(w);
	return w->dir_wd >= 0;
}

/* A kept descriptor whose inode is no longer the lock is given up.  The
 * lookup decides (a shared file system's server is asked only once the
 * kept descriptor is locked: asking opens the path, which our own watch
 * would see as a close and wake on, round after round). */
void acquire_check_kept(struct pidlock *lock, struct watch *w, int *fdp)
{
	struct stat st;

	if (*fdp >= 0 && existing_names_inode(lock, *fdp, &st) != 0)
		wait_drop_kept(w, fdp);
}

static int wait_busy(struct pidlock *lock, struct watch *w, int *fdp,
		     int64_t deadline)
{
	int64_t left = wait_left_ms(lock, deadline);
	int r;

	if (left <= 0)
		return -ETIMEDOUT;
	/* Readers hold: a timed writer queues in the kernel through its
	 * stand-in, so that they see it (standin.c).  The kernel's grant
	 * wakes it; no event of the readers' comings and goings does. */
	if (standin_wanted(lock, w, *fdp, deadline))
		r = standin_wait(lock, w, *fdp, deadline);
	else if (acquire_arm(lock, w, fdp))
		return 0;
	else
		r = wait_for_event(w, lock->set.base, left, lock->set.retry_ms);
	if (r < 0)
		return r;
	acquire_check_kept(lock, w, fdp);
	return 0;
}

/* A path whose inode keeps changing must not hold a try or a timed
 * acquire past its time. */
static int again_allowed(int64_t deadline, int *agains)
{
	if (deadline > 0 && io_now_ms() >= deadline)
		return -ETIMEDOUT;
	if (deadline == 0 && ++*agains > TRY_AGAIN_MAX)
		return -EWOULDBLOCK;
	return 0;
}

/*
 * The path keeps naming a file that is gone by the time we open it.  The
 * client of a shared file system may answer from a cached lookup for a
 * while after another client replaced the file (GlusterFS: about
 * 0.5 s): each try then creates, writes, syncs and removes a temp file
 * in vain, 110 times in 0.5 s.  So after AGAIN_FREE such tries in a
 * row, a wait sleeps between them, 1 ms doubling up to the poll
 * interval, and wakes at once on a change of the name in the directory.
 * A try never sleeps.
 *
 * Only a file gone before we could lock it counts (TRY_GONE).  A file
 * that we locked and then found released or replaced (TRY_AGAIN) is
 * somebody's turn come and gone: under local contention every waiter
 * blocked on the old inode sees that on each hand-off it loses, and
 * once that counted, 64 waiters slept in here instead of queueing, each
 * with a directory watch that every temp file woke (issue 30).  Such a
 * try ends the streak.
 */
static int again_pause(struct pidlock *lock, struct watch *w, int64_t deadline,
		       int streak)
{
	int64_t ms = lock->set.retry_ms;
	int r;

	if (deadline == 0 || streak <= AGAIN_FREE)
		return 0;
	if (streak - AGAIN_FREE < 20 &&
	    (int64_t)1 << (streak - AGAIN_FREE - 1) < ms)
		ms = (int64_t)1 << (streak - AGAIN_FREE - 1);
	if (deadline > 0 && deadline - io_now_ms() < ms)
		ms = deadline - io_now_ms();
	if (ms <= 0)
		return 0;
	if (w->ifd == -2)
		wait_init(w, lock->set.dir);
	if (w->file_wd < 0)
		wait_watch_dir(w);
	r = wait_for_event(w, lock->set.base, ms, ms);
	/* What follows may block in the kernel for long (a blocked
	 * waiter): the directory's events must not pile up meanwhile. */
	if (w->file_wd < 0)
		wait_unwatch_dir(w);
	return r < 0 ? r : 0;
}

/*
 * A file server that is down answers -EIO (a GlusterFS brick restarting),
 * -ENOTCONN (its client's connection gone) or, on a descriptor opened
 * before, -EBADFD (GlusterFS, measured by make check-restart).  A timed acquire waits
 * that out, as it waits out a holder: it tries again after a pause, 10
 * ms doubling up to the poll interval, and says the error only once its
 * time is up.  A try says it at once; so does a wait without a bound,
 * which would otherwise wait for good behind a broken disk.  0: try
 * again; else the error, or -EINTR if a signal handler ran.
 */
static int outage_pause(const struct pidlock *lock, int64_t deadline,
			int r, int *pauses)
{
	int64_t ms = lock->set.retry_ms, left;
	struct timespec ts;

	if ((r != -EIO && r != -ENOTCONN && r != -EBADFD) || deadline <= 0)
		return r;
	left = deadline - io_now_ms();
	if (left <= 0)
		return r;
	if (*pauses < 8 && (int64_t)10 << *pauses < ms)
		ms = (int64_t)10 << *pauses;
	(*pauses)++;
	if (ms > left)
		ms = left;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	if (nanosleep(&ts, NULL) < 0)
		return -errno;
	return 0;
}

/* r, or OUTAGE_AGAIN once an outage's pause is over: the descriptor
 * kept from the last try is given up first, and the next try starts
 * afresh. */
#define OUTAGE_AGAIN (TRY_GONE + 1)	/* no try_result */
static int outage_or(const struct pidlock *lock, struct watch *w, int *fdp,
		     int64_t deadline, int r, int *pauses)
{
	r = outage_pause(lock, deadline, r, pauses);
	if (r != 0)
		return r;
	wait_drop_kept(w, fdp);
	return OUTAGE_AGAIN;
}

/*
 * Creating the temp file needs write access to the directory (and free
 * space); taking over an existing lock file does not.  So a failure to
 * create sends us to step 3, and is reported only if there is no file.
 */
static bool create_error_may_pass(int r)
{
	return r == -EACCES || r == -EPERM || r == -ENOSPC || r == -EDQUOT;
}

/* *busy: the last try found the path busy (kept across the calls of an
 * event loop's wait, see async.c). */
int acquire_loop(struct pidlock *lock, int timeout_ms, struct watch *w,
		 int *fdp, bool *busyp)
{
	int64_t deadline = timeout_ms < 0 ? -1
			 : timeout_ms == 0 ? 0 : io_now_ms() + timeout_ms;
	int retries = 0, agains = 0, streak = 0, pauses = 0;
	/* A file our last release left at the path is likely there still:
	 * looked at first, no temp file made for a publish that fails. */
	bool busy = *busyp || lock->cache.left_file;

	for (;;) {
		int r, create_err = 0;

		/* While the path is busy, a new file could not be published:
		 * look at the path first instead of making one per poll. */
		if (*fdp < 0 && !busy) {
			r = create_publish(lock);
			if (r == 0)
				return 0;
			if (r == -EAGAIN && retries++ < CREATE_RETRIES)
				continue;
			if (r != -EAGAIN)
				retries = 0;
			if (create_error_may_pass(r)) {
				create_err = r;
			} else if (r != -EEXIST) {
				r = outage_or(lock, w, fdp, deadline, r,
					      &pauses);
				if (r == OUTAGE_AGAIN)
					continue;
				return r;
			}
		}
		r = existing_try(lock, deadline, fdp);
		streak = r == TRY_GONE ? streak + 1 : 0;
		/* A file we locked and then found released: the next holder
		 * may have published its own already.  Look before making a
		 * temp file: in a herd, all but one of the waiters would
		 * make one in vain. */
		busy = *busyp = r == TRY_BUSY || r == TRY_AGAIN;
		if (r == TRY_GONE)
			r = TRY_AGAIN;
		/* The descriptor the file watch was for is gone: our own
		 * opens and closes of the next file must not wake us. */
		if (*fdp < 0)
			wait_unwatch_file(w);
		if (r == TRY_AGAIN && create_err)
			return create_err;
		if (r < 0)
			r = outage_or(lock, w, fdp, deadline, r, &pauses);
		if (r == OUTAGE_AGAIN)
			continue;
		if (r < 0 || r == TRY_HELD_BY_US)
			return r < 0 ? r : 0;
		if (r == TRY_AGAIN) {
			r = again_allowed(deadline, &agains);
			if (r == 0)
				r = again_pause(lock, w, deadline, streak);
			if (r < 0)
				return r;
			continue;
		}
		if (timeout_ms == 0)
			return -EWOULDBLOCK;
		r = wait_busy(lock, w, fdp, deadline);
		if (r < 0)
			return r;
	}
}

/*
 * Closing an inotify instance costs tens of microseconds (the kernel
 * waits for a grace period of its event code before it frees it).  A
 * waiter that got the lock keeps its instance until its own release
 * has closed the lock file, so the hand-off does not wait for it, and
 * the next holder is already on its way when the release pays.
 */
static void keep_or_close_watch(struct pidlock *lock, struct watch *w, int r)
{
	if (r == 0 && w->ifd >= 0) {
		lock->hold.wait_ifd = w->ifd;
		w->ifd = -1;
	}
	wait_close(w);
}

int acquire_begin(struct pidlock *lock)
{
	int r;

	if (!lock)
		return -EINVAL;
	if (lock->hold.fd >= 0)
		return -EALREADY;
	r = check_dir(lock);
	if (r < 0)
		return r;
	lock->seen.known = false;
	/* Before anything we publish or open (opens.c). */
	opens_begin(lock);
	/* Before any open: a fork from here on may share what we lock. */
	lock->hold.gen = self_fork_generation();
	return 0;
}

/* The loop is over (r) and its kept descriptor given up. */
/* PIDLOCK_TOKEN: no number, no lock (token.c). */
static int token_or_let_go(struct pidlock *lock)
{
	int r = token_publish(lock);

	if (r < 0)
		(void)pidlock_release(lock);
	return r;
}

int acquire_end(struct pidlock *lock, struct watch *w, int r)
{
	keep_or_close_watch(lock, w, r);
	if (r == 0 && !lock->cache.fs_checked) {
		r = acquire_check_fs(lock, lock->hold.fd, lock->hold.dev,
				     lock->hold.ino);
		/* Our new file is gone from the path already: taken away by
		 * somebody our locks did not keep out (a spec-only peer, or a
		 * "holder" on a file system whose locks exclude nobody).  The
		 * check asked nothing: try again, and ask again. */
		if (path_replaced(r))
			return refuse_fs(lock, FS_CHECK_AGAIN);
		if (r < 0)
			return refuse_fs(lock, r);
		lock->cache.fs_checked = true;
	}
	if (r == 0 && !lock->cache.swept) {
		leftover_sweep(lock);
		lock->cache.swept = true;
	}
	/* The holder's lease runs from the grant (check.c). */
	if (r == 0)
		check_learn(lock);
	if (r == 0 && (lock->set.flags & PIDLOCK_TOKEN))
		r = token_or_let_go(lock);
	return r;
}

static int acquire(struct pidlock *lock, int timeout_ms)
{
	struct watch w = { .ifd = -2, .file_wd = -1, .dir_wd = -1,
			   .file_failed = false };
	bool busy = false;
	int fd = -1;
	int r;

	async_cancel(lock);
	r = acquire_begin(lock);
	if (r < 0)
		return r;
	r = acquire_loop(lock, timeout_ms, &w, &fd, &busy);
	wait_drop_kept(&w, &fd);
	return acquire_end(lock, &w, r);
}

/* Only the codes of pidlock(3) ERRORS leave the library: see io.c. */
static int acquire_checked(struct pidlock *lock, int timeout_ms)
{
	int r = acquire(lock, timeout_ms);

	for (int i = 0; r == FS_CHECK_AGAIN && i < FS_CHECK_TRIES; i++)
		r = acquire(lock, timeout_ms);
	return io_rc_filter(r == FS_CHECK_AGAIN ? -ENOENT : r);
}

/*
 * Not cancellable, the wait included (cancel.c): a cancellation point
 * in it may find a temp file made, or a descriptor holding the flock
 * while F_OFD_SETLKW waits for the OFD lock.  A blocking wait was never
 * cancellable anyway: flock(2) is no cancellation point.
 */
PIDLOCK_EXPORT int pidlock_acquire(struct pidlock *lock, int timeout_ms)
{
	int old = cancel_off();
	int r = acquire_checked(lock, timeout_ms);

	cancel_restore(old);
	return r;
}
