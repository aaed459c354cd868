/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * --status: read each lock file, never lock it, and say what it means, as
 * text or as JSON.  The pieces of that text (ages, lock kinds, who holds
 * a lock) and the JSON object also serve --list and the run mode's -v.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "../lib/alive.h"

/* ---- human-readable pieces ---------------------------------------- */

static void format_local_time(int64_t t, char *buf, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!localtime_r(&tt, &tm) ||
	    !strftime(buf, size, "%Y-%m-%d %H:%M:%S %z", &tm))
		text_set(buf, size, "@%lld", (long long)t);
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
	text_set(buf, size, "%lld %s ", (long long)(s / units[i].len),
		 units[i].name);
	if (i < 3 && s % units[i].len / units[i + 1].len != 0)
		text_add(buf, size, "%lld %s ",
			 (long long)(s % units[i].len / units[i + 1].len),
			 units[i + 1].name);
	text_add(buf, size, "%s", dir);
}

void format_kinds(unsigned int kinds, char *buf, size_t size)
{
	text_set(buf, size, "%s%s%s",
		 kinds & PIDLOCK_KIND_FLOCK ? "flock" : "",
		 kinds == (PIDLOCK_KIND_FLOCK | PIDLOCK_KIND_OFD) ? "," : "",
		 kinds & PIDLOCK_KIND_OFD ? "fcntl" : "");
	if (!kinds)
		text_set(buf, size, "none");
}

/* ---- who holds the kernel lock ------------------------------------ */

/* Does this fdinfo text list a lock whose line holds `want` (a file
 * " MAJ:MIN:INO ", or " PID MAJ:MIN:INO "), a write lock if `write`? */
static bool fdinfo_locks(const char *text, const char *want, bool write)
{
	const char *p = text;

	while ((p = strstr(p, "lock:")) != NULL) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char line[256];

		text_set(line, sizeof(line), "%.*s ", (int)len, p);
		if ((!write || strstr(line, " WRITE ")) && strstr(line, want))
			return true;
		p += len;
	}
	return false;
}

