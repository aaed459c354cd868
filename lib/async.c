/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pidlock_acquire_async(): waiting inside the caller's event loop.  The
 * wait's state (the inotify instance, the holder's descriptor it
 * watches) stays in the handle between calls; each call tries once and
 * hands back what to poll and for how long.  No thread, no signal.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>

#include "internal.h"

/* A new file watch must be followed by a try (acquire_arm); a path
 * whose holder keeps changing under that try ends the call anyway. */
#define ARM_ROUNDS 8

static void async_start(struct pidlock *lock)
{
	lock->wait.w = (struct watch){ .ifd = -2, .file_wd = -1,
					.dir_wd = -1, .file_failed = false };
	lock->wait.fd = -1;
	lock->wait.busy = false;
	lock->wait.due = 0;
	lock->wait.pid = self_pid();
	lock->wait.on = true;
}

/*
 * Called before the poll bound with nothing that concerns the lock in
 * the queue (a spurious wake-up of the loop, or events of names that are
 * not ours): do not try again yet.  The events are read here, so that a
 * level-triggered loop does not wake again for them.
 */
static bool too_early(struct pidlock *lock, int *timeout_ms)
{
	int64_t left;

	if (lock->wait.w.ifd >= 0 &&
	    wait_drain(&lock->wait.w, lock->set.base) != 0)
		return false;
	left = lock->wait.due - io_now_ms();
	if (left <= 0)
		return false;
	*timeout_ms = (int)left;
	return true;
}

static int try_and_arm(struct pidlock *lock, int *timeout_ms)
{
	struct watch *w = &lock->wait.w;
	int r = -EWOULDBLOCK;

	acquire_check_kept(lock, w, &lock->wait.fd);
	for (int i = 0; i < ARM_ROUNDS; i++) {
		r = acquire_loop(lock, 0, w, &lock->wait.fd, &lock->wait.busy);
		if (r != -EWOULDBLOCK ||
		    !acquire_arm(lock, w, &lock->wait.fd)) {
			*timeout_ms = (int)lock->set.retry_ms;
			return r;
		}
	}
	*timeout_ms = 0;	/* armed, but not tried since: come back now */
	return r;
}

static int async_step(struct pidlock *lock, int *pollfd, int *timeout_ms)
{
	unsigned long gen;
	bool resumed, known;
	int r;

	if (async_inherited(lock))
		async_cancel(lock);	/* a fork's child waits afresh */
	gen = lock->hold.gen;
	resumed = lock->wait.on;
	known = lock->seen.known;
	r = acquire_begin(lock);

	if (r < 0) {
		if (r != -EALREADY)
			async_cancel(lock);
		return r;
	}
	/* The wait began at the first call: a fork since then may share
	 * its kept descriptor (see release.c), and what it saw of the
	 * holder stays until the next try says otherwise. */
	if (resumed) {
		lock->hold.gen = gen;
		lock->seen.known = known;
	}
	if (!lock->wait.on)
		async_start(lock);
	else if (too_early(lock, timeout_ms))
		r = -EWOULDBLOCK;
	if (r == 0)
		r = try_and_arm(lock, timeout_ms);
	if (r == -EWOULDBLOCK) {
		lock->wait.due = io_now_ms() + *timeout_ms;
		*pollfd = lock->wait.w.ifd >= 0 ? lock->wait.w.ifd : -1;
		return r;
	}
	wait_drop_kept(&lock->wait.w, &lock->wait.fd);
	lock->wait.on = false;
	return acquire_end(lock, &lock->wait.w, r);
}

static int acquire_async(struct pidlock *lock, int *pollfd, int *timeout_ms)
{
	int r;

	if (!lock || !pollfd || !timeout_ms)
		return -EINVAL;
	*pollfd = -1;
	*timeout_ms = -1;
	r = async_step(lock, pollfd, timeout_ms);
	for (int i = 0; r == FS_CHECK_AGAIN && i < FS_CHECK_TRIES; i++)
		r = async_step(lock, pollfd, timeout_ms);
	return io_rc_filter(r == FS_CHECK_AGAIN ? -ENOENT : r);
}

/* The wait's state is set up whole or not at all (cancel.c); the
 * caller's poll between calls is where its thread may be cancelled,
 * and pidlock_close() or pidlock_free() then ends the wait. */
PIDLOCK_EXPORT int pidlock_acquire_async(struct pidlock *lock, int *pollfd,
					 int *timeout_ms)
{
	int old = cancel_off();
	int r = acquire_async(lock, pollfd, timeout_ms);

	cancel_restore(old);
	return r;
}
