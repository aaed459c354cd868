/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The holder, from outside: pidlock_holder_pidfds() returns pidfds of
 * proven holders only, and pidlock_wait_free() sleeps until nobody
 * holds the lock, without taking it.  Real processes throughout.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pidlock.h"
#include "testutil.h"

#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

#define ROOM 8

struct holders {
	int rc;
	int pidfds[ROOM];
	pid_t pids[ROOM];
};

static struct holders holders_of(const char *p)
{
	struct holders h;

	memset(&h, 0, sizeof(h));
	h.rc = pidlock_holder_pidfds(p, h.pidfds, h.pids, ROOM);
	return h;
}

static void close_all(struct holders *h)
{
	for (int i = 0; i < h->rc && i < ROOM; i++)
		close(h->pidfds[i]);
}

/* The pidfd is its process's: signal 0 reaches it, and it does not
 * leak into an exec'd program. */
static void assert_pidfd_of(int pidfd)
{
	ck_assert_int_ge(pidfd, 0);
	ck_assert_int_eq(syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0), 0);
	ck_assert_int_eq(fcntl(pidfd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
}

static void end(pid_t pid)
{
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(tu_reap(pid), 128 + SIGKILL);
}

/* A library holder: its pidfd, its pid; the lock stays held. */
START_TEST(holder_of_kernel_lock)
{
	const char *p = tu_path("a.lock");
	struct tu_child c;
	struct holders h;

	tu_hold(&c, p, 0);
	h = holders_of(p);
	ck_assert_int_eq(h.rc, 1);
	ck_assert_int_eq(h.pids[0], c.pid);
	assert_pidfd_of(h.pidfds[0]);
	close_all(&h);
	tu_tell(&c, 'R');
	ck_assert_int_eq(tu_join(&c), 0);
	ck_assert_int_eq(holders_of(p).rc, -ESRCH);
}
END_TEST

/* Free, missing, and another program's data: nobody to name, and the
 * data is left as it was. */
START_TEST(free_and_foreign_files)
{
	const char *p = tu_path("a.lock");

	ck_assert_int_eq(holders_of(p).rc, -ESRCH);
	tu_write(p, "");
	ck_assert_int_eq(holders_of(p).rc, -ESRCH);
	tu_write(p, "precious=data\n");
	ck_assert_int_eq(holders_of(p).rc, -EBADMSG);
	ck_assert_str_eq(tu_read(p), "precious=data\n");
	ck_assert_int_eq(pidlock_holder_pidfds(p, NULL, NULL, 1), -EINVAL);
	ck_assert_int_eq(pidlock_holder_pidfds(tu_dir(), NULL, NULL, 0),
			 -EISDIR);
}
END_TEST

/*
 * A bare pid of a live process (a daemon's hand-written pidfile, a
 * dotlock) and a spec-only record: held, but by no kernel lock, so no
 * process can be proven; the innocent is never named.
 */
START_TEST(no_kernel_lock_not_proven)
{
	const char *p = tu_path("a.pid");
	pid_t pid = tu_live_pid();
	char buf[64];

	tu_msleep(20);	/* the file is written after the process started */
	snprintf(buf, sizeof(buf), "%d\n", (int)pid);
	tu_write(p, buf);
	ck_assert_int_eq(holders_of(p).rc, -ENOLCK);
	tu_write_spec(p, pid, 0, "spec");
	ck_assert_int_eq(holders_of(p).rc, -ENOLCK);
	end(pid);
}
END_TEST

/*
 * The record names a live process that holds nothing, and another one
 * holds the kernel lock (what a reused pid looks like after the holder
 * was replaced): the kernel's holder is returned, never the record's.
 */
START_TEST(record_pid_must_hold)
{
	const char *p = tu_path("a.lock");
	pid_t pid = tu_live_pid();
	struct tu_child c;
	struct holders h;
	char rec[128];

	tu_write(p, "");
	tu_flock1_hold(&c, p, false);
	snprintf(rec, sizeof(rec), "pid=%d\ntimestamp=%ld\nlock=flock\n",
		 (int)pid, (long)tu_now());
	tu_write(p, rec);
	h = holders_of(p);
	ck_assert_int_eq(h.rc, 1);
	ck_assert_int_ne(h.pids[0], pid);
	assert_pidfd_of(h.pidfds[0]);
	close_all(&h);
	tu_tell(&c, '\n');
	ck_assert_int_eq(tu_join(&c), 0);
	end(pid);
}
END_TEST

/* In a child that holds the lock: a forked worker, which shares the
 * lock's descriptor and waits until killed; its pid. */
static pid_t idle_worker(void)
{
	pid_t w = fork();

	TU_CHILD_CHECK(w >= 0);
	if (w == 0) {
		pause();
		_exit(0);
	}
	return w;
}

/* Forked workers share the holder's descriptor: the one the record
 * names is the holder. */
static int worker_fn(struct tu_child *c, void *arg)
{
	struct pidlock *l = arg;
	pid_t worker;

	TU_CHILD_CHECK(pidlock_acquire(l, -1) == 0);
	worker = idle_worker();
	tu_signal(c, 'L');
	(void)tu_wait_parent(c);
	(void)kill(worker, SIGKILL);
	(void)tu_reap(worker);
	TU_CHILD_CHECK(pidlock_release(l) == 0);
	pidlock_free(l);
	return 0;
}

START_TEST(forked_workers_record_names_one)
{
	const char *p = tu_path("a.lock");
	struct pidlock *l = tu_new(p, 0);
	struct tu_child c;
	struct holders h;

	tu_spawn(&c, worker_fn, l);
	pidlock_free(l);
	ck_assert_int_eq(tu_wait_signal(&c), 'L');
	h = holders_of(p);
	ck_assert_int_eq(h.rc, 1);
	ck_assert_int_eq(h.pids[0], c.pid);
	close_all(&h);
	tu_tell(&c, 'R');
	ck_assert_int_eq(tu_join(&c), 0);
}
END_TEST

/* The holder forked a worker and exited: the lock stays with the
 * worker, whom neither the record nor /proc/locks names.  Found all the
 * same, by asking every process. */
START_TEST(worker_left_holding_found)
{
	const char *p = tu_path("a.lock");
	struct holders h;
	int pfd[2];
	pid_t holder, worker = 0;

	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
	holder = fork();
	ck_assert_int_ge(holder, 0);
	if (holder == 0) {
		struct pidlock *l;
		pid_t w;

		TU_CHILD_CHECK(pidlock_new(&l, p, 0) == 0);
		TU_CHILD_CHECK(pidlock_acquire(l, -1) == 0);
		w = idle_worker();
		TU_CHILD_CHECK(write(pfd[1], &w, sizeof(w)) == sizeof(w));
		_exit(0);	/* the worker keeps the descriptor */
	}
	close(pfd[1]);
	ck_assert_int_eq(tu_reap(holder), 0);
	ck_assert_int_eq(read(pfd[0], &worker, sizeof(worker)), sizeof(worker));
	close(pfd[0]);
	h = holders_of(p);
	ck_assert_int_eq(h.rc, 1);
	ck_assert_int_eq(h.pids[0], worker);
	assert_pidfd_of(h.pidfds[0]);
	close_all(&h);
	ck_assert_int_eq(kill(worker, SIGKILL), 0);
	/* Not our child: wait_free sees the lock go with it. */
	ck_assert_int_eq(pidlock_wait_free(p, 20000), 0);
}
END_TEST

/* A shared lock: every holder; fewer slots than holders store what
 * fits and still count them all. */
START_TEST(shared_holders_all)
{
	const char *p = tu_path("a.lock");
	struct tu_child a, b;
	struct holders h;
	int pidfd = -1;
	pid_t pid = 0;

	tu_hold(&a, p, PIDLOCK_SHARED);
	tu_hold(&b, p, PIDLOCK_SHARED);
	h = holders_of(p);
	ck_assert_int_eq(h.rc, 2);
	ck_assert((h.pids[0] == a.pid && h.pids[1] == b.pid) ||
		  (h.pids[0] == b.pid && h.pids[1] == a.pid));
	close_all(&h);
	ck_assert_int_eq(pidlock_holder_pidfds(p, &pidfd, &pid, 1), 2);
	ck_assert(pid == a.pid || pid == b.pid);
	assert_pidfd_of(pidfd);
	close(pidfd);
	tu_tell(&a, 'R');
	tu_tell(&b, 'R');
	ck_assert_int_eq(tu_join(&a), 0);
	ck_assert_int_eq(tu_join(&b), 0);
}
END_TEST

/* From a child pid namespace, a holder outside is out of sight. */
START_TEST(hidden_holder_is_remote)
{
	const char *p = tu_path("a.lock");
	struct tu_child c;
	int pfd[2], rc = 0;
	pid_t pid;

	tu_hold(&c, p, 0);
	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		pid_t inner;

		if (unshare(CLONE_NEWPID | CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(77);
		inner = fork();
		if (inner != 0)
			_exit(inner < 0 ? 2 : tu_reap(inner));
		if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV |
			  MS_NOEXEC, NULL) < 0)
			_exit(77);
		rc = pidlock_holder_pidfds(p, NULL, NULL, 0);
		_exit(write(pfd[1], &rc, sizeof(rc)) == sizeof(rc) ? 0 : 2);
	}
	close(pfd[1]);
	if (tu_reap(pid) == 77) {
		fprintf(stderr, "hidden_holder_is_remote: no pid namespace "
			"here, not tested\n");
	} else {
		ck_assert_int_eq(read(pfd[0], &rc, sizeof(rc)), sizeof(rc));
		ck_assert_int_eq(rc, -EREMOTE);
	}
	close(pfd[0]);
	tu_tell(&c, 'R');
	ck_assert_int_eq(tu_join(&c), 0);
}
END_TEST

