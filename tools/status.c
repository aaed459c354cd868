/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* --status: read each lock file, never lock it, and say what it means. */
#include "config.h"

#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <time.h>

#include "cli.h"

int status_exit(const struct pidlock_info *info)
{
	switch (info->state) {
	case PIDLOCK_STATE_FREE:
		return STATUS_FREE;
	case PIDLOCK_STATE_HELD:
	case PIDLOCK_STATE_HELD_SPEC:
		return STATUS_HELD;
	case PIDLOCK_STATE_ABANDONED:
	case PIDLOCK_STATE_STALE:
		return STATUS_LEFT;
	case PIDLOCK_STATE_UNREADABLE:
		return exit_for_errno(info->error ? info->error : EIO);
	case PIDLOCK_STATE_NOT_LOCK_FILE:
		return EX_DATAERR;
	}
	return EX_SOFTWARE;
}

static const char *state_meaning(enum pidlock_state state)
{
	switch (state) {
	case PIDLOCK_STATE_HELD:
		return "a process holds its kernel lock";
	case PIDLOCK_STATE_HELD_SPEC:
		return "a spec-only holder: no kernel lock, not stale";
	case PIDLOCK_STATE_ABANDONED:
		return "its holder ended without releasing it, no kernel lock; "
		       "the next locker takes it over";
	case PIDLOCK_STATE_STALE:
		return "spec-only, past the stale timeout, its process gone";
	case PIDLOCK_STATE_NOT_LOCK_FILE:
		return "it holds other data; pidlock never locks, changes or "
		       "removes it";
	case PIDLOCK_STATE_FREE:
		return "nobody holds it; the file stays for the next locker";
	case PIDLOCK_STATE_UNREADABLE:
		break;
	}
	return NULL;
}

static void print_pid(const struct pidlock_info *info)
{
	if (info->pid <= 0) {
		printf("  pid:     none recorded\n");
		return;
	}
	printf("  pid:     %d (%s)\n", (int)info->pid,
	       info->pid_alive > 0 ? "running" :
	       info->pid_alive == 0 ? "not running" : "unknown");
}

static void print_since(const struct pidlock_info *info)
{
	char when[64], age[64];

	if (!info->has_timestamp)
		return;
	format_local_time(info->timestamp, when, sizeof(when));
	format_age((int64_t)time(NULL) - info->timestamp, age, sizeof(age));
	printf("  since:   %s (%s)\n", when, age);
}

static void print_kernel(const char *path, const struct pidlock_info *info)
{
	pid_t holder = kernel_holder(path, info);
	char kinds[32];

	format_kinds(info->kernel_locks, kinds, sizeof(kinds));
	printf("  kernel:  %s", kinds);
	if (info->kernel_pid > 0 && holder == info->kernel_pid)
		printf(" (taken by pid %d)", (int)info->kernel_pid);
	else if (info->kernel_pid > 0 && holder > 0)
		printf(" (taken by pid %d, which is gone; held by pid %d)",
		       (int)info->kernel_pid, (int)holder);
	else if (info->kernel_pid > 0)
		printf(" (taken by pid %d, which is gone; holder unknown)",
		       (int)info->kernel_pid);
	else if (holder > 0)
		printf(" (held by pid %d)", (int)holder);
	else if (info->kernel_locks)
		printf(" (holder unknown)");
	putchar('\n');
	if (info->marker) {
		format_kinds(info->marker, kinds, sizeof(kinds));
		printf("  written: by a kernel-lock locker taking %s\n", kinds);
	}
}

static void print_text(const char *path, const struct pidlock_info *info)
{
	const char *meaning = state_meaning(info->state);

	struct stat st;

	/* Free with no file at all is just "free". */
	if (info->state == PIDLOCK_STATE_FREE &&
	    (lstat(path, &st) < 0 || !S_ISREG(st.st_mode)))
		meaning = NULL;
	print_clean(stdout, path);
	printf(": %s", pidlock_state_name(info->state));
	if (info->state == PIDLOCK_STATE_UNREADABLE)
		printf(" (%s)", strerror(info->error ? info->error : EIO));
	else if (meaning)
		printf(" (%s)", meaning);
	putchar('\n');
	if (info->state == PIDLOCK_STATE_FREE ||
	    info->state == PIDLOCK_STATE_NOT_LOCK_FILE)
		return;
	print_pid(info);
	if (info->tag[0])
		printf("  tag:     %s\n", info->tag);
	print_since(info);
	print_kernel(path, info);
}

/* A typo in the directory must not read as "free". */
static int check_parent(const char *path)
{
	char *copy = strdup(path);
	struct stat st;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	if (stat(dirname(copy), &st) < 0)
		r = -errno;
	else if (!S_ISDIR(st.st_mode))
		r = -ENOTDIR;
	free(copy);
	return r;
}

/* Returns the file's exit status; fills *info, or *error on failure. */
static int inspect_one(const struct opts *o, const char *path,
		       struct pidlock_info *info, int *error)
{
	int r = pidlock_inspect(path, info, stale_or_default(o));

	if (r == 0 && info->state == PIDLOCK_STATE_FREE)
		r = check_parent(path);
	*error = r < 0 ? -r : 0;
	if (r < 0)
		return exit_for_errno(-r);
	return status_exit(info);
}

int cmd_status(const struct opts *o)
{
	int worst = 0;

	if (o->json)
		fputs("{\"locks\": [", stdout);
	for (int i = 0; i < o->nfiles; i++) {
		struct pidlock_info info;
		int error;
		int code = inspect_one(o, o->files[i], &info, &error);

		if (code > worst)
			worst = code;
		if (error)
			warn_path(o->files[i], error);
		if (o->json) {
			fputs(i ? ",\n  " : "\n  ", stdout);
			json_info(stdout, o->files[i], &info, error);
		} else if (!error) {
			print_text(o->files[i], &info);
		}
	}
	if (o->json)
		fputs("\n]}\n", stdout);
	if (finish_stdout())
		return EX_IOERR;
	return worst;
}
