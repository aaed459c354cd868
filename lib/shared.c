/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Leaving a shared lock (doc/protocol.md, "Shared locks").  Several
 * holders share the file; the last one out removes it, and no earlier
 * one does.  Nobody can ask the kernel "am I the last reader?" and act
 * on the answer in one step, so a leaver asks by taking the locks
 * exclusively without waiting: first while it still holds (an upgrade),
 * and, if that is refused, once more after it has let go, because two
 * leavers that try at the same moment each refuse the other.  Whoever
 * gets the exclusive locks with the path still naming the file holds
 * the lock alone, as an exclusive holder would, and releases it so.
 */
#include "config.h"

#include <errno.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "internal.h"

/* A locker of a kind we did not take keeps the file held. */
static int others_free(const struct pidlock *lock)
{
	unsigned int others = KINDS_ALL & ~lock->set.kinds, held = 0;
	int r;

	if (!others)
		return 1;
	r = klock_test(lock->hold.fd, others, &held);
	return r < 0 ? r : !held;
}

/* 1: we hold the file alone, exclusively, and the path names it. */
static int alone(struct pidlock *lock)
{
	struct stat st;
	int r = klock_try_exclusive(lock->hold.fd, lock->set.kinds);

	if (r == 1)
		r = others_free(lock);
	if (r == 1)
		r = existing_same_inode(lock, lock->hold.fd, &st) == 0;
	return r;
}

/*
 * A pid the kernel names for a lock on the file that is not ours and is
 * alive: another holder.  flock(2) rows name their process; OFD rows
 * name nobody, so a holder of OFD locks only cannot be found this way.
 */
static pid_t other_holder(struct pidlock *lock, pid_t self)
{
	dev_t dev = klock_listed_dev(lock, lock->hold.fd, lock->hold.dev);
	struct klock_holders h;

	if (klock_holders(dev, lock->hold.ino, false, &h) < 0)
		return 0;
	for (unsigned int i = 0; i < h.npids; i++)
		if (h.pids[i] != self && pid_group_alive(h.pids[i]))
			return h.pids[i];
	return 0;
}

/*
 * Not the last one out.  If the record names us, it is rewritten to
 * name a holder that stays, so that a spec-only peer does not find a
 * dead pid in it while the lock is held.  Written only while we hold a
 * lock on the file and the path names it: a flock-only holder whose
 * conversion was refused holds nothing, and takes its shared lock back
 * first (refused: an exclusive holder is in, and the record is its).
 */
static int hand_over_record(struct pidlock *lock)
{
	char buf[CONTENT_READ_MAX];
	unsigned int busy = 0;
	struct content c;
	struct stat st;
	pid_t self = self_pid(), other;
	ssize_t n;

	if (lock->set.kinds == PIDLOCK_KIND_FLOCK &&
	    klock_take_mode(lock->hold.fd, lock->set.kinds, true, false,
			    &busy) < 0)
		return 0;
	if (existing_same_inode(lock, lock->hold.fd, &st) != 0)
		return 0;
	n = io_read_bounded(lock->hold.fd, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	content_parse(buf, (size_t)n, &c);
	if (c.pid != self || !c.marker)
		return 0;
	other = other_holder(lock, self);
	if (!other)
		return 0;
	return io_write_record(lock, lock->hold.fd, other,
			       lock->hold.keep || c.keep,
			       &(struct io_old){ (size_t)st.st_size, c.head },
			       io_hold_how(lock));
}

/*
 * We hold the file alone, about to release it.  A holder that joined
 * after us with PIDLOCK_KEEP_FILE made it a kept file (keep=1), for
 * inode-blind peers: then the last one out keeps it too.  1 if the
 * record is still the shared one nobody released (ours to release).
 */
int shared_adopt_keep(struct pidlock *lock)
{
	char buf[CONTENT_READ_MAX];
	struct content c;
	ssize_t n = io_read_bounded(lock->hold.fd, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	content_parse(buf, (size_t)n, &c);
	if (c.keep)
		lock->hold.keep = true;
	return c.marker && !c.released;
}

/*
 * LET_GO: we are the last one out, alone with the exclusive
 * locks and the path naming the file: the caller lets go as an
 * exclusive holder would (release.c).  Returned, not done here, so that
 * this file needs nothing of release.c's.
 */
int shared_release(struct pidlock *lock)
{
	int r;

	/* For release.c's file_stays(): our upgrade below wakes whoever
	 * waits, and the kernel lists a waiter only once it blocks again.
	 * Asked only where we may be the last one out: another reader's
	 * OFD lock says we are not, for one fcntl(2) instead of a read of
	 * /proc/locks. */
	lock->hold.queued = klock_query_ofd(lock->hold.fd, NULL) == 0 &&
			    klock_anyone_waits(lock->hold.ino);
	r = alone(lock);
	if (r == 1)
		r = shared_adopt_keep(lock);
	if (r == 1)
		return LET_GO;
	if (r < 0)
		(void)klock_drop(lock->hold.fd, lock->set.kinds);
	if (r == 0)
		r = hand_over_record(lock);
	/* Flock first, OFD last: see klock_try_exclusive(). */
	if (r == 0)
		r = klock_drop(lock->hold.fd, lock->set.kinds);
	if (r < 0)
		return r;
	/* Everybody else may have let go meanwhile, having seen us. */
	r = alone(lock);
	if (r == 1 && shared_adopt_keep(lock) == 1)
		return LET_GO;
	if (r < 0)
		return r;
	return klock_drop(lock->hold.fd, lock->set.kinds);
}
