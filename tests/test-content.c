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
			   KINDS_ALL, true);
	ck_assert_uint_gt(n, 0);
	ck_assert_uint_le(n, sizeof(buf));
	content_parse(buf, n, &c);
	ck_assert_int_eq(c.pid, 2147483647);
	ck_assert_int_eq(c.bare_pid, 2147483647);
	ck_assert(c.timestamp == INT64_MAX);
	ck_assert_str_eq(c.tag, tag);
}
END_TEST

START_TEST(parse_spec_record)
{
	struct content c;

	parse("pid=12345\ntimestamp=1703520000\ntag=deploy-v1.2.3\n", &c);
	ck_assert_int_eq(c.pid, 12345);
	ck_assert(c.has_timestamp);
	ck_assert(c.timestamp == 1703520000);
	ck_assert_str_eq(c.tag, "deploy-v1.2.3");
	ck_assert_uint_eq(c.marker, 0);
	ck_assert(content_is_spec(&c));
}
END_TEST

START_TEST(parse_crlf_blank_spaces)
{
	struct content c;

	parse("\r\n  pid=42\r\n\r\n\ttimestamp=9 \r\nlock=ofd\r\n", &c);
	ck_assert_int_eq(c.pid, 42);
	ck_assert(c.timestamp == 9);
	ck_assert_uint_eq(c.marker, PIDLOCK_KIND_OFD);
}
END_TEST

/* A lone CR is not a line end: the record is one bad line. */
START_TEST(parse_lone_cr)
{
	struct content c;

	parse("pid=42\rtimestamp=9\r", &c);
	ck_assert_int_eq(c.pid, 0);
	ck_assert(!c.has_timestamp);
	ck_assert(!content_is_spec(&c));
}
END_TEST

START_TEST(parse_unknown_keys_and_no_equals)
{
	struct content c;

	parse("hello\nfoo=bar\npid=5\nnonsense line\ntimestamp=6\nx=\n", &c);
	ck_assert_int_eq(c.pid, 5);
	ck_assert(c.timestamp == 6);
	ck_assert_int_eq(c.bare_pid, 0);
}
END_TEST

/* Duplicates: the last wins, even when it is invalid (as the spec's
 * reference readers do), which makes the record unparsable. */
START_TEST(parse_duplicates)
{
	struct content c;

	parse("pid=5\ntimestamp=6\npid=7\n", &c);
	ck_assert_int_eq(c.pid, 7);
	parse("pid=5\ntimestamp=6\npid=oops\n", &c);
	ck_assert_int_eq(c.pid, 0);
	ck_assert(!content_is_spec(&c));
	parse("pid=5\ntimestamp=6\ntimestamp=-1\n", &c);
	ck_assert(!c.has_timestamp);
}
END_TEST

START_TEST(parse_bare_pid)
{
	struct content c;

	parse("1234\n", &c);	/* libbsd pidfile(3), liblockfile */
	ck_assert_int_eq(c.bare_pid, 1234);
	ck_assert_int_eq(c.pid, 0);
	ck_assert(!content_is_spec(&c));
	parse("\n\n 99 \npid=100\ntimestamp=1\n", &c);
	ck_assert_int_eq(c.bare_pid, 99);
	ck_assert_int_eq(c.pid, 100);
	parse("pid=100\n99\n", &c);	/* only the first line counts */
	ck_assert_int_eq(c.bare_pid, 0);
}
END_TEST

START_TEST(parse_bad_pids)
{
	static const char *bad[] = { "pid=0", "pid=-1", "pid=12abc", "pid=",
				     "pid=+5", "pid= 5", "pid=2147483648",
				     "pid=99999999999999999999" };
	struct content c;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		parse(bad[i], &c);
		ck_assert_msg(c.pid == 0, "%s parsed as %d", bad[i], c.pid);
	}
	parse("pid=2147483647", &c);
	ck_assert_int_eq(c.pid, 2147483647);
}
END_TEST

START_TEST(parse_timestamps)
{
	struct content c;

	parse("timestamp=9223372036854775807", &c);
	ck_assert(c.has_timestamp && c.timestamp == INT64_MAX);
	parse("timestamp=9223372036854775808", &c);
	ck_assert(!c.has_timestamp);
	parse("timestamp=18446744073709551616", &c);
	ck_assert(!c.has_timestamp);
	parse("timestamp=-5", &c);
	ck_assert(!c.has_timestamp);
	parse("timestamp=1.5", &c);
	ck_assert(!c.has_timestamp);
	parse("timestamp=0", &c);
	ck_assert(c.has_timestamp && c.timestamp == 0);
}
END_TEST

START_TEST(parse_marker)
{
	struct content c;

	parse("lock=flock,ofd", &c);
	ck_assert_uint_eq(c.marker, KINDS_ALL);
	parse("lock=ofd,flock,future", &c);
	ck_assert_uint_eq(c.marker, KINDS_ALL);
	parse("lock=future", &c);
	ck_assert_uint_eq(c.marker, 0);
	parse("lock=flock\nlock=", &c);
	ck_assert_uint_eq(c.marker, 0);
}
END_TEST

START_TEST(parse_bom)
{
	struct content c;

	parse("\xEF\xBB\xBFpid=3\ntimestamp=4\n", &c);
	ck_assert_int_eq(c.pid, 3);
	ck_assert(content_is_spec(&c));
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

	clean_tag(out, sizeof(out), "a\nb\rc\td\x7f" "e", 9);
	ck_assert_str_eq(out, "a?b?c?d?e");
	clean_tag(out, sizeof(out), "caf\xc3\xa9 \xe2\x9c\x93", 9);
	ck_assert_str_eq(out, "caf\xc3\xa9 \xe2\x9c\x93");
	clean_tag(out, sizeof(out), "\xff\xc3(\xed\xa0\x80\xc2\x85", 8);
	ck_assert_str_eq(out, "?" "?(?" "?" "?" "?");
	clean_tag(out, sizeof(out), "x\0y", 3);
	ck_assert_str_eq(out, "x?y");
	memset(big, 'z', sizeof(big));
	clean_tag(out, sizeof(out), big, sizeof(big));
	ck_assert_uint_eq(strlen(out), PIDLOCK_TAG_MAX);
	/* A cut never splits a character. */
	for (size_t i = 0; i + 1 < sizeof(big); i += 2)
		memcpy(big + i, "\xc3\xa9", 2);
	clean_tag(out, sizeof(out), big, sizeof(big));
	ck_assert_uint_eq(strlen(out), PIDLOCK_TAG_MAX - 1);
}
END_TEST

int main(void)
{
	const struct tu_case cases[] = {
		{ format_record, 1 },
		{ format_longest, 1 },
		{ parse_spec_record, 1 },
		{ parse_crlf_blank_spaces, 1 },
		{ parse_lone_cr, 1 },
		{ parse_unknown_keys_and_no_equals, 1 },
		{ parse_duplicates, 1 },
		{ parse_bare_pid, 1 },
		{ parse_bad_pids, 1 },
		{ parse_timestamps, 1 },
		{ parse_marker, 1 },
		{ parse_bom, 1 },
		{ parse_binary, 1 },
		{ tag_cleaning, 1 },
		{ NULL, 0 },
	};

	tu_run_cases("content", "format", 0, cases);
}
