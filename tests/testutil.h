/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef PIDLOCK_TESTUTIL_H
#define PIDLOCK_TESTUTIL_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "pidlock.h"

/* pidlock_new() that must succeed. */
struct pidlock *tu_new(const char *path, unsigned int flags);
/* The pid of a process that has exited and been reaped. */
pid_t tu_dead_pid(void);

/* A fresh directory per test, removed with its content by tu_cleanup(). */
const char *tu_dir(void);
/* tu_dir()/name, in a static rotating buffer (writable, so it can be a
 * tu_spawn() argument as it is). */
char *tu_path(const char *name);
void tu_cleanup(void);

int tu_count_fds(void);
void tu_write(const char *path, const char *content);
/* Whole file as a NUL-terminated string; "" if missing.  Static buffer. */
const char *tu_read(const char *path);
bool tu_exists(const char *path);
ino_t tu_ino(const char *path);
long tu_ms(void);
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
void tu_signal(struct tu_child *c, char what);
char tu_wait_signal(struct tu_child *c);	/* parent side */
char tu_wait_parent(struct tu_child *c);	/* child side */
void tu_tell(struct tu_child *c, char what);	/* parent side */
int tu_join(struct tu_child *c);		/* exit status, or 128+sig */
void tu_kill(struct tu_child *c);		/* SIGKILL and reap */

/* A child that takes the lock with `flags`, says 'L', and holds it
 * until told 'R' (release) or killed. */
void tu_hold(struct tu_child *c, const char *path, unsigned int flags);

/* Run a shell command; returns its exit status. */
int tu_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Does the library publish in place in tu_dir() (no RENAME_NOREPLACE and
 * no O_TMPFILE there: doc/protocol.md, section 3)?  Then a reader may see
 * a new lock file empty for a moment, and a contended create may leave a
 * kept file behind. */
bool tu_in_place(void);

void tu_run_suite(Suite *s) __attribute__((noreturn));

#endif

/* --- shared test shapes (A2) --- */

/* One row of a suite's table: a test, and how many times it runs: 1, or
 * one run per case (_i from 0) where its body is a table of cases. */
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

/*
 * A test on the path tu_path("a.lock") with a handle on it made with
 * `flags`, the start and end most protocol tests share: the body that
 * follows gets both as p and l, and the handle is freed after it.
 */
#define TU_LOCK_TEST(name, flags)					\
	static void name##_body(char *p, struct pidlock *l);		\
	START_TEST(name)						\
	{								\
		char *lock_path = tu_path("a.lock");			\
		struct pidlock *lock = tu_new(lock_path, (flags));	\
									\
		name##_body(lock_path, lock);				\
		pidlock_free(lock);					\
	}								\
	END_TEST							\
	static void name##_body(char *p, struct pidlock *l)

/* Tells a tu_hold() child to release, checks that it did, and that l
 * then takes the lock at once. */
void tu_release_to(struct tu_child *c, struct pidlock *l);

/* --- end A2 --- */
