/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The lock file's content: key=value lines as the File-Based Semaphore
 * Protocol v1.0 defines them, plus our lock= marker.  Parsing follows the
 * spec's reference readers (split on LF, trim, first '=' splits, unknown
 * keys ignored, last duplicate wins) so that we classify a file the way
 * they do.  Nothing here touches the file system but the look at our pid
 * namespace for the record (pidns_self()).
 */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static char *put_str(char *p, const char *s)
{
	size_t n = strlen(s);

	memcpy(p, s, n);
	return p + n;
}

/* snprintf costs more than the rest of the record; this runs per cycle. */
static char *put_u64(char *p, uint64_t v)
{
	char tmp[24];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

static const char *kinds_text(unsigned int kinds)
{
	if (kinds == KINDS_ALL)
		return "flock,ofd";
	return kinds == PIDLOCK_KIND_FLOCK ? "flock" : "ofd";
}

static char *put_marker(char *p, unsigned int kinds, unsigned int opts)
{
	p = put_str(p, "lock=");
	p = put_str(p, kinds_text(kinds));
	*p++ = '\n';
	if (opts & FMT_KEEP)
		p = put_str(p, "keep=1\n");
	if (opts & FMT_EXIT_RELEASES)
		p = put_str(p, "release=exit\n");
	if (opts & FMT_SHARED)
		p = put_str(p, "shared=1\n");
	return p;
}

size_t content_format(char *buf, size_t size, pid_t pid, int64_t now,
		      const char *tag, unsigned int kinds, unsigned int opts)
{
	char *p = buf;

	/* Worst case: 2 pids, a timestamp, a full tag, keys: 364 bytes; with
	 * content_put_host()'s 139, it fits the buffer (and
	 * SHARED_RECORD_LEN). */
	if (size < CONTENT_BUF_MAX)
		return 0;
	if (opts & FMT_PLAIN_PID) {
		p = put_u64(p, (uint64_t)pid);
		*p++ = '\n';
	}
	p = put_str(p, "pid=");
	p = put_u64(p, (uint64_t)pid);
	p = put_str(p, "\ntimestamp=");
	p = put_u64(p, (uint64_t)(now < 0 ? 0 : now));
	*p++ = '\n';
	if (tag && tag[0]) {
		p = put_str(p, "tag=");
		p = put_str(p, tag);
		*p++ = '\n';
	}
	p = put_marker(p, kinds, opts);
	return (size_t)(p - buf);
}

/*
 * The writer's host and pid namespace, after the record: spec readers
 * ignore keys they do not know, and a reader of 1.2.0 takes them beside
 * a pid=.  len: what the record takes of buf already.  Returns the new
 * length.  The namespace is asked here (pidns_self(), cached), not
 * passed: the host's id is read once per process, the namespace once
 * per pid (a fork may be in a new one).
 */
/* token=N: the hold's fencing token, for people and resources that
 * read the record (token.c).  After the host lines, and only where it
 * fits the record's room (RECORD_ROOM, with its empty line): a record
 * with a tag of some 200 bytes or more goes without it (the token is
 * the API's and PIDLOCK_TOKEN's all the same). */
size_t content_put_token(char *buf, size_t size, size_t len,
			 uint64_t token)
{
	char *p = buf + len;

	if (!token || size < CONTENT_BUF_MAX || len + 27 > CONTENT_BUF_MAX - 11)
		return len;
	p = put_str(p, "token=");
	p = put_u64(p, token);
	*p++ = '\n';
	return (size_t)(p - buf);
}

size_t content_put_host(char *buf, size_t size, size_t len,
			const struct host_id *h)
{
	uint64_t ns = pidns_self();
	char *p = buf + len;

	/* The three lines at their longest (70 + 42 + 27) fit beside the
	 * longest record. */
	if (size < CONTENT_BUF_MAX || len > CONTENT_BUF_MAX - 139)
		return len;
	if (h->name[0]) {
		p = put_str(p, "host=");
		p = put_str(p, h->name);
		*p++ = '\n';
	}
	if (h->boot[0]) {
		p = put_str(p, "boot=");
		p = put_str(p, h->boot);
		*p++ = '\n';
	}
	if (ns) {
		p = put_str(p, "pidns=");
		p = put_u64(p, ns);
		*p++ = '\n';
	}
	return (size_t)(p - buf);
}

/*
 * What a file that stays at the path says between holders: our marker
 * so the next holder takes it at once; for a kept file (opts FMT_KEEP),
 * keep=1 so that holder keeps the inode too.  Without it (a release
 * that saw somebody wait, release.c), the next holder's release
 * unlinks it as usual.  For spec-only
 * readers, a record that goes stale: a pid no process can have (above
 * PID_MAX_LIMIT, so nothing acts on it, and kill(2) finds it dead) and
 * the time of the release.  A spec peer whose writer died between its
 * create and its write left the empty file we kept: it can still get
 * the path back after its stale timeout, as the spec has it.
 */
size_t content_format_released(char *buf, size_t size, int64_t now,
				unsigned int kinds, unsigned int opts)
{
	char *p = buf;

	if (size < CONTENT_BUF_MAX)
		return 0;
	p = put_str(p, "pid=" RELEASED_PID_TEXT "\ntimestamp=");
	p = put_u64(p, (uint64_t)(now < 0 ? 0 : now));
	*p++ = '\n';
	p = put_marker(p, kinds, opts & FMT_KEEP);
	p = put_str(p, "released=");
	p = put_u64(p, (uint64_t)(now < 0 ? 0 : now));
	*p++ = '\n';
	return (size_t)(p - buf);
}

/* A pid is 1..INT_MAX in plain decimal; "0", "-1", "12abc" are not. */
static pid_t parse_pid(const char *s, const char *end)
{
	long long v = 0;

	if (s == end)
		return 0;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9')
			return 0;
		v = v * 10 + (*s - '0');
		if (v > INT_MAX)
			return 0;
	}
	return (pid_t)v;
}

