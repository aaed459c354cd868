/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Hostile lock file content, three ways: the parser (content_parse),
 * pidlock_inspect() on a left-over file, and pidlock_acquire() over it.
 *
 * The classification follows the library's rules (doc/protocol.md):
 *   - a kernel lock on the file: held, whatever the content says;
 *   - a lock= marker (a libpidlock writer) without a kernel lock:
 *     abandoned, free to take;
 *   - pid= (1..INT_MAX, plain decimal) and timestamp= (0..INT64_MAX,
 *     plain decimal) both valid: a spec-only holder, stale only when
 *     older than the stale timeout AND its pid is not alive;
 *   - anything else is incomplete: a spec writer may be between its
 *     create and its write, so it counts as held for the grace period
 *     after the file's mtime, then as abandoned.
 * Parsing: the first 4096 bytes only, lines split at LF, each line
 * trimmed of blanks (so CRLF works), a BOM at the very start skipped,
 * split at the first '=', unknown keys and lines without '=' ignored
 * (a bare number on the first line is a classic pidfile's pid, shown
 * but never trusted), the last of duplicate keys wins even if invalid.
 * Tags keep valid UTF-8 without control characters, up to 255 bytes.
 *
 * Every table row below is also the list of cases the command line
 * tool's --status must agree with.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "testutil.h"

#define TMPFS_MAGIC 0x01021994

/* Placeholders in the templates and the expectations. */
#define P_LIVE (-1)		/* our own pid: alive */
#define P_DEAD (-2)		/* a reaped child */
#define P_PIDMAX1 (-3)		/* pid_max + 1: cannot exist */
#define T_NOW (-1)
#define T_OLD (-2)		/* two stale timeouts ago */
#define T_FUTURE (-3)		/* ten years ahead */

#define OLD_AGE 7200
#define FUTURE_AHEAD (10LL * 365 * 86400)
#define ALL (PIDLOCK_KIND_FLOCK | PIDLOCK_KIND_OFD)

/* Bytes with their length, NULs included. */
#define B(s) s, sizeof(s) - 1

struct ccase {
	const char *name;
	const char *tmpl;
	size_t tlen;
	int pid;		/* struct content .pid */
	int bare_pid;		/* struct content .bare_pid */
	int has_ts;
	int64_t ts;		/* meaningful if has_ts */
	unsigned int marker;
	const char *tag;	/* cleaned; NULL for none */
	enum pidlock_state state; /* inspect, mtime a minute ago */
};

#define ABANDONED PIDLOCK_STATE_ABANDONED
#define HELD_SPEC PIDLOCK_STATE_HELD_SPEC
#define STALE PIDLOCK_STATE_STALE
/* What a locker leaves when it is done: an empty file. */
#define FREE PIDLOCK_STATE_FREE
/* Somebody's data, not a record any locker could have left. */
#define FOREIGN PIDLOCK_STATE_NOT_LOCK_FILE

