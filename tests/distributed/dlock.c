/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The library's side of make check-distributed (tests/distributed/README):
 * lockers on two mounts of one shared volume, each mount a "host".
 *
 *   dlock handoff A B ROUNDS
 *	A holder on A releases while a waiter on B blocks in
 *	pidlock_acquire(-1).  Each round: the waiter must get the lock,
 *	and get no error.
 *   dlock mix SECONDS HOLD_MS MARKER PATH...
 *	One library locker per PATH (name each mount's path twice for two
 *	per mount), taking turns for SECONDS with HOLD_MS inside.  Inside,
 *	each claims MARKER with mkdir(2) (on a local file system, not the
 *	volume): finding it claimed is a double hold.  Errors of acquire or
 *	release are counted by name.  A holder that sees its own descriptor
 *	unlinked (st_nlink 0) inside is counted too: it holds a lock file
 *	that is no longer the lock.
 *   dlock ofdkeep A B ROUNDS
 *	One PIDLOCK_OFD_ONLY|PIDLOCK_KEEP_FILE handle on A, acquired and
 *	released ROUNDS times (from the second round it takes over the
 *	kept file); while it holds, a handle with the same flags on B must
 *	be refused (-EWOULDBLOCK) every time.
 *   dlock killholder A B ROUNDS
 *	A holder on A holds; a waiter on B, refused by a try first, blocks
 *	in pidlock_acquire() (HANG_GUARD_MS: a hang guard, not a bound);
 *	the holder is killed with SIGKILL.  Each round: the waiter must get
 *	the lock with no error, and inside, the path must name its
 *	descriptor's file (a new open of the path, which goes to the
 *	server, and st_nlink 1).  The latency from the kill to the grant
 *	is printed, median and maximum: information, never a verdict.
 *   dlock killcmd B CMD...
 *	One such round with CMD as the holder (pidlock(1) PATH-on-A ...):
 *	CMD runs in a process group of its own with fd 3 open for writing,
 *	and writes a byte to it once it holds; the whole group is killed.
 *   dlock killclient A B PID
 *	One round of a crashed host: the holder on A stays alive, PID (the
 *	FUSE client serving A; run.sh checks it is ours) is killed instead.
 *	The holder is killed after the waiter's verdict.
 *
 * Each prints one line of counts and exits 1 if anything went wrong, 0
 * otherwise (2: usage or set-up).
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pidlock.h>

#include "../msclock.h"

/* A waiter that is stuck this long is an error, not a wait. */
#define STUCK_MS 20000
/* The kill parts' waiter: a hang guard only.  A dead client's locks are
 * freed by the server when its connection drops, in well under this. */
#define HANG_GUARD_MS 60000
/* The waiter's try, refused, reports the lock held: a distinct status. */
#define WAITER_NOT_REFUSED 0x7f
/* The path did not name the waiter's descriptor inside its hold. */
#define WAITER_WRONG_FILE 0x7e
#define MAX_LOCKERS 16
#define ERR_SLOTS 134	/* errno values counted by name, 0 .. 133 */

static int usage(void);

static const char *err_name(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "?";
}

static struct pidlock *new_lock(const char *path, unsigned int flags)
{
	struct pidlock *l;
	int r = pidlock_new(&l, path, flags);

	if (r < 0) {
		fprintf(stderr, "dlock: pidlock_new %s: %s\n", path,
			err_name(-r));
		exit(2);
	}
	return l;
}

/* --- handoff ------------------------------------------------------------ */
/* The waiter: its exit status is 0, or the errno its acquire returned. */
static int waiter(const char *path)
{
	struct pidlock *l = new_lock(path, 0);
	int r = pidlock_acquire(l, STUCK_MS);

	if (r == 0)
		r = pidlock_release(l);
	pidlock_free(l);
	return r < 0 ? (-r & 0x7f) : 0;
}

