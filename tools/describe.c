/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Human-readable pieces: times, ages, lock kinds, holders. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

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

/* "pid 1234 (tag "x", 12 s ago)" or "pid 77 holding flock" */
void describe_holder(const struct pidlock_info *info, char *buf, size_t size)
{
	char kinds[32], age[48] = "";
	size_t n;

	if (info->pid > 0)
		n = (size_t)snprintf(buf, size, "pid %d", (int)info->pid);
	else if (info->kernel_pid > 0)
		n = (size_t)snprintf(buf, size, "pid %d", (int)info->kernel_pid);
	else
		n = (size_t)snprintf(buf, size, "an unknown process");
	if (n >= size)
		return;
	if (info->kernel_locks) {
		format_kinds(info->kernel_locks, kinds, sizeof(kinds));
		n += (size_t)snprintf(buf + n, size - n, " holding %s", kinds);
	} else if (info->state == PIDLOCK_STATE_HELD_SPEC) {
		n += (size_t)snprintf(buf + n, size - n, " (spec-only, no kernel lock)");
	}
	if (n >= size)
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