static const struct ccase cases[] = {
	/* --- empty and blank --- */
	{ "empty", B(""), 0, 0, 0, 0, 0, NULL, FREE },
	{ "blank lines", B("\n\n\r\n \t\n\v\f\n"), 0, 0, 0, 0, 0, NULL,
	  FREE },
	{ "valid record", B("pid=@LIVE@\ntimestamp=@NOW@\n"), P_LIVE, 0, 1,
	  T_NOW, 0, NULL, HELD_SPEC },
	{ "valid record, dead and old", B("pid=@DEAD@\ntimestamp=@OLD@\n"),
	  P_DEAD, 0, 1, T_OLD, 0, NULL, STALE },
	{ "no final newline", B("pid=@LIVE@\ntimestamp=@NOW@"), P_LIVE, 0,
	  1, T_NOW, 0, NULL, HELD_SPEC },

	/* --- NUL bytes: never blank, never digits --- */
	{ "NULs only", B("\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"), 0, 0, 0, 0,
	  0, NULL, ABANDONED },
	{ "NUL inside pid", B("pid=1\0002\ntimestamp=@NOW@\n"), 0, 0, 1,
	  T_NOW, 0, NULL, FOREIGN },
	{ "NUL line after record",
	  B("pid=@LIVE@\ntimestamp=@NOW@\n\0\0\0\0\n"), P_LIVE, 0, 1,
	  T_NOW, 0, NULL, FOREIGN },
	{ "NUL in tag", B("pid=@LIVE@\ntimestamp=@NOW@\ntag=a\0b\n"),
	  P_LIVE, 0, 1, T_NOW, 0, "a?b", FOREIGN },
	{ "NUL before key", B("\0pid=@LIVE@\ntimestamp=@NOW@\n"), 0, 0, 1,
	  T_NOW, 0, NULL, FOREIGN },
	{ "NUL in timestamp", B("pid=@DEAD@\ntimestamp=1\0\n"), P_DEAD, 0,
	  0, 0, 0, NULL, FOREIGN },

	/* --- encodings --- */
	{ "invalid UTF-8 in tag",
	  B("pid=@LIVE@\ntimestamp=@NOW@\ntag=\xff\xfeok\xc3\n"), P_LIVE, 0,
	  1, T_NOW, 0, "??ok?", HELD_SPEC },
	{ "overlong, surrogate, beyond U+10FFFF in tag",
	  B("pid=@LIVE@\ntimestamp=@NOW@\ntag=\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80\n"),
	  P_LIVE, 0, 1, T_NOW, 0, "?????????", HELD_SPEC },
	{ "valid UTF-8 tag",
	  B("pid=@LIVE@\ntimestamp=@NOW@\ntag=na\xc3\xafve \xe2\x9c\x93 \xf0\x9f\x94\x92\n"),
	  P_LIVE, 0, 1, T_NOW, 0, "na\xc3\xafve \xe2\x9c\x93 \xf0\x9f\x94\x92",
	  HELD_SPEC },
	{ "invalid UTF-8 in pid", B("pid=\xff" "12\ntimestamp=@NOW@\n"), 0,
	  0, 1, T_NOW, 0, NULL, FOREIGN },
	{ "invalid UTF-8 line", B("\xfe\xff\xc0\nnext\n"), 0, 0, 0, 0, 0,
	  NULL, FOREIGN },
	{ "BOM", B("\xef\xbb\xbfpid=@LIVE@\ntimestamp=@NOW@\n"), P_LIVE, 0,
	  1, T_NOW, 0, NULL, HELD_SPEC },
	{ "BOM, dead and old", B("\xef\xbb\xbfpid=@DEAD@\ntimestamp=@OLD@\n"),
	  P_DEAD, 0, 1, T_OLD, 0, NULL, STALE },
	{ "BOM then bare pid", B("\xef\xbb\xbf@LIVE@\n"), 0, P_LIVE, 0, 0,
	  0, NULL, ABANDONED },
	{ "two BOMs", B("\xef\xbb\xbf\xef\xbb\xbfpid=@LIVE@\ntimestamp=@NOW@\n"),
	  0, 0, 1, T_NOW, 0, NULL, FOREIGN },
	{ "BOM on a later line",
	  B("timestamp=@NOW@\n\xef\xbb\xbfpid=@LIVE@\n"), 0, 0, 1, T_NOW, 0,
	  NULL, FOREIGN },
	{ "CRLF", B("pid=@LIVE@\r\ntimestamp=@NOW@\r\ntag=crlf\r\n"), P_LIVE,
	  0, 1, T_NOW, 0, "crlf", HELD_SPEC },
	{ "CRLF, dead and old", B("pid=@DEAD@\r\ntimestamp=@OLD@\r\n"),
	  P_DEAD, 0, 1, T_OLD, 0, NULL, STALE },
	{ "lone CR", B("pid=@LIVE@\rtimestamp=@NOW@\r"), 0, 0, 0, 0, 0,
	  NULL, FOREIGN },
	{ "CR inside tag", B("pid=@LIVE@\ntimestamp=@NOW@\ntag=a\rb\n"),
	  P_LIVE, 0, 1, T_NOW, 0, "a?b", HELD_SPEC },

	/* --- pids --- */
	{ "pid=0", B("pid=0\ntimestamp=@OLD@\n"), 0, 0, 1, T_OLD, 0, NULL,
	  ABANDONED },
	{ "pid=-1", B("pid=-1\ntimestamp=@OLD@\n"), 0, 0, 1, T_OLD, 0, NULL,
	  FOREIGN },
	{ "pid=1, old: init never dies", B("pid=1\ntimestamp=@OLD@\n"), 1, 0,
	  1, T_OLD, 0, NULL, HELD_SPEC },
	{ "pid above pid_max, old", B("pid=@PIDMAX1@\ntimestamp=@OLD@\n"),
	  P_PIDMAX1, 0, 1, T_OLD, 0, NULL, STALE },
	{ "pid above pid_max, fresh", B("pid=@PIDMAX1@\ntimestamp=@NOW@\n"),
	  P_PIDMAX1, 0, 1, T_NOW, 0, NULL, HELD_SPEC },
	{ "pid above PID_MAX_LIMIT", B("pid=4194305\ntimestamp=@OLD@\n"),
	  4194305, 0, 1, T_OLD, 0, NULL, STALE },
	{ "pid=INT_MAX", B("pid=2147483647\ntimestamp=@OLD@\n"), INT_MAX, 0,
	  1, T_OLD, 0, NULL, STALE },
	{ "pid=INT_MAX+1", B("pid=2147483648\ntimestamp=@OLD@\n"), 0, 0, 1,
	  T_OLD, 0, NULL, ABANDONED },
	{ "pid of 20 digits", B("pid=99999999999999999999\ntimestamp=@OLD@\n"),
	  0, 0, 1, T_OLD, 0, NULL, ABANDONED },
	{ "pid=12abc", B("pid=12abc\ntimestamp=@NOW@\n"), 0, 0, 1, T_NOW, 0,
	  NULL, FOREIGN },
	{ "pid=+12", B("pid=+12\ntimestamp=@NOW@\n"), 0, 0, 1, T_NOW, 0,
	  NULL, FOREIGN },
	{ "pid= 12", B("pid= 12\ntimestamp=@NOW@\n"), 0, 0, 1, T_NOW, 0,
	  NULL, FOREIGN },
	{ "pid=0x10", B("pid=0x10\ntimestamp=@NOW@\n"), 0, 0, 1, T_NOW, 0,
	  NULL, FOREIGN },
	{ "pid= (empty)", B("pid=\ntimestamp=@NOW@\n"), 0, 0, 1, T_NOW, 0,
	  NULL, FOREIGN },
	{ "pid with leading zeros", B("pid=000@LIVE@\ntimestamp=@NOW@\n"),
	  P_LIVE, 0, 1, T_NOW, 0, NULL, HELD_SPEC },
	{ "duplicate pid, last invalid",
	  B("pid=@LIVE@\ntimestamp=@NOW@\npid=abc\n"), 0, 0, 1, T_NOW, 0,
	  NULL, FOREIGN },
	{ "duplicate pid, last valid",
	  B("pid=abc\ntimestamp=@NOW@\npid=@LIVE@\n"), P_LIVE, 0, 1, T_NOW,
	  0, NULL, FOREIGN },
	{ "duplicate timestamp, last invalid",
	  B("pid=@LIVE@\ntimestamp=@NOW@\ntimestamp=soon\n"), P_LIVE, 0, 0,
	  0, 0, NULL, FOREIGN },
	{ "duplicate marker, last unknown",
	  B("pid=@DEAD@\ntimestamp=@NOW@\nlock=flock,ofd\nlock=bogus\n"),
	  P_DEAD, 0, 1, T_NOW, 0, NULL, HELD_SPEC },
	{ "duplicate tag, last wins",
	  B("pid=@LIVE@\ntimestamp=@NOW@\ntag=one\ntag=two\n"), P_LIVE, 0,
	  1, T_NOW, 0, "two", HELD_SPEC },

	/* --- timestamps --- */
	{ "timestamp in the future, dead pid",
	  B("pid=@DEAD@\ntimestamp=@FUTURE@\n"), P_DEAD, 0, 1, T_FUTURE, 0,
	  NULL, HELD_SPEC },
	{ "timestamp=1, dead pid", B("pid=@DEAD@\ntimestamp=1\n"), P_DEAD, 0,
	  1, 1, 0, NULL, STALE },
	{ "timestamp=1, live pid", B("pid=@LIVE@\ntimestamp=1\n"), P_LIVE, 0,
	  1, 1, 0, NULL, HELD_SPEC },
	{ "timestamp=0, dead pid", B("pid=@DEAD@\ntimestamp=0\n"), P_DEAD, 0,
	  1, 0, 0, NULL, STALE },
	{ "timestamp negative", B("pid=@DEAD@\ntimestamp=-5\n"), P_DEAD, 0,
	  0, 0, 0, NULL, FOREIGN },
	{ "timestamp=INT64_MAX, dead pid",
	  B("pid=@DEAD@\ntimestamp=9223372036854775807\n"), P_DEAD, 0, 1,
	  INT64_MAX, 0, NULL, HELD_SPEC },
	{ "timestamp=2^63", B("pid=@DEAD@\ntimestamp=9223372036854775808\n"),
	  P_DEAD, 0, 0, 0, 0, NULL, ABANDONED },
	{ "timestamp of 30 digits",
	  B("pid=@DEAD@\ntimestamp=999999999999999999999999999999\n"), P_DEAD,
	  0, 0, 0, 0, NULL, FOREIGN },
	{ "timestamp=1.5", B("pid=@DEAD@\ntimestamp=1.5\n"), P_DEAD, 0, 0, 0,
	  0, NULL, FOREIGN },
	{ "timestamp=1e9", B("pid=@DEAD@\ntimestamp=1e9\n"), P_DEAD, 0, 0, 0,
	  0, NULL, FOREIGN },

	/* --- tags --- */
	{ "tag with a newline", B("pid=@LIVE@\ntimestamp=@NOW@\ntag=one\ntwo\n"),
	  P_LIVE, 0, 1, T_NOW, 0, "one", FOREIGN },
	{ "tag with a newline forging pid=",
	  B("pid=@LIVE@\ntimestamp=@NOW@\ntag=x\npid=1x\n"), 0, 0, 1, T_NOW,
	  0, "x", FOREIGN },
	{ "tag with control characters",
	  B("pid=@LIVE@\ntimestamp=@NOW@\ntag=\x1b[2J\x07" "bell\x7f\xc2\x9b\n"),
	  P_LIVE, 0, 1, T_NOW, 0, "?[2J?bell??", FOREIGN },
	{ "tag with a tab inside", B("pid=@LIVE@\ntimestamp=@NOW@\ntag=a\tb\n"),
	  P_LIVE, 0, 1, T_NOW, 0, "a?b", HELD_SPEC },
	{ "tag=", B("pid=@LIVE@\ntimestamp=@NOW@\ntag=\n"), P_LIVE, 0, 1,
	  T_NOW, 0, NULL, HELD_SPEC },

	/* --- unknown keys and lines without '=' --- */
	{ "unknown keys",
	  B("version=2\npid=@LIVE@\nx=\n=\n==\nhost=a=b\ntimestamp=@NOW@\n"),
	  P_LIVE, 0, 1, T_NOW, 0, NULL, FOREIGN },
	{ "lines without =",
	  B("hello world\npid=@LIVE@\ngarbage\ntimestamp=@NOW@\n12\n"), P_LIVE,
	  0, 1, T_NOW, 0, NULL, FOREIGN },
	{ "bare pid only (pidfile)", B("@LIVE@\n"), 0, P_LIVE, 0, 0, 0, NULL,
	  ABANDONED },
	{ "bare pid not first", B("x\n@LIVE@\n"), 0, 0, 0, 0, 0, NULL,
	  FOREIGN },
	{ "bare pid after blank lines", B("\n \n@LIVE@\n"), 0, P_LIVE, 0, 0, 0,
	  NULL, ABANDONED },
	{ "bare pid and record (PLAIN_PID)",
	  B("@DEAD@\npid=@DEAD@\ntimestamp=@OLD@\n"), P_DEAD, P_DEAD, 1, T_OLD,
	  0, NULL, STALE },
	{ "bare pid disagreeing with pid=",
	  B("1\npid=@DEAD@\ntimestamp=@OLD@\n"), P_DEAD, 1, 1, T_OLD, 0, NULL,
	  STALE },
	{ "space before =", B("pid =@LIVE@\ntimestamp=@NOW@\n"), 0, 0, 1,
	  T_NOW, 0, NULL, FOREIGN },
	{ "indented lines", B("  pid=@LIVE@\n\ttimestamp=@NOW@  \n"), P_LIVE,
	  0, 1, T_NOW, 0, NULL, HELD_SPEC },
	{ "upper-case key", B("PID=@LIVE@\ntimestamp=@NOW@\n"), 0, 0, 1,
	  T_NOW, 0, NULL, FOREIGN },

	/* --- the lock= marker --- */
	{ "marker only", B("lock=flock,ofd\n"), 0, 0, 0, 0, ALL, NULL,
	  ABANDONED },
	{ "marker with a live pid",
	  B("pid=@LIVE@\ntimestamp=@NOW@\nlock=flock,ofd\n"), P_LIVE, 0, 1,
	  T_NOW, ALL, NULL, ABANDONED },
	{ "marker with unknown tokens",
	  B("lock=flock,,xyz,OFD\npid=@LIVE@\ntimestamp=@NOW@\n"), P_LIVE, 0,
	  1, T_NOW, PIDLOCK_KIND_FLOCK, NULL, ABANDONED },
	{ "marker empty", B("lock=\npid=@LIVE@\ntimestamp=@NOW@\n"), P_LIVE,
	  0, 1, T_NOW, 0, NULL, HELD_SPEC },
	{ "marker of unknown kinds only",
	  B("lock=fcntl\npid=@LIVE@\ntimestamp=@NOW@\n"), P_LIVE, 0, 1, T_NOW,
	  0, NULL, HELD_SPEC },
};

