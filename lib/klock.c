/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The two kernel locks.  flock(2) excludes flock-family peers
 * (fslock-guard, flock(1), libbsd pidfile(3)); an OFD write lock on the
 * whole file excludes fcntl-family peers (with-lock-ex, lockf, flock
 * --fcntl), since OFD and classic POSIX record locks conflict.  Both
 * belong to the open file description, so they vanish with its last
 * descriptor: a holder that dies frees the lock at once.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "internal.h"
#include "mounts.h"

static void whole_file(struct flock *fl, short type)
{
	memset(fl, 0, sizeof(*fl));
	fl->l_type = type;
	fl->l_whence = SEEK_SET;
	fl->l_start = 0;
	fl->l_len = 0;	/* to EOF and beyond: covers with-lock-ex's byte 0 */
}

/*
 * A kernel lock refused with ENOSYS: the file system has no such lock
 * (flock(2) on some network and FUSE file systems).  Nothing we could
 * hold there would exclude anybody: pidlock_acquire(3)'s -ENOLCK, "the
 * file system does not support the kind of lock", rather than the -EIO
 * that the export filter makes of a code the pages do not list.
 */
static int take_error(void)
{
	return errno == ENOSYS ? -ENOLCK : -errno;
}

/*
 * The type of another's OFD or classic fcntl lock that a write lock on
 * the whole file would meet: F_RDLCK (readers hold), F_WRLCK (a writer
 * holds), F_UNLCK (none, or no answer).
 */
int klock_ofd_conflict(int fd)
{
	struct flock fl;

	whole_file(&fl, F_WRLCK);
	return fcntl(fd, F_OFD_GETLK, &fl) == 0 ? fl.l_type : F_UNLCK;
}

/*
 * Always flock first, then OFD: two libpidlock waiters then never hold
 * one lock each and wait for the other's.  On failure the caller closes
 * the descriptor, which drops whatever was taken.  `shared`: LOCK_SH and
 * an OFD read lock, which other shared holders get too and an exclusive
 * holder of either family excludes.
 */
int klock_take_mode(int fd, unsigned int kinds, bool shared, bool wait,
		    unsigned int *busy)
{
	int op = (shared ? LOCK_SH : LOCK_EX) | (wait ? 0 : LOCK_NB);
	struct flock fl;

	if ((kinds & PIDLOCK_KIND_FLOCK) && flock(fd, op) < 0) {
		if (errno != EWOULDBLOCK)
			return take_error();
		*busy = PIDLOCK_KIND_FLOCK;
		return -EWOULDBLOCK;
	}
	if (!(kinds & PIDLOCK_KIND_OFD))
		return 0;
	/* A reader that waited for its flock must not now wait for the
	 * OFD lock, flock in hand, behind a writer that holds the OFD lock
	 * and takes its flock next without waiting (standin.c): it would
	 * keep that writer out.  It backs off, as from a queued writer. */
	if (shared && wait && (kinds & PIDLOCK_KIND_FLOCK) &&
	    klock_ofd_conflict(fd) == F_WRLCK) {
		*busy = PIDLOCK_KIND_OFD;
		return -EWOULDBLOCK;
	}
	whole_file(&fl, shared ? F_RDLCK : F_WRLCK);
	if (fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) == 0)
		return 0;
	if (errno != EAGAIN && errno != EACCES)
		return take_error();
	*busy = PIDLOCK_KIND_OFD;
	return -EWOULDBLOCK;
}

int klock_take(int fd, unsigned int kinds, bool wait, unsigned int *busy)
{
	return klock_take_mode(fd, kinds, false, wait, busy);
}

/*
 * Make fd's locks exclusive without waiting, OFD first: a refused OFD
 * upgrade keeps the read lock, so a shared holder that is not alone
 * still holds both its locks when this says no.  A flock(2) conversion
 * is not atomic: a refused LOCK_EX has dropped the LOCK_SH.  Taken in
 * this order, and dropped in the other (klock_drop), two leavers that
 * try at once never make each other fail for good (doc/protocol.md,
 * "Shared locks").  Returns 1 (exclusive), 0 (somebody else holds a
 * lock) or -errno.
 */