/* Does the descriptor described by /proc/PID/fdinfo/FD hold the lock? */
static bool fd_locks(const char *path, const char *want, bool write)
{
	char text[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;	/* closed meanwhile */
	n = read(fd, text, sizeof(text) - 1);
	/* Read-only: closing it loses nothing, whatever close says. */
	(void)close(fd);
	if (n <= 0)
		return false;
	text[n] = '\0';
	return fdinfo_locks(text, want, write);
}

/* Does process `pid` have an open file that holds the lock? */
static bool process_holds(long pid, const char *want, bool write)
{
	char dirpath[64], path[320];
	struct dirent *de;
	bool found = false;
	DIR *d;

	text_set(dirpath, sizeof(dirpath), "/proc/%ld/fdinfo", pid);
	d = opendir(dirpath);
	if (!d)
		return false;	/* gone, or not ours to look at */
	while (!found && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		text_set(path, sizeof(path), "%s/%s", dirpath, de->d_name);
		found = fd_locks(path, want, write);
	}
	(void)closedir(d);	/* read-only, as above */
	return found;
}

/* Some other running process that holds the lock, or 0; a readdir
 * error ends the search with what it found, as for a process we may
 * not look at. */
static pid_t scan_processes(const char *want, bool write)
{
	struct dirent *de;
	pid_t found = 0;
	DIR *d = opendir("/proc");

	if (!d)
		return 0;
	while (!found && (de = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid == (long)getpid())
			continue;
		if (process_holds(pid, want, write) && pid_group_alive((pid_t)pid))
			found = (pid_t)pid;
	}
	(void)closedir(d);	/* read-only, as above */
	return found;
}

/* A process named by /proc/locks, or, if it has exited, the one that
 * keeps the lock it took (a forked child): `taker` says who took it;
 * `gone`, no such process could be found (another user's). */
struct holder_pid {
	pid_t pid;
	pid_t taker;	/* pid named by the row, if not pid */
	bool gone;	/* taker exited; no process found that holds it */
};

/* The row's taker, or who keeps its lock now that it has exited. */
static struct holder_pid live_holder(pid_t taker, const char *file)
{
	struct holder_pid h = { taker, 0, false };
	char want[96];

	if (pid_group_alive(taker))
		return h;
	text_set(want, sizeof(want), " %d%s", (int)taker, file);
	h.pid = scan_processes(want, false);
	h.taker = taker;
	if (h.pid == 0) {
		h.pid = taker;
		h.gone = true;
	}
	return h;
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
static pid_t kernel_holder(const char *path, const struct pidlock_info *info)
{
	char file[64];
	struct stat st;

	if (!info->kernel_locks)
		return 0;
	if (pid_group_alive(info->kernel_pid))
		return info->kernel_pid;
	if (lstat(path, &st) < 0)
		return 0;
	text_set(file, sizeof(file), " %02x:%02x:%llu ", major(st.st_dev),
		 minor(st.st_dev), (unsigned long long)st.st_ino);
	/* A taker that exited: whoever keeps the lock it took, read or
	 * write, whose fdinfo line still names it. */
	if (info->kernel_pid > 0) {
		struct holder_pid h = live_holder(info->kernel_pid, file);

		if (!h.gone)
			return h.pid;
	}
	return scan_processes(file, true);
}

/*
 * The holders of a shared lock on path's file, from the pids the kernel
 * names: /proc/locks rows "3: FLOCK  ADVISORY  READ 4359 08:01:1234 0
 * EOF" (waiters, "->", are not holders).  A row names the process that
 * took the lock, which may have exited while a forked child keeps the
 * open file description: then the process whose /proc/PID/fdinfo lists
 * that lock holds it (`taker` says who took it), or, if none can be
 * found (another user's), the taker is kept with `gone` set.  OFD rows
 * say -1: those holders are counted (info->holders), not named.
 */
#define HOLDER_PIDS_MAX 32

static bool holder_listed(const struct holder_pid *h, int n, pid_t pid)
{
	for (int i = 0; i < n; i++)
		if (h[i].pid == pid || h[i].taker == pid)
			return true;
	return false;
}

/* One reading of /proc/locks: the holders of `want`'s rows not yet in
 * pids[0..n), appended; returns the new n. */
static int read_holder_pids(const char *want, struct holder_pid *pids,
			    int n, int max)
{
	char line[256];
	FILE *f = fopen("/proc/locks", "re");

	if (!f)
		return n;
	while (n < max && fgets(line, sizeof(line), f)) {
		int pid;

		if (!strstr(line, want) || strstr(line, "->") ||
		    sscanf(line, "%*d: %*s %*s %*s %d", &pid) != 1 || pid <= 0 ||
		    holder_listed(pids, n, pid))
			continue;
		pids[n] = live_holder(pid, want);
		/* Two takers whose descriptors one process keeps. */
		if (pids[n].gone || !holder_listed(pids, n, pids[n].pid))
			n++;
	}
	(void)fclose(f);	/* read-only: nothing to flush */
	return n;
}

/*
 * `expect`: how many holders the library counted (info->holders, from
 * readings it repeats while the list is torn).  The kernel prints a list
 * longer than a page in pieces, and a lock released between two pieces
 * shifts the rows, so one reading can skip a holder's row (seen under
 * the load of a parallel make check): read it again, up to 8 times,
 * while fewer are named than counted.
 */
static int kernel_holder_pids(const char *path, struct holder_pid *pids,
			      int max, unsigned int expect)
{
	char want[64];
	struct stat st;
	int n = 0;

	if (lstat(path, &st) < 0)
		return 0;
	text_set(want, sizeof(want), " %02x:%02x:%llu ", major(st.st_dev),
		 minor(st.st_dev), (unsigned long long)st.st_ino);
	for (int reading = 0; reading < 8 && (reading == 0 || n < (int)expect);
	     reading++)
		n = read_holder_pids(want, pids, n, max);
	return n;
}

/* The host a foreign record names ("another host" if it names none, or
 * the record changed since the inspect). */
static const char *record_host(const char *path, char *host, size_t size)
{
	if (pidlock_record_host(path, host, size) < 0 || !host[0])
		text_set(host, size, "another host");
	return host;
}

/* The record's pid is not judged here, yet not another host's: it is a
 * number of another pid namespace (the writer's pidns= line is not ours,
 * or our /proc is another's), and names nobody here. */
static bool other_pidns(const struct pidlock_info *info)
{
	return info->pid > 0 && info->pid_alive < 0 && !info->foreign;
}

/* "pid 1234 holding flock,fcntl" and what the record says besides;
 * false when the record names another process than the holder. */
static bool describe_kernel_holder(const char *path,
				   const struct pidlock_info *info,
				   char *buf, size_t size)
{
	pid_t holder = kernel_holder(path, info);
	char kinds[32];

	format_kinds(info->kernel_locks, kinds, sizeof(kinds));
	/* Written under another kernel: this host's /proc/locks cannot
	 * name that holder, and its pid means nothing here. */
	if (holder == 0 && info->foreign) {
		char host[PIDLOCK_HOST_MAX + 1];

		text_set(buf, size, "pid %d on %s holding %s", (int)info->pid,
			 record_host(path, host, sizeof(host)), kinds);
		return true;
	}
	/* Not allowed to look: the record's pid, if it runs, is the best
	 * guess left. */
	if (holder == 0 && info->pid > 0 && info->pid_alive > 0)
		holder = info->pid;
	if (holder > 0)
		text_set(buf, size, "pid %d holding %s", (int)holder, kinds);
	else if (info->holder_hidden)
		text_set(buf, size, "a process outside this pid namespace "
			 "holding %s", kinds);
	else
		text_set(buf, size, "an unknown process holding %s", kinds);
	if (info->shared && info->holders > 1)
		text_add(buf, size, " shared with %u other%s",
			 (unsigned int)info->holders - 1,
			 info->holders == 2 ? "" : "s");
	else if (info->shared)
		text_add(buf, size, " shared");
	if (info->pid <= 0 || info->pid == holder)
		return true;
	/* The record's pid is the hidden holder's own, numbered as its
	 * namespace numbers it: the record is the holder's all the same. */
	if (holder == 0 && info->holder_hidden &&
	    (info->pid_alive == 0 || other_pidns(info)))
		return true;
	if (other_pidns(info)) {
		text_add(buf, size, " (the file names pid %d of another pid "
			 "namespace)", (int)info->pid);
		return true;
	}
	text_add(buf, size, info->pid_alive == 0 ?
		 " (the file names pid %d, which is not running)" :
		 " (the file names pid %d)", (int)info->pid);
	return false;
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
	char age[48] = "";

	if (info->kernel_locks) {
		if (!describe_kernel_holder(path, info, buf, size))
			return;
	} else if (info->pid > 0) {
		text_set(buf, size, "pid %d", (int)info->pid);
		if (info->state == PIDLOCK_STATE_HELD_SPEC)
			text_add(buf, size, " (spec-only, no kernel lock)");
		else if (info->state == PIDLOCK_STATE_HELD_PIDFILE)
			text_add(buf, size, " (a pidfile or dotlock, no kernel "
				 "lock; running since before the file was "
				 "written)");
	} else if (info->state == PIDLOCK_STATE_HELD_SPEC &&
		   !info->has_timestamp) {
		/* Rule C's window: nobody is known to hold it.  Say why it
		 * counts as held, and that a wait judges it again. */
		text_set(buf, size, "nobody known yet: the file is new and "
			 "holds no record, and a locker that creates the file "
			 "before it writes its record may be between the two, "
			 "so the file counts as held for its first %u ms; "
			 "-w waits that out", PIDLOCK_DEFAULT_GRACE_MS);
	} else {
		text_set(buf, size, "an unknown process");
	}
	if (info->has_timestamp)
		format_age((int64_t)time(NULL) - info->timestamp, age, sizeof(age));
	if (info->tag[0])
		text_add(buf, size, ", tag \"%s\"", info->tag);
	if (age[0])
		text_add(buf, size, ", since %s", age);
}

/* What --status exits with for this file. */
static int status_exit(const struct pidlock_info *info)
{
	switch (info->state) {
	case PIDLOCK_STATE_FREE:
		return STATUS_FREE;
	case PIDLOCK_STATE_HELD:
	case PIDLOCK_STATE_HELD_SPEC:
	case PIDLOCK_STATE_HELD_PIDFILE:
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

/* ---- JSON --------------------------------------------------------- */

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

/* One ASCII character inside a JSON string. */
static void json_char(unsigned char c)
{
	if (c == '"' || c == '\\')
		out(stdout, "\\%c", c);
	else if (c == '\n')
		out(stdout, "\\n");
	else if (c == '\t')
		out(stdout, "\\t");
	else if (c < 0x20 || c == 0x7f)
		out(stdout, "\\u%04x", c);
	else
		out(stdout, "%c", c);
}

/*
 * File names are bytes, JSON strings are Unicode: a byte that is not
 * part of valid UTF-8 becomes U+FFFD, so the document always parses.
 * (A NUL ends the C string, so a short sequence never reads past it.)
 */
static void json_string(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	out(stdout, "\"");
	while (*s) {
		size_t n = utf8_seq(s);

		if (n == 0) {
			out(stdout, "\\ufffd");
			s++;
		} else if (n > 1) {
			out(stdout, "%.*s", (int)n, (const char *)s);
			s += n;
		} else {
			json_char(*s++);
		}
	}
	out(stdout, "\"");
}

/* ", "key": "text"" or ", "key": null" */
static void json_key_string(const char *key, const char *s)
{
	out(stdout, ", \"%s\": ", key);
	if (s)
		json_string(s);
	else
		out(stdout, "null");
}

static void json_kinds(const char *key, unsigned int kinds)
{
	out(stdout, ", \"%s\": [%s%s%s]", key,
	    kinds & PIDLOCK_KIND_FLOCK ? "\"flock\"" : "",
	    kinds == (PIDLOCK_KIND_FLOCK | PIDLOCK_KIND_OFD) ? ", " : "",
	    kinds & PIDLOCK_KIND_OFD ? "\"fcntl\"" : "");
}

static void json_int_or_null(const char *key, long long v, bool known)
{
	if (known)
		out(stdout, ", \"%s\": %lld", key, v);
	else
		out(stdout, ", \"%s\": null", key);
}

/* The record's time, as UTC; NULL where there is none. */
static const char *utc_text(int64_t t, bool known, char *buf, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!known || !gmtime_r(&tt, &tm) ||
	    !strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
		return NULL;
	return buf;
}

/* What the content says is a record only in a lock file: the pid=-like
 * lines of other data name nobody. */
static void json_record(const struct pidlock_info *info, bool exists)
{
	bool stamp = exists && info->has_timestamp;
	bool pid = exists && info->pid > 0;
	char since[64];

	json_int_or_null("pid", info->pid, pid);
	out(stdout, ", \"pid_alive\": %s", !pid || info->pid_alive < 0 ? "null" :
	    info->pid_alive ? "true" : "false");
	json_int_or_null("timestamp", info->timestamp, stamp);
	json_key_string("since", utc_text(info->timestamp, stamp, since,
					  sizeof(since)));
	json_int_or_null("age", (long long)time(NULL) - info->timestamp, stamp);
	json_key_string("tag", exists && info->tag[0] ? info->tag : NULL);
}

/* "host": the writer's host, for a record written under another
 * kernel, else null; "foreign": whether it was. */
static void json_host(const char *path, const struct pidlock_info *info,
		      bool exists)
{
	char host[PIDLOCK_HOST_MAX + 1];
	bool foreign = exists && info->foreign;

	json_key_string("host", foreign ? record_host(path, host, sizeof(host))
					: NULL);
	out(stdout, ", \"foreign\": %s", foreign ? "true" : "false");
}

/* One lock object.  error != 0: inspecting failed, nothing else known.
 * Every object has the same keys, null where a value is unknown, so
 * consumers never test for presence. */
/* "mode": "shared" or "exclusive" while a kernel lock is held, else
 * null; "holders": how many the kernel lists; "holder_pids": those it
 * names. */
static void json_mode(const char *path, unsigned int kernel,
		      const struct pidlock_info *info)
{
	struct holder_pid pids[HOLDER_PIDS_MAX];
	int n = kernel ? kernel_holder_pids(path, pids, HOLDER_PIDS_MAX,
					    info->holders)
		       : 0;
	bool first = true;

	json_key_string("mode", !kernel ? NULL
				: info->shared ? "shared" : "exclusive");
	out(stdout, ", \"holders\": %u, \"holder_pids\": [",
	    kernel ? (unsigned int)info->holders : 0U);
	/* Running processes only: a taker that exited holds nothing. */
	for (int i = 0; i < n; i++) {
		if (pids[i].gone)
			continue;
		out(stdout, "%s%d", first ? "" : ", ", (int)pids[i].pid);
		first = false;
	}
	out(stdout, "]");
}

void json_info(const char *path, const struct pidlock_info *info, int error)
{
	bool exists = !error && info->state != PIDLOCK_STATE_FREE &&
		      info->state != PIDLOCK_STATE_NOT_LOCK_FILE;
	int err = error ? error : info->error;

	out(stdout, "{\"path\": ");
	json_string(path);
	json_key_string("state", error ? "error" :
			pidlock_state_name(info->state));
	out(stdout, ", \"exit_status\": %d", error ? exit_for_errno(error) :
	    status_exit(info));
	json_record(info, exists);
	json_host(path, info, exists);
	json_kinds("kernel_locks", error ? 0 : info->kernel_locks);
	json_int_or_null("kernel_pid", info->kernel_pid,
			 !error && info->kernel_pid > 0);
	json_mode(path, error ? 0 : info->kernel_locks, info);
	out(stdout, ", \"holder_hidden\": %s",
	    !error && info->kernel_locks && info->holder_hidden ? "true"
								 : "false");
	json_kinds("marker", exists ? info->marker : 0);
	json_int_or_null("mtime", info->mtime, exists ||
			 (!error && info->state == PIDLOCK_STATE_NOT_LOCK_FILE));
	json_key_string("error", err ? strerror(err) : NULL);
	out(stdout, "}");
}

/* ---- --status ----------------------------------------------------- */

static const char *state_meaning(enum pidlock_state state)
{
	switch (state) {
	case PIDLOCK_STATE_HELD:
		return "a process holds its kernel lock";
	case PIDLOCK_STATE_HELD_SPEC:
		return "a spec-only holder: no kernel lock, not stale";
	case PIDLOCK_STATE_HELD_PIDFILE:
		return "a pidfile or dotlock: no kernel lock, its process "
		       "runs and started before the file was written";
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

static void print_pid(const char *path, const struct pidlock_info *info)
{
	if (info->pid <= 0) {
		out(stdout, "  pid:     none recorded\n");
		return;
	}
	if (info->foreign) {
		char host[PIDLOCK_HOST_MAX + 1];

		out(stdout, "  pid:     %d (not judged here: another host's)\n",
		    (int)info->pid);
		out(stdout, "  host:    ");
		print_clean(stdout, record_host(path, host, sizeof(host)));
		out(stdout, "\n");
		return;
	}
	out(stdout, "  pid:     %d (%s)\n", (int)info->pid,
	    other_pidns(info) ? "not judged here: another pid namespace's" :
	    info->pid_alive > 0 ? "running" :
	    info->pid_alive < 0 ? "unknown" :
	    info->holder_hidden ? "no such process in this pid namespace" :
	    "not running");
}

static void print_since(const struct pidlock_info *info)
{
	char when[64], age[64];

	if (!info->has_timestamp)
		return;
	format_local_time(info->timestamp, when, sizeof(when));
	format_age((int64_t)time(NULL) - info->timestamp, age, sizeof(age));
	out(stdout, "  since:   %s (%s)\n", when, age);
}

/* " (held by pid 34; taken by pid 12, which handed it on)" and the
 * like: a forking daemon's parent takes the lock and exits, and its
 * child holds it, which is no fault and must not read as one. */
static void print_kernel_holder(const char *path,
				const struct pidlock_info *info, pid_t holder)
{
	char host[PIDLOCK_HOST_MAX + 1];
	pid_t taker = info->kernel_pid;

	if (taker > 0 && holder == taker)
		out(stdout, " (taken by pid %d)", (int)taker);
	else if (taker > 0 && holder > 0)
		out(stdout, " (held by pid %d; taken by pid %d, which "
			    "handed it on)", (int)holder, (int)taker);
	else if (taker > 0)
		out(stdout, " (taken by pid %d, which handed it on; holder "
			    "unknown)", (int)taker);
	else if (holder > 0)
		out(stdout, " (held by pid %d)", (int)holder);
	else if (info->foreign) {
		out(stdout, " (held on ");
		print_clean(stdout, record_host(path, host, sizeof(host)));
		out(stdout, ")");
	} else if (info->holder_hidden)
		out(stdout, " (held by a process outside this pid namespace)");
	else if (info->kernel_locks)
		out(stdout, " (holder unknown)");
}

/* "  mode:    shared, 3 holders: pids 12 34 56" */
static void print_mode(const char *path, const struct pidlock_info *info)
{
	struct holder_pid pids[HOLDER_PIDS_MAX];
	int n;

	if (!info->shared) {
		out(stdout, "  mode:    exclusive\n");
		return;
	}
	out(stdout, "  mode:    shared, %u holder%s", (unsigned int)info->holders,
	    info->holders == 1 ? "" : "s");
	n = kernel_holder_pids(path, pids, HOLDER_PIDS_MAX, info->holders);
	if (n > 0)
		out(stdout, ": pid%s", n == 1 ? "" : "s");
	for (int i = 0; i < n; i++) {
		out(stdout, " %d", (int)pids[i].pid);
		if (pids[i].gone)
			out(stdout, " (exited; its descriptor lives on)");
		else if (pids[i].taker)
			out(stdout, " (taken by pid %d, which exited)",
			    (int)pids[i].taker);
	}
	out(stdout, "\n");
}

static void print_kernel(const char *path, const struct pidlock_info *info)
{
	char kinds[32];

	format_kinds(info->kernel_locks, kinds, sizeof(kinds));
	out(stdout, "  kernel:  %s", kinds);
	print_kernel_holder(path, info, kernel_holder(path, info));
	out(stdout, "\n");
	if (info->kernel_locks)
		print_mode(path, info);
	if (!info->marker)
		return;
	format_kinds(info->marker, kinds, sizeof(kinds));
	out(stdout, "  written: by a kernel-lock locker taking %s\n", kinds);
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
	out(stdout, ": %s", pidlock_state_name(info->state));
	if (info->state == PIDLOCK_STATE_UNREADABLE)
		out(stdout, " (%s)", strerror(info->error ? info->error : EIO));
	else if (meaning)
		out(stdout, " (%s)", meaning);
	out(stdout, "\n");
	if (info->state == PIDLOCK_STATE_FREE ||
	    info->state == PIDLOCK_STATE_NOT_LOCK_FILE)
		return;
	print_pid(path, info);
	if (info->tag[0])
		out(stdout, "  tag:     %s\n", info->tag);
	print_since(info);
	print_kernel(path, info);
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

/* One lock file, as text or as a JSON object; returns its exit status.
 * *held says whether somebody holds it. */
static int show_one(const struct opts *o, const char *path, bool *first,
		    bool *held)
{
	struct pidlock_info info;
	int error;
	int code = inspect_one(o, path, &info, &error);

	*held = !error && (info.state == PIDLOCK_STATE_HELD ||
			   info.state == PIDLOCK_STATE_HELD_SPEC ||
			   info.state == PIDLOCK_STATE_HELD_PIDFILE);
	if (error)
		warn_path(path, error);
	if (o->json) {
		out(stdout, *first ? "\n  " : ",\n  ");
		json_info(path, &info, error);
	} else if (!error) {
		print_text(path, &info);
	}
	*first = false;
	return code;
}

/* ---- semaphores: the slot files PATH.0, PATH.1, ... -------------- */

/* k if name is "BASE.k" (k in plain decimal, below PIDLOCK_SLOTS_MAX),
 * else -1. */
static long slot_number(const char *name, const char *base)
{
	size_t len = strlen(base);
	const char *p = name + len;
	char *end;
	unsigned long k;

	if (strncmp(name, base, len) != 0 || p[0] != '.' || p[1] < '0' ||
	    p[1] > '9' || (p[1] == '0' && p[2]))
		return -1;
	errno = 0;
	k = strtoul(p + 1, &end, 10);
	return errno || *end || k >= PIDLOCK_SLOTS_MAX ? -1 : (long)k;
}

/* Which slot files of path exist: found[k] for each; how many. */
static unsigned int find_slots(const char *path, bool *found)
{
	char *copy = strdup(path);
	const char *base = strrchr(path, '/');
	unsigned int count = 0;
	struct dirent *de;
	DIR *d;

	base = base ? base + 1 : path;
	d = copy ? opendir(dirname(copy)) : NULL;
	free(copy);
	if (!d)
		return 0;	/* the path's own status says why */
	while ((de = readdir(d)) != NULL) {
		long k = slot_number(de->d_name, base);

		if (k >= 0 && !found[k]) {
			found[k] = true;
			count++;
		}
	}
	(void)closedir(d);	/* read-only, as above */
	return count;
}

static void slot_path(const char *path, unsigned int k, char *buf,
		      size_t size)
{
	text_set(buf, size, "%s.%u", path, k);
}

/*
 * --status --slots N PATH: every slot, held or not.  Exit status 1 when
 * all N are held (an acquire would wait), 0 when one is not, or the
 * worst error of a slot.
 */
static int show_slots(const struct opts *o, const char *path, bool *first)
{
	char name[PATH_MAX + 16];
	unsigned int nheld = 0;
	int worst = 0;

	for (unsigned int k = 0; k < o->slots; k++) {
		bool held;
		int code;

		slot_path(path, k, name, sizeof(name));
		code = show_one(o, name, first, &held);
		nheld += held;
		if (code > STATUS_LEFT && code > worst)
			worst = code;
	}
	if (!o->json) {
		print_clean(stdout, path);
		out(stdout, ": semaphore, %u of %u slots held\n", nheld,
		    o->slots);
	}
	if (worst)
		return worst;
	return nheld == o->slots ? STATUS_HELD : STATUS_FREE;
}

/* Without --slots: slot files found beside path are shown after it
 * (their number is not known, so they do not change the exit status). */
static void show_found_slots(const struct opts *o, const char *path,
			     bool *first)
{
	bool found[PIDLOCK_SLOTS_MAX] = { false };
	char name[PATH_MAX + 16];

	if (find_slots(path, found) == 0)
		return;
	for (unsigned int k = 0; k < PIDLOCK_SLOTS_MAX; k++) {
		bool held;

		if (!found[k])
			continue;
		slot_path(path, k, name, sizeof(name));
		(void)show_one(o, name, first, &held);
	}
}

int cmd_status(const struct opts *o)
{
	bool first = true;
	int worst = 0;

	if (o->json)
		out(stdout, "{\"locks\": [");
	for (int i = 0; i < o->nfiles; i++) {
		bool held;
		int code;

		if (o->slots) {
			code = show_slots(o, o->files[i], &first);
		} else {
			code = show_one(o, o->files[i], &first, &held);
			show_found_slots(o, o->files[i], &first);
		}
		if (code > worst)
			worst = code;
	}
	if (o->json)
		out(stdout, "\n]}\n");
	if (finish_stdout())
		return EX_IOERR;
	return worst;
}
