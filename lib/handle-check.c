/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a path, a file's type and a lock's directory must be.  Shared by
 * the handle, inspect, the acquire and the waits; apart from handle.c,
 * which releases a handle at its end, so that those callers need
 * nothing of the release's.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

/* The path must name a file in a directory: not "", not "dir/", not
 * "." or "..", and it must fit PATH_MAX with its temp-file siblings. */
int handle_check_path(const char *path)
{
	const char *base;
	size_t len;

	if (!path || !path[0])
		return -EINVAL;
	len = strlen(path);
	if (len >= PATH_MAX)
		return -ENAMETOOLONG;
	if (path[len - 1] == '/')
		return -EISDIR;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (strlen(base) > NAME_MAX)
		return -ENAMETOOLONG;
	if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return -EISDIR;
	return 0;
}

/*
 * Only a regular file can be a lock file.  A symlink gets the answer
 * open(2) with O_NOFOLLOW gives, so that one found by lstat(2) and one
 * swapped in later are refused alike.
 */
int handle_check_type(mode_t mode)
{
	if (S_ISREG(mode))
		return 0;
	if (S_ISLNK(mode))
		return -ELOOP;
	return S_ISDIR(mode) ? -EISDIR : -EINVAL;
}

/* The directory part of path: "." for a bare name, "/" at the root. */
char *handle_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/*
 * A world-writable directory without the sticky bit lets anybody delete
 * or replace the lock file, which breaks every guarantee: refuse it.
 */
int handle_check_dir(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if ((st.st_mode & (S_IWOTH | S_ISVTX)) == S_IWOTH)
		return -EPERM;
	return 0;
}
