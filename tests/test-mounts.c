/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Never silently local (doc/protocol.md): a file system whose locks
 * exclude only this host is recognised from /proc/self/mountinfo, and
 * refused unless the handle says only this host uses the directory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "mounts.h"
#include "testutil.h"

struct sample {
	const char *line;
	int local;
	const char *type, *option;
};

/* Rule: exactly these mountinfo lines describe locks kept on this host. */
static const struct sample samples[] = {
	{ "40 27 0:52 / /mnt/a rw,relatime shared:9 - nfs4 srv:/x "
	  "rw,vers=4.2,rsize=1048576,hard,proto=tcp,timeo=600,retrans=2,"
	  "sec=sys,clientaddr=10.0.0.2,local_lock=all,addr=10.0.0.1\n",
	  1, "nfs4", "local_lock=all" },
	{ "41 27 0:53 / /mnt/b rw - nfs4 srv:/x rw,vers=4.1,local_lock=none,"
	  "addr=10.0.0.1\n", 0, NULL, NULL },
	{ "42 27 0:54 / /mnt/c rw - nfs srv:/x rw,vers=3,nolock,proto=tcp,"
	  "local_lock=all,addr=10.0.0.1\n", 1, "nfs", "nolock" },
	{ "43 27 0:55 / /mnt/d rw - nfs srv:/x rw,vers=3,local_lock=flock\n",
	  1, "nfs", "local_lock=flock" },
	{ "44 27 0:56 / /mnt/e rw - nfs srv:/x rw,vers=3,local_lock=posix",
	  1, "nfs", "local_lock=posix" },
	{ "45 27 0:57 / /mnt/f rw - nfs srv:/x rw,vers=3,lock,local_lock=none\n",
	  0, NULL, NULL },
	{ "46 27 0:58 / /mnt/g rw - cifs //srv/s rw,vers=3.1.1,nobrl,"
	  "cache=strict\n", 1, "cifs", "nobrl" },
	{ "47 27 0:59 / /mnt/h rw - smb3 //srv/s rw,nobrl\n", 1, "smb3", "nobrl" },
	{ "48 27 0:60 / /mnt/i rw - cifs //srv/s rw,vers=3.1.1,cache=strict\n",
	  0, NULL, NULL },
	{ "49 27 0:61 / /mnt/j rw,nosuid - fuse.sshfs me@srv:/x "
	  "rw,user_id=1000,group_id=1000\n", 1, "fuse.sshfs", "" },
	{ "50 27 0:62 / /mnt/k rw - fuse.glusterfs 127.0.0.2:/v "
	  "rw,user_id=0,group_id=0,default_permissions,allow_other,"
	  "max_read=131072\n", 0, NULL, NULL },
	{ "51 27 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors="
	  "remount-ro\n", 0, NULL, NULL },
	{ "52 27 0:63 / /mnt/l rw - 9p host rw,access=client,trans=virtio\n",
	  0, NULL, NULL },
	{ "53 27 0:64 / /mnt/m rw - 9p host rw,noextend,trans=tcp\n",
	  1, "9p", "noextend" },
	{ "54 27 0:65 / /mnt/n rw - 9p host rw,version=9p2000.u,trans=tcp\n",
	  1, "9p", "version=9p2000.u" },
	{ "55 27 0:66 / /mnt/o rw - afs %cell:root.cell rw,flock=local\n",
	  1, "afs", "flock=local" },
	{ "56 27 0:67 / /mnt/p rw - fuse.bindfs /src rw,user_id=0\n",
	  0, NULL, NULL },
	{ "57 27 0:68 / /mnt/q rw - fuse.fuse-overlayfs fuse-overlayfs rw\n",
	  0, NULL, NULL },
	{ "58 27 0:69 / /mnt/r rw - overlay overlay rw,lowerdir=/l,upperdir="
	  "/u,workdir=/w\n", 0, NULL, NULL },
	{ "59 27 0:70 / /mnt/s rw - tmpfs tmpfs rw,size=100k\n", 0, NULL, NULL },
	/* An option only looks like one of ours: not refused. */
	{ "60 27 0:71 / /mnt/t rw - nfs4 srv:/x rw,nolockd,xlocal_lock=all\n",
	  0, NULL, NULL },
	/* A mount point named like the separator's neighbours. */
	{ "61 27 0:72 / /mnt/nfs4\\040-\\040x rw - xfs /dev/sdb rw\n",
	  0, NULL, NULL },
	{ "no separator here\n", 0, NULL, NULL },
};

START_TEST(classify_samples)
{
	const struct sample *s = &samples[_i];
	struct mounts_local out;

	memset(&out, 0, sizeof(out));
	ck_assert_msg(mounts_classify(s->line, &out) == s->local, "%s",
		      s->line);
	if (!s->local)
		return;
	ck_assert_str_eq(out.type, s->type);
	ck_assert_str_eq(out.option, s->option);
}
END_TEST