#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

/* --- fixture ------------------------------------------------------- */

static char *shm_base;	/* on a tmpfs, for file times ext4 cannot store */
static char *dir;
static char lockpath[PATH_MAX];
static int fds_before;
static pid_t dead_pid;
static int64_t now;

/* Is `path` on a tmpfs, which stores any 64-bit time it is given? */
static bool on_tmpfs(const char *path)
{
	struct statfs sf;

	return statfs(path, &sf) == 0 && sf.f_type == TMPFS_MAGIC;
}

/* Made and removed by the runner process, as tu_base() is, so a failed
 * test leaves nothing behind. */
static void setup_shm(void)
{
	if (on_tmpfs("/dev/shm") && access("/dev/shm", W_OK) == 0)
		shm_base = tu_mkdtemp("/dev/shm", "content");
}

static void teardown_shm(void)
{
	if (shm_base)
		tu_rmtree_quiet(shm_base);
	free(shm_base);
	shm_base = NULL;
}

static void setup(void)
{
	int n;

	dir = tu_mkdtemp(tu_base(), "case");
	n = snprintf(lockpath, sizeof(lockpath), "%s/lock", dir);
	ck_assert(n > 0 && n < (int)sizeof(lockpath));
	dead_pid = tu_dead_pid();
	now = tu_now();
	fds_before = tu_count_fds();
}

