/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Waiting without signals, alarms or timers (a library must not touch
 * the caller's signal handling): inotify on the lock file and on its
 * directory wakes a wait at once on a release, and every wait is also
 * bounded by a poll interval, for file systems that send no events
 * (NFS changes made by other hosts) or when inotify is unavailable.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "internal.h"

void wait_init(struct watch *w, const char *dir)
{
	w->file_wd = -1;
	w->dir_wd = -1;
	w->dir = dir;
	w->ino = 0;
	w->file_failed = false;
	w->ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
}

/*
 * The directory is watched only while no file watch is set: every
 * waiter's temp files come and go in it, so a herd watching it would
 * wake on each other's tries, N times N per hand-off.  A file watch
 * sees its inode's release (unlink, close, rename) by itself.
 */
void wait_watch_dir(struct watch *w)
{
	if (w->ifd < 0 || !w->dir || w->dir_wd != -1)
		return;
	w->dir_wd = inotify_add_watch(w->ifd, w->dir, WATCH_NAMES | IN_ONLYDIR);
	if (w->dir_wd < 0)
		w->dir_wd = -2;		/* refused: the poll bound still wakes us */
}

void wait_unwatch_dir(struct watch *w)
{
	if (w->ifd >= 0 && w->dir_wd >= 0)
		(void)inotify_rm_watch(w->ifd, w->dir_wd);
	w->dir_wd = -1;
}

/* Watch the inode now at path (not a symlink's target); 0 or -errno. */
int wait_watch_file(struct watch *w, const char *path, uint32_t mask)
{
	if (w->ifd < 0)
		return -EBADF;
	wait_unwatch_file(w);
	w->file_wd = inotify_add_watch(w->ifd, path, mask | IN_DONT_FOLLOW);
	if (w->file_wd < 0)
		return -errno;
	wait_unwatch_dir(w);
	return 0;
}

void wait_unwatch_file(struct watch *w)
{
	/* Fails with EINVAL once the inode is gone, which is just as good;
	 * any watch left over dies with the inotify descriptor. */
	if (w->ifd >= 0 && w->file_wd >= 0)
		(void)inotify_rm_watch(w->ifd, w->file_wd);
	w->file_wd = -1;
	w->ino = 0;
}

void wait_close(struct watch *w)
{
	if (w->ifd >= 0)
		io_close_keep_errno(w->ifd);
	w->ifd = -1;
	w->file_wd = -1;
	w->dir_wd = -1;
}

/*
 * Only events of the watches now set count.  The IN_IGNORED that our
 * own inotify_rm_watch(2) queues, and events queued for a watch since
 * removed (other waiters closing the old inode), would otherwise send
 * every waiter of a herd round one more time per hand-off.
 */
static bool is_hit(const struct watch *w, const struct inotify_event *ev,
		   const char *base)
{
	if (ev->mask & IN_Q_OVERFLOW)
		return true;
	if (ev->mask & IN_IGNORED || ev->wd < 0)
		return false;
	if (ev->wd == w->file_wd)
		return true;
	return ev->wd == w->dir_wd && base && ev->len &&
	       strcmp(ev->name, base) == 0;
}

/* Read every queued event of ifd: 1 if hit() said yes to one, 0 if to
 * none, -errno. */
int wait_read_events(int ifd, wait_hit_fn hit, const void *arg)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int any = 0;

	for (;;) {
		ssize_t n = read(ifd, buf, sizeof(buf));
		const char *p = buf;

		if (n < 0)
			return errno == EAGAIN ? any : -errno;
		while (p < buf + n) {
			const struct inotify_event *ev = (const void *)p;

			if (hit(ev, arg))
				any = 1;
			p += sizeof(*ev) + ev->len;
		}
	}
}

struct hit_arg {
	const struct watch *w;
	const char *base;
};

static bool lock_hit(const struct inotify_event *ev, const void *arg)
{
	const struct hit_arg *a = arg;

	return is_hit(a->w, ev, a->base);
}

/* Did the queued events touch the file, or the name `base` in the dir? */
int wait_drain(struct watch *w, const char *base)
{
	const struct hit_arg a = { w, base };

	return wait_read_events(w->ifd, lock_hit, &a);
}

/*
 * Sleep up to ms for an event of ifd that hit() says yes to; the others
 * are read and slept through.  Returns 1 on such an event, 0 when the
 * time is up, -EINTR if a signal handler ran (poll(2) is never
 * restarted, whatever SA_RESTART says).  With no ifd, a plain sleep.
 */
int wait_poll_events(int ifd, int64_t ms, wait_hit_fn hit, const void *arg)
{
	int64_t until = io_now_ms() + ms;

	for (;;) {
		struct pollfd pfd = { .fd = ifd, .events = POLLIN };
		int64_t left = until - io_now_ms();
		int n, r;

		if (left <= 0)
			return 0;
		n = poll(&pfd, ifd >= 0 ? 1 : 0, (int)(left > INT_MAX ? INT_MAX : left));
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		r = wait_read_events(ifd, hit, arg);
		if (r)
			return r;
	}
}

/* How long the next wait of a round may be: what is left before the
 * deadline (0 or less: none), or one retry interval without one (-1). */
int64_t wait_left_ms(const struct pidlock *lock, int64_t deadline)
{
	return deadline < 0 ? lock->set.retry_ms : deadline - io_now_ms();
}

/* Wait up to timeout_ms for an event on the file or on `base`, never
 * longer than poll_ms; as wait_poll_events(). */
int wait_for_event(struct watch *w, const char *base, int64_t timeout_ms,
		   int64_t poll_ms)
{
	const struct hit_arg a = { w, base };

	return wait_poll_events(w->ifd, timeout_ms < poll_ms ? timeout_ms : poll_ms,
				lock_hit, &a);
}

/* Stop watching a kept descriptor, then close it: in that order, so
 * our own close(2) does not wake the next wait. */
void wait_drop_kept(struct watch *w, int *fdp)
{
	if (*fdp < 0)
		return;
	wait_unwatch_file(w);
	io_close_keep_errno(*fdp);
	*fdp = -1;
}
