/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Semaphores (doc/protocol.md, section 10): pidlock_slots_*, with real
 * processes, SIGKILL, a spec-only record and flock(1) on the slot files.
 * Slot k of PATH is the lock file PATH.k; every test uses "sem", so
 * its slots are sem.0, sem.1, ...
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

/* CPU a waiter may burn in a SPIN_WAIT_MS wait, whatever inotify does.
 * Four waiters poll three slots (each poll some 50 system calls, FUSE's
 * through its daemon): on bindfs under load one took 112 ms.  A spin
 * burns the whole wait, shared among the four: 750 ms each even with a
 * quarter of each core. */
#define CPU_BOUND_MS 250
#define SPIN_WAIT_MS 3000
/* The waiters' retry interval there: 60 polls in the wait.  A poll
 * looks at every slot, some 50 system calls: 0.35 ms on tmpfs, twice
 * that on btrfs and FUSE (make check-filesystems).  A spin would burn
 * the whole wait. */
#define SPIN_POLL_MS 50
/* A retry interval no test waits for: a waiter that gets in before it
 * was woken by an event. */
#define NO_POLL_MS 600000U

static char *sem(void)
{
	return tu_path("sem");
}

static char *slot_file(unsigned int k)
{
	char name[32];

	snprintf(name, sizeof(name), "sem.%u", k);
	return tu_path(name);
}

static struct pidlock_slots *new_slots(unsigned int n, unsigned int retry_ms)
{
	struct pidlock_slots *s;

	ck_assert_int_eq(pidlock_slots_new(&s, sem(), n, 0), 0);
	for (unsigned int k = 0; retry_ms && k < n; k++)
		ck_assert_int_eq(pidlock_set_retry_interval(
					 pidlock_slots_lock(s, k), retry_ms), 0);
	return s;
}

/* A child on the test's directory: made here first, or each child
 * would make a directory of its own. */
static void spawn(struct tu_child *c, tu_fn fn, void *arg)
{
	(void)tu_dir();
	tu_spawn(c, fn, arg);
}

/* How many names the test directory holds. */
static int dir_entries(void)
{
	char cmd[PATH_MAX + 64];
	FILE *f;
	int n = 0, ch;

	snprintf(cmd, sizeof(cmd), "ls -A '%s'", tu_dir());
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	ck_assert_int_eq(pclose(f), 0);
	return n;
}

/* A holder: takes a slot of n with a try, says '0' + slot, holds until
 * told anything, releases and says 'R'. */
struct holder_arg {
	unsigned int n;
	int timeout_ms;
	unsigned int retry_ms;
};

static int holder_fn(struct tu_child *c, void *arg)
{
	const struct holder_arg *a = arg;
	struct pidlock_slots *s;
	int k;

	if (pidlock_slots_new(&s, sem(), a->n, 0) < 0)
		return 2;
	for (unsigned int i = 0; a->retry_ms && i < a->n; i++)
		if (pidlock_set_retry_interval(pidlock_slots_lock(s, i),
					       a->retry_ms) < 0)
			return 2;
	tu_signal(c, 'W');
	k = pidlock_slots_acquire(s, a->timeout_ms);
	if (k < 0)
		return 10 + (-k > 100 ? 100 : -k);
	if (pidlock_slots_slot(s) != k ||
	    pidlock_verify(pidlock_slots_lock(s, (unsigned int)k)) != 0)
		return 3;
	tu_signal(c, (char)('0' + k));
	(void)tu_wait_parent(c);
	if (pidlock_slots_release(s) != 0)
		return 4;
	pidlock_slots_free(s);
	tu_signal(c, 'R');
	return 0;
}

/* Starts a holder and returns the slot it took. */
static int hold(struct tu_child *c, struct holder_arg *a)
{
	char ch;

	spawn(c, holder_fn, a);
	ck_assert_int_eq(tu_wait_signal(c), 'W');
	ch = tu_wait_signal(c);
	ck_assert_msg(ch >= '0' && ch <= '9', "holder said %d", ch);
	return ch - '0';
}

