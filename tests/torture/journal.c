/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The journal and its checker.  Every line is one write(2) on an
 * O_APPEND descriptor, so lines from different processes never mix and
 * their order is the order in which they happened:
 *
 *   E id value ns    entered; value is the counter as read
 *   L id value ns    leaving; value is the counter as written
 *   K id phase ns    the killer is about to SIGKILL instance id
 *   S id what ns     libpidlock said -ESTALE (someone broke our lock)
 *   F id errno what  a participant failed where it must not
 *   R id value ns    a reader (shared holder) entered; value as read
 *   Q id value ns    the reader is leaving; value as read again
 *
 * Readers may be inside together, never beside a writer (E ... L), and
 * the counter does not change while one is inside.
 * A holder can only be followed by the next one after it left or died,
 * and it can only die after the killer wrote its K line; so any E that
 * finds another instance inside without a K line for it is two
 * processes in the critical section at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "torture.h"

#define COUNTER_WIDTH 20

int journal_open(const char *dir)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/" JOURNAL_NAME, dir);
	return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

/*
 * One write per record: O_APPEND keeps records whole and in order.  A
 * SIGKILL can still cut a write where it crosses a page boundary of the
 * file (the kernel checks for it between pages), so every record is
 * JOURNAL_RECORD bytes, a divisor of the page size: no record ever
 * crosses one.  Longer text is cut.
 */
void journal_line(int fd, const char *fmt, ...)
{
	char buf[JOURNAL_RECORD + 1];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		die("journal record: %m");
	if (n > JOURNAL_RECORD - 1)
		n = JOURNAL_RECORD - 1;
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	memset(buf + n, ' ', (size_t)(JOURNAL_RECORD - 1 - n));
	buf[JOURNAL_RECORD - 1] = '\n';
	if (write(fd, buf, JOURNAL_RECORD) != JOURNAL_RECORD)
		die("journal write: %m");
}

