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

/* One directory per run, made and removed by main(), so that a failed
 * or timed-out test (which skips its teardown) leaves nothing behind. */
static char base[64];
static char dir[96];
static char path[PATH_MAX];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "%s/t.XXXXXX", base);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/d.pid", dir);
	umask(0);
}

static void remove_tree(const char *top)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", top);
}

static void teardown(void)
{
	remove_tree(dir);
}

/* ---- helpers ------------------------------------------------------------ */

static size_t slurp(const char *p, char *buf, size_t size)
{
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, size - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n > 0 ? (size_t)n : 0;
}

/* The bare first line, as start-stop-daemon and pgrep -F read it. */
static long first_pid(const char *p)
{
	char buf[512];

	if (!slurp(p, buf, sizeof(buf)))
		return -1;
	return strtol(buf, NULL, 10);
}

static long key_value(const char *p, const char *key)
{
	char buf[512], *s;
	size_t n = strlen(key);

	if (!slurp(p, buf, sizeof(buf)))
		return -1;
	for (s = buf; s; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
		if (strncmp(s, key, n) == 0 && s[n] == '=')
			return strtol(s + n + 1, NULL, 10);
	return -1;
}

static int mode_of(const char *p)
{
	struct stat st;

	if (stat(p, &st) < 0)
		return -1;
	return (int)(st.st_mode & 07777);
}

static int64_t mtime_ns(const char *p)
{
	struct stat st;

	if (stat(p, &st) < 0)
		return -1;
	return (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
}

static void msleep(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Bounded waits; never a measure of speed. */
static int wait_key_change(const char *key, long old, long *now)
{
	for (int i = 0; i < 250; i++) {
		*now = key_value(path, key);
		if (*now != old)
			return 1;
		msleep(20);
	}
	return 0;
}

static int wait_mtime_change(int64_t old)
{
	for (int i = 0; i < 250; i++) {
		if (mtime_ns(path) != old)
			return 1;
		msleep(10);
	}
	return 0;
}

static void put(int fd, char c)
{
	ck_assert_int_eq(write(fd, &c, 1), 1);
}

static char get(int fd)
{
	char c = 0;

	ck_assert_int_eq(read(fd, &c, 1), 1);
	return c;
}

static int reap(pid_t pid)
{
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* In a forked child, a failed check must not look like success. */
#define CHILD_CHECK(cond) do { if (!(cond)) { \
	fprintf(stderr, "child: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
	_exit(3); } } while (0)

/* A child holding the lock with pidlock_daemon_open until told. */
static pid_t spawn_holder(int *ctl)
{
	int up[2], down[2];
	pid_t pid;

	ck_assert_int_eq(pipe2(up, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(down, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct pidlock *lock;
		char c;

		close(down[1]);
		CHILD_CHECK(pidlock_daemon_open(&lock, path, 0, 0, NULL) == 0);
		CHILD_CHECK(write(up[1], "r", 1) == 1);
		CHILD_CHECK(read(down[0], &c, 1) >= 0);
		pidlock_release(lock);
		pidlock_free(lock);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	ck_assert_int_eq(get(up[0]), 'r');
	close(up[0]);
	*ctl = down[1];
	return pid;
}

/* ---- pidlock_daemon_open --------------------------------------------- */

START_TEST(open_writes_classic_record)
{
	struct pidlock *lock;
	char buf[512], want[64];

	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, NULL), 0);
	ck_assert_int_eq(mode_of(path), 0644);
	slurp(path, buf, sizeof(buf));
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
	ck_assert_int_eq(mode_of(path), 0640);
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
	int ctl;
	pid_t pid = spawn_holder(&ctl);

	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, &holder),
			 -EEXIST);
	ck_assert_ptr_null(lock);
	ck_assert_int_eq(holder, pid);
	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, NULL), -EEXIST);
	ck_assert_int_eq(first_pid(path), pid);
	close(ctl);
	ck_assert_int_eq(reap(pid), 0);
	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, &holder), 0);
	pidlock_free(lock);
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
	pid_t holder = 0, pid;
	int up[2], down[2];

	ck_assert_int_eq(pipe2(up, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(down, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct pidfh *pfh = pidfile_open(path, 0644, NULL);
		char c;

		close(down[1]);
		CHILD_CHECK(pfh != NULL);
		CHILD_CHECK(write(up[1], "o", 1) == 1);
		CHILD_CHECK(read(down[0], &c, 1) == 1);
		CHILD_CHECK(pidfile_write(pfh) == 0);
		CHILD_CHECK(write(up[1], "w", 1) == 1);
		CHILD_CHECK(read(down[0], &c, 1) >= 0);
		pidfile_remove(pfh);
		_exit(0);
	}
	ck_assert_int_eq(get(up[0]), 'o');
	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, &holder),
			 -EEXIST);
	ck_assert_int_eq(holder, -1);
	put(down[1], 'w');
	ck_assert_int_eq(get(up[0]), 'w');
	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, &holder),
			 -EEXIST);
	ck_assert_int_eq(holder, pid);
	close(down[1]);
	ck_assert_int_eq(reap(pid), 0);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST
