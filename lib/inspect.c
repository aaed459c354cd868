/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pidlock_inspect() and the holder report: read, never lock. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/*
 * The classification of doc/protocol.md, shared by inspect and by an
 * acquire that found the lock busy.  `state` is the caller's verdict
 * when it already knows one (an acquire does), else computed here.
 */
void inspect_fill_info(struct pidlock_info *info, enum pidlock_state state,
		       unsigned int kernel, const struct content *c,
		       const struct stat *st)
{
	memset(info, 0, sizeof(*info));
	info->state = state;
	/* A released record's pid is nobody's. */
	info->pid = c->released ? 0 : c->pid ? c->pid : c->bare_pid;
	/* Another kernel's pid is nobody's here (host.c). */
	info->pid_alive = host_pid_alive(c, info->pid);
	info->foreign = host_foreign(c);
	info->has_timestamp = c->has_timestamp;
	info->timestamp = c->timestamp;
	info->kernel_locks = kernel;
	info->marker = c->marker;
	info->mtime = (int64_t)st->st_mtim.tv_sec;
	memcpy(info->tag, c->tag, sizeof(info->tag));
}

/*
 * Rule B: a spec-only record frees its lock only when it is older than
 * stale_sec AND its pid is dead.  Spec command-line tools record a pid
 * that exits at once, so a dead pid alone never frees it; age alone
 * neither.  The one statement of the rule, for acquire and inspect.
 */
bool inspect_spec_is_stale(const struct content *c, unsigned int stale_sec)
{
	int64_t age = io_now_sec() - c->timestamp;

	/* Written under another kernel: its pid cannot be tested here, and
	 * the age alone decides, as the spec has it. */
	return age > (int64_t)stale_sec && host_pid_alive(c, c->pid) != 1;
}

/*
 * Rule C's window: incomplete content within the grace, on a file that
 * somebody else has open (or of which no lease can tell).
 */
enum window { NO_WINDOW, IN_WINDOW, READ_AGAIN };

static enum window writer_window(int fd, const struct content *c,
				 const struct stat *st)
{
	if (c->marker || content_is_spec(c) ||
	    io_grace_left_ms(st, PIDLOCK_DEFAULT_GRACE_MS) <= 0)
		return NO_WINDOW;
	/* Alone: a writer may have written and closed since our read,
	 * and nobody can change the file now. */
	return lease_alone(fd, st, PIDLOCK_DEFAULT_GRACE_MS) == 1 ? READ_AGAIN
								: IN_WINDOW;
}

static enum pidlock_state classify(unsigned int kernel,
				   const struct content *c,
				   const struct stat *st, bool writing,
				   unsigned int stale_sec)
{
	if (kernel)
		return PIDLOCK_STATE_HELD;
	/* Released by its last holder, and kept: nobody holds it. */
	if (c->marker)
		return c->released || c->exit_releases ? PIDLOCK_STATE_FREE
						       : PIDLOCK_STATE_ABANDONED;
	if (content_is_spec(c))
		return inspect_spec_is_stale(c, stale_sec)
			       ? PIDLOCK_STATE_STALE
			       : PIDLOCK_STATE_HELD_SPEC;
	/* Possibly a spec-only writer between create and write. */
	if (writing)
		return PIDLOCK_STATE_HELD_SPEC;
	/* A running daemon's pidfile, a dotlock: held while its writer
	 * lives (doc/protocol.md, rule C). */
	if (writer_may_hold(c->pid ? c->pid : c->bare_pid, st))
		return PIDLOCK_STATE_HELD_PIDFILE;
	/* flock(1) and with-lock-ex leave an empty file when they finish;
	 * what else is incomplete had a writer that did not. */
	return c->empty ? PIDLOCK_STATE_FREE : PIDLOCK_STATE_ABANDONED;
}

/* No file is "free" only if the directory exists to hold one. */
static int free_or_missing_dir(const char *path)
{
	char *dir = handle_dir_of(path);
	struct stat st;
	int r;

	if (!dir)
		return -ENOMEM;
	r = stat(dir, &st) < 0 ? -errno : S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	free(dir);
	return r;
}

