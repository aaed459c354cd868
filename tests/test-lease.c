/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Rule C's writer test (lib/lease.c) and what it must not do to the
 * caller or to other openers; real processes, no mocks.
 *
 *   test-lease
 *	sigurg_inspect   a program with its own SIGURG handler (installed
 *	                 without SA_RESTART) calls pidlock_inspect() on a
 *	                 young file that another process opens and closes
 *	                 in a loop: no signal may reach it (issue 27.5);
 *	sigurg_acquire   the same with tries on young files;
 *	min_age          a young file is asked about only once it is old
 *	                 enough by a stamp that may be a tick early: a try
 *	                 on a file stamped 12 ms ago waits (issue 27.6);
 *	fifo_swap        a FIFO swapped in with RENAME_EXCHANGE between the
 *	                 lstat and the open is refused on the descriptor by
 *	                 inspect and acquire, and never taken (issue 27.6).
 *   test-lease spec-race A B ROUNDS [GRACE_MS]
 *	A and B name one file through two mounts (two bindfs mounts, two
 *	GlusterFS clients).  Each round a spec-only writer creates B with
 *	O_EXCL, writes its record 100 ms later and closes, while
 *	pidlock_acquire() tries A every 5 ms (with GRACE_MS as its grace,
 *	default 200): it must never hold (issue 27.1), neither before the
 *	record (the lease test) nor after (a stale view of the file).  Run by
 *	tests/test-lease-bindfs.sh and make check-distributed.
 *
 * Exit 0: passed; 1: failed; 2: set-up.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "msclock.h"
#include "pidlock.h"

#define SIGURG_SECONDS 2L
#define MIN_AGE_STAMP_MS 12	/* >= 10 (the old minimum), < 22 */
#define MIN_AGE_WAIT_MS 7	/* what is left, with a clock's slack */
#define SWAP_SECONDS 3L
#define RACE_TRY_MS 5
#define RACE_WRITE_MS 100
/* How long the writer's record stays: longer than a shared file
 * system's client caches what it saw (attributes, 1 s on FUSE and in
 * GlusterFS's md-cache), so that a stale view would be seen. */
#define RACE_HOLD_MS 2500

static volatile sig_atomic_t urgs;
static char dir[64];

static void on_urg(int sig)
{
	(void)sig;
	urgs++;
}

__attribute__((noreturn)) static void die(const char *what)
{
	perror(what);
	exit(2);
}

/* An empty file (incomplete: rule C) stamped ago_ms in the past. */
static void young_empty(const char *path, long ago_ms)
{
	struct timespec t[2];
	int fd;

	if (unlink(path) < 0 && errno != ENOENT)
		die("unlink");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		die("create");
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= ago_ms / 1000;
	t[0].tv_nsec -= (ago_ms % 1000) * 1000000L;
	if (t[0].tv_nsec < 0) {
		t[0].tv_nsec += 1000000000L;
		t[0].tv_sec--;
	}
	t[1] = t[0];
	if (futimens(fd, t) < 0 || close(fd) < 0)
		die("futimens");
}

/* A loop of ours dies with the test, whatever kills the test. */
static pid_t fork_loop(void)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (pid == 0 && (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 ||
			 getppid() != parent))
		_exit(3);
	return pid;
}

/* Opens and closes path as fast as it can until killed: every lease on
 * it is broken, and the breaker's open counts nothing else. */
static pid_t opener(const char *path)
{
	pid_t pid = fork_loop();

	if (pid > 0)
		return pid;
	for (;;) {
		int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

		if (fd >= 0)
			close(fd);
	}
}

static void stop(pid_t pid)
{
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

static void handle_urg(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_urg;	/* no SA_RESTART: an EINTR would show */
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGURG, &sa, NULL) < 0)
		die("sigaction");
}

/* A SIGURG test's start on a young empty file at path: SIGURG counted
 * from now, an opener that breaks every lease on the file; its pid, and
 * in *end the time the test's SIGURG_SECONDS are over. */
static pid_t sigurg_start(const char *path, int64_t *end)
{
	pid_t op;

	young_empty(path, 50);
	handle_urg();
	urgs = 0;
	op = opener(path);
	*end = now_ms() + SIGURG_SECONDS * 1000;
	return op;
}