static int handoff(const char *a, const char *b, int rounds)
{
	struct pidlock *l = new_lock(a, 0);
	int bad = 0;

	for (int i = 0; i < rounds; i++) {
		int st, r = pidlock_acquire(l, STUCK_MS);
		pid_t pid;

		if (r < 0) {
			printf("round %d: holder on A: %s\n", i, err_name(-r));
			bad++;
			continue;
		}
		pid = fork();
		if (pid < 0)
			return 2;
		if (pid == 0)
			_exit(waiter(b));
		/* Staging, not a measurement: let the waiter get into its
		 * wait before the release it must survive. */
		sleep_ms(300);
		r = pidlock_release(l);
		if (r < 0) {
			printf("round %d: release on A: %s\n", i, err_name(-r));
			bad++;
		}
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
			return 2;
		if (WEXITSTATUS(st) != 0) {
			printf("round %d: waiter on B: %s\n", i,
			       err_name(WEXITSTATUS(st)));
			bad++;
		}
	}
	pidlock_free(l);
	printf("handoff: %d rounds, %d failed\n", rounds, bad);
	return bad ? 1 : 0;
}

/* --- mix ---------------------------------------------------------------- */
struct tally {
	long turns, doubles, unlinked, errors;
	long by_errno[ERR_SLOTS];
};

static void count_error(struct tally *t, int r)
{
	t->errors++;
	t->by_errno[-r < ERR_SLOTS ? -r : 0]++;
}

/* Inside the lock: claim the marker, hold, give it back. */
static void inside(struct pidlock *l, const char *marker, int hold_ms,
		   struct tally *t)
{
	struct stat st;
	bool mine = mkdir(marker, 0700) == 0;

	if (!mine)
		t->doubles++;
	if (fstat(pidlock_fd(l), &st) == 0 && st.st_nlink == 0)
		t->unlinked++;
	sleep_ms(hold_ms);
	if (mine)
		(void)rmdir(marker);
}

static void locker(const char *path, const char *marker, int64_t end,
		   int hold_ms, struct tally *t)
{
	struct pidlock *l = new_lock(path, 0);

	while (now_ms() < end) {
		int r = pidlock_acquire(l, STUCK_MS);

		if (r < 0) {
			count_error(t, r);
			continue;
		}
		t->turns++;
		inside(l, marker, hold_ms, t);
		r = pidlock_release(l);
		if (r < 0)
			count_error(t, r);
	}
	pidlock_free(l);
}

static void print_errors(const struct tally *t)
{
	for (int e = 0; e < ERR_SLOTS; e++)
		if (t->by_errno[e])
			printf(" %s=%ld", e ? err_name(e) : "other",
			       t->by_errno[e]);
}

static int mix(int seconds, int hold_ms, const char *marker, int n,
	       char **paths)
{
	struct tally *t = mmap(NULL, sizeof(*t) * (size_t)n,
			       PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct tally sum = { 0 };
	int64_t end = now_ms() + seconds * 1000LL;

	if (t == MAP_FAILED || n > MAX_LOCKERS)
		return 2;
	memset(t, 0, sizeof(*t) * (size_t)n);
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 2;
		if (pid == 0) {
			locker(paths[i], marker, end, hold_ms, &t[i]);
			_exit(0);
		}
	}
	while (wait(NULL) > 0)
		;
	for (int i = 0; i < n; i++) {
		sum.turns += t[i].turns;
		sum.doubles += t[i].doubles;
		sum.unlinked += t[i].unlinked;
		sum.errors += t[i].errors;
		for (int e = 0; e < ERR_SLOTS; e++)
			sum.by_errno[e] += t[i].by_errno[e];
	}
	printf("mix: %d lockers, %d s, %d ms holds: %ld turns, %ld double "
	       "holds, %ld unlinked inside, %ld errors", n, seconds, hold_ms,
	       sum.turns, sum.doubles, sum.unlinked, sum.errors);
	print_errors(&sum);
	printf("\n");
	return sum.doubles || sum.errors || sum.unlinked || !sum.turns;
}

