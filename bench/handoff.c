/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Hand-off: the time from a release to a waiter holding.  Two warm
 * processes take turns: the holder notes the time, releases, and waits
 * for the other to take over before it queues again.  The other, waiting
 * all along (blocked in the kernel, or on inotify with a timeout), notes
 * when it holds.  Then the same from with-lock-ex, an inode-checking
 * peer, to us.
 *
 * And the floor of any timed wait that queues in the kernel without a
 * signal: a helper process that shares the waiter's descriptors blocks
 * for the bare lock and wakes the waiter through a pipe.  Two wake-ups
 * in a row where a blocked waiter has one, plus the helper's clone,
 * exit and reaping for every wait (doc/performance.md, "Why timed
 * waiters are not queued in the kernel").
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pidlock.h>

#include "bench.h"

struct turns {
	double released;
	double lat[BENCH_MAX_SAMPLES];
	int n;
	int holder;		/* who holds now: 0 or 1, -1 at start */
};

/* How a player takes and gives: bare, or pidlock with a wait. */
struct style {
	const char *name, *key;
	int timeout_ms;		/* pidlock's; 0 means the bare cycle */
	bool relay;		/* the bare lock, taken by a helper */
};

struct player {
	const struct style *style;
	struct pidlock *lock;
	int fd;
	pid_t helper;		/* relay: reaped once the turn is noted */
	int helper_pidfd;
};

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif

/*
 * A child sharing our descriptor table, with no exit signal; 0 in it.
 * clone3(2)'s argument block is 8 words: flags, pidfd, child_tid,
 * parent_tid, exit_signal, stack, stack_size, tls (its uapi header is
 * not in every C library's include path).
 */
static pid_t relay_clone(int *pidfd)
{
	unsigned long long args[8] = {
		CLONE_FILES | CLONE_PIDFD,
		(unsigned long long)(uintptr_t)pidfd,
	};

	return (pid_t)syscall(SYS_clone3, args, sizeof(args));
}

/* The helper blocks for the lock and says which descriptor holds it. */
static int relay_take(struct player *p)
{
	int pipefd[2], fd = -1;
	struct pollfd pfd;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		bench_die("pipe2", errno);
	pid = relay_clone(&p->helper_pidfd);
	if (pid < 0)
		bench_die("clone3", errno);
	if (pid == 0) {
		fd = bench_bare_take();
		_exit(write(pipefd[1], &fd, sizeof(fd)) == sizeof(fd) ? 0 : 1);
	}
	pfd = (struct pollfd){ .fd = pipefd[0], .events = POLLIN };
	if (poll(&pfd, 1, -1) != 1 ||
	    read(pipefd[0], &fd, sizeof(fd)) != (ssize_t)sizeof(fd))
		bench_die("relay", errno);
	close(pipefd[0]);
	close(pipefd[1]);
	p->helper = pid;
	return fd;
}

static void relay_reap(struct player *p)
{
	if (p->helper <= 0)
		return;
	if (waitpid(p->helper, NULL, (int)__WCLONE) < 0)
		bench_die("waitpid", errno);
	close(p->helper_pidfd);
	p->helper = 0;
}

/* What a helper costs by itself: clone, exit, reap (CPU and time). */
static double relay_clone_cost(int n)
{
	double t0 = bench_now_ns();

	for (int i = 0; i < n; i++) {
		int pidfd = -1;
		pid_t pid = relay_clone(&pidfd);

		if (pid == 0)
			_exit(0);
		if (pid < 0 || waitpid(pid, NULL, (int)__WCLONE) < 0)
			bench_die("clone3/waitpid", errno);
		close(pidfd);
	}
	return (bench_now_ns() - t0) / 1000.0 / n;
}

static void take(struct player *p)
{
	int r;

	if (p->style->relay) {
		p->fd = relay_take(p);
		return;
	}
	if (p->style->timeout_ms == 0) {
		p->fd = bench_bare_take();
		return;
	}
	r = pidlock_acquire(p->lock, p->style->timeout_ms);
	if (r < 0)
		bench_die("acquire", -r);
}

static void give(struct player *p)
{
	int r;

	if (p->style->timeout_ms == 0) {
		bench_bare_give(p->fd);
		return;
	}
	r = pidlock_release(p->lock);
	if (r < 0)
		bench_die("release", -r);
}

static void play(struct turns *t, int me, int rounds, struct player *p)
{
	for (;;) {
		take(p);
		if (t->holder == !me && t->n < rounds)
			t->lat[t->n++] = (bench_now_ns() - t->released) / 1000.0;
		__atomic_store_n(&t->holder, me, __ATOMIC_SEQ_CST);
		relay_reap(p);
		if (t->n >= rounds) {
			give(p);
			return;
		}
		usleep(2000);	/* the other is waiting by now */
		t->released = bench_now_ns();
		give(p);
		while (__atomic_load_n(&t->holder, __ATOMIC_SEQ_CST) == me &&
		       t->n < rounds)
			usleep(100);
	}
}

static double turns(int rounds, const struct style *style)
{
	struct turns *t = bench_shared(sizeof(*t));
	pid_t kids[2];
	double m;

	t->holder = -1;
	for (int me = 0; me < 2; me++) {
		kids[me] = fork();
		if (kids[me] < 0)
			bench_die("fork", errno);
		if (kids[me] == 0) {
			struct player p = { .style = style, .fd = -1,
					    .helper_pidfd = -1 };

			if (style->timeout_ms &&
			    pidlock_new(&p.lock, bench_path, PIDLOCK_NO_SYNC) < 0)
				_exit(1);
			play(t, me, rounds, &p);
			pidlock_free(p.lock);
			_exit(0);
		}
	}
	for (int me = 0; me < 2; me++)
		if (waitpid(kids[me], NULL, 0) < 0)
			bench_die("waitpid", errno);
	m = bench_median(t->lat, t->n);
	bench_unshare(t, sizeof(*t));
	(void)unlink(bench_path);
	return m;
}

/* Until somebody holds a write lock on the file at the path. */
static void wait_for_lock(void)
{
	for (;;) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int fd = open(bench_path, O_RDONLY | O_CLOEXEC);
		int r = fd < 0 ? -1 : fcntl(fd, F_OFD_GETLK, &fl);

		if (fd >= 0)
			close(fd);
		if (r == 0 && fl.l_type != F_UNLCK)
			return;
		usleep(200);
	}
}

