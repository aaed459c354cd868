/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * When is the process a record names gone?  Only when its whole thread
 * group has exited (doc/protocol.md, "Judging a pid"): a daemon whose
 * main thread called pthread_exit(3) lives on in its other threads, and
 * a zombie, unreaped, is dead.  And the wait until free
 * (pidlock_wait_free(3)): it sleeps on a zombie's record, waits through
 * another process's lease, and a cancellation closes all it opened.
 * Real processes throughout.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pidlock.h"
#include "testutil.h"

/* The state letter of /proc/PID/stat: the leader thread's. */
static char stat_state(pid_t pid)
{
	char path[64], buf[512];
	const char *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return '?';
	return p[2];
}

/* Until /proc shows pid's leader as a zombie. */
static void await_zombie_leader(pid_t pid)
{
	for (int i = 0; i < 500 && stat_state(pid) != 'Z'; i++)
		tu_msleep(10);
	ck_assert_int_eq(stat_state(pid), 'Z');
}

/* ---- a daemon whose leader thread exited -------------------------- */

/* The daemon's worker: works until the test says 'R', then ends the
 * process. */
static void *worker(void *arg)
{
	struct tu_child *c = arg;

	(void)tu_wait_parent(c);
	_exit(0);
}

/* Writes its bare-pid pidfile, starts a worker, and ends its main
 * thread. */
static pid_t leaderless_daemon(struct tu_child *c, const char *p)
{
	pthread_t t;
	char buf[32];

	if (tu_fork(c) > 0)
		return c->pid;
	snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	tu_write(p, buf);
	TU_CHILD_CHECK(pthread_create(&t, NULL, worker, c) == 0);
	tu_signal(c, 'W');
	pthread_exit(NULL);
}

/* Rule C and every look-up: the daemon runs, its pidfile holds. */
START_TEST(leader_exit_still_holds)
{
	char *p = tu_path("daemon.pid");
	struct pidlock_info info;
	struct pidlock *lock;
	struct tu_child c;
	char *before;

	tu_msleep(20);
	(void)leaderless_daemon(&c, p);
	ck_assert_int_eq(tu_wait_signal(&c), 'W');
	await_zombie_leader(c.pid);
	before = tu_snapshot(p);

	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD_PIDFILE);
	ck_assert_int_eq(info.pid, c.pid);
	ck_assert_int_eq(info.pid_alive, 1);
	ck_assert_int_eq(pidlock_wait_free(p, 0), -EWOULDBLOCK);
	lock = tu_new(p, 0);
	ck_assert_int_eq(pidlock_acquire(lock, 0), -EWOULDBLOCK);
	pidlock_free(lock);
	/* Not taken, so not released: the daemon's pidfile is as it was. */
	tu_assert_unchanged(p, before, "a live daemon's pidfile");

	tu_tell(&c, 'R');
	ck_assert_int_eq(tu_join(&c), 0);
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_int_eq(info.pid_alive, 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_ABANDONED);
}
END_TEST

/* ---- a zombie's record -------------------------------------------- */

/* A spec tool: writes its record (age seconds old) and exits; its
 * parent, the test, does not reap it yet. */
static pid_t spec_zombie(const char *p, long age)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		tu_write_spec(p, getpid(), age, "spec");
		_exit(0);
	}
	await_zombie_leader(pid);
	return pid;
}

/* Rule B: a zombie's pid is dead.  Young, the record holds, and the
 * wait sleeps; stale, the lock is free at once. */
START_TEST(zombie_record_is_dead)
{
	char *p = tu_path("a.lock");
	struct pidlock_info info;
	pid_t z = spec_zombie(p, 0);
	long t0;

	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD_SPEC);
	ck_assert_int_eq(info.pid_alive, 0);
	tu_wait_free_sleeps(p, 1500, 150);
	ck_assert_int_eq(tu_reap(z), 0);

	z = spec_zombie(p, 4000);
	t0 = tu_ms();
	ck_assert_int_eq(pidlock_wait_free(p, 3000), 0);
	ck_assert_int_lt(tu_ms() - t0, 500);
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_STALE);
	ck_assert_int_eq(tu_reap(z), 0);
}
END_TEST

