/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Acquire steps 1 and 2: write and lock the record on a file nobody uses
 * yet, then publish it at the path in one step that fails if the name
 * exists.  A spec-only reader therefore never sees our file empty or
 * half written, and the file is locked before it has the lock's name.
 *
 * Three ways to publish, best first; a handle steps down the first time
 * the file system refuses one:
 *  - a named temp file renamed with RENAME_NOREPLACE: the descriptor's
 *    path follows the rename, so lslocks and /proc/PID/fd show the
 *    lock's real path, and the file never has a second name;
 *  - an O_TMPFILE linked with linkat(2): no second name either, but the
 *    descriptor shows "/dir/#ino (deleted)";
 *  - the path itself, created with O_EXCL, locked at once, then written:
 *    for a moment the file is empty and unlocked, which rule C's grace
 *    covers, as for a spec-only peer.  Never a link(2) of a named temp
 *    file: file systems that lack both calls above are often FUSE file
 *    systems built on paths (bindfs), which give each name its own
 *    inode, so the holder's locks would not be on the file at the path.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"


#define OPEN_FLAGS (O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY)

static unsigned int tmp_counter;

static int rename_noreplace(const char *from, const char *to)
{
#ifdef HAVE_RENAMEAT2
	return renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
#else
	return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to,
			    1U /* RENAME_NOREPLACE */);
#endif
}

/* The path opened is the directory, which may be reached through a
 * symlink (/var/run -> /run): O_NOFOLLOW would refuse it with ENOTDIR. */
static int open_unnamed(struct pidlock *lock)
{
	int fd = open(lock->set.dir, O_TMPFILE | (OPEN_FLAGS & ~O_NOFOLLOW),
		      lock->set.mode);

	if (fd >= 0)
		return fd;
	/* No O_TMPFILE on this file system (or kernel): use a named file. */
	if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL) {
		lock->cache.link_mode = PUB_IN_PLACE;
		return -EAGAIN;
	}
	return -errno;
}

/*
 * The name starts with TMP_PREFIX (never "<basename>.*.tmp", which a
 * spec peer's cleanup deletes) and carries our pid, so that a later
 * acquirer can remove it if we die before publishing (leftover.c).
 */