/* ---- pidlock_wait_free() ------------------------------------------- */

/* A waiter in a child: the result of pidlock_wait_free(p, ms). */
static int wait_free_fn(struct tu_child *c, void *arg)
{
	int r;

	tu_signal(c, 'W');
	r = pidlock_wait_free(arg, 20000);
	return r == 0 ? 0 : r == -ETIMEDOUT ? 10 : 11;
}

static void waiter(struct tu_child *w, char *p)
{
	tu_spawn(w, wait_free_fn, p);
	ck_assert_int_eq(tu_wait_signal(w), 'W');
	if (!tu_wait_in_poll(w->pid))
		tu_msleep(200);
}

START_TEST(wait_free_answers)
{
	const char *p = tu_path("a.lock");
	struct tu_child c;

	ck_assert_int_eq(pidlock_wait_free(p, 0), 0);
	ck_assert_int_eq(pidlock_wait_free(p, -1), 0);
	tu_hold(&c, p, 0);
	ck_assert_int_eq(pidlock_wait_free(p, 0), -EWOULDBLOCK);
	/* Asleep: held all along, nothing to wake for. */
	tu_wait_free_sleeps(p, 800, 100);
	tu_tell(&c, 'R');
	ck_assert_int_eq(tu_join(&c), 0);
	tu_write(p, "precious=data\n");
	ck_assert_int_eq(pidlock_wait_free(p, 0), -EBADMSG);
	ck_assert_int_eq(tu_count_inotify(), 0);
}
END_TEST

