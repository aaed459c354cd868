/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who are we, and who may share our descriptors?  Three answers that
 * save system calls on every cycle without trusting anything a fork
 * could make false:
 *
 *  - The pid, cached in a page marked MADV_WIPEONFORK.  The kernel
 *    gives every child a zeroed copy of that page, however the child is
 *    made (fork(2), _Fork(), clone(2) without CLONE_VM), so a cached pid
 *    is never the parent's: a child that runs no fork handlers still
 *    reads 0 and asks getpid(2).  Where the page cannot be had (a kernel
 *    before 4.14), no cache: getpid(2) every time.
 *
 *  - A fork generation, kept by pthread_atfork(3) handlers: has this
 *    process forked since a handle took its lock?  If not, release
 *    need not read the record back.
 *
 *  - Whether a release may close its descriptor without unlocking it
 *    first (see release.c).  A fork(2) in another thread while we close
 *    would hand the child a copy of a descriptor whose locks nobody then
 *    drops.  A release announces its close in `closing` and then looks
 *    for a fork under way in `forking`; a fork announces itself in
 *    `forking` and then waits for `closing` to drain.  With sequentially
 *    consistent order one of the two always sees the other: either the
 *    release unlocks first, or the fork waits for the close.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* A fork from a signal handler that interrupted our own close would
 * wait for itself, and a close on a network file system can take long:
 * after this long the fork goes ahead, and its child may keep the locks
 * of an unlinked file until it exits or execs. */
#define FORK_WAIT_NS 1000000000LL

static unsigned long generation = 1;
static int forking;
static int closing;
static pid_t *pid_cache;	/* in a wipe-on-fork page; NULL: none */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int64_t now_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void before_fork(void)
{
	int64_t start = 0;

	__atomic_add_fetch(&forking, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&closing, __ATOMIC_SEQ_CST) != 0) {
		int64_t t = now_ns();

		if (start == 0)
			start = t;
		else if (t - start > FORK_WAIT_NS)
			return;
		(void)sched_yield();
	}
}

static void after_fork_parent(void)
{
	__atomic_add_fetch(&generation, 1, __ATOMIC_SEQ_CST);
	__atomic_sub_fetch(&forking, 1, __ATOMIC_SEQ_CST);
}

/* The child has one thread: nothing is closing or forking there. */
static void after_fork_child(void)
{
	__atomic_add_fetch(&generation, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&forking, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&closing, 0, __ATOMIC_SEQ_CST);
}

static void map_pid_cache(void)
{
#ifdef MADV_WIPEONFORK
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	if (page <= 0)
		return;
	p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	if (madvise(p, (size_t)page, MADV_WIPEONFORK) < 0) {
		(void)munmap(p, (size_t)page);
		return;
	}
	pid_cache = p;
#endif
}

static void register_handlers(void)
{
	map_pid_cache();
	/* Without the handlers we cannot tell: generation 0 means "a fork
	 * may have happened", and release always reads the record and
	 * always unlocks. */
	if (pthread_atfork(before_fork, after_fork_parent,
			   after_fork_child) != 0)
		__atomic_store_n(&generation, 0, __ATOMIC_RELAXED);
}

void self_init(void)
{
	(void)pthread_once(&once, register_handlers);
}

unsigned long self_fork_generation(void)
{
	return __atomic_load_n(&generation, __ATOMIC_SEQ_CST);
}

/* Every thread of a process has its pid, so a race between two threads
 * filling the cache writes the same value twice. */
pid_t self_pid(void)
{
	pid_t pid;

	if (!pid_cache)
		return getpid();
	pid = __atomic_load_n(pid_cache, __ATOMIC_RELAXED);
	if (pid != 0)
		return pid;
	pid = getpid();
	__atomic_store_n(pid_cache, pid, __ATOMIC_RELAXED);
	return pid;
}

bool self_close_begin(unsigned long gen)
{
	__atomic_add_fetch(&closing, 1, __ATOMIC_SEQ_CST);
	/* forking before the generation: a fork's parent handler counts
	 * the generation up before it leaves `forking`, so a finished fork
	 * shows in one or the other. */
	if (__atomic_load_n(&forking, __ATOMIC_SEQ_CST) == 0 && gen != 0 &&
	    gen == self_fork_generation())
		return true;
	__atomic_sub_fetch(&closing, 1, __ATOMIC_SEQ_CST);
	return false;
}

void self_close_end(void)
{
	__atomic_sub_fetch(&closing, 1, __ATOMIC_SEQ_CST);
}
