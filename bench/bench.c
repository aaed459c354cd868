/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * make bench: cost of one uncontended acquire+release cycle against a
 * bare fslock-guard-style cycle and the classic peers, measured in the
 * same run, interleaved batch by batch so that machine noise hits all
 * alike; medians of per-batch means.  Then the hand-off latency from a
 * release to a blocked waiter, and from with-lock-ex to us (the price
 * of the grace period).
 *
 *   bench [-d DIR] [-b BATCHES] [-c CYCLES] [-r HANDOFF_ROUNDS]
 */
#define _GNU_SOURCE
#include "config.h"

#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_LIBBSD
#include <bsd/libutil.h>
#endif
#ifdef HAVE_LIBLOCKFILE
#include <lockfile.h>
#endif

#include <pidlock.h>

/* bench/Makemodule.am passes configure's path of with-lock-ex (empty when
 * there is none); the fallback is for a compile without it, as by make lint. */
#ifndef WITH_LOCK_EX_PATH
#define WITH_LOCK_EX_PATH ""
#endif

#define MAX_BATCHES 200

static char path[4200];

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((noreturn)) static void die(const char *what, int err)
{
	(void)fprintf(stderr, "bench: %s: %s\n", what, strerror(err));
	exit(1);
}

/* The baseline: fslock-guard's acquire and delete, nothing else. */
static void cycle_bare(void *arg)
{
	struct stat a, b;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);

	(void)arg;
	if (fd < 0)
		die("open", errno);
	if (flock(fd, LOCK_EX) < 0 || fstat(fd, &a) < 0 || lstat(path, &b) < 0)
		die("flock/stat", errno);
	if (a.st_ino != b.st_ino || unlink(path) < 0 || close(fd) < 0)
		die("unlink", errno);
}

static void cycle_pidlock(void *arg)
{
	int r = pidlock_acquire(arg, 0);

	if (r < 0 || (r = pidlock_release(arg)) < 0)
		die("pidlock", -r);
}

/* Where the time goes: publishing a written record the way a reader
 * can never see it empty (O_TMPFILE + linkat) against creating the name
 * and then writing (what a pidfile writer does). */
static const char record[] = "pid=1234\ntimestamp=1795255617\nlock=flock,ofd\n";

static void cycle_create_write(void *arg)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	(void)arg;
	if (fd < 0 || pwrite(fd, record, sizeof(record) - 1, 0) < 0 ||
	    unlink(path) < 0 || close(fd) < 0)
		die("create/write", errno);
}

static void cycle_tmpfile_link(void *arg)
{
	int fd = open(arg, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);

	if (fd < 0 || pwrite(fd, record, sizeof(record) - 1, 0) < 0 ||
	    linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH) < 0 ||
	    unlink(path) < 0 || close(fd) < 0)
		die("tmpfile/linkat", errno);
}

#ifdef HAVE_LIBLOCKFILE
static void cycle_lockfile(void *arg)
{
	(void)arg;
	if (lockfile_create(path, 0, 0) != L_SUCCESS)
		die("lockfile_create", errno);
	if (lockfile_remove(path) < 0)
		die("lockfile_remove", errno);
}
#endif

#ifdef HAVE_LIBBSD
static void cycle_bsd(void *arg)
{
	struct pidfh *ph = pidfile_open(path, 0644, NULL);

	(void)arg;
	if (!ph || pidfile_write(ph) < 0)
		die("pidfile_open/write", errno);
	if (pidfile_remove(ph) < 0)
		die("pidfile_remove", errno);
}
#endif

struct subject {
	const char *name;
	void (*cycle)(void *);
	void *arg;
	double mean[MAX_BATCHES];
	double median;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	double tmp[MAX_BATCHES];

