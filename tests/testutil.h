/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The helper library of every Check suite (prefix tu_).  Every helper
 * fails the running test on an unexpected error, so a test reads as the
 * rule it guards.  testutil.c: processes, files by name, the runner;
 * testutil-fs.c: scratch trees and snapshots that prove a call changed
 * nothing on disk.
 */
#ifndef PIDLOCK_TESTUTIL_H
#define PIDLOCK_TESTUTIL_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "pidlock.h"

/* pidlock_new() that must succeed. */
struct pidlock *tu_new(const char *path, unsigned int flags);
/* The pid of a process that has exited and been reaped. */
pid_t tu_dead_pid(void);
/* A live child that holds nothing and waits in pause(2) until killed
 * (tu_reap() after the kill). */
pid_t tu_live_pid(void);
/* /proc/sys/kernel/pid_max. */
long tu_pid_max(void);

/* A fresh directory per test, removed with its content by tu_cleanup(). */
const char *tu_dir(void);
/* tu_dir()/name, in a static rotating buffer (writable, so it can be a
 * tu_spawn() argument as it is). */
char *tu_path(const char *name);
void tu_cleanup(void);

/* Open descriptors of this process: the entries of /proc/self/fd, less
 * the one that lists them. */
int tu_count_fds(void);
/* Our inotify instances (descriptors of anon_inode:inotify). */
int tu_count_inotify(void);
/* The library's own inotify instance, as the warm-up made it; -1: none. */
int tu_library_ifd(void);
/* A peer program as configure found it ($WITH_LOCK_EX, $FLOCK).  A
 * missing peer fails the test: it proves nothing without it. */
const char *tu_peer(const char *var);
const char *tu_flock_bin(void);
void tu_write(const char *path, const char *content);
/* open(2) of path with oflags | O_CLOEXEC (0644 where it creates), which
 * must succeed: a descriptor of our own beside the library's. */
int tu_open(const char *path, int oflags);
/* Whole file as a NUL-terminated string; "" if missing.  Static buffer. */
const char *tu_read(const char *path);
bool tu_exists(const char *path);
ino_t tu_ino(const char *path);
/* Permission bits (07777) of what path leads to, or -1. */
int tu_mode(const char *path);
/* mtime of what path leads to in nanoseconds, or -1. */
int64_t tu_mtime_ns(const char *path);
long tu_ms(void);
/* CPU time this process has used (user and system), in ms. */
long tu_cpu_ms(void);
/* Current time, Unix seconds. */
int64_t tu_now(void);
/* Sleep, resumed after signals. */
void tu_msleep(unsigned int ms);
void tu_set_mtime_ago(const char *path, long seconds);

/*
 * A child process: runs fn(arg) and exits with its return value.  The
 * child reports progress on the pipe with tu_signal(); the parent waits
 * for it with tu_wait_signal().
 */
struct tu_child {
	pid_t pid;
	int to_parent;		/* child's end */
	int from_child;		/* parent's end */
	int to_child;		/* parent's end */
	int from_parent;	/* child's end */
};
typedef int (*tu_fn)(struct tu_child *c, void *arg);
void tu_spawn(struct tu_child *c, tu_fn fn, void *arg);
/* fork(2) with the pipes of tu_spawn(): 0 in the child, which must end
 * with _exit(); the child's pid in the parent. */
pid_t tu_fork(struct tu_child *c);
void tu_signal(struct tu_child *c, char what);
char tu_wait_signal(struct tu_child *c);	/* parent side */
char tu_wait_parent(struct tu_child *c);	/* child side */
void tu_tell(struct tu_child *c, char what);	/* parent side */
int tu_join(struct tu_child *c);		/* exit status, or 128+sig */
void tu_kill(struct tu_child *c);		/* SIGKILL and reap */
/* waitpid() for a plain child: exit status, or 128+sig. */
int tu_reap(pid_t pid);
/* A fork(2) whose child lets go of its copy of l (pidlock_release())
 * and exits 0 if that returned 0: the child's status (tu_reap()). */
int tu_forked_release(struct pidlock *l);

/* In a forked child a failed Check assertion would not reach the
 * runner: say what failed and exit 3, which the parent's join sees. */
#define TU_CHILD_CHECK(cond) do { if (!(cond)) { \
	fprintf(stderr, "child: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
	_exit(3); } } while (0)

/* expr returns `ret` and sets errno to `err` (the pidfile(3) way). */
#define TU_ASSERT_ERRNO(expr, ret, err) do { \
	errno = 0; \
	ck_assert_int_eq((expr), (ret)); \
	ck_assert_int_eq(errno, (err)); } while (0)

