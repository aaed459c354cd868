/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Output, messages, exit codes, and the lock handle as the options say. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sysexits.h>
#include <unistd.h>

#include "cli.h"
/* Built in here too (tools/Makemodule.am); it stands alone. */
#include "../lib/mounts.h"

/* Writable, so that main() can point argv[0] at it without a cast. */
char program_name[] = "pidlock";

/* File names reach a terminal: no control character may pass. */
void print_clean(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		out(f, "%c", ch < 0x20 || ch == 0x7f ? '?' : ch);
	}
}

/* "pidlock: ", and "PATH: " after it if path, the path safe for a
 * terminal. */
void warn_prefix(const char *path)
{
	out(stderr, "%s: ", program_name);
	if (!path)
		return;
	print_clean(stderr, path);
	out(stderr, ": ");
}

/* Where text_add() goes on: the end of the text, or the buffer's last
 * byte when it is full. */
size_t text_len(const char *buf, size_t size)
{
	size_t n = strnlen(buf, size);

	return n < size ? n : size - 1;
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
	case ESTALE:
		return "the lock file was removed or replaced by someone else";
	default:
		return NULL;
	}
}

/* The directory part of path, in buf. */
static void dir_of(const char *path, char *buf, size_t size)
{
	const char *slash = strrchr(path, '/');
	size_t n;

	if (!slash) {
		text_set(buf, size, ".");
		return;
	}
	while (slash > path && slash[-1] == '/')
		slash--;
	n = slash == path ? 1 : (size_t)(slash - path);
	text_set(buf, size, "%.*s", (int)(n < size ? n : size - 1), path);
}

/*
 * The library refuses with EPERM for one of two reasons; say which one
 * applies here.  NULL when neither does any more (the file system
 * changed since), and the plain strerror() text is all we know.
 */
static const char *eperm_cause(const char *path, char *buf, size_t size)
{
	char dir[4096];
	struct stat dst, st;

	dir_of(path, dir, sizeof(dir));
	if (stat(dir, &dst) < 0)
		return NULL;
	if ((dst.st_mode & (S_IWOTH | S_ISVTX)) == S_IWOTH) {
		text_set(buf, size, "the directory %s is writable by everyone "
			 "and has no sticky bit, so anybody could remove or "
			 "replace the lock file; use a directory that only "
			 "trusted users can write, or set its sticky bit "
			 "(chmod +t)", dir);
		return buf;
	}
	if (lstat(path, &st) == 0 && st.st_uid != geteuid() &&
	    (dst.st_mode & (S_IWOTH | S_ISVTX)) == (S_IWOTH | S_ISVTX) &&
	    st.st_uid != dst.st_uid) {
		text_set(buf, size, "the file belongs to uid %u, not to you, "
			 "in the shared sticky directory %s, and nobody holds "
			 "it; a file another user created there is never "
			 "used, so nobody can plant a lock file for you; ask "
			 "uid %u to remove it, or use another name or a "
			 "directory of your own", (unsigned int)st.st_uid, dir,
			 (unsigned int)st.st_uid);
		return buf;
	}
	return NULL;
}

/*
 * EACCES on an existing file: one we cannot write (the library said
 * busy if anybody held it).  Another user's file left at the path, as
 * a kept file or one made under a strict umask, is what a lock shared
 * between users runs into.
 */
static const char *eacces_cause(const char *path, char *buf, size_t size)
{
	struct stat st;

	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode) ||
	    faccessat(AT_FDCWD, path, W_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) == 0)
		return NULL;
	text_set(buf, size, "the file belongs to uid %u with mode %04o, "
		 "which you cannot write, and nobody holds it; a lock shared "
		 "between users needs a file they can all write: ask its "
		 "owner to remove it, or to make it with --mode 0666 (exact, "
		 "whatever the umask)", (unsigned int)st.st_uid,
		 (unsigned int)(st.st_mode & 07777));
	return buf;
}

/*
 * ENOLCK: our locks would exclude nobody on this file system, or only
 * this host.  The second is told by the mount of the directory, which
 * is the lock file's (the refused file is gone again).
 */
static const char *enolck_cause(const char *path, char *buf, size_t size)
{
	char dir[4096];
	struct mounts_local why;
	int fd, local;

	dir_of(path, dir, sizeof(dir));
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	local = mounts_fd_local(fd, &why);
	(void)close(fd);
	if (local != 1)
		return NULL;
	if (why.option[0])
		text_set(buf, size, "%s mounted with %s", why.type, why.option);
	else
		text_set(buf, size, "%s sends no lock to its server",
			 why.type);
	text_add(buf, size, ": its locks exclude only this host; use "
		 "--host-local if only this host uses the directory");
	return buf;
}

/* Anything but a lock file: say so, that nothing changed, and what to do. */
static void warn_not_lock_file(const char *path)
{
	warn_prefix(path);
	out(stderr, "not a lock file: it holds other data (a lock file "
	    "is empty or holds a lock record of at most %d bytes); "
	    "nothing was changed.  Use a separate lock file for the "
	    "lock, such as '", PIDLOCK_CONTENT_MAX);
	print_clean(stderr, path);
	out(stderr, ".lock'.\n");
}

