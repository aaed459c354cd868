/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* --list: the lock files of one directory, like lslocks(8) for this protocol. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <time.h>

#include "cli.h"

/* PIDLOCK_TMP_PREFIX: the library publishes a lock through a hidden
 * temporary name when the file system has no O_TMPFILE; such a name is
 * the same inode as a lock already listed, or a publish in progress. */

struct row {
	char *name;
	char *path;
	struct pidlock_info info;
	int error;
};

struct rows {
	struct row *v;
	size_t n, cap;
};

static int cmp_rows(const void *a, const void *b)
{
	return strcmp(((const struct row *)a)->name, ((const struct row *)b)->name);
}

static int add_row(struct rows *rows, const char *dir, const char *name)
{
	struct row *r;
	size_t len = strlen(dir) + strlen(name) + 2;

	if (rows->n == rows->cap) {
		size_t cap = rows->cap ? rows->cap * 2 : 16;
		struct row *v = realloc(rows->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		rows->v = v;
		rows->cap = cap;
	}
	r = &rows->v[rows->n];
	memset(r, 0, sizeof(*r));
	r->name = strdup(name);
	r->path = malloc(len);
	if (!r->name || !r->path) {
		free(r->name);
		free(r->path);
		return -ENOMEM;
	}
	text_set(r->path, len, "%s%s%s", dir,
		 dir[strlen(dir) - 1] == '/' ? "" : "/", name);
	rows->n++;
	return 0;
}

static void free_rows(struct rows *rows)
{
	for (size_t i = 0; i < rows->n; i++) {
		free(rows->v[i].name);
		free(rows->v[i].path);
	}
	free(rows->v);
}

/* Regular files only, not following symbolic links. */
static int collect(DIR *d, const char *dir, struct rows *rows)
{
	struct dirent *de;
	int dfd = dirfd(d);

	errno = 0;
	while ((de = readdir(d))) {
		struct stat st;
		int r;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    strncmp(de->d_name, PIDLOCK_TMP_PREFIX,
			    strlen(PIDLOCK_TMP_PREFIX)) == 0)
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode)) {
			errno = 0;
			continue;
		}
		r = add_row(rows, dir, de->d_name);
		if (r < 0)
			return r;
		errno = 0;
	}
	return errno ? -errno : 0;
}

/* Every regular file is shown with its state, those that hold other
 * data as not-a-lock-file; only a file gone since readdir is left out. */
static int is_shown(const struct row *r)
{
	struct stat st;

	if (r->error || r->info.state != PIDLOCK_STATE_FREE)
		return 1;
	return lstat(r->path, &st) == 0 && S_ISREG(st.st_mode);
}

/* NAME is padded to `width`, the name safe for a terminal. */
static void print_name(const struct row *r, int width)
{
	print_clean(stdout, r->name);
	out(stdout, "%*s", width - (int)strlen(r->name), "");
}

static void print_row(const struct row *r, int width, int swidth)
{
	const struct pidlock_info *i = &r->info;
	bool data = i->state == PIDLOCK_STATE_NOT_LOCK_FILE;
	/* Free names nobody, as --status --json says (null): a record left
	 * by a holder whose exit was its release (-F, a shell's descriptor)
	 * or that was marked released is no holder's. */
	bool nobody = data || i->state == PIDLOCK_STATE_FREE;
	char pid[16] = "-", kinds[32] = "-", age[48] = "-";
	const char *alive = "-";

	print_name(r, width);
	if (r->error) {
		out(stdout, " error: %s\n", strerror(r->error));
		return;
	}
	/* Other data names nobody: its pid=-like lines are no record. */
	if (!nobody && i->pid > 0)
		text_set(pid, sizeof(pid), "%d", (int)i->pid);
	/* A hidden holder's record numbers its pid as the holder's own
	 * namespace does: "no" here would say nothing true. */
	if (!nobody && i->pid > 0 && i->pid_alive >= 0 &&
	    !(i->holder_hidden && !i->pid_alive))
		alive = i->pid_alive ? "yes" : "no";
	if (!nobody && i->has_timestamp)
		format_age((int64_t)time(NULL) - i->timestamp, age, sizeof(age));
	if (!data)
		format_kinds(i->kernel_locks, kinds, sizeof(kinds));
	out(stdout, " %-*s %-8s %-5s %-11s %-18s", swidth,
	    pidlock_state_name(i->state), pid, alive, kinds, age);
	if (!data)
		out(stdout, " %s", i->tag);
	if (!data && i->kernel_locks && i->holder_hidden)
		out(stdout, "%s(held by a process outside this pid namespace)",
		    i->tag[0] ? " " : "");
	out(stdout, "\n");
}

/* The NAME and STATE columns fit the widest shown. */
static void column_widths(const struct rows *rows, int *width, int *swidth)
{
	*width = 4;
	*swidth = 10;
	for (size_t k = 0; k < rows->n; k++) {
		const struct row *r = &rows->v[k];
		int sw = (int)strlen(pidlock_state_name(r->info.state));

		if (!is_shown(r))
			continue;
		if ((int)strlen(r->name) > *width)
			*width = (int)strlen(r->name);
		if (!r->error && sw > *swidth)
			*swidth = sw;
	}
}

static void print_table(const struct rows *rows)
{
	int width, swidth;

	column_widths(rows, &width, &swidth);
	out(stdout, "%-*s %-*s %-8s %-5s %-11s %-18s %s\n", width, "NAME",
	    swidth, "STATE", "PID", "ALIVE", "LOCKS", "SINCE", "TAG");
	for (size_t k = 0; k < rows->n; k++)
		if (is_shown(&rows->v[k]))
			print_row(&rows->v[k], width, swidth);
}

static void print_json(const struct rows *rows)
{
	bool first = true;

	out(stdout, "{\"locks\": [");
	for (size_t k = 0; k < rows->n; k++) {
		const struct row *r = &rows->v[k];

		if (!is_shown(r))
			continue;
		out(stdout, first ? "\n  " : ",\n  ");
		json_info(r->path, &r->info, r->error);
		first = false;
	}
	out(stdout, first ? "]}\n" : "\n]}\n");
}

int cmd_list(const struct opts *o)
{
	const char *dir = o->files[0];
	struct rows rows = { NULL, 0, 0 };
	DIR *d = opendir(dir);
	int r;

	if (!d)
		return fail_path(dir, errno);
	r = collect(d, dir, &rows);
	/* Read-only: closing it loses nothing, whatever closedir says. */
	(void)closedir(d);
	if (r < 0) {
		free_rows(&rows);
		return fail_path(dir, -r);
	}
	if (rows.n)
		qsort(rows.v, rows.n, sizeof(*rows.v), cmp_rows);
	for (size_t k = 0; k < rows.n; k++) {
		struct row *row = &rows.v[k];

		r = pidlock_inspect(row->path, &row->info, stale_or_default(o));
		row->error = r < 0 ? -r : 0;
	}
	if (o->json)
		print_json(&rows);
	else
		print_table(&rows);
	free_rows(&rows);
	return finish_stdout();
}
