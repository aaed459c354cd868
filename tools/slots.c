/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * --slots N in the run mode: hold one of the N slots of LOCKFILE (the
 * lock files LOCKFILE.0 to LOCKFILE.N-1) and tell the command which one
 * in PIDLOCK_SLOT.  The options that set up a lock set up every slot.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int make_set(const struct opts *o, struct pidlock_slots **setp)
{
	struct pidlock_slots *set;
	int r = pidlock_slots_new(&set, o->lockfile, o->slots, lock_flags(o));

	if (r < 0)
		return r;
	for (unsigned int k = 0; r == 0 && k < o->slots; k++)
		r = configure_lock(o, pidlock_slots_lock(set, k));
	if (r < 0) {
		pidlock_slots_free(set);
		return r;
	}
	*setp = set;
	return 0;
}

/* A first try that never waits, so -v can say it waits; then what is
 * left of the timeout (at least 1 ms), or forever. */
static int take(const struct opts *o, struct pidlock_slots *set,
		int64_t start)
{
	int r = pidlock_slots_acquire(set, 0);
	int left = o->timeout_ms;

	if (r != -EWOULDBLOCK || o->timeout_ms == 0)
		return r;
	if (o->verbose)
		warn_file(o->lockfile, "waiting for one of %u slots", o->slots);
	if (left > 0) {
		int64_t spent = now_ms() - start;

		left = spent >= left ? 1 : left - (int)spent;
	}
	r = pidlock_slots_acquire(set, left);
	return r == -ETIMEDOUT ? -EWOULDBLOCK : r;
}

static int tell_command(int slot)
{
	char text[16];

	(void)snprintf(text, sizeof(text), "%d", slot);
	return setenv(PIDLOCK_SLOT_ENV, text, 1) < 0 ? -errno : 0;
}

/*
 * 0: a slot is held, *lockp is its lock and PIDLOCK_SLOT says which;
 * 1: every slot is busy (and said so, unless -q); -errno.  The caller
 * frees *setp, which releases the slot.
 */
int slots_acquire(const struct opts *o, struct pidlock_slots **setp,
		  struct pidlock **lockp)
{
	int64_t start = now_ms();
	int r = make_set(o, setp);

	if (r < 0)
		return r;
	r = take(o, *setp, start);
	if (r >= 0) {
		int64_t ms = now_ms() - start;

		*lockp = pidlock_slots_lock(*setp, (unsigned int)r);
		if (o->verbose)
			warn_file(pidlock_path(*lockp), "slot %d locked after "
				  "%lld.%03lld s", r, (long long)(ms / 1000),
				  (long long)(ms % 1000));
		return tell_command(r);
	}
	pidlock_slots_free(*setp);
	*setp = NULL;
	if (r != -EWOULDBLOCK)
		return r;
	if (!o->quiet)
		warn_file(o->lockfile, "all %u slots are busy%s", o->slots,
			  o->timeout_ms ? " (timed out)" : "");
	return 1;
}
