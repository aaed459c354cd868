/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers of the hostile-input tests: scratch directories, descriptor
 * counts, and snapshots that prove a call changed nothing on disk.
 * Every helper fails the running Check test on an unexpected error.
 */
#ifndef PIDLOCK_HOSTILE_UTIL_H
#define PIDLOCK_HOSTILE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* snprintf that fails the test if the result does not fit. */
#define hu_fmt(buf, size, ...) do { \
		int hu_n_ = snprintf(buf, size, __VA_ARGS__); \
		ck_assert(hu_n_ >= 0 && (size_t)hu_n_ < (size_t)(size)); \
	} while (0)

/* Open descriptors of this process, from /proc/self/fd. */
int hu_fd_count(void);

/* A fresh 0700 directory under parent, or $TMPDIR, or /tmp; caller
 * frees. */
char *hu_mkdtemp(const char *parent, const char *tag);

/* rm -rf without following symlinks; makes directories writable first. */
void hu_rmtree(const char *path);

/* The same, ignoring errors: for clean-up after a failed test. */
void hu_rmtree_quiet(const char *path);

/* Create (O_EXCL) a file with exactly these bytes and this mode. */
void hu_write_file(const char *path, const void *data, size_t len,
		   mode_t mode);

/* The whole file, NUL-terminated for convenience; *len its size. */
char *hu_read_file(const char *path, size_t *len);

/* Set mtime (and atime) to `sec` seconds, without following links. */
void hu_set_mtime(const char *path, int64_t sec);

/*
 * A listing of everything under `path` (not following links): name,
 * type, mode, owner, inode, link count, size, mtime, ctime, and a hash
 * of the first MiB of each regular file, or a symlink's target.  Two
 * equal snapshots mean nothing was created, deleted, written,
 * truncated or renamed.  Caller frees.
 */
char *hu_snapshot(const char *path);

/* Fail unless the two snapshots are equal; shows both if not. */
void hu_assert_same(const char *before, const char *after, const char *what);

/* Snapshot `path` again, compare with `before`, free both. */
void hu_assert_unchanged(const char *path, char *before, const char *what);

/* Does any name under `dir` start with the library's temp prefix? */
bool hu_has_temp(const char *dir);

/* pid of a process that has exited and been reaped. */
pid_t hu_dead_pid(void);

/* /proc/sys/kernel/pid_max. */
long hu_pid_max(void);

/* Current time, Unix seconds. */
int64_t hu_now(void);

#endif
