/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * make bench: what a lock costs, measured against a bare fslock-guard
 * cycle (open, flock, fstat, lstat; unlink, close) in the same run, so
 * that machine noise hits both alike.  Parts: the uncontended cycle
 * (cycle.c), the hand-off to a waiter (handoff.c), and contended
 * throughput and waiter herds (scale.c).
 *
 *   bench [--quick] [--csv DIR] [-d DIR] [-D DIR] [-b BATCHES]
 *         [-c CYCLES] [-r ROUNDS] [-s SECONDS] [--no-lock ROW] [PART...]
 *
 * PART is cycle, handoff, throughput or herd (default: all).  --csv
 * writes each part's figures as CSV files there, for bench/plots.gp.
 * -d is where every part runs (default /dev/shm, tmpfs); the cycle part
 * also takes the synced cycle in -D (default /var/tmp, a disk here).
 * Every heading says the directory and its filesystem's type.
 *
 * The throughput part counts each locker's lost increments (two holders
 * at once).  A peer's loss is printed as a figure and the run goes on;
 * only a loss of pidlock's own makes the exit status 1, after every
 * part asked for has run.  --no-lock pidlock|peer makes that row a
 * locker that takes no lock, for bench/test-loss.sh.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "pidlock.h"

/* The build passes with-lock-ex's path; a compile without it (lint) has
 * none. */
#ifndef WITH_LOCK_EX_PATH
#define WITH_LOCK_EX_PATH ""
#endif

bool bench_failed;

__attribute__((noreturn)) static void usage(void)
{
	fprintf(stderr, "usage: bench [--quick] [--csv DIR] [-d DIR] "
		"[-D DIR] [-b BATCHES] [-c CYCLES] [-r ROUNDS] [-s SECONDS] "
		"[--no-lock pidlock|peer] [--flags keep-if-used] "
		"[cycle|handoff|throughput|herd]...\n");
	exit(64);
}

/* --quick: every part, few samples, for CI (well under 30 s). */
static void set_quick(struct bench_opts *o)
{
	o->quick = true;
	o->batches = 5;
	o->cycles = 300;
	o->rounds = 9;
	o->scale_seconds = 0.2;
}

static void parse(int argc, char **argv, struct bench_opts *o)
{
	static const struct option longs[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "csv", required_argument, NULL, 'C' },
		{ "no-lock", required_argument, NULL, 'N' },
		{ "flags", required_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "d:D:b:c:r:s:", longs, NULL)) != -1) {
		switch (opt) {
		case 'q': set_quick(o); break;
		case 'C': o->csv_dir = optarg; break;
		case 'N': o->no_lock = optarg; break;
		case 'F':
			if (strcmp(optarg, "keep-if-used") != 0)
				usage();
			o->flags |= PIDLOCK_KEEP_IF_USED;
			break;
		case 'd': o->dir = optarg; break;
		case 'D': o->sync_dir = optarg; break;
		case 'b': o->batches = atoi(optarg); break;
		case 'c': o->cycles = atoi(optarg); break;
		case 'r': o->rounds = atoi(optarg); break;
		case 's': o->scale_seconds = atof(optarg); break;
		default: usage();
		}
	}
	if (o->batches < 1 || o->batches > BENCH_MAX_SAMPLES || o->cycles < 1 ||
	    o->rounds < 1 || o->rounds > BENCH_MAX_SAMPLES ||
	    !(o->scale_seconds > 0))
		usage();
	if (o->no_lock && strcmp(o->no_lock, "pidlock") != 0 &&
	    strcmp(o->no_lock, "peer") != 0)
		usage();
}

static bool wanted(int argc, char **argv, const char *part)
{
	if (optind >= argc)
		return true;
	for (int i = optind; i < argc; i++)
		if (strcmp(argv[i], part) == 0)
			return true;
	return false;
}

static const struct {
	const char *name;
	void (*run)(const struct bench_opts *);
} parts[] = {
	{ "cycle", bench_cycles },
	{ "handoff", bench_handoff },
	{ "throughput", bench_throughput },
	{ "herd", bench_herd },
};

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.dir = "/dev/shm", .sync_dir = "/var/tmp", .wle = WITH_LOCK_EX_PATH,
		.batches = 31, .cycles = 2000, .rounds = 31,
		.scale_seconds = 1.0,
	};
	char fs[64];

	if (argc == 3 && strcmp(argv[1], "--stamp-exit") == 0)
		return bench_stamp_exit(argv[2]);
	parse(argc, argv, &o);
	for (int i = optind; i < argc; i++) {
		size_t k = 0;

		while (k < sizeof(parts) / sizeof(parts[0]) &&
		       strcmp(argv[i], parts[k].name) != 0)
			k++;
		if (k == sizeof(parts) / sizeof(parts[0]))
			usage();
	}
	snprintf(bench_dir, sizeof(bench_dir), "%s/pidlock-bench.XXXXXX", o.dir);
	if (!mkdtemp(bench_dir))
		bench_die(bench_dir, errno);
	snprintf(bench_path, sizeof(bench_path), "%s/bench.lock", bench_dir);
	snprintf(bench_where, sizeof(bench_where), "%s (%s)", o.dir,
		 bench_fstype(o.dir, fs, sizeof(fs)));
	printf("libpidlock %s benchmark in %s%s\n", PACKAGE_VERSION, bench_where,
	       o.quick ? " (--quick: few samples, figures are rough)" : "");
	for (size_t k = 0; k < sizeof(parts) / sizeof(parts[0]); k++) {
		if (!wanted(argc, argv, parts[k].name))
			continue;
		parts[k].run(&o);
		(void)unlink(bench_path);
	}
	if (rmdir(bench_dir) < 0)
		bench_die(bench_dir, errno);
	if (bench_failed)
		fprintf(stderr, "bench: FAIL: pidlock's own lock lost "
			"increments (the lines above say where)\n");
	return bench_failed ? 1 : 0;
}
