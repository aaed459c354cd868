/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The command and everything it started (--check, --lease): once the lock
 * is lost, all of it must stop, not only the command.  A job under a
 * fencing lock is usually a script with children, and a child left
 * running (a `sleep 300 &`, a worker that called setsid) would go on
 * writing as if it held the lock.
 *
 * pidlock makes itself a child subreaper before it starts the command,
 * so that every process the command starts, and every orphan among
 * them, keeps pidlock as an ancestor: the job is pidlock's descendants,
 * whatever their process group or session.  The process group is left as
 * it is, so that Ctrl-C from the terminal still reaches the command as
 * it does without --check.  Stopping sends TERM to every descendant, and
 * KILL to those still there after the grace (--kill-after), as
 * timeout(1) does with -k.
 *
 * The descendants are found in /proc, and only in a /proc of our own pid
 * namespace (another namespace's pids would name other processes).  Each
 * is signalled through a pidfd taken before its parent is read again, so
 * that a pid freed and reused between the look-up and the signal is not
 * signalled.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

struct proc {
	pid_t pid, ppid;
	bool ours;
};

/* Is /proc the one of our pid namespace? */
static bool proc_is_ours(void)
{
	char buf[32];
	ssize_t n = readlink("/proc/self", buf, sizeof(buf) - 1);

	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strtol(buf, NULL, 10) == (long)getpid();
}

/*
 * The parent of pid; -1 if gone or unreadable, and 0 for what is not
 * the job's: a zombie (it starts nothing, and its parent reaps it) and
 * a child of ours with no exit signal, which is the library's helper
 * (pidlock_check(3)), not the command's.
 */
static pid_t parent_of(pid_t pid)
{
	struct proc_stat st;

	if (proc_stat(pid, &st) < 0)
		return -1;
	if (st.state == 'Z')
		return 0;
	if (st.ppid == getpid() && st.exit_signal == 0)
		return 0;
	return st.ppid;
}

/* Every process of /proc with its parent; -errno, or the count. */
static int list_procs(struct proc **out)
{
	struct proc *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d = opendir("/proc");

	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		pid_t pid, ppid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = (pid_t)strtol(de->d_name, NULL, 10);
		ppid = parent_of(pid);
		if (ppid <= 0)
			continue;
		if (n == cap) {
			struct proc *w;

			cap = cap ? cap * 2 : 256;
			w = realloc(v, cap * sizeof(*v));
			if (!w) {
				free(v);
				(void)closedir(d);
				return -ENOMEM;
			}
			v = w;
		}
		v[n++] = (struct proc){ pid, ppid, false };
	}
	(void)closedir(d);
	*out = v;
	return (int)n;
}

/* Mark the descendants of root: each pass marks the children of the
 * marked, until one marks none. */
static void mark_descendants(struct proc *v, int n, pid_t root)
{
	bool more = true;

	while (more) {
		more = false;
		for (int i = 0; i < n; i++) {
			if (v[i].ours)
				continue;
			if (v[i].ppid == root)
				v[i].ours = true;
			for (int j = 0; j < n && !v[i].ours; j++)
				if (v[j].ours && v[j].pid == v[i].ppid)
					v[i].ours = true;
			more = more || v[i].ours;
		}
	}
}

/* sig to pid, if it is still the child of ppid once a pidfd holds it:
 * true if sent. */
static bool signal_if_child(pid_t pid, pid_t ppid, int sig)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	bool sent;

	if (fd < 0 && errno == ENOSYS)
		return parent_of(pid) == ppid && kill(pid, sig) == 0;
	if (fd < 0)
		return false;
	sent = parent_of(pid) == ppid &&
	       syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) == 0;
	(void)close(fd);
	return sent;
}

int job_reaper(void)
{
	return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0 ? -errno : 0;
}

/*
 * sig to every descendant of ours (0: none sent, only counted): how
 * many live ones there were, or -errno.  Without a /proc of our own
 * namespace only the command can be reached: it alone is signalled.
 */
int job_signal(pid_t child, bool child_done, int sig)
{
	struct proc *v = NULL;
	int n, live = 0;

	if (!proc_is_ours()) {
		if (child_done)
			return 0;
		if (sig)
			(void)kill(child, sig);
		return 1;
	}
	n = list_procs(&v);
	if (n <= 0 || !v)
		return n < 0 ? n : 0;
	mark_descendants(v, n, getpid());
	for (int i = 0; i < n; i++) {
		if (!v[i].ours)
			continue;
		live++;
		if (sig)
			(void)signal_if_child(v[i].pid, v[i].ppid, sig);
	}
	free(v);
	return live;
}

/*
 * Reap what has exited: the command (its status in *status, *done set)
 * and, as a subreaper, any orphan of the job.  -errno on failure.
 */
int job_reap(pid_t child, int *status, bool *done)
{
	for (;;) {
		int st;
		pid_t w = waitpid(-1, &st, WNOHANG);

		if (w == 0 || (w < 0 && errno == ECHILD))
			return 0;
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == child) {
			*status = st;
			*done = true;
		}
	}
}
