/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Running a command under the lock: take it, then fork or exec. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sysexits.h>
#include <unistd.h>

#include "cli.h"

/* What flock(1) answers when the command cannot be started. */
int exec_failed(const char *cmd, int err)
{
	warn_path(cmd, err);
	return err == ENOMEM ? EX_OSERR : EX_UNAVAILABLE;
}

/*
 * --exec: become the command.  The file names our pid, which is now the
 * command's; the kernel locks last as long as it does, and the file it
 * leaves behind (marked release=exit, see make_lock) reads as free and
 * is taken over by the next locker.
 */
static int exec_locked(const struct opts *o, struct pidlock *lock)
{
	int fd = pidlock_fd(lock);
	int err;

	if (fcntl(fd, F_SETFD, 0) < 0) {
		err = errno;
		pidlock_free(lock);
		return fail_path(o->lockfile, err);
	}
	fflush(NULL);
	execvp(o->cmd[0], o->cmd);
	err = errno;
	/* Nothing ran under the lock: give it back, file and all. */
	(void)pidlock_release(lock);
	pidlock_free(lock);
	return exec_failed(o->cmd[0], err);
}

int cmd_run(const struct opts *o)
{
	struct pidlock *lock;
	int r = make_lock(o, o->lockfile, &lock);

	if (r < 0)
		return fail_path(o->lockfile, -r);
	r = acquire_lock(o, lock, o->timeout_ms, "lock is busy");
	if (r != 0) {
		pidlock_free(lock);
		if (r < 0)
			return fail_path(o->lockfile, -r);
		return o->quiet ? 0 : o->conflict_code;
	}
	if (o->exec)
		return exec_locked(o, lock);
	r = run_child(o, lock);
	pidlock_free(lock);
	return r;
}