static void let_go(struct tu_child *c)
{
	tu_tell(c, 'R');
	ck_assert_int_eq(tu_wait_signal(c), 'R');
	ck_assert_int_eq(tu_join(c), 0);
}

/* Rule "at most n": n holders get n distinct slots, the next try is
 * busy, and the try made no file beyond the n slot files. */
START_TEST(n_holders_distinct_slots)
{
	struct holder_arg a = { .n = 3, .timeout_ms = 0 };
	struct tu_child c[3];
	bool seen[3] = { false };
	struct pidlock_slots *s;

	for (int i = 0; i < 3; i++) {
		int k = hold(&c[i], &a);

		ck_assert_int_lt(k, 3);
		ck_assert_msg(!seen[k], "slot %d given twice", k);
		seen[k] = true;
	}
	s = new_slots(3, 0);
	ck_assert_int_eq(pidlock_slots_acquire(s, 0), -EWOULDBLOCK);
	ck_assert_int_eq(pidlock_slots_slot(s), -ENOLCK);
	ck_assert_int_eq(dir_entries(), 3);
	ck_assert_int_eq(pidlock_slots_acquire(s, 200), -ETIMEDOUT);
	for (int i = 0; i < 3; i++)
		let_go(&c[i]);
	ck_assert_int_eq(dir_entries(), 0);
	pidlock_slots_free(s);
}
END_TEST

/* Rule "no file per try": a try of a full semaphore looks at the slots
 * and creates nothing, not even a temp file for a moment, whoever holds
 * them: our kernel locks, a spec-only record, flock(1). */
