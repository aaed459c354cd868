/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The helper library, part two: scratch trees, files by content, and
 * snapshots of a tree (testutil.h). */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "internal.h"

/* Bytes of each file that a snapshot hashes: enough for any lock file,
 * and it keeps the 1 GiB sparse case cheap. */
#define HASH_SPAN ((off_t)1024 * 1024)

char *tu_mkdtemp(const char *parent, const char *tag)
{
	const char *tmp = parent ? parent : getenv("TMPDIR");
	char *path;

	if (!tmp || !tmp[0])
		tmp = "/tmp";
	ck_assert(asprintf(&path, "%s/pidlock-%s.XXXXXX", tmp, tag) > 0);
	ck_assert_msg(mkdtemp(path) != NULL, "mkdtemp %s: %s", path,
		      strerror(errno));
	return path;
}

static char *base;

const char *tu_base(void)
{
	ck_assert_msg(base != NULL, "no tu_base_setup() fixture");
	return base;
}

void tu_base_setup(void)
{
	base = tu_mkdtemp(NULL, "base");
	/* Other users (test-hostile-nobody.sh) may pass through it. */
	ck_assert_int_eq(chmod(base, 0711), 0);
}

void tu_base_teardown(void)
{
	tu_rmtree_quiet(base);
	free(base);
	base = NULL;
}

TCase *tu_tcase(Suite *s, const char *name, void (*setup)(void),
		void (*teardown)(void), int timeout)
{
	TCase *tc = tcase_create(name);

	tcase_add_unchecked_fixture(tc, tu_base_setup, tu_base_teardown);
	if (setup || teardown)
		tcase_add_checked_fixture(tc, setup, teardown);
	if (timeout)
		tcase_set_timeout(tc, timeout);
	suite_add_tcase(s, tc);
	return tc;
}

static int unlock_dir(const char *path, const struct stat *st, int type,
		      struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	/* Tests make read-only and mode-0 directories; open them up so the
	 * walk can enter and empty them.  Errors show up in rm_one. */
	if (type == FTW_D || type == FTW_DNR)
		(void)chmod(path, 0700);
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int type,
		  struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_DP)
		return rmdir(path) < 0 && errno != ENOENT ? -1 : 0;
	return unlink(path) < 0 && errno != ENOENT ? -1 : 0;
}

static int rm_quiet(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	(void)rm_one(path, st, type, ftw);
	return 0;
}

void tu_rmtree_quiet(const char *path)
{
	(void)nftw(path, unlock_dir, 16, FTW_PHYS);
	(void)nftw(path, rm_quiet, 16, FTW_PHYS | FTW_DEPTH);
}

void tu_rmtree(const char *path)
{
	(void)nftw(path, unlock_dir, 16, FTW_PHYS);
	ck_assert_msg(nftw(path, rm_one, 16, FTW_PHYS | FTW_DEPTH) == 0,
		      "cannot remove %s: %s", path, strerror(errno));
}

void tu_write_file(const char *path, const void *data, size_t len,
		   mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	size_t done = 0;

	ck_assert_msg(fd >= 0, "create %s: %s", path, strerror(errno));
	while (done < len) {
		ssize_t n = write(fd, (const char *)data + done, len - done);

		ck_assert_msg(n > 0, "write %s: %s", path, strerror(errno));
		done += (size_t)n;
	}
	ck_assert_int_eq(fchmod(fd, mode), 0);
	ck_assert_int_eq(close(fd), 0);
}

char *tu_read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	char *buf;
	size_t got = 0;

	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	ck_assert_int_eq(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	ck_assert(buf != NULL);
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		ck_assert_msg(n >= 0, "read %s: %s", path, strerror(errno));
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	*len = got;
	return buf;
}

void tu_set_mtime(const char *path, int64_t sec)
{
	struct timespec ts[2] = {
		{ .tv_sec = (time_t)sec, .tv_nsec = 0 },
		{ .tv_sec = (time_t)sec, .tv_nsec = 0 },
	};

	ck_assert_msg(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW) == 0,
		      "utimensat %s: %s", path, strerror(errno));
}

