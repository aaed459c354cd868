/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * JSON output for --status and --list.  Every object has the same keys,
 * null where a value is unknown, so consumers never test for presence.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"

/* Length of a valid UTF-8 sequence at s (1..4), or 0. */
static size_t utf8_seq(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xBF;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		n = 2;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		n = 3;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		n = 4;
	else
		return 0;
	if (s[0] == 0xE0)
		lo = 0xA0;
	else if (s[0] == 0xED)
		hi = 0x9F;	/* no surrogates */
	else if (s[0] == 0xF0)
		lo = 0x90;
	else if (s[0] == 0xF4)
		hi = 0x8F;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return n;
}

/*
 * File names are bytes, JSON strings are Unicode: a byte that is not
 * part of valid UTF-8 becomes U+FFFD, so the document always parses.
 * (A NUL ends the C string, so a short sequence never reads past it.)
 */
void json_string(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	while (*s) {
		size_t n = utf8_seq(s);

		if (n == 0) {
			fputs("\\ufffd", f);
			s++;
			continue;
		}
		if (n > 1) {
			fwrite(s, 1, n, f);
			s += n;
			continue;
		}
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (*s == '\t')
			fputs("\\t", f);
		else if (*s < 0x20 || *s == 0x7f)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
		s++;
	}
	fputc('"', f);
}

static void json_kinds(FILE *f, unsigned int kinds)
{
	fputc('[', f);
	if (kinds & PIDLOCK_KIND_FLOCK)
		fputs("\"flock\"", f);
	if (kinds == (PIDLOCK_KIND_FLOCK | PIDLOCK_KIND_OFD))
		fputs(", ", f);
	if (kinds & PIDLOCK_KIND_OFD)
		fputs("\"fcntl\"", f);
	fputc(']', f);
}

static void json_int_or_null(FILE *f, const char *key, long long v, int known)
{
	if (known)
		fprintf(f, ", \"%s\": %lld", key, v);
	else
		fprintf(f, ", \"%s\": null", key);
}

static void json_utc(FILE *f, int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;
	char buf[64];

	if (!gmtime_r(&tt, &tm) ||
	    !strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm)) {
		fputs("null", f);
		return;
	}
	fprintf(f, "\"%s\"", buf);
}

/* One lock object.  error != 0: inspecting failed, nothing else known. */
void json_info(FILE *f, const char *path, const struct pidlock_info *info,
	       int error)
{
	/* What the content says is a record only in a lock file: the
	 * pid=-like lines of other data name nobody. */
	int exists = !error && info->state != PIDLOCK_STATE_FREE &&
		     info->state != PIDLOCK_STATE_NOT_LOCK_FILE;
	int stamp = exists && info->has_timestamp;
	int err = error ? error : info->error;

	fputs("{\"path\": ", f);
	json_string(f, path);
	fputs(", \"state\": ", f);
	json_string(f, error ? "error" : pidlock_state_name(info->state));
	fprintf(f, ", \"exit_status\": %d", error ? exit_for_errno(error) :
						 status_exit(info));
	json_int_or_null(f, "pid", info->pid, exists && info->pid > 0);
	fputs(", \"pid_alive\": ", f);
	fputs(!exists || info->pid <= 0 || info->pid_alive < 0 ? "null" :
	      info->pid_alive ? "true" : "false", f);
	json_int_or_null(f, "timestamp", info->timestamp, stamp);
	fputs(", \"since\": ", f);
	if (stamp)
		json_utc(f, info->timestamp);
	else
		fputs("null", f);
	json_int_or_null(f, "age", (long long)time(NULL) - info->timestamp, stamp);
	fputs(", \"tag\": ", f);
	if (exists && info->tag[0])
		json_string(f, info->tag);
	else
		fputs("null", f);
	fputs(", \"kernel_locks\": ", f);
	json_kinds(f, error ? 0 : info->kernel_locks);
	json_int_or_null(f, "kernel_pid", info->kernel_pid,
			 !error && info->kernel_pid > 0);
	fputs(", \"marker\": ", f);
	json_kinds(f, exists ? info->marker : 0);
	json_int_or_null(f, "mtime", info->mtime,
			 exists || (!error && info->state ==
				    PIDLOCK_STATE_NOT_LOCK_FILE));
	fputs(", \"error\": ", f);
	if (err)
		json_string(f, strerror(err));
	else
		fputs("null", f);
	fputc('}', f);
}