/*
 * Each way a holder lets go wakes the waiter, which takes nothing: our
 * release (unlink), a kept file's close, a SIGKILL, a spec-only holder's
 * unlink, a pidfile's daemon exiting.
 */
enum letgo { LG_RELEASE, LG_KEPT, LG_KILL, LG_SPEC, LG_PIDFILE, LG_N };

START_TEST(wait_free_wakes)
{
	char *p = tu_path("a.lock");
	enum letgo how = (enum letgo)_i;
	struct tu_child c, w;
	pid_t daemon = 0;
	char buf[64];

	if (how == LG_SPEC) {
		tu_write_spec(p, getpid(), 0, "spec");
	} else if (how == LG_PIDFILE) {
		daemon = tu_live_pid();
		tu_msleep(20);
		snprintf(buf, sizeof(buf), "%d\n", (int)daemon);
		tu_write(p, buf);
	} else {
		tu_hold(&c, p, how == LG_KEPT ? PIDLOCK_KEEP_FILE : 0);
	}
	waiter(&w, p);
	ck_assert_int_eq(pidlock_wait_free(p, 0), -EWOULDBLOCK);
	if (how == LG_SPEC)
		ck_assert_int_eq(unlink(p), 0);
	else if (how == LG_PIDFILE)
		end(daemon);
	else if (how == LG_KILL)
		tu_kill(&c);
	else
		tu_tell(&c, 'R');
	ck_assert_int_eq(tu_join(&w), 0);
	if (how == LG_RELEASE || how == LG_KEPT)
		ck_assert_int_eq(tu_join(&c), 0);
	/* The waiter took nothing: the file is as the holder left it. */
	if (how == LG_KEPT)
		ck_assert_ptr_nonnull(strstr(tu_read(p), "released="));
	else if (how == LG_RELEASE || how == LG_SPEC)
		ck_assert(!tu_exists(p));
}
END_TEST

/* Names come and go beside the held file (tu_churn_names()): the
 * waiter sleeps through them. */
START_TEST(wait_free_never_spins)
{
	const char *p = tu_path("a.lock");
	struct tu_child c;
	pid_t churn;

	tu_hold(&c, p, 0);
	churn = tu_churn_names();
	tu_wait_free_sleeps(p, 1000, 100);
	ck_assert_int_eq(tu_reap(churn), 0);
	tu_tell(&c, 'R');
	ck_assert_int_eq(tu_join(&c), 0);
}
END_TEST

int main(void)
{
	const struct tu_case cases[] = {
		{ holder_of_kernel_lock, 1 },
		{ free_and_foreign_files, 1 },
		{ no_kernel_lock_not_proven, 1 },
		{ record_pid_must_hold, 1 },
		{ forked_workers_record_names_one, 1 },
		{ worker_left_holding_found, 1 },
		{ shared_holders_all, 1 },
		{ hidden_holder_is_remote, 1 },
		{ wait_free_answers, 1 },
		{ wait_free_wakes, LG_N },
		{ wait_free_never_spins, 1 },
		{ NULL, 0 },
	};

	tu_run_cases("holder", "holder", 30, cases);
}
