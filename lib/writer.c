/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Rule C of doc/protocol.md: could the live process that a pidfile or a
 * dotlock names be the one that wrote it?  Such a holder takes no kernel
 * lock, so its pid is all there is to go by.  A crashed writer's pid may
 * since have been given to an innocent process, but that process was
 * started after the writer died, so after the file was last written; a
 * process that started before the file's mtime may be its writer.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define NS_PER_SEC 1000000000LL
/* /proc/PID/stat: flags is the 9th field and starttime the 22nd, the
 * 7th and the 20th after the state, which follows the command name's
 * closing parenthesis. */
#define FLAGS_AFTER_STATE 6
#define STARTTIME_AFTER_STATE 19
#define STAT_BUF 1024
/* PF_KTHREAD of <linux/sched.h>: a kernel thread writes no pidfile. */
#define TASK_KTHREAD 0x00200000ULL

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) < 0)
		return -1;
	return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

/* CLOCK_REALTIME of the boot, by today's clock: the origin of the start
 * times in /proc (CLOCK_BOOTTIME, so a suspend does not shift it). */
static int64_t boot_realtime_ns(void)
{
	int64_t real = clock_ns(CLOCK_REALTIME), boot = clock_ns(CLOCK_BOOTTIME);

	return real < 0 || boot < 0 ? -1 : real - boot;
}

static ssize_t read_stat(pid_t pid, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	(void)snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0)
		n = -errno;
	io_close_keep_errno(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* The n-th field after the state, as a number. */
static int stat_field(const char *fields, int n, unsigned long long *v)
{
	const char *p = fields;
	char *end;

	for (int i = 0; i < n; i++) {
		p = strchr(p, ' ');
		if (!p)
			return -EINVAL;
		p++;
	}
	errno = 0;
	*v = strtoull(p, &end, 10);
	if (errno || end == p)
		return -EINVAL;
	return 0;
}

/*
 * The process's state letter, its flags and its start, in ticks since
 * boot.  The command name may hold spaces and parentheses: the fields
 * start after the last ')'.
 */
static int parse_stat(const char *buf, char *state, unsigned long long *flags,
		      unsigned long long *start)
{
	const char *p = strrchr(buf, ')');
	int r;

	if (!p || p[1] != ' ' || !p[2])
		return -EINVAL;
	*state = p[2];
	r = stat_field(p + 2, FLAGS_AFTER_STATE, flags);
	if (r == 0)
		r = stat_field(p + 2, STARTTIME_AFTER_STATE, start);
	return r;
}

/*
 * When did pid start, in CLOCK_REALTIME ns by today's clock?
 * 1: *start_ns is it; 0: pid is no process that can write a file
 * (gone; a zombie, which has exited and only waits for its parent; a
 * kernel thread); -errno: unknown.  The state in /proc/PID/stat is the
 * leader thread's: 'Z' once the leader has called pthread_exit(3),
 * while the process's other threads may work on, so a 'Z' is only a
 * reason to ask pid_group_alive(), the judge.
 */
static int process_start(pid_t pid, int64_t *start_ns)
{
	char buf[STAT_BUF], state;
	unsigned long long flags = 0, ticks = 0;
	long hz = sysconf(_SC_CLK_TCK);
	int64_t boot;
	ssize_t n = read_stat(pid, buf, sizeof(buf));
	int r;

	/* Gone, unless kill(2) still finds it: /proc then hides it
	 * (hidepid=2 answers ENOENT for other users' processes, and a /proc
	 * of another pid namespace has no such entry), and its start is
	 * unknown. */
	if ((n == -ENOENT || n == -ESRCH) && !pid_group_alive(pid))
		return 0;
	if (n < 0)
		return (int)n;
	r = parse_stat(buf, &state, &flags, &ticks);
	if (r < 0)
		return r;
	if (flags & TASK_KTHREAD)
		return 0;
	if (strchr("ZXx", state) && !pid_group_alive(pid))
		return 0;
	boot = boot_realtime_ns();
	if (hz <= 0 || boot < 0)
		return -EINVAL;
	*start_ns = boot + (int64_t)(ticks / (unsigned long long)hz) * NS_PER_SEC +
		    (int64_t)(ticks % (unsigned long long)hz) * NS_PER_SEC / hz;
	return 1;
}

/*
 * Can pid still act?  A zombie has exited and only waits for its parent
 * (an orphan's reaper may take its time): it will never write, lock or
 * publish.  Unknown (/proc hides it) counts as running.
 */
bool writer_running(pid_t pid)
{
	int64_t start;

	return pid > 0 && process_start(pid, &start) != 0;
}

/*
 * true: pid is a live process that may have written the file, so the
 * file is held (doc/protocol.md, rule C).  false: the pid is dead, or
 * its process started after the file was last written (a reused pid),
 * or the file was written before this boot.  WRITER_SLACK_SEC on both
 * comparisons covers the tick of start times, coarse and truncated
 * mtimes, and small clock steps; within it the answer is "may be".
 * Where the start cannot be read (/proc mounted with hidepid=), a live
 * pid may be the writer.
 */
bool writer_may_hold(pid_t pid, const struct stat *st)
{
	const int64_t slack = (int64_t)WRITER_SLACK_SEC * NS_PER_SEC;
	int64_t start = 0, boot;
	int r;

	if (pid <= 0 || !pid_group_alive(pid))
		return false;
	/* Every process alive now started after the boot: implied below,
	 * and the one test left where the start cannot be read. */
	boot = boot_realtime_ns();
	if (boot >= 0 && io_mtime_ns(st) < boot - slack)
		return false;
	r = process_start(pid, &start);
	if (r <= 0)
		return r < 0;
	return start <= io_mtime_ns(st) + slack;
}