static bool parse_timestamp(const char *s, const char *end, int64_t *out)
{
	uint64_t v = 0;

	if (s == end)
		return false;
	for (; s < end; s++) {
		unsigned int d = (unsigned int)(*s - '0');

		if (d > 9)
			return false;
		if (v > ((uint64_t)INT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = (int64_t)v;
	return true;
}

static bool token_is(const char *s, const char *end, const char *word)
{
	size_t n = strlen(word);

	return (size_t)(end - s) == n && memcmp(s, word, n) == 0;
}

/* "flock,ofd" -> bits; tokens this version does not know are ignored. */
static unsigned int parse_kinds(const char *s, const char *end)
{
	unsigned int kinds = 0;

	while (s < end) {
		const char *comma = memchr(s, ',', (size_t)(end - s));
		const char *te = comma ? comma : end;

		if (token_is(s, te, "flock"))
			kinds |= PIDLOCK_KIND_FLOCK;
		else if (token_is(s, te, "ofd"))
			kinds |= PIDLOCK_KIND_OFD;
		s = comma ? comma + 1 : end;
	}
	return kinds;
}

/* A boot id as the kernel prints it: a UUID, lower-case hex and dashes. */
bool content_boot_ok(const char *s, const char *end)
{
	if (end - s != HOST_BOOT_LEN)
		return false;
	for (; s < end; s++)
		if (*s != '-' && !(*s >= '0' && *s <= '9') &&
		    !(*s >= 'a' && *s <= 'f'))
			return false;
	return true;
}

/* Anything else names no boot: the record is judged as this host's. */
static void parse_boot(const char *s, const char *end, struct content *c)
{
	c->boot[0] = '\0';
	if (!content_boot_ok(s, end))
		return;
	memcpy(c->boot, s, HOST_BOOT_LEN);
	c->boot[HOST_BOOT_LEN] = '\0';
}

/* A namespace's inode number; anything else names none, and the pid is
 * judged as a record without the line is (pidns_judged()). */
static void parse_pidns(const char *s, const char *end, struct content *c)
{
	int64_t v = 0;

	c->pidns = parse_timestamp(s, end, &v) && v > 0 ? (uint64_t)v : 0;
}

static bool is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' ||
	       ch == '\f';
}

/* `cut`: the read bound ended the line, so its value may be a prefix
 * of the real one ("timestamp=17" of "timestamp=1763..."): only a tag,
 * shortened anyway, may be taken from it. */
static void parse_line(const char *s, const char *end, bool first, bool cut,
		       struct content *c)
{
	const char *eq;

	while (s < end && is_space(*s))
		s++;
	while (end > s && is_space(end[-1]))
		end--;
	eq = memchr(s, '=', (size_t)(end - s));
	if (!eq) {
		/* libbsd pidfile(3), liblockfile and PIDLOCK_PLAIN_PID. */
		if (first && !cut)
			c->bare_pid = parse_pid(s, end);
		return;
	}
	if (cut && !token_is(s, eq, "tag"))
		return;
	if (token_is(s, eq, "pid")) {
		c->pid = parse_pid(eq + 1, end);
	} else if (token_is(s, eq, "timestamp")) {
		c->has_timestamp = parse_timestamp(eq + 1, end, &c->timestamp);
	} else if (token_is(s, eq, "tag")) {
		content_clean_tag(c->tag, sizeof(c->tag), eq + 1, (size_t)(end - eq - 1));
	} else if (token_is(s, eq, "lock")) {
		c->marker = parse_kinds(eq + 1, end);
	} else if (token_is(s, eq, "keep")) {
		c->keep = token_is(eq + 1, end, "1");
	} else if (token_is(s, eq, "released")) {
		c->released = true;
	} else if (token_is(s, eq, "release")) {
		c->exit_releases = token_is(eq + 1, end, "exit");
	} else if (token_is(s, eq, "shared")) {
		c->shared = token_is(eq + 1, end, "1");
	} else if (token_is(s, eq, "host")) {
		content_clean_tag(c->host, sizeof(c->host), eq + 1,
				  (size_t)(end - eq - 1));
	} else if (token_is(s, eq, "boot")) {
		parse_boot(eq + 1, end, c);
	} else if (token_is(s, eq, "pidns")) {
		parse_pidns(eq + 1, end, c);
	}
}

void content_parse(const char *data, size_t len, struct content *c)
{
	size_t head = content_head(data, len);
	const char *p = data;
	const char *end;
	bool first = true;

	memset(c, 0, sizeof(*c));
	/* The holder's bytes after our record are none of the record's:
	 * a pid= among them names nobody. */
	c->head = content_head_tail(data, len);
	if (head)
		len = head;
	end = data + len;
	/* We never write a BOM; one reference reader trims it, so do we. */
	if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
		p += 3;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *q = p;

		while (q < le && is_space(*q))
			q++;
		if (q < le) {
			parse_line(p, le, first,
				   !nl && len >= CONTENT_READ_MAX, c);
			first = false;
		}
		p = nl ? nl + 1 : end;
	}
	if (!c->has_timestamp)
		c->timestamp = 0;
	c->empty = first;
}

bool content_is_spec(const struct content *c)
{
	return c->pid > 0 && c->has_timestamp;
}

/*
 * Which files a locker could have left, so that we may take them over:
 * see doc/protocol.md, "Lock-file content".  Anything else is a user's
 * data and is never written, truncated or unlinked.
 */
enum { KEY_NONE, KEY_NUM, KEY_TEXT };

/* Every key this library or the spec writes, and its value's kind. */
static const struct {
	const char *name;
	int kind;
} known_keys[] = {
	{ "pid", KEY_NUM }, { "timestamp", KEY_NUM }, { "released", KEY_NUM },
	{ "tag", KEY_TEXT }, { "lock", KEY_TEXT }, { "keep", KEY_TEXT },
	{ "release", KEY_TEXT }, { "shared", KEY_TEXT },
	{ "host", KEY_TEXT }, { "boot", KEY_TEXT }, { "pidns", KEY_NUM },
};

static int known_key(const char *s, const char *end)
{
	for (size_t i = 0; i < sizeof(known_keys) / sizeof(known_keys[0]); i++)
		if (token_is(s, end, known_keys[i].name))
			return known_keys[i].kind;
	return KEY_NONE;
}

/* The classes of bytes the grammar's keys and values are made of.  Not
 * <ctype.h>: its answers follow the caller's locale, the format does not. */
enum { CH_DIGIT = 1, CH_LOWER = 2, CH_UPPER = 4, CH_UNDER = 8, CH_COMMA = 16 };

static unsigned int char_class(char ch)
{
	if (ch >= '0' && ch <= '9')
		return CH_DIGIT;
	if (ch >= 'a' && ch <= 'z')
		return CH_LOWER;
	if (ch >= 'A' && ch <= 'Z')
		return CH_UPPER;
	if (ch == '_')
		return CH_UNDER;
	return ch == ',' ? CH_COMMA : 0;
}

/* Is every byte of [s, end) of one of `classes`?  (Yes if it is empty.) */
static bool all_of(const char *s, const char *end, unsigned int classes)
{
	for (; s < end; s++)
		if (!(char_class(*s) & classes))
			return false;
	return true;
}

static bool all_digits(const char *s, const char *end)
{
	return all_of(s, end, CH_DIGIT);
}

/* Lower-case identifiers only: an .env file (FOO=bar) is not a record. */
static bool key_shaped(const char *s, const char *end)
{
	if (s == end || end - s > 32 || char_class(*s) != CH_LOWER)
		return false;
	return all_of(s, end, CH_LOWER | CH_DIGIT | CH_UNDER);
}

/* Is [s, end) a prefix of "word"?  What a writer cut short may show. */
static bool prefix_of(const char *s, const char *end, const char *word)
{
	size_t n = (size_t)(end - s);

	return n <= strlen(word) && memcmp(s, word, n) == 0;
}

/* A later line that the end of the file cut: a prefix of a key we know. */
static bool cut_key_prefix(const char *s, const char *end)
{
	for (size_t i = 0; i < sizeof(known_keys) / sizeof(known_keys[0]); i++)
		if (prefix_of(s, end, known_keys[i].name))
			return true;
	return false;
}

/* Words and commas, as a later version may name other kinds. */
static bool kinds_ok(const char *s, const char *end)
{
	return all_of(s, end,
		      CH_LOWER | CH_UPPER | CH_DIGIT | CH_UNDER | CH_COMMA);
}

/* release=: a lower-case word. */
static bool word_ok(const char *s, const char *end)
{
	return all_of(s, end, CH_LOWER);
}

struct grammar {
	bool first;		/* no line seen yet */
	bool bare_first;	/* the first line was a bare pid */
	bool has_pid;		/* a pid= line */
	bool has_ts;		/* a timestamp= line */
	bool has_lock;		/* a lock= line naming a kind we know */
	bool has_keys;		/* any key=value line */
	bool has_unknown;	/* a key this version does not write */
};

/* A bare pid as pidfiles hold it: 1 .. PID_MAX_LIMIT. */
static bool bare_pid_ok(const char *s, const char *end, bool cut)
{
	long long v = 0;

	if (s == end || end - s > 7 || !all_digits(s, end))
		return false;
	for (; s < end; s++)
		v = v * 10 + (*s - '0');
	return cut || (v >= 1 && v <= 4194304);
}

static bool value_ok(const char *key, const char *eq, const char *v,
		     const char *end, bool cut, struct grammar *g)
{
	if (token_is(key, eq, "pid") || token_is(key, eq, "timestamp") ||
	    token_is(key, eq, "released") || token_is(key, eq, "pidns"))
		return all_digits(v, end) && (cut || v < end) && end - v <= 20;
	if (token_is(key, eq, "lock")) {
		if (!kinds_ok(v, end))
			return false;
		/* Our marker anchors a record only if it names a kind. */
		if (parse_kinds(v, end))
			g->has_lock = true;
		return true;
	}
	if (token_is(key, eq, "keep") || token_is(key, eq, "shared"))
		return all_digits(v, end) && (cut || v < end);
	if (token_is(key, eq, "release"))
		return word_ok(v, end);
	return true;	/* tag, host, boot: any text */
}

/* One trimmed, non-empty line; `cut`: the file ends inside it. */
static bool line_ok(const char *s, const char *end, bool cut,
		    struct grammar *g)
{
	const char *eq = memchr(s, '=', (size_t)(end - s));

	if (!eq) {
		if (g->first && bare_pid_ok(s, end, cut)) {
			g->bare_first = true;
			return true;
		}
		/* A writer cut short: "pid=" at least on the first line. */
		return cut && !g->first && cut_key_prefix(s, end);
	}
	g->has_keys = true;
	if (known_key(s, eq) == KEY_NONE) {
		if (!key_shaped(s, eq))
			return false;
		g->has_unknown = true;
		return true;
	}
	if (token_is(s, eq, "pid"))
		g->has_pid = true;
	if (token_is(s, eq, "timestamp"))
		g->has_ts = true;
	return value_ok(s, eq, eq + 1, end, cut, g);
}

/* Control characters other than white space are not text anybody's
 * record holds; they are what binary files are made of.  Bytes above
 * 0x7F are let through: a peer's tag need not be valid UTF-8. */
static bool text_ok(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		if ((ch < 0x20 && ch != '\n' && !is_space(s[i])) || ch == 0x7F)
			return false;
	}
	return true;
}