static int sigurg_inspect(void)
{
	char path[128];
	struct pidlock_info info;
	long calls = 0, young = 0;
	int64_t end;
	pid_t op;

	snprintf(path, sizeof(path), "%s/inspect.lock", dir);
	op = sigurg_start(path, &end);
	while (now_ms() < end) {
		if (calls % 50 == 0)
			young_empty(path, 50);	/* young again */
		if (pidlock_inspect(path, &info, 0) == 0 &&
		    info.state == PIDLOCK_STATE_HELD_SPEC)
			young++;
		calls++;
	}
	stop(op);
	printf("%s sigurg_inspect: %d SIGURG in %ld inspects (%ld saw the "
	       "file in a writer's window)\n", urgs ? "FAIL" : "ok",
	       (int)urgs, calls, young);
	return urgs != 0;
}

static int sigurg_acquire(void)
{
	char path[128];
	struct pidlock *l;
	long tries = 0, held = 0;
	int64_t end;
	pid_t op;

	snprintf(path, sizeof(path), "%s/acquire.lock", dir);
	if (pidlock_new(&l, path, 0) < 0)
		die("pidlock_new");
	op = sigurg_start(path, &end);
	while (now_ms() < end) {
		int r;

		young_empty(path, 50);
		r = pidlock_acquire(l, 0);
		if (r == 0) {
			held++;
			if (pidlock_release(l) < 0)
				die("pidlock_release");
		} else if (r != -EWOULDBLOCK && r != -EAGAIN) {
			errno = -r;
			die("pidlock_acquire");
		}
		tries++;
	}
	stop(op);
	pidlock_free(l);
	printf("%s sigurg_acquire: %d SIGURG in %ld tries on young files "
	       "(%ld held)\n", urgs ? "FAIL" : "ok", (int)urgs, tries, held);
	return urgs != 0;
}

static int min_age(void)
{
	char path[128];
	struct pidlock *l;
	int64_t t0, took;
	int r;

	snprintf(path, sizeof(path), "%s/age.lock", dir);
	if (pidlock_new(&l, path, 0) < 0)
		die("pidlock_new");
	young_empty(path, MIN_AGE_STAMP_MS);
	t0 = now_ms();
	r = pidlock_acquire(l, 0);
	took = now_ms() - t0;
	if (r == 0)
		(void)pidlock_release(l);
	pidlock_free(l);
	r = r != 0 || took < MIN_AGE_WAIT_MS;
	printf("%s min_age: a file stamped %d ms ago asked about after "
	       "%lld ms (at least %d)\n", r ? "FAIL" : "ok", MIN_AGE_STAMP_MS,
	       (long long)took, MIN_AGE_WAIT_MS);
	return r;
}

/* Swaps the lock file and a FIFO until killed. */
static pid_t swapper(const char *a, const char *b)
{
	pid_t pid = fork_loop();

	if (pid > 0)
		return pid;
	for (;;)
		/* The system call itself: not every C library wraps it. */
		if (syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b,
			    2U /* RENAME_EXCHANGE */) < 0)
			_exit(3);
}

static int fifo_swap(void)
{
	char path[128], fifo[128], rec[64];
	const struct timespec old[2] = { { 1000000000, 0 },
					 { 1000000000, 0 } };
	struct pidlock_info info;
	struct pidlock *l;
	long refused = 0, seen = 0, bad = 0;
	int64_t end;
	int fd;
	pid_t sw;

	snprintf(path, sizeof(path), "%s/swap.lock", dir);
	snprintf(fifo, sizeof(fifo), "%s/swap.fifo", dir);
	/* A spec record of a live pid: held, busy.  The FIFO is old: read
	 * as a lock file it would be empty and free. */
	snprintf(rec, sizeof(rec), "pid=1\ntimestamp=%lld\n",
		 (long long)time(NULL));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, rec, strlen(rec)) != (ssize_t)strlen(rec) ||
	    close(fd) < 0)
		die("record");
	if (mkfifo(fifo, 0644) < 0 || utimensat(AT_FDCWD, fifo, old, 0) < 0)
		die("mkfifo");
	if (pidlock_new(&l, path, 0) < 0)
		die("pidlock_new");
	sw = swapper(path, fifo);
	end = now_ms() + SWAP_SECONDS * 1000;
	while (now_ms() < end) {
		int r = pidlock_inspect(path, &info, 0);

		if (r == -EINVAL)
			refused++;
		else if (r == 0 && info.state == PIDLOCK_STATE_HELD_SPEC)
			seen++;
		else
			bad++;
		r = pidlock_acquire(l, 0);
		if (r == -EINVAL)
			refused++;
		else if (r == -EWOULDBLOCK)
			seen++;
		else
			bad++;
		if (r == 0)
			(void)pidlock_release(l);
	}
	stop(sw);
	pidlock_free(l);
	printf("%s fifo_swap: %ld looks and tries: %ld refused, %ld saw the "
	       "record, %ld anything else\n", bad ? "FAIL" : "ok",
	       refused + seen + bad, refused, seen, bad);
	return bad != 0;
}