void warn_path(const char *path, int err)
{
	char buf[4096 + 512];
	const char *why;

	if (err == EBADMSG) {
		warn_not_lock_file(path);
		return;
	}
	why = err == EPERM ? eperm_cause(path, buf, sizeof(buf)) :
	      err == EACCES && eacces_cause(path, buf, sizeof(buf)) ? buf :
	      err == ENOLCK ? enolck_cause(path, buf, sizeof(buf)) :
	      library_meaning(err);
	warn_prefix(path);
	if (!why) {
		out(stderr, "%s\n", strerror(err));
		return;
	}
	out(stderr, "%s (", strerror(err));
	print_clean(stderr, why);
	out(stderr, ")\n");
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
	case EBADMSG:
		return EX_DATAERR;	/* not a lock file */
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

/* A kernel's own file system, where no lock file can live: sysfs,
 * proc, cgroup (v1 and v2), debugfs, tracefs, securityfs, configfs. */
static bool pseudo_fs(const char *dir)
{
	static const unsigned long magic[] = {
		0x62656572UL, 0x9fa0UL, 0x27e0ebUL, 0x63677270UL,
		0x64626720UL, 0x74726163UL, 0x73636673UL, 0x62656570UL,
	};
	struct statfs fs;

	if (statfs(dir, &fs) < 0)
		return false;
	for (size_t i = 0; i < sizeof(magic) / sizeof(magic[0]); i++)
		if ((unsigned long)fs.f_type == magic[i])
			return true;
	return false;
}

/*
 * An acquire's ENOENT in a directory that exists: the kernel refused to
 * make a file there (open(2) with O_CREAT says ENOENT in /proc), which
 * "No such file or directory" alone does not tell; so does EACCES, even
 * to root, in /sys and the kernel's other file systems.
 */
int fail_acquire(const char *path, int err)
{
	char dir[PATH_MAX];
	struct stat st;

	dir_of(path, dir, sizeof(dir));
	if ((err != ENOENT && err != EACCES && err != EPERM) ||
	    stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    (err != ENOENT && !pseudo_fs(dir)))
		return fail_path(path, err);
	warn_prefix(path);
	out(stderr, "%s (no file can be made in ", strerror(err));
	print_clean(stderr, dir);
	out(stderr, ": its file system refuses new files there, as /proc "
	    "and /sys do; put the lock file in a directory such as "
	    "/run/lock)\n");
	return EX_CANTCREAT;
}

/* 0 if path's directory is one, else -errno: a typo in the directory
 * must not read as "free" or "nothing to remove". */
int check_parent(const char *path)
{
	char *copy = strdup(path);
	struct stat st;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	if (stat(dirname(copy), &st) < 0)
		r = -errno;
	else if (!S_ISDIR(st.st_mode))
		r = -ENOTDIR;
	free(copy);
	return r;
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
		if (nfd == fd)
			continue;
		/* /dev/null: closing it loses nothing, whatever close says. */
		(void)close(nfd);
		return -EBADF;
	}
	return 0;
}

unsigned int stale_or_default(const struct opts *o)
{
	return o->stale_sec ? o->stale_sec : PIDLOCK_DEFAULT_STALE_SEC;
}

/* The settings the options give a lock; -errno on the first refused. */
int configure_lock(const struct opts *o, struct pidlock *lock)
{
	int r = pidlock_set_stale_timeout(lock, stale_or_default(o));

	if (r == 0 && o->tag)
		r = pidlock_set_tag(lock, o->tag);
	if (r == 0 && o->mode_set)
		r = pidlock_set_mode(lock, (mode_t)o->mode_bits);
	if (r == 0 && o->lease_ms)
		r = pidlock_set_lease(lock, (unsigned int)o->lease_ms);
	return r;
}

/* With --exec the command's exit is its release: its leftover file
 * must read as free, not as a crash.  So with a descriptor: the close
 * of the shell's descriptor (the script's end, or its subshell's) is
 * the release, as with flock(1), and the file it leaves must not read
 * as a crash after every normal run. */
/*
 * Scripts migrate from flock(1) one at a time, and flock(1) does not
 * check the inode: a release of ours keeps the file while anybody else
 * is on it (pidlock(1), "FLOCK(1) ON THE SAME PATH").  Its cost, a few
 * microseconds, is nothing beside a process's start.
 */
unsigned int lock_flags(const struct opts *o)
{
	bool exit_releases = (o->exec && o->mode == MODE_RUN) ||
			     o->mode == MODE_FD;

	return o->flags | PIDLOCK_KEEP_IF_USED |
	       (exit_releases ? PIDLOCK_EXIT_RELEASES : 0);
}

int make_lock(const struct opts *o, const char *path, struct pidlock **lockp)
{
	struct pidlock *lock;
	int r = pidlock_new(&lock, path, lock_flags(o));

	if (r < 0)
		return r;
	r = configure_lock(o, lock);
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

/* "pid (comm) state ppid ...": comm may hold spaces and ')', so the
 * fields are counted from the last ')'; exit_signal is the 38th. */
int proc_stat(pid_t pid, struct proc_stat *st)
{
	char name[64], buf[1024];
	const char *p;
	ssize_t n;
	int fd, field = 3;

	text_set(name, sizeof(name), "/proc/%ld/stat", (long)pid);
	fd = open(name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	(void)close(fd);	/* read-only: nothing to lose */
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -1;
	p += 2;
	st->state = *p;
	st->ppid = 0;
	st->exit_signal = -1;
	for (; p && field <= 38; field++) {
		if (field == 4)
			st->ppid = (pid_t)strtol(p, NULL, 10);
		else if (field == 38)
			st->exit_signal = (int)strtol(p, NULL, 10);
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	return st->ppid > 0 || pid == 1 ? 0 : -1;
}
