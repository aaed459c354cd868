/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pidlock_acquire_async(): a wait inside the caller's event loop.  The
 * descriptor it hands back wakes the loop on the release of a kernel-lock
 * holder (ours, KEEP_FILE, flock(1)) and on the removal of a spec-only
 * holder's file; the loop never spins; closing or freeing the handle
 * cancels the wait and leaves no descriptor behind.  Time bounds are
 * loose correctness bounds (woke on the event, not at the poll bound).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

/* Far beyond every wait here: only events may wake the loop. */
#define BOUND_MS 20000

static struct pidlock *patient(const char *path, unsigned int flags)
{
	struct pidlock *l = tu_new(path, flags);

	ck_assert_int_eq(pidlock_set_retry_interval(l, BOUND_MS), 0);
	return l;
}

/* A test on tu_path("a.lock") with a patient handle on it, p and l in
 * its body (TU_LOCK_TEST). */
#define ASYNC_TEST(name) TU_LOCK_TEST_MADE(name, patient, 0)

/* Busy: a descriptor to poll and the poll bound come back. */
static int busy_fd(struct pidlock *l)
{
	int fd = -2, ms = -2;

	ck_assert_int_eq(pidlock_acquire_async(l, &fd, &ms), -EWOULDBLOCK);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ms, BOUND_MS);
	return fd;
}

/*
 * The loop: poll what the library gave, call again, until held or
 * until_ms pass.  Returns the number of wake-ups it took, -1 if the
 * lock was not taken.
 */
static int loop_until_held(struct pidlock *l, long until_ms)
{
	long end = tu_ms() + until_ms;
	int wakes = 0;

	for (;;) {
		int fd = -1, ms = -1, r = pidlock_acquire_async(l, &fd, &ms);
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long left = end - tu_ms();

		if (r == 0)
			return wakes;
		ck_assert_int_eq(r, -EWOULDBLOCK);
		if (left <= 0)
			return -1;
		if (ms < 0 || ms > left)
			ms = (int)left;
		ck_assert_int_ge(poll(&pfd, fd >= 0 ? 1 : 0, ms), 0);
		wakes++;
	}
}

/* Kernel-lock holders that unlink (ours) and that only close (a kept
 * file, as with-lock-ex and flock(1) leave it). */
static const unsigned int holder_flags[] = { 0, PIDLOCK_KEEP_FILE };