/* ---- without pidfds: /proc/PID/task --------------------------------- */

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* pidfd_open(2) answers ENOSYS from now on, as before Linux 5.3 or
 * under a container's seccomp filter. */
static bool no_pidfds(void)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(code) / sizeof(code[0]), code };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return false;
	return syscall(SYS_pidfd_open, getpid(), 0) < 0 && errno == ENOSYS;
}

/* The same verdicts where no pidfd can be had: the threads under
 * /proc/PID/task decide. */
START_TEST(judged_without_pidfds)
{
	char *d = tu_path("daemon.pid"), *z = tu_path("z.lock");
	struct pidlock_info info;
	struct tu_child c;
	pid_t zombie, judge;

	tu_msleep(20);
	(void)leaderless_daemon(&c, d);
	ck_assert_int_eq(tu_wait_signal(&c), 'W');
	await_zombie_leader(c.pid);
	zombie = spec_zombie(z, 4000);
	judge = fork();
	ck_assert_int_ge(judge, 0);
	if (judge == 0) {
		TU_CHILD_CHECK(no_pidfds());
		TU_CHILD_CHECK(pidlock_inspect(d, &info, 0) == 0);
		TU_CHILD_CHECK(info.state == PIDLOCK_STATE_HELD_PIDFILE);
		TU_CHILD_CHECK(info.pid_alive == 1);
		TU_CHILD_CHECK(pidlock_inspect(z, &info, 0) == 0);
		TU_CHILD_CHECK(info.pid_alive == 0);
		TU_CHILD_CHECK(info.state == PIDLOCK_STATE_STALE);
		_exit(0);
	}
	ck_assert_int_eq(tu_reap(judge), 0);
	ck_assert_int_eq(tu_reap(zombie), 0);
	tu_tell(&c, 'R');
	ck_assert_int_eq(tu_join(&c), 0);
}
END_TEST

/* ---- another process's lease --------------------------------------- */

static void ignore(int sig)
{
	(void)sig;
}

/* Holds a lease of `type` on p (as Samba does with kernel oplocks) and
 * does not let it go when broken, until 'R'. */
static int lease_fn(struct tu_child *c, void *arg)
{
	int type = *(int *)((void **)arg)[1];
	const char *p = ((void **)arg)[0];
	int fd = open(p, type == F_WRLCK ? O_RDWR : O_RDONLY);

	TU_CHILD_CHECK(signal(SIGIO, ignore) != SIG_ERR);
	TU_CHILD_CHECK(fd >= 0);
	TU_CHILD_CHECK(fcntl(fd, F_SETLEASE, type) == 0);
	tu_signal(c, 'L');
	(void)tu_wait_parent(c);
	TU_CHILD_CHECK(fcntl(fd, F_SETLEASE, F_UNLCK) == 0);
	return 0;
}

/* The wait goes on while somebody's lease keeps our open out: only a
 * timeout of 0 answers -EWOULDBLOCK. */
START_TEST(lease_does_not_end_wait)
{
	static int types[] = { F_RDLCK, F_WRLCK };
	char *p = tu_path("a.lock");
	void *arg[2] = { p, (void *)&types[_i] };
	struct tu_child c;
	long t0;

	tu_write_spec(p, getpid(), 0, "spec");
	tu_spawn(&c, lease_fn, arg);
	ck_assert_int_eq(tu_wait_signal(&c), 'L');
	t0 = tu_ms();
	ck_assert_int_eq(pidlock_wait_free(p, 1000), -ETIMEDOUT);
	ck_assert_int_ge(tu_ms() - t0, 900);
	ck_assert_int_eq(pidlock_wait_free(p, 0), -EWOULDBLOCK);
	tu_tell(&c, 'R');
	ck_assert_int_eq(tu_join(&c), 0);
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_int_eq(pidlock_wait_free(p, 0), 0);
}
END_TEST

