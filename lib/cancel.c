/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Deferred thread cancellation (pthread_cancel(3)) acts at the next
 * cancellation point the thread reaches: open(2), read(2), pwrite(2),
 * close(2), fdatasync(2), poll(2), nanosleep(2), fcntl(2) F_OFD_SETLKW,
 * pthread_join(3).  Our calls pass such points while they hold what
 * nobody could undo after them: a close announced to fork(2) (self.c:
 * every later fork would wait out its bound), a descriptor that holds
 * kernel locks, a temp file, a record half released, an event loop's
 * wait half set up.  So the calls that keep such state run with
 * cancellation disabled, and put the caller's state back on return: a
 * cancellation requested meanwhile stays pending and acts at the
 * caller's next cancellation point, after the call has done all it
 * does and the handle says so.  Nested calls nest: the inner one puts
 * back "disabled".
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>

#include "internal.h"

int cancel_off(void)
{
	int old = PTHREAD_CANCEL_ENABLE;

	/* Fails only for a bad state argument. */
	(void)pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

/* Not a cancellation point itself: a pending request waits for the
 * caller's next one.  errno is kept for the pidfile(3) calls. */
void cancel_restore(int old)
{
	int saved = errno, ignored;

	(void)pthread_setcancelstate(old, &ignored);
	errno = saved;
}
