/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Is a process gone?  Only when its whole thread group has exited.
 * kill(2) with signal 0 answers yes for a zombie (it has exited and
 * waits for its parent), and /proc/PID/stat's state is its leader
 * thread's: a daemon whose main thread called pthread_exit(3) shows
 * 'Z' there while its other threads work on.  A pidfd answers the
 * question itself: it polls readable once every thread of the group
 * has exited (pidfd_open(2)), zombie or not.  Where pidfds are missing
 * (before Linux 5.3, a seccomp filter, a pid that names a thread),
 * /proc/PID/task lists the threads, and one not a zombie is enough.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alive.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* 1 exited, 0 runs, -1 no answer (no pidfd for this pid here). */
static int pidfd_ended(pid_t pid)
{
	struct pollfd pfd = { .events = POLLIN };
	long fd = syscall(SYS_pidfd_open, pid, 0);
	int n;

	if (fd < 0)
		return errno == ESRCH ? 1 : -1;
	pfd.fd = (int)fd;
	do
		n = poll(&pfd, 1, 0);
	while (n < 0 && errno == EINTR);
	/* Read-only: closing it loses nothing, whatever close says. */
	(void)close((int)fd);
	if (n < 0)
		return -1;
	return n > 0 && (pfd.revents & (POLLIN | POLLHUP)) ? 1 : 0;
}

/* Is the thread /proc/PID/task/TID/stat describes more than a zombie?
 * Unreadable: it exited meanwhile. */
static bool task_runs(pid_t pid, const char *tid)
{
	char path[320], buf[512];	/* a d_name is up to 255 bytes */
	const char *p;
	ssize_t n;
	int fd;

	(void)snprintf(path, sizeof(path), "/proc/%ld/task/%s/stat",
		       (long)pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	(void)close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* The command name may hold ") ": the state follows the last. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return true;	/* unparsable: not proven dead */
	return !strchr("ZXx", p[2]);
}

/* 1 some thread runs, 0 none, -1 /proc cannot tell (hidepid=, no /proc,
 * a /proc of another pid namespace). */
static int tasks_run(pid_t pid)
{
	char path[64];
	struct dirent *de;
	int r = 0;
	DIR *d;

	(void)snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while (r == 0 && (de = readdir(d)) != NULL)
		if (de->d_name[0] != '.' && task_runs(pid, de->d_name))
			r = 1;
	(void)closedir(d);
	return r;
}

bool pid_group_alive(pid_t pid)
{
	int saved = errno, r;

	if (pid <= 0)
		return false;
	/* The cheap answer for the usual dead pid.  EPERM: it exists,
	 * and belongs to someone else. */
	if (kill(pid, 0) < 0 && errno != EPERM) {
		errno = saved;
		return false;
	}
	r = pidfd_ended(pid);
	if (r < 0)
		r = tasks_run(pid) == 0;
	errno = saved;
	return r != 1;
}
