/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon layer and the pidfile(3) layer, with real processes: every
 * hand-over below is a real fork(2), every holder a real process.
 */
#include "config.h"	/* _GNU_SOURCE, HAVE_LIBBSD */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pidlock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_LIBBSD
#include <bsd/libutil.h>
#endif

#include "../testutil.h"

static char *dir;	/* per test, inside the test case's tu_base() */
static char path[PATH_MAX];

static void setup(void)
{
	dir = tu_mkdtemp(tu_base(), "t");
	tu_fmt(path, sizeof(path), "%s/d.pid", dir);
	umask(0);
}

static void teardown(void)
{
	tu_rmtree(dir);
	free(dir);
}

/* ---- helpers ------------------------------------------------------------ */

/* The bare first line, as start-stop-daemon and pgrep -F read it. */
static long first_pid(const char *p)
{
	const char *buf = tu_read(p);

	return *buf ? strtol(buf, NULL, 10) : -1;
}

static long key_value(const char *p, const char *key)
{
	const char *s;
	size_t n = strlen(key);

	for (s = tu_read(p); *s; s = strchr(s, '\n'), s = s ? s + 1 : "")
		if (strncmp(s, key, n) == 0 && s[n] == '=')
			return strtol(s + n + 1, NULL, 10);
	return -1;
}

/* Bounded waits; never a measure of speed. */
static int wait_key_change(const char *key, long old, long *now)
{
	for (int i = 0; i < 250; i++) {
		*now = key_value(path, key);
		if (*now != old)
			return 1;
		tu_msleep(20);
	}
	return 0;
}

static int wait_mtime_change(int64_t old)
{
	for (int i = 0; i < 250; i++) {
		if (tu_mtime_ns(path) != old)
			return 1;
		tu_msleep(10);
	}
	return 0;
}

/* A child holding the lock with pidlock_daemon_open until told (or the
 * parent is gone). */
static void spawn_holder(struct tu_child *c)
{
	if (tu_fork(c) == 0) {
		struct pidlock *lock;

		TU_CHILD_CHECK(pidlock_daemon_open(&lock, path, 0, 0, NULL) == 0);
		tu_signal(c, 'r');
		(void)tu_wait_parent(c);
		pidlock_release(lock);
		pidlock_free(lock);
		_exit(0);
	}
	ck_assert_int_eq(tu_wait_signal(c), 'r');
}

/* The daemonized child of the pidfile(3) flow: in the child, writes its
 * pid, says 'w', waits for the parent's 'c' and returns true; in the
 * parent, returns false once the pid is written. */
static bool forked_writer(struct tu_child *c, struct pidlock_pidfh *pfh)
{
	if (tu_fork(c) != 0) {
		ck_assert_int_eq(tu_wait_signal(c), 'w');
		return false;
	}
	TU_CHILD_CHECK(pidlock_pidfile_write(pfh) == 0);
	TU_CHILD_CHECK(first_pid(path) == getpid());
	tu_signal(c, 'w');
	TU_CHILD_CHECK(tu_wait_parent(c) == 'c');
	return true;
}

/* Somebody deletes the file at path and puts another there. */
static void replace_file(const char *content)
{
	ck_assert_int_eq(unlink(path), 0);
	tu_write_file(path, content, strlen(content), 0644);
}

/* ---- pidlock_daemon_open --------------------------------------------- */

START_TEST(open_writes_classic_record)
{
	struct pidlock *lock;
	const char *buf;
	char want[64];

	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, NULL), 0);
	ck_assert_int_eq(tu_mode(path), 0644);
	buf = tu_read(path);
	snprintf(want, sizeof(want), "%d\npid=%d\ntimestamp=", getpid(),
		 getpid());
	ck_assert_msg(strncmp(buf, want, strlen(want)) == 0, "content: %s", buf);
	ck_assert_ptr_nonnull(strstr(buf, "\nlock=flock,ofd\n"));
	ck_assert_int_eq(pidlock_release(lock), 0);
	ck_assert_int_eq(access(path, F_OK), -1);
	pidlock_free(lock);
}
END_TEST

