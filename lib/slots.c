/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Semaphores: at most n holders at once.  Slot k is the lock file
 * "PATH.k", a full lock of this library (its own struct pidlock), so
 * everything the protocol promises of one lock holds for each slot: a
 * holder that dies frees its slot at once, spec-only peers and
 * flock(1) see each slot file as they see any lock file, and
 * pidlock_inspect() or pidlock --status reads each one.
 *
 * A try looks at every slot first (slots-look.c) and refuses the whole
 * set if one slot's path is unusable, before taking anything.  Then it
 * tries the slots from a start that depends on the caller's pid, so
 * that holders started together spread over the slots instead of all
 * contending for slot 0, and it tries only a slot that looks free: its
 * file absent, or held by nobody (pidlock_inspect()).  A busy slot is
 * never opened for writing, and nothing is made for it; a free one is
 * taken as any lock (the temp file of doc/protocol.md step 1 exists for
 * the instant of the publish).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slots.h"

/* Room for "." and the largest slot number after the path. */
#define SLOT_SUFFIX_MAX 16

static int slot_path(const char *path, unsigned int k, char **out)
{
	size_t len = strlen(path) + SLOT_SUFFIX_MAX;
	char *p = malloc(len);

	if (!p)
		return -ENOMEM;
	(void)snprintf(p, len, "%s.%u", path, k);
	*out = p;
	return 0;
}

/* The settings every slot gets; a handle refused them frees itself. */
static int new_slot(struct pidlock_slots *s, const char *path,
		    unsigned int k, unsigned int flags)
{
	char *p;
	int r = slot_path(path, k, &p);

	if (r < 0)
		return r;
	r = pidlock_new(&s->locks[k], p, flags);
	free(p);
	return r;
}

static int set_names(struct pidlock_slots *s, const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t len = strlen(base) + 2;

	s->dir = handle_dir_of(path);
	s->prefix = malloc(len);
	if (!s->dir || !s->prefix)
		return -ENOMEM;
	(void)snprintf(s->prefix, len, "%s.", base);
	s->prefix_len = len - 1;
	return 0;
}

static int make(struct pidlock_slots *s, const char *path, unsigned int flags)
{
	int r = set_names(s, path);

	s->locks = calloc(s->n, sizeof(struct pidlock *));
	s->looks = calloc(s->n, sizeof(*s->looks));
	s->busy = calloc(s->n, sizeof(*s->busy));
	if (r < 0 || !s->locks || !s->looks || !s->busy)
		return -ENOMEM;
	for (unsigned int k = 0; k < s->n; k++) {
		r = new_slot(s, path, k, flags);
		if (r < 0)
			return r;
	}
	return 0;
}

PIDLOCK_EXPORT int pidlock_slots_new(struct pidlock_slots **slotsp,
				     const char *path, unsigned int n,
				     unsigned int flags)
{
	struct pidlock_slots *s;
	char *last;
	int r;

	if (!slotsp)
		return -EINVAL;
	*slotsp = NULL;
	/* A slot has one holder: that is what the count counts. */
	if (n == 0 || (flags & PIDLOCK_SHARED))
		return -EINVAL;
	if (n > PIDLOCK_SLOTS_MAX)
		return -ERANGE;
	r = handle_check_path(path);
	if (r < 0)
		return r;
	/* The longest slot name must fit as well as the path does. */
	r = slot_path(path, n - 1, &last);
	if (r < 0)
		return r;
	r = handle_check_path(last);
	free(last);
	if (r < 0)
		return io_rc_filter(r);
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->n = n;
	r = make(s, path, flags);
	if (r < 0) {
		pidlock_slots_free(s);
		return io_rc_filter(r);
	}
	*slotsp = s;
	return 0;
}

/* Which slot a handle of the set holds: its descriptor is open. */
static int held(const struct pidlock_slots *s)
{
	for (unsigned int k = 0; k < s->n; k++)
		if (s->locks[k] && s->locks[k]->hold.fd >= 0)
			return (int)k;
	return -ENOLCK;
}

PIDLOCK_EXPORT void pidlock_slots_free(struct pidlock_slots *s)
{
	if (!s)
		return;
	for (unsigned int k = 0; s->locks && k < s->n; k++)
		pidlock_free(s->locks[k]);	/* releases a held one */
	free(s->locks);
	free(s->looks);
	free(s->busy);
	free(s->dir);
	free(s->prefix);
	free(s);
}

/* The shortest retry interval of the slots bounds every wait. */
static unsigned int retry_ms(const struct pidlock_slots *s)
{
	unsigned int ms = UINT_MAX;

	for (unsigned int k = 0; k < s->n; k++)
		if (s->locks[k]->set.retry_ms < ms)
			ms = s->locks[k]->set.retry_ms;
	return ms;
}

/* A slot found busy without an fcntl lock, not to be tried again
 * before its file changes or the retry interval is over. */
static bool recently_busy(const struct pidlock_slots *s, unsigned int k,
			  int64_t now)
{
	const struct slot_look *l = &s->looks[k];
	const struct slot_busy *b = &s->busy[k];

	return l->state == SLOT_UNLOCKED && b->until_ms > now &&
	       b->dev == l->dev && b->ino == l->ino &&
	       b->mtime_ns == l->mtime_ns;
}

static void note_busy(struct pidlock_slots *s, unsigned int k, int64_t now)
{
	const struct slot_look *l = &s->looks[k];

	s->busy[k] = (struct slot_busy){ .dev = l->dev, .ino = l->ino,
					 .mtime_ns = l->mtime_ns,
					 .until_ms = now + retry_ms(s) };
}

