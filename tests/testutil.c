/* SPDX-License-Identifier: LGPL-2.1-or-later */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static char dir[PATH_MAX];

struct pidlock *tu_new(const char *path, unsigned int flags)
{
	struct pidlock *l;

	ck_assert_int_eq(pidlock_new(&l, path, flags), 0);
	return l;
}

pid_t tu_dead_pid(void)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	return pid;
}

pid_t tu_live_pid(void)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

long tu_pid_max(void)
{
	FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
	long v = 0;

	ck_assert(f != NULL);
	ck_assert_int_eq(fscanf(f, "%ld", &v), 1);
	(void)fclose(f);
	return v;
}

const char *tu_dir(void)
{
	const char *base = getenv("TMPDIR");

	if (dir[0])
		return dir;
	snprintf(dir, sizeof(dir), "%s/pidlock-test.XXXXXX",
		 base && base[0] ? base : "/tmp");
	ck_assert_msg(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	ck_assert_int_eq(chmod(dir, 0755), 0);
	return dir;
}

char *tu_path(const char *name)
{
	static char bufs[4][PATH_MAX];
	static int next;
	char *b = bufs[next++ % 4];

	snprintf(b, PATH_MAX, "%s/%s", tu_dir(), name);
	return b;
}

void tu_cleanup(void)
{
	if (!dir[0])
		return;
	tu_sh("rm -rf '%s'", dir);
	dir[0] = '\0';
}

int tu_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	ck_assert_msg(d != NULL, "opendir /proc/self/fd: %s", strerror(errno));
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the directory stream's own descriptor */
}

/* The library's own instance (lib/opens.c), made before the tests by
 * warm_library(): a fork's child has its own on the same number. */
static int library_ifd = -1;

/* The inotify descriptors of this process but the library's, one bit
 * each in *set (those below 1024), counted. */
static int inotify_fds(unsigned char set[128])
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	memset(set, 0, 128);
	while ((de = readdir(d)) != NULL) {
		char link[300], target[64];
		int fd = atoi(de->d_name);
		ssize_t len;

		snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len < 0 || fd == library_ifd)
			continue;
		target[len] = '\0';
		if (strcmp(target, "anon_inode:inotify") != 0)
			continue;
		n++;
		if (fd >= 0 && fd < 1024)
			set[fd / 8] |= (unsigned char)(1U << (fd % 8));
	}
	closedir(d);
	return n;
}

int tu_library_ifd(void)
{
	return library_ifd;
}

/* Other than the library's own instance, which lives as long as the
 * process: the waits' instances, which must not outlive their wait. */
int tu_count_inotify(void)
{
	unsigned char set[128];
	int n = inotify_fds(set);

	ck_assert_msg(n >= 0, "opendir /proc/self/fd: %s", strerror(errno));
	return n;
}

/* One read of the list: rows of pid's (any if 0) requests blocked on
 * ino. */
static int queued_once(const char *tail, const char *who, pid_t pid)
{
	char line[256];
	FILE *f = fopen("/proc/locks", "re");
	int n = 0;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, " -> ") && strstr(line, tail) &&
		     (!pid || strstr(line, who));
	fclose(f);
	return n;
}

/*
 * The kernel gives /proc/locks a page at a time, and a list that
 * changes between two pages skips rows (another suite's thousands of
 * locks come and go beside this one under make -j2): the most of a few
 * reads.
 */
#define QUEUED_READS 4

int tu_queued(unsigned long long ino, pid_t pid)
{
	char tail[40], who[24];
	int most = 0;

	snprintf(tail, sizeof(tail), ":%llu ", ino);
	snprintf(who, sizeof(who), " %d ", (int)pid);
	for (int i = 0; i < QUEUED_READS; i++) {
		int n = queued_once(tail, who, pid);

		if (n > most)
			most = n;
	}
	return most;
}

const char *tu_peer(const char *var)
{
	const char *p = getenv(var);

	ck_assert_msg(p && p[0], "%s not found at configure time: install "
		      "chiark-utils-bin (with-lock-ex) and util-linux (flock)", var);
	return p;
}

const char *tu_flock_bin(void)
{
	return tu_peer("FLOCK");
}