	memcpy(tmp, v, sizeof(double) * (size_t)n);
	qsort(tmp, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

static void run_cycles(struct subject *s, int n, int batches, int cycles)
{
	for (int i = 0; i < n; i++)	/* warm up caches and dentries */
		for (int c = 0; c < cycles / 4; c++)
			s[i].cycle(s[i].arg);
	for (int b = 0; b < batches; b++) {
		for (int i = 0; i < n; i++) {
			double t0 = now_ns();

			for (int c = 0; c < cycles; c++)
				s[i].cycle(s[i].arg);
			s[i].mean[b] = (now_ns() - t0) / cycles / 1000.0;
		}
	}
	for (int i = 0; i < n; i++)
		s[i].median = median(s[i].mean, batches);
}

/* Hand-off: the time from a release to a blocked waiter holding. */
struct shared {
	double acquired;
};

/*
 * Hand-off between two warm processes that take turns: the holder
 * notes the time, releases, and waits for the other to take over before
 * it queues again (blocked in the kernel) for the next turn.  The
 * other, blocked all along, notes when it holds.  Median of the gaps.
 */
struct turns {
	double released;
	double lat[MAX_BATCHES];
	int n;
	int holder;		/* who holds now: 0 or 1, -1 at start */
};

static int bare_fd = -1;

static void bare_take(void *arg)
{
	(void)arg;
	for (;;) {
		struct stat a, b;

		bare_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (bare_fd < 0 || flock(bare_fd, LOCK_EX) < 0)
			die("bare take", errno);
		if (fstat(bare_fd, &a) == 0 && lstat(path, &b) == 0 &&
		    a.st_ino == b.st_ino)
			return;
		close(bare_fd);
	}
}

static void bare_give(void *arg)
{
	(void)arg;
	if (unlink(path) < 0 || close(bare_fd) < 0)
		die("bare give", errno);
}

static void lib_take(void *arg)
{
	int r = pidlock_acquire(arg, -1);

	if (r < 0)
		die("acquire", -r);
}

static void lib_give(void *arg)
{
	int r = pidlock_release(arg);

	if (r < 0)
		die("release", -r);
}

static void player(struct turns *t, int me, int rounds, void (*take)(void *),
		   void (*give)(void *), void *arg)
{
	for (;;) {
		take(arg);
		if (t->holder == !me && t->n < rounds)
			t->lat[t->n++] = (now_ns() - t->released) / 1000.0;
		__atomic_store_n(&t->holder, me, __ATOMIC_SEQ_CST);
		if (t->n >= rounds) {
			give(arg);
			return;
		}
		usleep(2000);	/* the other is blocked by now */
		t->released = now_ns();
		give(arg);
		while (__atomic_load_n(&t->holder, __ATOMIC_SEQ_CST) == me &&
		       t->n < rounds)
			usleep(100);
	}
}

static double handoff(int rounds, bool lib)
{
	struct turns *t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t kids[2];
	double m;

	if (t == MAP_FAILED)
		die("mmap", errno);
	if (rounds > MAX_BATCHES)
		rounds = MAX_BATCHES;
	t->holder = -1;
	for (int me = 0; me < 2; me++) {
		kids[me] = fork();
		if (kids[me] == 0) {
			struct pidlock *l = NULL;

			if (lib && pidlock_new(&l, path, PIDLOCK_NO_SYNC) < 0)
				_exit(1);
			player(t, me, rounds, lib ? lib_take : bare_take,
			       lib ? lib_give : bare_give, l);
			pidlock_free(l);
			_exit(0);
		}
	}
	waitpid(kids[0], NULL, 0);
	waitpid(kids[1], NULL, 0);
	m = median(t->lat, t->n);
	munmap(t, sizeof(*t));
	unlink(path);
	return m;
}

/* Until somebody holds a write lock on the file at path. */
static void wait_for_lock(void)
{
	for (;;) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		int r = fd < 0 ? -1 : fcntl(fd, F_OFD_GETLK, &fl);

		if (fd >= 0)
			close(fd);
		if (r == 0 && fl.l_type != F_UNLCK)
			return;
		usleep(200);
	}
}

/* with-lock-ex holds the file; a waiter of ours blocks on it.  From the
 * moment with-lock-ex is gone to the moment the waiter holds: when
 * with-lock-ex created the file just before (fresh: empty, young), the
 * grace period delays the takeover, in case a spec-only writer is about
 * to fill it; a leftover with our marker is taken at once. */
static double read_stamp(const char *file)
{
	double t = 0;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, &t, sizeof(t)) != (ssize_t)sizeof(t))
		die(file, errno);
	close(fd);
	return t;
}