START_TEST(busy_try_creates_nothing)
{
	struct holder_arg a = { .n = 4, .timeout_ms = 0 };
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct pidlock_slots *s = new_slots(4, 0);
	struct tu_child c[2], f;
	int ifd;

	tu_write_spec(slot_file(2), getpid(), 0, NULL);
	/* flock(1) holds slot 3 from here until told. */
	tu_flock1_hold(&f, slot_file(3), false);
	for (int i = 0; i < 2; i++)
		ck_assert_int_lt(hold(&c[i], &a), 2);
	ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	ck_assert_int_ge(ifd, 0);
	ck_assert_int_ge(inotify_add_watch(ifd, tu_dir(), IN_CREATE), 0);
	for (int i = 0; i < 20; i++)
		ck_assert_int_eq(pidlock_slots_acquire(s, 0), -EWOULDBLOCK);
	ck_assert_int_eq(read(ifd, buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, EAGAIN);
	close(ifd);
	for (int i = 0; i < 2; i++)
		let_go(&c[i]);
	tu_tell(&f, '\n');
	ck_assert_int_eq(tu_join(&f), 0);
	pidlock_slots_free(s);
}
END_TEST

/* Rule "a slot's busy answer is final": a slot that looks free (no
 * kernel lock; pidlock_inspect() finds a crashed holder's record) but
 * whose try says busy is not taken.  Here a read lease makes the try's
 * open for writing refuse (doc/protocol.md, section 8: a lease is busy). */
START_TEST(busy_answer_is_not_a_hold)
{
	struct pidlock_slots *s = new_slots(1, 0);
	struct tu_child c;

	tu_write(slot_file(0), "pid=1\ntimestamp=1\nlock=flock,ofd\n");
	ck_assert_msg(tu_lease(&c, slot_file(0)), "no lease here: the rule "
		      "cannot be shown on this file system");
	ck_assert_int_eq(pidlock_slots_acquire(s, 0), -EWOULDBLOCK);
	ck_assert_int_eq(pidlock_slots_slot(s), -ENOLCK);
	tu_tell(&c, 'X');
	ck_assert_int_eq(tu_join(&c), 0);
	ck_assert_int_eq(pidlock_slots_acquire(s, 0), 0);
	pidlock_slots_free(s);
}
END_TEST

/* Rule "spread": an uncontended try takes slot pid mod n first, so
 * workers forked in a row do not all contend for slot 0. */
static int first_slot_fn(struct tu_child *c, void *arg)
{
	struct pidlock_slots *s;
	int k;

	(void)c;
	(void)arg;
	if (getpid() % 5 == 0)
		return 99;	/* slot 0 proves nothing: the parent tries again */
	if (pidlock_slots_new(&s, sem(), 5, 0) < 0)
		return 2;
	k = pidlock_slots_acquire(s, 0);
	pidlock_slots_free(s);
	return k == getpid() % 5 ? 0 : 3;
}

START_TEST(first_try_spreads_by_pid)
{
	struct tu_child c;
	int r;

	do {
		spawn(&c, first_slot_fn, NULL);
		r = tu_join(&c);
	} while (r == 99);
	ck_assert_int_eq(r, 0);
}
END_TEST

/* Both of 2 slots held (their numbers in k), and a waiter with no poll
 * to speak of (NO_POLL_MS), timed (blocking 0) or blocking, asleep. */
static void full_with_waiter(struct tu_child c[2], int k[2],
			     struct tu_child *wc, int blocking)
{
	static struct holder_arg a = { .n = 2, .timeout_ms = 0 };
	static struct holder_arg w = { .n = 2, .retry_ms = NO_POLL_MS };

	w.timeout_ms = blocking ? -1 : 30000;
	for (int i = 0; i < 2; i++)
		k[i] = hold(&c[i], &a);
	spawn(wc, holder_fn, &w);
	ck_assert_int_eq(tu_wait_signal(wc), 'W');
	tu_msleep(300);
}

/* Rule "a wait wakes when any slot frees": the waiter, timed (_i 0) or
 * blocking (_i 1), gets the slot one holder releases. */
START_TEST(waiter_wakes_on_any_release)
{
	struct tu_child c[2], wc;
	int k[2];

	full_with_waiter(c, k, &wc, _i);
	let_go(&c[1]);
	ck_assert_int_eq(tu_wait_signal(&wc) - '0', k[1]);
	let_go(&wc);
	let_go(&c[0]);
}
END_TEST

/* Rule "a crash frees a slot at once": a SIGKILLed holder's slot goes
 * to a waiter (woken by the close, not by a poll) and then to a try. */
START_TEST(sigkilled_holder_frees_slot)
{
	struct pidlock_slots *s = new_slots(2, 0);
	struct tu_child c[2], wc;
	int k[2], got;

	full_with_waiter(c, k, &wc, _i);
	tu_kill(&c[0]);
	got = (unsigned char)tu_wait_signal(&wc);
	ck_assert_msg(got - '0' == k[0], "the waiter said %d, not slot %d "
		      "(exit status %d)", got, k[0], got ? -1 : tu_join(&wc));
	tu_kill(&wc);
	/* Killed too: its slot is free for a try at once. */
	ck_assert_int_eq(pidlock_slots_acquire(s, 0), k[0]);
	ck_assert_int_eq(pidlock_slots_release(s), 0);
	let_go(&c[1]);
	pidlock_slots_free(s);
}
END_TEST

/* The CPU time a waiter child used, from its rusage once reaped. */
static long child_cpu_ms(pid_t pid)
{
	struct rusage ru;
	int st;

	ck_assert_int_eq(wait4(pid, &st, 0, &ru), pid);
	return ru.ru_utime.tv_sec * 1000L + ru.ru_utime.tv_usec / 1000 +
	       ru.ru_stime.tv_sec * 1000L + ru.ru_stime.tv_usec / 1000;
}

/* A waiter that blocks (timeout -1) on sem with n slots, polling every
 * 10 ms, until it is killed. */
static pid_t blocking_waiter(unsigned int n)
{
	pid_t pid;

	(void)tu_dir();
	pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct pidlock_slots *s;

		if (pidlock_slots_new(&s, sem(), n, 0) < 0)
			_exit(2);
		for (unsigned int k = 0; k < n; k++)
			(void)pidlock_set_retry_interval(pidlock_slots_lock(s, k),
						 SPIN_POLL_MS);
		_exit(pidlock_slots_acquire(s, -1) < 0 ? 4 : 5);
	}
	return pid;
}