/* A child that takes the lock with `flags`, says 'L', and holds it
 * until told 'R' (release) or killed. */
void tu_hold(struct tu_child *c, const char *path, unsigned int flags);
/* A child that holds a classic POSIX fcntl(2) write lock on the whole
 * existing file at path (no flock), until told anything (tu_tell). */
void tu_posix_hold(struct tu_child *c, char *path);

/* A flock(1) process (`flock -n [-s] path`) that holds the lock until
 * told '\n' (tu_tell), then exits 0; returns once flock(1) holds.
 * tu_join() returns when flock(1) has let go (it waits for its command). */
void tu_flock1_hold(struct tu_child *c, const char *path, bool shared);
/* Waits until process pid sleeps in poll(2) (/proc/PID/syscall): a
 * library wait between two tries, with nothing under way.  false if
 * this kernel or its settings do not show it (the caller says it did
 * not test). */
bool tu_wait_in_poll(pid_t pid);

/* pidlock_wait_free(path, ms) on a lock that stays held: -ETIMEDOUT,
 * and a wait that slept, under cpu_bound ms of our CPU. */
void tu_wait_free_sleeps(const char *path, int ms, long cpu_bound);

/* A child that makes and removes another name beside the lock, every
 * 20 ms for a second (events a wait must sleep through); its pid, to
 * tu_reap(), which gives 0. */
pid_t tu_churn_names(void);

/* Requests blocked in the kernel on inode ino ("N: -> ..." rows of
 * /proc/locks), of process pid, or of anybody if pid is 0. */
int tu_queued(unsigned long long ino, pid_t pid);

/* The value of the "name:" line of a /proc status file at path (white
 * space before it skipped), in a static buffer; a missing line fails
 * the test. */
const char *tu_status_value(const char *path, const char *name);

/* Run a shell command; returns its exit status. */
int tu_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Does the library publish in place in tu_dir() (no RENAME_NOREPLACE and
 * no O_TMPFILE there: doc/protocol.md, section 3)?  Then a reader may see
 * a new lock file empty for a moment, and a contended create may leave a
 * kept file behind. */
bool tu_in_place(void);

/* --- scratch trees and snapshots (testutil-fs.c) -------------------- */

/* A mount namespace of this process's own, nothing propagated back (for
 * a FUSE mount that must vanish with the test); false, said why on
 * stderr, where it cannot be had. */
bool tu_own_mounts(void);

/* snprintf that fails the test if the result does not fit. */
#define tu_fmt(buf, size, ...) do { \
		int tu_n_ = snprintf(buf, size, __VA_ARGS__); \
		ck_assert(tu_n_ >= 0 && (size_t)tu_n_ < (size_t)(size)); \
	} while (0)

/* A fresh 0700 directory under parent, or $TMPDIR, or /tmp; caller
 * frees. */
char *tu_mkdtemp(const char *parent, const char *tag);

/*
 * The directory of a test case's scratch directories (tu_base()), made
 * and removed by the runner process as an unchecked fixture: a test that
 * fails skips its own teardown, and still leaves nothing behind.
 */
const char *tu_base(void);
void tu_base_setup(void);
void tu_base_teardown(void);

/* A test case in s with tu_base() around it and setup/teardown (either
 * may be NULL) around each test; timeout 0 keeps Check's default. */
TCase *tu_tcase(Suite *s, const char *name, void (*setup)(void),
		void (*teardown)(void), int timeout);

/* rm -rf without following symlinks; makes directories writable first. */
void tu_rmtree(const char *path);

/* The same, ignoring errors: for clean-up after a failed test. */
void tu_rmtree_quiet(const char *path);

/* Create (O_EXCL) a file with exactly these bytes and this mode. */
void tu_write_file(const char *path, const void *data, size_t len,
		   mode_t mode);

/* The whole file, NUL-terminated for convenience; *len its size. */
char *tu_read_file(const char *path, size_t *len);

/* Set mtime (and atime) to `sec` seconds, without following links. */
void tu_set_mtime(const char *path, int64_t sec);

/*
 * A listing of everything under `path` (not following links): name,
 * type, mode, owner, inode, link count, size, mtime, ctime, and a hash
 * of the first MiB of each regular file, or a symlink's target.  Two
 * equal snapshots mean nothing was created, deleted, written,
 * truncated or renamed.  Caller frees.
 */
char *tu_snapshot(const char *path);

