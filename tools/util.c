/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Messages, exit codes, and the lock handle as the options describe it. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "cli.h"

/* Writable, so that main() can point argv[0] at it without a cast. */
char program_name[] = "pidlock";

void warn_msg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", program_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* "pidlock: PATH: message", the path safe for a terminal. */
void warn_file(const char *path, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", program_name);
	print_clean(stderr, path);
	fputs(": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * With stdout closed, the lock file would become descriptor 1 and the
 * command's output would go into it.  Give every missing standard
 * descriptor /dev/null, lowest first so each lands on its own number.
 */
int open_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		int nfd;

		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		nfd = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
		if (nfd < 0)
			return -errno;
		if (nfd != fd) {
			close(nfd);
			return -EBADF;
		}
	}
	return 0;
}

/* What the library means by a code whose strerror() text would mislead. */
static const char *library_meaning(int err)
{
	switch (err) {
	case ELOOP:
		return "is a symbolic link; lock files must not be";
	case EMLINK:
		return "has another hard link; refusing to write it";
	case EINVAL:
		return "is not a regular file";
	case EPERM:
		return "owned by another user in a shared directory, or the "
		       "directory is world-writable without the sticky bit";
	case ESTALE:
		return "the lock file was removed or replaced by someone else";
	default:
		return NULL;
	}
}

void warn_path(const char *path, int err)
{
	const char *why = library_meaning(err);

	fprintf(stderr, "%s: ", program_name);
	print_clean(stderr, path);
	if (why)
		fprintf(stderr, ": %s (%s)\n", strerror(err), why);
	else
		fprintf(stderr, ": %s\n", strerror(err));
}

/* Like flock(1): <sysexits.h> for everything that is not a conflict. */
int exit_for_errno(int err)
{
	switch (err) {
	case EACCES:
	case EPERM:
		return EX_NOPERM;
	case EROFS:
	case ENOSPC:
	case EDQUOT:
		return EX_CANTCREAT;
	case EIO:
		return EX_IOERR;
	case ENOENT:
	case ENOTDIR:
	case EISDIR:
	case ELOOP:
	case EMLINK:
	case EINVAL:
	case ENAMETOOLONG:
	case ENXIO:
		return EX_NOINPUT;
	default:
		return EX_OSERR;
	}
}

int fail_path(const char *path, int err)
{
	warn_path(path, err);
	return exit_for_errno(err);
}

unsigned int stale_or_default(const struct opts *o)
{
	return o->stale_sec ? o->stale_sec : PIDLOCK_DEFAULT_STALE_SEC;
}

int make_lock(const struct opts *o, const char *path, struct pidlock **lockp)
{
	struct pidlock *lock;
	int r = pidlock_new(&lock, path, o->flags);

	if (r < 0)
		return r;
	r = pidlock_set_stale_timeout(lock, stale_or_default(o));
	if (r == 0 && o->tag)
		r = pidlock_set_tag(lock, o->tag);
	if (r < 0) {
		pidlock_free(lock);
		return r;
	}
	*lockp = lock;
	return 0;
}

/* A full disk or a closed pipe must not pass for a successful --status. */
int finish_stdout(void)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return 0;
	warn_msg("write error: %s", strerror(errno ? errno : EIO));
	return EX_IOERR;
}
