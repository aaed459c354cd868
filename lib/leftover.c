/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Temp files of acquirers that died before publishing (create.c).  Each
 * name carries its creator's pid; one whose creator is gone and that
 * nobody holds a kernel lock on is litter, and only that is removed.
 * Swept once per handle, on its first acquire, and after taking over
 * the file of a holder that crashed: that is when litter appears.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define OPEN_LEFTOVER (O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)

/* ".pidlock-tmp-<pid>-<n>-<t>": the pid, or 0 if the name is not ours. */
static pid_t creator_of(const char *name)
{
	const char *p = name + strlen(TMP_PREFIX);
	char *end;
	long v;

	if (strncmp(name, TMP_PREFIX, strlen(TMP_PREFIX)) != 0)
		return 0;
	errno = 0;
	v = strtol(p, &end, 10);
	if (errno || end == p || *end != '-' || v <= 0 || v > INT_MAX)
		return 0;
	return (pid_t)v;
}

/*
 * A live creator may be between its open and its lock: its pid being
 * gone, or a zombie's, is what makes the file litter.  The locks then catch a file that
 * somebody (a crashed link publisher's successor) still holds, and the
 * second lookup a name that now belongs to another file.
 */
static void sweep_one(int dfd, const char *name)
{
	unsigned int busy = 0;
	struct stat st, again;
	pid_t pid = creator_of(name);
	int fd;

	if (!pid || writer_running(pid))
		return;
	/* Never open what is not a plain file: a device has side effects. */
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(st.st_mode))
		return;
	fd = openat(dfd, name, OPEN_LEFTOVER);
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
	    klock_take(fd, KINDS_ALL, false, &busy) == 0 &&
	    fstatat(dfd, name, &again, AT_SYMLINK_NOFOLLOW) == 0 &&
	    again.st_dev == st.st_dev && again.st_ino == st.st_ino)
		(void)unlinkat(dfd, name, 0);	/* litter either way */
	io_close_keep_errno(fd);
}

void leftover_sweep(const struct pidlock *lock)
{
	int saved = errno;
	struct dirent *de;
	DIR *d = opendir(lock->set.dir);

	if (!d)
		goto out;
	while ((de = readdir(d)))
		sweep_one(dirfd(d), de->d_name);
	(void)closedir(d);
out:
	errno = saved;
}
