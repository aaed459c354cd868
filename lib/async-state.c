/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The end of an event loop's wait (async.c), wherever it comes from: the
 * loop's own call, a blocking acquire, a release or close of the
 * handle, pidlock_free().  Apart from async.c so that those callers
 * depend on this small piece, and async.c alone on acquire.c.
 */
#include "config.h"

#include <stdbool.h>

#include "internal.h"

/*
 * A wait begun before a fork(2) is the parent's: the child's kept
 * descriptor is a copy of the parent's, on one open file description,
 * and a lock taken through either copy would be held by both processes
 * at once.  So the child gives its copies up and begins a wait of its
 * own (async_step()).  The inotify instance is shared as well: the
 * child only closes its copy, as removing a watch would remove it from
 * the parent's wait.  A waiter holds no kernel lock on the kept
 * descriptor (acquire.c), so closing a copy takes nothing from the
 * parent.  The pid, not the fork generation, tells the child: parent
 * and child count the same fork alike.
 */
bool async_inherited(const struct pidlock *lock)
{
	return lock->wait.on && lock->wait.pid != self_pid();
}

static void drop_copies(struct pidlock *lock)
{
	if (lock->wait.fd >= 0)
		io_close_keep_errno(lock->wait.fd);
	lock->wait.fd = -1;
	wait_close(&lock->wait.w);
}

void async_cancel(struct pidlock *lock)
{
	if (!lock || !lock->wait.on)
		return;
	if (async_inherited(lock)) {
		drop_copies(lock);
	} else {
		wait_drop_kept(&lock->wait.w, &lock->wait.fd);
		wait_close(&lock->wait.w);
	}
	lock->wait.on = false;
}

