/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who else opened the lock file?  A release must not unlink a file that
 * another process has open: an inode-blind locker (flock(1), an fcntl
 * locker, an old py-filelock) would get the unlinked inode after our
 * close while the next acquirer made a new file, two holders
 * (doc/protocol.md, 4, "Kept while used").  The kernel's answer (a read
 * of /proc/locks and a lease test in a helper clone, release.c) costs
 * more than the rest of a release; this file answers most releases for
 * one read(2).
 *
 * One inotify instance per process and one watch per lock directory,
 * on the opens in it (IN_OPEN) and the names made in it (IN_CREATE,
 * IN_MOVED_TO).  IN_EXCL_UNLINK: nothing of a name after its unlink,
 * so the opens of an unlinked inode are not counted against the file at
 * the name now.  Each name a handle uses has an entry that counts its
 * opens, in total and since the name was last made.  Closes are not
 * counted: inotify merges two like events in a row, so two closes one
 * after the other count as one, and "more opens than closes" was taken
 * for somebody still on the file when nobody was (release.c).  Whoever
 * asks next reads the queue, under a mutex.
 *
 * The answers (opens_answer()):
 *  - OPENS_NONE: this hold published the inode, the watch was there
 *    before, the name's last creation came after the acquire began, and
 *    no open of the name came after it, not even one of ours (inotify
 *    merges two like events in a row, so ours cannot be told from one
 *    just after it); the inode has one link.  Then no
 *    other description of the inode exists, so nobody can be blocked on
 *    it or about to lock it.  The only answer that lets a file go.
 *  - OPENS_BEFORE: the grant of a file that was there, and no open of
 *    its name since: whoever has it open opened it before the grant (a
 *    waiter queued behind the last holder), not a look made during this
 *    hold.  The release asks the kernel once, without the pauses that
 *    let a look end (release.c).  An open merged with one of ours
 *    counts as ours: then a look is kept for, never missed.
 *  - OPENS_UNKNOWN: anything else, and whenever events may be missing
 *    (the queue overflowed, the directory moved, no instance, a child
 *    of a fork that ran no handlers): ask the kernel.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "internal.h"

#define OPENS_MASK (IN_OPEN | IN_CREATE | IN_MOVED_TO | \
		    IN_DELETE_SELF | IN_MOVE_SELF | IN_EXCL_UNLINK | \
		    IN_ONLYDIR)
/* Whole events only: room for the longest name. */
#define EVENTS_BUF (4096 + sizeof(struct inotify_event) + NAME_MAX + 1)

struct entry {
	char *name;		/* NULL: a free slot */
	int wd;			/* -1: the watch is gone */
	unsigned int refs;
	uint64_t id;		/* this entry's, never reused in a process */
	uint64_t epoch;		/* counts up when events may be lost */
	uint64_t creations;
	uint64_t opens;		/* in total */
	uint64_t opens_made;	/* since the last creation */
};

static struct {
	pthread_mutex_t mu;
	pid_t pid;		/* whose instance fd is; 0: none yet */
	int fd;
	bool failed;		/* inotify_init1() refused: no answers */
	struct entry *v;
	size_t n;
	uint64_t ids;		/* entries made */
} st = { PTHREAD_MUTEX_INITIALIZER, 0, -1, false, NULL, 0, 0 };

static pthread_once_t once = PTHREAD_ONCE_INIT;

/*
 * Is st.fd still our instance?  A program may close every descriptor it
 * did not open (a daemon starting up does) and open another on the same
 * number: a read of a pipe or a socket there would block our release or
 * take its data, and a watch added to another inotify instance would
 * take its events.  Our instance carries a mark no program gives a
 * descriptor of its own: F_SETSIG's signal, which the kernel sends only
 * for O_ASYNC, never set on it, and SIGCONT, which nobody asks for that.
 */
#define INSTANCE_MARK SIGCONT

static int new_instance(void)
{
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

	if (fd >= 0 && fcntl(fd, F_SETSIG, INSTANCE_MARK) < 0) {
		io_close_keep_errno(fd);
		return -1;
	}
	return fd;
}

static bool marked(int fd)
{
	return fd >= 0 && fcntl(fd, F_GETSIG) == INSTANCE_MARK;
}

/*
 * A fork's child has the parent's instance, and a read of it would take
 * events the parent needs.  The child gets an instance of its own, on
 * the same descriptor number (a child's descriptors are as its
 * parent's); its entries lose their watch, and its handles count from
 * their next acquire.  The mutex, which another thread of the parent
 * may have held, is made anew.  A child made without the handlers
 * (clone(2), _Fork()) is told apart by its pid, and asks the kernel.
 */