int klock_try_exclusive(int fd, unsigned int kinds)
{
	struct flock fl;

	if (kinds & PIDLOCK_KIND_OFD) {
		whole_file(&fl, F_WRLCK);
		if (fcntl(fd, F_OFD_SETLK, &fl) < 0)
			return errno == EAGAIN || errno == EACCES ? 0 : -errno;
	}
	if ((kinds & PIDLOCK_KIND_FLOCK) && flock(fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? 0 : -errno;
	return 1;
}

/*
 * The file system check of a shared holder (acquire.c): does a second
 * open file description see our read locks?  A writer must be refused.
 * fd may be read-only, where only a query can ask for the OFD lock.
 */
bool klock_shared_excludes(int fd, unsigned int kinds)
{
	struct flock fl;

	if (kinds & PIDLOCK_KIND_OFD) {
		whole_file(&fl, F_WRLCK);
		if (fcntl(fd, F_OFD_GETLK, &fl) < 0 || fl.l_type == F_UNLCK)
			return false;
	}
	if (!(kinds & PIDLOCK_KIND_FLOCK))
		return true;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		(void)flock(fd, LOCK_UN);	/* the close drops it anyway */
		return false;
	}
	return errno == EWOULDBLOCK;
}

/*
 * After the flock probe of test_kinds(), which only a caller holding its
 * OFD lock of type `type` makes (a writer's F_WRLCK, a shared holder's
 * F_RDLCK).  Where flock and fcntl locks have one owner per open file
 * description (FUSE sends a flock as a whole-file POSIX lock, NFS maps
 * flock onto POSIX locks), the probe's LOCK_UN let go of that OFD lock
 * too.  Take it again: granted, we hold it as before (on a local file
 * system it was never lost, and this changes nothing); refused,
 * somebody took the file in that instant and holds it now.
 */
static int keep_own_ofd(int fd, unsigned int kinds, short type,
			unsigned int *held)
{
	struct flock fl;

	if (kinds & PIDLOCK_KIND_OFD)
		return 0;	/* the OFD lock is somebody else's to test */
	whole_file(&fl, type);
	if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
		return 0;
	if (errno != EAGAIN && errno != EACCES)
		return -errno;
	*held |= PIDLOCK_KIND_OFD;
	return 0;
}

/*
 * Which of `kinds` (ones we did not take) does somebody else hold in a
 * way that conflicts with a lock of type `type` (F_WRLCK: any lock;
 * F_RDLCK: a writer's only, as a shared holder asks)?  The OFD test is a
 * query.  flock has no query, so we take it without waiting and drop it
 * again: we hold the fd's other lock meanwhile, so nobody following our
 * protocol can be hurt by the moment we hold it.
 */
static int test_kinds(int fd, unsigned int kinds, short type,
		      unsigned int *held)
{
	struct flock fl;

	*held = 0;
	if (kinds & PIDLOCK_KIND_OFD) {
		whole_file(&fl, type);
		if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
			return -errno;
		if (fl.l_type != F_UNLCK)
			*held |= PIDLOCK_KIND_OFD;
	}
	if (!(kinds & PIDLOCK_KIND_FLOCK))
		return 0;
	if (flock(fd, (type == F_RDLCK ? LOCK_SH : LOCK_EX) | LOCK_NB) == 0)
		return flock(fd, LOCK_UN) < 0 ? -errno
					      : keep_own_ofd(fd, kinds, type, held);
	if (errno != EWOULDBLOCK)
		return -errno;
	*held |= PIDLOCK_KIND_FLOCK;
	return 0;
}

int klock_test(int fd, unsigned int kinds, unsigned int *held)
{
	return test_kinds(fd, kinds, F_WRLCK, held);
}

/* Readers share with a shared holder; only a writer keeps it out. */
int klock_test_exclusive(int fd, unsigned int kinds, unsigned int *held)
{
	return test_kinds(fd, kinds, F_RDLCK, held);
}

/*
 * Rule A's test: which kinds that a handle of `kinds` did not take are
 * held by somebody (another flag set, or the other peer family), into
 * *held.  A shared taker is kept out only by a writer.
 */
int klock_test_others(int fd, unsigned int kinds, bool shared,
		      unsigned int *held)
{
	unsigned int others = KINDS_ALL & ~kinds;

	*held = 0;
	if (!others)
		return 0;
	return shared ? klock_test_exclusive(fd, others, held)
		      : klock_test(fd, others, held);
}

/*
 * Let go of the locks while the descriptor stays open.  A process
 * forked during the hold shares the open file description, and with it
 * the locks: without this, a worker that merely inherited the
 * descriptor would keep every waiter out until it exits.
 */
int klock_drop(int fd, unsigned int kinds)
{
	struct flock fl;

	if ((kinds & PIDLOCK_KIND_FLOCK) && flock(fd, LOCK_UN) < 0)
		return -errno;
	if (!(kinds & PIDLOCK_KIND_OFD))
		return 0;
	whole_file(&fl, F_UNLCK);
	if (fcntl(fd, F_OFD_SETLK, &fl) < 0)
		return -errno;
	return 0;
}

/* Query the OFD/POSIX lock only; works on a read-only descriptor. */
int klock_query_ofd(int fd, pid_t *pid)
{
	struct flock fl;

	whole_file(&fl, F_WRLCK);
	if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
		return -errno;
	if (fl.l_type == F_UNLCK)
		return 0;
	if (fl.l_pid > 0 && pid && !*pid)
		*pid = fl.l_pid;
	return PIDLOCK_KIND_OFD;
}

/* One row of /proc/locks: "3: FLOCK  ADVISORY  WRITE 4359 00:1b:2 0 EOF".
 * Waiters carry "->" and are not rows.  Returns the PIDLOCK_KIND_* of
 * a lock on dev/ino (or on ino under any device), else 0. */
struct row {
	unsigned int kind;
	bool read;
	int pid;
	bool elsewhere;		/* the inode number on another device */
};

static unsigned int parse_row(const char *line, dev_t dev, ino_t ino,
			      bool any_dev, struct row *rw)
{
	char type[16], access[16];
	unsigned int maj, min;
	unsigned long long lino;

	memset(rw, 0, sizeof(*rw));
	if (sscanf(line, "%*d: %15s %*s %15s %d %x:%x:%llu", type, access,
		   &rw->pid, &maj, &min, &lino) != 6)
		return 0;
	if (lino != (unsigned long long)ino)
		return 0;
	if (!any_dev && (maj != major(dev) || min != minor(dev))) {
		rw->elsewhere = true;
		return 0;
	}
	if (strcmp(type, "FLOCK") == 0)
		rw->kind = PIDLOCK_KIND_FLOCK;
	else if (strcmp(type, "OFDLCK") == 0 || strcmp(type, "POSIX") == 0)
		rw->kind = PIDLOCK_KIND_OFD;
	rw->read = strcmp(access, "READ") == 0;
	return rw->kind;
}

/* What tells two holders' rows apart, short of the kernel's pointers. */
struct row_key {
	unsigned int kind;
	pid_t pid;
	bool read;
};

struct holders_query {
	dev_t dev;
	ino_t ino;
	bool any_dev;
	struct klock_holders *h;
	/* The rows of this reading, told apart by their row_key: a reading
	 * that took several read(2) calls while locks came and went may
	 * print a row twice (the rows before it moved on), and so count
	 * one holder twice. */
	struct row_key seen[KLOCK_PIDS_MAX];
	unsigned int nseen;
	unsigned int uniq_flock;
	unsigned int uniq_ofd;
};

static bool seen_before(struct holders_query *q, unsigned int kind,
			const struct row *rw)
{
	for (unsigned int i = 0; i < q->nseen; i++)
		if (q->seen[i].kind == kind && q->seen[i].pid == rw->pid &&
		    q->seen[i].read == rw->read)
			return true;
	if (q->nseen < KLOCK_PIDS_MAX)
		q->seen[q->nseen++] = (struct row_key){ kind, rw->pid, rw->read };
	return false;
}

static int holders_row(char *line, void *arg)
{
	struct holders_query *q = arg;
	struct klock_holders *h = q->h;
	struct row rw;
	unsigned int kind = parse_row(line, q->dev, q->ino, q->any_dev, &rw);

	h->elsewhere |= rw.elsewhere;
	if (!kind)
		return 0;
	h->kinds |= kind;
	h->shared |= rw.read;
	if (kind == PIDLOCK_KIND_FLOCK)
		h->flock_rows++;
	else
		h->ofd_rows++;
	if (!seen_before(q, kind, &rw)) {
		if (kind == PIDLOCK_KIND_FLOCK)
			q->uniq_flock++;
		else
			q->uniq_ofd++;
	}
	if (rw.pid > 0 && h->npids < KLOCK_PIDS_MAX)
		h->pids[h->npids++] = rw.pid;
	return 0;
}

static void add_pid(struct klock_holders *h, pid_t pid)
{
	for (unsigned int i = 0; i < h->npids; i++)
		if (h->pids[i] == pid)
			return;
	if (h->npids < KLOCK_PIDS_MAX)
		h->pids[h->npids++] = pid;
}

/* One reading of the list.  A torn one counts each holder's row once:
 * two holders whose rows look the same (one process, two descriptions)
 * are then one, which "at least" allows; a row printed twice is not. */
static int read_holders(dev_t dev, ino_t ino, bool any_dev,
			struct klock_holders *h, bool *torn)
{
	struct holders_query q = { .dev = dev, .ino = ino, .any_dev = any_dev,
				   .h = h };
	int r;

	memset(h, 0, sizeof(*h));
	r = proclocks_each(holders_row, &q, torn);
	if (r == 0 && *torn) {
		h->flock_rows = q.uniq_flock;
		h->ofd_rows = q.uniq_ofd;
	}
	return r;
}

/* What either of two readings of a torn list shows: a lock it lists
 * was held while it was read. */
static void merge_holders(struct klock_holders *h,
			  const struct klock_holders *more)
{
	h->kinds |= more->kinds;
	h->shared |= more->shared;
	h->elsewhere |= more->elsewhere;
	if (more->flock_rows > h->flock_rows)
		h->flock_rows = more->flock_rows;
	if (more->ofd_rows > h->ofd_rows)
		h->ofd_rows = more->ofd_rows;
	for (unsigned int i = 0; i < more->npids; i++)
		add_pid(h, more->pids[i]);
}

/*
 * Every lock the kernel lists on dev/ino: the kinds, whether any is a
 * read (shared) lock, the rows of each family, and the pids it names
 * (flock rows name the process that took the lock; OFD rows say -1).
 * A list too long for one read is read KLOCK_TORN_READS times, and what any
 * reading lists counts: a reading skipped a given row about one time in
 * five under heavy churn, and with several holders (shared ones) the
 * first rows found say nothing of the others.  h->torn says that a row
 * may still be missing.  Only inspect, pidlock_holder() and a shared
 * release ask, and only a long list (over a page) is read again.
 */
int klock_holders(dev_t dev, ino_t ino, bool any_dev, struct klock_holders *h)
{
	return klock_holders_n(dev, ino, any_dev, h, KLOCK_TORN_READS);
}

/* As klock_holders(), reading a torn list `readings` times at most: 1
 * for a caller that only asks whether the file is held, and probes
 * where the list is torn (slots' looks, in every round of a wait). */
int klock_holders_n(dev_t dev, ino_t ino, bool any_dev,
		    struct klock_holders *h, int readings)
{
	struct klock_holders more;
	bool torn;
	int r;

	r = read_holders(dev, ino, any_dev, h, &torn);
	for (int i = 1; r == 0 && torn && i < readings; i++) {
		r = read_holders(dev, ino, any_dev, &more, &torn);
		merge_holders(h, &more);
	}
	h->torn = torn;
	return r;
}

/* Field 3 of mount `id` in /proc/self/mountinfo: its super block's
 * device, which is what /proc/locks prints. */
static bool mount_dev(int id, dev_t *dev)
{
	char *line = mounts_line(id);
	unsigned int maj = 0, min = 0;
	bool found;

	if (!line)
		return false;
	found = sscanf(line, "%*d %*d %u:%u", &maj, &min) == 2;
	free(line);
	if (found)
		*dev = makedev(maj, min);
	return found;
}

/*
 * The device under which /proc/locks lists fd's file.  stat(2) may give
 * another one: each btrfs subvolume has its own anonymous device, while
 * the lock list names the file system's.  Without the right one, the
 * writer-first rule and the record hand-over find no rows there.  The
 * answer depends on st_dev only, so a handle keeps it.
 */
bool klock_fd_listed_dev(int fd, dev_t *dev)
{
	int id = mounts_fd_id(fd);

	return id >= 0 && mount_dev(id, dev);
}

dev_t klock_listed_dev(struct pidlock *lock, int fd, dev_t st_dev)
{
	dev_t dev;

	if (lock->cache.listed_known && lock->cache.listed_for == st_dev)
		return lock->cache.listed_dev;
	if (!klock_fd_listed_dev(fd, &dev))
		return st_dev;	/* not kept: a later call may learn it */
	lock->cache.listed_known = true;
	lock->cache.listed_for = st_dev;
	lock->cache.listed_dev = dev;
	return dev;
}

/*
 * Does anybody wait in the kernel for a lock on dev/ino?  /proc/locks
 * lists blocked requests as "3: -> FLOCK  ADVISORY  WRITE 4359 ...",
 * after the lock they wait for.
 */
struct waiter_query {
	dev_t dev;
	ino_t ino;
	bool any_dev;		/* the inode number on any device */
	bool writers_only;
	bool found;
};

static int waiter_row(char *line, void *arg)
{
	struct waiter_query *q = arg;
	char access[16];
	unsigned int maj, min;
	unsigned long long lino;

	if (sscanf(line, "%*d: -> %*s %*s %15s %*d %x:%x:%llu", access, &maj,
		   &min, &lino) != 4 || lino != (unsigned long long)q->ino)
		return 0;
	if (!q->any_dev && (maj != major(q->dev) || min != minor(q->dev)))
		return 0;
	q->found = !q->writers_only || strcmp(access, "WRITE") == 0;
	return q->found;
}

/* A shared acquirer that sees a writer wait backs off, so that a steady
 * stream of readers cannot keep it out for good.  A torn list may miss
 * the writer: the acquirer then goes ahead once, as it would have a
 * moment before the writer came. */
bool klock_writer_waits(dev_t dev, ino_t ino)
{
	struct waiter_query q = { .dev = dev, .ino = ino, .writers_only = true };
	bool torn;

	return proclocks_each(waiter_row, &q, &torn) == 0 && q.found;
}

/*
 * The release's question (release.c): is anybody, of any lock family,
 * blocked on the inode?  Matched on the inode number alone: the device
 * that /proc/locks prints is not always st_dev (a btrfs subvolume's),
 * and learning it costs a read of mountinfo; a waiter on another
 * file system's inode of that number makes us keep the file once,
 * which is safe.  Unreadable or torn, the list may miss a waiter: the
 * release then unlinks, as it did before it asked (doc/protocol.md,
 * "Kept files").
 */
bool klock_anyone_waits(ino_t ino)
{
	struct waiter_query q = { .ino = ino, .any_dev = true };
	bool torn;

	return proclocks_each(waiter_row, &q, &torn) == 0 && q.found;
}

/*
 * Can /proc/locks leave out a lock on a file we can open?  It lists a
 * flock(2) or POSIX lock only if the pid namespace of the /proc mount
 * can name its taker (an OFD lock names nobody and is always listed).
 * The initial namespace names every process, even one whose pid is
 * gone, so there the list is complete; in any other (a container, or
 * where we cannot tell) a host's holder, or one whose taker exited, is
 * missing from it, and only a probe finds it.
 */
#define INIT_PID_NS "pid:[4026531836]"	/* PROC_PID_INIT_INO, fixed */

bool klock_list_partial(void)
{
	char link[64];
	ssize_t n = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);

	if (n < 0)
		return true;
	link[n] = '\0';
	return strcmp(link, INIT_PID_NS) != 0;
}

