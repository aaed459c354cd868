/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Waiting until a lock is free, without taking it: "wait for the old
 * instance to let go".  The inode now at the path is watched, as an
 * acquire's wait does: a release unlinks it, or closes it, or writes
 * its released record, and each of those wakes us.  It is not kept
 * open between looks: an open description is somebody on the file to
 * a PIDLOCK_KEEP_IF_USED release (opens.c, release.c), which would then
 * leave it at the path, a daemon's pidfile after `pidlock --stop`.  A
 * look opens, reads and closes; the event of our own close is read and
 * set aside, and a change it may have hidden is seen by the path's
 * stat.  A holder whose end touches no file (a pidfile's daemon, a
 * spec-only writer) is watched through its pidfd.  Every sleep is also
 * bounded by the poll interval, for file systems that send no events.
 *
 * A wait may last forever, so it stays cancellable (pthread_cancel(3)),
 * but only in its sleep: everything else runs with cancellation off,
 * so that a cancellation acts where all the wait holds is in struct
 * free_wait, whose cleanup handler closes it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

struct free_wait {
	const char *path;
	const char *base;
	char *dir;
	int cancel;	/* the caller's cancelability state */
	struct watch w;
	int fd;		/* the file at the path, during a look */
	dev_t dev;	/* the inode watched, if file_wd >= 0 */
	ino_t ino;
	int pidfd;	/* the holder whose end does not touch the file */
	pid_t pidfd_of;	/* kept after its pidfd polled readable: not opened again */
};

static void drop_pidfd(struct free_wait *fw)
{
	if (fw->pidfd >= 0)
		io_close_keep_errno(fw->pidfd);
	fw->pidfd = -1;
	fw->pidfd_of = 0;
}

/* A state nobody holds: the next locker takes the file at once. */
static bool is_free(enum pidlock_state state)
{
	return state == PIDLOCK_STATE_FREE ||
	       state == PIDLOCK_STATE_ABANDONED ||
	       state == PIDLOCK_STATE_STALE;
}

/*
 * Open the file now at the path for a look, and watch its inode: 1
 * open, 0 no file there, -EWOULDBLOCK somebody's lease keeps our open
 * out for now, -errno.  Such a lease (Samba's oplock, say) is its
 * owner's, not a holder's: it ends when its owner lets go, or at the
 * latest when the kernel breaks it (/proc/sys/fs/lease-break-time), and
 * the file is looked at then.
 */
static int open_file(struct free_wait *fw, struct stat *st)
{
	int fd = inspect_open(fw->path, st);

	if (fd == -ENOENT || fd == -ESTALE) {
		wait_unwatch_file(&fw->w);
		wait_watch_dir(&fw->w);
		return 0;
	}
	if (fd < 0)
		return fd;
	fw->fd = fd;
	if (fw->w.file_wd >= 0 && fw->dev == st->st_dev &&
	    fw->ino == st->st_ino)
		return 1;
	if (fw->w.ifd >= 0 &&
	    wait_watch_file(&fw->w, fw->path, WATCH_RELEASE) < 0) {
		wait_watch_dir(&fw->w);
		return 1;
	}
	fw->dev = st->st_dev;
	fw->ino = st->st_ino;
	return 1;
}