START_TEST(open_mode)
{
	struct pidlock *lock = (struct pidlock *)1;

	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0666, NULL),
			 -EINVAL);
	ck_assert_ptr_null(lock);
	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0755, NULL),
			 -EINVAL);
	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 04644, NULL),
			 -EINVAL);
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0640, NULL), 0);
	ck_assert_int_eq(tu_mode(path), 0640);
	pidlock_free(lock);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

START_TEST(open_bad_args)
{
	struct pidlock *lock;

	ck_assert_int_eq(pidlock_daemon_open(NULL, path, 0, 0, NULL), -EINVAL);
	ck_assert_int_eq(pidlock_daemon_open(&lock, "", 0, 0, NULL), -EINVAL);
	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 1U << 30, 0, NULL),
			 -EINVAL);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

START_TEST(open_busy_reports_holder)
{
	struct pidlock *lock = (struct pidlock *)1;
	pid_t holder = 0;
	struct tu_child c;

	spawn_holder(&c);
	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, &holder),
			 -EEXIST);
	ck_assert_ptr_null(lock);
	ck_assert_int_eq(holder, c.pid);
	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, NULL), -EEXIST);
	ck_assert_int_eq(first_pid(path), c.pid);
	tu_tell(&c, 'q');
	ck_assert_int_eq(tu_join(&c), 0);
	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, &holder), 0);
	pidlock_free(lock);
}
END_TEST

/* A holder's record written in another pid namespace (its pidns= line
 * not ours: a container's daemon seen from the host) names a number of
 * that namespace: the caller, which may kill(2) what it gets, gets -1. */
START_TEST(open_busy_other_pidns_holder_unknown)
{
	struct pidlock *lock = (struct pidlock *)1;
	pid_t holder = 0;
	struct tu_child c;
	char rec[1024];
	char *ns;

	if (!tu_pidns()[0])
		return;
	spawn_holder(&c);
	snprintf(rec, sizeof(rec), "%s", tu_read(path));
	ns = strstr(rec, "\npidns=");
	ck_assert_ptr_nonnull(ns);
	snprintf(ns, sizeof(rec) - (size_t)(ns - rec), "\npidns=%llu\n",
		 strtoull(tu_pidns(), NULL, 10) + 1);
	tu_write(path, rec);
	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, &holder),
			 -EEXIST);
	ck_assert_int_eq(holder, -1);
	tu_tell(&c, 'q');
	ck_assert_int_eq(tu_join(&c), 0);
}
END_TEST

/* The case pidlock exists for: a leftover naming a live, innocent pid
 * (here pid 1) is no reason to refuse to start. */
START_TEST(open_takes_over_leftover)
{
	struct timespec old[2] = { { 0, UTIME_OMIT }, { 1, 0 } };
	struct pidlock *lock;
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "1\n", 2), 2);
	ck_assert_int_eq(futimens(fd, old), 0);
	close(fd);
	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, NULL), 0);
	ck_assert_int_eq(first_pid(path), getpid());
	pidlock_free(lock);
}
END_TEST

