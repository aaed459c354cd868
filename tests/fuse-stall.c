/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuse-stall MOUNTPOINT SECONDS: a FUSE file system of two files, "f"
 * and "flushes", whose daemon takes every FLUSH of "f" (the request a
 * close(2) sends) and answers it only SECONDS later: a hung sshfs, or
 * an rclone mount uploading, with a bound so that a test that fails
 * still ends.  The kernel waits for that answer without end, whatever
 * signal the closing process gets, once the daemon has read the
 * request.  Reading "flushes" gives how many FLUSHes of "f" have
 * arrived so far.  Killing the daemon ends the waits at once (the
 * connection is aborted).  Used by test-clones: no call of the library
 * may wait on a descriptor it did not open (lib/clone.c).
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE
#include <errno.h>
#include <fuse.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static unsigned int stall_seconds;
static atomic_uint flushes;

static void *stall_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	cfg->attr_timeout = 0;
	cfg->entry_timeout = 0;
	cfg->direct_io = 1;	/* "flushes" is read afresh every time */
	return NULL;
}

static int stall_getattr(const char *path, struct stat *st,
			 struct fuse_file_info *fi)
{
	(void)fi;
	memset(st, 0, sizeof(*st));
	if (strcmp(path, "/") == 0) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (strcmp(path, "/f") != 0 && strcmp(path, "/flushes") != 0)
		return -ENOENT;
	st->st_mode = S_IFREG | 0666;
	st->st_nlink = 1;
	st->st_size = strcmp(path, "/flushes") == 0 ? 16 : 0;
	return 0;
}

static int stall_readdir(const char *path, void *buf, fuse_fill_dir_t fill,
			 off_t off, struct fuse_file_info *fi,
			 enum fuse_readdir_flags flags)
{
	(void)off;
	(void)fi;
	(void)flags;
	if (strcmp(path, "/") != 0)
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, "f", NULL, 0, 0);
	fill(buf, "flushes", NULL, 0, 0);
	return 0;
}

static int stall_open(const char *path, struct fuse_file_info *fi)
{
	(void)fi;
	if (strcmp(path, "/f") != 0 && strcmp(path, "/flushes") != 0)
		return -ENOENT;
	return 0;
}

static int stall_read(const char *path, char *buf, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	char text[32];
	int len;

	(void)fi;
	if (strcmp(path, "/flushes") != 0)
		return 0;
	len = snprintf(text, sizeof(text), "%u\n", atomic_load(&flushes));
	if (off >= len)
		return 0;
	if (size > (size_t)(len - off))
		size = (size_t)(len - off);
	memcpy(buf, text + off, size);
	return (int)size;
}

static int stall_write(const char *path, const char *buf, size_t size,
		       off_t off, struct fuse_file_info *fi)
{
	(void)path;
	(void)buf;
	(void)off;
	(void)fi;
	return (int)size;
}

/* The point of this file system: the FLUSH is read, then not answered
 * for stall_seconds (this thread sleeps; libfuse's other threads go on
 * answering the rest). */
static int stall_flush(const char *path, struct fuse_file_info *fi)
{
	struct timespec left = { .tv_sec = (time_t)stall_seconds };

	(void)fi;
	if (strcmp(path, "/f") != 0)
		return 0;
	atomic_fetch_add(&flushes, 1U);
	while (nanosleep(&left, &left) < 0 && errno == EINTR)
		;
	return 0;
}

static const struct fuse_operations stall_ops = {
	.init = stall_init,
	.getattr = stall_getattr,
	.readdir = stall_readdir,
	.open = stall_open,
	.read = stall_read,
	.write = stall_write,
	.flush = stall_flush,
};

int main(int argc, char **argv)
{
	char foreground[] = "-f";
	char *args[] = { argv[0], foreground, NULL, NULL };

	if (argc != 3) {
		fprintf(stderr, "usage: fuse-stall MOUNTPOINT SECONDS\n");
		return 2;
	}
	stall_seconds = (unsigned int)strtoul(argv[2], NULL, 10);
	args[2] = argv[1];
	return fuse_main(3, args, &stall_ops, NULL);
}