/*
 * The kernel's own answer first: F_OFD_GETLK sees OFD and POSIX locks
 * on the file itself, whatever its device numbers, and says whether
 * the lock it found is a read lock.  /proc/locks adds flock holders,
 * who holds what, and how many.  Where it cannot place the file
 * (unreadable, or btrfs's devices), or may leave its holder out (a pid
 * namespace that cannot see it, klock_list_partial(); a list read in
 * pieces while locks came and went, klock_holders()), a flock probe
 * decides.  `hidden`: the kernel reports a lock that /proc/locks does
 * not list for us.
 */
struct kernel_view {
	unsigned int kinds;
	pid_t pid;
	bool shared;
	bool hidden;
	unsigned int holders;
	int readings;		/* of a torn /proc/locks, klock_holders_n() */
};

static void query_ofd(int fd, struct kernel_view *kv)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	if (fcntl(fd, F_OFD_GETLK, &fl) < 0 || fl.l_type == F_UNLCK)
		return;
	kv->kinds |= PIDLOCK_KIND_OFD;
	kv->shared |= fl.l_type == F_RDLCK;
	/* An OFD lock says -1; a POSIX lock its owner's pid as our pid
	 * namespace names it, and 0 if it cannot. */
	kv->hidden |= fl.l_pid == 0;
	if (fl.l_pid > 0 && !kv->pid)
		kv->pid = fl.l_pid;
}

/* The /proc/locks rows of the file: r of klock_holders(), and h. */
static int listed(int fd, const struct stat *st, const struct kernel_view *kv,
		  struct klock_holders *h)
{
	dev_t dev;
	int r = klock_holders_n(st->st_dev, st->st_ino, false, h, kv->readings);

	/* Our inode number under another device: where /proc/locks lists
	 * this file (btrfs), if the mount says; else any device, if the
	 * kernel says the file is locked at all. */
	if (r == 0 && h->elsewhere && fd >= 0 && klock_fd_listed_dev(fd, &dev) &&
	    dev != st->st_dev)
		r = klock_holders_n(dev, st->st_ino, false, h, kv->readings);
	else if (r == 0 && !h->kinds && h->elsewhere && kv->kinds)
		r = klock_holders_n(st->st_dev, st->st_ino, true, h,
				    kv->readings);
	return r;
}

/*
 * No flock row for the file: is a flock held all the same?  Where the
 * list is complete and placed, a probe is not needed and not made (for
 * its instant, a try by somebody else may be refused).  A holder the
 * probe finds is hidden if the list, read again, still shows no row
 * (not one that took the lock meanwhile).
 */
static void probe_flock(int fd, const struct stat *st, int r,
			const struct klock_holders *h, struct kernel_view *kv)
{
	struct klock_holders again;
	bool shared;

	if (fd < 0 || (kv->kinds & PIDLOCK_KIND_FLOCK))
		return;
	if (r == 0 && !h->elsewhere && !h->torn && !klock_list_partial())
		return;
	if (klock_probe_flock_mode(fd, &shared) <= 0)
		return;
	kv->kinds |= PIDLOCK_KIND_FLOCK;
	kv->shared |= shared;
	/* A torn list was read up to 8 times (klock_holders()): a row that
	 * none of the readings shows is not listed for us. */
	if (r < 0 || h->elsewhere)
		return;		/* the list cannot say: not known to be hidden */
	if (listed(fd, st, kv, &again) == 0 &&
	    !(again.kinds & PIDLOCK_KIND_FLOCK))
		kv->hidden = true;
}

static void kernel_locks(int fd, const struct stat *st, struct kernel_view *kv,
			 int readings)
{
	struct klock_holders h;
	int r;

	memset(kv, 0, sizeof(*kv));
	kv->readings = readings;
	if (fd >= 0)
		query_ofd(fd, kv);
	r = listed(fd, st, kv, &h);
	if (r == 0) {
		kv->kinds |= h.kinds;
		kv->shared |= h.shared;
		kv->holders = h.flock_rows > h.ofd_rows ? h.flock_rows
							: h.ofd_rows;
		if (!kv->pid && h.npids)
			kv->pid = h.pids[0];
	}
	probe_flock(fd, st, r, &h, kv);
	if (kv->kinds && !kv->holders)
		kv->holders = 1;
}

static int unreadable(struct pidlock_info *info, const struct stat *st,
		      int error)
{
	struct content none;
	struct kernel_view kv;

	kernel_locks(-1, st, &kv, KLOCK_TORN_READS);
	memset(&none, 0, sizeof(none));
	inspect_fill_info(info, kv.kinds ? PIDLOCK_STATE_HELD
					 : PIDLOCK_STATE_UNREADABLE, kv.kinds,
			  &none, st);
	info->kernel_pid = kv.pid;
	info->shared = kv.shared;
	info->holders = kv.holders;
	info->error = error;
	return 0;
}

