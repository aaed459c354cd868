/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Taking the lock: try once, then wait as the options say, and tell. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "cli.h"

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void say_holder(struct pidlock *lock, const char *what)
{
	struct pidlock_info info;
	char who[PIDLOCK_TAG_MAX + 160];

	if (pidlock_holder(lock, &info) < 0)
		snprintf(who, sizeof(who), "another process");
	else
		describe_holder(pidlock_path(lock), &info, who, sizeof(who));
	warn_file(pidlock_path(lock), "%s %s", what, who);
}

static void say_done(const struct opts *o, struct pidlock *lock,
		     int64_t start)
{
	int64_t ms = mono_ms() - start;

	if (!o->verbose)
		return;
	warn_file(pidlock_path(lock), "locked after %lld.%03lld s",
		  (long long)(ms / 1000), (long long)(ms % 1000));
}

/*
 * 0: we hold the lock.  1: it is busy (and said so, with `refused`, unless
 * -q).  -errno.
 * The first try never waits, so -v can name the holder before waiting.
 */
int acquire_lock(const struct opts *o, struct pidlock *lock, int timeout_ms,
		 const char *refused)
{
	int64_t start = mono_ms();
	int r = pidlock_acquire(lock, 0);

	if (r == 0) {
		say_done(o, lock, start);
		return 0;
	}
	if (r != -EWOULDBLOCK)
		return r;
	if (timeout_ms != 0) {
		int left = timeout_ms;

		if (timeout_ms > 0) {
			int64_t spent = mono_ms() - start;

			left = spent >= timeout_ms ? 1 : timeout_ms - (int)spent;
		}
		if (o->verbose)
			say_holder(lock, "waiting for");
		r = pidlock_acquire(lock, left);
		if (r == 0) {
			say_done(o, lock, start);
			return 0;
		}
		if (r != -ETIMEDOUT && r != -EWOULDBLOCK)
			return r;
	}
	if (!o->quiet) {
		char what[96];

		snprintf(what, sizeof(what), "%s%s, held by", refused,
			 timeout_ms ? " (timed out)" : "");
		say_holder(lock, what);
	}
	return 1;
}
