/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The uncontended acquire+release cycle of each locker, interleaved
 * batch by batch with the bare cycle; medians of per-batch means.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef HAVE_LIBBSD
#include <bsd/libutil.h>
#endif
#ifdef HAVE_LIBLOCKFILE
#include <lockfile.h>
#endif

#include <pidlock.h>

#include "bench.h"

struct subject {
	const char *name;	/* for people */
	const char *key;	/* for the CSV file and the plot */
	void (*cycle)(void *);
	void *arg;
	int cycles;		/* per batch; 0: the run's */
	double *mean;		/* one per batch, microseconds */
	double median;
};

static void cycle_bare(void *arg)
{
	(void)arg;
	bench_bare_give(bench_bare_take());
}

/* The same on another path (the synced cycle's directory). */
static void cycle_bare_at(void *arg)
{
	bench_bare_give_at(arg, bench_bare_take_at(arg));
}

static void cycle_pidlock(void *arg)
{
	int r = pidlock_acquire(arg, 0);

	if (r < 0 || (r = pidlock_release(arg)) < 0)
		bench_die("pidlock", -r);
}

/* Where the time goes: creating the name and then writing (what a
 * pidfile writer does) against publishing a written record (O_TMPFILE +
 * linkat), which a reader can never see empty. */
static const char record[] = "pid=1234\ntimestamp=1795255617\nlock=flock,ofd\n";

static void cycle_create_write(void *arg)
{
	int fd = open(bench_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	(void)arg;
	if (fd < 0 || pwrite(fd, record, sizeof(record) - 1, 0) < 0 ||
	    unlink(bench_path) < 0 || close(fd) < 0)
		bench_die("create/write", errno);
}

static void cycle_tmpfile_link(void *arg)
{
	int fd = open(bench_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);

	(void)arg;
	if (fd < 0 || pwrite(fd, record, sizeof(record) - 1, 0) < 0 ||
	    linkat(fd, "", AT_FDCWD, bench_path, AT_EMPTY_PATH) < 0 ||
	    unlink(bench_path) < 0 || close(fd) < 0)
		bench_die("tmpfile/linkat", errno);
}

/*
 * The floor: the nine calls the protocol needs, with nothing around
 * them (no content formatting, no checks of the answers beyond
 * failure).  The bare cycle plus a write of the record, the OFD lock
 * and the publishing rename; what pidlock spends above this is the
 * library's own.
 */
/* As lib/create.c does where the C library has no wrapper (musl). */
static int rename_noreplace(const char *from, const char *to)
{
#ifdef HAVE_RENAMEAT2
	return renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
#else
	return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to,
			    1U /* RENAME_NOREPLACE */);
#endif
}

static void cycle_floor(void *arg)
{
	static unsigned int n;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct stat st, lst;
	char tmp[4300];
	int fd;

	(void)arg;
	snprintf(tmp, sizeof(tmp), "%s/.floor-tmp-%u", bench_dir, n++);
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		  0644);
	if (fd < 0 || pwrite(fd, record, sizeof(record) - 1, 0) < 0 ||
	    flock(fd, LOCK_EX | LOCK_NB) < 0 || fcntl(fd, F_OFD_SETLK, &fl) < 0 ||
	    fstat(fd, &st) < 0 ||
	    rename_noreplace(tmp, bench_path) < 0 ||
	    lstat(bench_path, &lst) < 0 || lst.st_ino != st.st_ino ||
	    unlink(bench_path) < 0 || close(fd) < 0)
		bench_die("floor", errno);
}

#ifdef HAVE_LIBLOCKFILE
static void cycle_lockfile(void *arg)
{
	(void)arg;
	if (lockfile_create(bench_path, 0, 0) != L_SUCCESS)
		bench_die("lockfile_create", errno);
	if (lockfile_remove(bench_path) < 0)
		bench_die("lockfile_remove", errno);
}
#endif

#ifdef HAVE_LIBBSD
static void cycle_bsd(void *arg)
{
	struct pidfh *ph = pidfile_open(bench_path, 0644, NULL);

	(void)arg;
	if (!ph || pidfile_write(ph) < 0)
		bench_die("pidfile_open/write", errno);
	if (pidfile_remove(ph) < 0)
		bench_die("pidfile_remove", errno);
}
#endif

