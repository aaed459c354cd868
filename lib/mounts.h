/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * /proc/self/mountinfo: a descriptor's mount, and whether the file
 * system of that mount keeps its locks on this host.  Built into the
 * library and into pidlock(1), which names the file system in its
 * message; so this header stands alone (no lib/internal.h).
 */
#ifndef PIDLOCK_MOUNTS_H
#define PIDLOCK_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>

/* What makes a mount's locks local: its type ("nfs4", "fuse.sshfs")
 * and the super option that does it ("local_lock=all"; empty where the
 * type alone does). */
struct mounts_local {
	char type[64];
	char option[64];
};

/* The mount id of fd's file ("mnt_id:" in /proc/self/fdinfo), or -1. */
int mounts_fd_id(int fd);
/* The line of mount id in /proc/self/mountinfo, malloc'd (the caller
 * frees it), or NULL (not there, or /proc not readable). */
char *mounts_line(int id);
/* 1: the mountinfo line describes a file system whose kernel locks
 * exclude only this host (*out says why); 0: not one we know of. */
int mounts_classify(const char *line, struct mounts_local *out);
/* mounts_classify() of fd's mount; 0 where the mount cannot be read. */
int mounts_fd_local(int fd, struct mounts_local *out);

#endif