/*
 * What fd, open on the lock file (st: its fstat), says: the state and
 * the holder.  The caller's descriptor is used for everything (the read,
 * the lease test, the flock probe): nothing is opened, so a waiter's
 * watch on the file sees no close of ours (pidlock_wait_free()).
 */
int inspect_fd(int fd, struct stat *st, struct pidlock_info *info,
	       unsigned int stale_sec, int readings)
{
	char buf[CONTENT_READ_MAX];
	enum pidlock_state state;
	struct content c;
	struct kernel_view kv;
	enum window win;
	bool writing;
	ssize_t n;

	memset(info, 0, sizeof(*info));
	info->pid_alive = -1;
	n = io_read_bounded(fd, buf, sizeof(buf));
	if (n < 0)
		return unreadable(info, st, (int)-n);
	kernel_locks(fd, st, &kv, readings);
	/* A holder may be writing its record as we read, unlocked: half
	 * of it is no lock file's (io_read_settled()). */
	if (kv.kinds &&
	    !content_is_lock_file(buf, (size_t)n, (int64_t)st->st_size))
		n = io_read_settled(fd, buf, sizeof(buf), st);
	if (n < 0)
		return unreadable(info, st, (int)-n);
	content_parse(buf, (size_t)n, &c);
	win = kv.kinds ? NO_WINDOW : writer_window(fd, &c, st);
	if (win == READ_AGAIN && fstat(fd, st) == 0 &&
	    (n = io_read_bounded(fd, buf, sizeof(buf))) >= 0)
		content_parse(buf, (size_t)n, &c);
	if (n < 0)
		return unreadable(info, st, (int)-n);
	writing = win == IN_WINDOW;
	if (!content_is_lock_file(buf, (size_t)n, (int64_t)st->st_size))
		state = PIDLOCK_STATE_NOT_LOCK_FILE;
	else
		state = classify(kv.kinds, &c, st, writing,
				 stale_sec ? stale_sec : PIDLOCK_DEFAULT_STALE_SEC);
	inspect_fill_info(info, state, kv.kinds, &c, st);
	info->kernel_pid = kv.pid;
	info->holders = kv.holders;
	info->holder_hidden = kv.hidden;
	/* The kernel's word first; the record's while it shows no lock
	 * (a spec-only reader of a shared record sees it held). */
	info->shared = kv.kinds ? kv.shared : c.shared;
	return 0;
}

static int inspect(const char *path, struct pidlock_info *info,
		   unsigned int stale_sec, int readings)
{
	struct stat st;
	int fd, r;

	if (!info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	info->pid_alive = -1;
	r = handle_check_path(path);
	if (r < 0)
		return r;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? free_or_missing_dir(path) : -errno;
	r = handle_check_type(st.st_mode);
	if (r < 0)
		return r;
	fd = lease_open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
				  O_NOCTTY);
	if (fd == -ENOENT)
		return 0;
	/* A symlink swapped in after the lstat: the same answer as one
	 * that was there before it. */
	if (fd == -ELOOP)
		return -ELOOP;
	if (fd < 0)
		return unreadable(info, &st, -fd);
	if (fstat(fd, &st) < 0 || (r = handle_check_type(st.st_mode)) < 0) {
		r = r < 0 ? r : -errno;
		io_close_keep_errno(fd);
		return r;
	}
	r = inspect_fd(fd, &st, info, stale_sec, readings);
	io_close_keep_errno(fd);
	return r;
}

/*
 * The lock file at path, opened to be looked at: a plain file (*st its
 * fstat), read-only, never hanging on a FIFO swapped in or a lease.
 * The descriptor, or -errno.
 */
int inspect_open(const char *path, struct stat *st)
{
	int r, fd = lease_open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
					 O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return fd;
	if (fstat(fd, st) < 0)
		r = -errno;
	else
		r = handle_check_type(st->st_mode);
	if (r < 0) {
		io_close_keep_errno(fd);
		return r;
	}
	return fd;
}

/*
 * The record's host= line, for a reader that found it foreign
 * (pidlock_info.foreign).  A second read of the file: a record replaced
 * since the inspect shows its own writer's host.
 */