/* Every line of [p, end) valid (line_ok()); the last one may be cut
 * if it has no LF. */
static bool lines_ok(const char *p, const char *end, struct grammar *g)
{
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *s = p, *le = nl ? nl : end;

		while (s < le && is_space(*s))
			s++;
		while (le > s && is_space(le[-1]))
			le--;
		if (s < le) {
			if (!line_ok(s, le, !nl, g))
				return false;
			g->first = false;
		}
		p = nl ? nl + 1 : end;
	}
	return true;
}

/*
 * Our record followed by the holder's bytes (doc/protocol.md, 3a, "The
 * holder's bytes").  A record ends at its first empty line: the first
 * two LF bytes in a row, at RECORD_ROOM (512) bytes or more, as every
 * record that such bytes may follow is padded.  What comes before them is one of our records
 * if it is text, every line valid, with a pid=, a timestamp= and our
 * marker naming a kind; then whatever follows the empty line is the
 * holder's, any bytes, any length, and no reader looks at it.  A spec
 * peer's record has no marker: followed by other lines it is refused,
 * as before.  Returns the record's length, its empty line included,
 * or 0 if data does not start with a complete record of ours.
 */
size_t content_head(const char *data, size_t len)
{
	struct grammar g = { .first = true };
	const char *blank = memmem(data, len, "\n\n", 2);
	size_t n;

	if (!blank)
		return 0;
	n = (size_t)(blank - data) + 1;	/* up to the last line's LF */
	if (n > PIDLOCK_CONTENT_MAX || !text_ok(data, n) ||
	    !lines_ok(data, data + n, &g))
		return 0;
	if (!g.has_pid || !g.has_ts || !g.has_lock)
		return 0;
	/* Such a record has its room (io_hand_out()): a shorter one with
	 * text after it is somebody's notes (a record of ours copied by
	 * hand), and judged as a whole. */
	return n + 1 >= RECORD_ROOM ? n + 1 : 0;
}