int counter_read(int dirfd, long *v)
{
	char buf[COUNTER_WIDTH + 1];
	int fd = openat(dirfd, COUNTER_NAME, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = pread(fd, buf, COUNTER_WIDTH, 0);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	*v = n ? strtol(buf, NULL, 10) : 0;
	return 0;
}

/* Fixed width, so the file never needs truncating. */
int counter_write(int dirfd, long v)
{
	char buf[COUNTER_WIDTH + 1];
	int fd = openat(dirfd, COUNTER_NAME, O_WRONLY | O_CREAT | O_CLOEXEC,
			0644);
	ssize_t n;

	if (fd < 0)
		return -errno;
	snprintf(buf, sizeof(buf), "%*ld", COUNTER_WIDTH - 1, v);
	buf[COUNTER_WIDTH - 1] = '\n';
	n = pwrite(fd, buf, COUNTER_WIDTH, 0);
	if (n != COUNTER_WIDTH) {
		int e = n < 0 ? errno : EIO;

		close(fd);
		return -e;
	}
	return close(fd) < 0 ? -errno : 0;
}

/* --- the checker --------------------------------------------------------- */

struct pending {
	int64_t ns;
	bool holder;
};

struct checker {
	struct kill_stat *ks;
	bool *killed;		/* by instance id */
	const unsigned char *kind_of;	/* enum kind by instance id */
	long ninst;
	long inside;		/* instance in the critical section, 0: none */
	bool *reading;		/* readers inside, by instance id */
	long *read_value;	/* the counter each read on its way in */
	bool inside_dead;	/* ... killed before it left */
	long expected;		/* the counter as last known */
	struct pending pend[MAX_SLOTS * 4];
	int npend;
	long line;
	int verbose;		/* 1: every finding, 0: the first few, -1: none */
};

static void push_lat(int64_t **arr, long *n, int64_t v)
{
	/* Capacity is 64, then each power of two from there. */
	if (*n == 0 || (*n >= 64 && (*n & (*n - 1)) == 0)) {
		long cap = *n ? *n * 2 : 64;
		int64_t *p = realloc(*arr, (size_t)cap * sizeof(**arr));

		if (!p)
			die("out of memory");
		*arr = p;
	}
	(*arr)[(*n)++] = v;
}

static void bad(struct checker *c, long *counter, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void bad(struct checker *c, long *counter, const char *fmt, ...)
{
	va_list ap;

	(*counter)++;
	if (c->verbose < 0 || (*counter > 5 && !c->verbose))
		return;
	fprintf(stderr, "journal line %ld: ", c->line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const char *kind_of(const struct checker *c, long id)
{
	return c->kind_of && id > 0 ? kind_name(c->kind_of[id]) : "-";
}

static bool id_ok(const struct checker *c, long id)
{
	return id > 0 && id <= c->ninst;
}

/* A reader inside that was not killed: a writer may not enter. */
static long live_reader(const struct checker *c)
{
	for (long i = 1; i <= c->ninst; i++)
		if (c->reading[i] && !c->killed[i])
			return i;
	return 0;
}

static void take_latencies(struct checker *c, int64_t ns)
{
	struct kill_stat *ks = c->ks;

	for (int i = 0; i < c->npend; i++) {
		if (c->pend[i].holder)
			push_lat(&ks->lat_ns, &ks->nlat, ns - c->pend[i].ns);
		push_lat(&ks->lat_all_ns, &ks->nlat_all, ns - c->pend[i].ns);
	}
	c->npend = 0;
}

static void on_read(struct checker *c, long id, long v, int64_t ns)
{
	struct kill_stat *ks = c->ks;

	ks->acquisitions++;
	ks->reads++;
	if (c->kind_of)
		ks->per_kind[c->kind_of[id]]++;
	if (c->inside && !c->killed[c->inside])
		bad(c, &ks->violations,
		    "VIOLATION: reader %ld (%s) entered while writer %ld (%s) was inside",
		    id, kind_of(c, id), c->inside, kind_of(c, c->inside));
	/* A writer killed after its write and before its L line. */
	if (v != c->expected &&
	    !((c->inside_dead || (c->inside && c->killed[c->inside])) &&
	      v == c->expected + 1))
		bad(c, &ks->counter_errors,
		    "COUNTER: reader %ld read %ld, expected %ld", id, v,
		    c->expected);
	if (v == c->expected + 1) {
		c->expected = v;
		c->inside = 0;
		c->inside_dead = false;
	}
	take_latencies(c, ns);
	c->reading[id] = true;
	c->read_value[id] = v;
}

static void on_read_leave(struct checker *c, long id, long v)
{
	struct kill_stat *ks = c->ks;

	if (!c->reading[id])
		bad(c, &ks->violations, "VIOLATION: reader %ld (%s) left "
		    "without entering", id, kind_of(c, id));
	else if (v != c->read_value[id])
		bad(c, &ks->counter_errors, "COUNTER: reader %ld saw %ld "
		    "change to %ld while it was inside", id,
		    c->read_value[id], v);
	c->reading[id] = false;
}

static void on_enter(struct checker *c, long id, long v, int64_t ns)
{
	bool maybe_more = c->inside_dead;
	struct kill_stat *ks = c->ks;
	long reader = live_reader(c);

	if (reader)
		bad(c, &ks->violations,
		    "VIOLATION: writer %ld (%s) entered while reader %ld (%s) was inside",
		    id, kind_of(c, id), reader, kind_of(c, reader));
	ks->acquisitions++;
	if (c->kind_of)
		ks->per_kind[c->kind_of[id]]++;
	if (c->inside) {
		if (!c->killed[c->inside])
			bad(c, &ks->violations,
			    "VIOLATION: %ld (%s) entered while %ld (%s) was inside",
			    id, kind_of(c, id), c->inside,
			    kind_of(c, c->inside));
		maybe_more = true;
	}
	/* A holder killed after its counter write but before its L line
	 * leaves the counter one higher than the journal knows. */
	if (v != c->expected && !(maybe_more && v == c->expected + 1))
		bad(c, &ks->counter_errors,
		    "COUNTER: %ld read %ld, expected %ld", id, v, c->expected);
	take_latencies(c, ns);
	c->inside = id;
	c->inside_dead = false;
	c->expected = v;
}

static void on_leave(struct checker *c, long id, long v)
{
	struct kill_stat *ks = c->ks;

	ks->leaves++;
	if (c->inside != id) {
		bad(c, &ks->violations,
		    "VIOLATION: %ld (%s) left while %ld (%s) was inside", id,
		    kind_of(c, id), c->inside, kind_of(c, c->inside));
	} else if (v != c->expected + 1) {
		bad(c, &ks->counter_errors,
		    "COUNTER: %ld wrote %ld after reading %ld", id, v,
		    c->expected);
	}
	c->expected = v;
	c->inside = 0;
	c->inside_dead = false;
}

static void on_kill(struct checker *c, long id, int phase, int64_t ns)
{
	struct kill_stat *ks = c->ks;
	bool holder = phase == PH_CS || phase == PH_RELEASE || c->inside == id;

	c->killed[id] = true;
	ks->kills++;
	if (phase >= 0 && phase < PH_NPHASES)
		ks->by_phase[phase]++;
	if (holder)
		ks->holder_kills++;
	if (c->inside == id && !c->inside_dead) {
		c->inside_dead = true;
		ks->dead_inside++;
	}
	if (c->npend < (int)(sizeof(c->pend) / sizeof(c->pend[0])))
		c->pend[c->npend++] = (struct pending){ ns, holder };
}

static void check_line(struct checker *c, const char *s)
{
	long id, v;
	long long ns;
	char what[64];
	int phase;

	if (sscanf(s, "E %ld %ld %lld", &id, &v, &ns) == 3 && id_ok(c, id)) {
		on_enter(c, id, v, ns);
	} else if (sscanf(s, "L %ld %ld %lld", &id, &v, &ns) == 3 &&
		   id_ok(c, id)) {
		on_leave(c, id, v);
	} else if (sscanf(s, "R %ld %ld %lld", &id, &v, &ns) == 3 &&
		   id_ok(c, id)) {
		on_read(c, id, v, ns);
	} else if (sscanf(s, "Q %ld %ld %lld", &id, &v, &ns) == 3 &&
		   id_ok(c, id)) {
		on_read_leave(c, id, v);
	} else if (sscanf(s, "K %ld %d %lld", &id, &phase, &ns) == 3 &&
		   id_ok(c, id)) {
		on_kill(c, id, phase, ns);
	} else if (sscanf(s, "S %ld %63s", &id, what) == 2) {
		c->ks->stale_reports++;
		if (c->verbose > 0 ||
		    (c->verbose == 0 && c->ks->stale_reports <= 3))
			fprintf(stderr, "journal line %ld: libpidlock %s of instance %ld (%s) returned -ESTALE (broken lock reported)\n",
				c->line, what, id, kind_of(c, id));
	} else if (s[0] == 'F') {
		bad(c, &c->ks->failures, "FAILURE: %s", s);
	} else {
		bad(c, &c->ks->failures, "unparsable journal line: %s", s);
	}
}

static int final_counter(const char *dir, long *v)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r;

	if (dfd < 0)
		return -errno;
	r = counter_read(dfd, v);
	close(dfd);
	if (r != -ENOENT)
		return r;
	*v = 0;		/* no counter file yet: nothing was counted */
	return 0;
}

static void check_counter(struct checker *c, const char *dir)
{
	struct kill_stat *ks = c->ks;
	bool maybe_more = c->inside && (c->killed[c->inside] || c->inside_dead);

	if (final_counter(dir, &ks->final_counter) < 0)
		die("cannot read the counter: %m");
	ks->expected_counter = c->expected;
	if (ks->final_counter != c->expected &&
	    !(maybe_more && ks->final_counter == c->expected + 1))
		bad(c, &ks->counter_errors,
		    "COUNTER: final value %ld, journal says %ld",
		    ks->final_counter, c->expected);
	/* Exact: one increment per clean leave, plus at most one for each
	 * holder killed inside after its write.  Two processes inside at
	 * once lose increments, which no per-line check can see. */
	if (ks->final_counter < ks->leaves ||
	    ks->final_counter > ks->leaves + ks->dead_inside)
		bad(c, &ks->counter_errors,
		    "COUNTER: final value %ld after %ld increments (+%ld killed inside): increments were lost",
		    ks->final_counter, ks->leaves, ks->dead_inside);
}

int journal_check(const char *dir, long ninst, const unsigned char *kind_of,
		  struct kill_stat *ks, int verbose)
{
	struct checker c = { .ks = ks, .ninst = ninst, .kind_of = kind_of,
			     .verbose = verbose };
	char path[4096], line[512];
	FILE *f;

	memset(ks, 0, sizeof(*ks));
	c.killed = calloc((size_t)ninst + 1, sizeof(*c.killed));
	c.reading = calloc((size_t)ninst + 1, sizeof(*c.reading));
	c.read_value = calloc((size_t)ninst + 1, sizeof(*c.read_value));
	if (!c.killed || !c.reading || !c.read_value)
		die("out of memory");
	snprintf(path, sizeof(path), "%s/" JOURNAL_NAME, dir);
	f = fopen(path, "re");
	if (!f)
		die("%s: %m", path);
	while (fgets(line, sizeof(line), f)) {
		c.line++;
		if (strlen(line) != JOURNAL_RECORD ||
		    line[JOURNAL_RECORD - 1] != '\n') {
			bad(&c, &ks->failures, "torn journal record: %s", line);
			continue;
		}
		line[strcspn(line, "\n")] = '\0';
		check_line(&c, line);
	}
	fclose(f);
	check_counter(&c, dir);
	free(c.killed);
	free(c.reading);
	free(c.read_value);
	return ks->violations || ks->counter_errors || ks->failures ? -1 : 0;
}

void kill_stat_free(struct kill_stat *ks)
{
	free(ks->lat_ns);
	free(ks->lat_all_ns);
	ks->lat_ns = ks->lat_all_ns = NULL;
}