/* FNV-1a over the first HASH_SPAN bytes, or 0 if unreadable. */
static uint64_t hash_file(const char *path)
{
	char buf[8192];
	uint64_t h = 14695981039346656037ULL;
	off_t off = 0;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
			    O_NOCTTY);

	if (fd < 0)
		return 0;
	while (off < HASH_SPAN) {
		ssize_t n = pread(fd, buf, sizeof(buf), off);

		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++) {
			h ^= (unsigned char)buf[i];
			h *= 1099511628211ULL;
		}
		off += n;
	}
	close(fd);
	return h;
}

/* nftw has no user pointer: the snapshot being built. */
static char **snap_lines;
static size_t snap_n, snap_cap;
static size_t snap_root_len;

static int snap_one(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	char extra[PATH_MAX + 32] = "";
	char *line;

	(void)ftw;
	if (type == FTW_NS) {
		/* In a directory we may read but not search: names only. */
		ck_assert(asprintf(&line, "%s type=%d", path + snap_root_len,
				   type) > 0);
		goto add;
	}
	if (S_ISREG(st->st_mode)) {
		tu_fmt(extra, sizeof(extra), "size=%lld mtime=%lld.%09ld "
			 "ctime=%lld.%09ld hash=%016llx",
			 (long long)st->st_size, (long long)st->st_mtim.tv_sec,
			 st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec,
			 st->st_ctim.tv_nsec,
			 (unsigned long long)hash_file(path));
	} else if (S_ISLNK(st->st_mode)) {
		ssize_t n = readlink(path, extra, sizeof(extra) - 1);

		extra[n > 0 ? n : 0] = '\0';
	} else if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
		tu_fmt(extra, sizeof(extra), "rdev=%llx",
			 (unsigned long long)st->st_rdev);
	}
	/* A directory's times change when a temp file comes and goes;
	 * what counts is the entries, which have lines of their own. */
	ck_assert(asprintf(&line, "%s type=%d mode=%o uid=%u gid=%u ino=%llu "
			   "nlink=%lu %s", path + snap_root_len, type,
			   (unsigned int)st->st_mode, (unsigned int)st->st_uid,
			   (unsigned int)st->st_gid,
			   (unsigned long long)st->st_ino,
			   (unsigned long)st->st_nlink, extra) > 0);
add:
	if (snap_n == snap_cap) {
		snap_cap = snap_cap ? snap_cap * 2 : 32;
		char **more = realloc(snap_lines,
				      snap_cap * sizeof(*snap_lines));

		ck_assert(more != NULL);
		snap_lines = more;
	}
	snap_lines[snap_n++] = line;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char *tu_snapshot(const char *path)
{
	size_t total = 1, i;
	char *out, *p;

	snap_lines = NULL;
	snap_n = snap_cap = 0;
	snap_root_len = strlen(path);
	ck_assert_msg(nftw(path, snap_one, 16, FTW_PHYS) == 0,
		      "walk %s: %s", path, strerror(errno));
	ck_assert_msg(snap_n > 0, "nothing at %s", path);
	qsort(snap_lines, snap_n, sizeof(*snap_lines), cmp_str);
	for (i = 0; i < snap_n; i++)
		total += strlen(snap_lines[i]) + 1;
	out = malloc(total);
	ck_assert(out != NULL);
	p = out;
	for (i = 0; i < snap_n; i++) {
		p = stpcpy(p, snap_lines[i]);
		*p++ = '\n';
		free(snap_lines[i]);
	}
	*p = '\0';
	free(snap_lines);
	snap_lines = NULL;
	return out;
}

void tu_assert_same(const char *before, const char *after, const char *what)
{
	ck_assert_msg(strcmp(before, after) == 0,
		      "%s changed the file system:\nbefore:\n%s\nafter:\n%s",
		      what, before, after);
}

void tu_assert_unchanged(const char *path, char *before, const char *what)
{
	char *after = tu_snapshot(path);

	tu_assert_same(before, after, what);
	free(after);
	free(before);
}

static int temp_found;

static int temp_one(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	(void)st;
	(void)type;
	if (strncmp(path + ftw->base, TMP_PREFIX, strlen(TMP_PREFIX)) == 0)
		temp_found = 1;
	return 0;
}

bool tu_has_temp(const char *dir)
{
	temp_found = 0;
	(void)nftw(dir, temp_one, 16, FTW_PHYS);
	return temp_found;
}

bool tu_own_mounts(void)
{
	if (unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		fprintf(stderr, "not tested: no mount namespace of our own: "
			"%s\n", strerror(errno));
		return false;
	}
	return true;
}
