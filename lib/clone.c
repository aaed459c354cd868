/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The library's helper processes (the stand-in of standin.c, the lease
 * tester of lease.c) share the caller's descriptor table, CLONE_FILES.
 *
 * A copy of the table would be worse in two ways.  Each copied
 * descriptor is closed again by the helper, at its exit if not before,
 * and a close on a FUSE file system sends FLUSH and waits for the
 * daemon's answer: a wait that neither a signal nor SIGKILL ends once
 * the daemon has read the request.  Our caller waits for the helper, so
 * an unrelated file open on a slow or hung FUSE mount (sshfs, rclone)
 * would stall a timed acquire or a release past any bound, for ever on
 * a mount that never answers; and a file system whose flush uploads
 * would get a spurious one per helper.  And a copy of another of the
 * caller's lock files keeps that file's open file description, and its
 * locks, alive until the helper's exit.  With the table shared, the
 * helper holds nothing of its own: its exit closes nothing.
 *
 * valgrind runs no clone that shares the table without sharing memory
 * as a thread would ("Unsupported clone() flags": it ends the program),
 * so under valgrind, and only there, the helpers run without
 * CLONE_FILES (clone_files_flag()).
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef HAVE_VALGRIND_VALGRIND_H
#include <valgrind/valgrind.h>
#endif

#include "internal.h"

#ifndef SYS_clone3
#define SYS_clone3 435
#endif

unsigned long clone_files_flag(void)
{
#ifdef RUNNING_ON_VALGRIND
	if (RUNNING_ON_VALGRIND)
		return 0;
#endif
	return CLONE_FILES;
}

/*
 * clone(2) as the system call: its arguments' order is the
 * architecture's.  Only flags, the stack (none: the child goes on on a
 * copy of ours, as after fork(2)) and the parent's tid pointer (where
 * CLONE_PIDFD puts the pidfd) are given; the rest are zero, so the
 * orders that differ only past the third argument need no case.
 */
static long clone_raw(unsigned long flags, int *pidfd)
{
#if defined(__s390__) || defined(__cris__)
	/* CLONE_BACKWARDS2: the stack first. */
	return syscall(SYS_clone, NULL, flags, pidfd, NULL, 0UL);
#elif defined(__microblaze__)
	/* CLONE_BACKWARDS3: the stack's size after the stack. */
	return syscall(SYS_clone, flags, NULL, 0UL, pidfd, NULL, 0UL);
#else
	return syscall(SYS_clone, flags, NULL, pidfd, NULL, 0UL);
#endif
}

/*
 * A child without CLONE_VM, that is a fork, which sends its parent no
 * signal at its exit and runs none of the caller's fork handlers (the
 * system call, not fork(2)); with CLONE_PIDFD, its pidfd in *pidfd.
 * clone3(2) (Linux 5.3) where there is one, else clone(2).  Returns 0
 * in the child, the child's pid in the parent, or -errno (-EAGAIN: a
 * limit on processes, RLIMIT_NPROC or a pids cgroup, refused it).
 */
pid_t clone_fork(unsigned long flags, int *pidfd)
{
	/* clone3(2)'s struct clone_args (<linux/sched.h>, which not every
	 * system that has the call has): flags, pidfd, child_tid,
	 * parent_tid, exit_signal, stack, stack_size, tls.  No exit signal,
	 * no stack (a copy of ours), no tids, no TLS. */
	const uint64_t args[8] = { flags, (uint64_t)(uintptr_t)pidfd };
	long pid;

	pid = syscall(SYS_clone3, args, sizeof(args));
	if (pid < 0 && errno == ENOSYS)
		pid = clone_raw(flags, pidfd);
	return pid < 0 ? -errno : (pid_t)pid;
}
