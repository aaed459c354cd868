/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Waiting: blocking and timed waits wake on release, EINTR, spec-only
 * holders, many processes counting under the lock, SIGKILLed holders.
 * Time bounds here are loose correctness bounds (woke on the release,
 * not at the timeout), never performance figures.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

/* A wait wakes on the release, well before its timeout: a blocking one
 * (asleep in the kernel) and timed ones (in poll), for a holder that
 * unlinks (libpidlock) and one that only closes (KEEP_FILE, like
 * with-lock-ex and flock(1)). */
static const struct {
	int timeout_ms;
	unsigned int flags;
} wakes[] = {
	{ -1, 0 }, { 20000, 0 }, { 20000, PIDLOCK_KEEP_FILE },
};

START_TEST(wakes_on_release)
{
	const char *p = tu_path("a.lock");
	struct pidlock *l = tu_new(p, wakes[_i].flags);
	struct tu_child c;
	long t0, dt;
	int fds;

	ck_assert_int_eq(pidlock_set_retry_interval(l, 5000), 0);
	tu_hold(&c, p, wakes[_i].flags);
	fds = tu_count_fds();
	t0 = tu_ms();
	tu_tell_later(&c, 200, 'R');
	ck_assert_int_eq(pidlock_acquire(l, wakes[_i].timeout_ms), 0);
	dt = tu_ms() - t0;
	ck_assert_int_ge(dt, 150);
	/* Woken by the event, not by the 5 s poll or the 20 s timeout. */
	ck_assert_msg(dt < 3000, "waited %ld ms", dt);
	ck_assert_int_eq(tu_join(&c), 0);
	wait(NULL);
	/* The wait's inotify instance lives until the release, no longer. */
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert_int_eq(tu_count_inotify(), 0);
	ck_assert_int_le(tu_count_fds(), fds);
	pidlock_free(l);
}
END_TEST

/* A timed acquire on a held lock ends with -ETIMEDOUT, not earlier. */
TU_LOCK_TEST(timed_times_out, 0)
{
	struct pidlock_info info;
	struct tu_child c;
	long t0;
	int fds;

	tu_hold(&c, p, 0);
	fds = tu_count_fds();
	t0 = tu_ms();
	ck_assert_int_eq(pidlock_acquire(l, 300), -ETIMEDOUT);
	ck_assert_int_ge(tu_ms() - t0, 295);
	ck_assert_int_eq(tu_count_fds(), fds);
	ck_assert_int_eq(tu_count_inotify(), 0);
	ck_assert_int_eq(pidlock_holder(l, &info), 0);
	ck_assert_int_eq(info.pid, c.pid);
	tu_kill(&c);
}

static void on_usr1(int sig)
{
	(void)sig;
}

struct intr_arg {
	const char *path;
	int timeout;
	int restart;
};

static int intr_waiter(struct tu_child *c, void *arg)
{
	const struct intr_arg *a = arg;
	struct sigaction sa;
	struct pidlock *l;
	int r;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = a->restart ? SA_RESTART : 0;
	if (sigaction(SIGUSR1, &sa, NULL) < 0 || pidlock_new(&l, a->path, 0) < 0)
		return 2;
	tu_signal(c, 'S');
	r = pidlock_acquire(l, a->timeout);
	pidlock_free(l);
	if (r == -EINTR)
		return 10;
	return r == 0 ? 0 : 3;
}

/* A signal during a wait: a handler without SA_RESTART interrupts it
 * with -EINTR (exit 10), for a blocking wait (in the kernel) and a timed
 * one (in poll); with SA_RESTART a blocking wait goes on and gets the
 * lock once it is released (exit 0). */
static const struct {
	int timeout_ms;
	int restart;
	int status;
} intr_cases[] = {
	{ -1, 0, 10 }, { 10000, 0, 10 }, { -1, 1, 0 },
};

START_TEST(signal_during_wait)
{
	const char *p = tu_path("a.lock");
	struct intr_arg a = { p, intr_cases[_i].timeout_ms,
			      intr_cases[_i].restart };
	struct tu_child h, w;

	tu_hold(&h, p, 0);
	tu_spawn(&w, intr_waiter, &a);
	ck_assert_int_eq(tu_wait_signal(&w), 'S');
	usleep(150 * 1000);
	ck_assert_int_eq(kill(w.pid, SIGUSR1), 0);
	usleep(100 * 1000);
	tu_tell(&h, 'R');
	ck_assert_int_eq(tu_join(&h), 0);
	ck_assert_int_eq(tu_join(&w), intr_cases[_i].status);
}
END_TEST

/* A spec-only holder is polled; its file's removal wakes us at once. */
TU_LOCK_TEST(spec_holder_removal_wakes, 0)
{
	long t0, dt;

	tu_write_spec(p, getppid(), 0, NULL);
	ck_assert_int_eq(pidlock_set_retry_interval(l, 5000), 0);
	t0 = tu_ms();
	if (fork() == 0) {
		usleep(200 * 1000);
		unlink(p);
		_exit(0);
	}
	ck_assert_int_eq(pidlock_acquire(l, 20000), 0);
	dt = tu_ms() - t0;
	ck_assert_int_ge(dt, 150);
	ck_assert_msg(dt < 3000, "waited %ld ms", dt);
	wait(NULL);
}