/* The command with-lock-ex runs: hold for 50 ms, note the time, exit. */
static int stamp_exit(const char *file)
{
	double t;
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	usleep(50000);
	t = now_ns();
	if (fd < 0 || write(fd, &t, sizeof(t)) != (ssize_t)sizeof(t))
		return 1;
	return close(fd) < 0;
}

static double handoff_wle(const char *wle, int rounds, bool fresh)
{
	char self[4096], stamp[4300];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0)
		die("/proc/self/exe", errno);
	self[n] = '\0';
	(void)snprintf(stamp, sizeof(stamp), "%s.stamp", path);
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double lat[MAX_BATCHES];

	if (sh == MAP_FAILED)
		die("mmap", errno);
	if (rounds > MAX_BATCHES)
		rounds = MAX_BATCHES;
	for (int i = 0; i < rounds; i++) {
		pid_t holder, waiter;

		holder = fork();
		if (holder == 0) {
			/* with-lock-ex runs us again as its command: we note the
			 * time and exit, and the exit releases its lock. */
			execl(wle, wle, "-w", path, self, "--stamp-exit", stamp,
			      (char *)NULL);
			_exit(127);
		}
		wait_for_lock();
		waiter = fork();
		if (waiter == 0) {
			struct pidlock *w;

			if (pidlock_new(&w, path, PIDLOCK_NO_SYNC) < 0 ||
			    pidlock_acquire(w, -1) < 0)
				_exit(1);
			sh->acquired = now_ns();
			if (fresh)
				pidlock_release(w);
			else
				pidlock_close(w);
			pidlock_free(w);
			_exit(0);
		}
		waitpid(holder, NULL, 0);
		waitpid(waiter, NULL, 0);
		lat[i] = (sh->acquired - read_stamp(stamp)) / 1000.0;
		/* Each fresh round starts from with-lock-ex's own empty file:
		 * the waiter keeps that inode (an inode-blind locker's file)
		 * and marks it released, which is not what this case times. */
		if (fresh)
			unlink(path);
	}
	munmap(sh, sizeof(*sh));
	unlink(path);
	unlink(stamp);
	return median(lat, rounds);
}

/* The default, synced cycle on a disk-backed directory (/var/tmp). */
static void synced_on_disk(int batches, int cycles)
{
	char dtmpl[64] = "/var/tmp/pidlock-bench.XXXXXX", dpath[128];
	struct subject one;
	struct pidlock *l;

	if (!mkdtemp(dtmpl)) {
		printf("  /var/tmp: %s, synced disk cycle skipped\n", strerror(errno));
		return;
	}
	(void)snprintf(dpath, sizeof(dpath), "%s/bench.lock", dtmpl);
	if (pidlock_new(&l, dpath, 0) < 0)
		die("pidlock_new", ENOMEM);
	memset(&one, 0, sizeof(one));
	one.name = "pidlock, default (fdatasync), /var/tmp";
	one.cycle = cycle_pidlock;
	one.arg = l;
	run_cycles(&one, 1, batches < 11 ? batches : 11, cycles / 100 + 1);
	printf("  %-38s %8.2f us\n", one.name, one.median);
	pidlock_free(l);
	rmdir(dtmpl);
}

static void add(struct subject *s, int *n, const char *name,
		void (*cycle)(void *), void *arg)
{
	memset(&s[*n], 0, sizeof(s[*n]));
	s[*n].name = name;
	s[*n].cycle = cycle;
	s[*n].arg = arg;
	(*n)++;
}

