/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared file systems.  Their client may answer lstat(2) and fstat(2)
 * from a cache for a second or so after another client replaced the
 * file: the inode check would see the file it locked at the path, and
 * two holders would go on at once.  An open(2) of the path is sent to
 * the server: an old file's handle is refused there (ESTALE), and a new
 * file is the one opened.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "internal.h"
#include "mounts.h"

/* Asked once per device and handle: a local file system pays nothing
 * after the first check. */
static bool caches(struct pidlock *lock, int fd, dev_t dev)
{
	struct statfs sf;

	if (lock->cache.remote.known && lock->cache.remote.dev == dev)
		return lock->cache.remote.caches;
	if (fstatfs(fd, &sf) < 0)
		return true;	/* not known: look the safe way */
	lock->cache.remote.known = true;
	lock->cache.remote.dev = dev;
	lock->cache.remote.caches = fstype_caching((unsigned long)sf.f_type);
	return lock->cache.remote.caches;
}

/*
 * 0: a new open of the path names st's file; 1: another file, or none;
 * -errno: the check failed.  A file we may not read (a lock file made
 * with mode 0200) cannot be opened for the check: the lookup's answer
 * stands.
 */
static int reopen_same(const char *path, const struct stat *st)
{
	struct stat now;
	int r = 0;
	int fd = lease_open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
				  O_CLOEXEC | O_NOCTTY);

	if (fd == -EACCES || fd == -EPERM)
		return 0;
	if (fd == -EMFILE || fd == -ENFILE || fd == -ENOMEM)
		return fd;
	if (fd < 0)
		return 1;	/* gone, stale, or no longer a plain file */
	if (fstat(fd, &now) < 0)
		r = -errno;
	else
		r = now.st_dev != st->st_dev || now.st_ino != st->st_ino;
	io_close_keep_errno(fd);
	return r;
}

int remote_same_inode(struct pidlock *lock, int fd, const struct stat *st)
{
	if (!caches(lock, fd, st->st_dev))
		return 0;
	return reopen_same(lock->set.path, st);
}

/*
 * Does fd's file system keep its locks on this host only (mounts.c)?
 * Then another host's holder is let in while we hold the lock: refused,
 * unless the handle says that only this host uses the directory.  Only
 * network and FUSE file systems have their mount looked up: a local one
 * costs one fstatfs(2).  Not known is not refused.
 */
bool remote_locks_local(const struct pidlock *lock, int fd)
{
	struct mounts_local why;
	struct statfs sf;

	if (lock->set.flags & PIDLOCK_HOST_LOCAL)
		return false;
	if (fstatfs(fd, &sf) < 0 || !fstype_caching((unsigned long)sf.f_type))
		return false;
	return mounts_fd_local(fd, &why) == 1;
}