static bool no_hit(const struct inotify_event *ev, const void *arg)
{
	(void)ev;
	(void)arg;
	return false;
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* The look is over: the file closed, the event of our close set aside
 * (with whatever came before it), and whether the path has changed
 * since st was taken, which such an event would have told. */
static bool close_changed(struct free_wait *fw, const struct stat *st)
{
	struct stat now;

	io_close_keep_errno(fw->fd);
	fw->fd = -1;
	if (fw->w.ifd >= 0)
		(void)wait_read_events(fw->w.ifd, no_hit, NULL);
	if (lstat(fw->path, &now) < 0)
		return true;
	return now.st_dev != st->st_dev || now.st_ino != st->st_ino ||
	       now.st_nlink != st->st_nlink || now.st_size != st->st_size ||
	       !same_time(&now.st_mtim, &st->st_mtim) ||
	       !same_time(&now.st_ctim, &st->st_ctim);
}

/* A pidfd for the record's pid where nothing else would wake us: a
 * holder with no kernel lock, whose end leaves the file as it is. */
static void watch_holder(struct free_wait *fw, const struct pidlock_info *info)
{
	long pidfd;

	if (info->state == PIDLOCK_STATE_HELD || info->pid <= 0 ||
	    info->foreign || info->pid_alive != 1) {
		drop_pidfd(fw);
		return;
	}
	if (fw->pidfd_of == info->pid)
		return;
	drop_pidfd(fw);
	pidfd = syscall(SYS_pidfd_open, info->pid, 0);
	if (pidfd < 0)
		return;		/* gone already, or no pidfds: the bound wakes us */
	fw->pidfd = (int)pidfd;
	fw->pidfd_of = info->pid;
}

/* One look through a fresh open: 1 free, 0 held, 2 changed while we
 * looked (look again), -errno. */
static int look_once(struct free_wait *fw)
{
	struct pidlock_info info;
	struct stat st;
	int r = open_file(fw, &st);

	if (r == -EWOULDBLOCK)
		return 0;	/* not known free: look again */
	if (r <= 0)
		return r < 0 ? r : 1;
	r = inspect_fd(fw->fd, &st, &info, 0, KLOCK_TORN_READS);
	if (close_changed(fw, &st) && (r < 0 || !is_free(info.state)))
		return 2;
	if (r < 0)
		return r;
	if (info.state == PIDLOCK_STATE_NOT_LOCK_FILE)
		return -EBADMSG;
	if (info.state == PIDLOCK_STATE_UNREADABLE)
		return info.kernel_locks ? 0 : -(info.error ? info.error : EIO);
	watch_holder(fw, &info);
	return is_free(info.state);
}

/* 1: free; 0: held; -errno.  A file that keeps changing under our looks
 * (a holder rewriting its record) is left to the next wake. */
static int look(struct free_wait *fw)
{
	int r = 2;

	for (int i = 0; i < 3 && r == 2; i++)
		r = look_once(fw);
	return r == 2 ? 0 : r;
}

static bool free_hit(const struct inotify_event *ev, const void *arg)
{
	const struct free_wait *fw = arg;

	if (ev->mask & IN_Q_OVERFLOW)
		return true;
	if (ev->mask & IN_IGNORED)
		return false;
	if (ev->wd == fw->w.file_wd)
		return true;
	return ev->wd == fw->w.dir_wd && ev->len &&
	       strcmp(ev->name, fw->base) == 0;
}

/* The holder's pidfd polled readable: its whole thread group has
 * exited.  It stays readable (a zombie's, until it is reaped), so it is
 * closed, and the next sleeps are bounded by the interval alone: a
 * record that still holds (rule B: a young spec record of a dead pid)
 * is no reason to spin. */
static void holder_ended(struct free_wait *fw)
{
	io_close_keep_errno(fw->pidfd);
	fw->pidfd = -1;
}

/* The cleanup handler of a cancelled wait, and its end. */
static void free_wait_end(void *arg)
{
	struct free_wait *fw = arg;

	wait_drop_kept(&fw->w, &fw->fd);
	drop_pidfd(fw);
	wait_close(&fw->w);
	free(fw->dir);
	fw->dir = NULL;
}

/* pthread_cleanup_push() is a macro whose expansion makes the
 * statement's own ';' an empty one (clang -Weverything says so). */
#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wextra-semi-stmt"
#endif
/* poll(2), the wait's one cancellation point, with the caller's
 * cancelability state. */
static int poll_cancellable(struct free_wait *fw, struct pollfd *pfd,
			    int ms)
{
	int n, saved;

	pthread_cleanup_push(free_wait_end, fw);
	cancel_restore(fw->cancel);
	n = poll(pfd, 2, ms);
	saved = errno;
	(void)cancel_off();
	pthread_cleanup_pop(0);
	errno = saved;
	return n;
}
#ifdef __clang__
#pragma clang diagnostic pop
#endif

/*
 * Sleep until an event of the lock, the holder's end, or ms pass.
 * 0 (look again), -EINTR if a signal handler ran.
 */
static int sleep_once(struct free_wait *fw, int64_t ms)
{
	int64_t until = io_now_ms() + ms;

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = fw->w.ifd, .events = POLLIN },
			{ .fd = fw->pidfd, .events = POLLIN },
		};
		int64_t left = until - io_now_ms();
		int n;

		if (left <= 0)
			return 0;
		n = poll_cancellable(fw, pfd,
				     (int)(left > INT_MAX ? INT_MAX : left));
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		if (pfd[1].revents) {
			holder_ended(fw);
			return 0;
		}
		if (fw->w.ifd >= 0 && wait_read_events(fw->w.ifd, free_hit, fw) != 0)
			return 0;
	}
}

static int wait_free(const char *path, int timeout_ms, int cancel)
{
	int64_t deadline = timeout_ms < 0 ? -1 : io_now_ms() + timeout_ms;
	struct free_wait fw = { .path = path, .cancel = cancel, .fd = -1,
				.pidfd = -1 };
	int r;

	r = handle_check_path(path);
	if (r < 0)
		return r;
	fw.dir = handle_dir_of(path);
	if (!fw.dir)
		return -ENOMEM;
	fw.base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	wait_init(&fw.w, fw.dir);
	wait_watch_dir(&fw.w);
	for (;;) {
		int64_t left = deadline < 0 ? INT64_MAX : deadline - io_now_ms();

		r = look(&fw);
		if (r != 0)
			break;
		if (timeout_ms == 0) {
			r = -EWOULDBLOCK;
			break;
		}
		if (left <= 0) {
			r = -ETIMEDOUT;
			break;
		}
		r = sleep_once(&fw, left < PIDLOCK_DEFAULT_RETRY_MS ?
					    left : (int64_t)PIDLOCK_DEFAULT_RETRY_MS * 10);
		if (r < 0)
			break;
	}
	free_wait_end(&fw);
	return r == 1 ? 0 : r;
}

PIDLOCK_EXPORT int pidlock_wait_free(const char *path, int timeout_ms)
{
	int old = cancel_off(), r = wait_free(path, timeout_ms, old);

	cancel_restore(old);
	return io_rc_filter(r);
}