/* /var/run is a symlink to /run on most systems. */
START_TEST(open_via_symlinked_dir)
{
	char real[128], link[128], file[160];
	struct pidlock *lock;

	snprintf(real, sizeof(real), "%s/real", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(file, sizeof(file), "%s/d.pid", link);
	ck_assert_int_eq(mkdir(real, 0755), 0);
	ck_assert_int_eq(symlink("real", link), 0);
	ck_assert_int_eq(pidlock_daemon_open(&lock, file, 0, 0, NULL), 0);
	ck_assert_int_eq(first_pid(file), getpid());
	pidlock_free(lock);
	ck_assert_int_eq(access(file, F_OK), -1);
}
END_TEST

START_TEST(open_default_path)
{
	char def[PATH_MAX];
	struct pidlock *lock;
	int r;

	snprintf(def, sizeof(def), "/run/%s.pid", program_invocation_short_name);
	r = pidlock_daemon_open(&lock, NULL, 0, 0, NULL);
	if (geteuid() != 0) {
		ck_assert_int_eq(r, -EACCES);
		return;
	}
	ck_assert_int_eq(r, 0);
	ck_assert_str_eq(pidlock_path(lock), def);
	ck_assert_int_eq(first_pid(def), getpid());
	pidlock_free(lock);
	ck_assert_int_eq(access(def, F_OK), -1);
}
END_TEST

#ifdef HAVE_LIBBSD
/* libbsd's pidfile_open() locks an empty file; the pid comes later. */
START_TEST(open_busy_libbsd_holder)
{
	struct pidlock *lock;
	pid_t holder = 0;
	struct tu_child c;

	if (tu_fork(&c) == 0) {
		struct pidfh *pfh = pidfile_open(path, 0644, NULL);

		TU_CHILD_CHECK(pfh != NULL);
		tu_signal(&c, 'o');
		TU_CHILD_CHECK(tu_wait_parent(&c) == 'w');
		TU_CHILD_CHECK(pidfile_write(pfh) == 0);
		tu_signal(&c, 'w');
		(void)tu_wait_parent(&c);
		pidfile_remove(pfh);
		_exit(0);
	}
	ck_assert_int_eq(tu_wait_signal(&c), 'o');
	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, &holder),
			 -EEXIST);
	ck_assert_int_eq(holder, -1);
	tu_tell(&c, 'w');
	ck_assert_int_eq(tu_wait_signal(&c), 'w');
	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, &holder),
			 -EEXIST);
	ck_assert_int_eq(holder, c.pid);
	tu_tell(&c, 'q');
	ck_assert_int_eq(tu_join(&c), 0);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST
#endif

/* ---- the hand-over: fork, rebind, parent closes ------------------------ */

/* The three ways the parent lets go: the rows of the rebind_handover
 * loop test. */
enum { PARENT_CLOSE, PARENT_FREE, PARENT_CLOSE_EARLY };

/* The child's side: rebind (after the parent closed, for
 * PARENT_CLOSE_EARLY), tell, then own and release the file. */
static void __attribute__((noreturn))
handover_child(struct tu_child *c, struct pidlock *lock, int how)
{
	if (how == PARENT_CLOSE_EARLY)
		TU_CHILD_CHECK(tu_wait_parent(c) == 'c');
	TU_CHILD_CHECK(pidlock_daemon_rebind(lock) == 0);
	TU_CHILD_CHECK(first_pid(path) == getpid());
	TU_CHILD_CHECK(key_value(path, "pid") == getpid());
	tu_signal(c, 'b');
	if (how != PARENT_CLOSE_EARLY)
		TU_CHILD_CHECK(tu_wait_parent(c) == 'c');
	TU_CHILD_CHECK(first_pid(path) == getpid());
	TU_CHILD_CHECK(pidlock_verify(lock) == 0);
	TU_CHILD_CHECK(pidlock_release(lock) == 0);
	TU_CHILD_CHECK(access(path, F_OK) == -1);
	_exit(0);
}

/*
 * The parent holds; the child rebinds and tells; the parent lets go in
 * one of three ways; none may unlink the child's file.  The child then
 * checks the file and releases it, which unlinks.
 */
START_TEST(rebind_handover)
{
	const int how = _i;
	struct pidlock *lock;
	struct tu_child c;

	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, NULL), 0);
	if (tu_fork(&c) == 0)
		handover_child(&c, lock, how);
	if (how == PARENT_CLOSE_EARLY) {
		ck_assert_int_eq(pidlock_close(lock), 0);
		ck_assert_int_eq(first_pid(path), getpid());
		tu_tell(&c, 'c');
		ck_assert_int_eq(tu_wait_signal(&c), 'b');
	} else {
		ck_assert_int_eq(tu_wait_signal(&c), 'b');
		if (how == PARENT_CLOSE)
			ck_assert_int_eq(pidlock_close(lock), 0);
		else
			pidlock_free(lock);	/* releases: must not unlink */
		ck_assert_int_eq(first_pid(path), c.pid);
		tu_tell(&c, 'c');
	}
	ck_assert_int_eq(tu_join(&c), 0);
	ck_assert_int_eq(access(path, F_OK), -1);
	if (how != PARENT_FREE)
		pidlock_free(lock);
}
END_TEST