static int record_host(const char *path, char *host, size_t size)
{
	char buf[CONTENT_READ_MAX];
	struct content c;
	struct stat st;
	ssize_t n;
	int fd, r;

	if (!host || !size)
		return -EINVAL;
	host[0] = '\0';
	r = handle_check_path(path);
	if (r < 0)
		return r;
	fd = inspect_open(path, &st);
	if (fd < 0)
		return fd;
	/* Unlocked: a holder may be writing as we read. */
	n = io_read_settled(fd, buf, sizeof(buf), &st);
	io_close_keep_errno(fd);
	if (n < 0)
		return (int)n;
	if (!content_is_lock_file(buf, (size_t)n, (int64_t)st.st_size))
		return -EBADMSG;
	content_parse(buf, (size_t)n, &c);
	content_clean_tag(host, size, c.host, strlen(c.host));
	return host_foreign(&c);
}

PIDLOCK_EXPORT int pidlock_record_host(const char *path, char *host,
				       size_t size)
{
	return io_rc_filter(record_host(path, host, size));
}

PIDLOCK_EXPORT int pidlock_inspect(const char *path, struct pidlock_info *info,
				   unsigned int stale_sec)
{
	return io_rc_filter(inspect(path, info, stale_sec, KLOCK_TORN_READS));
}

/* Whether, not by whom: one reading of a torn /proc/locks (slots.c). */
int inspect_state(const char *path, struct pidlock_info *info,
		  unsigned int stale_sec)
{
	return io_rc_filter(inspect(path, info, stale_sec, 1));
}

/*
 * The acquire found a kind of lock busy that /proc/locks does not list
 * now: a holder it leaves out, or one that let go meanwhile.  The
 * kernel's answer on the file, if the path still names it, decides.
 */
static uint32_t still_hidden(const struct pidlock *lock)
{
	struct kernel_view kv;
	struct stat st;
	int fd = lease_open(lock->set.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
					O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && st.st_dev == lock->seen.dev &&
	    st.st_ino == lock->seen.ino)
		kernel_locks(fd, &st, &kv, KLOCK_TORN_READS);
	else
		kv.hidden = false;
	io_close_keep_errno(fd);
	return kv.hidden;
}

PIDLOCK_EXPORT int pidlock_holder(const struct pidlock *lock,
				  struct pidlock_info *info)
{
	struct klock_holders h;
	dev_t dev;
	int r;

	if (!lock || !info)
		return -EINVAL;
	if (!lock->seen.known)
		return -ENODATA;
	*info = lock->seen.holder;
	if (!info->kernel_locks)
		return 0;
	/* Only now pay for /proc/locks: the kernel's word on who holds it. */
	dev = lock->cache.listed_known &&
	      lock->cache.listed_for == lock->seen.dev ?
		lock->cache.listed_dev : lock->seen.dev;
	r = klock_holders(dev, lock->seen.ino, false, &h);
	/* Held, as the acquire found; listed under another device (btrfs):
	 * the rows with our inode number name the holders. */
	if (r == 0 && !h.kinds && h.elsewhere)
		r = klock_holders(dev, lock->seen.ino, true, &h);
	if (r == 0 && (info->kernel_locks & ~h.kinds))
		info->holder_hidden = still_hidden(lock);
	if (r < 0 || !h.kinds)
		return 0;
	if (h.npids)
		info->kernel_pid = h.pids[0];
	info->shared = h.shared;
	info->holders = h.flock_rows > h.ofd_rows ? h.flock_rows : h.ofd_rows;
	return 0;
}

PIDLOCK_EXPORT const char *pidlock_state_name(enum pidlock_state state)
{
	switch (state) {
	case PIDLOCK_STATE_FREE:
		return "free";
	case PIDLOCK_STATE_HELD:
		return "held";
	case PIDLOCK_STATE_HELD_SPEC:
		return "held-spec";
	case PIDLOCK_STATE_ABANDONED:
		return "abandoned";
	case PIDLOCK_STATE_STALE:
		return "stale";
	case PIDLOCK_STATE_UNREADABLE:
		return "unreadable";
	case PIDLOCK_STATE_NOT_LOCK_FILE:
		return "not-a-lock-file";
	case PIDLOCK_STATE_HELD_PIDFILE:
		return "held-pidfile";
	}
	return NULL;
}
