/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * counter: N processes add to a shared counter under one pidlock while a
 * killer SIGKILLs them at random moments (holders included) and starts
 * them again.  The state file is rewritten with a single pwrite(2) inside
 * the lock, so a kill leaves it either before or after an increment.  At
 * the end the total must be exactly N x M, and the lock must be free at
 * once: no stale lock after any of the kills.
 *
 *   counter [-p PROCS] [-n INCREMENTS] [-k KILLS] [-d DIR]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pidlock.h>

#define MAX_PROCS 64

struct state {
	long total;
	long done[MAX_PROCS];
};

static char lock_path[4200], state_path[4200];

static long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static int read_state(int fd, struct state *s)
{
	ssize_t n = pread(fd, s, sizeof(*s), 0);

	if (n == 0)
		memset(s, 0, sizeof(*s));
	else if (n != (ssize_t)sizeof(*s))
		return -1;
	return 0;
}

/* One worker: increment until its share is done, resuming after a kill. */
static int worker(int id, long rounds)
{
	struct pidlock *lock;
	int r = pidlock_new(&lock, lock_path, PIDLOCK_NO_SYNC);

	if (r < 0)
		return 2;
	pidlock_set_tag(lock, "counter example");
	for (;;) {
		struct state s;
		int fd;

		r = pidlock_acquire(lock, -1);
		if (r < 0) {
			(void)fprintf(stderr, "worker %d: acquire: %s\n", id, strerror(-r));
			return 3;
		}
		fd = open(state_path, O_RDWR | O_CLOEXEC);
		if (fd < 0 || read_state(fd, &s) < 0)
			return 4;
		if (s.done[id] >= rounds) {
			close(fd);
			pidlock_free(lock);
			return 0;
		}
		s.total++;
		s.done[id]++;
		/* One write: a SIGKILL lands before it or after it. */
		if (pwrite(fd, &s, sizeof(s), 0) != (ssize_t)sizeof(s))
			return 5;
		close(fd);
		r = pidlock_release(lock);
		if (r < 0) {
			(void)fprintf(stderr, "worker %d: release: %s\n", id, strerror(-r));
			return 6;
		}
	}
}

static pid_t start(int id, long rounds)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(worker(id, rounds));
	return pid;
}

__attribute__((noreturn)) static void usage(void)
{
	(void)fprintf(stderr, "usage: counter [-p PROCS] [-n INCREMENTS] [-k KILLS] [-d DIR]\n");
	exit(64);
}

int main(int argc, char **argv)
{
	int procs = 4, kills = 8, opt, running, failed = 0;
	long rounds = 2000, t_free;
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	pid_t pids[MAX_PROCS];
	struct pidlock *probe;
	struct state s;
	char tmpl[4096];
	int fd;

	while ((opt = getopt(argc, argv, "p:n:k:d:h")) != -1) {
		switch (opt) {
		case 'p': procs = atoi(optarg); break;
		case 'n': rounds = atol(optarg); break;
		case 'k': kills = atoi(optarg); break;
		case 'd': dir = optarg; break;
		default: usage();
		}
	}
	if (procs < 1 || procs > MAX_PROCS || rounds < 1 || kills < 0)
		usage();
	(void)snprintf(tmpl, sizeof(tmpl), "%s/pidlock-counter.XXXXXX", dir);
	if (!mkdtemp(tmpl)) {
		perror(tmpl);
		return 1;
	}
	(void)snprintf(lock_path, sizeof(lock_path), "%s/counter.lock", tmpl);
	(void)snprintf(state_path, sizeof(state_path), "%s/state", tmpl);
	fd = open(state_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		perror(state_path);
		return 1;
	}
	printf("%d processes x %ld increments, %d SIGKILLs, lock %s\n",
	       procs, rounds, kills, lock_path);
	srand((unsigned int)getpid());
	for (int i = 0; i < procs; i++)
		pids[i] = start(i, rounds);
	/* rand(): the victims and the pauses need no better randomness. */
	for (int k = 0; k < kills; k++) {
		int victim = rand() % procs; /* NOLINT(cert-msc30-c,cert-msc50-cpp) */

		usleep((useconds_t)(2000 + rand() % 30000)); /* NOLINT(cert-msc30-c,cert-msc50-cpp) */
		kill(pids[victim], SIGKILL);
		waitpid(pids[victim], NULL, 0);
		pids[victim] = start(victim, rounds);
	}
	for (running = 0; running < procs; running++) {
		int st;

		waitpid(pids[running], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed++;
	}
	/* After all those kills, the lock is free right now. */
	t_free = now_us();
	if (pidlock_new(&probe, lock_path, 0) < 0 || pidlock_acquire(probe, 0) < 0) {
		printf("FAIL: the lock is not free at the end\n");
		return 1;
	}
	t_free = now_us() - t_free;
	pidlock_free(probe);
	if (read_state(fd, &s) < 0)
		return 1;
	close(fd);
	printf("total %ld, expected %ld; %d worker failures; lock free at once "
	       "(acquired in %ld us)\n", s.total, (long)procs * rounds, failed,
	       t_free);
	unlink(state_path);
	rmdir(tmpl);
	if (failed || s.total != (long)procs * rounds) {
		printf("FAIL\n");
		return 1;
	}
	printf("OK\n");
	return 0;
}