static void run_batches(struct subject *s, int n, int batches, int cycles)
{
	for (int i = 0; i < n; i++)	/* warm up caches and dentries */
		for (int c = 0; c < (s[i].cycles ? s[i].cycles : cycles) / 4; c++)
			s[i].cycle(s[i].arg);
	for (int b = 0; b < batches; b++) {
		for (int i = 0; i < n; i++) {
			int k = s[i].cycles ? s[i].cycles : cycles;
			double t0 = bench_now_ns();

			for (int c = 0; c < k; c++)
				s[i].cycle(s[i].arg);
			s[i].mean[b] = (bench_now_ns() - t0) / k / 1000.0;
		}
	}
	for (int i = 0; i < n; i++)
		s[i].median = bench_median(s[i].mean, batches);
}

static void add(struct subject *s, int *n, const char *name, const char *key,
		void (*cycle)(void *), void *arg)
{
	memset(&s[*n], 0, sizeof(s[*n]));
	s[*n].name = name;
	s[*n].key = key;
	s[*n].cycle = cycle;
	s[*n].arg = arg;
	(*n)++;
}

static struct pidlock *new_lock(const char *path, unsigned int flags)
{
	struct pidlock *l;
	int r = pidlock_new(&l, path, flags);

	if (r < 0)
		bench_die("pidlock_new", -r);
	return l;
}

static int add_peers(struct subject *s, int n)
{
	(void)s;	/* unused where neither peer was found */
#ifdef HAVE_LIBLOCKFILE
	add(s, &n, "liblockfile create/remove", "liblockfile",
	    cycle_lockfile, NULL);
#else
	printf("  liblockfile: not found at configure time, skipped\n");
#endif
#ifdef HAVE_LIBBSD
	add(s, &n, "libbsd pidfile open/write/remove", "libbsd",
	    cycle_bsd, NULL);
#else
	printf("  libbsd: not found at configure time, skipped\n");
#endif
	return n;
}

static void print(const struct subject *s, int n, FILE *csv)
{
	for (int i = 0; i < n; i++) {
		printf("  %-40s %8.2f us  %5.2fx baseline\n", s[i].name,
		       s[i].median, s[i].median / s[0].median);
		if (csv)
			fprintf(csv, "%s,%.3f,%.4f\n", s[i].key, s[i].median,
				s[i].median / s[0].median);
	}
}

/* The cycle where users' locks live, with each sync setting: default
 * flags (no sync since 1.3.0), and PIDLOCK_SYNC, free on tmpfs and a
 * device flush on a disk (ext4 under /var/tmp here); fewer cycles
 * there.  Against the bare cycle in the same directory, batch by batch. */
static void synced(const struct bench_opts *o, const char *dir, FILE *csv)
{
	char dtmpl[4200], dpath[4300], kdir[4300], kpath[4400], fs[64];
	struct subject s[5];
	static double mean[5][BENCH_MAX_SAMPLES];
	int n = 0, batches = o->batches < 31 ? o->batches : 31;
	struct pidlock *fast, *dflt, *kept, *slow;

	snprintf(dtmpl, sizeof(dtmpl), "%s/pidlock-bench.XXXXXX", dir);
	if (!mkdtemp(dtmpl)) {
		printf("  %s: %s, synced cycle skipped\n", dir, strerror(errno));
		return;
	}
	snprintf(dpath, sizeof(dpath), "%s/bench.lock", dtmpl);
	fast = new_lock(dpath, PIDLOCK_NO_SYNC);
	dflt = new_lock(dpath, 0);
	/* In a directory of its own: the flag's inotify watch is on the
	 * lock's directory, and would queue every other row's opens. */
	snprintf(kdir, sizeof(kdir), "%s/kept", dtmpl);
	if (mkdir(kdir, 0700) < 0)
		bench_die(kdir, errno);
	snprintf(kpath, sizeof(kpath), "%s/bench.lock", kdir);
	kept = new_lock(kpath, PIDLOCK_KEEP_IF_USED);
	slow = new_lock(dpath, PIDLOCK_SYNC);
	add(s, &n, "  bare flock cycle", "bare", cycle_bare_at, dpath);
	add(s, &n, "  pidlock, PIDLOCK_NO_SYNC", "nosync", cycle_pidlock, fast);
	add(s, &n, "  pidlock, default flags", "default", cycle_pidlock, dflt);
	add(s, &n, "  pidlock, PIDLOCK_KEEP_IF_USED", "keep-if-used",
	    cycle_pidlock, kept);
	add(s, &n, "  pidlock, PIDLOCK_SYNC (fdatasync)", "fdatasync",
	    cycle_pidlock, slow);
	for (int i = 0; i < n; i++)
		s[i].mean = mean[i];
	s[0].cycles = s[1].cycles = s[2].cycles = s[3].cycles =
		o->cycles / 10 + 1;
	run_batches(s, n, batches, o->cycles / 100 + 1);
	printf("  in %s (%s), %d batches, median of batch means:\n", dir,
	       bench_fstype(dir, fs, sizeof(fs)), batches);
	for (int i = 0; i < n; i++) {
		printf("  %-40s %8.2f us  %5.2fx bare there\n", s[i].name,
		       s[i].median, s[i].median / s[0].median);
		if (csv)
			fprintf(csv, "%s,%s,%.3f\n", dir, s[i].key, s[i].median);
	}
	pidlock_free(fast);
	pidlock_free(dflt);
	pidlock_free(kept);
	pidlock_free(slow);
	if (rmdir(kdir) < 0)
		bench_die(kdir, errno);
	if (rmdir(dtmpl) < 0)
		bench_die(dtmpl, errno);
}

