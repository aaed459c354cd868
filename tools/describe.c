/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Human-readable pieces: times, ages, lock kinds, holders. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

void format_local_time(int64_t t, char *buf, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!localtime_r(&tt, &tm) ||
	    !strftime(buf, size, "%Y-%m-%d %H:%M:%S %z", &tm))
		snprintf(buf, size, "@%lld", (long long)t);
}

/* "42 s", "3 min 12 s", "5 h 2 min", "3 d 4 h": two units are plenty. */
void format_age(int64_t s, char *buf, size_t size)
{
	static const struct { const char *name; int64_t len; } units[] = {
		{ "d", 86400 }, { "h", 3600 }, { "min", 60 }, { "s", 1 },
	};
	const char *dir = s < 0 ? "from now" : "ago";
	size_t i;

	if (s < 0)
		s = -s;
	for (i = 0; i < 3 && s < units[i].len; i++)
		;
	if (i == 3 || s % units[i].len / units[i + 1].len == 0)
		snprintf(buf, size, "%lld %s %s", (long long)(s / units[i].len),
			 units[i].name, dir);
	else
		snprintf(buf, size, "%lld %s %lld %s %s",
			 (long long)(s / units[i].len), units[i].name,
			 (long long)(s % units[i].len / units[i + 1].len),
			 units[i + 1].name, dir);
}

void format_kinds(unsigned int kinds, char *buf, size_t size)
{
	snprintf(buf, size, "%s%s%s",
		 kinds & PIDLOCK_KIND_FLOCK ? "flock" : "",
		 kinds == (PIDLOCK_KIND_FLOCK | PIDLOCK_KIND_OFD) ? "," : "",
		 kinds & PIDLOCK_KIND_OFD ? "fcntl" : "");
	if (!kinds)
		snprintf(buf, size, "none");
}

/* File names reach a terminal: no control character may pass. */
void print_clean(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		fputc(ch < 0x20 || ch == 0x7f ? '?' : ch, f);
	}
}

static bool pid_runs(pid_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

/* Does this fdinfo text list a write lock on the file "MAJ:MIN:INO"? */
static bool fdinfo_locks(const char *text, const char *file)
{
	const char *p = text;

	while ((p = strstr(p, "lock:")) != NULL) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char line[256];

		snprintf(line, sizeof(line), "%.*s ", (int)len, p);
		if (strstr(line, " WRITE ") && strstr(line, file))
			return true;
		p += len;
	}
	return false;
}

/* Does process `pid` have an open file that holds a write lock on file? */
static bool process_holds(const char *pid, const char *file)
{
	char dirpath[64], path[320], text[4096];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(dirpath, sizeof(dirpath), "/proc/%s/fdinfo", pid);
	d = opendir(dirpath);
	if (!d)
		return false;	/* gone, or not ours to look at */
	while (!found && (de = readdir(d)) != NULL) {
		ssize_t n;
		int fd;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dirpath, de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, text, sizeof(text) - 1);
		close(fd);
		if (n <= 0)
			continue;
		text[n] = '\0';
		found = fdinfo_locks(text, file);
	}
	closedir(d);
	return found;
}

/*
 * Which process holds the kernel lock on path now.  /proc/locks names
 * the process that took a lock, which may have passed the descriptor on
 * and exited, and names none for an open file description lock (pid -1).
 * Then every process that has the locked open file lists the lock in
 * /proc/PID/fdinfo; the first one found that runs is the answer.  0:
 * unknown (nobody holds it, or the holder is another user's process and
 * we may not look).
 */
pid_t kernel_holder(const char *path, const struct pidlock_info *info)
{
	char file[64];
	struct dirent *de;
	struct stat st;
	pid_t found = 0;
	DIR *d;

	if (!info->kernel_locks)
		return 0;
	if (pid_runs(info->kernel_pid))
		return info->kernel_pid;
	if (lstat(path, &st) < 0)
		return 0;
	snprintf(file, sizeof(file), " %02x:%02x:%llu ", major(st.st_dev),
		 minor(st.st_dev), (unsigned long long)st.st_ino);
	d = opendir("/proc");
	if (!d)
		return 0;
	while (!found && (de = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid == (long)getpid())
			continue;
		if (process_holds(de->d_name, file) && pid_runs((pid_t)pid))
			found = (pid_t)pid;
	}
	closedir(d);
	return found;
}

/*
 * "pid 1234 holding flock,fcntl, tag "x", since 12 s ago", "pid 77
 * holding flock", "pid 5150 (spec-only, no kernel lock)".  With a kernel
 * lock, the holder named is the one the kernel knows; a pid recorded in
 * the file that is another process is shown as such, and the record's
 * tag and time, which are then not the holder's, are left out.
 */
void describe_holder(const char *path, const struct pidlock_info *info,
		     char *buf, size_t size)
{
	char kinds[32], age[48] = "";
	bool record_is_holder = true;
	size_t n;

	if (info->kernel_locks) {
		pid_t holder = kernel_holder(path, info);

		/* Not allowed to look: the record's pid, if it runs, is the
		 * best guess left. */
		if (holder == 0 && info->pid > 0 && info->pid_alive > 0)
			holder = info->pid;
		format_kinds(info->kernel_locks, kinds, sizeof(kinds));
		if (holder > 0)
			n = (size_t)snprintf(buf, size, "pid %d holding %s",
					     (int)holder, kinds);
		else
			n = (size_t)snprintf(buf, size, "an unknown process "
					     "holding %s", kinds);
		if (info->pid > 0 && info->pid != holder) {
			record_is_holder = false;
			if (n < size)
				n += (size_t)snprintf(buf + n, size - n,
					info->pid_alive == 0 ?
					" (the file names pid %d, which is not running)" :
					" (the file names pid %d)", (int)info->pid);
		}
	} else if (info->pid > 0) {
		n = (size_t)snprintf(buf, size, "pid %d", (int)info->pid);
		if (info->state == PIDLOCK_STATE_HELD_SPEC && n < size)
			n += (size_t)snprintf(buf + n, size - n,
					      " (spec-only, no kernel lock)");
	} else {
		n = (size_t)snprintf(buf, size, "an unknown process");
	}
	if (n >= size || !record_is_holder)
		return;
	if (info->has_timestamp)
		format_age((int64_t)time(NULL) - info->timestamp, age, sizeof(age));
	if (info->tag[0] && age[0])
		snprintf(buf + n, size - n, ", tag \"%s\", since %s", info->tag, age);
	else if (info->tag[0])
		snprintf(buf + n, size - n, ", tag \"%s\"", info->tag);
	else if (age[0])
		snprintf(buf + n, size - n, ", since %s", age);
}