/* Waits SPIN_WAIT_MS for one of 3 slots, polling every 10 ms, and
 * reports the CPU time the wait took on the pipe. */
static int timed_waiter(struct tu_child *c, void *arg)
{
	struct pidlock_slots *s;
	int32_t cpu;
	long before;
	int r;

	(void)arg;
	if (pidlock_slots_new(&s, sem(), 3, 0) < 0)
		return 2;
	for (unsigned int k = 0; k < 3; k++)
		(void)pidlock_set_retry_interval(pidlock_slots_lock(s, k),
						 SPIN_POLL_MS);
	tu_signal(c, 'W');
	before = tu_cpu_ms();
	r = pidlock_slots_acquire(s, SPIN_WAIT_MS);
	cpu = (int32_t)(tu_cpu_ms() - before);
	if (write(c->to_parent, &cpu, sizeof(cpu)) != sizeof(cpu))
		return 3;
	pidlock_slots_free(s);
	return r == -ETIMEDOUT ? 0 : 4;
}

/* Rows of /proc/locks: every kernel lock on the machine, which each
 * look of a waiter reads.  Other processes' locks make every poll dearer:
 * a 3 s wait here measured 10 ms of CPU with the list empty, 36 ms
 * beside 200 locks of another process, 60 ms beside 400, and over the
 * bound beside 700 (three test-rules at once, each with its list of 190
 * locks for long_lock_list_read_in_pieces). */
static int lock_rows(void)
{
	FILE *f = fopen("/proc/locks", "re");
	int rows = 0, ch;

	ck_assert_msg(f != NULL, "/proc/locks: %s", strerror(errno));
	while ((ch = getc(f)) != EOF)
		rows += ch == '\n';
	fclose(f);
	return rows;
}

/* The list is short enough for the bound to be a measure of the waits,
 * not of the machine: the rows a 3 s wait reads in 60 polls cost at most
 * some 40 ms of CPU. */
#define QUIET_ROWS 200
/* How long a measurement waits for others' long lists to go (a
 * test-rules case holds its list for up to 20 s), and how many are made
 * at most: some 50 s, within the cases' timeout (main()). */
#define QUIET_WAIT_MS 20000
#define SPIN_TRIES 2

/* Waits up to QUIET_WAIT_MS for QUIET_ROWS rows or fewer; the rows. */
static int quiet_lock_list(void)
{
	long deadline = tu_ms() + QUIET_WAIT_MS;
	int rows;

	while ((rows = lock_rows()) > QUIET_ROWS && tu_ms() < deadline)
		tu_msleep(100);
	return rows;
}

/* Two timed and two blocking waiters on sem (3 slots, all held): the
 * most CPU one of them burnt. */
static long spin_round(void)
{
	struct tu_child wc[2];
	pid_t bw[2];
	long worst = 0;

	for (int i = 0; i < 2; i++) {
		spawn(&wc[i], timed_waiter, NULL);
		bw[i] = blocking_waiter(3);
	}
	for (int i = 0; i < 2; i++) {
		int32_t cpu = -1;
		long bcpu;

		ck_assert_int_eq(tu_wait_signal(&wc[i]), 'W');
		ck_assert_int_eq(read(wc[i].from_child, &cpu, sizeof(cpu)),
				 sizeof(cpu));
		ck_assert_int_eq(tu_join(&wc[i]), 0);
		fprintf(stderr, "timed waiter %d: %d ms of CPU in %d ms\n", i,
			(int)cpu, SPIN_WAIT_MS);
		kill(bw[i], SIGKILL);
		bcpu = child_cpu_ms(bw[i]);
		fprintf(stderr, "blocking waiter %d: %ld ms of CPU\n", i, bcpu);
		worst = cpu > worst ? cpu : worst;
		worst = bcpu > worst ? bcpu : worst;
	}
	return worst;
}