static void teardown(void)
{
	ck_assert_int_eq(tu_count_fds(), fds_before);
	ck_assert(!tu_has_temp(dir));
	tu_rmtree(dir);
	free(dir);
}

static long long pid_value(int p)
{
	switch (p) {
	case P_LIVE:
		return getpid();
	case P_DEAD:
		return dead_pid;
	case P_PIDMAX1:
		return tu_pid_max() + 1;
	}
	return p;
}

static int64_t ts_value(int64_t t)
{
	switch (t) {
	case T_NOW:
		return now;
	case T_OLD:
		return now - OLD_AGE;
	case T_FUTURE:
		return now + FUTURE_AHEAD;
	}
	return t;
}

/* The template with its @TOKENS@ replaced; *len its length. */
static char *expand(const char *t, size_t tlen, size_t *len)
{
	static const struct { const char *tok; int kind; long long v; } toks[] = {
		{ "@LIVE@", 0, P_LIVE }, { "@DEAD@", 0, P_DEAD },
		{ "@PIDMAX1@", 0, P_PIDMAX1 }, { "@NOW@", 1, T_NOW },
		{ "@OLD@", 1, T_OLD }, { "@FUTURE@", 1, T_FUTURE },
	};
	char *out = malloc(tlen * 4 + 64);
	size_t o = 0, i = 0;

	ck_assert_ptr_nonnull(out);
	while (i < tlen) {
		size_t k;

		for (k = 0; k < sizeof(toks) / sizeof(toks[0]); k++) {
			size_t n = strlen(toks[k].tok);

			if (tlen - i >= n && memcmp(t + i, toks[k].tok, n) == 0)
				break;
		}
		if (k == sizeof(toks) / sizeof(toks[0])) {
			out[o++] = t[i++];
			continue;
		}
		o += (size_t)sprintf(out + o, "%lld", toks[k].kind
				     ? (long long)ts_value(toks[k].v)
				     : pid_value((int)toks[k].v));
		i += strlen(toks[k].tok);
	}
	*len = o;
	return out;
}

static const char *tag_or_empty(const char *tag)
{
	return tag ? tag : "";
}

/* The lock file with these bytes, last written a minute ago. */
static void plant(const char *data, size_t len)
{
	tu_write_file(lockpath, data, len, 0644);
	tu_set_mtime(lockpath, now - 60);
}

/* --- the table, three ways ----------------------------------------- */

