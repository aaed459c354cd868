/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Has this process forked since a handle took its lock?  A fork
 * generation, kept by pthread_atfork(3) handlers registered once, tells
 * release whether the record can still be anybody's but ours: if not,
 * it need not read it back.  The pid itself is not cached: a child made
 * by _Fork(), clone(3) or a raw system call runs no fork handlers, and
 * must still never write or unlink in its parent's name.
 */
#include "config.h"

#include <pthread.h>

#include "internal.h"

static unsigned long generation = 1;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void after_fork(void)
{
	__atomic_add_fetch(&generation, 1, __ATOMIC_RELAXED);
}

static void register_handlers(void)
{
	/* Without the handlers we cannot tell: generation 0 means "a fork
	 * may have happened", and release always reads the record. */
	if (pthread_atfork(NULL, after_fork, after_fork) != 0)
		__atomic_store_n(&generation, 0, __ATOMIC_RELAXED);
}

void self_init(void)
{
	(void)pthread_once(&once, register_handlers);
}

unsigned long self_fork_generation(void)
{
	return __atomic_load_n(&generation, __ATOMIC_RELAXED);
}