/* The wrong order: the parent releases (and unlinks) first.  The child
 * must learn that it holds nothing. */
START_TEST(rebind_after_parent_release)
{
	struct pidlock *lock;
	struct tu_child c;

	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, NULL), 0);
	if (tu_fork(&c) == 0) {
		TU_CHILD_CHECK(tu_wait_parent(&c) == 'g');
		TU_CHILD_CHECK(pidlock_daemon_rebind(lock) == -ESTALE);
		_exit(0);
	}
	ck_assert_int_eq(pidlock_release(lock), 0);
	ck_assert_int_eq(access(path, F_OK), -1);
	tu_tell(&c, 'g');
	ck_assert_int_eq(tu_join(&c), 0);
	pidlock_free(lock);
}
END_TEST

START_TEST(rebind_bad_args)
{
	struct pidlock *lock;

	ck_assert_int_eq(pidlock_daemon_rebind(NULL), -EINVAL);
	ck_assert_int_eq(pidlock_new(&lock, path, 0), 0);
	ck_assert_int_eq(pidlock_daemon_rebind(lock), -ENOLCK);
	pidlock_free(lock);
}
END_TEST

/* ---- pidfile(3) --------------------------------------------------------- */

START_TEST(pidfile_null)
{
	TU_ASSERT_ERRNO(pidlock_pidfile_write(NULL), -1, EINVAL);
	TU_ASSERT_ERRNO(pidlock_pidfile_close(NULL), -1, EINVAL);
	TU_ASSERT_ERRNO(pidlock_pidfile_remove(NULL), -1, EINVAL);
	TU_ASSERT_ERRNO(pidlock_pidfile_fileno(NULL), -1, EINVAL);
	TU_ASSERT_ERRNO(pidlock_pidfile_handle(NULL) == NULL, 1, EINVAL);
}
END_TEST

START_TEST(pidfile_busy)
{
	pid_t other = 0;
	struct tu_child c;

	spawn_holder(&c);
	TU_ASSERT_ERRNO(pidlock_pidfile_open(path, 0644, &other) == NULL, 1,
			EEXIST);
	ck_assert_int_eq(other, c.pid);
	TU_ASSERT_ERRNO(pidlock_pidfile_open(path, 0644, NULL) == NULL, 1,
			EEXIST);
	tu_tell(&c, 'q');
	ck_assert_int_eq(tu_join(&c), 0);
}
END_TEST

START_TEST(pidfile_modes)
{
	static const mode_t in[] = { 0, 0600, 0644, 0666 };
	static const int out[] = { 0644, 0600, 0644, 0664 };

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct pidlock_pidfh *pfh = pidlock_pidfile_open(path, in[i], NULL);

		ck_assert_ptr_nonnull(pfh);
		ck_assert_int_eq(tu_mode(path), out[i]);
		ck_assert_int_eq(pidlock_pidfile_remove(pfh), 0);
		ck_assert_int_eq(access(path, F_OK), -1);
	}
}
END_TEST

START_TEST(pidfile_default_path)
{
	char def[PATH_MAX];
	struct pidlock_pidfh *pfh;

	snprintf(def, sizeof(def), "/var/run/%s.pid",
		 program_invocation_short_name);
	if (geteuid() != 0) {
		TU_ASSERT_ERRNO(pidlock_pidfile_open(NULL, 0, NULL) == NULL, 1,
				EACCES);
		return;
	}
	pfh = pidlock_pidfile_open(NULL, 0, NULL);
	ck_assert_ptr_nonnull(pfh);
	ck_assert_str_eq(pidlock_path(pidlock_pidfile_handle(pfh)), def);
	ck_assert_int_eq(first_pid(def), getpid());
	ck_assert_int_eq(pidlock_pidfile_remove(pfh), 0);
	ck_assert_int_eq(access(def, F_OK), -1);
}
END_TEST