void tu_write(const char *path, const char *content)
{
	FILE *f = fopen(path, "we");

	ck_assert_msg(f, "%s: %s", path, strerror(errno));
	fputs(content, f);
	ck_assert_int_eq(fclose(f), 0);
}

int tu_open(const char *path, int oflags)
{
	int fd = open(path, oflags | O_CLOEXEC, 0644);

	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	return fd;
}

const char *tu_read(const char *path)
{
	static char buf[65536];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	buf[0] = '\0';
	if (fd < 0)
		return buf;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

bool tu_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

ino_t tu_ino(const char *path)
{
	struct stat st;

	ck_assert_msg(lstat(path, &st) == 0, "%s: %s", path, strerror(errno));
	return st.st_ino;
}

int tu_mode(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -1;
	return (int)(st.st_mode & 07777);
}

int64_t tu_mtime_ns(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -1;
	return (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
}

long tu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

long tu_cpu_ms(void)
{
	struct rusage ru;

	ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru), 0);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000L +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000L;
}

int64_t tu_now(void)
{
	struct timespec ts;

	ck_assert_int_eq(clock_gettime(CLOCK_REALTIME, &ts), 0);
	return (int64_t)ts.tv_sec;
}

void tu_msleep(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void tu_set_mtime_ago(const char *path, long seconds)
{
	struct timespec t[2];

	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= seconds;
	t[1] = t[0];
	ck_assert_int_eq(utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW), 0);
}

pid_t tu_fork(struct tu_child *c)
{
	int up[2], down[2];

	ck_assert_int_eq(pipe2(up, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(down, O_CLOEXEC), 0);
	c->pid = fork();
	ck_assert_int_ge(c->pid, 0);
	if (c->pid == 0) {
		close(up[0]);
		close(down[1]);
		c->to_parent = up[1];
		c->from_parent = down[0];
		c->from_child = c->to_child = -1;
		return 0;
	}
	close(up[1]);
	close(down[0]);
	c->from_child = up[0];
	c->to_child = down[1];
	c->to_parent = c->from_parent = -1;
	return c->pid;
}

void tu_spawn(struct tu_child *c, tu_fn fn, void *arg)
{
	if (tu_fork(c) == 0)
		_exit(fn(c, arg));
}

void tu_signal(struct tu_child *c, char what)
{
	if (write(c->to_parent, &what, 1) != 1)
		_exit(99);
}

/* One byte from the pipe, or 0 at its end: the other side is gone. */
static char read_byte(int fd)
{
	char ch = 0;
	ssize_t n;

	do
		n = read(fd, &ch, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		return 0;
	return ch;
}

char tu_wait_signal(struct tu_child *c)
{
	return read_byte(c->from_child);
}

char tu_wait_parent(struct tu_child *c)
{
	return read_byte(c->from_parent);
}

void tu_tell(struct tu_child *c, char what)
{
	ck_assert_int_eq(write(c->to_child, &what, 1), 1);
}

int tu_reap(pid_t pid)
{
	int st;

	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

int tu_join(struct tu_child *c)
{
	int st = tu_reap(c->pid);

	close(c->from_child);
	close(c->to_child);
	c->pid = 0;
	return st;
}

void tu_kill(struct tu_child *c)
{
	kill(c->pid, SIGKILL);
	ck_assert_int_eq(tu_join(c), 128 + SIGKILL);
}

int tu_forked_release(struct pidlock *l)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(pidlock_release(l) == 0 ? 0 : 3);
	return tu_reap(pid);
}

/* The holder's side of tu_hold(): the handle is the parent's copy. */
static int hold_fn(struct tu_child *c, void *arg)
{
	struct pidlock *l = arg;
	int r = 2;

	if (pidlock_acquire(l, -1) == 0) {
		tu_signal(c, 'L');
		r = tu_wait_parent(c) != 'R' ? 3
		  : pidlock_release(l) == 0 ? 0 : 4;
	}
	/* Freed, so that the suite runs clean under valgrind. */
	pidlock_free(l);
	return r;
}

void tu_hold(struct tu_child *c, const char *path, unsigned int flags)
{
	/* Made here, so that a bad path fails the test, not the child. */
	struct pidlock *l = tu_new(path, flags);

	tu_spawn(c, hold_fn, l);
	pidlock_free(l);	/* never acquired here: frees memory only */
	ck_assert_int_eq(tu_wait_signal(c), 'L');
}

static int posix_hold_fn(struct tu_child *c, void *arg)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd = open(arg, O_RDWR | O_CLOEXEC);

	TU_CHILD_CHECK(fd >= 0);
	TU_CHILD_CHECK(fcntl(fd, F_SETLK, &fl) == 0);
	tu_signal(c, 'L');
	(void)tu_wait_parent(c);
	return 0;
}

void tu_posix_hold(struct tu_child *c, char *path)
{
	tu_spawn(c, posix_hold_fn, path);
	ck_assert_int_eq(tu_wait_signal(c), 'L');
}

void tu_flock1_hold(struct tu_child *c, const char *path, bool shared)
{
	const char *bin = tu_flock_bin();

	if (tu_fork(c) == 0) {
		/* The command says it runs (flock(1) holds by then) and waits
		 * for a line from the parent; both pipes become its stdio. */
		if (dup2(c->from_parent, 0) < 0 || dup2(c->to_parent, 1) < 0)
			_exit(2);
		execl(bin, bin, "-n", shared ? "-s" : "-x", path, "sh", "-c",
		      "echo L; read -r x", (char *)NULL);
		_exit(127);
	}
	ck_assert_msg(tu_wait_signal(c) == 'L', "flock(1) did not take %s",
		      path);
}

bool tu_wait_in_poll(pid_t pid)
{
	char path[64], buf[128];
	long nr;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	for (int i = 0; i < 20000; i++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n;

		/* No such file without the kernel's tracehook; refused
		 * by ptrace restrictions (Yama). */
		if (fd < 0 && (errno == ENOENT || errno == EACCES ||
			       errno == EPERM))
			return false;
		ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n < 0 && (errno == EACCES || errno == EPERM))
			return false;
		buf[n > 0 ? n : 0] = '\0';
		nr = strtol(buf, NULL, 10);
		if (buf[0] >= '0' && buf[0] <= '9' &&
#ifdef SYS_poll
		    (nr == SYS_poll || nr == SYS_ppoll))
#else
		    nr == SYS_ppoll)
#endif
			return true;
		usleep(1000);
	}
	ck_abort_msg("process %d never slept in poll(2)", (int)pid);
	return false;
}