static void check_parse(const struct ccase *cc, const char *data, size_t len)
{
	struct content c;

	memset(&c, 0xa5, sizeof(c));
	content_parse(data, len, &c);
	ck_assert_msg(c.pid == pid_value(cc->pid), "%s: pid %d", cc->name,
		      (int)c.pid);
	ck_assert_msg(c.bare_pid == pid_value(cc->bare_pid), "%s: bare pid %d",
		      cc->name, (int)c.bare_pid);
	ck_assert_msg(c.has_timestamp == (cc->has_ts != 0), "%s: has_timestamp",
		      cc->name);
	ck_assert_msg(c.timestamp == (cc->has_ts ? ts_value(cc->ts) : 0),
		      "%s: timestamp %" PRId64, cc->name, c.timestamp);
	ck_assert_msg(c.marker == cc->marker, "%s: marker %u", cc->name,
		      c.marker);
	ck_assert_msg(strcmp(c.tag, tag_or_empty(cc->tag)) == 0,
		      "%s: tag \"%s\"", cc->name, c.tag);
	ck_assert_msg(content_is_spec(&c) == (c.pid > 0 && c.has_timestamp),
		      "%s: is_spec", cc->name);
}

static void check_inspect(const struct ccase *cc)
{
	struct pidlock_info info;
	long long pid = pid_value(cc->pid) ? pid_value(cc->pid)
					   : pid_value(cc->bare_pid);

	ck_assert_int_eq(pidlock_inspect(lockpath, &info, 0), 0);
	ck_assert_msg(info.state == cc->state, "%s: inspect says %s, want %s",
		      cc->name, pidlock_state_name(info.state),
		      pidlock_state_name(cc->state));
	ck_assert_msg(info.pid == pid, "%s: info.pid %d", cc->name,
		      (int)info.pid);
	/* pid 0 (none, or invalid) is never passed to kill(2). */
	ck_assert_int_eq(info.pid_alive, pid > 0 ? (kill((pid_t)pid, 0) == 0 ||
						    errno == EPERM) : -1);
	ck_assert_int_eq(info.has_timestamp, cc->has_ts != 0);
	ck_assert_uint_eq(info.kernel_locks, 0);
	ck_assert_uint_eq(info.marker, cc->marker);
	ck_assert_str_eq(info.tag, tag_or_empty(cc->tag));
}

/* After a take-over the file holds our record and nothing of the old. */
static void check_ours(const char *path)
{
	struct content c;
	size_t len;
	char *data = tu_read_file(path, &len);

	ck_assert_uint_le(len, PIDLOCK_CONTENT_MAX);
	content_parse(data, len > CONTENT_READ_MAX ? CONTENT_READ_MAX : len, &c);
	ck_assert_int_eq(c.pid, getpid());
	ck_assert(c.has_timestamp);
	ck_assert_uint_eq(c.marker, ALL);
	/* Padding with newlines: nothing but our lines is left. */
	for (size_t i = 0; i < len; i++)
		ck_assert_msg(data[i] != '\0' && (unsigned char)data[i] < 0x80,
			      "old byte %#x left at %zu", data[i], i);
	free(data);
}

/* acquire(0) over the file: taken for free, abandoned and stale; busy
 * with the file untouched for a holder; refused, byte for byte, for
 * somebody's data. */
static void check_acquire(const char *name, enum pidlock_state state)
{
	bool free_to_take = state == ABANDONED || state == STALE ||
			    state == FREE;
	struct pidlock_info info;
	struct pidlock *lock;
	char *before = tu_snapshot(dir);
	int r;

	ck_assert_int_eq(pidlock_new(&lock, lockpath, 0), 0);
	r = pidlock_acquire(lock, 0);
	if (state == FOREIGN) {
		ck_assert_msg(r == -EBADMSG, "%s: acquire gave %d", name, r);
		tu_assert_unchanged(dir, before, name);
		pidlock_free(lock);
		return;
	}
	if (!free_to_take) {
		ck_assert_msg(r == -EWOULDBLOCK, "%s: acquire gave %d", name, r);
		ck_assert_int_eq(pidlock_holder(lock, &info), 0);
		ck_assert_int_eq(info.state, state);
		tu_assert_unchanged(dir, before, name);
		pidlock_free(lock);
		return;
	}
	free(before);
	ck_assert_msg(r == 0, "%s: acquire gave %d (%s)", name, r, strerror(-r));
	check_ours(lockpath);
	ck_assert_int_eq(pidlock_release(lock), 0);
	/* An empty file is what inode-blind lockers share: it stays, as a
	 * released record; anything else of a finished holder goes. */
	if (state == FREE) {
		ck_assert_int_eq(pidlock_inspect(lockpath, &info, 0), 0);
		ck_assert_int_eq(info.state, PIDLOCK_STATE_FREE);
	} else {
		ck_assert_int_eq(access(lockpath, F_OK), -1);
	}
	pidlock_free(lock);
}

START_TEST(test_table)
{
	const struct ccase *cc = &cases[_i];
	size_t len;
	char *data = expand(cc->tmpl, cc->tlen, &len);

	check_parse(cc, data, len);
	plant(data, len);
	check_inspect(cc);
	check_acquire(cc->name, cc->state);
	free(data);
}
END_TEST