/* The daemon's side: a worker forked by it must not take the daemon's
 * file with it; the daemon itself removes it. */
static void __attribute__((noreturn))
daemon_removes(struct pidlock_pidfh *pfh)
{
	pid_t worker = fork();

	TU_CHILD_CHECK(worker >= 0);
	if (worker == 0) {
		errno = 0;
		TU_CHILD_CHECK(pidlock_pidfile_remove(pfh) == -1);
		TU_CHILD_CHECK(errno == EINVAL);
		_exit(0);
	}
	TU_CHILD_CHECK(tu_reap(worker) == 0);
	TU_CHILD_CHECK(first_pid(path) == getpid());
	TU_CHILD_CHECK(pidlock_pidfile_fileno(pfh) >= 0);
	TU_CHILD_CHECK(pidlock_pidfile_remove(pfh) == 0);
	TU_CHILD_CHECK(access(path, F_OK) == -1);
	_exit(0);
}

/*
 * The manual's flow: open, daemonize, write in the child.  The parent
 * then lets go: row 0, it only closes, as the manual says; row 1, it
 * tries pidfile_remove(), which is refused.  Either way the child's
 * file stays, and the daemon (and not its worker) removes it.
 */
START_TEST(pidfile_fork_write)
{
	struct pidlock_pidfh *pfh = pidlock_pidfile_open(path, 0644, NULL);
	struct tu_child c;

	ck_assert_ptr_nonnull(pfh);
	ck_assert_int_eq(first_pid(path), getpid());
	if (forked_writer(&c, pfh))
		daemon_removes(pfh);
	if (_i == 0)
		ck_assert_int_eq(pidlock_pidfile_close(pfh), 0);
	else
		TU_ASSERT_ERRNO(pidlock_pidfile_remove(pfh), -1, EINVAL);
	ck_assert_int_eq(first_pid(path), c.pid);
	tu_tell(&c, 'c');
	ck_assert_int_eq(tu_join(&c), 0);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

START_TEST(pidfile_fileno_locks)
{
	struct pidlock_pidfh *pfh = pidlock_pidfile_open(path, 0644, NULL);
	int fd, other;

	ck_assert_ptr_nonnull(pfh);
	fd = pidlock_pidfile_fileno(pfh);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fd, pidlock_fd(pidlock_pidfile_handle(pfh)));
	ck_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	/* What a libbsd or flock(1) peer would try. */
	other = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(other, 0);
	ck_assert_int_eq(flock(other, LOCK_EX | LOCK_NB), -1);
	ck_assert_int_eq(errno, EWOULDBLOCK);
	close(other);
	ck_assert_int_eq(pidlock_pidfile_close(pfh), 0);
	/* close keeps the file: only remove deletes it. */
	ck_assert_int_eq(first_pid(path), getpid());
}
END_TEST

/*
 * Somebody deletes the pidfile and another file appears at the path:
 * write gives up (after which the handle is spent), remove refuses,
 * and neither touches the newcomer.  Row 0 writes first, row 1 goes
 * straight to remove.
 */
static const char *const newcomers[] = { "somebody else\n", "7\n" };

START_TEST(pidfile_lost)
{
	struct pidlock_pidfh *pfh = pidlock_pidfile_open(path, 0644, NULL);

	ck_assert_ptr_nonnull(pfh);
	replace_file(newcomers[_i]);
	if (_i == 0) {
		TU_ASSERT_ERRNO(pidlock_pidfile_write(pfh), -1, ESTALE);
		TU_ASSERT_ERRNO(pidlock_pidfile_fileno(pfh), -1, EINVAL);
		TU_ASSERT_ERRNO(pidlock_pidfile_remove(pfh), -1, EINVAL);
	} else {
		TU_ASSERT_ERRNO(pidlock_pidfile_remove(pfh), -1, ESTALE);
	}
	ck_assert_str_eq(tu_read(path), newcomers[_i]);
}
END_TEST