/*
 * A slot file without an fcntl lock may still be held: by flock(2)
 * alone (flock(1), PIDLOCK_FLOCK_ONLY) or by a spec-only peer.  Asked
 * without opening it for writing: an acquire would first make, sync
 * and try to publish a temp file, for nothing.
 */
static bool held_otherwise(const struct pidlock_slots *s, unsigned int k)
{
	const struct pidlock *l = s->locks[k];
	struct pidlock_info info;

	if (inspect_state(l->set.path, &info, l->set.stale_sec) < 0)
		return false;	/* the acquire says why */
	return info.state == PIDLOCK_STATE_HELD ||
	       info.state == PIDLOCK_STATE_HELD_SPEC ||
	       info.state == PIDLOCK_STATE_HELD_PIDFILE;
}

/* Where this process starts: its pid modulo n, so that workers forked
 * one after another (pids in a row) each start at a slot of their own. */
static unsigned int first_slot(const struct pidlock_slots *s)
{
	return (unsigned int)self_pid() % s->n;
}

/* One try of each slot: the slot taken, -EWOULDBLOCK, or an error. */
static int try_all(struct pidlock_slots *s)
{
	int64_t now = io_now_ms();
	unsigned int start = first_slot(s);

	for (unsigned int k = 0; k < s->n; k++) {
		int r = slots_look(pidlock_path(s->locks[k]), &s->looks[k]);

		if (r < 0)
			return r;
	}
	for (unsigned int i = 0; i < s->n; i++) {
		unsigned int k = (start + i) % s->n;
		int r;

		if (s->looks[k].state == SLOT_LOCKED || recently_busy(s, k, now))
			continue;
		if (s->looks[k].state == SLOT_UNLOCKED && held_otherwise(s, k)) {
			note_busy(s, k, now);
			continue;
		}
		r = pidlock_acquire(s->locks[k], 0);
		if (r == 0)
			return (int)k;
		if (r != -EWOULDBLOCK)
			return r;
		note_busy(s, k, now);
	}
	return -EWOULDBLOCK;
}

/*
 * A holder's close is announced (IN_CLOSE_WRITE) before the kernel drops
 * the locks of the description it closes, OFD first, then flock: a try
 * woken by it may still find the slot locked, or locked by flock only
 * (and note it busy).  After an event, the busy notes are dropped and the
 * next sleeps are short, SETTLE_FIRST_MS doubling to SETTLE_MAX_MS, so
 * that the release is seen once it is complete, not a retry interval
 * later (or never, with no interval).
 */
#define SETTLE_FIRST_MS 1
#define SETTLE_MAX_MS 16

static int64_t settle_next(struct pidlock_slots *s, int woke, int64_t settle)
{
	if (woke == 1) {
		for (unsigned int k = 0; k < s->n; k++)
			s->busy[k].until_ms = 0;
		return SETTLE_FIRST_MS;
	}
	return settle && settle < SETTLE_MAX_MS ? settle * 2 : 0;
}

/*
 * All slots busy: watch them, try again, sleep until an event or the
 * retry interval, and so on until the deadline (-1: none).  The watches
 * are placed before each try, so a slot freed during the try wakes the
 * next sleep at once.
 */
static int wait_any(struct pidlock_slots *s, int64_t deadline)
{
	struct slots_watch w;
	int64_t settle = 0;
	int r;

	slots_watch_init(&w, s->dir);
	for (;;) {
		int64_t left = deadline < 0 ? (int64_t)retry_ms(s)
				: deadline - io_now_ms();

		if (left <= 0) {
			r = -ETIMEDOUT;
			break;
		}
		if (left > (int64_t)retry_ms(s))
			left = retry_ms(s);
		if (settle && left > settle)
			left = settle;
		slots_watch_files(&w, s);
		r = try_all(s);
		if (r != -EWOULDBLOCK)
			break;
		r = slots_watch_wait(&w, s, left);
		if (r < 0)
			break;
		settle = settle_next(s, r, settle);
	}
	slots_watch_close(&w);
	return r;
}

static int acquire(struct pidlock_slots *s, int timeout_ms)
{
	int64_t deadline;
	int r;

	if (!s)
		return -EINVAL;
	if (held(s) >= 0)
		return -EALREADY;
	deadline = timeout_ms < 0 ? -1 : io_now_ms() + timeout_ms;
	/* What an earlier call found busy is tried again: the memo only
	 * keeps one wait's rounds from trying it over and over. */
	memset(s->busy, 0, s->n * sizeof(*s->busy));
	r = try_all(s);
	if (r != -EWOULDBLOCK || timeout_ms == 0)
		return r;
	return wait_any(s, deadline);
}

/* Not cancellable, as pidlock_acquire() (cancel.c): the wait's inotify
 * instance and the slot handles' tries hold what a cancellation would
 * leave behind. */
PIDLOCK_EXPORT int pidlock_slots_acquire(struct pidlock_slots *s,
					 int timeout_ms)
{
	int old = cancel_off();
	int r = acquire(s, timeout_ms);

	cancel_restore(old);
	return io_rc_filter(r);
}

PIDLOCK_EXPORT int pidlock_slots_release(struct pidlock_slots *s)
{
	int k;

	if (!s)
		return -EINVAL;
	k = held(s);
	if (k < 0)
		return k;
	return pidlock_release(s->locks[k]);
}

PIDLOCK_EXPORT int pidlock_slots_slot(const struct pidlock_slots *s)
{
	if (!s)
		return -EINVAL;
	return held(s);
}

PIDLOCK_EXPORT struct pidlock *pidlock_slots_lock(struct pidlock_slots *s,
						  unsigned int slot)
{
	if (!s || slot >= s->n)
		return NULL;
	return s->locks[slot];
}
