/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pidlock_inspect() and the holder report: read, never lock. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/*
 * The classification of doc/protocol.md, shared by inspect and by an
 * acquire that found the lock busy.  `state` is the caller's verdict
 * when it already knows one (an acquire does), else computed here.
 */
void inspect_fill_info(struct pidlock_info *info, enum pidlock_state state,
		       unsigned int kernel, const struct content *c,
		       const struct stat *st)
{
	memset(info, 0, sizeof(*info));
	info->state = state;
	/* A released record's pid is nobody's. */
	info->pid = c->released ? 0 : c->pid ? c->pid : c->bare_pid;
	info->pid_alive = info->pid > 0 ? io_pid_alive(info->pid) : -1;
	info->has_timestamp = c->has_timestamp;
	info->timestamp = c->timestamp;
	info->kernel_locks = kernel;
	info->marker = c->marker;
	info->mtime = (int64_t)st->st_mtim.tv_sec;
	memcpy(info->tag, c->tag, sizeof(info->tag));
}

/*
 * Rule B: a spec-only record frees its lock only when it is older than
 * stale_sec AND its pid is dead.  Spec command-line tools record a pid
 * that exits at once, so a dead pid alone never frees it; age alone
 * neither.  The one statement of the rule, for acquire and inspect.
 */
bool inspect_spec_is_stale(const struct content *c, unsigned int stale_sec)
{
	int64_t age = io_now_sec() - c->timestamp;

	return age > (int64_t)stale_sec && !io_pid_alive(c->pid);
}

static enum pidlock_state classify(unsigned int kernel,
				   const struct content *c,
				   const struct stat *st, unsigned int stale_sec)
{
	if (kernel)
		return PIDLOCK_STATE_HELD;
	/* Released by its last holder, and kept: nobody holds it. */
	if (c->marker)
		return c->released || c->exit_releases ? PIDLOCK_STATE_FREE
						       : PIDLOCK_STATE_ABANDONED;
	if (content_is_spec(c))
		return inspect_spec_is_stale(c, stale_sec)
			       ? PIDLOCK_STATE_STALE
			       : PIDLOCK_STATE_HELD_SPEC;
	/* Possibly a spec-only writer between create and write. */
	if (io_grace_left_ms(st, PIDLOCK_DEFAULT_GRACE_MS) > 0)
		return PIDLOCK_STATE_HELD_SPEC;
	/* flock(1) and with-lock-ex leave an empty file when they finish;
	 * what else is incomplete had a writer that did not. */
	return c->empty ? PIDLOCK_STATE_FREE : PIDLOCK_STATE_ABANDONED;
}

/* No file is "free" only if the directory exists to hold one. */
static int free_or_missing_dir(const char *path)
{
	char *dir = handle_dir_of(path);
	struct stat st;
	int r;

	if (!dir)
		return -ENOMEM;
	r = stat(dir, &st) < 0 ? -errno : S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	free(dir);
	return r;
}

/*
 * The kernel's own answer first: F_OFD_GETLK sees OFD and POSIX locks
 * on the file itself, whatever its device numbers.  /proc/locks adds
 * flock holders and who holds what.  Where it cannot place the file
 * (unreadable, or btrfs's devices), a flock probe decides.
 */
static unsigned int kernel_locks(int fd, const struct stat *st, pid_t *kpid)
{
	bool elsewhere = false;
	unsigned int k = 0;
	int r;

	if (fd >= 0) {
		r = klock_query_ofd(fd, kpid);
		if (r > 0)
			k |= (unsigned int)r;
	}
	r = klock_proc(st->st_dev, st->st_ino, kpid, &elsewhere, false);
	if (r > 0)
		k |= (unsigned int)r;
	if (fd >= 0 && !(k & PIDLOCK_KIND_FLOCK) && (r < 0 || elsewhere) &&
	    klock_probe_flock(fd) > 0)
		k |= PIDLOCK_KIND_FLOCK;
	/* The kernel says it is held, /proc/locks lists it under another
	 * device: name the holder from there. */
	if (k && !*kpid && elsewhere)
		(void)klock_proc(st->st_dev, st->st_ino, kpid, NULL, true);
	return k;
}