/* A daemon killed without pidfile_remove(): the next open succeeds at
 * once (no waiting, no stale-file heuristics). */
START_TEST(pidfile_after_kill)
{
	struct pidlock_pidfh *pfh;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		pfh = pidlock_pidfile_open(path, 0644, NULL);
		TU_CHILD_CHECK(pfh != NULL);
		TU_CHILD_CHECK(pidlock_pidfile_write(pfh) == 0);
		(void)kill(getpid(), SIGKILL);
		_exit(3);
	}
	ck_assert_int_eq(tu_reap(pid), 128 + SIGKILL);
	ck_assert_int_eq(first_pid(path), pid);
	pfh = pidlock_pidfile_open(path, 0644, NULL);
	ck_assert_ptr_nonnull(pfh);
	ck_assert_int_eq(first_pid(path), getpid());
	ck_assert_int_eq(pidlock_pidfile_remove(pfh), 0);
}
END_TEST

/* ---- the background refresher ------------------------------------------ */

START_TEST(refresher_bad_args)
{
	struct pidlock_refresher *ref = (struct pidlock_refresher *)1;
	struct pidlock *lock;

	ck_assert_int_eq(pidlock_daemon_refresher_start(NULL, NULL, 10),
			 -EINVAL);
	ck_assert_int_eq(pidlock_daemon_refresher_start(&ref, NULL, 10),
			 -EINVAL);
	ck_assert_ptr_null(ref);
	ck_assert_int_eq(pidlock_new(&lock, path, 0), 0);
	ck_assert_int_eq(pidlock_daemon_refresher_start(&ref, lock, 10),
			 -ENOLCK);
	ck_assert_int_eq(pidlock_acquire(lock, 0), 0);
	ck_assert_int_eq(pidlock_daemon_refresher_start(&ref, lock, 0),
			 -EINVAL);
	ck_assert_int_eq(pidlock_daemon_refresher_status(NULL), -EINVAL);
	ck_assert_int_eq(pidlock_daemon_refresher_stop(NULL), -EINVAL);
	pidlock_free(lock);
}
END_TEST

START_TEST(refresher_keeps_fresh)
{
	struct pidlock_refresher *ref;
	struct pidlock *lock;
	long t0, t1;
	int64_t m;

	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, NULL), 0);
	t0 = key_value(path, "timestamp");
	ck_assert_int_gt(t0, 0);
	ck_assert_int_eq(pidlock_daemon_refresher_start(&ref, lock, 50), 0);
	ck_assert_msg(wait_key_change("timestamp", t0, &t1),
		      "timestamp stuck at %ld", t0);
	ck_assert_int_gt(t1, t0);
	ck_assert_int_eq(first_pid(path), getpid());
	ck_assert_int_eq(key_value(path, "pid"), getpid());
	ck_assert_int_eq(pidlock_daemon_refresher_status(ref), 0);
	ck_assert_int_eq(pidlock_daemon_refresher_stop(ref), 0);
	/* Stopped means stopped: six intervals without a write. */
	m = tu_mtime_ns(path);
	tu_msleep(300);
	ck_assert(tu_mtime_ns(path) == m);
	ck_assert_int_eq(pidlock_release(lock), 0);
	pidlock_free(lock);
}
END_TEST

/* SigBlk of /proc/self/task/TID/status: the thread's blocked signals. */
static unsigned long long sigblk(pid_t tid)
{
	char p[64];
	unsigned long long mask = 0;

	snprintf(p, sizeof(p), "/proc/self/task/%d/status", (int)tid);
	ck_assert_int_eq(sscanf(tu_status_value(p, "SigBlk"), "%llx", &mask),
			 1);
	return mask;
}