/* The same content under a kernel lock: held, whatever it says. */
START_TEST(test_table_kernel_locked)
{
	const struct ccase *cc = &cases[_i];
	struct pidlock_info info;
	struct pidlock *lock;
	char *before;
	size_t len;
	char *data = expand(cc->tmpl, cc->tlen, &len);
	int fd;

	plant(data, len);
	fd = open(lockpath, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	/* Our own flock on another open file description conflicts with
	 * the library's like any other process's. */
	ck_assert_int_eq(flock(fd, LOCK_EX), 0);
	before = tu_snapshot(dir);
	ck_assert_int_eq(pidlock_inspect(lockpath, &info, 0), 0);
	/* Somebody's data stays that, held or not; the kernel's word on
	 * who holds it is there all the same. */
	ck_assert_int_eq(info.state, cc->state == FOREIGN ? FOREIGN
							  : PIDLOCK_STATE_HELD);
	ck_assert_uint_eq(info.kernel_locks, PIDLOCK_KIND_FLOCK);
	ck_assert_int_eq(info.kernel_pid, getpid());
	ck_assert_int_eq(pidlock_new(&lock, lockpath, 0), 0);
	ck_assert_int_eq(pidlock_acquire(lock, 0), -EWOULDBLOCK);
	ck_assert_int_eq(pidlock_holder(lock, &info), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD);
	pidlock_free(lock);
	tu_assert_unchanged(dir, before, cc->name);
	close(fd);
	free(data);
}
END_TEST

/* --- size ------------------------------------------------------------ */

static unsigned long long bytes_read(void)
{
	FILE *f = fopen("/proc/self/io", "re");
	unsigned long long v = 0;
	char line[128];

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "rchar: %llu", &v) == 1)
			break;
	(void)fclose(f);
	return v;
}

static void make_sparse(const char *head, off_t size)
{
	int fd;

	tu_write_file(lockpath, head, strlen(head), 0644);
	fd = open(lockpath, O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, size), 0);
	ck_assert_int_eq(close(fd), 0);
	tu_set_mtime(lockpath, now - 60);
}

#define GIB (1024LL * 1024 * 1024)
#define BIG_TAG ((size_t)100 * 1000)

/* inspect reads a bounded prefix: a 1 GiB file costs what a small one
 * does (counted in bytes read, not time).  Past PIDLOCK_CONTENT_MAX a
 * file is nobody's lock record, whatever its first lines say: it is
 * reported as such, and acquire leaves every byte of it. */
static void inspect_bounded(enum pidlock_state want)
{
	struct pidlock_info info;
	unsigned long long before = bytes_read();

	ck_assert_int_eq(pidlock_inspect(lockpath, &info, 0), 0);
	ck_assert_uint_lt(bytes_read() - before, 1024ULL * 1024);
	ck_assert_int_eq(info.state, want);
}

START_TEST(test_huge_stale)
{
	char head[128];

	tu_fmt(head, sizeof(head), "pid=%d\ntimestamp=%lld\n", (int)dead_pid,
		 (long long)(now - OLD_AGE));
	make_sparse(head, GIB);
	inspect_bounded(FOREIGN);
	check_acquire("1 GiB stale", FOREIGN);
}
END_TEST

START_TEST(test_huge_zeros)
{
	make_sparse("", GIB);
	inspect_bounded(FOREIGN);
	check_acquire("1 GiB of zeros", FOREIGN);
}
END_TEST

START_TEST(test_huge_held)
{
	char head[128];
	struct stat st;

	tu_fmt(head, sizeof(head), "pid=%d\ntimestamp=%lld\n", (int)getpid(),
		 (long long)now);
	make_sparse(head, GIB);
	inspect_bounded(FOREIGN);
	check_acquire("1 GiB held", FOREIGN);
	ck_assert_int_eq(stat(lockpath, &st), 0);
	ck_assert_int_eq(st.st_size, GIB);
}
END_TEST

/* 100 KB of tag after the record: the record counts, the tag is cut
 * to PIDLOCK_TAG_MAX at a character boundary. */
static char *big_tag_file(size_t tag_len, bool record_first, int pid,
			  int64_t ts, size_t *len)
{
	char rec[128];
	int n = snprintf(rec, sizeof(rec), "pid=%d\ntimestamp=%lld\n", pid,
			 (long long)ts);
	char *buf = malloc(tag_len + 256);
	size_t o = 0;

	ck_assert_ptr_nonnull(buf);
	if (record_first) {
		memcpy(buf, rec, (size_t)n);
		o = (size_t)n;
	}
	memcpy(buf + o, "tag=", 4);
	o += 4;
	/* Two-byte characters, so the cut must respect boundaries. */
	for (size_t i = 0; i < tag_len / 2; i++, o += 2)
		memcpy(buf + o, "\xc3\xa9", 2);
	buf[o++] = '\n';
	if (!record_first) {
		memcpy(buf + o, rec, (size_t)n);
		o += (size_t)n;
	}
	*len = o;
	return buf;
}

/* A 100 KB tag next to a record: past PIDLOCK_CONTENT_MAX, nobody's
 * lock record, whatever the record says; the tag is still cut cleanly. */
static const struct big_tag_case {
	const char *name;
	bool record_first;
	int pid;		/* P_LIVE or P_DEAD */
	int64_t ts;		/* T_NOW or T_OLD */
	bool record_seen;	/* within the first CONTENT_READ_MAX bytes */
} big_tag_cases[] = {
	{ "100 KB tag, held", true, P_LIVE, T_NOW, true },
	{ "100 KB tag, stale", true, P_DEAD, T_OLD, true },
	/* A record past the read bound is not seen: a spec record must
	 * fit in the first CONTENT_READ_MAX bytes, as every real one does. */
	{ "100 KB tag first", false, P_LIVE, T_NOW, false },
};

