/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: the lock file parser.  Besides the sanitizers'
 * checks it compares content_parse() with a second, deliberately
 * plain reading of the rules (below), checks the cleaned tag, and
 * round-trips what was parsed through content_format().  Any
 * disagreement aborts, which libFuzzer reports as a crash.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(cond) do { if (!(cond)) fail(#cond, __LINE__); } while (0)

static void fail(const char *what, int line)
{
	(void)fprintf(stderr, "fuzz-content: check failed at line %d: %s\n", line,
		what);
	abort();
}

/* --- the reference reading ------------------------------------------ */

struct ref {
	long long pid;
	long long bare_pid;
	bool has_ts;
	long long ts;
	unsigned int marker;
	const char *tag;	/* raw value of the last tag= line */
	size_t tag_len;
	bool pid_line, ts_line;	/* a pid= or timestamp= line, any value */
	bool kind_line;		/* a lock= line naming a kind we know */
};

static bool blank(char ch)
{
	return strchr(" \t\r\v\f", ch) != NULL && ch != '\0';
}

/* Plain decimal, at least one digit, at most `max`. */
static bool number(const char *s, size_t n, unsigned long long max,
		   unsigned long long *out)
{
	unsigned long long v = 0;

	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned int d;

		if (s[i] < '0' || s[i] > '9')
			return false;
		d = (unsigned int)(s[i] - '0');
		if (v > (max - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static long long pid_of(const char *s, size_t n)
{
	unsigned long long v;

	return number(s, n, INT_MAX, &v) ? (long long)v : 0;
}

static bool key_is(const char *s, size_t n, const char *key)
{
	return n == strlen(key) && memcmp(s, key, n) == 0;
}

static unsigned int kinds_of(const char *s, size_t n)
{
	unsigned int k = 0;
	size_t start = 0;

	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != ',')
			continue;
		if (key_is(s + start, i - start, "flock"))
			k |= PIDLOCK_KIND_FLOCK;
		if (key_is(s + start, i - start, "ofd"))
			k |= PIDLOCK_KIND_OFD;
		start = i + 1;
	}
	return k;
}

static void ref_lines(const char *d, size_t len, struct ref *r)
{
	size_t n = len, i = 0;
	bool first = true;

	memset(r, 0, sizeof(*r));
	if (n >= 3 && memcmp(d, "\xef\xbb\xbf", 3) == 0) {
		d += 3;
		n -= 3;
	}
	while (i < n) {
		size_t b = i, e = i, eq;
		bool has_nl, cut, was_first;

		while (e < n && d[e] != '\n')
			e++;
		has_nl = e < n;
		i = has_nl ? e + 1 : n;
		while (b < e && blank(d[b]))
			b++;
		while (e > b && blank(d[e - 1]))
			e--;
		if (b == e)
			continue;
		cut = !has_nl && len >= CONTENT_READ_MAX;
		was_first = first;
		first = false;
		for (eq = b; eq < e && d[eq] != '='; eq++)
			;
		if (eq == e) {
			if (was_first && !cut)
				r->bare_pid = pid_of(d + b, e - b);
			continue;
		}
		if (cut && !key_is(d + b, eq - b, "tag"))
			continue;
		if (key_is(d + b, eq - b, "pid"))
			r->pid_line = true;
		if (key_is(d + b, eq - b, "timestamp"))
			r->ts_line = true;
		if (key_is(d + b, eq - b, "lock") &&
		    kinds_of(d + eq + 1, e - eq - 1))
			r->kind_line = true;
		if (key_is(d + b, eq - b, "pid")) {
			r->pid = pid_of(d + eq + 1, e - eq - 1);
		} else if (key_is(d + b, eq - b, "timestamp")) {
			unsigned long long v;

			r->has_ts = number(d + eq + 1, e - eq - 1, INT64_MAX, &v);
			if (r->has_ts)
				r->ts = (long long)v;
		} else if (key_is(d + b, eq - b, "tag")) {
			r->tag = d + eq + 1;
			r->tag_len = e - eq - 1;
		} else if (key_is(d + b, eq - b, "lock")) {
			r->marker = kinds_of(d + eq + 1, e - eq - 1);
		}
	}
	if (!r->has_ts)
		r->ts = 0;
}

/*
 * The holder's bytes (doc/protocol.md, 3a): what comes before the first
 * empty line, a lock file by itself with a pid=, a timestamp= and a
 * lock= naming a kind, is our record, and only it is parsed.  Its
 * length with the empty line, or 0.
 */
static size_t ref_head(const char *d, size_t len)
{
	struct ref h;
	size_t i = 0;

	while (i + 1 < len && !(d[i] == '\n' && d[i + 1] == '\n'))
		i++;
	if (i + 1 >= len)
		return 0;
	/* Our writer never puts a BOM before its record. */
	if (i + 1 >= 3 && memcmp(d, "\xef\xbb\xbf", 3) == 0)
		return 0;
	if (!content_is_lock_file(d, i + 1, (int64_t)(i + 1)))
		return 0;
	ref_lines(d, i + 1, &h);
	/* ... padded to the room the library gives such a record. */
	return h.pid_line && h.ts_line && h.kind_line && i + 2 >= 512 ? i + 2
									: 0;
}

static void ref_parse(const char *d, size_t len, struct ref *r)
{
	size_t head = ref_head(d, len);

	ref_lines(d, head ? head : len, r);
}

/* --- the cleaned tag ------------------------------------------------- */

/* Valid UTF-8 (RFC 3629) without C0, DEL or C1 controls. */
static bool clean_text(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned int cp, len, k;

		if (s[i] < 0x80) {
			if (s[i] < 0x20 || s[i] == 0x7f)
				return false;
			i++;
			continue;
		}
		if (s[i] >= 0xc2 && s[i] <= 0xdf) {
			len = 2;
			cp = s[i] & 0x1f;
		} else if (s[i] >= 0xe0 && s[i] <= 0xef) {
			len = 3;
			cp = s[i] & 0x0f;
		} else if (s[i] >= 0xf0 && s[i] <= 0xf4) {
			len = 4;
			cp = s[i] & 0x07;
		} else {
			return false;
		}
		if (i + len > n)
			return false;
		for (k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff ||
		    (cp >= 0x80 && cp <= 0x9f))
			return false;
		i += len;
	}
	return true;
}

static bool printable_ascii(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

static void check_tag(const char *tag, const struct ref *r)
{
	size_t n = strnlen(tag, PIDLOCK_TAG_MAX + 1);
	const char *raw = r->tag ? r->tag : "";
	char again[PIDLOCK_TAG_MAX + 1];

	REQUIRE(n <= PIDLOCK_TAG_MAX);
	REQUIRE(clean_text((const unsigned char *)tag, n));
	/* Cleaning replaces, never adds. */
	REQUIRE(n <= r->tag_len);
	if (printable_ascii(raw, r->tag_len)) {
		size_t want = r->tag_len < PIDLOCK_TAG_MAX ? r->tag_len
							   : PIDLOCK_TAG_MAX;

		REQUIRE(n == want && memcmp(tag, raw, n) == 0);
	}
	/* Clean text stays as it is. */
	content_clean_tag(again, sizeof(again), tag, n);
	REQUIRE(strcmp(again, tag) == 0);
}

/*
 * What we write, we read back the same; except that a tag cut to
 * PIDLOCK_TAG_MAX may end in spaces, which reading trims off the line.
 */
static void round_trip(const struct content *c, bool plain)
{
	char buf[CONTENT_BUF_MAX];
	char want[PIDLOCK_TAG_MAX + 1];
	size_t wl = strlen(c->tag);
	pid_t pid = c->pid > 0 ? c->pid : 1;
	unsigned int kinds = c->marker ? c->marker : KINDS_ALL;
	struct content back;
	size_t n;

	n = content_format(buf, sizeof(buf), pid, c->timestamp, c->tag, kinds,
			   plain);
	REQUIRE(n > 0 && n <= sizeof(buf));
	REQUIRE(memchr(buf, '\0', n) == NULL);
	content_parse(buf, n, &back);
	REQUIRE(back.pid == pid);
	REQUIRE(back.bare_pid == (plain ? pid : 0));
	REQUIRE(back.has_timestamp);
	REQUIRE(back.timestamp == c->timestamp);
	REQUIRE(back.marker == kinds);
	memcpy(want, c->tag, wl + 1);
	while (wl > 0 && want[wl - 1] == ' ')
		want[--wl] = '\0';
	REQUIRE(strcmp(back.tag, want) == 0);
	REQUIRE(content_is_spec(&back));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *d = (const char *)data;
	struct content c;
	struct ref r;

	memset(&c, 0x5a, sizeof(c));
	content_parse(d, size, &c);
	ref_parse(d, size, &r);
	REQUIRE(c.pid == r.pid);
	REQUIRE(c.bare_pid == r.bare_pid);
	REQUIRE(c.has_timestamp == r.has_ts);
	REQUIRE(c.timestamp == r.ts);
	REQUIRE(c.marker == r.marker);
	REQUIRE(content_is_spec(&c) == (r.pid > 0 && r.has_ts));
	check_tag(c.tag, &r);
	round_trip(&c, size & 1);
	return 0;
}