/* The one thread of this process other than the caller. */
static pid_t other_thread(void)
{
	pid_t tid = 0;
	struct dirent *de;
	DIR *d = opendir("/proc/self/task");

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		if (atoi(de->d_name) > 0 && atoi(de->d_name) != getpid()) {
			ck_assert_int_eq(tid, 0);
			tid = atoi(de->d_name);
		}
	closedir(d);
	return tid;
}

#define SIGBIT(s) (1ULL << ((s) - 1))

/* The thread blocks every signal, so signals sent to the daemon reach
 * the daemon's own threads; the caller's mask is left as it was. */
START_TEST(refresher_blocks_signals)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGUSR1,
				    SIGCHLD, SIGALRM, SIGPIPE };
	struct pidlock_refresher *ref;
	struct pidlock *lock;
	unsigned long long mine, its;
	sigset_t none;
	pid_t tid;

	sigemptyset(&none);
	ck_assert_int_eq(sigprocmask(SIG_SETMASK, &none, NULL), 0);
	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, NULL), 0);
	ck_assert_int_eq(other_thread(), 0);
	ck_assert_int_eq(pidlock_daemon_refresher_start(&ref, lock, 1000), 0);
	tid = other_thread();
	ck_assert_int_gt(tid, 0);
	mine = sigblk(getpid());
	its = sigblk(tid);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		ck_assert_msg(its & SIGBIT(sigs[i]),
			      "thread does not block signal %d", sigs[i]);
		ck_assert_msg(!(mine & SIGBIT(sigs[i])),
			      "caller now blocks signal %d", sigs[i]);
	}
	ck_assert_int_eq(pidlock_daemon_refresher_stop(ref), 0);
	/* Joined; the kernel may list the task a moment longer. */
	for (int i = 0; i < 250 && other_thread(); i++)
		tu_msleep(2);
	ck_assert_int_eq(other_thread(), 0);
	pidlock_free(lock);
}
END_TEST

START_TEST(refresher_lost_lock)
{
	struct pidlock_refresher *ref;
	struct pidlock *lock;
	int r = 0;

	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, NULL), 0);
	ck_assert_int_eq(pidlock_daemon_refresher_start(&ref, lock, 20), 0);
	ck_assert_int_eq(unlink(path), 0);
	for (int i = 0; i < 250 && r == 0; i++) {
		tu_msleep(20);
		r = pidlock_daemon_refresher_status(ref);
	}
	ck_assert_int_eq(r, -ESTALE);
	ck_assert_int_eq(pidlock_daemon_refresher_stop(ref), -ESTALE);
	ck_assert_int_eq(access(path, F_OK), -1);
	pidlock_free(lock);
}
END_TEST

/*
 * Across fork: the child gets a copy of the refresher but no thread; the
 * parent's thread goes on.  Once the child rebinds, the parent's thread
 * stops instead of writing the parent's pid back, and the child runs a
 * refresher of its own.
 */
