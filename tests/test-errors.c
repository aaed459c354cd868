/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The error promise of pidlock(3): an exported function returns only
 * codes of the list under ERRORS in pidlock(3), and any other errno a
 * system call reports comes out as -EIO.  Guards:
 *  - the filter's table (io_rc_filter(), lib/io.c) and the list in the
 *    page are the same set, and everything else maps to -EIO;
 *  - no function's page names a code outside that list;
 *  - a real undocumented errno (EUCLEAN, injected by the fault shim)
 *    leaves acquire, refresh, release, lock_fd and unlock_fd as -EIO,
 *    while documented ones (ENOSPC, EROFS) pass unchanged.
 * Linked with the convenience library, to reach io_rc_filter(), and
 * with the fault shim ahead of the C library.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "testutil.h"
#include "fault/faultshim.h"

/* Highest errno value the kernel uses is far below this; the filter
 * must answer for every negative int, these are the ones that occur. */
#define ERRNO_SCAN 4096
#define NAME_MAX_LEN 32

/* The names a page may use for one value: Linux aliases. */
static const char *canonical(const char *name)
{
	if (strcmp(name, "EWOULDBLOCK") == 0)
		return "EAGAIN";
	if (strcmp(name, "ENOTSUP") == 0)
		return "EOPNOTSUPP";
	if (strcmp(name, "EDEADLOCK") == 0)
		return "EDEADLK";
	return name;
}

/* The errno value of a name such as "EACCES", or 0 if none has it. */
static int errno_of(const char *name)
{
	name = canonical(name);
	for (int e = 1; e < ERRNO_SCAN; e++) {
		const char *n = strerrorname_np(e);

		if (n && strcmp(n, name) == 0)
			return e;
	}
	return 0;
}

static char *page_path(const char *name)
{
	const char *srcdir = getenv("srcdir");
	static char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s/man/%s", srcdir ? srcdir : ".", name);
	return buf;
}

/*
 * Words of an E-code shape (E, then at least two capitals or digits) in
 * a line: "\-EIO", ".B EEXIST", ".BR \-ENOSPC \", \" \-EDQUOT".
 */
static void codes_of_line(const char *line, const char *page, bool *set)
{
	const char *p = line;

	while (*p) {
		size_t n = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
		bool word_start = p == line || !(p[-1] >= 'a' && p[-1] <= 'z');
		char name[NAME_MAX_LEN];

		if (n == 0) {
			p++;
			continue;
		}
		if (word_start && p[0] == 'E' && n >= 3 && n < sizeof(name) &&
		    !memchr(p, '_', n)) {
			int e;

			memcpy(name, p, n);
			name[n] = '\0';
			e = errno_of(name);
			ck_assert_msg(e > 0, "%s: ERRORS names %s, no errno",
				      page, name);
			set[e] = true;
		}
		p += n;
	}
}

/* The codes named in the ERRORS section of man/<name>; false if the
 * page has no such section. */
static bool page_codes(const char *name, bool *set)
{
	FILE *f = fopen(page_path(name), "re");
	char line[1024];
	bool in = false, found = false;

	ck_assert_msg(f != NULL, "cannot open %s", page_path(name));
	memset(set, 0, ERRNO_SCAN * sizeof(*set));
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, ".SH ", 4) == 0) {
			in = strcmp(line, ".SH ERRORS\n") == 0;
			found |= in;
			continue;
		}
		if (in)
			codes_of_line(line, name, set);
	}
	fclose(f);
	return found;
}

START_TEST(filter_table_is_pidlock3)
{
	static bool doc[ERRNO_SCAN];

	ck_assert(page_codes("pidlock.3", doc));
	for (int e = 1; e < ERRNO_SCAN; e++) {
		int r = io_rc_filter(-e);

		if (doc[e])
			ck_assert_msg(r == -e, "%s is in pidlock(3) ERRORS "
				      "but the filter maps it to %d",
				      strerrorname_np(e), r);
		else
			ck_assert_msg(r == -EIO, "%s passes the filter as %d "
				      "but pidlock(3) ERRORS does not list it",
				      strerrorname_np(e) ? strerrorname_np(e)
							 : "?", r);
	}
	ck_assert(doc[EIO]);
	ck_assert_int_eq(io_rc_filter(0), 0);
	ck_assert_int_eq(io_rc_filter(7), 7);	/* pidlock_fd() */
	ck_assert_int_eq(io_rc_filter(-ERRNO_SCAN - 1), -EIO);
}
END_TEST

static bool is_alias(const char *name)
{
	FILE *f = fopen(page_path(name), "re");
	char line[16] = "";
	bool alias;

	ck_assert_msg(f != NULL, "cannot open %s", page_path(name));
	alias = fgets(line, sizeof(line), f) && strncmp(line, ".so ", 4) == 0;
	fclose(f);
	return alias;
}

