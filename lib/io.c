/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Small I/O and clock helpers shared by the lock paths. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/*
 * Every code an exported function may return, the table of pidlock(3)
 * ERRORS (tests/test-errors.c holds the two equal).  EAGAIN is also
 * EWOULDBLOCK, EOPNOTSUPP also ENOTSUP on Linux.
 */
static const int documented_errors[] = {
	EACCES, EAGAIN, EALREADY, EBADF, EBADMSG, EBUSY, EDEADLK, EDQUOT, EEXIST,
	EINTR, EINVAL, EIO, EISDIR, ELOOP, EMFILE, EMLINK, ENAMETOOLONG,
	ENFILE, ENODATA, ENOENT, ENOLCK, ENOMEM, ENOSPC, ENOSYS, ENOTDIR,
	EOPNOTSUPP, EOVERFLOW, EPERM, ERANGE, EREMOTE, EROFS, ESRCH, ESTALE, ETIMEDOUT, ETXTBSY,
};

/*
 * The export boundary's filter: a code of the table passes, any other
 * negative value (an errno of a system call that the pages do not name,
 * such as EUCLEAN from a damaged file system) becomes -EIO, which every
 * caller already handles as "the system failed, the lock is not held
 * or not changed", and which cannot be mistaken for a state of the lock
 * (-EWOULDBLOCK, -ESTALE, -ENOLCK).  A loop over 32 ints, no system
 * call: the acquire/release cycle stays as fast.
 */
int io_rc_filter(int r)
{
	if (r >= 0)
		return r;
	for (size_t i = 0; i < sizeof(documented_errors) /
			       sizeof(documented_errors[0]); i++)
		if (r == -documented_errors[i])	/* -r could overflow */
			return r;
	return -EIO;
}

