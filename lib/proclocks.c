/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * /proc/locks, line by line.  The kernel prints the list a buffer at a
 * time and lets go of it between read(2) calls; a lock released in
 * between shifts the rows, and the row after the cut can be skipped.  A
 * list that came in one read is a snapshot; one that came in several is
 * "torn": a row missing from it is no proof that its lock is not held.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* More than the kernel gives in one read (a page), and a line's worth. */
#define LIST_CHUNK 8192
#define LIST_LINE 256

/* Hands each complete line of buf[0..*len) to fn; keeps the rest. */
static int each_line(char *buf, size_t *len, proclocks_fn fn, void *arg)
{
	char *start = buf, *nl;
	int stop = 0;

	while (!stop && (nl = memchr(start, '\n', *len - (size_t)(start - buf)))) {
		*nl = '\0';
		stop = fn(start, arg);
		start = nl + 1;
	}
	*len -= (size_t)(start - buf);
	memmove(buf, start, *len);
	/* A line longer than any row: not one of them. */
	if (*len >= LIST_LINE)
		*len = 0;
	return stop;
}

int proclocks_each(proclocks_fn fn, void *arg, bool *torn)
{
	char buf[LIST_CHUNK + 1];
	size_t len = 0;
	int reads = 0, stop = 0, r = 0;
	int fd = open("/proc/locks", O_RDONLY | O_CLOEXEC | O_NOCTTY);

	*torn = false;
	if (fd < 0)
		return -errno;
	while (!stop) {
		ssize_t n = read(fd, buf + len, LIST_CHUNK - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : 0;
			break;
		}
		*torn |= ++reads > 1;
		len += (size_t)n;
		stop = each_line(buf, &len, fn, arg);
	}
	io_close_keep_errno(fd);
	return r;
}