/*
 * A spec-only writer on B: O_EXCL create, its record RACE_WRITE_MS
 * later, closed (the spec's sequence), then a while alive.  Its record
 * holds after its exit too (rule B: until old and dead), until the
 * parent removes it.  Tells the parent on fd `told` once the file
 * exists.
 */
__attribute__((noreturn)) static void spec_writer(const char *b, int told)
{
	char rec[64];
	int fd = open(b, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (fd < 0 || write(told, "c", 1) != 1)
		_exit(2);
	sleep_ms(RACE_WRITE_MS);
	snprintf(rec, sizeof(rec), "pid=%ld\ntimestamp=%lld\n",
		 (long)getpid(), (long long)time(NULL));
	if (write(fd, rec, strlen(rec)) != (ssize_t)strlen(rec) || close(fd))
		_exit(2);
	sleep_ms(RACE_HOLD_MS);
	_exit(0);
}

/* One round: -1 set-up, else the ms after the create at which A was
 * held (0: never). */
static long race_round(struct pidlock *l, const char *b)
{
	int p[2], status;
	long at = 0;
	int64_t t0;
	pid_t w;
	char c;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	w = fork();
	if (w < 0)
		return -1;
	if (w == 0) {
		close(p[0]);
		spec_writer(b, p[1]);
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1) {
		close(p[0]);
		waitpid(w, NULL, 0);
		return -1;
	}
	close(p[0]);
	t0 = now_ms();
	/* The record is there from the create until our unlink below:
	 * every hold in between is a second holder. */
	while (waitpid(w, &status, WNOHANG) == 0) {
		int r = pidlock_acquire(l, 0);

		if (r == 0) {
			if (!at)
				at = (long)(now_ms() - t0) + 1;
			(void)pidlock_release(l);
		}
		sleep_ms(RACE_TRY_MS);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	return at;
}

static int spec_race(const char *a, const char *b, int rounds,
		     unsigned int grace_ms)
{
	struct pidlock *l;
	int doubles = 0;

	if (pidlock_new(&l, a, 0) < 0 ||
	    (grace_ms && pidlock_set_grace(l, grace_ms) < 0))
		die("pidlock_new");
	(void)unlink(b);
	for (int i = 0; i < rounds; i++) {
		long at = race_round(l, b);

		if (at < 0)
			die("spec-race round");
		if (at > 0) {
			doubles++;
			printf("round %d: held through A %ld ms after the "
			       "writer's create on B\n", i, at - 1);
		}
		/* The writer's file is gone; ours too, if we held. */
		(void)unlink(b);
		sleep_ms(50);
	}
	pidlock_free(l);
	printf("%s spec-race: %d rounds, %d held during a spec-only "
	       "writer's window on the other mount\n",
	       doubles ? "FAIL" : "ok", rounds, doubles);
	return doubles != 0;
}

/* $TMPDIR, else tmpfs: the tries on young files are many, and a lock
 * file's fdatasync(2) on a disk would make them few. */
static const char *base_dir(void)
{
	const char *t = getenv("TMPDIR");
	struct stat st;

	if (t && *t && strlen(t) < 40)
		return t;
	if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
	    access("/dev/shm", W_OK) == 0)
		return "/dev/shm";
	return "/tmp";
}

int main(int argc, char **argv)
{
	int failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((argc == 5 || argc == 6) && strcmp(argv[1], "spec-race") == 0)
		return spec_race(argv[2], argv[3], atoi(argv[4]),
				 argc == 6 ? (unsigned int)atoi(argv[5]) : 0);
	if (argc != 1) {
		fprintf(stderr,
			"usage: test-lease [spec-race A B ROUNDS [GRACE_MS]]\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s/test-lease.XXXXXX", base_dir());
	if (!mkdtemp(dir))
		die("mkdtemp");
	failed |= sigurg_inspect();
	failed |= sigurg_acquire();
	failed |= min_age();
	failed |= fifo_swap();
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return failed;
}
