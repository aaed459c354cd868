/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the parts of make bench share: the lock path, timing, output. */
#ifndef PIDLOCK_BENCH_H
#define PIDLOCK_BENCH_H

#include <stdbool.h>
#include <stdio.h>

#define BENCH_MAX_SAMPLES 4096

struct bench_opts {
	const char *dir;	/* where the lock files live (-d) */
	const char *sync_dir;	/* the synced cycle's second directory (-D) */
	const char *csv_dir;	/* NULL: no CSV files */
	const char *wle;	/* with-lock-ex, or "" */
	int batches, cycles, rounds;
	double scale_seconds;	/* one throughput or herd point */
	bool quick;
	/* --no-lock ROW: "pidlock" or "peer" in the throughput part takes
	 * no lock (the loss test's stand-in); NULL: every locker locks. */
	const char *no_lock;
	/* --flags keep-if-used: added to the contended parts' handles. */
	unsigned int flags;
};

/* Set by a part whose failure must fail the run (a loss of pidlock's
 * own increments) but whose other figures, and the parts after it, are
 * still worth printing. */
extern bool bench_failed;

/* The lock file every part uses, inside a private directory. */
extern char bench_path[4200];
extern char bench_dir[4096];

/* "DIR (FSTYPE)": where the figures are taken, for every heading. */
extern char bench_where[4200];
/* The type of the filesystem DIR is on ("ext4", "tmpfs"), or "?". */
const char *bench_fstype(const char *dir, char *buf, size_t size);

double bench_now_ns(void);
__attribute__((noreturn)) void bench_die(const char *what, int err);
double bench_median(const double *v, int n);
/* A MAP_SHARED anonymous mapping, so forked players see one copy. */
void *bench_shared(size_t size);
void bench_unshare(void *p, size_t size);

/* One CSV file in the results directory, or NULL when none is asked. */
FILE *bench_csv(const struct bench_opts *o, const char *name,
		const char *header);
void bench_csv_close(FILE *f);

void bench_cycles(const struct bench_opts *o);
void bench_handoff(const struct bench_opts *o);
void bench_throughput(const struct bench_opts *o);
void bench_herd(const struct bench_opts *o);

/* The bare fslock-guard steps, used as the baseline everywhere; _at
 * on a path other than bench_path. */
int bench_bare_take(void);
int bench_bare_take_at(const char *path);
void bench_bare_give_at(const char *path, int fd);
void bench_bare_give(int fd);

/* with-lock-ex's command in the hand-off part: note the time, exit. */
int bench_stamp_exit(const char *file);

#endif