/*
 * Is a flock held on fd's file, and how?  Asked by taking a shared one
 * without waiting: refused, somebody holds it exclusively.  Granted, an
 * exclusive one is tried too (a refused conversion drops our shared
 * one; a granted one is dropped at once): refused, somebody holds it
 * shared.  For that instant a try by somebody else may be refused, so
 * callers ask only where /proc/locks cannot answer.  Returns 1 (held;
 * *shared says how), 0, or -errno.
 */
int klock_probe_flock_mode(int fd, bool *shared)
{
	int r;

	*shared = false;
	if (flock(fd, LOCK_SH | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? 1 : -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return flock(fd, LOCK_UN) < 0 ? -errno : 0;
	r = errno == EWOULDBLOCK ? 1 : -errno;
	(void)flock(fd, LOCK_UN);	/* the caller's close drops it anyway */
	*shared = r == 1;
	return r;
}

/*
 * Is an exclusive flock held on fd's file?  Asked by taking a shared one
 * without waiting and dropping it: for that instant an exclusive try by
 * somebody else would fail, so callers ask only when /proc/locks cannot
 * answer.  Returns 1, 0, or -errno.
 */
int klock_probe_flock(int fd)
{
	if (flock(fd, LOCK_SH | LOCK_NB) == 0)
		return flock(fd, LOCK_UN) < 0 ? -errno : 0;
	return errno == EWOULDBLOCK ? 1 : -errno;
}
