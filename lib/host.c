/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which kernel wrote a record.  A pid means something only to the
 * kernel that gave it out: on a shared file system the record may come
 * from another host, and on any file system from this host before a
 * reboot.  The record names its writer's host (for people) and boot id
 * (for us); a reader whose boot id differs judges nothing by the pid.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "internal.h"

#define BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"

static struct host_id self_id;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

/* Without /proc the boot id is unknown: the record then names no boot,
 * and its readers judge its pid as this host's, as before 1.3.0. */
static void read_boot_id(char *out)
{
	char buf[HOST_BOOT_LEN + 2];
	ssize_t n;
	int fd = open(BOOT_ID_PATH, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	out[0] = '\0';
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf));
	/* Read-only: closing it loses nothing; load_self() keeps errno. */
	(void)close(fd);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	if (n > 0 && content_boot_ok(buf, buf + n)) {
		memcpy(out, buf, (size_t)n);
		out[n] = '\0';
	}
}

static void load_self(void)
{
	struct utsname u;
	int saved = errno;

	read_boot_id(self_id.boot);
	if (uname(&u) == 0)
		content_clean_tag(self_id.name, sizeof(self_id.name),
				   u.nodename, strlen(u.nodename));
	errno = saved;
}

/*
 * Read once per process: the boot id never changes under a running
 * process, and a host name changed since (sethostname(2)) is shown by
 * records written before the change anyway.
 */
const struct host_id *host_self(void)
{
	(void)pthread_once(&self_once, load_self);
	return &self_id;
}

/* Was the record written under another kernel?  Not known (no boot id
 * in the record, or none here) is no. */
bool host_foreign(const struct content *c)
{
	const struct host_id *self = host_self();

	return c->boot[0] && self->boot[0] && strcmp(c->boot, self->boot) != 0;
}

/* The pid test of a record: 1 alive, 0 dead, -1 not judged here. */
int host_pid_alive(const struct content *c, pid_t pid)
{
	if (pid <= 0)
		return -1;
	/* Nor is another pid namespace's (pidns.c). */
	if (host_foreign(c) || !pidns_judged(c))
		return -1;
	return pid_group_alive(pid);
}
