/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fencing tokens (PIDLOCK_TOKEN): every grant a number greater than
 * every earlier grant's on the path, kept across unlinks, across
 * processes and handles, written as token= in the record; a counter
 * that cannot be kept fails the acquire and leaves nothing held.
 *
 *   tokens_increase      two processes take turns, 2 x 15 grants, each
 *                        by a handle of its own and the file unlinked
 *                        between: strictly increasing, and each record
 *                        names its token
 *   token_arguments      PIDLOCK_SHARED with it, a handle without it,
 *                        a handle that holds nothing
 *   token_bad_counter    a counter that is not a number, or at its
 *                        maximum: the acquire fails, nothing is held,
 *                        no file is left, and the counter is as it was
 *   token_per_name       two lock names in one directory count apart
 *
 * A directory whose file system keeps no user extended attributes makes
 * every acquire fail with -EOPNOTSUPP: the tests that need a counter
 * then check that failure and say what they did not test.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "pidlock.h"
#include "testutil.h"

#define ROUNDS 15
#define TAKEN 30	/* 2 x ROUNDS */

/* Does the test directory keep user xattrs?  If not, an acquire with a
 * token must fail, and leave nothing. */
static bool xattrs_here(void)
{
	const char *dir = tu_dir();

	if (setxattr(dir, "user.pidlock.test", "1", 1, 0) == 0) {
		(void)removexattr(dir, "user.pidlock.test");
		return true;
	}
	ck_assert_msg(errno == ENOTSUP || errno == EPERM,
		      "setxattr: %s", strerror(errno));
	return false;
}

static bool refused_without_xattrs(const char *path)
{
	struct pidlock *l;

	if (xattrs_here())
		return false;
	l = tu_new(path, PIDLOCK_TOKEN);
	ck_assert_int_lt(pidlock_acquire(l, 0), 0);
	ck_assert(!tu_exists(path));
	pidlock_free(l);
	fprintf(stderr, "not tested: no user xattrs in %s\n", tu_dir());
	return true;
}

/* One grant: its token, checked against the record.  (Whether the
 * release unlinked is not asked: the other process of tokens_increase
 * may have made the file again by then; token_per_name's counts after
 * each unlink show the counter survives it.) */
static uint64_t take_one(const char *path)
{
	struct pidlock *l = tu_new(path, PIDLOCK_TOKEN);
	char line[40];
	uint64_t t = 0;

	ck_assert_int_eq(pidlock_acquire(l, 5000), 0);
	ck_assert_int_eq(pidlock_token(l, &t), 0);
	snprintf(line, sizeof(line), "\ntoken=%" PRIu64 "\n", t);
	ck_assert_msg(strstr(tu_read(path), line) != NULL,
		      "no %s in the record: %s", line + 1, tu_read(path));
	ck_assert_int_eq(pidlock_release(l), 0);
	pidlock_free(l);
	return t;
}

/* Each side writes its tokens to a pipe; both sides take turns through
 * the lock itself, so their grants interleave. */
START_TEST(tokens_increase)
{
	char *path = tu_path("t.lock");
	uint64_t seen[TAKEN], last = 0;
	int p[2], n = 0;
	pid_t child;

	if (refused_without_xattrs(path))
		return;
	ck_assert_int_eq(pipe(p), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		for (int i = 0; i < ROUNDS; i++) {
			uint64_t t = take_one(path);

			TU_CHILD_CHECK(write(p[1], &t, sizeof(t)) ==
				       (ssize_t)sizeof(t));
		}
		_exit(0);
	}
	ck_assert_int_eq(close(p[1]), 0);
	for (int i = 0; i < ROUNDS; i++)
		seen[n++] = take_one(path);
	while (n < TAKEN &&
	       read(p[0], &seen[n], sizeof(seen[n])) == sizeof(seen[n]))
		n++;
	ck_assert_int_eq(tu_reap(child), 0);
	ck_assert_int_eq(n, TAKEN);
	/* Distinct, whoever took them: sorted, each greater than the last. */
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			ck_assert_msg(seen[i] != seen[j], "token %" PRIu64
				      " given twice", seen[i]);
	for (int i = 0; i < ROUNDS; i++) {
		ck_assert(seen[i] > last);
		last = seen[i];
	}
	ck_assert(take_one(path) > last);
	ck_assert_int_eq(close(p[0]), 0);
}
END_TEST

START_TEST(token_arguments)
{
	char *path = tu_path("a.lock");
	struct pidlock *l;
	uint64_t t = 7;

	ck_assert_int_eq(pidlock_new(&l, path, PIDLOCK_TOKEN | PIDLOCK_SHARED),
			 -EINVAL);
	l = tu_new(path, 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_token(l, &t), -EINVAL);
	ck_assert(strstr(tu_read(path), "token=") == NULL);
	ck_assert_int_eq(pidlock_release(l), 0);
	pidlock_free(l);
	l = tu_new(path, PIDLOCK_TOKEN);
	ck_assert_int_eq(pidlock_token(l, &t), -ENOLCK);
	ck_assert_int_eq(pidlock_token(l, NULL), -EINVAL);
	ck_assert_int_eq(pidlock_token(NULL, &t), -EINVAL);
	ck_assert(t == 7);
	pidlock_free(l);
}
END_TEST

static void bad_counter(const char *path, const char *name,
			const char *value, int want)
{
	struct pidlock *l = tu_new(path, PIDLOCK_TOKEN);
	char back[32] = "";
	ssize_t n;

	ck_assert_int_eq(setxattr(tu_dir(), name, value, strlen(value), 0), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), want);
	ck_assert_int_eq(pidlock_fd(l), -ENOLCK);
	ck_assert(!tu_exists(path));
	n = getxattr(tu_dir(), name, back, sizeof(back) - 1);
	ck_assert_int_eq(n, (ssize_t)strlen(value));
	ck_assert_str_eq(back, value);
	pidlock_free(l);
}

START_TEST(token_bad_counter)
{
	char *path = tu_path("b.lock");

	if (refused_without_xattrs(path))
		return;
	bad_counter(path, "user.pidlock.token.b.lock", "12x", -ERANGE);
	bad_counter(path, "user.pidlock.token.b.lock",
		    "18446744073709551615", -EOVERFLOW);
	ck_assert_int_eq(removexattr(tu_dir(), "user.pidlock.token.b.lock"), 0);
	ck_assert(take_one(path) == 1);
}
END_TEST

START_TEST(token_per_name)
{
	char *a = strdup(tu_path("x.lock"));
	char *b = strdup(tu_path("y.lock"));

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	if (refused_without_xattrs(a))
		goto out;
	ck_assert(take_one(a) == 1);
	ck_assert(take_one(a) == 2);
	ck_assert(take_one(b) == 1);
	ck_assert(take_one(a) == 3);
	/* Each release unlinked the file: the counter is the directory's. */
	ck_assert(!tu_exists(a));
out:
	free(a);
	free(b);
}
END_TEST

int main(void)
{
	const struct tu_case cases[] = {
		{ tokens_increase, 1 },
		{ token_arguments, 1 },
		{ token_bad_counter, 1 },
		{ token_per_name, 1 },
		{ NULL, 0 },
	};

	tu_run_cases("token", "token", 60, cases);
}