static void after_fork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
	int saved = errno, fd = -1;

	st.mu = fresh;
	for (size_t i = 0; i < st.n; i++) {
		st.v[i].wd = -1;
		st.v[i].epoch++;
	}
	/* Not ours any more (see marked()): neither replaced nor closed. */
	if (!marked(st.fd)) {
		st.fd = -1;
		st.pid = 0;
		goto out;
	}
	fd = new_instance();
	if (fd >= 0 && dup3(fd, st.fd, O_CLOEXEC) == st.fd) {
		st.pid = self_pid();
	} else {
		(void)close(st.fd);
		st.fd = -1;
		st.pid = 0;
	}
	if (fd >= 0)
		(void)close(fd);
out:
	errno = saved;
}

static void register_handler(void)
{
	/* Without the handler a child could read the parent's queue: no
	 * instance at all, then, and every release asks the kernel. */
	if (pthread_atfork(NULL, NULL, after_fork_child) != 0)
		st.failed = true;
}

/* Under st.mu.  Ours: made by this process, usable. */
static bool instance(void)
{
	if (st.failed)
		return false;
	if (st.pid != 0)
		return st.pid == self_pid();
	st.fd = new_instance();
	if (st.fd < 0) {
		st.failed = true;
		return false;
	}
	st.pid = self_pid();
	return true;
}

static struct entry *find(int wd, const char *name)
{
	for (size_t i = 0; i < st.n; i++)
		if (st.v[i].name && st.v[i].wd == wd &&
		    strcmp(st.v[i].name, name) == 0)
			return &st.v[i];
	return NULL;
}

static void lost_all(int wd)
{
	for (size_t i = 0; i < st.n; i++) {
		if (!st.v[i].name || (wd >= 0 && st.v[i].wd != wd))
			continue;
		st.v[i].epoch++;
		/* The directory is gone or moved: the watch saw its last. */
		if (wd >= 0)
			st.v[i].wd = -1;
	}
}

/* Under st.mu: our instance, or it was lost (marked()): every count is
 * then unknown, and the next use makes a new one.  The descriptor is
 * the program's now, not ours to close. */
static bool still_ours(void)
{
	if (marked(st.fd))
		return true;
	lost_all(-1);
	for (size_t i = 0; i < st.n; i++)
		st.v[i].wd = -1;
	st.fd = -1;
	st.pid = 0;
	return false;
}

static void count(const struct inotify_event *ev)
{
	struct entry *e;

	if (ev->mask & IN_Q_OVERFLOW) {
		lost_all(-1);
		return;
	}
	if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF |
			IN_UNMOUNT)) {
		lost_all(ev->wd);
		return;
	}
	if (ev->len == 0 || !(e = find(ev->wd, ev->name)))
		return;
	if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
		e->creations++;
		e->opens_made = 0;
	}
	if (ev->mask & IN_OPEN) {
		e->opens++;
		e->opens_made++;
	}
}

/* Under st.mu: every event queued so far, counted.  A read error other
 * than an empty queue loses what it held. */
static void drain(void)
{
	char buf[EVENTS_BUF] __attribute__((aligned(8)));

	if (!still_ours())
		return;
	for (;;) {
		ssize_t n = read(st.fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0 && errno != EAGAIN)
				lost_all(-1);
			return;
		}
		for (ssize_t off = 0; off < n;) {
			const struct inotify_event *ev = (const void *)(buf +
									off);

			count(ev);
			off += (ssize_t)(sizeof(*ev) + ev->len);
		}
		/* Less than a full buffer: the queue was empty. */
		if ((size_t)n < sizeof(buf) - sizeof(struct inotify_event) -
				 NAME_MAX - 1)
			return;
	}
}

static struct entry *slot(void)
{
	struct entry *v;