/*
 * Rule "waits never spin": against every kind of holder a slot can
 * have (our kernel locks, a spec-only record, flock(1)), two timed and
 * two blocking waiters polling every SPIN_POLL_MS sleep: each burns less
 * than CPU_BOUND_MS in a SPIN_WAIT_MS wait, though the spec and flock(1)
 * slots have no fcntl lock and are tried (opened for writing) now and
 * then, which the other waiters' watches see.  Measured with the lock
 * list short (lock_rows()), before and after: another suite's list,
 * which lasts longer than a wait, would be there at one end or the
 * other.  A wait over the bound is measured again, once: a spin is over
 * it every time, a stall of a loaded machine not.
 */
START_TEST(no_spin_waiting_for_slots)
{
	struct holder_arg a = { .n = 3, .timeout_ms = 0 };
	struct tu_child c, f;

	tu_write_spec(slot_file(1), getpid(), 0, NULL);
	/* flock(1) holds slot 2 from here until told, however long the
	 * waits below take on a loaded machine. */
	tu_flock1_hold(&f, slot_file(2), false);
	ck_assert_int_eq(hold(&c, &a), 0);
	for (int try = 1;; try++) {
		int rows = quiet_lock_list(), after;
		long worst = spin_round();

		after = lock_rows();
		rows = after > rows ? after : rows;
		if (worst < CPU_BOUND_MS)
			break;
		ck_assert_msg(try < SPIN_TRIES,
			      "a wait burnt %ld ms of CPU (bound %d ms), with "
			      "%d rows in /proc/locks", worst, CPU_BOUND_MS,
			      rows);
		fprintf(stderr, "%ld ms of CPU with %d rows in /proc/locks "
			"(others' locks), over the bound: measured again\n",
			worst, rows);
	}
	let_go(&c);
	tu_tell(&f, '\n');
	ck_assert_int_eq(tu_join(&f), 0);
}
END_TEST

/*
 * Rule "no spinning", the memo: a slot that looked free but whose try
 * found it busy is not tried again until its file changes or the retry
 * interval is over.  Here an empty slot file within the try's grace,
 * open for writing elsewhere (rule C: maybe a spec-only writer between
 * its create and its write):
 * pidlock_inspect() finds it free (its own grace is shorter), the try
 * opens it for writing and says busy, and that close is an event the
 * waiter itself watches.  Tried on every round, the waiter would wake
 * itself at once, again and again.  Counted: the closes after writing
 * of the slot file during a 500 ms wait (retry interval 600 s): the
 * first try's, and no other.
 */
START_TEST(busy_slot_not_tried_again)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct pidlock_slots *s = new_slots(1, NO_POLL_MS);
	int ifd, writer, closes = 0;
	ssize_t n;

	ck_assert_int_eq(pidlock_set_grace(pidlock_slots_lock(s, 0), 10000), 0);
	tu_write(slot_file(0), "");
	tu_set_mtime_ago(slot_file(0), 2);
	writer = open(slot_file(0), O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(writer, 0);
	ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	ck_assert_int_ge(ifd, 0);
	/* The opens too: events that repeat the one before are merged. */
	ck_assert_int_ge(inotify_add_watch(ifd, slot_file(0), IN_OPEN |
					   IN_CLOSE_WRITE | IN_CLOSE_NOWRITE), 0);
	ck_assert_int_eq(pidlock_slots_acquire(s, 500), -ETIMEDOUT);
	while ((n = read(ifd, buf, sizeof(buf))) > 0) {
		for (char *e = buf; e < buf + n;) {
			const struct inotify_event *ev = (void *)e;

			closes += (ev->mask & IN_Q_OVERFLOW) ? 1000 :
				  !!(ev->mask & IN_CLOSE_WRITE);
			e += sizeof(*ev) + ev->len;
		}
	}
	close(ifd);
	ck_assert_int_eq(close(writer), 0);
	ck_assert_msg(closes == 1, "the busy slot was tried %d times", closes);
	pidlock_slots_free(s);
}
END_TEST

