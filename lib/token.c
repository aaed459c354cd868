/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fencing tokens (PIDLOCK_TOKEN): each grant of the lock on a path gets a
 * number greater than every earlier grant's, so that a resource can
 * refuse a write from a holder that lost the lock with the write already
 * on its way (doc/protocol.md, "Fencing tokens").  No check in the holder
 * can settle such a write; the resource, comparing numbers, can.
 *
 * The counter lives in an extended attribute of the lock's directory,
 * one per lock name: the lock file itself is unlinked on release, and
 * the directory is what every client of a shared file system asks the
 * server about (a file's cached pages are not; a buffered sidecar file
 * was measured to give stale reads across GlusterFS clients, the
 * directory's attribute none).  It is read and written only while the
 * lock is held, so increments never race; the value is read back after
 * the write, and anything but the number written fails the acquire.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>

#include "internal.h"

#define TOKEN_PREFIX "user.pidlock.token."
#define TOKEN_NAME_MAX 255	/* XATTR_NAME_MAX */
#define TOKEN_TEXT_MAX 24

/* The attribute's name: the prefix and the lock's name, or, for a name
 * too long for that, a hash of it (FNV-1a, 64 bits) behind '#', which
 * no file name of that length can be. */
static void token_name(const struct pidlock *lock, char *name, size_t size)
{
	const char *base = lock->set.base;
	uint64_t h = 0xcbf29ce484222325ULL;

	if (strlen(TOKEN_PREFIX) + strlen(base) <= TOKEN_NAME_MAX) {
		(void)snprintf(name, size, "%s%s", TOKEN_PREFIX, base);
		return;
	}
	for (const char *p = base; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	(void)snprintf(name, size, "%s#%016" PRIx64, TOKEN_PREFIX, h);
}

/* The counter's value: 0 where there is none yet; -ERANGE for a value
 * that is not a decimal number below 2^64 (not the lock file's
 * -EBADMSG: the file is not at fault). */
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

/* The next number, for the hold just taken: kept in hold.token. */
int token_take(struct pidlock *lock)
{
	char name[TOKEN_NAME_MAX + 1], text[TOKEN_TEXT_MAX];
	uint64_t v, back;
	int r, len;

	token_name(lock, name, sizeof(name));
	r = token_read(lock->set.dir, name, &v);
	if (r < 0)
		return r;
	if (v == UINT64_MAX)
		return -EOVERFLOW;
	v++;
	len = snprintf(text, sizeof(text), "%" PRIu64, v);
	if (setxattr(lock->set.dir, name, text, (size_t)len, 0) < 0)
		return -errno;
	r = token_read(lock->set.dir, name, &back);
	if (r < 0)
		return r;
	if (back != v)
		return -EIO;
	lock->hold.token = v;
	return 0;
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
