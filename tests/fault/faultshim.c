/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A fault-injection shim, loaded with LD_PRELOAD or linked ahead of the
 * C library.  It makes the Nth call of one family of system calls fail
 * with a chosen errno (or, for writes, come back short), so that every
 * error path of the library can be driven from a test.
 *
 * Armed from a test with fault_arm(); idle otherwise, so it is harmless
 * in any process it is preloaded into.  With FAULT_NOTMPFILE=1 in the
 * environment (or fault_notmpfile(1)) every O_TMPFILE open fails with
 * EOPNOTSUPP, as on a file system without O_TMPFILE; if FAULT_LOG names
 * a file, each refusal and each named temp file created is noted there,
 * so a test run can prove that the fallback ran.
 *
 * A suspend, as the clocks see it: CLOCK_BOOTTIME runs on by the time
 * the machine slept, CLOCK_MONOTONIC does not.  fault_suspend(ms) adds ms
 * to every later CLOCK_BOOTTIME reading of this process; in a preloaded
 * shim, FAULT_BOOTTIME_FILE=PATH adds the milliseconds PATH holds (read
 * at each reading; none while it is missing), so that a test can put a
 * suspend into a running program.
 *
 * FAULT_BEFORE_PIDFD_OPEN=SCRIPT and FAULT_BEFORE_PIDFD_SEND_SIGNAL=SCRIPT
 * run /bin/sh SCRIPT once, to its end, right before the program's first
 * pidfd_open(2) or pidfd_send_signal(2) (through syscall(2) or the C
 * library's wrapper), with the pid or the pidfd as $1: a test puts
 * whatever it likes (a pid reused) between a look-up and its use.
 */
#define _GNU_SOURCE
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "faultshim.h"

#define EXPORT __attribute__((visibility("default")))

static struct {
	enum fault_fn fn;
	int nth;		/* fail the nth call (1-based); 0: disarmed */
	int last;		/* and each after it up to the last-th */
	int err;		/* errno, or FAULT_SHORT */
	int calls;		/* calls of fn since armed */
	int hit;		/* faults injected */
	int notmpfile;		/* -1: read the environment first */
	int norename;		/* -1: read the environment first */
	int noflock;		/* -1: read the environment first */
	int nowatch;
	int nonoappend;	/* pwritev2(RWF_NOAPPEND) refused */
	fault_hook created;	/* once, after an O_EXCL create */
	fault_fd_hook closing;	/* once, before close(closing_fd) */
	fault_fd_hook shortened;	/* once, after a shortened write */
	size_t short_len;	/* what a shortened write writes; 0: half */
	char gone[4096];	/* fault_gone_path(): opens of it say ENOENT */
	int gone_opens;		/* ... and how many did */
	int closing_fd;
	char path[4096];	/* path argument of the failed call, if any */
	bool open_hooked;	/* FAULT_BEFORE_PIDFD_OPEN has run */
	bool send_hooked;	/* FAULT_BEFORE_PIDFD_SEND_SIGNAL has run */
} st = { .notmpfile = -1, .norename = -1, .noflock = -1 };

EXPORT void fault_arm(enum fault_fn fn, int nth, int err)
{
	st.fn = fn;
	st.nth = nth;
	st.last = nth;
	st.err = err;
	st.calls = 0;
	st.hit = 0;
	st.path[0] = '\0';
}

EXPORT void fault_arm_from(enum fault_fn fn, int nth, int err)
{
	fault_arm(fn, nth, err);
	st.last = INT32_MAX;
}

EXPORT void fault_disarm(void)
{
	st.nth = 0;
}

EXPORT int fault_calls(void)
{
	return st.calls;
}

EXPORT int fault_hits(void)
{
	return st.hit;
}

EXPORT const char *fault_path(void)
{
	return st.path;
}

static void note_path(const char *path)
{
	size_t n = strlen(path);

	if (n >= sizeof(st.path))
		n = sizeof(st.path) - 1;
	memcpy(st.path, path, n);
	st.path[n] = '\0';
}

static bool notmpfile(void)
{
	if (st.notmpfile < 0) {
		const char *e = getenv("FAULT_NOTMPFILE");

		st.notmpfile = e && e[0] == '1';
	}
	return st.notmpfile;
}

EXPORT void fault_notmpfile(int on)
{
	st.notmpfile = on;
}

EXPORT void fault_norename(int on)
{
	st.norename = on;
}

EXPORT void fault_noflock(int on)
{
	st.noflock = on;
}

EXPORT void fault_nowatch(int on)
{
	st.nowatch = on;
	st.hit = 0;
}

EXPORT void fault_after_create(fault_hook fn)
{
	st.created = fn;
}

EXPORT void fault_before_close(int fd, fault_fd_hook fn)
{
	st.closing_fd = fd;
	st.closing = fn;
}

/*
 * A torn reading of /proc/locks, made to order (fault_torn_locks() in
 * faultshim.h): rows dropped from chosen readings of the list, as a
 * reading that the kernel printed in pieces while locks came and went
 * may skip a row.  The whole list is read at the first read(2) and
 * handed out in the sizes asked for, so the reader still sees a list
 * that takes more than one read.
 */
static struct {
	unsigned long long ino;
	int pid;		/* only this pid's rows; 0: every row */
	int skip;		/* readings to leave whole first */
	int readings;		/* readings still to tear */
	int seen;		/* readings since armed */
	bool armed;
	int fd;			/* the open list being read, or -1 */
	bool tearing, loaded;
	size_t len, off;
	fault_hook after;	/* once, after a reading is closed */
	char buf[1 << 20];
} torn = { .fd = -1 };

EXPORT void fault_after_locks(fault_hook fn)
{
	torn.after = fn;
}

EXPORT void fault_torn_locks(unsigned long long ino, int pid, int skip,
			     int readings)
{
	torn.ino = ino;
	torn.pid = pid;
	torn.skip = skip;
	torn.readings = readings;
	torn.seen = 0;
	torn.armed = ino != 0;
	torn.fd = -1;
	torn.loaded = false;
}

EXPORT int fault_torn_left(void)
{
	return torn.readings;
}

EXPORT int fault_locks_readings(void)
{
	return torn.seen;
}

static int64_t slept_ms, real_shift_ms;

EXPORT void fault_suspend(int64_t ms)
{
	slept_ms += ms;
}

EXPORT void fault_step_realtime(int64_t ms)
{
	real_shift_ms += ms;
}

/* FAULT_BOOTTIME_FILE's milliseconds, 0 without it. */
static int64_t slept_file_ms(void)
{
	const char *path = getenv("FAULT_BOOTTIME_FILE");
	char buf[32];
	ssize_t n;
	int fd;

	if (!path)
		return 0;
	fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	(void)close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strtoll(buf, NULL, 10);
}

static void *real(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (!p)
		abort();
	return p;
}

/* args is a parameter type list, which parentheses would break. */
/* NOLINTBEGIN(bugprone-macro-parentheses) */
#define REAL(type, name, args) \
	static type (*real_##name) args; \
	if (!real_##name) \
		real_##name = (type (*) args)real(#name)
/* NOLINTEND(bugprone-macro-parentheses) */

/* Is this the call to fail?  Sets errno when it is. */
static bool inject(enum fault_fn fn, bool *shorten)
{
	if (!st.nth || st.fn != fn)
		return false;
	if (++st.calls < st.nth || st.calls > st.last)
		return false;
	st.hit++;
	if (st.err == FAULT_SHORT) {
		if (shorten)
			*shorten = true;
		return !!shorten;
	}
	errno = st.err;
	return true;
}

static void note(const char *what)
{
	const char *log = getenv("FAULT_LOG");
	int saved = errno;
	REAL(int, open, (const char *, int, ...));
	REAL(ssize_t, write, (int, const void *, size_t));
	int fd;

	if (!log || !log[0])
		return;
	fd = real_open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		(void)real_write(fd, what, strlen(what));
		close(fd);
	}
	errno = saved;
}

static bool is_temp_name(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strncmp(base, ".pidlock-tmp-", 13) == 0;
}

static bool is_excl(int flags)
{
	return (flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL);
}

/* The hook runs once, and is cleared first: what it does may open. */
static int after_open(const char *path, int flags, int fd)
{
	fault_hook fn = st.created;
	int saved = errno;

	if (fd >= 0 && torn.armed && strcmp(path, "/proc/locks") == 0) {
		torn.fd = fd;
		torn.loaded = false;
		torn.tearing = torn.seen >= torn.skip && torn.readings > 0;
	}
	if (fd < 0 || !fn || !is_excl(flags) || is_temp_name(path))
		return fd;
	st.created = NULL;
	fn(path);
	errno = saved;
	return fd;
}

static bool needs_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

/* Common to the open family: the injected fault, or the refused
 * O_TMPFILE; false lets the real call go ahead. */
static bool open_fails(const char *path, int flags, enum fault_fn fn)
{
	if (st.gone[0] && !(flags & O_CREAT) && strcmp(path, st.gone) == 0) {
		st.gone_opens++;
		errno = ENOENT;
		return true;
	}
	if (inject(fn, NULL)) {
		note_path(path);
		return true;
	}
	if ((flags & O_TMPFILE) == O_TMPFILE && notmpfile()) {
		note("tmpfile-refused\n");
		errno = EOPNOTSUPP;
		return true;
	}
	if (is_excl(flags) && is_temp_name(path))
		note("named-temp\n");
	return false;
}

/*
 * One wrapper for the open and the openat family: `params` is the
 * wrapper's parameter list (ending in path, flags, ...), `types` the
 * same without names, `args` the call of the real function.  The mode
 * is read only where the flags say the caller passed one.
 */
#define WRAP_OPEN(name, fn, types, params, args) \
EXPORT int name params \
{ \
	REAL(int, name, types); \
	mode_t mode = 0; \
	if (needs_mode(flags)) { \
		va_list ap; \
		va_start(ap, flags); \
		mode = va_arg(ap, mode_t); \
		va_end(ap); \
	} \
	if (open_fails(path, flags, fn)) \
		return -1; \
	return after_open(path, flags, real_##name args); \
}

#define OPEN_WRAPPER(name, fn) \
	WRAP_OPEN(name, fn, (const char *, int, ...), \
		  (const char *path, int flags, ...), (path, flags, mode))
#define OPENAT_WRAPPER(name, fn) \
	WRAP_OPEN(name, fn, (int, const char *, int, ...), \
		  (int dfd, const char *path, int flags, ...), \
		  (dfd, path, flags, mode))

OPEN_WRAPPER(open, FAULT_OPEN)
OPENAT_WRAPPER(openat, FAULT_OPENAT)

/* glibc has separate *64 entry points; in musl they are the same
 * functions (macros), and there is no _FORTIFY_SOURCE variant. */
#ifdef __GLIBC__
OPEN_WRAPPER(open64, FAULT_OPEN)
OPENAT_WRAPPER(openat64, FAULT_OPENAT)

/* _FORTIFY_SOURCE builds call these; their names are glibc's own, so
 * the reserved-identifier warning is what we mean here. */
#ifdef __clang__
#pragma clang diagnostic ignored "-Wreserved-identifier"
#endif
EXPORT int __open_2(const char *path, int flags);
EXPORT int __open_2(const char *path, int flags)
{
	return open(path, flags);
}

EXPORT int __open64_2(const char *path, int flags);
EXPORT int __open64_2(const char *path, int flags)
{
	return open(path, flags);
}

EXPORT int __openat_2(int dfd, const char *path, int flags);
EXPORT int __openat_2(int dfd, const char *path, int flags)
{
	return openat(dfd, path, flags);
}
#endif

EXPORT void fault_gone_path(const char *path)
{
	size_t n = path ? strlen(path) : 0;

	if (n >= sizeof(st.gone))
		n = 0;
	memcpy(st.gone, path ? path : "", n);
	st.gone[n] = '\0';
	st.gone_opens = 0;
}

EXPORT int fault_gone_opens(void)
{
	return st.gone_opens;
}

EXPORT void fault_after_short(fault_fd_hook fn)
{
	st.shortened = fn;
}

EXPORT void fault_short_len(size_t len)
{
	st.short_len = len;
}

static size_t short_of(size_t n)
{
	return st.short_len && st.short_len < n ? st.short_len : n / 2;
}

/* The half of a shortened write is in the file, the rest not yet. */
static ssize_t after_short(int fd, ssize_t written)
{
	fault_fd_hook fn = st.shortened;
	int saved = errno;

	st.shortened = NULL;
	if (fn)
		fn(fd);
	errno = saved;
	return written;
}

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	REAL(ssize_t, write, (int, const void *, size_t));
	bool shorten = false;

	if (inject(FAULT_WRITE, &shorten) && !shorten)
		return -1;
	if (shorten && n > 1)
		return after_short(fd, real_write(fd, buf, short_of(n)));
	return real_write(fd, buf, n);
}

#define PWRITE_WRAPPER(name) \
EXPORT ssize_t name(int fd, const void *buf, size_t n, off_t off) \
{ \
	REAL(ssize_t, name, (int, const void *, size_t, off_t)); \
	bool shorten = false; \
	if (inject(FAULT_PWRITE, &shorten) && !shorten) \
		return -1; \
	if (shorten && n > 1) \
		return after_short(fd, real_##name(fd, buf, short_of(n), off)); \
	return real_##name(fd, buf, n, off); \
}

PWRITE_WRAPPER(pwrite)
#ifdef __GLIBC__
PWRITE_WRAPPER(pwrite64)
#endif

EXPORT int fdatasync(int fd)
{
	REAL(int, fdatasync, (int));

	if (inject(FAULT_FDATASYNC, NULL))
		return -1;
	return real_fdatasync(fd);
}

EXPORT int linkat(int ofd, const char *old, int nfd, const char *new, int fl)
{
	REAL(int, linkat, (int, const char *, int, const char *, int));

	if (inject(FAULT_LINKAT, NULL)) {
		note_path(new);
		return -1;
	}
	return real_linkat(ofd, old, nfd, new, fl);
}

/* A C library without renameat2() (musl before 1.2.4): the library
 * then makes the system call itself, which no shim can see. */
#ifdef RENAME_NOREPLACE
static bool norename(void)
{
	if (st.norename < 0) {
		const char *e = getenv("FAULT_NORENAME");

		st.norename = e && e[0] == '1';
	}
	return st.norename;
}

EXPORT int renameat2(int ofd, const char *old, int nfd, const char *new,
		     unsigned int fl)
{
	REAL(int, renameat2, (int, const char *, int, const char *,
			      unsigned int));

	if (norename() && (fl & RENAME_NOREPLACE)) {
		note("renameat2 refused\n");
		errno = EINVAL;
		return -1;
	}
	if (inject(FAULT_RENAMEAT2, NULL)) {
		note_path(new);
		return -1;
	}
	return real_renameat2(ofd, old, nfd, new, fl);
}
#endif

EXPORT int flock(int fd, int op)
{
	REAL(int, flock, (int, int));

	if (st.noflock < 0) {
		const char *e = getenv("FAULT_NOFLOCK");

		st.noflock = e && e[0] == '1';
	}
	if (st.noflock) {
		st.hit++;
		errno = ENOSYS;
		return -1;
	}
	return real_flock(fd, op);
}

EXPORT void fault_nonoappend(int on)
{
	st.nonoappend = on;
}

/* RWF_NOAPPEND (0x20) refused as a kernel before 6.9 refuses it.  A C
 * library without pwritev2 (musl 1.2.3) has the library make the
 * system call itself, which no shim sees: nothing to wrap there. */
#ifdef HAVE_PWRITEV2
EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off,
			int flags)
{
	REAL(ssize_t, pwritev2, (int, const struct iovec *, int, off_t, int));

	if (st.nonoappend && (flags & 0x20)) {
		st.hit++;
		errno = EOPNOTSUPP;
		return -1;
	}
	return real_pwritev2(fd, iov, cnt, off, flags);
}
#endif

EXPORT int inotify_add_watch(int fd, const char *path, uint32_t mask)
{
	REAL(int, inotify_add_watch, (int, const char *, uint32_t));

	if (st.nowatch) {
		st.hit++;
		errno = ENOSPC;
		return -1;
	}
	return real_inotify_add_watch(fd, path, mask);
}

EXPORT int link(const char *old, const char *new)
{
	REAL(int, link, (const char *, const char *));

	if (inject(FAULT_LINK, NULL)) {
		note_path(new);
		return -1;
	}
	return real_link(old, new);
}

EXPORT int unlink(const char *path)
{
	REAL(int, unlink, (const char *));

	if (inject(FAULT_UNLINK, NULL)) {
		note_path(path);
		return -1;
	}
	return real_unlink(path);
}

EXPORT int unlinkat(int dfd, const char *path, int fl)
{
	REAL(int, unlinkat, (int, const char *, int));

	if (inject(FAULT_UNLINK, NULL)) {
		note_path(path);
		return -1;
	}
	return real_unlinkat(dfd, path, fl);
}

/* Does this row of /proc/locks (a lock, or a "->" request) name the
 * inode to drop? */
static bool torn_row(const char *line)
{
	unsigned long long ino;
	int pid;

	if (!torn.tearing)
		return false;
	if (sscanf(line, "%*d: -> %*s %*s %*s %d %*x:%*x:%llu", &pid, &ino) == 2 ||
	    sscanf(line, "%*d: %*s %*s %*s %d %*x:%*x:%llu", &pid, &ino) == 2)
		return ino == torn.ino && (!torn.pid || pid == torn.pid);
	return false;
}

/* The whole list, less the rows of torn.ino. */
static void torn_load(int fd)
{
	REAL(ssize_t, read, (int, void *, size_t));
	char *line = torn.buf;
	size_t len = 0;
	ssize_t n;

	while (len < sizeof(torn.buf) - 1 &&
	       ((n = real_read(fd, torn.buf + len, sizeof(torn.buf) - 1 - len)) > 0 ||
		(n < 0 && errno == EINTR)))
		len += n > 0 ? (size_t)n : 0;
	torn.buf[len] = '\0';
	torn.len = 0;
	while (line < torn.buf + len) {
		char *nl = strchr(line, '\n');
		size_t l = nl ? (size_t)(nl - line) + 1 : strlen(line);

		if (!torn_row(line)) {
			memmove(torn.buf + torn.len, line, l);
			torn.len += l;
		}
		line += l;
	}
	torn.off = 0;
	torn.loaded = true;
}

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	REAL(ssize_t, read, (int, void *, size_t));

	if (fd != torn.fd || fd < 0)
		return real_read(fd, buf, n);
	if (!torn.loaded)
		torn_load(fd);
	if (n > torn.len - torn.off)
		n = torn.len - torn.off;
	memcpy(buf, torn.buf + torn.off, n);
	torn.off += n;
	return (ssize_t)n;
}

EXPORT int close(int fd)
{
	REAL(int, close, (int));
	fault_fd_hook fn = st.closing;

	fault_hook after = NULL;
	int r;

	if (fd >= 0 && fd == torn.fd) {
		torn.fd = -1;
		if (torn.loaded) {
			torn.seen++;
			torn.readings -= torn.tearing;
		}
		torn.loaded = false;
		after = torn.after;
		torn.after = NULL;
	}
	if (fn && fd == st.closing_fd) {
		st.closing = NULL;
		fn(fd);
	}
	r = real_close(fd);
	if (after) {
		int saved = errno;

		after("/proc/locks");
		errno = saved;
	}
	return r;
}

/* The script named by var, once, run to its end with arg as $1; the
 * shim is not preloaded into it. */
static void run_hook(const char *var, bool *done, long arg)
{
	const char *script = getenv(var);
	int saved = errno, status;
	char text[32];
	pid_t pid;

	if (*done || !script || !script[0])
		return;
	*done = true;
	(void)snprintf(text, sizeof(text), "%ld", arg);
	pid = fork();
	if (pid == 0) {
		(void)unsetenv("LD_PRELOAD");
		execl("/bin/sh", "sh", script, text, (char *)NULL);
		_exit(127);
	}
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	errno = saved;
}

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

/*
 * syscall(2) takes its arguments as longs, as many as the call has: the
 * six a system call can have are passed on, as the C library's own
 * syscall() reads them (the extra ones are whatever the registers hold,
 * and the kernel ignores them).
 */
EXPORT long syscall(long number, ...)
{
	REAL(long, syscall, (long, ...));
	long a[6];
	va_list ap;

	va_start(ap, number);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (number == SYS_pidfd_open)
		run_hook("FAULT_BEFORE_PIDFD_OPEN", &st.open_hooked, a[0]);
	else if (number == SYS_pidfd_send_signal)
		run_hook("FAULT_BEFORE_PIDFD_SEND_SIGNAL", &st.send_hooked, a[0]);
	return real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* The C library's wrappers (glibc 2.36 and later), for a program that
 * calls them instead. */
EXPORT int pidfd_open(pid_t pid, unsigned int flags);
EXPORT int pidfd_open(pid_t pid, unsigned int flags)
{
	REAL(int, pidfd_open, (pid_t, unsigned int));

	run_hook("FAULT_BEFORE_PIDFD_OPEN", &st.open_hooked, pid);
	return real_pidfd_open(pid, flags);
}

EXPORT int pidfd_send_signal(int pidfd, int sig, void *info,
			     unsigned int flags);
EXPORT int pidfd_send_signal(int pidfd, int sig, void *info,
			     unsigned int flags)
{
	REAL(int, pidfd_send_signal, (int, int, void *, unsigned int));

	run_hook("FAULT_BEFORE_PIDFD_SEND_SIGNAL", &st.send_hooked, pidfd);
	return real_pidfd_send_signal(pidfd, sig, info, flags);
}

EXPORT int clock_gettime(clockid_t id, struct timespec *ts)
{
	int64_t ms;
	int r;

	REAL(int, clock_gettime, (clockid_t, struct timespec *));
	r = real_clock_gettime(id, ts);
	if (r < 0 || (id != CLOCK_BOOTTIME && id != CLOCK_REALTIME))
		return r;
	ms = id == CLOCK_REALTIME ? real_shift_ms : slept_ms + slept_file_ms();
	if (ms < 0 && ts->tv_sec + ms / 1000 - 1 < 0)
		ms = -(int64_t)ts->tv_sec * 1000;	/* not before 1970 */
	ts->tv_sec += (time_t)(ms / 1000);
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec < 0) {
		ts->tv_sec--;
		ts->tv_nsec += 1000000000L;
	}
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
	return r;
}
