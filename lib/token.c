/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fencing tokens (PIDLOCK_TOKEN): each grant of the lock on a path gets a
 * number greater than every earlier grant's, so that a resource can
 * refuse a write from a holder that lost the lock with the write already
 * on its way (doc/fencing.md).  No check in the holder can settle such a
 * write; the resource, comparing numbers, can.
 *
 * A token is the larger of two numbers: the directory's stored high mark
 * plus one, and the wall clock in microseconds.  The high mark keeps
 * tokens increasing where the clock does not (two grants in one
 * microsecond, a clock stepped back, another host's clock behind ours);
 * the clock keeps them increasing where the high mark is gone (a
 * directory removed and made again by systemd's RuntimeDirectory= or a
 * tmpfiles rule, or replaced while somebody holds).  Microseconds since
 * 1970 stay below 2^53 until the year 2255, so every JSON reader
 * compares tokens exactly.
 *
 * The high marks are extended attributes of the lock's directory: the
 * lock file itself is unlinked on release, and the directory is what
 * every client of a shared file system asks the server about (a file's
 * cached pages are not: a sidecar file was measured to read stale across
 * GlusterFS clients, the directory's attribute never).  There are
 * TOKEN_SLOTS of them, a lock name hashed to one, so that a directory of
 * any number of lock names keeps a fixed handful of attributes (one per
 * name filled ext4's 4 KiB attribute block at the 88th name).  Names
 * that share a slot share its high mark: their tokens interleave, which
 * costs nothing, as a token is only compared with tokens of its own path.
 *
 * A slot is read and written while its name's lock is held, but a grant
 * of another name of the same slot may write it at the same moment; so a
 * write is read back, and written again while what is read is smaller
 * (a racing grant's smaller mark, or a client's stale cache).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>

#include "internal.h"

#define TOKEN_PREFIX "user.pidlock.tokens."
#define TOKEN_SLOTS 16
#define TOKEN_TEXT_MAX 24
#define TOKEN_WRITES 4		/* writes of one grant's mark, at most */
#define TOKEN_LIMIT ((UINT64_C(1) << 53) - 1)
/* A clock before this (2026-01-01) is unset, not a time: no token is
 * made from it alone. */
#define TOKEN_CLOCK_FLOOR_US (UINT64_C(1767225600) * 1000000)

/* The slot's attribute: TOKEN_PREFIX and a hex digit, from an FNV-1a
 * hash of the lock's file name. */
static void token_slot_name(const char *base, char *name, size_t size)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (const char *p = base; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	(void)snprintf(name, size, "%s%x", TOKEN_PREFIX,
		       (unsigned)(h % TOKEN_SLOTS));
}

/* The high mark: 0 where there is none yet; -ERANGE for a value that is
 * not a decimal number below 2^64 (not the lock file's -EBADMSG: the
 * file is not at fault). */
static int token_read(const char *dir, const char *name, uint64_t *v)
{
	char buf[TOKEN_TEXT_MAX + 1];
	ssize_t n = getxattr(dir, name, buf, TOKEN_TEXT_MAX);
	uint64_t x = 0;

	*v = 0;
	if (n < 0)
		return errno == ENODATA ? 0 : -errno;
	if (n == 0 || n > 20)
		return -ERANGE;
	for (ssize_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(buf[i] - '0');

		if (d > 9 || x > (UINT64_MAX - d) / 10)
			return -ERANGE;
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}

static uint64_t token_clock_us(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) < 0 || ts.tv_sec < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* The grant's number from the stored mark: -EOVERFLOW past 2^53 - 1,
 * -ETIME where there is no mark and the clock is unset (a token from it
 * could be smaller than one given before the directory was made). */
static int token_next(uint64_t mark, uint64_t *v)
{
	uint64_t now = token_clock_us();

	if (mark >= TOKEN_LIMIT || now > TOKEN_LIMIT)
		return -EOVERFLOW;
	if (mark == 0 && now < TOKEN_CLOCK_FLOOR_US)
		return -ETIME;
	*v = now > mark ? now : mark + 1;
	return 0;
}

/* Write v and read it back until what is read is v or more. */
static int token_store(const char *dir, const char *name, uint64_t v)
{
	char text[TOKEN_TEXT_MAX];
	int len = snprintf(text, sizeof(text), "%" PRIu64, v);

	for (int i = 0; i < TOKEN_WRITES; i++) {
		uint64_t back;
		int r;

		if (setxattr(dir, name, text, (size_t)len, 0) < 0)
			return -errno;
		r = token_read(dir, name, &back);
		if (r < 0)
			return r;
		if (back >= v)
			return 0;
	}
	return -EIO;
}

/* The next number, for the hold just taken: kept in hold.token. */
static int token_take(struct pidlock *lock)
{
	char name[sizeof(TOKEN_PREFIX) + 2];
	uint64_t mark, v = 0;
	int r;

	token_slot_name(lock->set.base, name, sizeof(name));
	r = token_read(lock->set.dir, name, &mark);
	if (r == 0)
		r = token_next(mark, &v);
	if (r == 0)
		r = token_store(lock->set.dir, name, v);
	if (r == 0)
		lock->hold.token = v;
	return r;
}

/*
 * At the grant (acquire.c): the next number, then the record again with
 * its token= line.  A grant whose number cannot be kept is no grant: the
 * caller lets go of the lock.
 */
int token_publish(struct pidlock *lock)
{
	struct io_old old = { 0, 0 };
	int r = token_take(lock);

	if (r == 0)
		r = io_held_old(lock, &old);
	if (r == 0)
		r = io_write_record(lock, lock->hold.fd, self_pid(),
				    lock->hold.keep, &old, io_hold_how(lock));
	return r;
}

PIDLOCK_EXPORT int pidlock_token(const struct pidlock *lock, uint64_t *token)
{
	if (!lock || !token)
		return -EINVAL;
	if (!(lock->set.flags & PIDLOCK_TOKEN))
		return -EINVAL;
	if (lock->hold.fd < 0 || lock->hold.token == 0)
		return -ENOLCK;
	*token = lock->hold.token;
	return 0;
}