int main(int argc, char **argv)
{
	const char *dir = "/dev/shm";
	int batches = 31, cycles = 2000, rounds = 31, opt, n = 0;
	struct subject s[8];
	struct pidlock *fast, *synced;
	char tmpl[4096];
	/* A variable, not the macro, so that clang does not call the branch
	 * this configuration leaves out unreachable code. */
	const char *wle = WITH_LOCK_EX_PATH;

	if (argc == 3 && strcmp(argv[1], "--stamp-exit") == 0)
		return stamp_exit(argv[2]);
	while ((opt = getopt(argc, argv, "d:b:c:r:")) != -1) {
		switch (opt) {
		case 'd': dir = optarg; break;
		case 'b': batches = atoi(optarg); break;
		case 'c': cycles = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		default:
			(void)fprintf(stderr, "usage: bench [-d DIR] [-b BATCHES] [-c CYCLES] [-r ROUNDS]\n");
			return 64;
		}
	}
	if (batches < 1 || batches > MAX_BATCHES || cycles < 1 || rounds < 1)
		return 64;
	(void)snprintf(tmpl, sizeof(tmpl), "%s/pidlock-bench.XXXXXX", dir);
	if (!mkdtemp(tmpl))
		die(tmpl, errno);
	(void)snprintf(path, sizeof(path), "%s/bench.lock", tmpl);
	if (pidlock_new(&fast, path, PIDLOCK_NO_SYNC) < 0 ||
	    pidlock_new(&synced, path, 0) < 0)
		die("pidlock_new", ENOMEM);

	printf("libpidlock %s benchmark in %s: %d batches x %d cycles, "
	       "median of batch means\n\n", PACKAGE_VERSION, dir, batches, cycles);
	add(s, &n, "bare flock cycle (baseline)", cycle_bare, NULL);
	add(s, &n, "pidlock, PIDLOCK_NO_SYNC", cycle_pidlock, fast);
#ifdef HAVE_LIBLOCKFILE
	add(s, &n, "liblockfile create/remove", cycle_lockfile, NULL);
#else
	printf("liblockfile: not found at configure time, skipped\n");
#endif
#ifdef HAVE_LIBBSD
	add(s, &n, "libbsd pidfile open/write/remove", cycle_bsd, NULL);
#else
	printf("libbsd: not found at configure time, skipped\n");
#endif
	add(s, &n, "  part: create, write, unlink, close", cycle_create_write, NULL);
	add(s, &n, "  part: O_TMPFILE, write, linkat, ...", cycle_tmpfile_link, tmpl);
	run_cycles(s, n, batches, cycles);
	for (int i = 0; i < n; i++)
		printf("  %-38s %8.2f us  %5.2fx baseline\n", s[i].name,
		       s[i].median, s[i].median / s[0].median);
	printf("  (ratios: pidlock/liblockfile %.2f", s[1].median / s[2].median);
#ifdef HAVE_LIBBSD
	printf(", pidlock/libbsd %.2f", s[1].median / s[3].median);
#endif
	printf(")\n");

	/* The synced cycle: on tmpfs fdatasync is free; on a disk it is a
	 * device flush, so fewer, separate rounds there. */
	n = 0;
	add(s, &n, "pidlock, default (fdatasync), same dir", cycle_pidlock, synced);
	run_cycles(s, n, batches < 11 ? batches : 11, cycles / 20 + 1);
	printf("  %-38s %8.2f us\n", s[0].name, s[0].median);
	synced_on_disk(batches, cycles);

	printf("\nhand-off, median of %d rounds:\n", rounds);
	{
		double bare = handoff(rounds, false);
		double ours = handoff(rounds, true);

		printf("  %-52s %8.1f us\n", "bare flock cycle: release -> waiter holds (baseline)",
		       bare);
		printf("  %-52s %8.1f us  %5.2fx baseline\n",
		       "pidlock: release -> blocked waiter holds", ours, ours / bare);
	}
	if (wle[0]) {
	printf("  %-52s %8.1f us\n", "with-lock-ex exits -> waiter holds (our leftover)",
	       handoff_wle(wle, rounds / 3 + 1, false));
	printf("  %-52s %8.1f us\n", "with-lock-ex exits -> waiter holds (fresh empty file)",
	       handoff_wle(wle, rounds / 3 + 1, true));
	printf("  (the fresh case waits out the %u ms grace, counted from the file's mtime)\n",
	       PIDLOCK_DEFAULT_GRACE_MS);
	} else {
		printf("  with-lock-ex: not found at configure time, skipped\n");
	}
	pidlock_free(fast);
	pidlock_free(synced);
	unlink(path);
	rmdir(tmpl);
	return 0;
}