/* --- ofdkeep ------------------------------------------------------------ */
static int ofdkeep(const char *a, const char *b, int rounds)
{
	const unsigned int flags = PIDLOCK_OFD_ONLY | PIDLOCK_KEEP_FILE;
	struct pidlock *la = new_lock(a, flags), *lb = new_lock(b, flags);
	int granted = 0, errors = 0;

	for (int i = 0; i < rounds; i++) {
		int r = pidlock_acquire(la, STUCK_MS);

		if (r < 0) {
			printf("round %d: acquire on A: %s\n", i, err_name(-r));
			errors++;
			continue;
		}
		r = pidlock_acquire(lb, 0);
		if (r == 0) {
			granted++;
			(void)pidlock_release(lb);
		} else if (r != -EWOULDBLOCK) {
			printf("round %d: try on B: %s\n", i, err_name(-r));
			errors++;
		}
		r = pidlock_release(la);
		if (r < 0) {
			printf("round %d: release on A: %s\n", i, err_name(-r));
			errors++;
		}
	}
	pidlock_free(la);
	pidlock_free(lb);
	printf("ofdkeep: %d rounds, B granted while A held: %d, errors %d\n",
	       rounds, granted, errors);
	return granted || errors;
}

/* --- killholder, killcmd, killclient ----------------------------------- */
static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* What the waiter saw, in shared memory. */
struct kill_round {
	int64_t kill_us;	/* set by the parent just before the kill */
	int64_t got_us;		/* set by the waiter when its acquire returned */
};

/* 0 when a new open of the path (sent to the server) names the file the
 * descriptor holds and that file has one link; WAITER_WRONG_FILE, with
 * the reason printed, otherwise. */
static int path_names_fd(struct pidlock *l)
{
	const char *path = pidlock_path(l);
	struct stat held, now;
	int fd;

	if (fstat(pidlock_fd(l), &held) < 0) {
		printf("  waiter: fstat of its descriptor: %s\n",
		       err_name(errno));
		return WAITER_WRONG_FILE;
	}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		printf("  waiter: open %s inside: %s\n", path, err_name(errno));
		return WAITER_WRONG_FILE;
	}
	if (fstat(fd, &now) < 0) {
		printf("  waiter: fstat of the path: %s\n", err_name(errno));
		(void)close(fd);
		return WAITER_WRONG_FILE;
	}
	(void)close(fd);
	if (now.st_dev != held.st_dev || now.st_ino != held.st_ino ||
	    held.st_nlink != 1) {
		printf("  waiter: the path names inode %lu, its descriptor "
		       "inode %lu with %lu links\n", (unsigned long)now.st_ino,
		       (unsigned long)held.st_ino,
		       (unsigned long)held.st_nlink);
		return WAITER_WRONG_FILE;
	}
	return 0;
}

/*
 * The waiter on B: a try must be refused (the holder holds), then it
 * says so on `ready` and waits.  Exit status: 0, WAITER_NOT_REFUSED,
 * WAITER_WRONG_FILE, or the errno of the acquire or release.
 */
static int kill_waiter(const char *path, int ready, struct kill_round *kr)
{
	struct pidlock *l = new_lock(path, 0);
	int r = pidlock_acquire(l, 0);

	if (r == 0) {
		(void)pidlock_release(l);
		return WAITER_NOT_REFUSED;
	}
	if (r == -EWOULDBLOCK && write(ready, "w", 1) != 1)
		r = -errno;
	if (r == -EWOULDBLOCK) {
		r = pidlock_acquire(l, HANG_GUARD_MS);
		kr->got_us = now_us();
	}
	if (r == 0) {
		int wrong = path_names_fd(l);

		r = pidlock_release(l);
		if (wrong)
			r = -wrong;
	}
	pidlock_free(l);
	return -r & 0x7f;
}