/* Fail unless the two snapshots are equal; shows both if not. */
void tu_assert_same(const char *before, const char *after, const char *what);

/* Snapshot `path` again, compare with `before`, free both. */
void tu_assert_unchanged(const char *path, char *before, const char *what);

/* Does any name under `dir` start with the library's temp prefix? */
bool tu_has_temp(const char *dir);

/* --- the runner ------------------------------------------------------ */

/* Runs the suite as CK_RUN_SUITE, CK_RUN_CASE, CK_VERBOSITY, CK_FORK
 * and the tag variables say, and exits: 0 if every check passed. */
/* Runs the suite; first (unless tu_cold_library) the library's first
 * PIDLOCK_KEEP_IF_USED acquire, whose inotify instance then lives as
 * long as the process (lib/opens.c). */
extern bool tu_cold_library;
void tu_run_suite(Suite *s) __attribute__((noreturn));

/* --- the shapes the protocol suites share ---------------------------- */

/* One row of a suite's table: a test, and how many times it runs: 1, or
 * one run per case (_i from 0) where its body is a table of cases. */
/*
 * Every test is added through these: with TU_TESTS="name1 name2" in the
 * environment only the tests of those names are (the mutation gate's
 * run of a mutation's guards, tests/mutations/run.sh); unset or empty,
 * every test is.
 */
void tu_add_test(TCase *tc, const TTest *test);
void tu_add_loop_test(TCase *tc, const TTest *test, int start, int end);

struct tu_case {
	const TTest *test;
	int runs;
};
/* Runs the tests of `cases` (up to a NULL test) as one test case, each
 * with the given timeout in seconds (0: Check's own) and a fresh tu_dir()
 * removed after it, and exits as tu_run_suite() does. */
void tu_run_cases(const char *suite, const char *tcase, int timeout,
		  const struct tu_case *cases) __attribute__((noreturn));

/* A child that makes a handle on path with `flags`, says 'W', waits for
 * 'G', then blocks in acquire; once it holds the file at the path
 * (pidlock_verify()) it says 'L', and frees the handle when told anything.
 * Exit 0; 10 + errno if the acquire failed, 3 if what it held was not
 * the file at the path. */
void tu_waiter(struct tu_child *c, const char *path, unsigned int flags);
/* The tu_waiter() c holds now: it says 'L'; then it is let go and exits
 * 0. */
void tu_waiter_took(struct tu_child *c);

/* A child that takes the lock with `flags` and exits without releasing
 * (as an exec'd command ends); returns once it has been reaped. */
void tu_exit_holding(const char *path, unsigned int flags);

/* A child that holds a read lease on path (ignoring the break notice)
 * until told anything.  false, the child reaped, where leases are refused
 * here (file system, fs.leases-enable): the caller says it did not test. */
bool tu_lease(struct tu_child *c, const char *path);

/* Forks a process that tells c `what` after ms; reap it with wait(). */
void tu_tell_later(struct tu_child *c, int ms, char what);

/* A spec-only holder's record at path: pid, a timestamp `age` seconds
 * old, and tag= unless tag is NULL. */
void tu_write_spec(const char *path, pid_t pid, long age, const char *tag);
/* This host as records name it: uname's node name, the kernel's boot id
 * ("" without /proc), our pid namespace's inode (""), and the lines a
 * record of ours ends with. */
const char *tu_host_name(void);
const char *tu_boot_id(void);
const char *tu_pidns(void);
const char *tu_host_lines(void);

/*
 * A test on the path tu_path("a.lock") with a handle on it made by
 * make(path, flags) (tu_new(), or a suite's own maker that sets more on
 * the handle), the start and end most protocol tests share: the body
 * that follows gets both as p and l, and the handle is freed after it.
 */
#define TU_LOCK_TEST_MADE(name, make, flags)				\
	static void name##_body(char *p, struct pidlock *l);		\
	START_TEST(name)						\
	{								\
		char *lock_path = tu_path("a.lock");			\
		struct pidlock *lock = make(lock_path, (flags));	\
									\
		name##_body(lock_path, lock);				\
		pidlock_free(lock);					\
	}								\
	END_TEST							\
	static void name##_body(char *p, struct pidlock *l)
/* TU_LOCK_TEST_MADE with tu_new(). */
#define TU_LOCK_TEST(name, flags) TU_LOCK_TEST_MADE(name, tu_new, flags)

/* Tells a tu_hold() child to release, checks that it did, and that l
 * then takes the lock at once. */
void tu_release_to(struct tu_child *c, struct pidlock *l);

#endif
