/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The handle: creation, settings, accessors. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

#define KIND_FLAGS (PIDLOCK_FLOCK_ONLY | PIDLOCK_OFD_ONLY)
/* unsigned, so that ~ALL_FLAGS masks the unsigned flags without a
 * sign conversion */
#define SYNC_FLAGS (PIDLOCK_NO_SYNC | PIDLOCK_SYNC)
#define ALL_FLAGS ((unsigned int)(KIND_FLAGS | SYNC_FLAGS | \
				  PIDLOCK_PLAIN_PID | PIDLOCK_KEEP_FILE | \
				  PIDLOCK_EXIT_RELEASES | PIDLOCK_SHARED | \
				  PIDLOCK_HOST_LOCAL | PIDLOCK_KEEP_IF_USED | \
				  PIDLOCK_TOKEN))

PIDLOCK_EXPORT int pidlock_new(struct pidlock **lockp, const char *path,
			       unsigned int flags)
{
	struct pidlock *lock;
	int r;

	if (!lockp)
		return -EINVAL;
	*lockp = NULL;
	r = handle_check_path(path);
	if (r < 0)
		return r;
	/* A token is one holder's: shared holders would share it. */
	if ((flags & ~ALL_FLAGS) || (flags & KIND_FLAGS) == KIND_FLAGS ||
	    (flags & SYNC_FLAGS) == SYNC_FLAGS ||
	    ((flags & PIDLOCK_TOKEN) && (flags & PIDLOCK_SHARED)))
		return -EINVAL;
	self_init();
	lock = calloc(1, sizeof(*lock));
	if (!lock)
		return -ENOMEM;
	lock->opens.entry = -1;
	lock->set.path = strdup(path);
	lock->set.dir = handle_dir_of(path);
	if (!lock->set.path || !lock->set.dir) {
		pidlock_free(lock);
		return -ENOMEM;
	}
	lock->set.base = strrchr(lock->set.path, '/');
	lock->set.base = lock->set.base ? lock->set.base + 1 : lock->set.path;
	lock->set.flags = flags;
	lock->set.shared = flags & PIDLOCK_SHARED;
	lock->set.kinds = flags & PIDLOCK_FLOCK_ONLY ? PIDLOCK_KIND_FLOCK
		    : flags & PIDLOCK_OFD_ONLY ? PIDLOCK_KIND_OFD : KINDS_ALL;
	lock->set.mode = PIDLOCK_DEFAULT_MODE;
	lock->set.stale_sec = PIDLOCK_DEFAULT_STALE_SEC;
	lock->set.retry_ms = PIDLOCK_DEFAULT_RETRY_MS;
	lock->set.grace_ms = PIDLOCK_DEFAULT_GRACE_MS;
	lock->hold.fd = -1;
	lock->hold.wait_ifd = -1;
	lock->hold.self = lock;
	*lockp = lock;
	return 0;
}

/* Not cancellable (cancel.c): the wait's close(2) must not stop it
 * half way, with the memory never freed. */
PIDLOCK_EXPORT void pidlock_free(struct pidlock *lock)
{
	int old;

	if (!lock)
		return;
	old = cancel_off();
	if (lock->hold.fd >= 0)
		(void)pidlock_release(lock);
	async_cancel(lock);
	opens_free(lock);
	free(lock->set.path);
	free(lock->set.dir);
	free(lock);
	cancel_restore(old);
}

PIDLOCK_EXPORT int pidlock_set_tag(struct pidlock *lock, const char *tag)
{
	if (!lock)
		return -EINVAL;
	if (!tag)
		tag = "";
	content_clean_tag(lock->set.tag, sizeof(lock->set.tag), tag,
			  strlen(tag));
	return 0;
}

PIDLOCK_EXPORT int pidlock_set_mode(struct pidlock *lock, mode_t mode)
{
	if (!lock || (mode & ~(mode_t)0666))
		return -EINVAL;
	lock->set.mode = mode;
	lock->set.mode_exact = true;
	return 0;
}

PIDLOCK_EXPORT int pidlock_set_stale_timeout(struct pidlock *lock,
					     unsigned int seconds)
{
	if (!lock || seconds == 0)
		return -EINVAL;
	lock->set.stale_sec = seconds;
	return 0;
}

PIDLOCK_EXPORT int pidlock_set_retry_interval(struct pidlock *lock,
					      unsigned int ms)
{
	if (!lock || ms == 0 || ms > INT_MAX)
		return -EINVAL;
	lock->set.retry_ms = ms;
	return 0;
}

PIDLOCK_EXPORT int pidlock_set_grace(struct pidlock *lock, unsigned int ms)
{
	if (!lock || ms > PIDLOCK_GRACE_MAX_MS)
		return -EINVAL;
	lock->set.grace_ms = ms;
	return 0;
}

PIDLOCK_EXPORT int pidlock_fd(const struct pidlock *lock)
{
	if (!lock)
		return -EINVAL;
	if (lock->hold.fd < 0)
		return -ENOLCK;
	/* The caller may write through it: its bytes go after the record
	 * (io_hand_out()).  It may dup it or fork with it: release must then
	 * unlock before it closes.  The const promises the caller that the
	 * lock is not changed; this note is bookkeeping, made through a
	 * pointer that pidlock_new() set to the handle itself. */
	if (!lock->hold.fd_given) {
		signed char noappend;
		int r = io_hand_out(lock, &noappend);

		if (r < 0)
			return io_rc_filter(r);
		lock->hold.self->hold.noappend = noappend;
		lock->hold.self->hold.fd_given = true;
	}
	return lock->hold.fd;
}

PIDLOCK_EXPORT const char *pidlock_path(const struct pidlock *lock)
{
	return lock ? lock->set.path : NULL;
}