START_TEST(refresher_across_fork)
{
	struct pidlock_refresher *ref;
	struct pidlock *lock;
	struct tu_child c;
	long t0, t1;
	int r = 0;

	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, NULL), 0);
	ck_assert_int_eq(pidlock_daemon_refresher_start(&ref, lock, 200), 0);
	/* Fork only once the thread has refreshed: a thread still starting
	 * up may hold a sanitizer allocator lock, which fork(2) would copy
	 * locked into the child (seen under check-asan as a hung child). */
	ck_assert(wait_mtime_change(tu_mtime_ns(path)));
	if (tu_fork(&c) == 0) {
		struct pidlock_refresher *mine;

		TU_CHILD_CHECK(pidlock_daemon_refresher_status(ref) == -ESRCH);
		TU_CHILD_CHECK(pidlock_daemon_refresher_stop(ref) == 0);
		TU_CHILD_CHECK(tu_wait_parent(&c) == 'r');
		/* Just after a parent refresh: its next one is an interval
		 * away, so the rebind below lands between two. */
		TU_CHILD_CHECK(wait_mtime_change(tu_mtime_ns(path)));
		TU_CHILD_CHECK(pidlock_daemon_rebind(lock) == 0);
		tu_signal(&c, 'b');
		TU_CHILD_CHECK(pidlock_daemon_refresher_start(&mine, lock, 50) == 0);
		t0 = key_value(path, "timestamp");
		TU_CHILD_CHECK(wait_key_change("timestamp", t0, &t1));
		TU_CHILD_CHECK(first_pid(path) == getpid());
		TU_CHILD_CHECK(tu_wait_parent(&c) == 'd');
		TU_CHILD_CHECK(pidlock_daemon_refresher_stop(mine) == 0);
		TU_CHILD_CHECK(pidlock_release(lock) == 0);
		_exit(0);
	}
	/* The parent's thread still refreshes with the parent's pid. */
	t0 = key_value(path, "timestamp");
	ck_assert(wait_key_change("timestamp", t0, &t1));
	ck_assert_int_eq(key_value(path, "pid"), getpid());
	ck_assert_int_eq(pidlock_daemon_refresher_status(ref), 0);
	tu_tell(&c, 'r');
	ck_assert_int_eq(tu_wait_signal(&c), 'b');
	for (int i = 0; i < 250 && r == 0; i++) {
		tu_msleep(20);
		r = pidlock_daemon_refresher_status(ref);
	}
	ck_assert_int_eq(r, -ESTALE);
	ck_assert_int_eq(first_pid(path), c.pid);
	ck_assert_int_eq(key_value(path, "pid"), c.pid);
	ck_assert_int_eq(pidlock_daemon_refresher_stop(ref), -ESTALE);
	ck_assert_int_eq(pidlock_close(lock), 0);
	tu_tell(&c, 'd');
	ck_assert_int_eq(tu_join(&c), 0);
	ck_assert_int_eq(access(path, F_OK), -1);
	pidlock_free(lock);
}
END_TEST

static Suite *daemon_suite(void)
{
	Suite *s = suite_create("daemon");
	TCase *open = tu_tcase(s, "open", setup, teardown, 30);
	TCase *rebind = tu_tcase(s, "rebind", setup, teardown, 30);
	TCase *pidfile = tu_tcase(s, "pidfile", setup, teardown, 30);
	TCase *refresher = tu_tcase(s, "refresher", setup, teardown, 30);

	tu_add_test(open, open_writes_classic_record);
	tu_add_test(open, open_mode);
	tu_add_test(open, open_bad_args);
	tu_add_test(open, open_busy_reports_holder);
	tu_add_test(open, open_busy_other_pidns_holder_unknown);
	tu_add_test(open, open_takes_over_leftover);
	tu_add_test(open, open_via_symlinked_dir);
	tu_add_test(open, open_default_path);
#ifdef HAVE_LIBBSD
	tu_add_test(open, open_busy_libbsd_holder);
#endif
	tu_add_loop_test(rebind, rebind_handover, PARENT_CLOSE,
			    PARENT_CLOSE_EARLY + 1);
	tu_add_test(rebind, rebind_after_parent_release);
	tu_add_test(rebind, rebind_bad_args);
	tu_add_test(pidfile, pidfile_null);
	tu_add_test(pidfile, pidfile_busy);
	tu_add_test(pidfile, pidfile_modes);
	tu_add_test(pidfile, pidfile_default_path);
	tu_add_loop_test(pidfile, pidfile_fork_write, 0, 2);
	tu_add_test(pidfile, pidfile_fileno_locks);
	tu_add_loop_test(pidfile, pidfile_lost, 0, 2);
	tu_add_test(pidfile, pidfile_after_kill);
	tu_add_test(refresher, refresher_bad_args);
	tu_add_test(refresher, refresher_keeps_fresh);
	tu_add_test(refresher, refresher_blocks_signals);
	tu_add_test(refresher, refresher_lost_lock);
	tu_add_test(refresher, refresher_across_fork);
	return s;
}

int main(void)
{
	tu_run_suite(daemon_suite());
}