START_TEST(test_big_tag)
{
	const struct big_tag_case *bc = &big_tag_cases[_i];
	int pid = (int)pid_value(bc->pid);
	struct pidlock_info info;
	size_t len;
	char *data = big_tag_file(BIG_TAG, bc->record_first, pid,
				  ts_value(bc->ts), &len);

	plant(data, len);
	ck_assert_int_eq(pidlock_inspect(lockpath, &info, 0), 0);
	ck_assert_int_eq(info.state, FOREIGN);
	ck_assert_int_eq(info.pid, bc->record_seen ? pid : 0);
	/* 127 two-byte characters: 254 bytes, the 128th would not fit. */
	ck_assert_uint_eq(strlen(info.tag), 254);
	for (size_t i = 0; i < 254; i += 2)
		ck_assert(memcmp(info.tag + i, "\xc3\xa9", 2) == 0);
	check_acquire(bc->name, FOREIGN);
	free(data);
}
END_TEST

/*
 * A line cut by the read bound is not a line: "timestamp=1763000000"
 * cut to "timestamp=17" must not read as the year 1970, nor a pid cut
 * to its first digits as another process.
 */
static char *cut_at_bound(const char *head, const char *tail_line,
			  size_t keep, size_t *len)
{
	size_t hl = strlen(head);
	size_t pad = CONTENT_READ_MAX - hl - 1 - 4 - keep;
	char *buf = malloc(CONTENT_READ_MAX + 256);
	size_t o = 0;

	ck_assert_ptr_nonnull(buf);
	memcpy(buf, head, hl);
	o = hl;
	memcpy(buf + o, "tag=", 4);
	o += 4;
	memset(buf + o, 'x', pad);
	o += pad;
	buf[o++] = '\n';
	/* tail_line starts at CONTENT_READ_MAX - keep. */
	ck_assert_uint_eq(o, CONTENT_READ_MAX - keep);
	o += (size_t)sprintf(buf + o, "%s\n", tail_line);
	*len = o;
	return buf;
}

START_TEST(test_timestamp_cut_by_bound)
{
	struct pidlock_info info;
	struct content c;
	char head[64], tail[64];
	size_t len;
	char *data;

	tu_fmt(head, sizeof(head), "pid=%d\n", (int)getpid());
	tu_fmt(tail, sizeof(tail), "timestamp=%lld", (long long)now);
	/* "timestamp=17" inside the bound, the rest after it. */
	data = cut_at_bound(head, tail, strlen("timestamp=17"), &len);
	content_parse(data, CONTENT_READ_MAX, &c);
	ck_assert_msg(!c.has_timestamp, "cut timestamp read as %" PRId64,
		      c.timestamp);
	plant(data, len);
	ck_assert_int_eq(pidlock_inspect(lockpath, &info, 0), 0);
	ck_assert_int_eq(info.has_timestamp, 0);
	/* Past PIDLOCK_CONTENT_MAX: nobody's lock record, whatever its
	 * first lines say. */
	ck_assert_int_eq(info.state, FOREIGN);
	free(data);
}
END_TEST

START_TEST(test_pid_cut_by_bound)
{
	struct content c;
	char head[64];
	size_t len;
	char *data;

	tu_fmt(head, sizeof(head), "timestamp=%lld\n", (long long)now);
	/* "pid=4194303" cut to "pid=4": a different process. */
	data = cut_at_bound(head, "pid=4194303", strlen("pid=4"), &len);
	content_parse(data, CONTENT_READ_MAX, &c);
	ck_assert_msg(c.pid == 0, "cut pid read as %d", (int)c.pid);
	free(data);
	/* A complete last line at the bound still counts. */
	data = cut_at_bound(head, "pid=4194303", strlen("pid=4194303\n"), &len);
	ck_assert_uint_eq(len, CONTENT_READ_MAX);
	content_parse(data, CONTENT_READ_MAX, &c);
	ck_assert_int_eq(c.pid, 4194303);
	free(data);
}
END_TEST

/* --- file times -------------------------------------------------------- */

/*
 * Whoever can write the file can set its mtime to anything.  Only an
 * mtime near now (a second and a grace period either way, for clock
 * skew) can be a write in progress: incomplete content is held-spec for
 * the grace period after it.  Any other mtime, far past or far future,
 * is no write in progress: abandoned, and taken at once.
 */
static void far_mtime_case(const char *path, int64_t mtime)
{
	struct pidlock_info info;
	struct pidlock *lock;

	tu_set_mtime(path, mtime);
	ck_assert_int_eq(pidlock_inspect(path, &info, 0), 0);
	ck_assert_msg(info.state == ABANDONED, "mtime %" PRId64 ": %s", mtime,
		      pidlock_state_name(info.state));
	ck_assert_int_eq(pidlock_new(&lock, path, 0), 0);
	ck_assert_int_eq(pidlock_set_grace(lock, PIDLOCK_GRACE_MAX_MS), 0);
	ck_assert_msg(pidlock_acquire(lock, 0) == 0, "mtime %" PRId64, mtime);
	ck_assert_int_eq(pidlock_close(lock), 0);
	pidlock_free(lock);
	ck_assert_int_eq(unlink(path), 0);
	tu_write_file(path, "pid=12", 6, 0644);
}