static double read_stamp(const char *file)
{
	double t = 0;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, &t, sizeof(t)) != (ssize_t)sizeof(t))
		bench_die(file, errno);
	close(fd);
	return t;
}

/* with-lock-ex's command: hold for 50 ms, note the time, exit. */
int bench_stamp_exit(const char *file)
{
	double t;
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	usleep(50000);
	t = bench_now_ns();
	if (fd < 0 || write(fd, &t, sizeof(t)) != (ssize_t)sizeof(t))
		return 1;
	return close(fd) < 0;
}

__attribute__((noreturn)) static void wle_holder(const char *wle,
						 const char *stamp)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0)
		_exit(127);
	self[n] = '\0';
	execl(wle, wle, "-w", bench_path, self, "--stamp-exit", stamp,
	      (char *)NULL);
	_exit(127);
}

__attribute__((noreturn)) static void wle_waiter(double *acquired,
						 bool fresh)
{
	struct pidlock *w;

	if (pidlock_new(&w, bench_path, PIDLOCK_NO_SYNC) < 0 ||
	    pidlock_acquire(w, -1) < 0)
		_exit(1);
	*acquired = bench_now_ns();
	if (fresh)
		(void)pidlock_release(w);
	else
		(void)pidlock_close(w);
	pidlock_free(w);
	_exit(0);
}