static int unreadable(struct pidlock_info *info, const struct stat *st,
		      int error)
{
	struct content none;
	pid_t kpid = 0;
	unsigned int k = kernel_locks(-1, st, &kpid);

	memset(&none, 0, sizeof(none));
	inspect_fill_info(info, k ? PIDLOCK_STATE_HELD
				  : PIDLOCK_STATE_UNREADABLE, k, &none, st);
	info->kernel_pid = kpid;
	info->error = error;
	return 0;
}

static int inspect(const char *path, struct pidlock_info *info,
		   unsigned int stale_sec)
{
	char buf[CONTENT_READ_MAX];
	enum pidlock_state state;
	struct content c;
	struct stat st;
	pid_t kpid = 0;
	unsigned int k;
	ssize_t n;
	int fd, r;

	if (!info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	info->pid_alive = -1;
	r = handle_check_path(path);
	if (r < 0)
		return r;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? free_or_missing_dir(path) : -errno;
	r = handle_check_type(st.st_mode);
	if (r < 0)
		return r;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == ENOENT)
		return 0;
	/* A symlink swapped in after the lstat: the same answer as one
	 * that was there before it. */
	if (fd < 0 && errno == ELOOP)
		return -ELOOP;
	if (fd < 0)
		return unreadable(info, &st, errno);
	if (fstat(fd, &st) < 0 || (r = handle_check_type(st.st_mode)) < 0) {
		r = r < 0 ? r : -errno;
		io_close_keep_errno(fd);
		return r;
	}
	n = io_read_bounded(fd, buf, sizeof(buf));
	if (n < 0) {
		io_close_keep_errno(fd);
		return unreadable(info, &st, (int)-n);
	}
	k = kernel_locks(fd, &st, &kpid);
	io_close_keep_errno(fd);
	content_parse(buf, (size_t)n, &c);
	if (!content_is_lock_file(buf, (size_t)n, (int64_t)st.st_size))
		state = PIDLOCK_STATE_NOT_LOCK_FILE;
	else
		state = classify(k, &c, &st, stale_sec ? stale_sec
						: PIDLOCK_DEFAULT_STALE_SEC);
	inspect_fill_info(info, state, k, &c, &st);
	info->kernel_pid = kpid;
	return 0;
}

PIDLOCK_EXPORT int pidlock_inspect(const char *path, struct pidlock_info *info,
				   unsigned int stale_sec)
{
	return io_rc_filter(inspect(path, info, stale_sec));
}

PIDLOCK_EXPORT int pidlock_holder(const struct pidlock *lock,
				  struct pidlock_info *info)
{
	bool elsewhere = false;
	pid_t kpid = 0;
	int k;

	if (!lock || !info)
		return -EINVAL;
	if (!lock->have_holder)
		return -ENODATA;
	*info = lock->holder;
	if (!info->kernel_locks)
		return 0;
	/* Only now pay for /proc/locks: the kernel's word on who holds it. */
	k = klock_proc(lock->holder_dev, lock->holder_ino, &kpid, &elsewhere,
		       false);
	/* Held, as the acquire found; listed under another device (btrfs):
	 * the row with our inode number names the holder. */
	if (k <= 0 && elsewhere)
		k = klock_proc(lock->holder_dev, lock->holder_ino, &kpid, NULL,
			       true);
	if (k > 0)
		info->kernel_pid = kpid;
	return 0;
}

PIDLOCK_EXPORT const char *pidlock_state_name(enum pidlock_state state)
{
	switch (state) {
	case PIDLOCK_STATE_FREE:
		return "free";
	case PIDLOCK_STATE_HELD:
		return "held";
	case PIDLOCK_STATE_HELD_SPEC:
		return "held-spec";
	case PIDLOCK_STATE_ABANDONED:
		return "abandoned";
	case PIDLOCK_STATE_STALE:
		return "stale";
	case PIDLOCK_STATE_UNREADABLE:
		return "unreadable";
	case PIDLOCK_STATE_NOT_LOCK_FILE:
		return "not-a-lock-file";
	}
	return NULL;
}
