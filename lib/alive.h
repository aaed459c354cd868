/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one judge of whether a pid still names a live process.  Built
 * into the library and into pidlock(1), whose --status judges the
 * holders /proc/locks names; so this header stands alone (no
 * lib/internal.h).
 */
#ifndef PIDLOCK_ALIVE_H
#define PIDLOCK_ALIVE_H

#include <stdbool.h>
#include <sys/types.h>

/* Does some thread of pid's thread group still run?  false: no such
 * process, or every thread of it has exited (a zombie, reaped or not,
 * does nothing more).  Where it cannot be told, true. */
bool pid_group_alive(pid_t pid);

#endif
