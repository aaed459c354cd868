/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The library's side of make check-partition (partition.sh): a holder
 * on the client that the network cuts off, and a waiter on the client
 * that stays.  Both work only while pidlock_check() says the lock is
 * theirs, and every piece of work goes to a resource that refuses a
 * stale fencing token (the logic of doc/examples/fenced_store.py): a
 * local file both can reach, as a database server reachable from both
 * hosts would be.
 *
 *   partition holder PATH RESOURCE LEASE_MS SECONDS [late]
 *   partition verifier PATH RESOURCE LEASE_MS SECONDS [late]
 *   partition waiter PATH RESOURCE SECONDS [WAIT_MS]
 *
 * The holder takes PATH with PIDLOCK_TOKEN (and a lease, unless
 * LEASE_MS is 0), then for SECONDS: every 200 ms, a pidlock_check()
 * bounded at 500 ms, and a write when it says 0.  The waiter takes the
 * lock (waiting without a limit), then works as the holder does for
 * SECONDS and releases.  The verifier is a holder that asks
 * pidlock_verify() instead, as a holder could before pidlock_check():
 * the "before" of the partition's timeline.
 *
 * make check-restart (restart.sh) adds two things.  A waiter given
 * WAIT_MS waits in a timed pidlock_acquire(WAIT_MS), the kind that must
 * ride out a file server's outage (a brick killed and restarted), and
 * logs its failure as an event (an unbounded wait says -EIO at once
 * while the brick is down, by design).  A holder given "late" writes
 * once more at its end, with its token, if its last check did not say
 * 0: the write of a holder that was already on its way when the lock
 * was lost, which no check can stop and the resource must refuse once
 * the next holder has written.
 *
 * Each prints one line per event on stdout:
 *
 *   T_MS WHO EVENT [VALUE [MS]]
 *
 * T_MS is CLOCK_REALTIME in ms (both run on this host), EVENT one of
 * wait (VALUE: the acquire's timeout), held (VALUE: the token, MS: how
 * long the acquire took), acquire (VALUE: the acquire's error, MS: how
 * long it took), check (VALUE: its result, MS: how long it took),
 * wrote, refused (the resource's verdict on a write), late (VALUE: 1
 * the resource took the late write, 0 it refused it), release (VALUE:
 * its result).  partition.sh and restart.sh read them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "pidlock.h"

#define ROUND_MS 200
#define CHECK_MS 500

static const char *who;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void say(const char *event, long long value, long long ms)
{
	printf("%lld %s %s %lld %lld\n", now_ms(), who, event, value, ms);
	fflush(stdout);
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * The fenced resource: RESOURCE.token holds the greatest token taken,
 * and a write with a smaller one is refused.  1 taken, 0 refused.
 */
static int fenced_write(const char *resource, uint64_t token)
{
	char path[4096], seen[32] = "";
	unsigned long long last = 0;
	int fd, taken = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "%s.token", resource);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || flock(fd, LOCK_EX) < 0) {
		perror(path);
		exit(2);
	}
	n = pread(fd, seen, sizeof(seen) - 1, 0);
	if (n > 0)
		last = strtoull(seen, NULL, 10);
	if (token >= last) {
		int data = open(resource, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
			    0644);
		if (data < 0 || dprintf(data, "%lld %s %" PRIu64 "\n",
					now_ms(), who, token) < 0) {
			perror(resource);
			exit(2);
		}
		close(data);
		n = snprintf(seen, sizeof(seen), "%-20" PRIu64 "\n", token);
		if (pwrite(fd, seen, (size_t)n, 0) != n) {
			perror(path);
			exit(2);
		}
		taken = 1;
	}
	close(fd);
	return taken;
}

/* The question a round asks: pidlock_check(), or, for the "verifier"
 * (what a holder could ask before pidlock_check() existed),
 * pidlock_verify(), which asks the path only and has no bound. */
static bool by_verify;

static int ask(struct pidlock *l)
{
	return by_verify ? pidlock_verify(l) : pidlock_check(l, CHECK_MS);
}

/* SECONDS of work, each round only if the check says the lock is ours.
 * The last check's result. */
static int work(struct pidlock *l, const char *resource, uint64_t token,
		long long seconds)
{
	long long end = now_ms() + seconds * 1000;
	int r = 0;

	while (now_ms() < end) {
		long long t0 = now_ms();

		r = ask(l);

		say("check", r, now_ms() - t0);
		if (r == 0)
			say(fenced_write(resource, token) ? "wrote" : "refused",
			    (long long)token, 0);
		pause_ms(ROUND_MS);
	}
	return r;
}

int main(int argc, char **argv)
{
	struct pidlock *l;
	uint64_t token = 0;
	long long t0, wait_ms;
	bool holder, late;
	int r;

	if (argc < 5 || (strcmp(argv[1], "holder") != 0 &&
			 strcmp(argv[1], "verifier") != 0 &&
			 strcmp(argv[1], "waiter") != 0)) {
		fprintf(stderr, "usage: partition holder|verifier PATH RESOURCE "
			"LEASE_MS SECONDS [late] | waiter PATH RESOURCE SECONDS "
			"[WAIT_MS]\n");
		return 64;
	}
	by_verify = strcmp(argv[1], "verifier") == 0;
	holder = strcmp(argv[1], "waiter") != 0;
	who = holder ? "A" : "B";
	late = holder && argc > 6 && strcmp(argv[6], "late") == 0;
	/* The holder's acquire is bounded (the lock is free); the waiter
	 * waits without a limit unless it is given one. */
	wait_ms = holder ? 10000 : argc > 5 ? atoll(argv[5]) : -1;
	if (pidlock_new(&l, argv[2], PIDLOCK_TOKEN) < 0)
		return 2;
	if (holder && argc > 5 && atoi(argv[4]) > 0 &&
	    pidlock_set_lease(l, (unsigned int)atoi(argv[4])) < 0)
		return 2;
	if (!holder)
		say("wait", wait_ms, 0);
	t0 = now_ms();
	r = pidlock_acquire(l, (int)wait_ms);
	if (r < 0) {
		say("acquire", r, now_ms() - t0);
		fprintf(stderr, "%s: acquire: %s\n", who, strerror(-r));
		return 2;
	}
	if (pidlock_token(l, &token) < 0)
		return 2;
	say("held", (long long)token, now_ms() - t0);
	r = work(l, argv[3], token, atoll(holder ? argv[5] : argv[4]));
	if (late && r != 0)
		say("late", fenced_write(argv[3], token), 0);
	r = pidlock_release(l);
	say("release", r, 0);
	pidlock_free(l);
	return 0;
}