const char *tu_status_value(const char *path, const char *name)
{
	static char line[256];
	size_t len = strlen(name);
	FILE *f = fopen(path, "re");

	ck_assert_msg(f, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, name, len) == 0 && line[len] == ':') {
			fclose(f);
			return line + len + 1 + strspn(line + len + 1, " \t");
		}
	}
	fclose(f);
	ck_abort_msg("%s: no %s line", path, name);
}

void tu_wait_free_sleeps(const char *path, int ms, long cpu_bound)
{
	long cpu0 = tu_cpu_ms(), cpu;

	ck_assert_int_eq(pidlock_wait_free(path, ms), -ETIMEDOUT);
	cpu = tu_cpu_ms() - cpu0;
	ck_assert_msg(cpu < cpu_bound, "a %d ms pidlock_wait_free() on a "
		      "held lock burnt %ld ms CPU", ms, cpu);
}

int tu_sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static bool env_is_1(const char *name)
{
	const char *v = getenv(name);

	return v && strcmp(v, "1") == 0;
}

bool tu_in_place(void)
{
	char a[4200], b[4200];
	bool rename_ok;
	int fd;

	/* The fault shim refusing both, as make check-notmpfile has it. */
	if (env_is_1("FAULT_NORENAME") && env_is_1("FAULT_NOTMPFILE"))
		return true;
	snprintf(a, sizeof(a), "%s/.tu-probe-a", tu_dir());
	snprintf(b, sizeof(b), "%s/.tu-probe-b", tu_dir());
	tu_write(a, "");
	/* The system call itself: not every C library wraps it. */
	rename_ok = syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b,
			    1U /* RENAME_NOREPLACE */) == 0 || errno != EINVAL;
	unlink(a);
	unlink(b);
	if (rename_ok)
		return false;
	fd = open(tu_dir(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0) {
		close(fd);
		return false;
	}
	return true;
}

