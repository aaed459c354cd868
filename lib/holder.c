/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The holder, from outside: a pidfd for each process that holds the
 * lock.  A pid read from a record or from /proc/locks may belong to
 * another process by the time it is used; a pidfd cannot.  So the pidfd
 * is opened first, and only then is its process asked whether it holds
 * the lock: /proc/PID/fdinfo lists, for each of its descriptors, the
 * locks that descriptor's open file description holds.  A process that
 * took the pid over holds no lock on our file, and is never returned.
 *
 * The pidfd and /proc must mean the same process by one number:
 * pidfd_open(2) reads it in our pid namespace, /proc in its mount's.
 * A /proc of another namespace (nsenter -m into a container, unshare -p
 * without a /proc of its own) would prove one process and hand out
 * another's pidfd, so such a /proc is refused (pidns_proc_ours()), and
 * the proof is read through the /proc/PID directory opened before the
 * pidfd, which stays its process's whatever the number does later.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "internal.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* Holders that come and go while we look: looked at again this often. */
#define HOLDER_TRIES 8
/* A descriptor's fdinfo: its flags, and one line per lock it holds. */
#define FDINFO_MAX 8192

/* The file as /proc/locks and fdinfo name it: " MAJ:MIN:INO ". */
struct lock_key {
	char text[64];
	dev_t dev;
	ino_t ino;
};

static int open_pidfd(pid_t pid)
{
	long fd = syscall(SYS_pidfd_open, pid, 0);

	return fd < 0 ? -errno : (int)fd;
}

static void make_key(struct lock_key *k, dev_t dev, ino_t ino)
{
	k->dev = dev;
	k->ino = ino;
	(void)snprintf(k->text, sizeof(k->text), " %02x:%02x:%llu ",
		       major(dev), minor(dev), (unsigned long long)ino);
}

/* A held lock's line (not a waiter's "->") that names the file. */
static bool names_lock(const char *buf, const struct lock_key *k)
{
	for (const char *p = buf; (p = strstr(p, "lock:")) != NULL; p++) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char line[256];

		if (len >= sizeof(line))
			continue;
		memcpy(line, p, len);
		line[len] = '\0';
		if (!strstr(line, "->") && strstr(line, k->text))
			return true;
	}
	return false;
}

/* 1 if the descriptor `name` of the process whose fdinfo directory is
 * dfd holds a lock on the file, 0 if not (or it is gone). */
