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
 *   token_bad_counter    a high mark that is not a number, or past
 *                        2^53 - 1: the acquire fails, nothing is held,
 *                        no file is left, and the mark is as it was
 *   token_clock_and_mark the clock in microseconds where the mark is
 *                        behind it, the mark + 1 where it is ahead
 *   token_dir_remade     the directory removed and made again, twice:
 *                        every grant above every earlier one
 *   token_dir_replaced   the directory replaced while A holds: B's token
 *                        outranks A's
 *   token_many_names     300 lock names in one directory: all granted,
 *                        at most 16 attributes kept
 *
 * A directory whose file system keeps no user extended attributes makes
 * every acquire fail with -EOPNOTSUPP: the tests that need a counter
 * then check that failure and say what they did not test.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "pidlock.h"
#include "testutil.h"

#define ROUNDS 15
#define TAKEN 30	/* 2 x ROUNDS */
#define TOKEN_NAMES 300	/* past the 88 that filled ext4 */

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

static void bad_counter(const char *dir, const char *path, const char *name,
			const char *value, int want)
{
	struct pidlock *l = tu_new(path, PIDLOCK_TOKEN);
	char back[32] = "";
	ssize_t n;

	ck_assert_int_eq(setxattr(dir, name, value, strlen(value), 0), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), want);
	ck_assert_int_eq(pidlock_fd(l), -ENOLCK);
	ck_assert(!tu_exists(path));
	n = getxattr(dir, name, back, sizeof(back) - 1);
	ck_assert_int_eq(n, (ssize_t)strlen(value));
	ck_assert_str_eq(back, value);
	pidlock_free(l);
}

