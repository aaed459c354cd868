/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Holding: verify, refresh, release, close. */
#include "config.h"

#include <errno.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* 0 if the path still names the inode we hold, -ESTALE if not; *links:
 * the inode's link count then. */
static int check_held_links(const struct pidlock *lock, nlink_t *links)
{
	struct stat st;

	if (lock->hold.fd < 0)
		return -ENOLCK;
	if (lstat(lock->set.path, &st) < 0)
		return errno == ENOENT ? -ESTALE : -errno;
	if (st.st_dev != lock->hold.dev || st.st_ino != lock->hold.ino)
		return -ESTALE;
	*links = st.st_nlink;
	return 0;
}

static int check_held(const struct pidlock *lock)
{
	nlink_t links;

	return check_held_links(lock, &links);
}

PIDLOCK_EXPORT int pidlock_verify(struct pidlock *lock)
{
	if (!lock)
		return -EINVAL;
	/* Not hold.lost: verify answers only for the path (its callers,
	 * the Python binding's among them, read -ENOLCK as "holds no
	 * descriptor"); pidlock_check() answers for the lock. */
	return io_rc_filter(check_held(lock));
}

/* The record is rewritten; the holder's bytes after it stay. */
static int refresh(struct pidlock *lock)
{
	struct io_old old = { 0, 0 };
	int r;

	if (!lock)
		return -EINVAL;
	/* Lost: the path and the file are the next holder's (check.c). */
	if (lock->hold.fd >= 0 && lock->hold.lost)
		return -ENOLCK;
	r = check_held(lock);
	/* Never over another holder's record (check.c). */
	if (r == 0)
		r = check_still_ours(lock, true);
	if (r == 0)
		r = io_held_old(lock, &old);
	/* Another shared holder may have made the file a kept one since. */
	if (r == 0 && lock->set.shared)
		r = shared_adopt_keep(lock) < 0 ? -EIO : 0;
	if (r == 0)
		r = io_write_record(lock, lock->hold.fd, self_pid(),
				    lock->hold.keep, &old, io_hold_how(lock));
	return io_rc_filter(r);
}

/* Calls that change the file or the handle run to their end: see
 * cancel.c. */
PIDLOCK_EXPORT int pidlock_refresh(struct pidlock *lock)
{
	int old = cancel_off();
	int r = refresh(lock);

	cancel_restore(old);
	return r;
}

static void forget(struct pidlock *lock)
{
	check_abandon(lock);
	hold_clear(lock);
	/* After the lock's own close: the next holder is on its way
	 * before we pay for this one (see acquire.c). */
	if (lock->hold.wait_ifd >= 0)
		io_close_keep_errno(lock->hold.wait_ifd);
	lock->hold.wait_ifd = -1;
}

static int close_handle(struct pidlock *lock)
{
	int r = 0;

	if (!lock)
		return -EINVAL;
	/* A handle that only waits in an event loop: closing cancels it. */
	if (lock->hold.fd < 0 && lock->wait.on) {
		async_cancel(lock);
		return 0;
	}
	if (lock->hold.fd < 0)
		return -ENOLCK;
	if (close(lock->hold.fd) < 0 && errno != EINTR)
		r = -errno;
	forget(lock);
	return io_rc_filter(r);
}

PIDLOCK_EXPORT int pidlock_close(struct pidlock *lock)
{
	int old = cancel_off();
	int r = close_handle(lock);

	cancel_restore(old);
	return r;
}

/* No fork since the acquire began, and we are the process that wrote
 * last: nobody else can have written the record through this handle. */
static bool record_is_ours(const struct pidlock *lock, pid_t self)
{
	return lock->hold.gen != 0 &&
	       lock->hold.gen == self_fork_generation() &&
	       lock->hold.writer == self;
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
	pid_t self = self_pid();
	ssize_t n;

	if (record_is_ours(lock, self))
		return true;
	n = io_read_bounded(lock->hold.fd, buf, sizeof(buf));
	if (n < 0)
		return false;
	content_parse(buf, (size_t)n, &c);
	return c.pid == self;
}