#endif

/* ---- the hand-over: fork, rebind, parent closes ------------------------ */

enum { PARENT_CLOSE, PARENT_FREE, PARENT_CLOSE_EARLY };

/*
 * The parent holds; the child rebinds and tells; the parent lets go in
 * one of three ways; none may unlink the child's file.  The child then
 * checks the file and releases it, which unlinks.
 */
static void handover(int how)
{
	struct pidlock *lock;
	int up[2], down[2];
	pid_t pid;

	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, NULL), 0);
	ck_assert_int_eq(pipe2(up, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(down, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char c;

		if (how == PARENT_CLOSE_EARLY)
			CHILD_CHECK(read(down[0], &c, 1) == 1);
		CHILD_CHECK(pidlock_daemon_rebind(lock) == 0);
		CHILD_CHECK(first_pid(path) == getpid());
		CHILD_CHECK(key_value(path, "pid") == getpid());
		CHILD_CHECK(write(up[1], "b", 1) == 1);
		if (how != PARENT_CLOSE_EARLY)
			CHILD_CHECK(read(down[0], &c, 1) == 1);
		CHILD_CHECK(first_pid(path) == getpid());
		CHILD_CHECK(pidlock_verify(lock) == 0);
		CHILD_CHECK(pidlock_release(lock) == 0);
		CHILD_CHECK(access(path, F_OK) == -1);
		_exit(0);
	}
	if (how == PARENT_CLOSE_EARLY) {
		ck_assert_int_eq(pidlock_close(lock), 0);
		ck_assert_int_eq(first_pid(path), getpid());
		put(down[1], 'c');
		ck_assert_int_eq(get(up[0]), 'b');
	} else {
		ck_assert_int_eq(get(up[0]), 'b');
		if (how == PARENT_CLOSE)
			ck_assert_int_eq(pidlock_close(lock), 0);
		else
			pidlock_free(lock);	/* releases: must not unlink */
		ck_assert_int_eq(first_pid(path), pid);
		put(down[1], 'c');
	}
	ck_assert_int_eq(reap(pid), 0);
	ck_assert_int_eq(access(path, F_OK), -1);
	if (how != PARENT_FREE)
		pidlock_free(lock);
}

START_TEST(rebind_parent_close)
{
	handover(PARENT_CLOSE);
}
END_TEST

START_TEST(rebind_parent_free)
{
	handover(PARENT_FREE);
}
END_TEST

START_TEST(rebind_parent_close_early)
{
	handover(PARENT_CLOSE_EARLY);
}
END_TEST

/* The wrong order: the parent releases (and unlinks) first.  The child
 * must learn that it holds nothing. */
START_TEST(rebind_after_parent_release)
{
	struct pidlock *lock;
	pid_t pid;
	int go[2];

	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, NULL), 0);
	ck_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char c;

		CHILD_CHECK(read(go[0], &c, 1) == 1);
		CHILD_CHECK(pidlock_daemon_rebind(lock) == -ESTALE);
		_exit(0);
	}
	ck_assert_int_eq(pidlock_release(lock), 0);
	ck_assert_int_eq(access(path, F_OK), -1);
	put(go[1], 'g');
	ck_assert_int_eq(reap(pid), 0);
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
	errno = 0;
	ck_assert_int_eq(pidlock_pidfile_write(NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(pidlock_pidfile_close(NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(pidlock_pidfile_remove(NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(pidlock_pidfile_fileno(NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(pidlock_pidfile_handle(NULL));
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(pidfile_busy)
{
	pid_t other = 0;
	int ctl;
	pid_t pid = spawn_holder(&ctl);

	errno = 0;
	ck_assert_ptr_null(pidlock_pidfile_open(path, 0644, &other));
	ck_assert_int_eq(errno, EEXIST);
	ck_assert_int_eq(other, pid);
	errno = 0;
	ck_assert_ptr_null(pidlock_pidfile_open(path, 0644, NULL));
	ck_assert_int_eq(errno, EEXIST);
	close(ctl);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

START_TEST(pidfile_modes)
{
	static const mode_t in[] = { 0, 0600, 0644, 0666 };
	static const int out[] = { 0644, 0600, 0644, 0664 };

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct pidlock_pidfh *pfh = pidlock_pidfile_open(path, in[i], NULL);

		ck_assert_ptr_nonnull(pfh);
		ck_assert_int_eq(mode_of(path), out[i]);
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
	errno = 0;
	pfh = pidlock_pidfile_open(NULL, 0, NULL);
	if (geteuid() != 0) {
		ck_assert_ptr_null(pfh);
		ck_assert_int_eq(errno, EACCES);
		return;
	}
	ck_assert_ptr_nonnull(pfh);
	ck_assert_str_eq(pidlock_path(pidlock_pidfile_handle(pfh)), def);
	ck_assert_int_eq(first_pid(def), getpid());
	ck_assert_int_eq(pidlock_pidfile_remove(pfh), 0);
	ck_assert_int_eq(access(def, F_OK), -1);
}
END_TEST

/* The manual's flow: open, daemonize, write in the child; the parent
 * only closes.  Then a worker forked by the daemon tries to remove. */
START_TEST(pidfile_fork_write)
{
	struct pidlock_pidfh *pfh = pidlock_pidfile_open(path, 0644, NULL);
	int up[2], down[2];
	pid_t pid;

	ck_assert_ptr_nonnull(pfh);
	ck_assert_int_eq(first_pid(path), getpid());
	ck_assert_int_eq(pipe2(up, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(down, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		pid_t worker;
		char c;
		int st;

		CHILD_CHECK(pidlock_pidfile_write(pfh) == 0);
		CHILD_CHECK(first_pid(path) == getpid());
		CHILD_CHECK(write(up[1], "w", 1) == 1);
		CHILD_CHECK(read(down[0], &c, 1) == 1);
		/* A worker must not take the daemon's file with it. */
		worker = fork();
		CHILD_CHECK(worker >= 0);
		if (worker == 0) {
			errno = 0;
			CHILD_CHECK(pidlock_pidfile_remove(pfh) == -1);
			CHILD_CHECK(errno == EINVAL);
			_exit(0);
		}
		CHILD_CHECK(waitpid(worker, &st, 0) == worker);
		CHILD_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		CHILD_CHECK(first_pid(path) == getpid());
		CHILD_CHECK(pidlock_pidfile_fileno(pfh) >= 0);
		CHILD_CHECK(pidlock_pidfile_remove(pfh) == 0);
		CHILD_CHECK(access(path, F_OK) == -1);
		_exit(0);
	}
	ck_assert_int_eq(get(up[0]), 'w');
	ck_assert_int_eq(pidlock_pidfile_close(pfh), 0);
	ck_assert_int_eq(first_pid(path), pid);
	put(down[1], 'c');
	ck_assert_int_eq(reap(pid), 0);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

/* pidfile_remove() in the parent after the child wrote: refused, and
 * the child's file stays. */
START_TEST(pidfile_remove_not_writer)
{
	struct pidlock_pidfh *pfh = pidlock_pidfile_open(path, 0644, NULL);
	int up[2], down[2];
	pid_t pid;

	ck_assert_ptr_nonnull(pfh);
	ck_assert_int_eq(pipe2(up, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(down, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char c;

		CHILD_CHECK(pidlock_pidfile_write(pfh) == 0);
		CHILD_CHECK(write(up[1], "w", 1) == 1);
		CHILD_CHECK(read(down[0], &c, 1) == 1);
		CHILD_CHECK(first_pid(path) == getpid());
		CHILD_CHECK(pidlock_pidfile_remove(pfh) == 0);
		_exit(0);
	}
	ck_assert_int_eq(get(up[0]), 'w');
	errno = 0;
	ck_assert_int_eq(pidlock_pidfile_remove(pfh), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(first_pid(path), pid);
	put(down[1], 'r');
	ck_assert_int_eq(reap(pid), 0);
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

/* Somebody deletes the pidfile and another file appears at the path:
 * write gives up, and remove never deletes the newcomer. */
START_TEST(pidfile_lost)
{
	struct pidlock_pidfh *pfh = pidlock_pidfile_open(path, 0644, NULL);
	char buf[64];
	int fd;

	ck_assert_ptr_nonnull(pfh);
	ck_assert_int_eq(unlink(path), 0);
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "somebody else\n", 14), 14);
	close(fd);
	errno = 0;
	ck_assert_int_eq(pidlock_pidfile_write(pfh), -1);
	ck_assert_int_eq(errno, ESTALE);
	errno = 0;
	ck_assert_int_eq(pidlock_pidfile_fileno(pfh), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(pidlock_pidfile_remove(pfh), -1);
	ck_assert_int_eq(errno, EINVAL);
	slurp(path, buf, sizeof(buf));
	ck_assert_str_eq(buf, "somebody else\n");
}
END_TEST

START_TEST(pidfile_remove_after_break)
{
	struct pidlock_pidfh *pfh = pidlock_pidfile_open(path, 0644, NULL);
	char buf[64];
	int fd;

	ck_assert_ptr_nonnull(pfh);
	ck_assert_int_eq(unlink(path), 0);
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "7\n", 2), 2);
	close(fd);
	errno = 0;
	ck_assert_int_eq(pidlock_pidfile_remove(pfh), -1);
	ck_assert_int_eq(errno, ESTALE);
	slurp(path, buf, sizeof(buf));
	ck_assert_str_eq(buf, "7\n");
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
		CHILD_CHECK(pfh != NULL);
		CHILD_CHECK(pidlock_pidfile_write(pfh) == 0);
		raise(SIGKILL);
		_exit(3);
	}
	ck_assert_int_eq(reap(pid), 128 + SIGKILL);
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
	m = mtime_ns(path);
	msleep(300);
	ck_assert(mtime_ns(path) == m);
	ck_assert_int_eq(pidlock_release(lock), 0);
	pidlock_free(lock);
}
END_TEST

/* SigBlk of /proc/self/task/TID/status: the thread's blocked signals. */
static unsigned long long sigblk(pid_t tid)
{
	char p[64], line[256];
	unsigned long long mask = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/self/task/%d/status", (int)tid);
	f = fopen(p, "re");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigBlk: %llx", &mask) == 1)
			break;
	fclose(f);
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
		msleep(2);
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
		msleep(20);
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
	int up[2], down[2];
	long t0, t1;
	pid_t pid;
	int r = 0;

	ck_assert_int_eq(pidlock_daemon_open(&lock, path, 0, 0, NULL), 0);
	ck_assert_int_eq(pidlock_daemon_refresher_start(&ref, lock, 200), 0);
	/* Fork only once the thread has refreshed: a thread still starting
	 * up may hold a sanitizer allocator lock, which fork(2) would copy
	 * locked into the child (seen under check-asan as a hung child). */
	ck_assert(wait_mtime_change(mtime_ns(path)));
	ck_assert_int_eq(pipe2(up, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(down, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct pidlock_refresher *mine;
		char c;

		CHILD_CHECK(pidlock_daemon_refresher_status(ref) == -ESRCH);
		CHILD_CHECK(pidlock_daemon_refresher_stop(ref) == 0);
		CHILD_CHECK(read(down[0], &c, 1) == 1);
		/* Just after a parent refresh: its next one is an interval
		 * away, so the rebind below lands between two. */
		CHILD_CHECK(wait_mtime_change(mtime_ns(path)));
		CHILD_CHECK(pidlock_daemon_rebind(lock) == 0);
		CHILD_CHECK(write(up[1], "b", 1) == 1);
		CHILD_CHECK(pidlock_daemon_refresher_start(&mine, lock, 50) == 0);
		t0 = key_value(path, "timestamp");
		CHILD_CHECK(wait_key_change("timestamp", t0, &t1));
		CHILD_CHECK(first_pid(path) == getpid());
		CHILD_CHECK(read(down[0], &c, 1) == 1);
		CHILD_CHECK(pidlock_daemon_refresher_stop(mine) == 0);
		CHILD_CHECK(pidlock_release(lock) == 0);
		_exit(0);
	}
	/* The parent's thread still refreshes with the parent's pid. */
	t0 = key_value(path, "timestamp");
	ck_assert(wait_key_change("timestamp", t0, &t1));
	ck_assert_int_eq(key_value(path, "pid"), getpid());
	ck_assert_int_eq(pidlock_daemon_refresher_status(ref), 0);
	put(down[1], 'r');
	ck_assert_int_eq(get(up[0]), 'b');
	for (int i = 0; i < 250 && r == 0; i++) {
		msleep(20);
		r = pidlock_daemon_refresher_status(ref);
	}
	ck_assert_int_eq(r, -ESTALE);
	ck_assert_int_eq(first_pid(path), pid);
	ck_assert_int_eq(key_value(path, "pid"), pid);
	ck_assert_int_eq(pidlock_daemon_refresher_stop(ref), -ESTALE);
	ck_assert_int_eq(pidlock_close(lock), 0);
	put(down[1], 'd');
	ck_assert_int_eq(reap(pid), 0);
	ck_assert_int_eq(access(path, F_OK), -1);
	pidlock_free(lock);
}
END_TEST

static Suite *daemon_suite(void)
{
	Suite *s = suite_create("daemon");
	TCase *open = tcase_create("open");
	TCase *rebind = tcase_create("rebind");
	TCase *pidfile = tcase_create("pidfile");
	TCase *refresher = tcase_create("refresher");
	TCase *all[] = { open, rebind, pidfile, refresher };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		tcase_add_checked_fixture(all[i], setup, teardown);
		tcase_set_timeout(all[i], 30);
		suite_add_tcase(s, all[i]);
	}
	tcase_add_test(open, open_writes_classic_record);
	tcase_add_test(open, open_mode);
	tcase_add_test(open, open_bad_args);
	tcase_add_test(open, open_busy_reports_holder);
	tcase_add_test(open, open_takes_over_leftover);
	tcase_add_test(open, open_via_symlinked_dir);
	tcase_add_test(open, open_default_path);
#ifdef HAVE_LIBBSD
	tcase_add_test(open, open_busy_libbsd_holder);
#endif
	tcase_add_test(rebind, rebind_parent_close);
	tcase_add_test(rebind, rebind_parent_free);
	tcase_add_test(rebind, rebind_parent_close_early);
	tcase_add_test(rebind, rebind_after_parent_release);
	tcase_add_test(rebind, rebind_bad_args);
	tcase_add_test(pidfile, pidfile_null);
	tcase_add_test(pidfile, pidfile_busy);
	tcase_add_test(pidfile, pidfile_modes);
	tcase_add_test(pidfile, pidfile_default_path);
	tcase_add_test(pidfile, pidfile_fork_write);
	tcase_add_test(pidfile, pidfile_remove_not_writer);
	tcase_add_test(pidfile, pidfile_fileno_locks);
	tcase_add_test(pidfile, pidfile_lost);
	tcase_add_test(pidfile, pidfile_remove_after_break);
	tcase_add_test(pidfile, pidfile_after_kill);
	tcase_add_test(refresher, refresher_bad_args);
	tcase_add_test(refresher, refresher_keeps_fresh);
	tcase_add_test(refresher, refresher_blocks_signals);
	tcase_add_test(refresher, refresher_lost_lock);
	tcase_add_test(refresher, refresher_across_fork);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	snprintf(base, sizeof(base), "/tmp/pidlock-daemon-unit.XXXXXX");
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 99;
	}
	sr = srunner_create(daemon_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	remove_tree(base);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