/* Rule "peers": a spec-only record and flock(1) on slot files keep
 * those slots busy, and the try changes neither file. */
START_TEST(spec_peer_and_flock1_respected)
{
	struct pidlock_slots *s = new_slots(2, 0);
	struct tu_child f;
	char *before;

	tu_write_spec(slot_file(0), getpid(), 0, NULL);
	/* flock(1) holds slot 1 from here until told. */
	tu_flock1_hold(&f, slot_file(1), false);
	before = tu_snapshot(tu_dir());
	ck_assert_int_eq(pidlock_slots_acquire(s, 0), -EWOULDBLOCK);
	ck_assert_int_eq(pidlock_slots_acquire(s, 300), -ETIMEDOUT);
	tu_assert_unchanged(tu_dir(), before, "a try of spec and flock(1) slots");
	/* flock(1) ends (its file stays, empty), told to while we wait:
	 * that slot is ours. */
	tu_tell_later(&f, 300, '\n');
	ck_assert_int_eq(pidlock_slots_acquire(s, 10000), 1);
	ck_assert_int_eq(tu_join(&f), 0);
	ck_assert_str_eq(tu_read(slot_file(0)), tu_read(slot_file(0)));
	pidlock_slots_free(s);
}
END_TEST

/* Bad slot paths: the slot after the one this process tries first is
 * unusable; the try reports it before taking any slot. */
static const struct bad_slot {
	const char *name;
	int error;
} bad_slots[] = {
	{ "symlink", -ELOOP },
	{ "directory", -EISDIR },
	{ "user's file", -EBADMSG },
	{ "fifo", -EINVAL },
};

START_TEST(bad_slot_path_refused)
{
	const struct bad_slot *b = &bad_slots[_i];
	unsigned int bad = ((unsigned int)getpid() + 1) % 3;
	struct pidlock_slots *s = new_slots(3, 0);
	char *p = slot_file(bad);
	char *before;

	if (_i == 0)
		ck_assert_int_eq(symlink("elsewhere", p), 0);
	else if (_i == 1)
		ck_assert_int_eq(mkdir(p, 0755), 0);
	else if (_i == 2)
		tu_write(p, "#!/bin/sh\necho my script\n");
	else
		ck_assert_int_eq(mkfifo(p, 0644), 0);
	before = tu_snapshot(tu_dir());
	ck_assert_msg(pidlock_slots_acquire(s, 0) == b->error, "%s", b->name);
	ck_assert_msg(pidlock_slots_acquire(s, 200) == b->error, "%s", b->name);
	ck_assert_msg(pidlock_slots_slot(s) == -ENOLCK, "%s", b->name);
	tu_assert_unchanged(tu_dir(), before, b->name);
	pidlock_slots_free(s);
}
END_TEST