/* The test directory's own file system is none of these. */
START_TEST(local_dir_not_refused)
{
	struct mounts_local out;
	int fd = open(tu_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(mounts_fd_id(fd), 0);
	ck_assert_int_eq(mounts_fd_local(fd, &out), 0);
	(void)close(fd);
}
END_TEST

/* A real FUSE mount: bindfs, named sshfs through its subtype. */
static char *src, *mnt;
static bool mounted;

static bool mount_bindfs(const char *opts)
{
	/* tu_path()'s buffers are reused: keep copies. */
	src = strdup(tu_path("src"));
	mnt = strdup(tu_path("mnt"));
	ck_assert(src && mnt);
	ck_assert_int_eq(mkdir(src, 0700), 0);
	ck_assert_int_eq(mkdir(mnt, 0700), 0);
	mounted = tu_sh("bindfs %s '%s' '%s' 2>/dev/null", opts, src, mnt) == 0;
	if (!mounted)
		(void)fprintf(stderr, "SKIP FUSE mount: bindfs %s failed "
			      "(no bindfs, or no FUSE here)\n", opts);
	return mounted;
}

static void unmount(void)
{
	if (mounted)
		(void)tu_sh("fusermount3 -u '%s' 2>/dev/null || "
			    "fusermount -u '%s' 2>/dev/null", mnt, mnt);
	mounted = false;
}

START_TEST(sshfs_refused)
{
	struct mounts_local out;
	struct pidlock *lock;
	char path[4096];
	int fd;

	if (!mount_bindfs("-o subtype=sshfs"))
		return;
	tu_fmt(path, sizeof(path), "%s/lock", mnt);
	fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(mounts_fd_local(fd, &out), 1);
	ck_assert_str_eq(out.type, "fuse.sshfs");
	(void)close(fd);

	lock = tu_new(path, 0);
	ck_assert_int_eq(pidlock_acquire(lock, 0), -ENOLCK);
	ck_assert(!tu_exists(path));	/* what it took is given back */
	ck_assert_int_eq(pidlock_acquire(lock, -1), -ENOLCK);
	pidlock_free(lock);

	lock = tu_new(path, PIDLOCK_HOST_LOCAL);
	ck_assert_int_eq(pidlock_acquire(lock, 0), 0);
	ck_assert(tu_exists(path));
	ck_assert_int_eq(pidlock_release(lock), 0);
	pidlock_free(lock);

	lock = tu_new(path, PIDLOCK_SHARED);
	ck_assert_int_eq(pidlock_acquire(lock, 0), -ENOLCK);
	pidlock_free(lock);
	unmount();
}
END_TEST

/* A shell's own descriptor (pidlock_lock_fd(), pidlock -F) is refused
 * there too, and leaves no record that a reader takes for a holder. */
START_TEST(sshfs_refused_fd)
{
	struct pidlock_info info;
	struct pidlock *lock;
	char path[4096];
	int fd, other;

	if (!mount_bindfs("-o subtype=sshfs"))
		return;
	tu_fmt(path, sizeof(path), "%s/lock", mnt);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	lock = tu_new(path, 0);
	ck_assert_int_eq(pidlock_lock_fd(lock, fd, 0, 0), -ENOLCK);
	ck_assert_int_eq(pidlock_lock_fd(lock, fd, 0, 0), -ENOLCK);
	pidlock_free(lock);
	/* The description let its locks go. */
	other = open(path, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(other, 0);
	ck_assert_int_eq(flock(other, LOCK_EX | LOCK_NB), 0);
	(void)close(other);
	ck_assert_int_eq(pidlock_inspect(path, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_FREE);
	/* A spec-only reader sees no holder's pid: the released record. */
	ck_assert_ptr_nonnull(strstr(tu_read(path), "\nreleased="));

	lock = tu_new(path, PIDLOCK_HOST_LOCAL);
	ck_assert_int_eq(pidlock_lock_fd(lock, fd, 0, 0), 0);
	ck_assert_int_eq(pidlock_inspect(path, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD);
	ck_assert_int_eq(pidlock_unlock_fd(lock, fd), 0);
	pidlock_free(lock);
	(void)close(fd);
	unmount();
}
END_TEST

/* The same FUSE file system under its own name keeps its locks. */
START_TEST(bindfs_not_refused)
{
	struct pidlock *lock;
	char path[4096];

	if (!mount_bindfs(""))
		return;
	tu_fmt(path, sizeof(path), "%s/lock", mnt);
	lock = tu_new(path, 0);
	ck_assert_int_eq(pidlock_acquire(lock, 0), 0);
	ck_assert_int_eq(pidlock_release(lock), 0);
	pidlock_free(lock);
	unmount();
}
END_TEST

int main(void)
{
	const struct tu_case cases[] = {
		{ classify_samples, sizeof(samples) / sizeof(samples[0]) },
		{ local_dir_not_refused, 1 },
		{ sshfs_refused, 1 },
		{ sshfs_refused_fd, 1 },
		{ bindfs_not_refused, 1 },
		{ NULL, 0 },
	};

	tu_run_cases("mounts", "mounts", 0, cases);
}
