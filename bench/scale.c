/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Scale: contended throughput (a shared counter incremented under the
 * lock by 1..64 processes) and herds (1, 8, 64 waiters queued on every
 * release: how long the next holder takes, and how much CPU all the
 * processes together spend per hand-off).
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_LIBLOCKFILE
#include <lockfile.h>
#endif
/* musl's toolchain has no kernel headers; the two operations' numbers
 * are the kernel's ABI. */
#if __has_include(<linux/futex.h>)
#include <linux/futex.h>
#else
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#endif

#include <pidlock.h>

#include "bench.h"

#define MAX_PROCS 65

/* ---- one participant's take and give ---------------------------------- */

/*
 * NO_LOCK takes no lock at all.  It exists only for the test of the
 * loss accounting (bench/test-loss.sh, --no-lock): a locker that is
 * sure to lose increments, so that the test sees a real loss reported,
 * not a made-up one.
 */
enum kind { BARE, PIDLOCK_BLOCKED, PIDLOCK_TIMED, LOCKFILE_POLL, NO_LOCK };

struct locker {
	enum kind kind;
	struct pidlock *lock;
	int fd;
};

/* --flags: the parts' options, for the lockers their processes make. */
static unsigned int extra_flags;

static void locker_init(struct locker *l, enum kind kind)
{
	int r;

	l->kind = kind;
	l->fd = -1;
	l->lock = NULL;
	if (kind != PIDLOCK_BLOCKED && kind != PIDLOCK_TIMED)
		return;
	r = pidlock_new(&l->lock, bench_path, PIDLOCK_NO_SYNC | extra_flags);
	if (r < 0)
		bench_die("pidlock_new", -r);
}

#ifdef HAVE_LIBLOCKFILE
/* liblockfile's own retry sleeps 5 s and more; poll every 1 ms instead,
 * as a program that wants throughput from it has to. */
static void lockfile_take(void)
{
	while (lockfile_create(bench_path, 0, 0) != L_SUCCESS)
		usleep(1000);
}
#endif

static void take(struct locker *l)
{
	int r = 0;

	switch (l->kind) {
	case BARE:
		l->fd = bench_bare_take();
		return;
	case PIDLOCK_BLOCKED:
		r = pidlock_acquire(l->lock, -1);
		break;
	case PIDLOCK_TIMED:
		r = pidlock_acquire(l->lock, 600000);
		break;
	case LOCKFILE_POLL:
#ifdef HAVE_LIBLOCKFILE
		lockfile_take();
#endif
		return;
	case NO_LOCK:
		return;
	}
	if (r < 0)
		bench_die("pidlock_acquire", -r);
}

static void give(struct locker *l)
{
	int r;

	switch (l->kind) {
	case BARE:
		bench_bare_give(l->fd);
		return;
	case LOCKFILE_POLL:
#ifdef HAVE_LIBLOCKFILE
		if (lockfile_remove(bench_path) < 0)
			bench_die("lockfile_remove", errno);
#endif
		return;
	case NO_LOCK:
		return;
	case PIDLOCK_BLOCKED:
	case PIDLOCK_TIMED:
		r = pidlock_release(l->lock);
		if (r < 0)
			bench_die("pidlock_release", -r);
	}
}

/* ---- a team of forked processes ------------------------------------- */

struct team {
	int go;			/* 0 until all are forked */
	int stop;
	double stop_at;
	long counter;		/* incremented under the lock only */
	long done[MAX_PROCS];	/* each one's own count */
	int holder;		/* futex word: who holds, -1 nobody yet */
	double released;
	int nlat;
	double lat[BENCH_MAX_SAMPLES];
};

/* Bounded, so that a waiter notices the end of the run by itself. */
static void futex_wait(int *word, int val)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 10000000L };

	(void)syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void futex_wake_all(int *word)
{
	(void)syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void wait_go(struct team *t)
{
	while (!__atomic_load_n(&t->go, __ATOMIC_ACQUIRE))
		futex_wait(&t->go, 0);
}

static bool time_up(struct team *t)
{
	if (__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE))
		return true;
	if (bench_now_ns() < t->stop_at)
		return false;
	__atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
	return true;
}