static int open_named(struct pidlock *lock, pid_t pid, char *name,
		      size_t size)
{
	for (int tries = 0; tries < 100; tries++) {
		unsigned int n = __atomic_fetch_add(&tmp_counter, 1,
						    __ATOMIC_RELAXED);
		int len = snprintf(name, size, "%s/" TMP_PREFIX "%ld-%u-%lx",
				   lock->set.dir, (long)pid, n,
				   (unsigned long)io_now_ms());
		int fd;

		if (len < 0 || (size_t)len >= size)
			return -ENAMETOOLONG;
		fd = open(name, O_CREAT | O_EXCL | OPEN_FLAGS, lock->set.mode);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* An interrupted unlink would leave a temp name nobody removes. */
static int unlink_tmp(const char *tmp)
{
	int r;

	while ((r = unlink(tmp)) < 0 && errno == EINTR)
		;
	return r < 0 && errno != ENOENT ? -errno : 0;
}

/* Only litter can be left if this fails; the error that got us here
 * is the one worth reporting. */
static void discard_tmp(const char *tmp)
{
	int saved = errno;

	(void)unlink_tmp(tmp);
	errno = saved;
}

static int publish_proc(struct pidlock *lock, int fd)
{
	char proc[64];

	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd); /* fits */
	if (linkat(AT_FDCWD, proc, AT_FDCWD, lock->set.path,
		   AT_SYMLINK_FOLLOW) < 0)
		return -errno;
	return 0;
}

/*
 * AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH on most kernels; without it
 * the kernel says ENOENT and we switch to /proc/self/fd for this handle
 * (a path lookup per cycle, so only when we must).
 */
static int publish_unnamed(struct pidlock *lock, int fd)
{
	int r;

	if (lock->cache.link_mode == PUB_TMPFILE_PROC)
		return publish_proc(lock, fd);
	if (linkat(fd, "", AT_FDCWD, lock->set.path, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno != ENOENT && errno != EPERM)
		return -errno;
	r = publish_proc(lock, fd);
	if (r == 0 || r == -EEXIST)
		lock->cache.link_mode = PUB_TMPFILE_PROC;
	else if (r == -ENOENT && access("/proc/self/fd", F_OK) < 0)
		/* no /proc: retry named */
		lock->cache.link_mode = PUB_IN_PLACE;
	if (r == -ENOENT && lock->cache.link_mode == PUB_IN_PLACE)
		return -EAGAIN;
	return r;
}

/* EINVAL: this file system has no RENAME_NOREPLACE; ENOSYS: no such
 * system call.  Step down to O_TMPFILE for this handle. */
static int publish_rename(struct pidlock *lock, const char *tmp)
{
	if (rename_noreplace(tmp, lock->set.path) == 0)
		return 0;
	/* Our temp name is gone: a sweep took it for litter (a pid we
	 * share with a process in another pid namespace).  Start over. */
	if (errno == ENOENT)
		return -EAGAIN;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	lock->cache.link_mode = PUB_TMPFILE;
	return -EAGAIN;
}

static int prepare(struct pidlock *lock, int fd, pid_t pid, bool take_locks)
{
	unsigned int busy = 0;
	struct stat st;
	int r = io_write_record(lock, fd, pid,
				lock->set.flags & PIDLOCK_KEEP_FILE,
				&(struct io_old){ 0, 0 }, 0);

	if (r < 0)
		return r;
	/* Nobody else follows our protocol on this file yet, so this is
	 * not refused for contention (a leftover scan backs off from it). */
	r = take_locks ? klock_take_mode(fd, lock->set.kinds, lock->set.shared,
					 false, &busy)
		       : 0;
	if (r < 0)
		return r == -EWOULDBLOCK ? -EAGAIN : r;
	if (fstat(fd, &st) < 0)
		return -errno;
	/* A mode the caller set is exact: a lock shared between users
	 * needs the write bits that a umask of 022 would take away. */
	if (lock->set.mode_exact && (st.st_mode & 07777) != lock->set.mode &&
	    fchmod(fd, lock->set.mode) < 0)
		return -errno;
	lock->hold.dev = st.st_dev;
	lock->hold.ino = st.st_ino;
	return 0;
}

static int create_named(struct pidlock *lock)
{
	char tmp[PATH_BUF];
	pid_t pid = self_pid();
	int fd = open_named(lock, pid, tmp, sizeof(tmp));
	int r;

	if (fd < 0)
		return fd;
	r = prepare(lock, fd, pid, true);
	if (r == 0)
		r = publish_rename(lock, tmp);
	if (r < 0) {
		discard_tmp(tmp);
		io_close_keep_errno(fd);
		return r;
	}
	lock->hold.fd = fd;
	opens_made(lock, 0);
	return 0;
}

static int create_unnamed(struct pidlock *lock)
{
	int fd = open_unnamed(lock);
	int r;

	if (fd < 0)
		return fd;
	r = prepare(lock, fd, self_pid(), true);
	if (r == 0)
		r = publish_unnamed(lock, fd);
	if (r < 0) {
		io_close_keep_errno(fd);
		return r;
	}
	lock->hold.fd = fd;
	opens_made(lock, 0);
	return 0;
}

/* Our fresh file is not ours to remove unless the path still names it:
 * the locks may be somebody else's, or a peer may have replaced it. */
static void in_place_discard(struct pidlock *lock, int fd)
{
	struct stat st;

	if (existing_same_inode(lock, fd, &st) == 0)
		(void)unlink(lock->set.path);
	io_close_keep_errno(fd);
}

/*
 * Rule A on our own new file: the locks of a handle of one kind do not
 * keep out a locker of the other kind.  One that opened the file between
 * our create and our locks, and took it over once the grace was out
 * (we were descheduled that long), holds it with its kind while we take
 * ours: its record and ours in one file, two holders.  1: another kind
 * holds the file; 0: none; -errno.
 */
static int other_kind_holds(const struct pidlock *lock, int fd)
{
	unsigned int busy = 0;
	int r = klock_test_others(fd, lock->set.kinds, lock->set.shared, &busy);

	return r < 0 ? r : busy != 0;
}

/*
 * Lock, then write: we write only into a file we hold.  An acquirer that
 * opens the file in between and wins the locks holds an empty, young
 * file; it waits out rule C's grace for a write that never comes (we
 * give way without writing) and then takes it over, keeping it as it
 * keeps any empty file.  Only what we hold is ours to take back.
 *
 * The file is unlocked between the create and our locks, so the inode
 * check after them is as final here as on every other path: a peer of
 * the fslock-guard kind can open it, hold it, and unlink it on release
 * in that window, and we would then lock a file nobody else can see.
 */
static int create_in_place(struct pidlock *lock)
{
	int fd = open(lock->set.path, O_CREAT | O_EXCL | OPEN_FLAGS,
		      lock->set.mode);
	unsigned int busy = 0;
	struct stat st;
	int r;

	if (fd < 0)
		return -errno;
	r = klock_take_mode(fd, lock->set.kinds, lock->set.shared, false,
			    &busy);
	if (r == 0)
		r = other_kind_holds(lock, fd);
	/* Somebody holds our new file: it is theirs now, a file that
	 * exists; closing gives back what we took. */
	if (r == -EWOULDBLOCK || r == 1) {
		io_close_keep_errno(fd);
		return -EEXIST;
	}
	if (r == 0)
		r = existing_same_inode(lock, fd, &st);
	if (r > 0) {
		io_close_keep_errno(fd);
		return -EAGAIN;
	}
	if (r == 0)
		r = prepare(lock, fd, self_pid(), false);
	if (r < 0) {
		in_place_discard(lock, fd);
		return r;
	}
	lock->hold.fd = fd;
	/* Made by its own open: the name's creation and then our open. */
	opens_made(lock, 1);
	return 0;
}

/* Returns 0 (held), -EEXIST (the path exists), -EAGAIN or -errno. */
int create_publish(struct pidlock *lock)
{
	if (lock->cache.link_mode == PUB_RENAME)
		return create_named(lock);
	if (lock->cache.link_mode == PUB_IN_PLACE)
		return create_in_place(lock);
	return create_unnamed(lock);
}