/* content_head() where bytes other than LF follow the record: the
 * holder's, which a rewrite keeps or a takeover cuts.  A record padded
 * with newlines only (a takeover over a longer file) is one record, and
 * rewritten as any. */
size_t content_head_tail(const char *data, size_t len)
{
	size_t head = content_head(data, len);

	for (size_t i = head; head && i < len; i++)
		if (data[i] != '\n')
			return head;
	return 0;
}

bool content_is_lock_file(const char *data, size_t len, int64_t size)
{
	struct grammar g = { .first = true };
	const char *p = data;

	if (content_head(data, len))
		return true;
	if (size > PIDLOCK_CONTENT_MAX || len > PIDLOCK_CONTENT_MAX)
		return false;
	/* A crash can leave a write's blocks allocated but never filled
	 * (zeros at the end, or nothing but zeros): a torn record. */
	while (len > 0 && data[len - 1] == '\0')
		len--;
	/* As content_parse(): a reference reader trims a BOM. */
	if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) {
		p += 3;
		len -= 3;
	}
	if (!text_ok(p, len) || !lines_ok(p, p + len, &g))
		return false;
	/* Key lines are a record only with its anchor: a pid= line, or
	 * our marker; other keys only beside a pid=.  A bare pid stands
	 * alone, or leads our PLAIN_PID record. */
	if (g.has_keys && !g.has_pid && !g.has_lock)
		return false;
	if (g.has_unknown && !g.has_pid)
		return false;
	return !g.bare_first || !g.has_keys || g.has_pid;
}

