/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which file systems are a shared file system's client, by statfs(2)'s
 * f_type: their kernel caches what the server says (remote.c's inode
 * check) and sees only its own openers (lease.c's test).  A leaf, so
 * that both ask it and neither calls the other.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/vfs.h>

#include "internal.h"

/* f_type of statfs(2), as <linux/magic.h> has them (not every libc's
 * headers carry that file). */
#define FUSE_MAGIC 0x65735546
#define NFS_MAGIC 0x6969
#define SMB_MAGIC 0x517b
#define CIFS_MAGIC 0xff534d42
#define SMB2_MAGIC 0xfe534d42
#define CEPH_MAGIC 0x00c36400
#define V9FS_MAGIC 0x01021997
#define AFS_MAGIC 0x6b414653
#define CODA_MAGIC 0x73757245

bool fstype_caching(unsigned long type)
{
	switch (type) {
	case FUSE_MAGIC: case NFS_MAGIC: case SMB_MAGIC: case CIFS_MAGIC:
	case SMB2_MAGIC: case CEPH_MAGIC: case V9FS_MAGIC: case AFS_MAGIC:
	case CODA_MAGIC:
		return true;
	}
	return false;
}

/*
 * Can the file be open where this kernel cannot see it?  On a shared
 * file system's client, another client's open (another host, or another
 * FUSE mount of the same directory: two bindfs mounts) is the server's
 * business: the kernel here counts only its own openers, and grants a
 * write lease while a spec-only writer on the other client is between
 * its create and its write.  So the lease test (lease.c) is not asked
 * there, and rule C's grace holds.  1: yes (or not known), 0: no.
 */
int fstype_others_unseen(int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return errno == ENOSYS ? 1 : -errno;
	return fstype_caching((unsigned long)sf.f_type);
}