	for (size_t i = 0; i < st.n; i++)
		if (!st.v[i].name)
			return &st.v[i];
	v = realloc(st.v, (st.n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	st.v = v;
	memset(&v[st.n], 0, sizeof(*v));
	return &v[st.n++];
}

/* Under st.mu: the handle's end, or its entry is stale (a fork's
 * child, a watch the kernel dropped).  The table is this process's own
 * copy, but the instance may be a parent's (a child made without the
 * handlers): only our own instance loses a watch. */
static void forget_locked(struct pidlock *lock)
{
	struct entry *e;
	int wd;
	bool used = false;

	if (lock->opens.entry < 0)
		return;
	e = &st.v[lock->opens.entry];
	lock->opens.entry = -1;
	if (--e->refs > 0)
		return;
	wd = e->wd;
	free(e->name);
	memset(e, 0, sizeof(*e));
	for (size_t i = 0; i < st.n; i++)
		used = used || (st.v[i].name && st.v[i].wd == wd);
	if (wd >= 0 && !used && st.pid != 0 && st.pid == self_pid())
		(void)inotify_rm_watch(st.fd, wd);
}

/* Under st.mu: the handle's entry, made (and its directory watched) on
 * its first use in this process; NULL if none can be had. */
static struct entry *entry_of(struct pidlock *lock)
{
	struct entry *e;
	int wd;

	if (!instance())
		return NULL;
	if (lock->opens.entry >= 0 && st.v[lock->opens.entry].wd >= 0)
		return &st.v[lock->opens.entry];
	forget_locked(lock);
	if (!still_ours())
		return NULL;
	wd = inotify_add_watch(st.fd, lock->set.dir, OPENS_MASK);
	if (wd < 0)
		return NULL;
	e = find(wd, lock->set.base);
	if (!e) {
		e = slot();
		if (!e)
			return NULL;
		e->name = strdup(lock->set.base);
		if (!e->name)
			return NULL;
		e->wd = wd;
		/* A handle's counts are of one entry's life. */
		e->id = ++st.ids;
	}
	e->refs++;
	lock->opens.entry = (int)(e - st.v);
	return e;
}

static bool lock_state(void)
{
	(void)pthread_once(&once, register_handler);
	return pthread_mutex_lock(&st.mu) == 0;
}

static void unlock_state(void)
{
	(void)pthread_mutex_unlock(&st.mu);
}

/* An acquire begins: the watch is there before anything we publish.
 * Only a release that may keep the file asks (release.c). */
void opens_begin(struct pidlock *lock)
{
	struct entry *e;

	lock->opens.made = false;
	lock->opens.took = false;
	lock->opens.ok = false;
	lock->opens.own = 0;
	if (!(lock->set.flags & PIDLOCK_KEEP_IF_USED) || !lock_state())
		return;
	e = entry_of(lock);
	if (e) {
		lock->opens.ok = true;
		lock->opens.id = e->id;
		lock->opens.epoch = e->epoch;
		lock->opens.creations = e->creations;
	}
	unlock_state();
}

/* The grant of a file that was there: count from here, with what came
 * before read and set aside (our own open among it). */
void opens_taken(struct pidlock *lock)
{
	struct entry *e;

	if (!lock->opens.ok || !lock_state())
		return;
	e = entry_of(lock);
	/* Read: what was lost before is behind us. */
	if (e) {
		drain();
		lock->opens.took = true;
		lock->opens.id = e->id;
		lock->opens.epoch = e->epoch;
		lock->opens.creations = e->creations;
		lock->opens.opens = e->opens;
	} else {
		lock->opens.ok = false;
	}
	unlock_state();
}

/* Our publish made the inode at the path; own: the opens of the name it
 * made itself (an O_EXCL create in place opens by the name). */
void opens_made(struct pidlock *lock, unsigned int own)
{
	lock->opens.made = true;
	lock->opens.own = own;
}

/* An open of the name of our own after the count began (the
 * file-system check of a handle's first acquire, acquire.c). */
void opens_own(struct pidlock *lock)
{
	lock->opens.own++;
}

static enum opens_answer answer(const struct pidlock *lock,
				const struct entry *e, nlink_t links)
{
	if (e->id != lock->opens.id || e->epoch != lock->opens.epoch)
		return OPENS_UNKNOWN;
	if (lock->opens.made && e->creations > lock->opens.creations) {
		/* More: somebody's; fewer: ours merged, maybe with his. */
		if (e->opens_made != lock->opens.own)
			return OPENS_UNKNOWN;
		/* A second link: opens through it are another directory's.
		 * An open of ours since (a create in place, the first
		 * acquire's check) may have been merged by inotify with
		 * another's like event just after it: "nobody" only with
		 * none of ours to take away. */
		return links == 1 && lock->opens.own == 0 ? OPENS_NONE
							  : OPENS_UNKNOWN;
	}
	if (lock->opens.took &&
	    e->opens - lock->opens.opens == lock->opens.own)
		return OPENS_BEFORE;
	return OPENS_UNKNOWN;
}

/* At release, the path checked to be ours with links links. */
enum opens_answer opens_answer(struct pidlock *lock, nlink_t links)
{
	enum opens_answer a = OPENS_UNKNOWN;
	struct entry *e;

	if (!lock->opens.ok || !lock_state())
		return a;
	e = entry_of(lock);
	if (e) {
		drain();
		a = answer(lock, e, links);
	}
	unlock_state();
	return a;
}

void opens_free(struct pidlock *lock)
{
	if (lock->opens.entry < 0 || !lock_state())
		return;
	forget_locked(lock);
	unlock_state();
}