/* The wall clock in microseconds: what a token is at least. */
static uint64_t clock_us(void)
{
	struct timespec ts;

	ck_assert_int_eq(clock_gettime(CLOCK_REALTIME, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* The names of the directory's token attributes, and how many there are
 * (user.pidlock.tokens.*; `stray` counts any other user.pidlock.token*). */
static int token_attrs(const char *dir, char *first, size_t size, int *stray)
{
	static char list[1 << 20];
	ssize_t n = listxattr(dir, list, sizeof(list));
	int count = 0;

	ck_assert_msg(n >= 0, "listxattr: %s", strerror(errno));
	*stray = 0;
	for (char *p = list; p < list + n; p += strlen(p) + 1) {
		if (strncmp(p, "user.pidlock.tokens.", 20) == 0) {
			if (count++ == 0 && first && strlen(p) < size)
				memcpy(first, p, strlen(p) + 1);
		} else if (strncmp(p, "user.pidlock.token", 18) == 0) {
			(*stray)++;
		}
	}
	return count;
}

/* A high mark that is no number, or past 2^53 - 1 (every JSON reader
 * compares tokens exactly below that): the acquire fails, nothing is
 * held, no file is left, and the mark is as it was.  The mark is found
 * by the first grant, alone in a directory of its own. */
START_TEST(token_bad_counter)
{
	char *dir;
	char path[PATH_MAX], name[64];
	uint64_t t;
	int stray;

	if (refused_without_xattrs(tu_path("b.lock")))
		return;
	dir = tu_mkdtemp(tu_dir(), "bad");

	snprintf(path, sizeof(path), "%s/b.lock", dir);
	t = take_one(path);
	ck_assert_int_eq(token_attrs(dir, name, sizeof(name), &stray), 1);
	bad_counter(dir, path, name, "12x", -ERANGE);
	bad_counter(dir, path, name, "18446744073709551615", -EOVERFLOW);
	bad_counter(dir, path, name, "9007199254740991", -EOVERFLOW);
	ck_assert_int_eq(removexattr(dir, name), 0);
	ck_assert(take_one(path) > t);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

/* A token is the clock in microseconds where the mark is behind it, and
 * the mark + 1 where the mark is ahead (two grants in a microsecond, a
 * clock stepped back, another host's clock ahead of ours). */
START_TEST(token_clock_and_mark)
{
	char *dir;
	char path[PATH_MAX], name[64], text[32];
	uint64_t before, t, ahead;
	int stray;

	if (refused_without_xattrs(tu_path("c.lock")))
		return;
	dir = tu_mkdtemp(tu_dir(), "clock");

	snprintf(path, sizeof(path), "%s/c.lock", dir);
	before = clock_us();
	t = take_one(path);
	ck_assert_msg(t >= before && t <= clock_us(), "token %" PRIu64
		      " is not the clock (%" PRIu64 ")", t, before);
	ck_assert(t < (UINT64_C(1) << 53));
	ck_assert_int_eq(token_attrs(dir, name, sizeof(name), &stray), 1);
	ahead = clock_us() + UINT64_C(3600000000);
	snprintf(text, sizeof(text), "%" PRIu64, ahead);
	ck_assert_int_eq(setxattr(dir, name, text, strlen(text), 0), 0);
	ck_assert(take_one(path) == ahead + 1);
	ck_assert(take_one(path) == ahead + 2);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

/* systemd's RuntimeDirectory=, a tmpfiles rule or a cleaned /tmp remove
 * the directory and make it again: the marks go with it, and the next
 * grant must still be above every earlier one. */
START_TEST(token_dir_remade)
{
	char *dir;
	char path[PATH_MAX];
	uint64_t last = 0;

	if (refused_without_xattrs(tu_path("r.lock")))
		return;
	dir = tu_mkdtemp(tu_dir(), "remade");

	snprintf(path, sizeof(path), "%s/r.lock", dir);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 3; i++) {
			uint64_t t = take_one(path);

			ck_assert_msg(t > last, "round %d: token %" PRIu64
				      " after %" PRIu64, round, t, last);
			last = t;
		}
		ck_assert_int_eq(rmdir(dir), 0);
		ck_assert_int_eq(mkdir(dir, 0755), 0);
	}
	tu_rmtree(dir);
	free(dir);
}
END_TEST

/* The directory moved away and replaced while A holds: B, granted the
 * lock in the new directory, must outrank A at the resource. */
START_TEST(token_dir_replaced)
{
	char *dir;
	char path[PATH_MAX], old[PATH_MAX];
	struct tu_child a;
	uint64_t ta = 0;

	if (refused_without_xattrs(tu_path("p.lock")))
		return;
	dir = tu_mkdtemp(tu_dir(), "replaced");

	snprintf(path, sizeof(path), "%s/p.lock", dir);
	snprintf(old, sizeof(old), "%s.old", dir);
	(void)take_one(path);
	if (tu_fork(&a) == 0) {
		struct pidlock *l = tu_new(path, PIDLOCK_TOKEN);
		uint64_t t = 0;

		TU_CHILD_CHECK(pidlock_acquire(l, 5000) == 0);
		TU_CHILD_CHECK(pidlock_token(l, &t) == 0);
		TU_CHILD_CHECK(write(a.to_parent, &t, sizeof(t)) ==
			       (ssize_t)sizeof(t));
		(void)tu_wait_parent(&a);
		/* The path names B's file now, not A's. */
		TU_CHILD_CHECK(pidlock_release(l) == -ESTALE);
		_exit(0);
	}
	ck_assert_int_eq(read(a.from_child, &ta, sizeof(ta)),
			 (ssize_t)sizeof(ta));
	ck_assert_int_eq(rename(dir, old), 0);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	ck_assert_msg(take_one(path) > ta, "the new directory's holder does "
		      "not outrank A's token %" PRIu64, ta);
	tu_tell(&a, 'R');
	ck_assert_int_eq(tu_join(&a), 0);
	tu_rmtree(old);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

/* A lock name per job, user or file: any number of names in one
 * directory works, and the directory keeps a bounded set of attributes
 * (one per name filled ext4's attribute block at the 88th name).  Each
 * name's second grant is above its first. */
START_TEST(token_many_names)
{
	char *dir;
	char path[PATH_MAX];
	int stray, kept;

	if (refused_without_xattrs(tu_path("m.lock")))
		return;
	dir = tu_mkdtemp(tu_dir(), "many");

	for (int i = 0; i < TOKEN_NAMES; i++) {
		uint64_t t;

		snprintf(path, sizeof(path), "%s/job-%d.lock", dir, i);
		t = take_one(path);
		ck_assert_msg(take_one(path) > t, "name %d: no increase", i);
	}
	kept = token_attrs(dir, NULL, 0, &stray);
	fprintf(stderr, "%d names: %d token attributes kept\n", TOKEN_NAMES,
		kept);
	ck_assert_int_le(kept, 16);
	ck_assert_int_eq(stray, 0);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

int main(void)
{
	const struct tu_case cases[] = {
		{ tokens_increase, 1 },
		{ token_arguments, 1 },
		{ token_bad_counter, 1 },
		{ token_clock_and_mark, 1 },
		{ token_dir_remade, 1 },
		{ token_dir_replaced, 1 },
		{ token_many_names, 1 },
		{ NULL, 0 },
	};

	tu_run_cases("token", "token", 60, cases);
}