/* ---- cancellation --------------------------------------------------- */

static void *wait_forever(void *arg)
{
	int r = pidlock_wait_free(arg, -1);

	return (void *)(long)r;
}

/* A cancelled wait closes its inotify instance, its descriptor of the
 * file and the holder's pidfd. */
START_TEST(cancelled_wait_closes_all)
{
	char *p = tu_path("a.lock");
	pid_t holder = tu_live_pid();	/* the wait keeps its pidfd */
	int fds0 = tu_count_fds();
	void *ret = NULL;
	pthread_t t;

	tu_write_spec(p, holder, 0, "spec");
	ck_assert_int_eq(pthread_create(&t, NULL, wait_forever, p), 0);
	tu_msleep(300);
	ck_assert_int_gt(tu_count_fds(), fds0);	/* it did open them */
	ck_assert_int_eq(pthread_cancel(t), 0);
	ck_assert_int_eq(pthread_join(t, &ret), 0);
	ck_assert_ptr_eq(ret, PTHREAD_CANCELED);
	ck_assert_int_eq(tu_count_fds(), fds0);
	ck_assert_int_eq(tu_count_inotify(), 0);
	ck_assert_int_eq(kill(holder, SIGKILL), 0);
	ck_assert_int_eq(tu_reap(holder), 128 + SIGKILL);
}
END_TEST

/*
 * A cancellation pending as the call begins acts at its first
 * cancellation point, inside it (an open(2) of /proc or of the file),
 * unless the call runs to its end: then at the thread's own
 * pthread_testcancel(), where the handler closes the pidfds it got.
 */
struct look {
	const char *path;
	int pidfds[8];
	int n;
};

static void close_got(void *arg)
{
	struct look *l = arg;

	for (int i = 0; i < l->n; i++)
		(void)close(l->pidfds[i]);
}

/* pthread_cleanup_push()'s expansion makes its ';' an empty statement
 * (clang -Weverything). */
#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wextra-semi-stmt"
#endif
static void *look_cancelled(void *arg)
{
	struct look *l = arg;
	struct pidlock_info info;
	pid_t pids[8];
	int old, r;

	l->n = 0;
	pthread_cleanup_push(close_got, l);
	(void)pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	(void)pthread_cancel(pthread_self());
	(void)pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
	(void)pidlock_inspect(l->path, &info, 0);
	r = pidlock_holder_pidfds(l->path, l->pidfds, pids, 8);
	l->n = r > 0 ? r : 0;
	pthread_testcancel();
	pthread_cleanup_pop(1);
	return NULL;
}
#ifdef __clang__
#pragma clang diagnostic pop
#endif

START_TEST(cancelled_looks_close_all)
{
	struct look l = { .path = tu_path("h.lock") };
	struct tu_child holder;
	void *ret = NULL;
	pthread_t t;
	int fds0;

	tu_hold(&holder, l.path, 0);
	fds0 = tu_count_fds();
	ck_assert_int_eq(pthread_create(&t, NULL, look_cancelled, &l), 0);
	ck_assert_int_eq(pthread_join(t, &ret), 0);
	ck_assert_ptr_eq(ret, PTHREAD_CANCELED);
	/* The calls ran to their end: the holder's pidfd was handed out,
	 * and closed by the handler; nothing else stayed open. */
	ck_assert_int_eq(l.n, 1);
	ck_assert_int_eq(tu_count_fds(), fds0);
	tu_kill(&holder);
}
END_TEST

int main(void)
{
	const struct tu_case cases[] = {
		{ leader_exit_still_holds, 1 },
		{ zombie_record_is_dead, 1 },
		{ judged_without_pidfds, 1 },
		{ lease_does_not_end_wait, 2 },
		{ cancelled_wait_closes_all, 1 },
		{ cancelled_looks_close_all, 1 },
		{ NULL, 0 },
	};

	tu_run_cases("pids", "pids", 30, cases);
}
