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
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

char bench_path[4200];
char bench_dir[4096];
char bench_where[4200];

/* The mount with DIR's device number in /proc/self/mountinfo (its
 * third field is MAJOR:MINOR, the type follows " - "); else statfs's
 * magic for the two that matter here. */
const char *bench_fstype(const char *dir, char *buf, size_t size)
{
	char line[8192], dev[64];
	struct statfs sfs;
	struct stat st;
	FILE *f;

	snprintf(buf, size, "?");
	if (stat(dir, &st) < 0)
		return buf;
	snprintf(dev, sizeof(dev), " %u:%u ", major(st.st_dev),
		 minor(st.st_dev));
	f = fopen("/proc/self/mountinfo", "re");
	while (f && fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - "), *at = strstr(line, dev);
		size_t n;

		if (!sep || !at || at > sep)
			continue;
		sep += 3;
		n = strcspn(sep, " \n");
		/* The last one: the mount on top of any it hides. */
		snprintf(buf, size, "%.*s", (int)n, sep);
	}
	if (f)
		fclose(f);
	if (strcmp(buf, "?") == 0 && statfs(dir, &sfs) == 0) {
		if (sfs.f_type == 0x01021994)		/* TMPFS_MAGIC */
			snprintf(buf, size, "tmpfs");
		else if (sfs.f_type == 0xEF53)		/* EXT4_SUPER_MAGIC */
			snprintf(buf, size, "ext2/3/4");
	}
	return buf;
}

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
	return bench_bare_take_at(bench_path);
}

int bench_bare_take_at(const char *path)
{
	for (;;) {
		struct stat a, b;
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);

		if (fd < 0 || flock(fd, LOCK_EX) < 0)
			bench_die("bare take", errno);
		if (fstat(fd, &a) == 0 && lstat(path, &b) == 0 &&
		    a.st_ino == b.st_ino && a.st_dev == b.st_dev)
			return fd;
		close(fd);
	}
}

void bench_bare_give(int fd)
{
	bench_bare_give_at(bench_path, fd);
}

void bench_bare_give_at(const char *path, int fd)
{
	if (unlink(path) < 0 || close(fd) < 0)
		bench_die("bare give", errno);
}