START_TEST(test_hostile_mtime)
{
	char shm[PATH_MAX];
	const char *where = lockpath;
	struct pidlock_info info;
	struct pidlock *lock;
	int writer;

	tu_write_file(lockpath, "pid=12", 6, 0644);
	/* A little ahead: maybe a writer with a fast clock.  Busy for a
	 * try-once within a (long) grace period, while the file is open
	 * as a writer's would be. */
	tu_set_mtime(lockpath, now + 5);
	writer = open(lockpath, O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(writer, 0);
	ck_assert_int_eq(pidlock_new(&lock, lockpath, 0), 0);
	ck_assert_int_eq(pidlock_set_grace(lock, PIDLOCK_GRACE_MAX_MS), 0);
	ck_assert_int_eq(pidlock_acquire(lock, 0), -EWOULDBLOCK);
	ck_assert_int_eq(pidlock_holder(lock, &info), 0);
	ck_assert_int_eq(info.state, HELD_SPEC);
	pidlock_free(lock);
	ck_assert_int_eq(close(writer), 0);

	far_mtime_case(lockpath, now + 3600);
	far_mtime_case(lockpath, now - 3600);
	/* The extremes need a file system that keeps them. */
	if (shm_base) {
		tu_fmt(shm, sizeof(shm), "%s/lock", shm_base);
		where = shm;
		tu_write_file(where, "pid=12", 6, 0644);
	} else if (!on_tmpfs(dir)) {
		(void)fprintf(stderr, "SKIP extreme mtimes: no tmpfs at /dev/shm\n");
		return;
	}
	far_mtime_case(where, INT64_MAX);
	far_mtime_case(where, INT64_MAX / 1000 + 1);
	far_mtime_case(where, INT64_MIN);
	far_mtime_case(where, INT64_MIN / 1000 - 1);
	far_mtime_case(where, -1);
	ck_assert_int_eq(unlink(where), 0);
}
END_TEST

/* --- the tag as we write it ------------------------------------------- */

/* A hostile tag given to the library comes out as one clean line. */
START_TEST(test_set_tag_hostile)
{
	char big[BIG_TAG + 1];
	struct pidlock_info info;
	struct pidlock *lock;
	struct content c;
	size_t len;
	char *data;

	ck_assert_int_eq(pidlock_new(&lock, lockpath, 0), 0);
	ck_assert_int_eq(pidlock_set_tag(lock, "a\npid=1\ntimestamp=1\r\x1b[0m\xff"), 0);
	ck_assert_int_eq(pidlock_acquire(lock, 0), 0);
	data = tu_read_file(lockpath, &len);
	content_parse(data, len, &c);
	ck_assert_int_eq(c.pid, getpid());
	ck_assert_str_eq(c.tag, "a?pid=1?timestamp=1??[0m?");
	free(data);
	ck_assert_int_eq(pidlock_inspect(lockpath, &info, 0), 0);
	ck_assert_str_eq(info.tag, "a?pid=1?timestamp=1??[0m?");
	ck_assert_int_eq(pidlock_release(lock), 0);

	memset(big, 'b', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(pidlock_set_tag(lock, big), 0);
	ck_assert_int_eq(pidlock_acquire(lock, 0), 0);
	data = tu_read_file(lockpath, &len);
	ck_assert_uint_lt(len, CONTENT_BUF_MAX);
	content_parse(data, len, &c);
	ck_assert_uint_eq(strlen(c.tag), PIDLOCK_TAG_MAX);
	free(data);
	ck_assert_int_eq(pidlock_release(lock), 0);
	pidlock_free(lock);
}
END_TEST

/* --- the parser on its own: no length is trusted ---------------------- */

START_TEST(test_parse_lengths)
{
	static const char rec[] = "pid=123\ntimestamp=456\ntag=t\nlock=ofd\n";
	struct content c;

	/* Every prefix: the parser never reads past len (ASan builds
	 * catch it; the copy keeps the byte after the end unreadable to
	 * a logic check too). */
	for (size_t n = 0; n <= sizeof(rec) - 1; n++) {
		char *copy = malloc(n ? n : 1);

		ck_assert_ptr_nonnull(copy);
		memcpy(copy, rec, n);
		content_parse(copy, n, &c);
		ck_assert_int_eq(c.pid, n >= 7 ? 123 : n >= 5 ? (n == 5 ? 1 : 12) : 0);
		free(copy);
	}
	content_parse(rec, sizeof(rec) - 1, &c);
	ck_assert_int_eq(c.pid, 123);
	ck_assert_int_eq(c.timestamp, 456);
	ck_assert_str_eq(c.tag, "t");
	ck_assert_uint_eq(c.marker, PIDLOCK_KIND_OFD);
}
END_TEST

static Suite *content_suite(void)
{
	Suite *s = suite_create("content-hostile");
	TCase *tc;

	tc = tu_tcase(s, "table", setup, teardown, 0);
	tu_add_loop_test(tc, test_table, 0, NCASES);
	tu_add_loop_test(tc, test_table_kernel_locked, 0, NCASES);

	tc = tu_tcase(s, "size", setup, teardown, 30);
	tu_add_test(tc, test_huge_stale);
	tu_add_test(tc, test_huge_zeros);
	tu_add_test(tc, test_huge_held);
	tu_add_loop_test(tc, test_big_tag, 0, (int)(sizeof(big_tag_cases) /
					     sizeof(big_tag_cases[0])));
	tu_add_test(tc, test_timestamp_cut_by_bound);
	tu_add_test(tc, test_pid_cut_by_bound);

	/* Only the mtime case wants a tmpfs. */
	tc = tu_tcase(s, "misc", setup, teardown, 30);
	tcase_add_unchecked_fixture(tc, setup_shm, teardown_shm);
	tu_add_test(tc, test_hostile_mtime);
	tu_add_test(tc, test_set_tag_hostile);
	tu_add_test(tc, test_parse_lengths);
	return s;
}

int main(void)
{
	tu_run_suite(content_suite());
}
