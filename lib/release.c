/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Holding: verify, refresh, release, close. */
#include "config.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* 0 if the path still names the inode we hold, -ESTALE if not. */
static int check_held(const struct pidlock *lock)
{
	struct stat st;

	if (lock->fd < 0)
		return -ENOLCK;
	if (lstat(lock->path, &st) < 0)
		return errno == ENOENT ? -ESTALE : -errno;
	if (st.st_dev != lock->dev || st.st_ino != lock->ino)
		return -ESTALE;
	return 0;
}

PIDLOCK_EXPORT int pidlock_verify(struct pidlock *lock)
{
	if (!lock)
		return -EINVAL;
	return check_held(lock);
}

PIDLOCK_EXPORT int pidlock_refresh(struct pidlock *lock)
{
	pid_t pid = getpid();
	struct stat st;
	size_t len;
	int r;

	if (!lock)
		return -EINVAL;
	r = check_held(lock);
	if (r < 0)
		return r;
	if (fstat(lock->fd, &st) < 0)
		return -errno;
	len = content_format(lock->buf, sizeof(lock->buf), pid, now_sec(),
			     lock->tag, lock->kinds,
			     lock->flags & PIDLOCK_PLAIN_PID);
	r = write_content(lock->fd, lock->buf, len, (size_t)st.st_size,
			  !(lock->flags & PIDLOCK_NO_SYNC));
	if (r < 0)
		return r;
	lock->writer = pid;
	lock->written = len;
	return 0;
}

static void forget(struct pidlock *lock)
{
	lock->fd = -1;
	lock->dev = 0;
	lock->ino = 0;
	lock->writer = 0;
}

PIDLOCK_EXPORT int pidlock_close(struct pidlock *lock)
{
	int r = 0;

	if (!lock)
		return -EINVAL;
	if (lock->fd < 0)
		return -ENOLCK;
	if (close(lock->fd) < 0 && errno != EINTR)
		r = -errno;
	forget(lock);
	return r;
}

/*
 * Whose record is in the file?  After fork(2) parent and child share the
 * open file description, so both "hold"; only the process named in the
 * file may delete it (the one that called pidlock_refresh() last).
 */
static bool file_names_us(const struct pidlock *lock)
{
	char buf[CONTENT_READ_MAX];
	struct content c;
	ssize_t n = read_bounded(lock->fd, buf, sizeof(buf));

	if (n < 0)
		return false;
	content_parse(buf, (size_t)n, &c);
	return c.pid == getpid();
}

/* Unlink first, close second: the deletion falsifies "held" while we
 * still hold the kernel locks, so nobody can see a free lock with a
 * stale file of ours at the path. */
PIDLOCK_EXPORT int pidlock_release(struct pidlock *lock)
{
	int r;

	if (!lock)
		return -EINVAL;
	r = check_held(lock);
	if (r == 0 && !(lock->flags & PIDLOCK_KEEP_FILE) &&
	    file_names_us(lock) && unlink(lock->path) < 0)
		r = -errno;
	if (r == -ENOLCK)
		return r;
	if (close(lock->fd) < 0 && errno != EINTR && r == 0)
		r = -errno;
	forget(lock);
	return r;
}