/*
 * A shared acquire that joins a holder, and its release (not the last
 * one out), on a path of its own: every look at /proc/locks that
 * writers first costs a reader is in it (doc/protocol.md, 4b).
 */
static char shared_path[4300];

static struct pidlock *shared_holder(void)
{
	struct pidlock *l;
	int r;

	snprintf(shared_path, sizeof(shared_path), "%s.shared", bench_path);
	l = new_lock(shared_path, PIDLOCK_SHARED | PIDLOCK_NO_SYNC);
	r = pidlock_acquire(l, 0);
	if (r < 0)
		bench_die("shared holder", -r);
	return l;
}

void bench_cycles(const struct bench_opts *o)
{
	struct subject s[10];
	double (*mean)[BENCH_MAX_SAMPLES] = calloc(10, sizeof(*mean));
	struct pidlock *fast = new_lock(bench_path, PIDLOCK_NO_SYNC);
	struct pidlock *holder = shared_holder();
	struct pidlock *joiner = new_lock(shared_path,
					  PIDLOCK_SHARED | PIDLOCK_NO_SYNC);
	FILE *csv = bench_csv(o, "cycle.csv", "subject,median_us,ratio");
	int n = 0, r;

	if (!mean)
		bench_die("calloc", ENOMEM);
	printf("\nuncontended acquire+release in %s, %d batches x %d cycles, "
	       "median of batch means:\n", bench_where, o->batches, o->cycles);
	add(s, &n, "bare flock cycle (baseline)", "bare", cycle_bare, NULL);
	add(s, &n, "pidlock, PIDLOCK_NO_SYNC", "pidlock", cycle_pidlock, fast);
	add(s, &n, "pidlock shared, joining a holder", "shared-join",
	    cycle_pidlock, joiner);
	n = add_peers(s, n);
	add(s, &n, "  floor: the 9 calls alone, no library", "floor",
	    cycle_floor, NULL);
	add(s, &n, "  part: create, write, unlink, close", "create-write",
	    cycle_create_write, NULL);
	add(s, &n, "  part: O_TMPFILE, write, linkat, ...", "tmpfile-linkat",
	    cycle_tmpfile_link, NULL);
	for (int i = 0; i < n; i++)
		s[i].mean = mean[i];
	run_batches(s, n, o->batches, o->cycles);
	print(s, n, csv);
	bench_csv_close(csv);
	pidlock_free(fast);
	pidlock_free(joiner);
	r = pidlock_release(holder);
	if (r < 0)
		bench_die("shared holder", -r);
	pidlock_free(holder);
	free(mean);

	csv = bench_csv(o, "synced.csv", "dir,subject,median_us");
	printf("\nthe cycle by sync setting against bare flock:\n");
	synced(o, o->dir, csv);
	if (strcmp(o->sync_dir, o->dir) != 0)
		synced(o, o->sync_dir, csv);
	bench_csv_close(csv);
}