/* The inode stays: say so in it, with no pid that could be misread;
 * keep=1 only for a kept file (see content.c).  The holder's bytes after
 * the record stay until the next holder takes the file. */
static int mark_released(struct pidlock *lock, bool keep)
{
	size_t len = content_format_released(lock->buf, sizeof(lock->buf),
					     io_now_sec(), lock->set.kinds,
					     keep ? FMT_KEEP : 0);
	struct io_old old = { 0, 0 };
	int r = io_held_old(lock, &old);

	if (r < 0)
		return r;
	return io_write_content(lock->hold.fd, lock->buf, len, &old,
				io_hold_how(lock));
}

static bool kept_file(const struct pidlock *lock)
{
	return lock->hold.keep || (lock->set.flags & PIDLOCK_KEEP_FILE);
}

/*
 * Is anybody else on the inode: blocked in the kernel for its lock
 * (/proc/locks), or holding it open on the way to flock(2) (a write
 * lease is refused while another description is open; a shell's
 * "9<file" keeps one open for the whole fork and exec of flock(1))?
 * A lease test with no answer (another user's file, a shared file
 * system's client) leaves the waiters' test alone.
 *
 * An open description is asked about again, twice, after a pause
 * (RECHECK_US): a look at the file (pidlock --stop's first look right
 * after its signal, pidlock_inspect(), a pidfile reader) has it open for
 * microseconds, and seen at that moment it kept a daemon's pidfile
 * after its clean stop.  A locker on its way to flock(2) still has it
 * open then, or is blocked and listed.  The pauses cost only a release
 * that found somebody on the file who is not queued.
 */
static const long RECHECK_US[] = { 1000, 10000 };

static bool used_by_others(const struct pidlock *lock, bool ask_again)
{
	size_t i = 0;

	for (;;) {
		if (klock_anyone_waits(lock->hold.ino))
			return true;
		if (lease_others_open(lock->hold.fd) != 1)
			return false;
		if (!ask_again ||
		    i == sizeof(RECHECK_US) / sizeof(RECHECK_US[0]))
			return true;
		io_pause(RECHECK_US[i++] * 1000L);
	}
}

/*
 * Is somebody else on the inode?  opens.c answers from the opens it
 * saw: none since we made the file; none since our grant of a file
 * that was there; or it cannot tell.
 *
 * "More opens than closes" is no answer (opens.c): two closes merged
 * into one event kept the file with nobody on it (a free-waiter's
 * holder, 2 of 15 runs of a test under load).  The kernel is asked.
 *
 * The pauses of used_by_others() let a look made during the hold end.
 * A description opened before our grant of a file that was there, with
 * no open of the name since, is not such a look: under contention it is
 * the next waiter, woken by the last release and not queued again yet.
 * Paused for, each hand-off of a kept file among our own processes
 * cost a millisecond.  Not so for a shared hold: there a description
 * from before our grant may be a co-holder's on its way out, its locks
 * dropped and its close to come.  Asked once, it kept the file for
 * nobody (test-shared, leavers at the same moment, 1 round in 150 under
 * load); the pauses let that close happen.
 */
static bool used(struct pidlock *lock, nlink_t links)
{
	switch (opens_answer(lock, links)) {
	case OPENS_NONE:
		return false;
	case OPENS_BEFORE:
		if (!lock->set.shared)
			return used_by_others(lock, false);
		break;
	case OPENS_UNKNOWN:
		break;
	}
	return used_by_others(lock, true);
}

/*
 * Does the file stay at the path?  A kept one does.  With
 * PIDLOCK_KEEP_IF_USED any other stays this once when somebody else is
 * on its inode: an inode-blind peer (flock(1), a Python flock user)
 * would get the inode after our close, and hold it unlinked while the
 * next acquirer made a new file: two holders.  Our own waiters check
 * the inode, and take a file that stays as well as a new one.  Not by
 * default: a file kept for an opener who only looked stays after the
 * last holder (a daemon's pidfile after its clean stop), and under
 * contention among our own processes each hand-off becomes the kernel
 * lock's (doc/protocol.md, "Kept while used", says what it costs and
 * what remains).
 */
