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
 * One inotify instance per process, and a watch on the held inode only
 * while it is held, on its opens and closes (IN_OPEN, IN_CLOSE): set
 * through /proc/self/fd on our own descriptor, so it is on the inode we
 * lock and no other, before our publish gives the inode its name (or at
 * the grant of a file that was there), and removed at the release.  A
 * watch of the lock's directory instead, kept for a handle's life, had
 * every open and close that any process made in the directory queued to
 * every process's instance: under contention of 64 processes, 64 times
 * the events, read at each release.  Handles of one process that hold
 * one inode (shared holders) share its watch.
 *
 * The answers (opens_answer()):
 *  - OPENS_NONE: the watch was set before our publish gave the inode a
 *    name, and no open of it came since, not even one of ours (inotify
 *    merges two like events in a row, so ours cannot be told from one
 *    just after it).  Then no other description of the inode exists,
 *    through any of its names, so nobody can be blocked on it or about
 *    to lock it.  The only answer that lets a file go.
 *  - OPENS_SOME: the last event on the inode was an open (its close
 *    would have come after it), or more opens than closes since this
 *    hold began.  Keeping the file is always safe; this spares the
 *    kernel's question to a release under contention.
 *  - OPENS_UNKNOWN: anything else, and whenever events may be missing
 *    (the queue overflowed, no instance, no /proc, a child of a fork
 *    that ran no handlers): ask the kernel.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "internal.h"

#define OPENS_MASK (IN_OPEN | IN_CLOSE)
/* Whole events only; an inode watch's events carry no name. */
#define EVENTS_BUF (4096 + sizeof(struct inotify_event) + NAME_MAX + 1)

struct entry {
	int wd;			/* -1: the watch is gone (or a free slot) */
	unsigned int refs;	/* 0: a free slot */
	uint64_t id;		/* this entry's, never reused in a process */
	uint64_t epoch;		/* counts up when events may be lost */
	uint64_t events, opens, closes;
	bool last_open;		/* the last event was an open */
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
	if (st.fd < 0) {
		st.pid = 0;
		goto out;
	}
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
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
	st.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (st.fd < 0) {
		st.failed = true;
		return false;
	}
	st.pid = self_pid();
	return true;
}

static struct entry *find(int wd)
{
	for (size_t i = 0; i < st.n; i++)
		if (st.v[i].refs > 0 && st.v[i].wd == wd)
			return &st.v[i];
	return NULL;
}

static void lost_all(void)
{
	for (size_t i = 0; i < st.n; i++)
		st.v[i].epoch++;
}

static void count(const struct inotify_event *ev)
{
	struct entry *e;

	if (ev->mask & IN_Q_OVERFLOW) {
		lost_all();
		return;
	}
	e = find(ev->wd);
	if (!e)
		return;	/* a watch removed, its IN_IGNORED */
	if (ev->mask & (IN_IGNORED | IN_UNMOUNT)) {
		e->epoch++;
		e->wd = -1;
		return;
	}
	e->events++;
	e->last_open = (ev->mask & IN_OPEN) != 0;
	if (ev->mask & IN_OPEN)
		e->opens++;
	if (ev->mask & IN_CLOSE)
		e->closes++;
}

/* Under st.mu: every event queued so far, counted.  A read error other
 * than an empty queue loses what it held. */
