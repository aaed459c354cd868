/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pid namespaces.  A pid is a number in one pid namespace: pidfd_open(2)
 * and kill(2) read it in ours, /proc/PID in the namespace of the /proc
 * mount, and a record holds it in its writer's.  Where these differ, one
 * number names several processes, and the library must not prove one of
 * them and signal another (doc/protocol.md, 5a, "Pid namespaces").
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* Our pid namespace's inode and the pid it was read for, in one word:
 * a fork after unshare(CLONE_NEWPID) is in another namespace, and a lock
 * taken in a fork handler must not find it locked. */
static uint64_t self_cache;

/*
 * The inode of this process's pid namespace, 0 if unknown.  /proc/self
 * is this process in any /proc that can see it, and its ns/pid link is
 * our own namespace whichever /proc it is read through; a /proc that
 * cannot see us (a container's, entered from outside) has no "self".
 * nsfs inode numbers are 32 bits (proc_alloc_inum()).
 */
uint64_t pidns_self(void)
{
	/* The cached pid: every record written asks, and a getpid(2)
	 * here was a tenth system call per cycle. */
	uint64_t pid = (uint64_t)(uint32_t)self_pid();
	uint64_t cached = __atomic_load_n(&self_cache, __ATOMIC_RELAXED);
	struct stat st;
	int saved = errno;

	if (cached && cached >> 32 == pid)
		return cached & 0xffffffffU;
	if (stat("/proc/self/ns/pid", &st) < 0 || st.st_ino == 0 ||
	    st.st_ino > 0xffffffffU) {
		errno = saved;
		return 0;
	}
	__atomic_store_n(&self_cache, pid << 32 | (uint64_t)st.st_ino,
			 __ATOMIC_RELAXED);
	return (uint64_t)st.st_ino;
}

/* "NSpid:\t12\t1": how many numbers, and the last (our own, innermost). */
static int nspid_fields(const char *s, long *last)
{
	int n = 0;

	while (*s) {
		char *end;
		long v;

		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s || *s == '\n')
			break;
		errno = 0;
		v = strtol(s, &end, 10);
		if (end == s || errno)
			return -EBADMSG;
		*last = v;
		n++;
		s = end;
	}
	return n;
}

/*
 * Does the /proc at procdir number processes as this process does?
 * 1 yes, 0 no, -errno.  Its self/status lists our pid in every namespace
 * from the /proc's own down to ours (NSpid): one number, ours, only when
 * the /proc's namespace is ours (it is an ancestor of ours or ours,
 * since it sees us; the same depth is the same namespace).  A /proc that
 * cannot see us has no self.  A kernel without pid namespaces prints no
 * NSpid, and has one namespace.
 */
int pidns_proc_ours(int procdir)
{
	int fd = openat(procdir, "self/status",
			O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
	char *line = NULL;
	size_t cap = 0;
	long last = 0;
	int r = 1;
	FILE *f;

	/* O_NOFOLLOW applies to "status" only: self is the kernel's link. */
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? 0 : -errno;
	f = fdopen(fd, "re");
	if (!f) {
		io_close_keep_errno(fd);
		return -errno;
	}
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, "NSpid:", 6) != 0)
			continue;
		r = nspid_fields(line + 6, &last);
		r = r < 0 ? r : r == 1 && last == (long)getpid();
		break;
	}
	free(line);
	(void)fclose(f);
	return r;
}

/* The same for the /proc mounted at /proc now. */
static int proc_ours_now(void)
{
	int procdir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r;

	if (procdir < 0)
		return -errno;
	r = pidns_proc_ours(procdir);
	io_close_keep_errno(procdir);
	return r;
}

/*
 * May a record's pid be judged here (kill(2), pidfd_open(2))?  Only
 * where it is a number of our namespace: a record that names its
 * writer's namespace (pidns=) only if that is ours; one that names none
 * (a spec-only writer, libpidlock before 1.4) unless our /proc is known
 * to be another namespace's, since a file reached through that /proc
 * (nsenter -m into a container) was most likely written there.
 */
bool pidns_judged(const struct content *c)
{
	int saved = errno;
	bool judged;

	if (c->pidns) {
		uint64_t self = pidns_self();

		judged = self != 0 && self == c->pidns;
	} else {
		judged = proc_ours_now() != 0;
	}
	errno = saved;
	return judged;
}
