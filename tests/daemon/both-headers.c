/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <pidlock-pidfile.h> and <bsd/libutil.h> in one file, in either order
 * (BSD_FIRST), linked with both libraries: the pidfile_* calls must
 * reach libpidlock, and the rest of libbsd must still work.
 */
#define _GNU_SOURCE
#ifdef BSD_FIRST
#include <bsd/libutil.h>
#include <pidlock-pidfile.h>
#else
#include <pidlock-pidfile.h>
#include <bsd/libutil.h>
#endif
#include <err.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	char dir[] = "/tmp/pidlock-headers.XXXXXX", path[64], buf[256];
	struct pidfh *pfh;
	ssize_t n;
	int fd;

	if (!mkdtemp(dir))
		err(99, "mkdtemp");
	snprintf(path, sizeof(path), "%s/h.pid", dir);
	pfh = pidfile_open(path, 0644, NULL);
	if (!pfh)
		err(1, "pidfile_open");
	if (pidfile_write(pfh) < 0)
		err(1, "pidfile_write");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		err(1, "open");
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	/* libbsd writes the bare pid only; the record proves who wrote. */
	if (!strstr(buf, "\npid="))
		errx(1, "pidfile_write did not reach libpidlock: %s", buf);
	if (humanize_number(buf, 5, 2048, "", HN_AUTOSCALE, HN_NOSPACE) < 0 ||
	    strcmp(buf, "2K") != 0)
		errx(1, "libbsd's humanize_number: %s", buf);
	if (pidfile_remove(pfh) < 0)
		err(1, "pidfile_remove");
	if (access(path, F_OK) == 0)
		errx(1, "pidfile_remove left %s", path);
	if (rmdir(dir) < 0)
		err(1, "rmdir");
	return 0;
}
