/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What every part of the benchmark uses: time, medians, shared memory,
 * CSV files, and the bare fslock-guard cycle that is the baseline. */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

char bench_path[4200];
char bench_dir[4096];

double bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

void bench_die(const char *what, int err)
{
	fprintf(stderr, "bench: %s: %s\n", what, strerror(err));
	exit(1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double bench_median(const double *v, int n)
{
	double *tmp;
	double m;

	if (n <= 0)
		return 0;
	tmp = malloc(sizeof(double) * (size_t)n);
	if (!tmp)
		bench_die("malloc", ENOMEM);
	memcpy(tmp, v, sizeof(double) * (size_t)n);
	qsort(tmp, (size_t)n, sizeof(double), cmp_double);
	m = n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
	free(tmp);
	return m;
}

void *bench_shared(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		bench_die("mmap", errno);
	return p;
}

void bench_unshare(void *p, size_t size)
{
	if (munmap(p, size) < 0)
		bench_die("munmap", errno);
}

FILE *bench_csv(const struct bench_opts *o, const char *name,
		const char *header)
{
	char file[4200];
	FILE *f;

	if (!o->csv_dir)
		return NULL;
	snprintf(file, sizeof(file), "%s/%s", o->csv_dir, name);
	f = fopen(file, "we");
	if (!f)
		bench_die(file, errno);
	fprintf(f, "%s\n", header);
	return f;
}

void bench_csv_close(FILE *f)
{
	if (f && fclose(f) != 0)
		bench_die("writing a CSV file", errno);
}

/* fslock-guard's acquire: lock, then make sure the path is that inode. */
int bench_bare_take(void)
{
	for (;;) {
		struct stat a, b;
		int fd = open(bench_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);

		if (fd < 0 || flock(fd, LOCK_EX) < 0)
			bench_die("bare take", errno);
		if (fstat(fd, &a) == 0 && lstat(bench_path, &b) == 0 &&
		    a.st_ino == b.st_ino && a.st_dev == b.st_dev)
			return fd;
		close(fd);
	}
}

void bench_bare_give(int fd)
{
	if (unlink(bench_path) < 0 || close(fd) < 0)
		bench_die("bare give", errno);
}

