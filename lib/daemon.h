/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared by daemon.c and pidfile.c only.  Both layers are built on the
 * public pidlock_* API; nothing here reaches into struct pidlock.
 */
#ifndef PIDLOCK_DAEMON_PRIVATE_H
#define PIDLOCK_DAEMON_PRIVATE_H

#include <sys/types.h>

/* The pid= value of the record behind fd, 0 if none can be read. */
pid_t daemon_file_pid(int fd);

#endif