START_TEST(pages_name_only_listed_codes)
{
	static bool doc[ERRNO_SCAN], page[ERRNO_SCAN];
	const char *srcdir = getenv("srcdir");
	char dir[PATH_MAX];
	struct dirent *de;
	int pages = 0;
	DIR *d;

	ck_assert(page_codes("pidlock.3", doc));
	snprintf(dir, sizeof(dir), "%s/man", srcdir ? srcdir : ".");
	d = opendir(dir);
	ck_assert_msg(d != NULL, "cannot open %s", dir);
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (n < 3 || strcmp(de->d_name + n - 2, ".3") != 0 ||
		    is_alias(de->d_name) || !page_codes(de->d_name, page))
			continue;
		pages++;
		for (int e = 1; e < ERRNO_SCAN; e++)
			ck_assert_msg(!page[e] || doc[e], "%s names %s, which "
				      "pidlock(3) ERRORS does not list",
				      de->d_name, strerrorname_np(e));
	}
	closedir(d);
	/* acquire, daemon_open, refresher, fd, inspect, new, pidfile,
	 * refresh, release, set_tag, and pidlock(3) itself. */
	ck_assert_int_ge(pages, 11);
}
END_TEST

static struct pidlock *held(unsigned int flags)
{
	struct pidlock *lock = tu_new(tu_path("l"), flags);

	ck_assert_int_eq(pidlock_acquire(lock, 0), 0);
	return lock;
}

/* OP_LOCK_FD and OP_UNLOCK_FD work on their own descriptor of the path
 * (pidlock_lock_fd(3)); the handle holds nothing. */
enum op { OP_ACQUIRE, OP_REFRESH, OP_RELEASE, OP_LOCK_FD, OP_UNLOCK_FD };

static int caller_fd = -1;

/* A descriptor of the path for the _FD ops; for OP_UNLOCK_FD it holds. */
static int fd_for(struct pidlock *lock, enum op op)
{
	int fd = open(tu_path("l"), O_RDWR | O_CREAT | O_CLOEXEC, 0644);

	ck_assert_int_ge(fd, 0);
	tu_set_mtime_ago(tu_path("l"), 60);
	if (op == OP_UNLOCK_FD)
		ck_assert_int_eq(pidlock_lock_fd(lock, fd, 0, 0), 0);
	return fd;
}

/* What op returns when the first call of the family fn fails with err. */
static int faulted(struct pidlock *lock, enum op op, enum fault_fn fn,
		   int err)
{
	int r;

	fault_arm(fn, 1, err);
	if (op == OP_ACQUIRE)
		r = pidlock_acquire(lock, 0);
	else if (op == OP_REFRESH)
		r = pidlock_refresh(lock);
	else if (op == OP_LOCK_FD)
		r = pidlock_lock_fd(lock, caller_fd, 0, 0);
	else if (op == OP_UNLOCK_FD)
		r = pidlock_unlock_fd(lock, caller_fd);
	else
		r = pidlock_release(lock);
	ck_assert_int_eq(fault_hits(), 1);
	fault_disarm();
	return r;
}

/*
 * EUCLEAN ("structure needs cleaning"), what ext4 and xfs report on a
 * damaged file system, is named by no page: it must come out as -EIO.
 * Documented codes must pass as they are, or the filter flattens them.
 */
static const struct {
	enum op op;
	enum fault_fn fn;
	int err, want;
} cases[] = {
	{ OP_ACQUIRE, FAULT_FDATASYNC, EUCLEAN, -EIO },
	{ OP_REFRESH, FAULT_PWRITE, EUCLEAN, -EIO },
	{ OP_RELEASE, FAULT_UNLINK, EUCLEAN, -EIO },
	{ OP_REFRESH, FAULT_FDATASYNC, ENOSPC, -ENOSPC },
	{ OP_RELEASE, FAULT_UNLINK, EROFS, -EROFS },
	{ OP_LOCK_FD, FAULT_PWRITE, EUCLEAN, -EIO },
	{ OP_UNLOCK_FD, FAULT_PWRITE, EUCLEAN, -EIO },
	{ OP_LOCK_FD, FAULT_PWRITE, ENOSPC, -ENOSPC },
};

START_TEST(system_errno_filtered)
{
	enum op op = cases[_i].op;
	/* Only PIDLOCK_SYNC syncs: a fdatasync(2) to fail. */
	unsigned int flags = cases[_i].fn == FAULT_FDATASYNC ? PIDLOCK_SYNC : 0;
	struct pidlock *lock = op == OP_ACQUIRE || op >= OP_LOCK_FD
			       ? tu_new(tu_path("l"), flags) : held(flags);
	int r;

	caller_fd = op >= OP_LOCK_FD ? fd_for(lock, op) : -1;
	r = faulted(lock, op, cases[_i].fn, cases[_i].err);
	if (caller_fd >= 0)
		close(caller_fd);

	ck_assert_msg(r == cases[_i].want, "case %d (%s): %d, want %d", _i,
		      strerrorname_np(cases[_i].err), r, cases[_i].want);
	pidlock_free(lock);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("errors");
	TCase *tc = tcase_create("errors");

	tcase_add_checked_fixture(tc, NULL, tu_cleanup);
	tu_add_test(tc, filter_table_is_pidlock3);
	tu_add_test(tc, pages_name_only_listed_codes);
	tu_add_loop_test(tc, system_errno_filtered, 0,
			    (int)(sizeof(cases) / sizeof(cases[0])));
	suite_add_tcase(s, tc);
	tu_run_suite(s);
}