START_TEST(async_wakes_on_release)
{
	const char *p = tu_path("a.lock");
	struct pidlock *l = patient(p, holder_flags[_i]);
	struct tu_child c;
	long t0;
	int fds, wakes;

	tu_hold(&c, p, holder_flags[_i]);
	fds = tu_count_fds();
	(void)busy_fd(l);
	t0 = tu_ms();
	tu_tell_later(&c, 300, 'R');
	wakes = loop_until_held(l, 10000);
	ck_assert_msg(wakes >= 1, "held before the release");
	ck_assert_msg(tu_ms() - t0 < 5000, "not woken by the release");
	/* Woken by the release, not once per our own try. */
	ck_assert_msg(wakes <= 3, "%d wake-ups for one release", wakes);
	ck_assert_int_eq(tu_join(&c), 0);
	wait(NULL);
	ck_assert_int_eq(pidlock_verify(l), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert_int_eq(tu_count_inotify(), 0);
	ck_assert_int_le(tu_count_fds(), fds);
	pidlock_free(l);
}
END_TEST

/*
 * flock(1) holds the file: the descriptor to poll wakes when flock(1)
 * lets go.  Each step waits for the one before, so no timing decides:
 * flock(1) holds (its command said so) when the call finds the lock
 * busy, has exited when the poll begins, and the poll bound (20 s) is
 * far beyond the 5 s the event may take to be seen.
 */
ASYNC_TEST(async_flock1_holder)
{
	struct pollfd pfd = { .events = POLLIN };
	struct tu_child c;
	int fd = -1, ms = -1;

	tu_write(p, "");
	tu_set_mtime_ago(p, 60);	/* not young: rule C's grace is over */
	tu_flock1_hold(&c, p, false);
	pfd.fd = busy_fd(l);
	tu_tell(&c, '\n');
	ck_assert_int_eq(tu_join(&c), 0);
	ck_assert_msg(poll(&pfd, 1, 5000) == 1, "not woken by flock(1)'s exit");
	ck_assert_int_eq(pidlock_acquire_async(l, &fd, &ms), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
}

/* with-lock-ex holds the file: the loop wakes when it lets go. */
ASYNC_TEST(async_with_lock_ex_holder)
{
	long t0 = tu_ms();

	ck_assert_int_eq(tu_sh("'%s' -w '%s' sleep 0.5 &",
			       tu_peer("WITH_LOCK_EX"), p), 0);
	while (!tu_exists(p))
		usleep(10 * 1000);
	usleep(100 * 1000);
	(void)busy_fd(l);
	ck_assert_int_ge(loop_until_held(l, 10000), 1);
	ck_assert_msg(tu_ms() - t0 < 5000, "not woken by with-lock-ex's exit");
	ck_assert_int_eq(pidlock_release(l), 0);
}

/* A POSIX fcntl(2) write lock of another process (which holds no flock):
 * the loop wakes when that process closes the file. */
ASYNC_TEST(async_posix_holder)
{
	struct tu_child c;
	long t0;

	tu_write(p, "");
	tu_set_mtime_ago(p, 60);	/* an old empty file: no grace to wait */
	tu_posix_hold(&c, p);
	(void)busy_fd(l);
	t0 = tu_ms();
	tu_tell_later(&c, 300, 'X');
	ck_assert_int_ge(loop_until_held(l, 10000), 1);
	ck_assert_msg(tu_ms() - t0 < 5000, "not woken by the POSIX holder's exit");
	ck_assert_int_eq(tu_join(&c), 0);
	wait(NULL);
	ck_assert_int_eq(pidlock_release(l), 0);
}

/* A spec-only holder (no kernel lock): its file's removal wakes it. */
ASYNC_TEST(async_spec_holder_removed)
{
	pid_t rm;
	long t0;

	tu_write_spec(p, getpid(), 0, "spec");
	(void)busy_fd(l);
	t0 = tu_ms();
	rm = fork();
	ck_assert_int_ge(rm, 0);
	if (rm == 0) {
		usleep(300 * 1000);
		_exit(unlink(p) == 0 ? 0 : 1);
	}
	ck_assert_int_ge(loop_until_held(l, 10000), 1);
	ck_assert_msg(tu_ms() - t0 < 5000, "not woken by the removal");
	ck_assert_int_eq(tu_reap(rm), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
}

/* Nothing happens to the lock: the loop sleeps, whatever it does with
 * the descriptor (a level-triggered poll), for a kernel holder, and for
 * a spec-only one while other names come and go in the directory. */
START_TEST(async_never_spins)
{
	const char *p = tu_path("a.lock");
	struct pidlock *l = patient(p, 0);
	struct tu_child c;
	pid_t churn = -1;
	long cpu0 = tu_cpu_ms();
	int wakes;

	if (_i == 0) {
		tu_hold(&c, p, 0);
	} else {
		tu_write_spec(p, getpid(), 0, "spec");
		churn = tu_churn_names();
	}
	wakes = loop_until_held(l, 800);
	ck_assert_int_eq(wakes, -1);
	fprintf(stderr, "async wait, %s holder: %ld ms CPU in 800 ms\n",
		_i == 0 ? "kernel" : "spec-only", tu_cpu_ms() - cpu0);
	ck_assert_msg(tu_cpu_ms() - cpu0 < 100, "an idle wait burnt CPU");
	pidlock_free(l);
	if (_i == 0)
		tu_kill(&c);
	else
		ck_assert_int_eq(tu_reap(churn), 0);
}
END_TEST

/* Closing or freeing the handle cancels the wait: no descriptor and no
 * inotify instance left; a blocking acquire cancels it as well. */
START_TEST(async_cancel)
{
	const char *p = tu_path("a.lock");
	struct pidlock *l = patient(p, 0);
	struct tu_child c;
	int fds;

	tu_hold(&c, p, 0);
	fds = tu_count_fds();
	(void)busy_fd(l);
	ck_assert_int_eq(pidlock_close(l), 0);
	ck_assert_int_eq(tu_count_fds(), fds);
	ck_assert_int_eq(pidlock_close(l), -ENOLCK);
	(void)busy_fd(l);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	ck_assert_int_eq(tu_count_fds(), fds);
	(void)busy_fd(l);
	pidlock_free(l);
	ck_assert_int_eq(tu_count_fds(), fds);
	ck_assert_int_eq(tu_count_inotify(), 0);
	tu_kill(&c);
}
END_TEST

/* A fork during the wait shares the descriptor the wait kept on the
 * holder's file, and the hold is later taken on that descriptor: its
 * release must still let go for every process that shares it, or a
 * blocked waiter sleeps until the forked child exits. */
ASYNC_TEST(async_fork_during_wait)
{
	struct tu_child h, q;
	pid_t worker;
	long t0;

	tu_hold(&h, p, 0);
	/* Forked now: a fork after the hold would bring the explicit
	 * unlock back by itself. */
	tu_waiter(&q, p, 0);
	(void)busy_fd(l);
	worker = fork();
	ck_assert_int_ge(worker, 0);
	if (worker == 0) {
		sleep(10);
		_exit(0);
	}
	tu_kill(&h);		/* its file stays: taken over on our descriptor */
	ck_assert_int_ge(loop_until_held(l, 5000), 0);
	tu_tell(&q, 'G');
	usleep(200 * 1000);	/* q blocks in flock(2) on our file */
	t0 = tu_ms();
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert_int_eq(tu_wait_signal(&q), 'L');
	ck_assert_msg(tu_ms() - t0 < 3000, "the blocked waiter waited for "
		      "the forked child");
	tu_tell(&q, 'X');
	ck_assert_int_eq(tu_join(&q), 0);
	kill(worker, SIGKILL);
	ck_assert_int_eq(tu_reap(worker), 128 + SIGKILL);
}

/* A child of a fork during the wait frees its copy of the handle (a
 * pre-fork server's worker that does not want the lock): the parent's
 * wait must still wake on the release, though the two share the inotify
 * instance whose watches the child's copy names. */
ASYNC_TEST(async_child_free_keeps_parent_wait)
{
	struct tu_child h;
	pid_t worker;
	long t0;

	tu_hold(&h, p, 0);
	(void)busy_fd(l);
	worker = fork();
	ck_assert_int_ge(worker, 0);
	if (worker == 0) {
		pidlock_free(l);
		_exit(0);
	}
	ck_assert_int_eq(tu_reap(worker), 0);
	t0 = tu_ms();
	tu_tell_later(&h, 300, 'R');
	ck_assert_int_ge(loop_until_held(l, 10000), 1);
	ck_assert_msg(tu_ms() - t0 < 5000, "the child's free took the "
		      "parent's watch away");
	ck_assert_int_eq(tu_join(&h), 0);
	wait(NULL);
	ck_assert_int_eq(pidlock_release(l), 0);
}

/* What the two processes of a fork during a wait did, in a page they
 * share: how many held at once (now, and at most), and how many holds
 * ended. */
struct fork_journal {
	int inside;
	int most;
	int holds;
};

static struct fork_journal *journal_new(void)
{
	void *p = mmap(NULL, sizeof(struct fork_journal),
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(p, MAP_FAILED);
	return p;
}

static void journal_enter(struct fork_journal *j)
{
	int n = __atomic_add_fetch(&j->inside, 1, __ATOMIC_SEQ_CST);
	int most = __atomic_load_n(&j->most, __ATOMIC_SEQ_CST);

	while (n > most && !__atomic_compare_exchange_n(&j->most, &most, n,
							false, __ATOMIC_SEQ_CST,
							__ATOMIC_SEQ_CST))
		;
}

/* The event loop of one process, as loop_until_held() without Check's
 * assertions (they do not reach the runner from a forked child). */
static int poll_until_held(struct pidlock *l, long until_ms)
{
	long end = tu_ms() + until_ms;

	for (;;) {
		int fd = -1, ms = -1, r = pidlock_acquire_async(l, &fd, &ms);
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long left = end - tu_ms();

		if (r != -EWOULDBLOCK)
			return r;
		if (left <= 0)
			return -ETIMEDOUT;
		if (ms < 0 || ms > left)
			ms = (int)left;
		if (poll(&pfd, fd >= 0 ? 1 : 0, ms) < 0)
			return -errno;
	}
}

/* Wait for the lock, hold it for a second (cut short once the other
 * process holds as well: the failure is then on record), release. */
static int hold_once(struct pidlock *l, struct fork_journal *j)
{
	int r = poll_until_held(l, 15000);

	if (r < 0)
		return r;
	journal_enter(j);
	for (int i = 0; i < 100; i++) {
		if (__atomic_load_n(&j->inside, __ATOMIC_SEQ_CST) > 1)
			break;
		usleep(10 * 1000);
	}
	__atomic_sub_fetch(&j->inside, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&j->holds, 1, __ATOMIC_SEQ_CST);
	return pidlock_release(l);
}

/* As flock(1) holds an existing file: LOCK_EX on a read-only open, no
 * record written, until told anything. */
static int flock_hold_fn(struct tu_child *c, void *arg)
{
	int fd = open(arg, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	TU_CHILD_CHECK(fd >= 0);
	TU_CHILD_CHECK(flock(fd, LOCK_EX) == 0);
	tu_signal(c, 'L');
	(void)tu_wait_parent(c);
	return 0;
}

/*
 * A fork during a wait, and both processes go on waiting on their
 * copies of the handle.  The holder goes away: SIGKILLed, its record
 * with our marker stays (0), or a flock(1)-style holder of an old empty
 * file lets go (1).  At most one of the two may hold at a time, and
 * each gets the lock in turn.  Without the child's fresh start both
 * take it over on the description they share, and both hold.
 */
START_TEST(async_fork_both_wait)
{
	char *p = tu_path("a.lock");
	struct pidlock *l = tu_new(p, 0);
	struct fork_journal *j = journal_new();
	int fd = -1, ms = -1, r, st;
	struct tu_child h;
	pid_t worker;

	ck_assert_int_eq(pidlock_set_retry_interval(l, 50), 0);
	if (_i == 0) {
		tu_hold(&h, p, 0);
	} else {
		tu_write(p, "");
		tu_set_mtime_ago(p, 60);	/* no grace to wait out */
		tu_spawn(&h, flock_hold_fn, p);
		ck_assert_int_eq(tu_wait_signal(&h), 'L');
	}
	ck_assert_int_eq(pidlock_acquire_async(l, &fd, &ms), -EWOULDBLOCK);
	ck_assert_int_ge(fd, 0);
	worker = fork();
	ck_assert_int_ge(worker, 0);
	if (worker == 0) {
		r = hold_once(l, j);
		if (r < 0)
			fprintf(stderr, "child: %s\n", strerror(-r));
		_exit(r == 0 ? 0 : 1);
	}
	if (_i == 0) {
		tu_kill(&h);	/* its file stays, with our marker */
	} else {
		tu_tell(&h, 'R');
		ck_assert_int_eq(tu_join(&h), 0);
	}
	r = hold_once(l, j);
	st = tu_reap(worker);
	ck_assert_msg(j->most == 1, "%d processes held at once", j->most);
	ck_assert_int_eq(r, 0);
	ck_assert_int_eq(st, 0);
	ck_assert_int_eq(j->holds, 2);
	pidlock_free(l);
	ck_assert_int_eq(munmap(j, sizeof(*j)), 0);
}
END_TEST

/* Held already, or asked wrongly: the codes of the page. */
START_TEST(async_errors)
{
	const char *p = tu_path("a.lock");
	struct pidlock *l = tu_new(p, 0);
	int fd, ms;

	ck_assert_int_eq(pidlock_acquire_async(NULL, &fd, &ms), -EINVAL);
	ck_assert_int_eq(pidlock_acquire_async(l, NULL, &ms), -EINVAL);
	ck_assert_int_eq(pidlock_acquire_async(l, &fd, NULL), -EINVAL);
	ck_assert_int_eq(pidlock_acquire_async(l, &fd, &ms), 0);
	ck_assert_int_eq(fd, -1);
	ck_assert_int_eq(pidlock_acquire_async(l, &fd, &ms), -EALREADY);
	ck_assert_int_eq(pidlock_release(l), 0);
	pidlock_free(l);
}
END_TEST

int main(void)
{
	const struct tu_case cases[] = {
		{ async_wakes_on_release,
		  sizeof(holder_flags) / sizeof(holder_flags[0]) },
		{ async_flock1_holder, 1 },
		{ async_with_lock_ex_holder, 1 },
		{ async_posix_holder, 1 },
		{ async_spec_holder_removed, 1 },
		{ async_never_spins, 2 },
		{ async_cancel, 1 },
		{ async_fork_during_wait, 1 },
		{ async_fork_both_wait, 2 },
		{ async_child_free_keeps_parent_wait, 1 },
		{ async_errors, 1 },
		{ NULL, 0 },
	};

	tu_run_cases("async", "async", 30, cases);
}
