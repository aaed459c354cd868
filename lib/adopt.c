/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Locks on a caller's descriptor: pidlock_lock_fd() and
 * pidlock_unlock_fd(), for a shell that opened the lock file itself
 * (`exec 9<>path`) and hands the descriptor to a short-lived pidlock(1),
 * as it would to flock(1).  The open file description is the caller's:
 * the kernel locks go on it and last as long as the caller keeps it,
 * the record names the pid the caller gives (the shell), and the file is
 * kept, because the caller's descriptor stays open on its inode after the
 * hold (doc/protocol.md, section 4c).  The handle only lends the path and
 * the settings: it holds nothing afterwards.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* A pid the record may name: not the released record's (see content.c). */
#define FD_PID_LIMIT 4194304

/* What may wake a wait for the caller's inode: a holder's close, or the
 * released record written by pidlock_unlock_fd(), whose caller keeps its
 * descriptor open. */
#define WATCH_FD_HOLDER (WATCH_RELEASE | IN_MODIFY)

/*
 * The description must be writable: the OFD write lock needs it.  A
 * shell's `9<` (read-only) is refused.  One that cannot read (`9>`,
 * `9>>`, as flock(1)'s manual opens it) or that appends (every
 * pwrite(2) would go to the end of the file, after the record it should
 * replace) keeps the kernel locks all the same: its record goes through
 * a second open (split.c).
 */
