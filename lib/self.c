/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who we are, without a system call per question.  The pid changes only
 * across fork(2), and a fork generation tells a handle whether one has
 * happened since it wrote its record: if not, the record is still ours
 * and nobody shares our open file description through a fork.  Both are
 * kept by pthread_atfork(3) handlers, registered once.
 *
 * A child made with a raw clone(2) system call runs no fork handlers:
 * it must not use a handle it inherited (doc/protocol.md, section 9).
 */
#include "config.h"

#include <pthread.h>
#include <unistd.h>

#include "internal.h"

static pid_t cached_pid;
static unsigned long generation = 1;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void after_fork_parent(void)
{
	__atomic_add_fetch(&generation, 1, __ATOMIC_RELAXED);
}

static void after_fork_child(void)
{
	__atomic_store_n(&cached_pid, 0, __ATOMIC_RELAXED);
	__atomic_add_fetch(&generation, 1, __ATOMIC_RELAXED);
}

static void register_handlers(void)
{
	/* Without the handlers we cannot cache: generation 0 means "ask
	 * every time" (fork_generation() never returns it otherwise). */
	if (pthread_atfork(NULL, after_fork_parent, after_fork_child) != 0)
		__atomic_store_n(&generation, 0, __ATOMIC_RELAXED);
}

void self_init(void)
{
	(void)pthread_once(&once, register_handlers);
}

pid_t self_pid(void)
{
	pid_t pid = __atomic_load_n(&cached_pid, __ATOMIC_RELAXED);

	if (pid > 0 && fork_generation() != 0)
		return pid;
	pid = getpid();
	__atomic_store_n(&cached_pid, pid, __ATOMIC_RELAXED);
	return pid;
}

unsigned long fork_generation(void)
{
	return __atomic_load_n(&generation, __ATOMIC_RELAXED);
}