/* Length of the valid UTF-8 sequence at s, or 0 if it is not one. */
static size_t utf8_len(const unsigned char *s, size_t avail)
{
	unsigned char b = s[0];
	unsigned char lo = 0x80, hi = 0xBF;
	size_t n, i;

	if (b < 0x80)
		return 1;
	if (b >= 0xC2 && b <= 0xDF)
		n = 2;
	else if (b >= 0xE0 && b <= 0xEF)
		n = 3;
	else if (b >= 0xF0 && b <= 0xF4)
		n = 4;
	else
		return 0;
	/* Reject overlong forms, surrogates and code points past U+10FFFF. */
	if (b == 0xE0)
		lo = 0xA0;
	else if (b == 0xED)
		hi = 0x9F;
	else if (b == 0xF0)
		lo = 0x90;
	else if (b == 0xF4)
		hi = 0x8F;
	if (avail < n || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return n;
}

static bool is_control(const unsigned char *s, size_t n)
{
	if (n == 1)
		return s[0] < 0x20 || s[0] == 0x7F;
	return n == 2 && s[0] == 0xC2 && s[1] < 0xA0; /* C1: U+0080..U+009F */
}

/*
 * Copy a tag keeping valid UTF-8 only: control characters (which could
 * forge lines or terminal escapes) and invalid bytes become '?'.  Cuts at
 * a character boundary so the result stays valid.
 */
void content_clean_tag(char *dst, size_t size, const char *src, size_t len)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t i = 0, o = 0;

	if (!size)
		return;
	while (i < len) {
		size_t n = utf8_len(s + i, len - i);
		bool bad = n == 0 || is_control(s + i, n);
		size_t out = bad ? 1 : n;

		if (o + out > size - 1)
			break;
		if (bad)
			dst[o] = '?';
		else
			memcpy(dst + o, s + i, n);
		o += out;
		i += n ? n : 1;
	}
	dst[o] = '\0';
}