static bool file_stays(struct pidlock *lock, nlink_t links)
{
	if (kept_file(lock))
		return true;
	/* The last reader out, a writer queued behind the readers: the
	 * kernel grants the writer this inode as we let go.  Unlinked, it
	 * would be worth nothing to the writer, who would race the next
	 * readers to make the next file, and lose to them again and again
	 * (doc/protocol.md, "Writers first").  Looked for before our
	 * upgrade too (shared.c): the upgrade wakes the waiters, which are
	 * not listed until they have blocked again. */
	if (lock->set.shared &&
	    (lock->hold.queued || klock_anyone_waits(lock->hold.ino)))
		return true;
	return (lock->set.flags & PIDLOCK_KEEP_IF_USED) && used(lock, links);
}

/*
 * Are there other references to our open file description?  A forked
 * child or a dup of pidlock_fd() shares its locks, and close(2) drops
 * them only with the last reference: then we unlock first, for all of
 * them.  A file that stays at the path is always unlocked first, as
 * another reference we cannot know of would hold the lock there.
 */
static bool unlock_first(const struct pidlock *lock, bool stays)
{
	return stays || lock->hold.fd_given;
}

/* close(2) of a held descriptor: EINTR still closed it (Linux). */
static int close_held(struct pidlock *lock)
{
	int r = close(lock->hold.fd) < 0 && errno != EINTR ? -errno : 0;

	lock->hold.fd = -1;
	return r;
}

/*
 * The owner's release: unlink (or mark released a file that stays)
 * while we still hold the kernel locks, so nobody can see a free lock
 * with a stale record of ours at the path; then drop the locks and
 * close.  When the descriptor is nobody else's (no fork since the
 * acquire, none under way, no pidlock_fd()), close(2) drops the locks
 * itself: two system calls fewer.  self.c holds a fork in another
 * thread back until that close is done.
 */
static int release_let_go(struct pidlock *lock, nlink_t links)
{
	bool stays = file_stays(lock, links), alone;
	int r, rc;

	lock->cache.left_file = stays;
	if (stays)
		r = mark_released(lock, kept_file(lock));
	else
		r = unlink(lock->set.path) < 0 ? -errno : 0;
	if (r < 0)
		return r;
	alone = !unlock_first(lock, stays) && self_close_begin(lock->hold.gen);
	if (!alone)
		r = klock_drop(lock->hold.fd, lock->set.kinds);
	rc = close_held(lock);
	if (alone)
		self_close_end();
	return r < 0 ? r : rc;
}

static int release(struct pidlock *lock)
{
	nlink_t links = 0;
	int r;

	if (!lock)
		return -EINVAL;
	/* A lock another holder has now: its file and record are that
	 * holder's, and only our descriptor is ours to close. */
	r = lock->hold.fd >= 0 && lock->hold.lost ? -ENOLCK
						  : check_held_links(lock,
								     &links);
	if (r == -ENOLCK && lock->hold.fd < 0)
		return r;
	if (r == 0)
		r = check_still_ours(lock, false);
	/* A shared lock's record names one of its holders, not each: the
	 * process that took it (or refreshed it last) is its owner. */
	if (r == 0 && lock->set.shared)
		r = lock->hold.writer == self_pid() ? shared_release(lock) : 0;
	else if (r == 0 && file_names_us(lock))
		r = LET_GO;
	/* The last one out, or the exclusive holder the record names. */
	if (r == LET_GO)
		r = release_let_go(lock, links);
	if (lock->hold.fd >= 0) {
		int rc = close_held(lock);

		if (r == 0)
			r = rc;
	}
	forget(lock);
	return io_rc_filter(r);
}

/* A cancellation at the close(2) of the lock file, after the close was
 * announced (self_close_begin()), would leave every later fork(2)
 * waiting out its bound, and the descriptor open with its locks. */
PIDLOCK_EXPORT int pidlock_release(struct pidlock *lock)
{
	int old = cancel_off();
	int r = release(lock);

	cancel_restore(old);
	return r;
}
