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
 *
 * Each prints one line of counts and exits 1 if anything went wrong, 0
 * otherwise (2: usage or set-up).
 */
#define _GNU_SOURCE
#include <errno.h>
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

/* A waiter that is stuck this long is an error, not a wait. */
#define STUCK_MS 20000
#define MAX_LOCKERS 16
#define ERR_SLOTS 134	/* errno values counted by name, 0 .. 133 */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

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

static int usage(void)
{
	fprintf(stderr, "usage: dlock handoff A B ROUNDS\n"
			"       dlock mix SECONDS HOLD_MS MARKER PATH...\n"
			"       dlock ofdkeep A B ROUNDS\n");
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
	if (argc >= 6 && strcmp(argv[1], "mix") == 0)
		return mix(atoi(argv[2]), atoi(argv[3]), argv[4], argc - 5,
			   argv + 5);
	return usage();
}