static void drain(void)
{
	char buf[EVENTS_BUF] __attribute__((aligned(8)));

	for (;;) {
		ssize_t n = read(st.fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0 && errno != EAGAIN)
				lost_all();
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
		if (st.v[i].refs == 0)
			return &st.v[i];
	v = realloc(st.v, (st.n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	st.v = v;
	memset(&v[st.n], 0, sizeof(*v));
	return &v[st.n++];
}

/* Under st.mu: the hold's end.  The table is this process's own copy,
 * but the instance may be a parent's (a child made without the
 * handlers): only our own instance loses a watch. */
static void end_locked(struct pidlock *lock)
{
	struct entry *e;

	lock->opens.ok = false;
	if (lock->opens.entry < 0)
		return;
	e = &st.v[lock->opens.entry];
	lock->opens.entry = -1;
	if (--e->refs > 0)
		return;
	if (e->wd >= 0 && st.pid != 0 && st.pid == self_pid())
		(void)inotify_rm_watch(st.fd, e->wd);
	memset(e, 0, sizeof(*e));
}

/* Under st.mu: a watch on fd's inode, and the handle's counts from
 * here.  Another handle of ours on the same inode has the watch (the
 * kernel gives one per inode and instance): its counts go on, read up
 * to now. */
static bool watch_locked(struct pidlock *lock, int fd)
{
	char proc[40];
	struct entry *e;
	int wd;

	if (!instance())
		return false;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	wd = inotify_add_watch(st.fd, proc, OPENS_MASK);
	if (wd < 0)
		return false;
	e = find(wd);
	if (e) {
		drain();
		e = find(wd);	/* its IN_IGNORED may have come meanwhile */
	}
	if (!e) {
		e = slot();
		if (!e) {
			(void)inotify_rm_watch(st.fd, wd);
			return false;
		}
		e->wd = wd;
		e->id = ++st.ids;
	}
	e->refs++;
	lock->opens.entry = (int)(e - st.v);
	lock->opens.id = e->id;
	lock->opens.epoch = e->epoch;
	lock->opens.events = e->events;
	lock->opens.opens = e->opens;
	lock->opens.closes = e->closes;
	return true;
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

/* The count starts on fd's inode; made: before our publish names it. */
static void watch(struct pidlock *lock, int fd, bool made)
{
	if (!(lock->set.flags & PIDLOCK_KEEP_IF_USED) || !lock_state())
		return;
	end_locked(lock);
	lock->opens.ok = watch_locked(lock, fd);
	lock->opens.made = made && lock->opens.ok;
	unlock_state();
}

/* An acquire begins: nothing counted yet. */
void opens_begin(struct pidlock *lock)
{
	lock->opens.made = false;
	lock->opens.own = 0;
	lock->opens.own_closes = 0;
	opens_end(lock);
}

/* Our new inode, locked and not yet at the path (create.c). */
void opens_unpublished(struct pidlock *lock, int fd)
{
	watch(lock, fd, true);
}

/* The grant of a file that was there, or one made by its own open at
 * the path: others' opens count from here, those before unknown. */
void opens_taken(struct pidlock *lock, int fd)
{
	watch(lock, fd, false);
}

/* An open and close of the file of our own after the count began (the
 * file-system check of a handle's first acquire, acquire.c). */
void opens_own(struct pidlock *lock)
{
	lock->opens.own++;
	lock->opens.own_closes++;
}

static enum opens_answer answer(const struct pidlock *lock,
				const struct entry *e)
{
	uint64_t opens = e->opens - lock->opens.opens;
	uint64_t closes = e->closes - lock->opens.closes;

	if (e->id != lock->opens.id || e->epoch != lock->opens.epoch)
		return OPENS_UNKNOWN;
	if (opens == 0)
		return lock->opens.made && lock->opens.own == 0 ?
			       OPENS_NONE : OPENS_UNKNOWN;
	/* An open with no close after it: ours are closed by now. */
	if (e->last_open && e->events > lock->opens.events)
		return OPENS_SOME;
	/* Those open at the grant are unknown: at least this many. */
	if (opens < lock->opens.own || closes < lock->opens.own_closes)
		return OPENS_UNKNOWN;
	opens -= lock->opens.own;
	closes -= lock->opens.own_closes;
	return opens > closes ? OPENS_SOME : OPENS_UNKNOWN;
}

/* At release, the path checked to be ours. */
enum opens_answer opens_answer(struct pidlock *lock)
{
	enum opens_answer a = OPENS_UNKNOWN;

	if (!lock->opens.ok || lock->opens.entry < 0 || !lock_state())
		return a;
	if (instance()) {
		drain();
		a = answer(lock, &st.v[lock->opens.entry]);
	}
	unlock_state();
	return a;
}

/* The hold is over (or its publish failed): the watch goes. */
void opens_end(struct pidlock *lock)
{
	if (lock->opens.entry < 0 || !lock_state()) {
		lock->opens.ok = false;
		return;
	}
	end_locked(lock);
	unlock_state();
}

void opens_free(struct pidlock *lock)
{
	opens_end(lock);
}