static int check_args(const struct pidlock *lock, int fd)
{
	int fl;

	if (!lock || fd < 0)
		return -EINVAL;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;
	if ((fl & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	return 0;
}

/*
 * Even a try waits out the grace of a young incomplete file (rule C):
 * the caller's own `exec 9<>path` may have created it a moment ago, and
 * a spec-only peer's create, about to be written, looks the same.
 */
static int64_t decide_deadline(const struct pidlock *lock, int64_t deadline)
{
	int64_t grace_end;

	if (deadline < 0)
		return -1;
	grace_end = io_now_ms() + lock->set.grace_ms;
	return deadline > grace_end ? deadline : grace_end;
}

/*
 * One pass of step 3 on the caller's description.  The path must name
 * its inode before and after the locks: the caller cannot open the path
 * again for us, so a file that was unlinked or replaced is -ESTALE, not
 * a retry.
 */
static int try_once(struct pidlock *lock, int fd, int64_t deadline)
{
	struct stat st;
	/* The lookup only: the server of a shared file system is asked
	 * after the locks (existing_lock_fd), not in each round of a wait,
	 * whose watch would wake on the open that asking makes. */
	int r = existing_names_inode(lock, fd, &st);

	if (r != 0)
		return r < 0 ? r : -ESTALE;
	r = existing_lock_fd(lock, fd, decide_deadline(lock, deadline));
	if (r == TRY_AGAIN)
		return -ESTALE;
	return r == -EWOULDBLOCK ? TRY_BUSY : r;
}

/* Between tries: a holder's close or release record, or the retry
 * interval (a flock(1) holder's `-u` makes no event). */
static int wait_turn(const struct pidlock *lock, struct watch *w,
		     int64_t deadline)
{
	int64_t left = wait_left_ms(lock, deadline);
	int r;

	if (left <= 0)
		return -ETIMEDOUT;
	r = wait_for_event(w, NULL, left, lock->set.retry_ms);
	return r < 0 ? r : 0;
}

/*
 * Was the last pass busy only because rule C's grace had not quite run
 * out?  The grace is measured from the file's mtime in whole
 * milliseconds, so a pass that waited it out can still find one left.
 */
static bool grace_busy(const struct pidlock *lock)
{
	const struct pidlock_info *h = &lock->seen.holder;

	return lock->seen.known && h->state == PIDLOCK_STATE_HELD_SPEC &&
	       !h->marker && !(h->pid > 0 && h->has_timestamp);
}

static int lock_loop(struct pidlock *lock, int fd, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1
			 : timeout_ms == 0 ? 0 : io_now_ms() + timeout_ms;
	struct watch w = { .ifd = -1, .file_wd = -1, .dir_wd = -1 };
	bool watching = false, looked_again = false;
	int r;

	for (;;) {
		r = try_once(lock, fd, deadline);
		/* A try looks once more after the grace it waited out. */
		if (r == TRY_BUSY && deadline == 0 && !looked_again &&
		    grace_busy(lock)) {
			looked_again = true;
			continue;
		}
		if (r != TRY_BUSY)
			break;
		/* A kind taken before another was refused: not ours to keep. */
		r = klock_drop(fd, lock->set.kinds);
		if (r < 0)
			break;
		if (deadline == 0) {
			r = -EWOULDBLOCK;
			break;
		}
		if (!watching) {
			/* Once the watch is in place, try again at once: the
			 * release may have come before it. */
			wait_init(&w, NULL);
			(void)wait_watch_file(&w, lock->set.path,
					      WATCH_FD_HOLDER);
			watching = true;
			continue;
		}
		r = wait_turn(lock, &w, deadline);
		if (r < 0)
			break;
	}
	if (watching)
		wait_close(&w);
	return r;
}

static int mark_released(struct pidlock *lock, int fd);

/*
 * Once per handle, as pidlock_acquire() does: locks that keep out
 * nobody, or this host only, hold nothing.  The record just written is
 * marked released before the locks go, so that no reader takes it for a
 * holder's.
 */
static int check_fs_once(struct pidlock *lock, int fd)
{
	struct stat st;
	int r;

	if (lock->cache.fs_checked)
		return TRY_HELD_BY_US;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else
		r = acquire_check_fs(lock, fd, st.st_dev, st.st_ino);
	if (r == 0) {
		lock->cache.fs_checked = true;
		return TRY_HELD_BY_US;
	}
	(void)mark_released(lock, fd);
	return path_replaced(r) ? -ESTALE : r;
}

static int lock_fd(struct pidlock *lock, int fd, pid_t pid, int timeout_ms)
{
	int r = check_args(lock, fd);

	if (r == 0 && (pid < 0 || pid >= FD_PID_LIMIT))
		r = -EINVAL;
	/* One description holds one lock: a shared hold has many holders,
	 * whose last one out unlinks, which a caller's kept file forbids. */
	if (r == 0 && lock->set.shared)
		r = -EINVAL;
	if (r == 0 && lock->hold.fd >= 0)
		r = -EALREADY;
	if (r == 0)
		r = handle_check_dir(lock->set.dir);
	if (r == 0)
		r = split_begin(lock, fd);
	if (r < 0)
		return io_rc_filter(r);
	lock->seen.known = false;
	lock->hold.fd_pid = pid ? pid : self_pid();
	r = lock_loop(lock, fd, timeout_ms);
	if (r == TRY_HELD_BY_US)
		r = check_fs_once(lock, fd);
	/* Whatever failed, the description holds none of our kinds. */
	if (r != TRY_HELD_BY_US)
		(void)klock_drop(fd, lock->set.kinds);
	split_end(lock);
	/* The handle only borrowed the caller's descriptor. */
	hold_clear(lock);
	return io_rc_filter(r == TRY_HELD_BY_US ? 0 : r);
}

/* Not cancellable (cancel.c): a cancellation point between the locks
 * and their drop on failure would leave them on the caller's
 * description. */
PIDLOCK_EXPORT int pidlock_lock_fd(struct pidlock *lock, int fd, pid_t pid,
				   int timeout_ms)
{
	int old, r;

	/* A descriptor's lock outlives the call: no hold to number. */
	if (lock && (lock->set.flags & PIDLOCK_TOKEN))
		return -EINVAL;
	old = cancel_off();
	r = lock_fd(lock, fd, pid, timeout_ms);
	cancel_restore(old);
	return r;
}

/*
 * Does the description hold the lock?  It may take the kernel locks of
 * our kinds without waiting (which changes nothing if it holds them
 * already), and nobody else holds one of the other kind (rule A's test).
 * Otherwise its record is somebody else's to write: -ENOLCK.
 */
static int holds(const struct pidlock *lock, int fd)
{
	unsigned int busy = 0, others = 0;
	int r = klock_take(fd, lock->set.kinds, false, &busy);

	if (r == -EWOULDBLOCK)
		return -ENOLCK;
	if (r < 0)
		return r;
	r = klock_test(fd, KINDS_ALL & ~lock->set.kinds, &others);
	if (r < 0)
		return r;
	return others ? -ENOLCK : 0;
}

/*
 * The release of a kept file (section 4), on the caller's description:
 * our record becomes the released record, in place, padded over the old
 * one.  Only our marker is rewritten; anything else the file holds (an
 * empty file, a bare pid, somebody's data) stays as it is.
 */
static int mark_released(struct pidlock *lock, int fd)
{
	char buf[CONTENT_READ_MAX];
	char rec[CONTENT_BUF_MAX];
	struct content c;
	struct stat st;
	size_t len;
	ssize_t n;
	int r = existing_same_inode(lock, fd, &st);

	if (r != 0)
		return r < 0 ? r : -ESTALE;
	if (st.st_nlink != 1)
		return -EMLINK;
	/* A holder of another kind may be writing beside us. */
	n = io_read_settled(io_read_fd(lock, fd), buf, sizeof(buf), &st);
	if (n < 0)
		return (int)n;
	if (!content_is_lock_file(buf, (size_t)n, (int64_t)st.st_size))
		return -EBADMSG;
	content_parse(buf, (size_t)n, &c);
	if (!c.marker || c.released)
		return 0;
	len = content_format_released(rec, sizeof(rec), io_now_sec(), c.marker,
				      FMT_KEEP);
	return io_write_content(io_write_fd(lock, fd), rec, len,
				&(struct io_old){ (size_t)st.st_size, c.head },
				IO_KEEP_TAIL | io_sync_how(lock));
}

static int unlock_fd(struct pidlock *lock, int fd)
{
	int r = check_args(lock, fd);
	int rd;

	if (r == 0)
		r = split_begin(lock, fd);
	if (r < 0)
		return io_rc_filter(r);
	r = holds(lock, fd);
	if (r == 0)
		r = mark_released(lock, fd);
	split_end(lock);
	/* Like flock(1) -u: the description lets go, whatever it held. */
	rd = klock_drop(fd, KINDS_ALL);
	return io_rc_filter(r < 0 ? r : rd);
}

/* Not cancellable (cancel.c): the record's write and sync come before
 * the unlock, which must not be skipped. */
PIDLOCK_EXPORT int pidlock_unlock_fd(struct pidlock *lock, int fd)
{
	int old = cancel_off();
	int r = unlock_fd(lock, fd);

	cancel_restore(old);
	return r;
}