static int fd_holds(int dfd, const char *name, const struct lock_key *k)
{
	char buf[FDINFO_MAX];
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	ssize_t n;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	io_close_keep_errno(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return names_lock(buf, k);
}

/*
 * Does a descriptor of the process whose /proc directory is piddir hold
 * a lock on the file?  1 yes, 0 no (or the process is gone), -EACCES:
 * its descriptors cannot be read (another user's process, for a caller
 * without CAP_SYS_PTRACE).  A directory of a process that has exited
 * finds nothing in it, even once its number is somebody else's.
 */
static int dir_holds(int piddir, const struct lock_key *k)
{
	struct dirent *de;
	DIR *d;
	int dfd, r = 0;

	dfd = openat(piddir, "fdinfo", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT || errno == ESRCH ? 0 : -errno;
	d = fdopendir(dfd);
	if (!d) {
		io_close_keep_errno(dfd);
		return -errno;
	}
	while (r != 1 && (de = readdir(d)) != NULL) {
		int one;

		if (de->d_name[0] == '.')
			continue;
		one = fd_holds(dirfd(d), de->d_name, k);
		if (one == 1 || (one < 0 && r == 0))
			r = one;
	}
	(void)closedir(d);
	return r;
}

/* pid's directory in the /proc at procdir: the fd, -ESRCH, -errno. */
static int open_piddir(int procdir, pid_t pid)
{
	char name[16];
	int fd;

	(void)snprintf(name, sizeof(name), "%d", (int)pid);
	fd = openat(procdir, name,
		    O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? -ESRCH : -errno;
	return fd;
}

/* 1 if pid's process holds the lock, 0 if not, -errno: a cheap look. */
static int pid_holds(int procdir, pid_t pid, const struct lock_key *k)
{
	int piddir = open_piddir(procdir, pid);
	int r;

	if (piddir < 0)
		return piddir == -ESRCH ? 0 : piddir;
	r = dir_holds(piddir, k);
	io_close_keep_errno(piddir);
	return r;
}

/*
 * A pidfd for pid if it holds the lock now: the pidfd (>= 0), -ESRCH
 * if it does not, -errno.  The directory is opened first and asked
 * last: its process had the number from before the pidfd to after it,
 * so the pidfd, opened by the same number in the same namespace
 * (holder_pidfds() checked the /proc), is that process's; a pid is not
 * given again while its process (even a zombie) is there.
 */
static int proven_pidfd(int procdir, pid_t pid, const struct lock_key *k)
{
	int piddir = open_piddir(procdir, pid);
	int pidfd, r;

	if (piddir < 0)
		return piddir;
	pidfd = open_pidfd(pid);
	if (pidfd < 0) {
		io_close_keep_errno(piddir);
		return pidfd == -EINVAL ? -ESRCH : pidfd;
	}
	r = dir_holds(piddir, k);
	io_close_keep_errno(piddir);
	if (r == 1)
		return pidfd;
	io_close_keep_errno(pidfd);
	return r < 0 ? r : -ESRCH;
}

struct found {
	int procdir;		/* the /proc, checked to be our namespace's */
	int *pidfds;
	pid_t *pids;
	unsigned int n;		/* room */
	unsigned int count;	/* proven */
	int denied;		/* -EACCES met on the way, else 0 */
};

static bool already(const pid_t *seen, unsigned int nseen, pid_t pid)
{
	for (unsigned int i = 0; i < nseen; i++)
		if (seen[i] == pid)
			return true;
	return false;
}

/* Prove pid, and keep it (its pidfd closed again past the room). */
static int add(struct found *f, pid_t pid, const struct lock_key *k)
{
	int pidfd = proven_pidfd(f->procdir, pid, k);

	if (pidfd == -EACCES || pidfd == -EPERM) {
		f->denied = -EACCES;
		return 0;
	}
	if (pidfd == -ESRCH)
		return 0;
	if (pidfd < 0)
		return pidfd;
	if (f->count < f->n) {
		f->pidfds[f->count] = pidfd;
		if (f->pids)
			f->pids[f->count] = pid;
	} else {
		io_close_keep_errno(pidfd);
	}
	f->count++;
	return 0;
}

static void drop_found(struct found *f)
{
	for (unsigned int i = 0; i < f->count && i < f->n; i++)
		io_close_keep_errno(f->pidfds[i]);
	f->count = 0;
}

/* An exclusive lock has one holder: the first proven is the one. */
static bool enough(const struct found *f, const struct pidlock_info *info)
{
	return f->count && !info->shared;
}

/*
 * The candidates: the record's pid first (of several processes that
 * share the holder's descriptor, the one it names), then those
 * /proc/locks names.  An exclusive lock has one holder; a shared one
 * every process that proves it holds.
 */
static int collect(const struct pidlock_info *info, const struct klock_holders *h,
		   const struct lock_key *k, struct found *f)
{
	pid_t seen[KLOCK_PIDS_MAX + 1];
	unsigned int nseen = 0;
	int r;

	if (info->pid > 0 && !info->foreign) {
		seen[nseen++] = info->pid;
		r = add(f, info->pid, k);
		if (r < 0 || enough(f, info))
			return r;
	}
	for (unsigned int i = 0; i < h->npids; i++) {
		if (h->pids[i] <= 0 || already(seen, nseen, h->pids[i]))
			continue;
		seen[nseen++] = h->pids[i];
		r = add(f, h->pids[i], k);
		if (r < 0 || enough(f, info))
			return r;
	}
	return 0;
}

/*
 * Nobody the record or /proc/locks names holds it: a holder that forked
 * workers and exited leaves the lock with them, under no name.  Every
 * process is asked, a cheap look first and a proof for those that
 * hold.  In pid order; an exclusive lock's first is the one.
 */
static int scan_all(const struct pidlock_info *info, const struct lock_key *k,
		    struct found *f)
{
	struct dirent *de;
	DIR *d;
	int dfd = openat(f->procdir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = 0;

	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		io_close_keep_errno(dfd);
		return -errno;
	}
	while (r == 0 && !enough(f, info) && (de = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid > INT_MAX)
			continue;
		if (pid_holds(f->procdir, (pid_t)pid, k) == 1)
			r = add(f, (pid_t)pid, k);
	}
	(void)closedir(d);
	return r;
}

/* The state says who can be looked for: 0 if a kernel lock holds it. */
static int state_error(const struct pidlock_info *info)
{
	switch (info->state) {
	case PIDLOCK_STATE_HELD:
		return 0;
	case PIDLOCK_STATE_HELD_SPEC:
	case PIDLOCK_STATE_HELD_PIDFILE:
		return -ENOLCK;
	case PIDLOCK_STATE_NOT_LOCK_FILE:
		return -EBADMSG;
	case PIDLOCK_STATE_UNREADABLE:
		return info->error ? -info->error : -EIO;
	case PIDLOCK_STATE_FREE:
	case PIDLOCK_STATE_ABANDONED:
	case PIDLOCK_STATE_STALE:
		break;
	}
	return -ESRCH;	/* free, released, abandoned, stale, or unknown */
}

/* The file at path, opened to name it as the kernel does. */
static int open_key(const char *path, struct lock_key *k, struct stat *st)
{
	dev_t dev;
	int fd = inspect_open(path, st);

	if (fd < 0)
		return fd;
	dev = st->st_dev;
	/* btrfs: /proc/locks names the mount's device, not stat(2)'s. */
	if (!klock_fd_listed_dev(fd, &dev))
		dev = st->st_dev;
	make_key(k, dev, st->st_ino);
	return fd;
}

/* One look.  >= 1 holders, -ESRCH etc., or -EAGAIN: look again. */
static int look(const char *path, struct found *f)
{
	struct pidlock_info info;
	struct klock_holders h;
	struct lock_key k = { .dev = 0 };
	struct stat st, now;
	int fd, r;

	r = pidlock_inspect(path, &info, 0);
	if (r < 0)
		return r;
	r = state_error(&info);
	if (r < 0)
		return r;
	/* A /proc that numbers processes otherwise than pidfd_open(2)
	 * proves nobody: its holder is out of our sight. */
	if (f->procdir < 0)
		return f->procdir;
	fd = open_key(path, &k, &st);
	if (fd < 0)
		return fd == -ENOENT ? -EAGAIN : fd;
	r = klock_holders(k.dev, k.ino, false, &h);
	if (r == 0)
		r = collect(&info, &h, &k, f);
	if (r == 0 && !f->count && !info.foreign)
		r = scan_all(&info, &k, f);
	io_close_keep_errno(fd);
	if (r < 0)
		return r;
	/* Proven holders of a file no longer at the path hold nothing. */
	if (f->count && (lstat(path, &now) < 0 || now.st_ino != st.st_ino ||
			 now.st_dev != st.st_dev)) {
		drop_found(f);
		return -EAGAIN;
	}
	if (f->count)
		return (int)f->count;
	if (info.holder_hidden || info.foreign)
		return -EREMOTE;
	return f->denied ? f->denied : -EAGAIN;
}

/* /proc, if its pid namespace is ours: the fd, -EREMOTE, -errno.  No
 * /proc at all shows nobody, as a hidden holder. */
static int open_proc(void)
{
	int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return errno == ENOENT ? -EREMOTE : -errno;
	r = pidns_proc_ours(fd);
	if (r == 1)
		return fd;
	io_close_keep_errno(fd);
	return r == 0 ? -EREMOTE : r;
}

static int holder_pidfds(const char *path, int *pidfds, pid_t *pids,
			 unsigned int n)
{
	struct found f = { -1, pidfds, pids, n, 0, 0 };
	int r = -EAGAIN;

	if (!pidfds && n)
		return -EINVAL;
	f.procdir = open_proc();
	for (int i = 0; i < HOLDER_TRIES && r == -EAGAIN; i++) {
		f.count = 0;
		f.denied = 0;
		r = look(path, &f);
	}
	if (f.procdir >= 0)
		io_close_keep_errno(f.procdir);
	/* Held all along by somebody nobody could prove: out of sight. */
	return r == -EAGAIN ? -EREMOTE : r;
}

/* Not cancellable (cancel.c): a cancellation in the /proc walk would
 * leave the pidfds opened so far, which the caller never learns of. */
PIDLOCK_EXPORT int pidlock_holder_pidfds(const char *path, int *pidfds,
					 pid_t *pids, unsigned int n)
{
	int old = cancel_off();
	int r = holder_pidfds(path, pidfds, pids, n);

	cancel_restore(old);
	return io_rc_filter(r);
}
