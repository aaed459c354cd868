/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuse-nameino SOURCE MOUNTPOINT [FUSE options]: a pass-through FUSE
 * file system over SOURCE built on libfuse's high-level (path) API as
 * many small FUSE file systems are: without use_ino, so st_ino is the
 * node id libfuse gives each NAME, and without lock operations, so the
 * kernel keeps flock and fcntl locks on its own per-node inodes.
 *
 * Two names of one file (link(2)) are then two inodes to the kernel
 * and to stat(2): fstat() of a descriptor opened through one name
 * differs from lstat() of the other, and a lock taken through one name
 * does not exclude an opener of the other.  check-filesystems uses it
 * (as "fuse-nameino") to show how the library fares on such a file
 * system; it is a test fixture, not an example of a good FUSE file
 * system.
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static int src = -1;	/* the source directory */

/* libfuse paths start with "/": make them relative to src. */
static const char *rel(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

/* A statement, not an expression: "RET(call);" answers FUSE with the
 * call's result as FUSE wants it (0 or -errno). */
/* NOLINTNEXTLINE(bugprone-macro-parentheses) */
#define RET(expr) return (expr) < 0 ? -errno : 0

static void *nameino_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	cfg->use_ino = 0;	/* the point of this file system */
	cfg->hard_remove = 1;	/* unlink unlinks: no .fuse_hidden names */
	cfg->attr_timeout = 0;	/* the link count is always asked for */
	cfg->entry_timeout = 0;
	return NULL;
}

static int nameino_getattr(const char *path, struct stat *st,
			   struct fuse_file_info *fi)
{
	if (fi)
		RET(fstat((int)fi->fh, st));
	RET(fstatat(src, rel(path), st, AT_SYMLINK_NOFOLLOW));
}

static int nameino_readdir(const char *path, void *buf, fuse_fill_dir_t fill,
			   off_t off, struct fuse_file_info *fi,
			   enum fuse_readdir_flags flags)
{
	int fd = openat(src, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *de;

	(void)off;
	(void)fi;
	(void)flags;
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d)))
		if (fill(buf, de->d_name, NULL, 0, 0))
			break;
	closedir(d);
	return 0;
}

static int nameino_open(const char *path, struct fuse_file_info *fi)
{
	int fd = openat(src, rel(path), (fi->flags & ~O_CREAT) | O_NOFOLLOW);

	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	return 0;
}

static int nameino_create(const char *path, mode_t mode,
			  struct fuse_file_info *fi)
{
	int fd = openat(src, rel(path), fi->flags | O_CREAT | O_NOFOLLOW, mode);

	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	return 0;
}

static int nameino_read(const char *path, char *buf, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	ssize_t n = pread((int)fi->fh, buf, size, off);

	(void)path;
	return n < 0 ? -errno : (int)n;
}

static int nameino_write(const char *path, const char *buf, size_t size,
			 off_t off, struct fuse_file_info *fi)
{
	ssize_t n = pwrite((int)fi->fh, buf, size, off);

	(void)path;
	return n < 0 ? -errno : (int)n;
}

static int nameino_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	close((int)fi->fh);
	return 0;
}

static int nameino_fsync(const char *path, int datasync,
			 struct fuse_file_info *fi)
{
	(void)path;
	RET(datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh));
}

static int nameino_truncate(const char *path, off_t size,
			    struct fuse_file_info *fi)
{
	if (fi)
		RET(ftruncate((int)fi->fh, size));
	{
		int fd = openat(src, rel(path), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		int r;

		if (fd < 0)
			return -errno;
		r = ftruncate(fd, size) < 0 ? -errno : 0;
		close(fd);
		return r;
	}
}

static int nameino_unlink(const char *path)
{
	RET(unlinkat(src, rel(path), 0));
}

static int nameino_mkdir(const char *path, mode_t mode)
{
	RET(mkdirat(src, rel(path), mode));
}

static int nameino_rmdir(const char *path)
{
	RET(unlinkat(src, rel(path), AT_REMOVEDIR));
}

static int nameino_link(const char *from, const char *to)
{
	RET(linkat(src, rel(from), src, rel(to), 0));
}

static int nameino_symlink(const char *target, const char *path)
{
	RET(symlinkat(target, src, rel(path)));
}

static int nameino_readlink(const char *path, char *buf, size_t size)
{
	ssize_t n = readlinkat(src, rel(path), buf, size - 1);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static int nameino_rename(const char *from, const char *to, unsigned int flags)
{
	RET(renameat2(src, rel(from), src, rel(to), flags));
}

static int nameino_chmod(const char *path, mode_t mode,
			 struct fuse_file_info *fi)
{
	if (fi)
		RET(fchmod((int)fi->fh, mode));
	RET(fchmodat(src, rel(path), mode, 0));
}

static int nameino_chown(const char *path, uid_t uid, gid_t gid,
			 struct fuse_file_info *fi)
{
	if (fi)
		RET(fchown((int)fi->fh, uid, gid));
	RET(fchownat(src, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW));
}

static int nameino_utimens(const char *path, const struct timespec tv[2],
			   struct fuse_file_info *fi)
{
	if (fi)
		RET(futimens((int)fi->fh, tv));
	RET(utimensat(src, rel(path), tv, AT_SYMLINK_NOFOLLOW));
}

static int nameino_statfs(const char *path, struct statvfs *sv)
{
	(void)path;
	RET(fstatvfs(src, sv));
}

static const struct fuse_operations ops = {
	.init = nameino_init,
	.getattr = nameino_getattr,
	.readdir = nameino_readdir,
	.open = nameino_open,
	.create = nameino_create,
	.read = nameino_read,
	.write = nameino_write,
	.release = nameino_release,
	.fsync = nameino_fsync,
	.truncate = nameino_truncate,
	.unlink = nameino_unlink,
	.mkdir = nameino_mkdir,
	.rmdir = nameino_rmdir,
	.link = nameino_link,
	.symlink = nameino_symlink,
	.readlink = nameino_readlink,
	.rename = nameino_rename,
	.chmod = nameino_chmod,
	.chown = nameino_chown,
	.utimens = nameino_utimens,
	.statfs = nameino_statfs,
};

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: fuse-nameino SOURCE MOUNTPOINT [FUSE options]\n");
		return 2;
	}
	src = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (src < 0) {
		fprintf(stderr, "fuse-nameino: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	/* fuse_main sees: prog MOUNTPOINT [options], with "-o allow_other"
	 * so that tests running as other users can reach it. */
	argv[1] = argv[0];
	return fuse_main(argc - 1, argv + 1, &ops, NULL);
}
