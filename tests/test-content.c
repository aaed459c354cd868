/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The content format: what we write and how we read what others wrote. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "testutil.h"

static void parse(const char *s, struct content *c)
{
	content_parse(s, strlen(s), c);
}

/* Rule: our record is exactly key=value lines with LF, marker last. */
START_TEST(format_record)
{
	char buf[CONTENT_BUF_MAX];
	size_t n = content_format(buf, sizeof(buf), 1234, 1703520000, "deploy",
				  KINDS_ALL, false);

	buf[n] = '\0';
	ck_assert_str_eq(buf, "pid=1234\ntimestamp=1703520000\ntag=deploy\n"
			      "lock=flock,ofd\n");
	n = content_format(buf, sizeof(buf), 7, 5, "", PIDLOCK_KIND_OFD, true);
	buf[n] = '\0';
	ck_assert_str_eq(buf, "7\npid=7\ntimestamp=5\nlock=ofd\n");
	n = content_format(buf, sizeof(buf), 7, 5, NULL, PIDLOCK_KIND_FLOCK, false);
	buf[n] = '\0';
	ck_assert_str_eq(buf, "pid=7\ntimestamp=5\nlock=flock\n");
}
END_TEST

/* The longest record still fits the handle's buffer. */
START_TEST(format_longest)
{
	char tag[PIDLOCK_TAG_MAX + 1], buf[CONTENT_BUF_MAX];
	struct content c;
	size_t n;

	memset(tag, 'x', PIDLOCK_TAG_MAX);
	tag[PIDLOCK_TAG_MAX] = '\0';
	n = content_format(buf, sizeof(buf), 2147483647, INT64_MAX, tag,
			   KINDS_ALL, FMT_PLAIN_PID | FMT_KEEP |
			   FMT_EXIT_RELEASES | FMT_SHARED);
	ck_assert_uint_gt(n, 0);
	ck_assert_uint_le(n, sizeof(buf));
	/* Shared writers pad to one length: every record fits in it. */
	ck_assert_uint_le(n, SHARED_RECORD_LEN);
	content_parse(buf, n, &c);
	ck_assert_int_eq(c.pid, 2147483647);
	ck_assert_int_eq(c.bare_pid, 2147483647);
	ck_assert(c.timestamp == INT64_MAX);
	ck_assert_str_eq(c.tag, tag);
}
END_TEST

/* A shared holder's record: shared=1 after the marker; a lock file,
 * read back as shared, padded or not. */
START_TEST(shared_record_parses)
{
	char buf[SHARED_RECORD_LEN];
	struct content c;
	size_t n = content_format(buf, sizeof(buf), 42, 7, "r", KINDS_ALL,
				  FMT_SHARED);

	ck_assert_int_eq(memcmp(buf, "pid=42\ntimestamp=7\ntag=r\n"
				"lock=flock,ofd\nshared=1\n", n), 0);
	content_parse(buf, n, &c);
	ck_assert(c.shared);
	ck_assert_int_eq(c.pid, 42);
	ck_assert(content_is_lock_file(buf, n, (int64_t)n));
	memset(buf + n, '\n', sizeof(buf) - n);
	ck_assert(content_is_lock_file(buf, sizeof(buf), sizeof(buf)));
	parse("pid=1\ntimestamp=2\nshared=0\n", &c);
	ck_assert(!c.shared);
	ck_assert(!content_is_lock_file("pid=1\nshared=yes\n", 17, 17));
}
END_TEST

/*
 * What the reader makes of a record: every field of struct content that
 * these cases are about, as a field left out of a row is expected 0 (or
 * false, or an empty tag).
 */