/* Without events (a rewrite in place, no unlink), the retry interval
 * still finds a spec lock that became stale. */
TU_LOCK_TEST(spec_holder_polled, 0)
{
	tu_write_spec(p, tu_dead_pid(), 0, NULL);
	ck_assert_int_eq(pidlock_set_stale_timeout(l, 1), 0);
	ck_assert_int_eq(pidlock_set_retry_interval(l, 50), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	ck_assert_int_eq(pidlock_acquire(l, 10000), 0);
}

struct count_arg {
	const char *path;
	const char *counter;
	int rounds;
	unsigned int flags;
};

static int counter_worker(struct tu_child *c, void *arg)
{
	const struct count_arg *a = arg;
	struct pidlock *l;

	(void)c;
	if (pidlock_new(&l, a->path, a->flags) < 0)
		return 2;
	for (int i = 0; i < a->rounds; i++) {
		char buf[32];
		long v = 0;
		int fd, r;
		ssize_t n;

		if (pidlock_acquire(l, -1) != 0)
			return 3;
		fd = open(a->counter, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return 4;
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		v = strtol(buf, NULL, 10);
		n = snprintf(buf, sizeof(buf), "%ld\n", v + 1);
		if (pwrite(fd, buf, (size_t)n, 0) != n)
			return 5;
		close(fd);
		r = pidlock_release(l);
		if (r != 0) {
			fprintf(stderr, "counter worker: release: %s\n",
				strerror(-r));
			return 6;
		}
	}
	pidlock_free(l);
	return 0;
}

/* The last release removed the file; or, where a contended create in
 * place left an empty file that its winner kept, marked it released. */
static void left_free_or_gone(const char *path)
{
	struct pidlock_info info;

	if (!tu_exists(path))
		return;
	ck_assert_msg(tu_in_place(), "the lock file was left behind");
	ck_assert_int_eq(pidlock_inspect(path, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_FREE);
}

/* N processes x M increments under the lock: the count is exact. */
START_TEST(counter_exact)
{
	struct count_arg a = { tu_path("c.lock"), tu_path("counter"), 300,
			       PIDLOCK_NO_SYNC };
	struct tu_child c[6];

	tu_write(a.counter, "0\n");
	for (int i = 0; i < 6; i++) {
		a.flags = PIDLOCK_NO_SYNC | (i % 3 == 2 ? PIDLOCK_PLAIN_PID : 0);
		if (i == 5)
			a.flags = 0;	/* one synced worker */
		tu_spawn(&c[i], counter_worker, &a);
	}
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(tu_join(&c[i]), 0);
	ck_assert_str_eq(tu_read(a.counter), "1800\n");
	left_free_or_gone(a.path);
}
END_TEST

/* Holders SIGKILLed at random moments: no deadlock, the count of the
 * survivors' increments is exact, and the lock is free at once after. */
START_TEST(counter_with_sigkill)
{
	struct count_arg a = { tu_path("c.lock"), tu_path("counter"), 200,
			       PIDLOCK_NO_SYNC };
	struct count_arg victim = a;
	struct tu_child c[4], v[6];
	struct pidlock *l = tu_new(a.path, 0);

	victim.rounds = 1000000;
	victim.counter = tu_path("scratch");
	tu_write(a.counter, "0\n");
	tu_write(victim.counter, "0\n");
	for (int i = 0; i < 4; i++)
		tu_spawn(&c[i], counter_worker, &a);
	for (int i = 0; i < 6; i++) {
		tu_spawn(&v[i], counter_worker, &victim);
		usleep((useconds_t)(5000 + rand() % 20000));
		tu_kill(&v[i]);
	}
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(tu_join(&c[i]), 0);
	ck_assert_str_eq(tu_read(a.counter), "800\n");
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	pidlock_free(l);
}
END_TEST

/*
 * Two timed waiters taking turns, each releasing after a short hold and
 * queueing again only once the other holds: a release often comes
 * between the waiter's busy try and its watch on the holder's file,
 * whose name is then gone, and nothing else happens in the directory
 * after it.  The wait must try again at once, not sleep out its poll
 * interval (20 s here: the hand-off then missed, issue 30).
 */
struct turns {
	int holder;		/* 1 + the worker that holds, 0 at first */
	int done[2];
};

struct turn_arg {
	const char *path;
	struct turns *t;
	int me;
};

/* Until the other holds (or has finished): 0, or -1 after 5 s. */
static int other_takes_over(struct turns *t, int me)
{
	long t0 = tu_ms();

	while (__atomic_load_n(&t->holder, __ATOMIC_SEQ_CST) == me + 1 &&
	       !__atomic_load_n(&t->done[!me], __ATOMIC_SEQ_CST)) {
		if (tu_ms() - t0 > 5000)
			return -1;
		usleep(50);
	}
	return 0;
}

static int turn_worker(struct tu_child *c, void *arg)
{
	const struct turn_arg *a = arg;
	struct pidlock *l;

	(void)c;
	srand((unsigned int)getpid());
	if (pidlock_new(&l, a->path, PIDLOCK_NO_SYNC) < 0 ||
	    pidlock_set_retry_interval(l, 20000) < 0)
		return 2;
	for (int i = 0; i < 300; i++) {
		if (pidlock_acquire(l, 60000) != 0)
			return 3;
		__atomic_store_n(&a->t->holder, a->me + 1, __ATOMIC_SEQ_CST);
		usleep((useconds_t)(rand() % 500));
		if (pidlock_release(l) != 0)
			return 4;
		if (other_takes_over(a->t, a->me) < 0)
			return 7;	/* the other slept through the release */
	}
	__atomic_store_n(&a->t->done[a->me], 1, __ATOMIC_SEQ_CST);
	pidlock_free(l);
	return 0;
}

START_TEST(timed_turns_miss_no_release)
{
	struct turns *t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct turn_arg a[2];
	struct tu_child c[2];

	ck_assert_ptr_ne(t, MAP_FAILED);
	for (int i = 0; i < 2; i++) {
		a[i] = (struct turn_arg){ tu_path("t.lock"), t, i };
		tu_spawn(&c[i], turn_worker, &a[i]);
	}
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(tu_join(&c[i]), 0);
	munmap(t, sizeof(*t));
}
END_TEST

/*
 * Blocked waiters under local contention wait in the kernel, never in
 * acquire.c's pause for a path whose file is gone at each open: a file
 * that a waiter locked and then found released is another's turn, not
 * that spin.  A pause would leave its inotify instance open in the
 * holder until the release (acquire.c, keep_or_close_watch()).  A herd:
 * each holder holds a little and queues again only once another holds,
 * so each waiter loses several hand-offs in a row; once those counted,
 * waiters paused (issue 30).  Counted over the whole herd: with that
 * rule back, an acquire that pauses goes on pausing for hundreds of
 * tries, so each worker shows one or two such acquires (7 in all, in
 * every run), not many; without it, none.  Two are allowed for, for a
 * rare real streak of names gone at the open.
 */
#define HERD 8

struct herd {
	int holder;		/* 1 + the worker that holds, 0 at first */
	int done;		/* workers finished */
	int paused;		/* acquires that paused, all workers */
};

struct herd_arg {
	const char *path;
	struct herd *h;
	int me;
};

static int herd_worker(struct tu_child *c, void *arg)
{
	const struct herd_arg *a = arg;
	struct pidlock *l;
	int paused = 0;

	(void)c;
	if (pidlock_new(&l, a->path, PIDLOCK_NO_SYNC) < 0)
		return 2;
	for (int i = 0; i < 60; i++) {
		long t0;

		if (pidlock_acquire(l, -1) != 0)
			return 3;
		paused += tu_count_inotify() > 0;
		__atomic_store_n(&a->h->holder, a->me + 1, __ATOMIC_SEQ_CST);
		usleep(300);
		if (pidlock_release(l) != 0)
			return 4;
		t0 = tu_ms();
		while (__atomic_load_n(&a->h->holder, __ATOMIC_SEQ_CST) ==
			       a->me + 1 &&
		       __atomic_load_n(&a->h->done, __ATOMIC_SEQ_CST) <
			       HERD - 1 &&
		       tu_ms() - t0 < 5000)
			usleep(50);
	}
	__atomic_add_fetch(&a->h->done, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&a->h->paused, paused, __ATOMIC_SEQ_CST);
	pidlock_free(l);
	return 0;
}

START_TEST(blocked_waiters_never_pause)
{
	struct herd *h = mmap(NULL, sizeof(*h), PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct herd_arg a[HERD];
	struct tu_child c[HERD];

	ck_assert_ptr_ne(h, MAP_FAILED);
	for (int i = 0; i < HERD; i++) {
		a[i] = (struct herd_arg){ tu_path("n.lock"), h, i };
		tu_spawn(&c[i], herd_worker, &a[i]);
	}
	for (int i = 0; i < HERD; i++)
		ck_assert_int_eq(tu_join(&c[i]), 0);
	ck_assert_int_le(h->paused, 2);
	munmap(h, sizeof(*h));
}
END_TEST

int main(void)
{
	const struct tu_case cases[] = {
		{ wakes_on_release, sizeof(wakes) / sizeof(wakes[0]) },
		{ timed_times_out, 1 },
		{ signal_during_wait, sizeof(intr_cases) / sizeof(intr_cases[0]) },
		{ spec_holder_removal_wakes, 1 },
		{ spec_holder_polled, 1 },
		{ counter_exact, 1 },
		{ counter_with_sigkill, 1 },
		{ timed_turns_miss_no_release, 1 },
		{ blocked_waiters_never_pause, 1 },
		{ NULL, 0 },
	};

	tu_run_cases("wait", "wait", 30, cases);
}