/* Fork n players, start them together, reap them; their total CPU. */
static double run_team(struct team *t, int n, enum kind kind, double seconds,
		       void (*play)(struct team *, int, struct locker *))
{
	pid_t kids[MAX_PROCS];
	double cpu = 0;

	for (int i = 0; i < n; i++) {
		kids[i] = fork();
		if (kids[i] < 0)
			bench_die("fork", errno);
		if (kids[i] == 0) {
			struct locker l;

			locker_init(&l, kind);
			wait_go(t);
			play(t, i, &l);
			pidlock_free(l.lock);
			_exit(0);
		}
	}
	t->stop_at = bench_now_ns() + seconds * 1e9;
	__atomic_store_n(&t->go, 1, __ATOMIC_RELEASE);
	futex_wake_all(&t->go);
	for (int i = 0; i < n; i++) {
		struct rusage ru;
		int st;

		if (wait4(kids[i], &st, 0, &ru) < 0)
			bench_die("wait4", errno);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bench_die("a player failed", EPROTO);
		cpu += (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
		       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
	}
	(void)unlink(bench_path);
	return cpu;
}

/* ---- throughput -------------------------------------------------------- */

static void count(struct team *t, int me, struct locker *l)
{
	long mine = 0;

	while (!time_up(t)) {
		long v;

		take(l);
		v = __atomic_load_n(&t->counter, __ATOMIC_RELAXED);
		/* Without a lock, make the overlap certain rather than likely
		 * (one core, few players), so that its test cannot pass for
		 * want of a loss.  Another player runs here, if any. */
		if (l->kind == NO_LOCK && sched_yield() < 0)
			bench_die("sched_yield", errno);
		__atomic_store_n(&t->counter, v + 1, __ATOMIC_RELAXED);
		give(l);
		mine++;
	}
	t->done[me] = mine;
}

/* One locker at one point: increments per second of the shared
 * counter, and the increments lost (done by a player but missing from
 * the counter: two holders at once). */
struct tp_point {
	double ops;
	long done, lost;
};

static struct tp_point throughput(int n, enum kind kind, double seconds)
{
	struct team *t = bench_shared(sizeof(*t));
	struct tp_point p;
	long sum = 0;

	(void)run_team(t, n, kind, seconds, count);
	for (int i = 0; i < n; i++)
		sum += t->done[i];
	p.done = sum;
	p.lost = sum - t->counter;
	p.ops = (double)t->counter / seconds;
	bench_unshare(t, sizeof(*t));
	return p;
}

/* The three lockers of the part, in the order they run at each point.
 * Only pidlock's row is ours: a loss there is a broken lock and fails
 * the run; a loss of a peer's is a figure about that peer. */
enum { ROW_BARE, ROW_OURS, ROW_PEER, NROWS };

struct tp_row {
	const char *name;
	enum kind kind;
	bool ours, run;
	long lost, points_lost;	/* over the whole part */
	char where[128];	/* the points it lost at: "64, 16" */
};

/* Says at once whose increments went missing at this point, so that the
 * line sits under the row it explains. */
static void note_loss(struct tp_row *r, int procs, struct tp_point p)
{
	size_t len = strlen(r->where);

	if (p.lost == 0)
		return;
	r->lost += p.lost;
	r->points_lost++;
	snprintf(r->where + len, sizeof(r->where) - len, "%s%d",
		 len ? ", " : "", procs);
	printf("  ! %d procs: %s lost %ld of %ld increments (two holders at "
	       "once)%s\n", procs, r->name, p.lost, p.done,
	       r->ours ? ": pidlock's own lock failed" :
			 ": a finding about this peer, the run goes on");
}

void bench_throughput(const struct bench_opts *o)
{
	extra_flags = o->flags;
	static const int all[] = { 1, 2, 4, 8, 16, 64 }, quick[] = { 1, 4, 16 };
	const int *procs = o->quick ? quick : all;
	int np = o->quick ? 3 : 6;
#ifdef HAVE_LIBLOCKFILE
	const bool have_lockfile = true;
#else
	const bool have_lockfile = false;
#endif
	struct tp_row rows[NROWS] = {
		[ROW_BARE] = { .name = "bare flock", .kind = BARE,
			       .run = true },
		[ROW_OURS] = { .name = "pidlock", .kind = PIDLOCK_BLOCKED,
			       .ours = true, .run = true },
		[ROW_PEER] = { .name = "liblockfile", .kind = LOCKFILE_POLL,
			       .run = have_lockfile },
	};
	FILE *csv;

	/* --no-lock: the test's stand-in, named for what it is. */
	if (o->no_lock && strcmp(o->no_lock, "pidlock") == 0)
		rows[ROW_OURS].kind = NO_LOCK;
	if (o->no_lock && strcmp(o->no_lock, "peer") == 0) {
		rows[ROW_PEER].name = "none";
		rows[ROW_PEER].kind = NO_LOCK;
		rows[ROW_PEER].run = true;
	}
	csv = bench_csv(o, "throughput.csv", "procs,bare,pidlock,liblockfile,"
			"bare_lost,pidlock_lost,liblockfile_lost");
	printf("\ncontended throughput in %s, increments/s of a shared "
	       "counter, %.1f s a point:\n", bench_where, o->scale_seconds);
	printf("  %5s %12s %12s %7s %12s %8s\n", "procs", "bare flock",
	       "pidlock", "ratio", rows[ROW_PEER].name, "lost");
	for (int i = 0; i < np; i++) {
		struct tp_point p[NROWS];

		memset(p, 0, sizeof(p));
		for (int k = 0; k < NROWS; k++)
			if (rows[k].run)
				p[k] = throughput(procs[i], rows[k].kind,
						  o->scale_seconds);
		printf("  %5d %12.0f %12.0f %6.2fx %12.0f %8ld\n", procs[i],
		       p[ROW_BARE].ops, p[ROW_OURS].ops,
		       p[ROW_OURS].ops / p[ROW_BARE].ops, p[ROW_PEER].ops,
		       p[ROW_PEER].lost);
		for (int k = 0; k < NROWS; k++)
			note_loss(&rows[k], procs[i], p[k]);
		if (csv)
			fprintf(csv, "%d,%.0f,%.0f,%.0f,%ld,%ld,%ld\n",
				procs[i], p[ROW_BARE].ops, p[ROW_OURS].ops,
				p[ROW_PEER].ops, p[ROW_BARE].lost,
				p[ROW_OURS].lost, p[ROW_PEER].lost);
	}
	printf("  (%s; lost: %s's increments missing from the counter, two "
	       "holders at once)\n", rows[ROW_PEER].kind == NO_LOCK ?
	       "none takes no lock: the loss test's stand-in" :
	       "liblockfile has no wait: polled every 1 ms",
	       rows[ROW_PEER].name);
	/* One summary line per locker that lost any, the lines that
	 * bench-compare collects. */
	for (int k = 0; k < NROWS; k++) {
		if (!rows[k].points_lost)
			continue;
		printf("  lost increments: %s lost %ld at %ld of %d points "
		       "(procs %s)%s\n", rows[k].name, rows[k].lost,
		       rows[k].points_lost, np, rows[k].where,
		       rows[k].ours ? ": FAIL, pidlock's own lock" :
				      ": a peer's, not a failure");
		if (rows[k].ours) {
			fprintf(stderr, "bench: FAIL: pidlock lost %ld "
				"increments at %ld of %d points (procs %s): "
				"two holders at once under pidlock's own "
				"lock\n",
				rows[k].lost, rows[k].points_lost, np,
				rows[k].where);
			bench_failed = true;
		}
	}
	bench_csv_close(csv);
}

/* ---- herds --------------------------------------------------------------- */

#define HOLD_US 500

/*
 * Everybody queues; the holder holds a little, releases, and queues
 * again only once another holds, so that every release finds all the
 * others waiting.
 */
static void queue(struct team *t, int me, struct locker *l)
{
	for (;;) {
		int prev;

		take(l);
		if (time_up(t)) {
			give(l);
			return;
		}
		prev = __atomic_exchange_n(&t->holder, me, __ATOMIC_SEQ_CST);
		if (prev >= 0 && prev != me && t->nlat < BENCH_MAX_SAMPLES)
			t->lat[t->nlat++] = (bench_now_ns() - t->released) / 1000.0;
		t->counter++;
		futex_wake_all(&t->holder);
		usleep(HOLD_US);
		t->released = bench_now_ns();
		give(l);
		while (__atomic_load_n(&t->holder, __ATOMIC_SEQ_CST) == me &&
		       !time_up(t))
			futex_wait(&t->holder, me);
	}
}

struct herd_point {
	long handoffs;
	double latency_us, cpu_us;
};

static struct herd_point herd(int waiters, enum kind kind, double seconds)
{
	struct team *t = bench_shared(sizeof(*t));
	struct herd_point p;
	double cpu;

	t->holder = -1;
	cpu = run_team(t, waiters + 1, kind, seconds, queue);
	p.handoffs = t->counter;
	p.latency_us = bench_median(t->lat, t->nlat);
	p.cpu_us = t->counter ? cpu / (double)t->counter : 0;
	bench_unshare(t, sizeof(*t));
	return p;
}

static const struct {
	enum kind kind;
	const char *name, *key;
} herd_kinds[] = {
	{ BARE, "bare flock (the kernel's own)", "bare" },
	{ PIDLOCK_BLOCKED, "pidlock, blocked waiters", "blocked" },
	{ PIDLOCK_TIMED, "pidlock, timed waiters (inotify)", "timed" },
};

void bench_herd(const struct bench_opts *o)
{
	extra_flags = o->flags;
	static const int all[] = { 1, 8, 64 }, quick[] = { 1, 8 };
	const int *counts = o->quick ? quick : all;
	int nc = o->quick ? 2 : 3;
	FILE *csv = bench_csv(o, "herd.csv",
			      "kind,waiters,handoffs,latency_us,cpu_us");

	printf("\nherds in %s: every release finds N waiters; hold %d us; "
	       "%.1f s a point:\n", bench_where, HOLD_US, o->scale_seconds);
	printf("  %-34s %7s %9s %12s %14s\n", "", "waiters", "hand-offs",
	       "latency", "CPU/hand-off");
	for (size_t k = 0; k < sizeof(herd_kinds) / sizeof(herd_kinds[0]); k++) {
		for (int i = 0; i < nc; i++) {
			struct herd_point p = herd(counts[i], herd_kinds[k].kind,
						   o->scale_seconds);

			printf("  %-34s %7d %9ld %9.1f us %11.1f us\n",
			       herd_kinds[k].name, counts[i], p.handoffs,
			       p.latency_us, p.cpu_us);
			if (csv)
				fprintf(csv, "%s,%d,%ld,%.2f,%.2f\n",
					herd_kinds[k].key, counts[i], p.handoffs,
					p.latency_us, p.cpu_us);
		}
	}
	printf("  (CPU: user+system time of all the processes, over the "
	       "hand-offs)\n");
	bench_csv_close(csv);
}
