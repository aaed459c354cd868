/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * reaper CMD [ARG...]: run CMD as a child subreaper would, reaping every
 * daemon it leaves behind, and exit with CMD's status.
 *
 * Daemons double-fork, so their parent is whoever reaps orphans.  Where
 * that is a PID 1 that never reaps (a bare container), a killed daemon
 * stays a zombie: kill(pid, 0) still succeeds and start-stop-daemon or
 * pgrep would call it running.  Under this reaper the tests see what a
 * real init gives them.  Daemons still running when CMD ends (a failed
 * test) are killed, so nothing outlives the test.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* Our children per /proc: field 4 of /proc/PID/stat is the parent. */
static int kill_children(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char path[64], buf[512], *p;
		FILE *f;
		int ppid;
		char state;
		long pid = strtol(de->d_name, &p, 10);

		if (*p || pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		f = fopen(path, "re");
		if (!f)
			continue;
		p = fgets(buf, sizeof(buf), f);
		fclose(f);
		p = p ? strrchr(buf, ')') : NULL;
		/* A zombie has exited: it is ours to reap, not to kill. */
		if (!p || sscanf(p + 1, " %c %d", &state, &ppid) != 2 ||
		    ppid != getpid() || state == 'Z' || state == 'X')
			continue;
		if (kill((pid_t)pid, SIGKILL) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/*
 * Reap whatever exits within 5 s, and return at once when no child is
 * left.  CMD's own cleanup may have just killed a child (kill -9 in an
 * EXIT trap) that is still dying when CMD's shell exits and hands it to
 * us: that one is not a daemon left running.
 */
static void reap_dying(void)
{
	for (int i = 0; i < 500; i++) {
		int status;
		pid_t pid;

		while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
			;
		if (pid < 0 && errno == ECHILD)
			return;
		usleep(10000);
	}
}

int main(int argc, char **argv)
{
	int status = 0, result = 99;
	bool done = false;
	pid_t cmd, pid;

	if (argc < 2) {
		fprintf(stderr, "usage: reaper CMD [ARG...]\n");
		return 99;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		perror("reaper: PR_SET_CHILD_SUBREAPER");
		return 99;
	}
	cmd = fork();
	if (cmd < 0) {
		perror("reaper: fork");
		return 99;
	}
	if (cmd == 0) {
		execvp(argv[1], argv + 1);
		perror(argv[1]);
		_exit(127);
	}
	for (;;) {
		pid = waitpid(-1, &status, 0);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0)
			break;
		if (pid != cmd || done)
			continue;
		done = true;
		result = WIFEXITED(status) ? WEXITSTATUS(status) : 99;
		reap_dying();
		/* Whatever still runs is a daemon CMD failed to stop, which
		 * fails the test; the loop reaps it once killed. */
		if (kill_children() > 0) {
			fprintf(stderr, "reaper: daemons left running\n");
			result = result ? result : 1;
		}
	}
	return result;
}