/* The library holder on A: holds, says so on fd 3, and waits for its
 * SIGKILL.  Exit status: the errno of its acquire. */
static int lib_holder(const char *path)
{
	struct pidlock *l = new_lock(path, 0);
	int r = pidlock_acquire(l, HANG_GUARD_MS);

	if (r < 0)
		return -r & 0x7f;
	if (write(3, "h", 1) != 1)
		return 2;
	for (;;)
		pause();
}

/* A child in a process group of its own, with the write end of a pipe
 * as fd 3; the parent reads a byte from *readyp once the child holds
 * (end of file: it failed).  cmd, or without one the library holder on
 * path. */
static pid_t start_holder(const char *path, char **cmd, int *readyp)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		/* dup2 clears close-on-exec: CMD and its children keep
		 * fd 3. */
		if (setpgid(0, 0) < 0 || dup2(p[1], 3) < 0)
			_exit(2);
		if (cmd) {
			execvp(cmd[0], cmd);
			_exit(127);
		}
		_exit(lib_holder(path));
	}
	(void)close(p[1]);
	*readyp = p[0];
	return pid;
}

/* One byte from fd, or false at end of file (the writer exited). */
static bool ready_byte(int fd)
{
	char c;
	ssize_t n;

	while ((n = read(fd, &c, 1)) < 0 && errno == EINTR)
		;
	(void)close(fd);
	return n == 1;
}

static void say_waiter(int round, int st)
{
	if (st == WAITER_NOT_REFUSED)
		printf("round %d: waiter on B: its try got the lock while "
		       "the holder held\n", round);
	else if (st == WAITER_WRONG_FILE)
		printf("round %d: waiter on B: the path did not name its "
		       "descriptor inside\n", round);
	else
		printf("round %d: waiter on B: %s\n", round, err_name(st));
}

/*
 * One round: holder on A (path, or cmd), waiter on B, then `victim`
 * killed (-pgid: the holder's group; a pid: a FUSE client).  0 and the
 * latency in *lat_us, or 1 with the reason printed.  The holder's group
 * is killed in the end whatever happened.
 */
static int kill_round(int round, const char *a, char **cmd, const char *b,
		      pid_t client, int64_t *lat_us)
{
	struct kill_round *kr = mmap(NULL, sizeof(*kr), PROT_READ |
				     PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				     -1, 0);
	int hready, wready[2], st, bad = 1;
	pid_t holder, waiter_pid;

	if (kr == MAP_FAILED)
		exit(2);
	holder = start_holder(a, cmd, &hready);
	if (holder < 0)
		exit(2);
	if (!ready_byte(hready)) {
		if (waitpid(holder, &st, 0) == holder && WIFEXITED(st))
			printf("round %d: holder on A: %s\n", round,
			       err_name(WEXITSTATUS(st)));
		else
			printf("round %d: holder on A did not start\n", round);
		return 1;
	}
	if (pipe2(wready, O_CLOEXEC) < 0)
		exit(2);
	waiter_pid = fork();
	if (waiter_pid < 0)
		exit(2);
	if (waiter_pid == 0) {
		(void)close(wready[0]);
		_exit(kill_waiter(b, wready[1], kr));
	}
	(void)close(wready[1]);
	if (ready_byte(wready[0])) {
		/* Staging, not a measurement: let the waiter get into its
		 * wait before the kill it must survive. */
		sleep_ms(300);
		kr->kill_us = now_us();
		(void)kill(client ? client : -holder, SIGKILL);
	}
	if (waitpid(waiter_pid, &st, 0) < 0 || !WIFEXITED(st))
		exit(2);
	if (WEXITSTATUS(st) == 0) {
		bad = 0;
		*lat_us = kr->got_us - kr->kill_us;
	} else {
		say_waiter(round, WEXITSTATUS(st));
	}
	(void)kill(-holder, SIGKILL);
	(void)waitpid(holder, NULL, 0);
	(void)munmap(kr, sizeof(*kr));
	return bad;
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return (a > b) - (a < b);
}

