/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fault-injection shim's controls; see faultshim.c. */
#ifndef FAULTSHIM_H
#define FAULTSHIM_H

#include <stddef.h>
#include <stdint.h>

/* Families of calls; a fault counts every member of its family. */
enum fault_fn {
	FAULT_OPEN,		/* open, open64, __open_2 */
	FAULT_OPENAT,		/* openat, openat64, __openat_2 */
	FAULT_WRITE,
	FAULT_PWRITE,		/* pwrite, pwrite64 */
	FAULT_FDATASYNC,
	FAULT_LINKAT,
	FAULT_LINK,
	FAULT_UNLINK,		/* unlink, unlinkat */
	FAULT_RENAMEAT2,
	FAULT_NFNS
};

/* As an errno for fault_arm(): the write happens, for half the bytes. */
#define FAULT_SHORT (-1)

void fault_arm(enum fault_fn fn, int nth, int err);
/* The same, for the nth call and every one after it: an outage. */
void fault_arm_from(enum fault_fn fn, int nth, int err);
void fault_disarm(void);
int fault_calls(void);
int fault_hits(void);
/* The path the failed call named (unlink, link, linkat, open), or "". */
const char *fault_path(void);
void fault_notmpfile(int on);
/* Refuse renameat2(RENAME_NOREPLACE) with EINVAL, as a file system
 * without it does; also FAULT_NORENAME=1 in the environment. */
void fault_norename(int on);
/* Every flock(2) fails with ENOSYS, as on a file system without it;
 * also FAULT_NOFLOCK=1 in the environment (a preloaded shim). */
void fault_noflock(int on);
/* Every inotify_add_watch(2) fails with ENOSPC, as with the user's
 * watch quota used up; fault_hits() counts them. */
void fault_nowatch(int on);
/* Every pwritev2(2) with RWF_NOAPPEND fails with EOPNOTSUPP, as before
 * Linux 6.9; fault_hits() counts them. */
void fault_nonoappend(int on);
/* fn(path) runs once, right after the next successful open(2) with
 * O_CREAT|O_EXCL of a name that is not a temp name: the in-place
 * create's window between its create and its locks. */
typedef void (*fault_hook)(const char *path);
void fault_after_create(fault_hook fn);
/* fn(fd) runs once, right before the next close(2) of fd. */
typedef void (*fault_fd_hook)(int fd);
void fault_before_close(int fd, fault_fd_hook fn);
/* fn(fd) runs once, right after the next write or pwrite that the shim
 * shortened (FAULT_SHORT): half of it is in the file, the rest is not. */
void fault_after_short(fault_fd_hook fn);
/* A shortened write writes len bytes (0, the default: half of it). */
void fault_short_len(size_t len);
/* Every open of path that does not create fails with ENOENT, while its
 * name stays in the directory: a shared file system's client answering
 * from a lookup it cached before another client replaced the file.
 * NULL disarms; fault_gone_opens() counts the opens refused since. */
void fault_gone_path(const char *path);
int fault_gone_opens(void);

/* Of the readings of /proc/locks from now on (an open that is read,
 * to its close), the first `skip` are whole and the next `readings`
 * miss the rows of inode number ino (of process pid only, if pid is not
 * 0), as a list printed in pieces may; the list still takes more than
 * one read when it is longer than the reader's buffer.  ino 0 disarms.
 * fault_torn_left(): tears not made yet; fault_locks_readings():
 * readings since armed. */
void fault_torn_locks(unsigned long long ino, int pid, int skip, int readings);
/* fn runs once, right after the next reading of /proc/locks that
 * fault_torn_locks() watches (it must be armed) is closed: what the
 * reader may find changed before its next call. */
void fault_after_locks(fault_hook fn);
int fault_torn_left(void);
int fault_locks_readings(void);

/* A suspend of ms: every later CLOCK_BOOTTIME reading is ms ahead, and
 * CLOCK_MONOTONIC's is not (also FAULT_BOOTTIME_FILE, faultshim.c). */
void fault_suspend(int64_t ms);
/* The wall clock stepped by ms (negative: back), from now on. */
void fault_step_realtime(int64_t ms);

#endif
