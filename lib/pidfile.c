/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pidfile(3) as FreeBSD and libbsd define it, on top of the daemon layer,
 * exported under pidlock_-prefixed names only: bare pidfile_* symbols
 * would clash with libbsd's in a process that loads both.
 * <pidlock-pidfile.h> maps the classic names.  The deliberate
 * differences are listed in pidlock_pidfile_open(3).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"
#include "daemon.h"

#define PIDFILE_DIR "/var/run"

struct pidlock_pidfh {
	struct pidlock *lock;
};

/* The pidfile(3) convention: -1 and errno. */
static int fail(int r)
{
	errno = -r;
	return -1;
}

/* Only for a handle whose lock is no longer held, so that
 * pidlock_free() has nothing left to release. */
static void free_handle(struct pidlock_pidfh *pfh)
{
	pidlock_free(pfh->lock);
	free(pfh);
}

PIDLOCK_EXPORT struct pidlock_pidfh *pidlock_pidfile_open(const char *path,
							  mode_t mode,
							  pid_t *pidptr)
{
	char def[PATH_MAX];
	struct pidlock_pidfh *pfh;
	pid_t holder = -1;
	int r;

	if (!path) {
		int n = snprintf(def, sizeof(def), PIDFILE_DIR "/%s.pid",
				 program_invocation_short_name);

		if (n < 0 || (size_t)n >= sizeof(def)) {
			errno = ENAMETOOLONG;
			return NULL;
		}
		path = def;
	}
	pfh = calloc(1, sizeof(*pfh));
	if (!pfh)
		return NULL;
	/* Classic callers pass 0600 to 0666 and count on the umask: drop
	 * the bits start-stop-daemon refuses instead of failing. */
	r = pidlock_daemon_open(&pfh->lock, path, 0, mode & 0664, &holder);
	if (r == -EEXIST && pidptr)
		*pidptr = holder;
	if (r < 0) {
		free(pfh);
		errno = -r;
		return NULL;
	}
	return pfh;
}

PIDLOCK_EXPORT int pidlock_pidfile_write(struct pidlock_pidfh *pfh)
{
	int r;

	if (!pfh || pidlock_fd(pfh->lock) < 0)
		return fail(-EINVAL);
	r = pidlock_daemon_rebind(pfh->lock);
	if (r == 0)
		return 0;
	/* As pidfile(3) does, give up a pidfile that could not be written;
	 * the file goes only if it still names us. */
	(void)pidlock_release(pfh->lock);
	return fail(r);
}

PIDLOCK_EXPORT int pidlock_pidfile_close(struct pidlock_pidfh *pfh)
{
	int r;

	if (!pfh)
		return fail(-EINVAL);
	r = pidlock_close(pfh->lock);
	free_handle(pfh);
	if (r == -ENOLCK)
		r = -EINVAL;
	return r < 0 ? fail(r) : 0;
}

/*
 * pidfile(3) fails with EINVAL when called "not from the process which
 * made pidfile_write()"; where libbsd would still unlink the running
 * daemon's file, we only close.
 */
static int pidfile_remove(struct pidlock_pidfh *pfh)
{
	pid_t pid;
	int fd, r;

	if (!pfh)
		return fail(-EINVAL);
	fd = pidlock_fd(pfh->lock);
	if (fd < 0) {
		free_handle(pfh);
		return fail(-EINVAL);
	}
	pid = daemon_file_pid(fd);
	if (pid == getpid()) {
		r = pidlock_release(pfh->lock);
	} else {
		(void)pidlock_close(pfh->lock);
		r = pid < 0 ? (int)pid : -EINVAL;
	}
	free_handle(pfh);
	return r < 0 ? fail(r) : 0;
}

/* Not cancellable (cancel.c): the read of the record comes before the
 * release and the free of the handle, which must not be skipped. */
PIDLOCK_EXPORT int pidlock_pidfile_remove(struct pidlock_pidfh *pfh)
{
	int old = cancel_off();
	int r = pidfile_remove(pfh);

	cancel_restore(old);
	return r;
}

PIDLOCK_EXPORT int pidlock_pidfile_fileno(const struct pidlock_pidfh *pfh)
{
	int fd;

	if (!pfh)
		return fail(-EINVAL);
	fd = pidlock_fd(pfh->lock);
	return fd < 0 ? fail(-EINVAL) : fd;
}

PIDLOCK_EXPORT struct pidlock *pidlock_pidfile_handle(struct pidlock_pidfh *pfh)
{
	if (!pfh) {
		errno = EINVAL;
		return NULL;
	}
	return pfh->lock;
}