/*
 * The library keeps one inotify instance per process from its first
 * PIDLOCK_KEEP_IF_USED acquire on (lib/opens.c), and a forked child gets its own on the same
 * descriptor number.  Made here, before any test, so that each test's
 * count of descriptors sees only what that test leaves behind.
 */
static void warm_library(void)
{
	char wdir[] = "/tmp/pidlock-warm.XXXXXX";
	char path[sizeof(wdir) + 8];
	unsigned char before[128], after[128];
	struct pidlock *l;

	/* No test runs yet: Check's asserts cannot report. */
	if (!mkdtemp(wdir)) {
		perror("mkdtemp");
		exit(99);
	}
	snprintf(path, sizeof(path), "%s/w", wdir);
	if (inotify_fds(before) < 0 || pidlock_new(&l, path,
						   PIDLOCK_KEEP_IF_USED) < 0) {
		fprintf(stderr, "warming the library up in %s failed\n", wdir);
		exit(99);
	}
	/* A library that cannot take a lock (a mutant of the gate's, whose
	 * flock no longer excludes) is for the tests to show, each by its
	 * name: the suite runs cold then. */
	if (pidlock_acquire(l, 0) < 0 || pidlock_release(l) < 0) {
		fprintf(stderr, "warming the library up: no lock taken in %s; "
			"the tests run with a cold library\n", wdir);
		pidlock_free(l);
		(void)unlink(path);
		(void)rmdir(wdir);
		return;
	}
	pidlock_free(l);
	if (rmdir(wdir) < 0 || inotify_fds(after) < 0) {
		fprintf(stderr, "warming the library up in %s failed\n", wdir);
		exit(99);
	}
	for (int fd = 0; fd < 1024 && library_ifd < 0; fd++)
		if ((after[fd / 8] & ~before[fd / 8]) & (1U << (fd % 8)))
			library_ifd = fd;
}

/* Is the test `name` among TU_TESTS (space-separated), or is that unset? */
static bool selected(const char *name)
{
	const char *list = getenv("TU_TESTS");
	size_t len = strlen(name);

	if (!list || !list[strspn(list, " ")])
		return true;
	for (const char *p = list; (p = strstr(p, name)); p += len)
		if ((p == list || p[-1] == ' ') && (p[len] == ' ' || !p[len]))
			return true;
	return false;
}

void tu_add_test(TCase *tc, const TTest *test)
{
	if (selected(test->name))
		tcase_add_test(tc, test);
}

void tu_add_loop_test(TCase *tc, const TTest *test, int start, int end)
{
	if (selected(test->name))
		tcase_add_loop_test(tc, test, start, end);
}

bool tu_cold_library;

void tu_run_suite(Suite *s)
{
	SRunner *sr;
	int failed;

	if (!tu_cold_library)
		warm_library();
	sr = srunner_create(s);

	/* CK_ENV: CK_VERBOSITY chooses the output, normal by default. */
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	exit(failed ? EXIT_FAILURE : EXIT_SUCCESS);
}

/* --- the shapes the protocol suites share ---------------------------- */

#include <stdint.h>

void tu_run_cases(const char *suite, const char *tcase, int timeout,
		  const struct tu_case *cases)
{
	Suite *s = suite_create(suite);
	TCase *tc = tcase_create(tcase);

	tcase_add_checked_fixture(tc, NULL, tu_cleanup);
	if (timeout)
		tcase_set_timeout(tc, timeout);
	for (; cases->test; cases++)
		tu_add_loop_test(tc, cases->test, 0, cases->runs);
	suite_add_tcase(s, tc);
	tu_run_suite(s);
}

/* What a child needs to make its own handle on the lock. */
struct hold_arg {
	const char *path;
	unsigned int flags;
};

static int waiter_fn(struct tu_child *c, void *arg)
{
	const struct hold_arg *h = arg;
	struct pidlock *l;
	int r;

	if (pidlock_new(&l, h->path, h->flags) < 0)
		return 2;
	tu_signal(c, 'W');
	if (tu_wait_parent(c) != 'G')
		return 4;
	r = pidlock_acquire(l, -1);
	if (r < 0)
		return 10 + (-r % 100);
	/* The inode check: what we hold is the file at the path. */
	if (pidlock_verify(l) != 0)
		return 3;
	tu_signal(c, 'L');
	tu_wait_parent(c);
	pidlock_free(l);
	return 0;
}