/*
 * with-lock-ex holds the file; a waiter of ours blocks on it.  From the
 * moment with-lock-ex's command is gone to the waiter holding.  When
 * with-lock-ex created the file just before (fresh: empty, young), the
 * grace period delays the takeover, in case a spec-only writer is about
 * to fill it; a leftover with our record is taken at once.
 */
static double from_wle(const char *wle, int rounds, bool fresh)
{
	char stamp[4300];
	double *acquired = bench_shared(sizeof(double));
	double lat[BENCH_MAX_SAMPLES];

	snprintf(stamp, sizeof(stamp), "%s.stamp", bench_path);
	for (int i = 0; i < rounds; i++) {
		pid_t holder = fork(), waiter;

		if (holder == 0)
			wle_holder(wle, stamp);
		wait_for_lock();
		waiter = fork();
		if (waiter == 0)
			wle_waiter(acquired, fresh);
		if (holder < 0 || waiter < 0 || waitpid(holder, NULL, 0) < 0 ||
		    waitpid(waiter, NULL, 0) < 0)
			bench_die("fork/waitpid", errno);
		lat[i] = (*acquired - read_stamp(stamp)) / 1000.0;
		/* Each fresh round starts from with-lock-ex's own empty file:
		 * the waiter kept that inode (an inode-blind locker's file). */
		if (fresh)
			(void)unlink(bench_path);
	}
	bench_unshare(acquired, sizeof(double));
	(void)unlink(bench_path);
	(void)unlink(stamp);
	return bench_median(lat, rounds);
}

static const struct style styles[] = {
	{ "bare flock cycle (baseline)", "bare", 0, false },
	{ "pidlock, blocked waiter", "blocked", -1, false },
	{ "pidlock, timed waiter (inotify)", "timed", 60000, false },
	{ "bare flock, relayed by a helper (floor)", "relay", 0, true },
};

static void from_peer(const struct bench_opts *o, FILE *csv)
{
	int rounds = o->rounds / 3 + 1;
	double kept, fresh;

	if (!o->wle[0]) {
		printf("  with-lock-ex: not found at configure time, skipped\n");
		return;
	}
	kept = from_wle(o->wle, rounds, false);
	fresh = from_wle(o->wle, rounds, true);
	printf("  %-44s %10.1f us\n", "with-lock-ex exits (our leftover)", kept);
	printf("  %-44s %10.1f us\n", "with-lock-ex exits (fresh empty file)",
	       fresh);
	/* Rule C's grace (PIDLOCK_DEFAULT_GRACE_MS) is skipped: nobody
	 * else has the file open once with-lock-ex has exited. */
	printf("  (the fresh file is young, but nobody else has it open: no "
	       "grace wait)\n");
	if (csv)
		fprintf(csv, "wle-leftover,%.2f,\nwle-fresh,%.2f,\n", kept, fresh);
}

void bench_handoff(const struct bench_opts *o)
{
	FILE *csv = bench_csv(o, "handoff.csv", "subject,median_us,ratio");
	double base = 0, m;

	printf("\nhand-off in %s, release -> waiter holds, median of %d "
	       "rounds:\n", bench_where, o->rounds);
	for (size_t i = 0; i < sizeof(styles) / sizeof(styles[0]); i++) {
		m = turns(o->rounds, &styles[i]);
		if (i == 0)
			base = m;
		printf("  %-44s %10.1f us  %5.2fx baseline\n", styles[i].name,
		       m, m / base);
		if (csv)
			fprintf(csv, "%s,%.2f,%.4f\n", styles[i].key, m, m / base);
	}
	m = relay_clone_cost(o->rounds * 4);
	printf("  %-44s %10.1f us  %5.2fx baseline\n",
	       "  of which per wait: the helper's clone+reap", m, m / base);
	printf("  (floor: what a timed wait queued in the kernel by a helper "
	       "costs at least)\n");
	if (csv)
		fprintf(csv, "relay-clone,%.2f,%.4f\n", m, m / base);
	from_peer(o, csv);
	bench_csv_close(csv);
}
