/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Small I/O and clock helpers shared by the lock paths. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
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
	EOPNOTSUPP, EOVERFLOW, EPERM, ERANGE, EREMOTE, EROFS, ESRCH, ESTALE, ETIME, ETIMEDOUT, ETXTBSY,
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
		io_pause(pause_ms * 1000000L);
		slept += pause_ms;
		pause_ms *= 2;
		if (fstat(fd, st) < 0)
			return -errno;
		n = io_read_bounded(fd, buf, size);
	}
	return n;
}

/* Linux 6.9's pwritev2(2) flag: this write at its offset, whatever
 * O_APPEND says.  Older kernels refuse it with EOPNOTSUPP. */
#ifndef RWF_NOAPPEND
#define RWF_NOAPPEND 0x00000020
#endif

/* Set once a kernel refused RWF_NOAPPEND: no second try per write. */
static int noappend_refused;

/* pwritev2(2): the C library's, else the system call (musl before
 * 1.2.5 has none); the offset in two halves, as the kernel takes it. */
static ssize_t io_pwritev2(int fd, const struct iovec *iov, int cnt,
			   off_t off, int flags)
{
#ifdef HAVE_PWRITEV2
	return pwritev2(fd, iov, cnt, off, flags);
#elif defined(SYS_pwritev2)
	uint64_t pos = (uint64_t)off;

	return syscall(SYS_pwritev2, fd, iov, cnt, (unsigned long)pos,
		       (unsigned long)(pos >> 32), flags);
#else
	(void)fd;
	(void)iov;
	(void)cnt;
	(void)off;
	(void)flags;
	errno = ENOSYS;
	return -1;
#endif
}

/* One write at `off`; through a description with O_APPEND (`appends`)
 * without appending, or -EOPNOTSUPP where the kernel cannot. */
static ssize_t pwrite_at(int fd, const char *buf, size_t len, off_t off,
			 bool appends)
{
	struct iovec iov = { .iov_base = NULL, .iov_len = len };
	ssize_t n;

	if (!appends)
		return pwrite(fd, buf, len, off);
	if (__atomic_load_n(&noappend_refused, __ATOMIC_RELAXED)) {
		errno = EOPNOTSUPP;
		return -1;
	}
	/* The kernel only reads it; iovec has no const, and a cast that
	 * drops one is what clang's -Wcast-qual forbids. */
	memcpy(&iov.iov_base, &buf, sizeof(buf));
	n = io_pwritev2(fd, &iov, 1, off, RWF_NOAPPEND);
	if (n < 0 && (errno == EOPNOTSUPP || errno == ENOSYS ||
		      errno == EINVAL)) {
		__atomic_store_n(&noappend_refused, 1, __ATOMIC_RELAXED);
		errno = EOPNOTSUPP;
	}
	return n;
}

static int pwrite_all(int fd, const char *buf, size_t len, bool appends)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite_at(fd, buf + done, len - done, (off_t)done,
				      appends);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

/*
 * A kernel before 6.9 has no RWF_NOAPPEND: the record goes through a
 * second open of the inode, which does not append.  /proc/self/fd/N
 * names the description's own inode (O_NOFOLLOW would refuse the link
 * itself, which is the kernel's), and fstat(2) confirms it.  Clearing
 * O_APPEND around our write instead would let a write of the holder's,
 * from another thread or a child sharing the description, land at the
 * file offset meanwhile: on the record.
 */
