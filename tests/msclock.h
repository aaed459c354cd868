/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Milliseconds for the test programs that run without testutil (no
 * Check): tests/test-lease and tests/distributed/dlock.
 */
#ifndef PIDLOCK_TESTS_MSCLOCK_H
#define PIDLOCK_TESTS_MSCLOCK_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in ms: durations that a change of the date cannot
 * bend. */
static inline int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A sleep of ms, resumed after a signal's handler (the SIGURG tests
 * count signals while they sleep). */
static inline void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

#endif