/* A short read of a regular file means end of file: no second call. */
ssize_t io_read_bounded(int fd, char *buf, size_t size)
{
	ssize_t n;

	do
		n = pread(fd, buf, size, 0);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/*
 * A record is written with one pwrite(2), but the kernel copies it into
 * the page cache while a reader may be copying out: the reader can see
 * the new record's start on the old one's end.  The torture saw such a
 * mix stay for milliseconds, when the writer's CPU was taken away in
 * the middle of the copy.  Our writers write only while they hold a
 * kernel lock, so a caller that knows of a holder reads again, with
 * growing pauses, until the content is a lock file's or SETTLE_MS have
 * passed.  *st is the file as of the last read.
 */
#define SETTLE_MS 64

ssize_t io_read_settled(int fd, char *buf, size_t size, struct stat *st)
{
	ssize_t n = io_read_bounded(fd, buf, size);
	long pause_ms = 1, slept = 0;

	while (n >= 0 && !content_is_lock_file(buf, (size_t)n,
					       (int64_t)st->st_size) &&
	       slept < SETTLE_MS) {
		struct timespec ts = { 0, pause_ms * 1000000L };

		/* EINTR: a shorter pause, and one more look. */
		(void)nanosleep(&ts, NULL);
		slept += pause_ms;
		pause_ms *= 2;
		if (fstat(fd, st) < 0)
			return -errno;
		n = io_read_bounded(fd, buf, size);
	}
	return n;
}

static int pwrite_all(int fd, const char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, buf + done, len - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

/*
 * Replace the content in place without a reader ever seeing a shorter
 * or torn record: one write of the new record padded with newlines
 * (ignored by spec parsers) to the old length, so no byte of the old
 * record survives behind it.  Nothing is ever cut: a file longer than a
 * lock file can be is somebody's data, and was refused before this.
 */
int io_write_content(int fd, const char *buf, size_t len, size_t old_len,
		     bool sync)
{
	char padded[PIDLOCK_CONTENT_MAX];
	int r;

	if (old_len > sizeof(padded))
		return -EBADMSG;
	if (old_len > len) {
		memcpy(padded, buf, len);
		memset(padded + len, '\n', old_len - len);
		buf = padded;
		len = old_len;
	}
	r = pwrite_all(fd, buf, len);
	if (r < 0)
		return r;
	if (sync && fdatasync(fd) < 0)
		return -errno;
	return 0;
}

/* The options a record of this handle is written with. */
static unsigned int record_opts(const struct pidlock *lock, bool keep)
{
	unsigned int opts = keep ? FMT_KEEP : 0;

	if (lock->set.flags & PIDLOCK_PLAIN_PID)
		opts |= FMT_PLAIN_PID;
	if (lock->set.flags & PIDLOCK_EXIT_RELEASES)
		opts |= FMT_EXIT_RELEASES;
	if (lock->set.shared)
		opts |= FMT_SHARED;
	return opts;
}

/*
 * The one writer of a holder's record (create, takeover, refresh): the
 * record for `pid`, stamped now, over old_len bytes of an earlier one.
 * What it wrote is noted in the handle, so that release can tell the
 * record is still ours without reading it back.  The caller passes the
 * pid it already has: getpid(2) is a system call, once per cycle.
 *
 * Shared holders write without a lock among themselves: every one of
 * their writes is one pwrite(2) of max(old length, SHARED_RECORD_LEN)
 * bytes, and a lock file never shrinks, so two that write at once write
 * the same length and the later one replaces all of the earlier one.
 */
int io_write_record(struct pidlock *lock, int fd, pid_t pid, bool keep,
		    size_t old_len)
{
	size_t len = content_format(lock->buf, sizeof(lock->buf), pid,
				    io_now_sec(), lock->set.tag,
				    lock->set.kinds, record_opts(lock, keep));
	int r;

	len = content_put_host(lock->buf, sizeof(lock->buf), len, host_self());
	if (lock->set.shared && old_len < SHARED_RECORD_LEN)
		old_len = SHARED_RECORD_LEN;
	r = io_write_content(fd, lock->buf, len, old_len,
			     !(lock->set.flags & PIDLOCK_NO_SYNC));
	if (r < 0)
		return r;
	lock->hold.writer = pid;
	lock->hold.keep = keep;
	return 0;
}

int64_t io_now_sec(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
		return 0;
	return (int64_t)ts.tv_sec;
}

/* Clamped: a file system may store mtimes (a tmpfs: any 64-bit second
 * count) that no nanosecond count holds.  Half the range, about 146
 * years either way, leaves room for a margin added to it. */
int64_t io_mtime_ns(const struct stat *st)
{
	const int64_t ns = 1000000000;
	const int64_t max_sec = INT64_MAX / ns / 2;
	int64_t sec = (int64_t)st->st_mtim.tv_sec;

	if (sec > max_sec)
		sec = max_sec;
	if (sec < -max_sec)
		sec = -max_sec;
	return sec * ns + st->st_mtim.tv_nsec;
}

int64_t io_now_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * How much of the grace period after the file's last write is left.
 * Whoever may write the file may set any mtime (tmpfs keeps all 64
 * bits), so only one within a second and a grace period of now, either
 * way, is taken for a write in progress; a little ahead (a writer's
 * clock) counts as "just written".  Any other mtime is no write: were a
 * far-future one "just written", each try would wait again, forever.
 */
int64_t io_grace_left_ms(const struct stat *st, unsigned int grace_ms)
{
	time_t span = (time_t)(grace_ms / 1000) + 1;
	struct timespec ts;
	int64_t age;

	if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
		return 0;
	if (st->st_mtim.tv_sec < ts.tv_sec - span ||
	    st->st_mtim.tv_sec > ts.tv_sec + span)
		return 0;
	age = ((int64_t)ts.tv_sec - (int64_t)st->st_mtim.tv_sec) * 1000 +
	      ((int64_t)ts.tv_nsec - (int64_t)st->st_mtim.tv_nsec) / 1000000;
	if (age < 0)
		age = 0;
	return (int64_t)grace_ms - age;
}
