/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * --remove: delete a leftover lock file, and only one nobody holds.  The
 * file is acquired like any lock (so a holder of any kind we know keeps
 * it) and released, which unlinks it.  No option breaks a held lock,
 * and a file that is not a lock file is never touched.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>

#include "cli.h"

/*
 * A bare pid of a running process, without our marker or a timestamp:
 * a dotlockfile(1) lock or the PID file of a daemon.  Neither holds a
 * kernel lock, so only this check keeps us from deleting it.
 */
static bool foreign_live_pid(const struct pidlock_info *info)
{
	return !info->marker && !info->has_timestamp && !info->kernel_locks &&
	       info->pid > 0 && info->pid_alive > 0;
}

static int refuse(const struct opts *o, const char *path,
		  const struct pidlock_info *info)
{
	if (o->quiet)
		return 0;
	warn_file(path, "not removed, it names pid %d, which is running",
		  (int)info->pid);
	return o->conflict_code;
}

/* Nothing to remove is success, unless the directory is wrong too. */
static int absent(const struct opts *o, const char *path)
{
	int r = check_parent(path);

	if (r < 0)
		return fail_path(path, -r);
	if (o->verbose)
		warn_file(path, "no such file, nothing to remove");
	return 0;
}

/*
 * The release decides: a file the library took over from another writer
 * (flock(1)'s empty file, a bare pid) is kept, so that lockers which do
 * not check the inode, sharing the path, stay exclusive.  Say so rather
 * than claim it is gone.
 */
static int report_removed(const struct opts *o, const char *path,
			  const struct stat *held)
{
	struct stat st;

	if (lstat(path, &st) < 0) {
		if (errno != ENOENT)
			return fail_path(path, errno);
		if (o->verbose)
			warn_file(path, "removed");
		return 0;
	}
	if (st.st_dev == held->st_dev && st.st_ino == held->st_ino) {
		if (!o->quiet)
			warn_file(path, "not removed: nobody holds it, but another "
				  "kind of locker (such as flock(1)) may share "
				  "the path, so the file stays; delete it with "
				  "rm(1) if none does");
		return 0;
	}
	if (o->verbose)
		warn_file(path, "removed; a new file is already there");
	return 0;
}

/*
 * Take the lock like any locker, then release it, which unlinks the file.
 * 0, with *held the file that was held; 1: busy (said so unless -q);
 * -errno.
 */
static int take_and_release(const struct opts *o, const char *path,
			    struct stat *held)
{
	struct pidlock *lock;
	int r = make_lock(o, path, &lock);

	if (r < 0)
		return r;
	r = acquire_lock(o, lock, o->timeout_set ? o->timeout_ms : 0,
			 "not removed");
	if (r == 0 && fstat(pidlock_fd(lock), held) < 0)
		r = -errno;
	if (r == 0)
		r = pidlock_release(lock);
	else if (r < 0)
		(void)pidlock_release(lock);	/* the error to tell is r */
	pidlock_free(lock);
	return r;
}

static int remove_one(const struct opts *o, const char *path)
{
	struct pidlock_info info;
	struct stat st;
	int r;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? absent(o, path) : fail_path(path, errno);
	r = pidlock_inspect(path, &info, stale_or_default(o));
	if (r < 0)
		return fail_path(path, -r);
	/* A script or a document at the path is data, not a leftover: it
	 * is never locked, let alone removed.  The acquire refuses it too
	 * (-EBADMSG), should it have been put there since. */
	if (info.state == PIDLOCK_STATE_NOT_LOCK_FILE)
		return fail_path(path, EBADMSG);
	if (foreign_live_pid(&info))
		return refuse(o, path, &info);
	r = take_and_release(o, path, &st);
	if (r == 1)
		return o->quiet ? 0 : o->conflict_code;
	if (r < 0)
		return fail_path(path, -r);
	return report_removed(o, path, &st);
}

int cmd_remove(const struct opts *o)
{
	int worst = 0;

	for (int i = 0; i < o->nfiles; i++) {
		int code = remove_one(o, o->files[i]);

		if (code > worst)
			worst = code;
	}
	return worst;
}