/* Latencies from kill to grant: information, not a verdict. */
static void print_latency(const char *what, int64_t *lat, int n, int bad)
{
	printf("%s: %d round%s, %d failed", what, n + bad,
	       n + bad == 1 ? "" : "s", bad);
	if (n == 1 && bad == 0) {
		printf("; kill to grant: %.1f ms\n",
		       (double)lat[0] / 1000.0);
		return;
	}
	if (n > 0) {
		int64_t median, max;

		qsort(lat, (size_t)n, sizeof(*lat), cmp_i64);
		median = lat[n / 2];
		max = lat[n - 1];
		printf("; kill to grant: median %.1f ms, max %.1f ms",
		       (double)median / 1000.0, (double)max / 1000.0);
	}
	printf("\n");
}

/*
 * A path of its own each round (BASE.I): a path the last waiter removed
 * through B keeps its old entry in A's cache for a second, and the next
 * holder on A would wait that out (handoff covers that case).  One
 * round, or no path (killcmd's holder): BASE as it is.
 */
static const char *round_path(char *buf, size_t size, const char *base,
			      int rounds, int i)
{
	int n;

	if (!base || rounds == 1)
		return base;
	n = snprintf(buf, size, "%s.%d", base, i);
	if (n < 0 || (size_t)n >= size) {
		fprintf(stderr, "dlock: %s: path too long\n", base);
		exit(2);
	}
	return buf;
}

/* ROUNDS rounds (killholder), or one with CMD as the holder (killcmd) or
 * with the client killed instead of the holder (killclient). */
static int killholder(const char *a, const char *b, int rounds, char **cmd,
		      pid_t client)
{
	int64_t lat[64];
	int n = 0, bad = 0;

	if (rounds < 1 || rounds > 64)
		return usage();
	for (int i = 0; i < rounds; i++) {
		char pa[4096], pb[4096];
		const char *ra = round_path(pa, sizeof(pa), a, rounds, i);
		const char *rb = round_path(pb, sizeof(pb), b, rounds, i);

		if (kill_round(i, ra, cmd, rb, client, &lat[n]) == 0)
			n++;
		else
			bad++;
	}
	print_latency(client ? "killclient" : cmd ? "killcmd" : "killholder",
		      lat, n, bad);
	return bad ? 1 : 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: dlock handoff A B ROUNDS\n"
			"       dlock mix SECONDS HOLD_MS MARKER PATH...\n"
			"       dlock ofdkeep A B ROUNDS\n"
			"       dlock killholder A B ROUNDS\n"
			"       dlock killcmd B CMD...\n"
			"       dlock killclient A B PID\n");
	return 2;
}

int main(int argc, char **argv)
{
	/* Counts go through a pipe to run.sh: no buffer copied by fork. */
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 5 && strcmp(argv[1], "handoff") == 0)
		return handoff(argv[2], argv[3], atoi(argv[4]));
	if (argc == 5 && strcmp(argv[1], "ofdkeep") == 0)
		return ofdkeep(argv[2], argv[3], atoi(argv[4]));
	if (argc == 5 && strcmp(argv[1], "killholder") == 0)
		return killholder(argv[2], argv[3], atoi(argv[4]), NULL, 0);
	if (argc >= 4 && strcmp(argv[1], "killcmd") == 0)
		return killholder(NULL, argv[2], 1, argv + 3, 0);
	if (argc == 5 && strcmp(argv[1], "killclient") == 0 &&
	    atoi(argv[4]) > 1)
		return killholder(argv[2], argv[3], 1, NULL,
				  (pid_t)atoi(argv[4]));
	if (argc >= 6 && strcmp(argv[1], "mix") == 0)
		return mix(atoi(argv[2]), atoi(argv[3]), argv[4], argc - 5,
			   argv + 5);
	return usage();
}