static int pwrite_reopened(int fd, const char *buf, size_t len)
{
	char link[64];
	struct stat mine, other;
	int io, r;

	(void)snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	io = open(link, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (io < 0)
		return -errno;
	if (fstat(fd, &mine) < 0 || fstat(io, &other) < 0) {
		r = -errno;
		(void)close(io);
		return r;
	}
	r = mine.st_dev == other.st_dev && mine.st_ino == other.st_ino
		    ? pwrite_all(io, buf, len, false)
		    : -ESTALE;
	(void)close(io);	/* a close(2) does not undo a write */
	return r;
}

/*
 * The record's bytes at offset 0, whatever the description's O_APPEND.
 * RWF_NOAPPEND where the hand-out found it honoured; a stacked file
 * system (overlayfs) passes the write on to its own open file, which
 * appends, and drops the flag: there, and where nobody tried it (a fork
 * may have handed the description out), a second open, unless the
 * description does not append at all.  Without /proc a second open
 * cannot be made: RWF_NOAPPEND then, unless the hand-out saw it
 * ignored, which is an error rather than a record among the holder's
 * bytes.
 */
static int write_record_bytes(int fd, const char *buf, size_t len,
			      unsigned int how)
{
	int fl, r;

	if (!(how & IO_APPENDS))
		return pwrite_all(fd, buf, len, false);
	if (how & IO_NOAPPEND_OK) {
		r = pwrite_all(fd, buf, len, true);
		return r == -EOPNOTSUPP ? pwrite_reopened(fd, buf, len) : r;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;
	if (!(fl & O_APPEND))
		return pwrite_all(fd, buf, len, false);
	r = pwrite_reopened(fd, buf, len);
	if (r != -ENOENT || (how & IO_NOAPPEND_BAD))
		return r;
	return pwrite_all(fd, buf, len, true);
}

/*
 * A record that the holder's bytes may follow: its lines, the last one
 * padded with spaces (which every reader trims), and the empty line that
 * ends it (content_head()), `target` bytes in all.  rec ends with LF;
 * target >= len + 1.
 */
static size_t lay_head(char *out, const char *rec, size_t len, size_t target)
{
	memcpy(out, rec, len - 1);
	memset(out + len - 1, ' ', target - len - 1);
	out[target - 2] = '\n';
	out[target - 1] = '\n';
	return target;
}

/* The new content's bytes: see io_write_content(). */
static ssize_t lay_out(char *out, size_t size, const char *buf, size_t len,
		       const struct io_old *old, unsigned int how)
{
	size_t target = len;

	if (old->head || (how & IO_ROOM)) {
		if (target < old->head)
			target = old->head;
		if (target < len + 1)
			target = len + 1;
		if ((how & IO_ROOM) && target < RECORD_ROOM)
			target = RECORD_ROOM;
		if (target > size || len == 0 || buf[len - 1] != '\n')
			return -EBADMSG;
		return (ssize_t)lay_head(out, buf, len, target);
	}
	if (old->size > size)
		return -EBADMSG;
	memcpy(out, buf, len);
	if (old->size > len) {
		memset(out + len, '\n', old->size - len);
		target = old->size;
	}
	return (ssize_t)target;
}

/*
 * Replace the content in place without a reader ever seeing a shorter
 * or torn record: one write of the new record, padded so that no byte
 * of the old record survives behind it.  A file that is one record of
 * any kind is padded with newlines (ignored by spec parsers) to its old
 * length; nothing of it is ever cut: a file longer than a lock file can
 * be is somebody's data, and was refused before this.  A record of ours
 * that the holder's bytes may follow (old->head) is padded, inside,
 * to its old length at least, so they stay where they are: kept when
 * the holder rewrites its own record (IO_KEEP_TAIL), cut behind the new
 * record when a takeover makes the file another holder's.
 */
int io_write_content(int fd, const char *buf, size_t len,
		     const struct io_old *old, unsigned int how)
{
	char out[PIDLOCK_CONTENT_MAX];
	ssize_t n = lay_out(out, sizeof(out), buf, len, old, how);
	int r;

	if (n < 0)
		return (int)n;
	r = write_record_bytes(fd, out, (size_t)n, how);
	if (r < 0)
		return r;
	if (old->head && !(how & IO_KEEP_TAIL) && old->size > (size_t)n &&
	    ftruncate(fd, (off_t)n) < 0)
		return -errno;
	if ((how & IO_SYNC) && fdatasync(fd) < 0)
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
 * record for `pid`, stamped now, over `old`.  What it wrote is noted in
 * the handle, so that release can tell the record is still ours without
 * reading it back.  The caller passes the pid it already has: getpid(2)
 * is a system call, once per cycle.
 *
 * Shared holders write without a lock among themselves: every one of
 * their writes is one pwrite(2) of max(old length, SHARED_RECORD_LEN)
 * bytes, and a lock file never shrinks, so two that write at once write
 * the same length and the later one replaces all of the earlier one.
 */
int io_write_record(struct pidlock *lock, int fd, pid_t pid, bool keep,
		    const struct io_old *old, unsigned int how)
{
	size_t len = content_format(lock->buf, sizeof(lock->buf), pid,
				    io_now_sec(), lock->set.tag,
				    lock->set.kinds, record_opts(lock, keep));
	struct io_old over = *old;
	int r;

	len = content_put_host(lock->buf, sizeof(lock->buf), len, host_self());
	len = content_put_token(lock->buf, sizeof(lock->buf), len,
				lock->hold.token);
	if (lock->set.shared && !over.head && over.size < SHARED_RECORD_LEN)
		over.size = SHARED_RECORD_LEN;
	if (lock->set.shared && over.head)
		how |= IO_ROOM;
	how |= io_sync_how(lock);
	r = io_write_content(fd, lock->buf, len, &over, how);
	if (r < 0)
		return r;
	lock->hold.writer = pid;
	lock->hold.keep = keep;
	return 0;
}

/*
 * How the holder rewrites its own record through hold.fd.  The
 * description may append if pidlock_fd() handed it out, here or in a
 * process forked since the acquire, which shares it (pidlock(1) hands it
 * to its command in the child): after a fork, or where forks cannot be
 * counted (generation 0), we write as if it did.
 */
unsigned int io_hold_how(const struct pidlock *lock)
{
	unsigned int how = IO_KEEP_TAIL;
	unsigned long gen = self_fork_generation();

	if (lock->hold.fd_given || gen == 0 || lock->hold.gen != gen)
		how |= IO_APPENDS;
	if (lock->hold.noappend > 0)
		how |= IO_NOAPPEND_OK;
	if (lock->hold.noappend < 0)
		how |= IO_NOAPPEND_BAD;
	return how | io_sync_how(lock);
}

/*
 * What a rewrite of the held record goes over: one read, no fstat(2),
 * for a file that is one record; the length of a file of 4 KiB or more
 * only where no record of ours leads it.
 */
int io_held_old(const struct pidlock *lock, struct io_old *old)
{
	char buf[CONTENT_READ_MAX];
	ssize_t n = io_read_bounded(lock->hold.fd, buf, sizeof(buf));
	struct stat st;

	if (n < 0)
		return (int)n;
	old->head = content_head_tail(buf, (size_t)n);
	old->size = (size_t)n;
	if (old->head || (size_t)n < sizeof(buf))
		return 0;
	if (fstat(lock->hold.fd, &st) < 0)
		return -errno;
	old->size = (size_t)st.st_size;
	return 0;
}

/*
 * The record's own bytes, for the hand-out below: the file read is one
 * record of ours, with nothing but blank lines after it (the padding of
 * a shared record, or of a takeover over a longer file), shorter than
 * RECORD_ROOM.  Else 0: it has its room already (content_head()), or
 * somebody's bytes follow it.
 */
static size_t own_record(const char *buf, size_t n)
{
	size_t rec = n;
	struct content c;

	if (n >= CONTENT_READ_MAX || content_head(buf, n))
		return 0;
	while (rec >= 2 && buf[rec - 1] == '\n' && buf[rec - 2] == '\n')
		rec--;
	if (rec == 0 || buf[rec - 1] != '\n' || rec >= RECORD_ROOM ||
	    !content_is_lock_file(buf, n, (int64_t)n))
		return 0;
	content_parse(buf, n, &c);
	return c.marker && c.pid > 0 ? rec : 0;
}

/*
 * Whether RWF_NOAPPEND keeps a write through `fd`, which appends, at its
 * offset: 1 if so, 0 if the kernel refuses it or the write appended.
 * The probe rewrites the record's first byte, `first`, in place; where
 * it was appended instead, the file is cut back, which is safe while
 * the descriptor has not yet been handed out: nobody else wrote.
 */
static int noappend_probe(int fd, char first)
{
	struct stat before, after;
	int r;

	if (fstat(fd, &before) < 0)
		return -errno;
	r = pwrite_all(fd, &first, 1, true);
	if (r == -EOPNOTSUPP)
		return 0;
	if (r < 0)
		return r;
	if (fstat(fd, &after) < 0)
		return -errno;
	if (after.st_size == before.st_size)
		return 1;
	if (ftruncate(fd, before.st_size) < 0)
		return -errno;
	return 0;
}

/*
 * pidlock_fd() hands the descriptor out: the holder may write through
 * it from now on (filelock's on_acquired).  Its writes must never land
 * on the record, or a crash would leave a file that is no lock file and
 * is never taken over.  So the record gets its room (RECORD_ROOM) and
 * its empty line (content_head()), and the description O_APPEND:
 * write(2), and pwrite(2) too (Linux appends under O_APPEND whatever
 * the offset), land after the record.  Ours then write with
 * RWF_NOAPPEND, or through a second open (write_record_bytes()), as
 * the probe tells (*noappend 1 or -1; 0 untried).  Once per hold; not
 * synced: a crash before the next sync leaves the record as it was,
 * which is still ours.
 */
int io_hand_out(const struct pidlock *lock, signed char *noappend)
{
	char buf[CONTENT_READ_MAX];
	int fd = lock->hold.fd, fl, r;
	ssize_t n = io_read_bounded(fd, buf, sizeof(buf));
	size_t rec;

	if (n < 0)
		return (int)n;
	rec = own_record(buf, (size_t)n);
	if (rec) {
		/* Over all n bytes: its padding goes too. */
		struct io_old old = { .size = (size_t)n, .head = (size_t)n };
		r = io_write_content(fd, buf, rec, &old,
				     IO_KEEP_TAIL | IO_ROOM);
		if (r < 0)
			return r;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_APPEND) < 0)
		return -errno;
	/* Shared holders write the record without a lock among themselves,
	 * each write whole (io_write_record()): a byte of our stale copy
	 * would land in another holder's newer record.  Theirs are left
	 * untried (0), as after a fork. */
	*noappend = 0;
	if (n == 0 || lock->set.shared)
		return 0;
	r = noappend_probe(fd, buf[0]);
	if (r < 0)
		return r;
	*noappend = r ? 1 : -1;
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

/* CLOCK_BOOTTIME ms: the time a file server counts, suspends included.
 * The lease runs on it (check.c): on CLOCK_MONOTONIC, which stops while
 * the machine sleeps, a laptop woken after a minute would hold a lease
 * it believes fresh while the server has given the lock away. */
int64_t io_boot_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
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