void tu_waiter(struct tu_child *c, const char *path, unsigned int flags)
{
	struct hold_arg w = { path, flags };

	tu_spawn(c, waiter_fn, &w);
	ck_assert_int_eq(tu_wait_signal(c), 'W');
}

void tu_waiter_took(struct tu_child *c)
{
	ck_assert_int_eq(tu_wait_signal(c), 'L');
	tu_tell(c, 'x');
	ck_assert_int_eq(tu_join(c), 0);
}

static int exit_holding_fn(struct tu_child *c, void *arg)
{
	const struct hold_arg *h = arg;
	struct pidlock *l;

	(void)c;
	if (pidlock_new(&l, h->path, h->flags) < 0 || pidlock_acquire(l, 0) < 0)
		return 2;
	_exit(0);	/* no release, no free: the exit is all there is */
}

void tu_exit_holding(const char *path, unsigned int flags)
{
	struct hold_arg h = { path, flags };
	struct tu_child c;

	tu_spawn(&c, exit_holding_fn, &h);
	ck_assert_int_eq(tu_join(&c), 0);
}

static int lease_fn(struct tu_child *c, void *arg)
{
	int fd = open(arg, O_RDONLY | O_CLOEXEC);

	signal(SIGIO, SIG_IGN);	/* the break notice: we do not give way */
	if (fd < 0)
		return 2;
	if (fcntl(fd, F_SETLEASE, F_RDLCK) < 0)
		return 3;
	tu_signal(c, 'L');
	tu_wait_parent(c);
	return 0;
}

bool tu_lease(struct tu_child *c, const char *path)
{
	tu_spawn(c, lease_fn, (void *)(uintptr_t)path);
	if (tu_wait_signal(c) == 'L')
		return true;
	/* The file opens; only the lease is refused. */
	ck_assert_int_eq(tu_join(c), 3);
	return false;
}

void tu_tell_later(struct tu_child *c, int ms, char what)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		usleep((useconds_t)ms * 1000);
		tu_tell(c, what);
		_exit(0);
	}
}

void tu_write_spec(const char *path, pid_t pid, long age, const char *tag)
{
	char rec[256];

	snprintf(rec, sizeof(rec), "pid=%ld\ntimestamp=%ld\n%s%s%s", (long)pid,
		 (long)time(NULL) - age, tag ? "tag=" : "", tag ? tag : "",
		 tag ? "\n" : "");
	tu_write(path, rec);
}

void tu_release_to(struct tu_child *c, struct pidlock *l)
{
	tu_tell(c, 'R');
	ck_assert_int_eq(tu_join(c), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
}


const char *tu_host_name(void)
{
	static struct utsname u;

	if (!u.nodename[0] && uname(&u) < 0)
		return "";
	return u.nodename;
}

const char *tu_boot_id(void)
{
	static char id[64];
	FILE *f;

	if (id[0])
		return id;
	f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (!f)
		return "";
	if (!fgets(id, sizeof(id), f))
		id[0] = '\0';
	fclose(f);
	id[strcspn(id, "\n")] = '\0';
	return id;
}

/* Our pid namespace's inode, as pidns= names it; "" without /proc. */
const char *tu_pidns(void)
{
	static char ns[32];
	struct stat st;

	if (stat("/proc/self/ns/pid", &st) < 0)
		return "";
	snprintf(ns, sizeof(ns), "%llu", (unsigned long long)st.st_ino);
	return ns;
}

const char *tu_host_lines(void)
{
	static char lines[256];

	snprintf(lines, sizeof(lines), "host=%s\n%s%s%s%s%s%s", tu_host_name(),
		 tu_boot_id()[0] ? "boot=" : "", tu_boot_id(),
		 tu_boot_id()[0] ? "\n" : "",
		 tu_pidns()[0] ? "pidns=" : "", tu_pidns(),
		 tu_pidns()[0] ? "\n" : "");
	return lines;
}

pid_t tu_churn_names(void)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		const char *tmp = tu_path("other.tmp");

		for (int i = 0; i < 50; i++) {
			tu_write(tmp, "x");
			if (unlink(tmp) < 0)
				_exit(1);
			usleep(20 * 1000);
		}
		_exit(0);
	}
	return pid;
}
