/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * --slots N in the run mode: hold one of the N slots of LOCKFILE (the
 * lock files LOCKFILE.0 to LOCKFILE.N-1) and tell the command which one
 * in PIDLOCK_SLOT.  The options that set up a lock set up every slot.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int make_set(const struct opts *o, struct pidlock_slots **setp)
{
	struct pidlock_slots *set;
	int r = pidlock_slots_new(&set, o->lockfile, o->slots, lock_flags(o));

	if (r < 0)
		return r;
	for (unsigned int k = 0; r == 0 && k < o->slots; k++)
		r = configure_lock(o, pidlock_slots_lock(set, k));
	if (r < 0) {
		pidlock_slots_free(set);
		return r;
	}
	*setp = set;
	return 0;
}

/* A first try that never waits, so -v can say it waits; then what is
 * left of the timeout (at least 1 ms), or forever. */
static int take(const struct opts *o, struct pidlock_slots *set,
		int64_t start)
{
	int r = pidlock_slots_acquire(set, 0);
	int left = o->timeout_ms;

	if (r != -EWOULDBLOCK || o->timeout_ms == 0)
		return r;
	if (o->verbose)
		warn_file(o->lockfile, "waiting for one of %u slots", o->slots);
	if (left > 0) {
		int64_t spent = now_ms() - start;

		left = spent >= left ? 1 : left - (int)spent;
	}
	r = pidlock_slots_acquire(set, left);
	return r == -ETIMEDOUT ? -EWOULDBLOCK : r;
}

static int tell_command(int slot)
{
	char text[16];

	(void)snprintf(text, sizeof(text), "%d", slot);
	return setenv(PIDLOCK_SLOT_ENV, text, 1) < 0 ? -errno : 0;
}

/*
 * 0: a slot is held, *lockp is its lock and PIDLOCK_SLOT says which;
 * 1: every slot is busy (and said so, unless -q); -errno.  The caller
 * frees *setp, which releases the slot.
 */
int slots_acquire(const struct opts *o, struct pidlock_slots **setp,
		  struct pidlock **lockp)
{
	int64_t start = now_ms();
	int r = make_set(o, setp);

	if (r < 0)
		return r;
	r = take(o, *setp, start);
	if (r >= 0) {
		int64_t ms = now_ms() - start;

		*lockp = pidlock_slots_lock(*setp, (unsigned int)r);
		if (o->verbose)
			warn_file(pidlock_path(*lockp), "slot %d locked after "
				  "%lld.%03lld s", r, (long long)(ms / 1000),
				  (long long)(ms % 1000));
		return tell_command(r);
	}
	pidlock_slots_free(*setp);
	*setp = NULL;
	if (r != -EWOULDBLOCK)
		return r;
	if (!o->quiet)
		warn_file(o->lockfile, "all %u slots are busy%s", o->slots,
			  o->timeout_ms ? " (timed out)" : "");
	return 1;
}

/* Would slot file `path` make an acquire fail with err? */
static bool slot_fails(const char *path, int err)
{
	struct pidlock_info info;
	struct stat st;
	int r;

	if (lstat(path, &st) < 0)
		return false;	/* no file there: not this one */
	if (err == EMLINK)
		return S_ISREG(st.st_mode) && st.st_nlink > 1;
	r = pidlock_inspect(path, &info, 0);
	if (r < 0)
		return -r == err;
	if (err == EBADMSG)
		return info.state == PIDLOCK_STATE_NOT_LOCK_FILE;
	return info.state == PIDLOCK_STATE_UNREADABLE && info.error == err;
}

/*
 * The slot whose file made the acquire fail with err: the library says
 * what went wrong, not which slot's file did it (a user's script at
 * LOCKFILE.2, a symbolic link, a directory).  Its number, or -1 (a
 * missing directory: LOCKFILE itself is named).
 */
static int failed_slot(const struct opts *o, int err, char *buf, size_t size)
{
	for (unsigned int k = 0; k < o->slots; k++) {
		text_set(buf, size, "%s.%u", o->lockfile, k);
		if (slot_fails(buf, err))
			return (int)k;
	}
	return -1;
}

/* Say why no slot could be taken, naming the slot file at fault; the
 * exit status. */
int slots_fail(const struct opts *o, int err)
{
	char path[PATH_MAX + 16];
	int k = failed_slot(o, err, path, sizeof(path));

	if (k < 0)
		return fail_path(o->lockfile, err);
	if (err != EBADMSG)
		return fail_path(path, err);
	/* Not "use PATH.lock": the slot's name is the semaphore's. */
	warn_prefix(path);
	out(stderr, "not a lock file: it holds other data; nothing was "
	    "changed.  It is at the name of slot %d of the semaphore '", k);
	print_clean(stderr, o->lockfile);
	out(stderr, "': move it, or give the semaphore another name, such "
	    "as '");
	print_clean(stderr, o->lockfile);
	out(stderr, ".lock'.\n");
	return exit_for_errno(err);
}
