/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hold's state, reset: after a release or a close (release.c), and
 * at the end of pidlock_lock_fd(), whose handle only borrowed the
 * caller's descriptor (adopt.c).  A file of its own, below both, so
 * that neither calls the other's layer for it.
 */
#include "config.h"

#include "internal.h"

/* The hold's state back to "holds nothing" (the inotify of the last
 * wait, wait_ifd, is release.c's to close). */
void hold_clear(struct pidlock *lock)
{
	lock->hold.fd = -1;
	lock->hold.dev = 0;
	lock->hold.ino = 0;
	lock->hold.writer = 0;
	lock->hold.keep = false;
	lock->hold.queued = false;
	lock->hold.fd_pid = 0;
	lock->hold.fd_given = false;
	lock->hold.noappend = 0;
	lock->hold.lost = false;
	lock->hold.token = 0;
	lock->hold.reached_ms = 0;
	lock->opens.ok = false;
	lock->opens.made = false;
	lock->opens.took = false;
}