/* Bad arguments: a clear code, and no handle. */
START_TEST(bad_arguments_refused)
{
	char longname[NAME_MAX + 1];
	struct pidlock_slots *s = (void *)1;

	ck_assert_int_eq(pidlock_slots_new(&s, sem(), 0, 0), -EINVAL);
	ck_assert_ptr_null(s);
	ck_assert_int_eq(pidlock_slots_new(&s, sem(), PIDLOCK_SLOTS_MAX + 1, 0),
			 -ERANGE);
	ck_assert_int_eq(pidlock_slots_new(&s, sem(), UINT_MAX, 0), -ERANGE);
	ck_assert_int_eq(pidlock_slots_new(&s, NULL, 2, 0), -EINVAL);
	ck_assert_int_eq(pidlock_slots_new(NULL, sem(), 2, 0), -EINVAL);
	ck_assert_int_eq(pidlock_slots_new(&s, sem(), 2, 1U << 30), -EINVAL);
	ck_assert_int_eq(pidlock_slots_new(&s, sem(), 2, PIDLOCK_SHARED), -EINVAL);
	ck_assert_int_eq(pidlock_slots_new(&s, tu_dir(), 2, 0), 0);
	pidlock_slots_free(s);
	/* A name that fits, whose slot names do not. */
	memset(longname, 'x', NAME_MAX - 1);
	longname[NAME_MAX - 1] = '\0';
	ck_assert_int_eq(pidlock_slots_new(&s, tu_path(longname), 10, 0),
			 -ENAMETOOLONG);
	ck_assert_int_eq(pidlock_slots_acquire(NULL, 0), -EINVAL);
	ck_assert_int_eq(pidlock_slots_release(NULL), -EINVAL);
	ck_assert_int_eq(pidlock_slots_slot(NULL), -EINVAL);
	ck_assert_ptr_null(pidlock_slots_lock(NULL, 0));
	ck_assert_int_eq(dir_entries(), 0);
}
END_TEST

/* The handle's life: slot, lock, release, and acquiring twice. */
START_TEST(handle_calls)
{
	struct pidlock_slots *s = new_slots(2, 0);
	int k;

	ck_assert_ptr_nonnull(pidlock_slots_lock(s, 1));
	ck_assert_ptr_null(pidlock_slots_lock(s, 2));
	ck_assert_str_eq(pidlock_path(pidlock_slots_lock(s, 1)), slot_file(1));
	ck_assert_int_eq(pidlock_slots_release(s), -ENOLCK);
	k = pidlock_slots_acquire(s, 0);
	ck_assert_int_eq(k, getpid() % 2);
	ck_assert_int_eq(pidlock_slots_slot(s), k);
	ck_assert_int_eq(pidlock_slots_acquire(s, 0), -EALREADY);
	ck_assert(tu_exists(slot_file((unsigned int)k)));
	ck_assert_int_eq(pidlock_slots_release(s), 0);
	ck_assert(!tu_exists(slot_file((unsigned int)k)));
	ck_assert_int_eq(pidlock_slots_slot(s), -ENOLCK);
	/* Released through the slot's own handle: the set knows. */
	k = pidlock_slots_acquire(s, 0);
	ck_assert_int_ge(k, 0);
	ck_assert_int_eq(pidlock_release(pidlock_slots_lock(s, (unsigned int)k)), 0);
	ck_assert_int_eq(pidlock_slots_slot(s), -ENOLCK);
	/* Freed while held: released. */
	k = pidlock_slots_acquire(s, 0);
	ck_assert_int_ge(k, 0);
	pidlock_slots_free(s);
	ck_assert_int_eq(dir_entries(), 0);
	pidlock_slots_free(NULL);
}
END_TEST

int main(void)
{
	const struct tu_case cases[] = {
		{ n_holders_distinct_slots, 1 },
		{ busy_try_creates_nothing, 1 },
		{ busy_answer_is_not_a_hold, 1 },
		{ first_try_spreads_by_pid, 1 },
		{ waiter_wakes_on_any_release, 2 },
		{ sigkilled_holder_frees_slot, 2 },
		{ no_spin_waiting_for_slots, 1 },
		{ busy_slot_not_tried_again, 1 },
		{ spec_peer_and_flock1_respected, 1 },
		{ bad_slot_path_refused,
		  (int)(sizeof(bad_slots) / sizeof(bad_slots[0])) },
		{ bad_arguments_refused, 1 },
		{ handle_calls, 1 },
		{ NULL, 0 },
	};

	/* A guard against a hang, not a bound on speed: room for
	 * no_spin_waiting_for_slots' waits for a short lock list. */
	tu_run_cases("slots", "slots", 120, cases);
}
