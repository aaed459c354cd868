/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An LD_PRELOAD shim that makes every open with O_TMPFILE fail with
 * EOPNOTSUPP, as it does on a file system without O_TMPFILE, so that the
 * library takes its named temp-file fallback.  Every other open passes
 * through untouched.
 *
 * Each refusal appends the caller's pid to the file named by
 * $PIDLOCK_NO_TMPFILE_LOG, so a test run can show that the fallback was
 * really taken and not bypassed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);

static void *next(const char *name)
{
	void *fn = dlsym(RTLD_NEXT, name);

	if (!fn) {
		/* Nothing sensible is left to do for the caller. */
		fprintf(stderr, "no-tmpfile: dlsym(%s) failed\n", name);
		abort();
	}
	return fn;
}

static void note_refusal(void)
{
	static openat_fn real_openat;
	const char *log = getenv("PIDLOCK_NO_TMPFILE_LOG");
	char line[32];
	int saved = errno;
	int fd, len;

	if (!log || !*log)
		return;
	if (!real_openat)
		real_openat = (openat_fn)next("openat");
	fd = real_openat(AT_FDCWD, log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		len = snprintf(line, sizeof(line), "%ld\n", (long)getpid());
		if (len > 0 && write(fd, line, (size_t)len) < 0)
			fprintf(stderr, "no-tmpfile: cannot write %s\n", log);
		close(fd);
	}
	errno = saved;
}

/* 1 (and errno set) when the call is to fail as without O_TMPFILE. */
static int refuse(int flags)
{
	if ((flags & O_TMPFILE) != O_TMPFILE)
		return 0;
	note_refusal();
	errno = EOPNOTSUPP;
	return 1;
}

/* The mode argument is there only with O_CREAT or O_TMPFILE. */
static mode_t mode_of(int flags, va_list ap)
{
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
		return (mode_t)va_arg(ap, unsigned int);
	return 0;
}

#define OPEN_SHIM(name)                                                 \
	int name(const char *path, int flags, ...)                      \
	{                                                               \
		static open_fn real;                                    \
		va_list ap;                                             \
		mode_t mode;                                            \
									\
		va_start(ap, flags);                                    \
		mode = mode_of(flags, ap);                              \
		va_end(ap);                                             \
		if (refuse(flags))                                      \
			return -1;                                      \
		if (!real)                                              \
			real = (open_fn)next(#name);                    \
		return real(path, flags, mode);                         \
	}

#define OPENAT_SHIM(name)                                               \
	int name(int dirfd, const char *path, int flags, ...)           \
	{                                                               \
		static openat_fn real;                                  \
		va_list ap;                                             \
		mode_t mode;                                            \
									\
		va_start(ap, flags);                                    \
		mode = mode_of(flags, ap);                              \
		va_end(ap);                                             \
		if (refuse(flags))                                      \
			return -1;                                      \
		if (!real)                                              \
			real = (openat_fn)next(#name);                  \
		return real(dirfd, path, flags, mode);                  \
	}

int open(const char *path, int flags, ...);
int open64(const char *path, int flags, ...);
int openat(int dirfd, const char *path, int flags, ...);
int openat64(int dirfd, const char *path, int flags, ...);

OPEN_SHIM(open)
OPEN_SHIM(open64)
OPENAT_SHIM(openat)
OPENAT_SHIM(openat64)