static const struct parse_case {
	const char *in;
	pid_t pid, bare_pid;
	bool has_ts;
	int64_t ts;
	unsigned int marker;
	bool spec;
	const char *tag;
} parse_cases[] = {
	{ .in = "pid=12345\ntimestamp=1703520000\ntag=deploy-v1.2.3\n", .pid = 12345,
	  .has_ts = true, .ts = 1703520000, .spec = true, .tag = "deploy-v1.2.3" },
	/* CRLF, blank lines, white space around keys and values */
	{ .in = "\r\n  pid=42\r\n\r\n\ttimestamp=9 \r\nlock=ofd\r\n", .pid = 42,
	  .has_ts = true, .ts = 9, .marker = PIDLOCK_KIND_OFD, .spec = true },
	/* a lone CR is not a line end: the record is one bad line */
	{ .in = "pid=42\rtimestamp=9\r" },
	/* unknown keys and lines without '=' are passed over */
	{ .in = "hello\nfoo=bar\npid=5\nnonsense line\ntimestamp=6\nx=\n", .pid = 5,
	  .has_ts = true, .ts = 6, .spec = true },
	/* duplicates: the last wins, even when it is invalid (as the spec's
	 * reference readers do), which makes the record unparsable */
	{ .in = "pid=5\ntimestamp=6\npid=7\n", .pid = 7, .has_ts = true, .ts = 6,
	  .spec = true },
	{ .in = "pid=5\ntimestamp=6\npid=oops\n", .has_ts = true, .ts = 6 },
	{ .in = "pid=5\ntimestamp=6\ntimestamp=-1\n", .pid = 5 },
	/* a bare pid (libbsd pidfile(3), liblockfile): only the first
	 * non-blank line counts */
	{ .in = "1234\n", .bare_pid = 1234 },
	{ .in = "\n\n 99 \npid=100\ntimestamp=1\n", .pid = 100, .bare_pid = 99,
	  .has_ts = true, .ts = 1, .spec = true },
	{ .in = "pid=100\n99\n", .pid = 100 },
	/* pids: decimal, positive, within pid_t, nothing around them */
	{ .in = "pid=0" }, { .in = "pid=-1" }, { .in = "pid=12abc" },
	{ .in = "pid=" }, { .in = "pid=+5" }, { .in = "pid= 5" },
	{ .in = "pid=2147483648" }, { .in = "pid=99999999999999999999" },
	{ .in = "pid=2147483647", .pid = 2147483647 },
	/* timestamps: decimal, not negative, within int64_t */
	{ .in = "timestamp=9223372036854775807", .has_ts = true, .ts = INT64_MAX },
	{ .in = "timestamp=9223372036854775808" },
	{ .in = "timestamp=18446744073709551616" },
	{ .in = "timestamp=-5" }, { .in = "timestamp=1.5" },
	{ .in = "timestamp=0", .has_ts = true },
	/* the marker: known kinds in any order, unknown ones passed over,
	 * the last lock= line wins */
	{ .in = "lock=flock,ofd", .marker = KINDS_ALL },
	{ .in = "lock=ofd,flock,future", .marker = KINDS_ALL },
	{ .in = "lock=future" },
	{ .in = "lock=flock\nlock=" },
	/* a UTF-8 byte order mark before the first key */
	{ .in = "\xEF\xBB\xBFpid=3\ntimestamp=4\n", .pid = 3, .has_ts = true, .ts = 4,
	  .spec = true },
};

START_TEST(parse_table)
{
	const struct parse_case *want = &parse_cases[_i];
	struct content c;

	parse(want->in, &c);
	ck_assert_msg(c.pid == want->pid, "%s: pid %d", want->in, c.pid);
	ck_assert_msg(c.bare_pid == want->bare_pid, "%s: bare pid %d", want->in,
		      c.bare_pid);
	ck_assert_msg(c.has_timestamp == want->has_ts &&
		      (!want->has_ts || c.timestamp == want->ts),
		      "%s: timestamp %d %lld", want->in, c.has_timestamp,
		      (long long)c.timestamp);
	ck_assert_msg(c.marker == want->marker, "%s: marker %u", want->in,
		      c.marker);
	ck_assert_msg(content_is_spec(&c) == want->spec, "%s: spec", want->in);
	ck_assert_str_eq(c.tag, want->tag ? want->tag : "");
}
END_TEST

/* Binary junk of every byte value: no crash, nothing parsed from it,
 * and the read never runs past the length given. */
START_TEST(parse_binary)
{
	char buf[4096];
	struct content c;

	srand(1);
	for (int round = 0; round < 200; round++) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (char)(rand() & 0xff);
		content_parse(buf, sizeof(buf), &c);
		ck_assert(strlen(c.tag) <= PIDLOCK_TAG_MAX);
	}
	memcpy(buf, "pid=8\0\ntimestamp=1\n", 19);
	content_parse(buf, 19, &c);
	ck_assert_int_eq(c.pid, 0);	/* "8\0" is not a number */
	ck_assert(c.has_timestamp);
	content_parse("pid=9", 4, &c);	/* the length bounds the read */
	ck_assert_int_eq(c.pid, 0);
}
END_TEST

START_TEST(tag_cleaning)
{
	char out[PIDLOCK_TAG_MAX + 1];
	char big[100000];

	content_clean_tag(out, sizeof(out), "a\nb\rc\td\x7f" "e", 9);
	ck_assert_str_eq(out, "a?b?c?d?e");
	content_clean_tag(out, sizeof(out), "caf\xc3\xa9 \xe2\x9c\x93", 9);
	ck_assert_str_eq(out, "caf\xc3\xa9 \xe2\x9c\x93");
	content_clean_tag(out, sizeof(out), "\xff\xc3(\xed\xa0\x80\xc2\x85", 8);
	ck_assert_str_eq(out, "?" "?(?" "?" "?" "?");
	content_clean_tag(out, sizeof(out), "x\0y", 3);
	ck_assert_str_eq(out, "x?y");
	memset(big, 'z', sizeof(big));
	content_clean_tag(out, sizeof(out), big, sizeof(big));
	ck_assert_uint_eq(strlen(out), PIDLOCK_TAG_MAX);
	/* A cut never splits a character. */
	for (size_t i = 0; i + 1 < sizeof(big); i += 2)
		memcpy(big + i, "\xc3\xa9", 2);
	content_clean_tag(out, sizeof(out), big, sizeof(big));
	ck_assert_uint_eq(strlen(out), PIDLOCK_TAG_MAX - 1);
}
END_TEST

int main(void)
{
	const struct tu_case cases[] = {
		{ format_record, 1 },
		{ format_longest, 1 },
		{ shared_record_parses, 1 },
		{ parse_table, sizeof(parse_cases) / sizeof(parse_cases[0]) },
		{ parse_binary, 1 },
		{ tag_cleaning, 1 },
		{ NULL, 0 },
	};

	tu_run_cases("content", "format", 0, cases);
}
