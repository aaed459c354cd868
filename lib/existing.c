/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Acquire step 3: the path exists.  Open it without following links or
 * blocking, take the kernel locks, check that the path still names the
 * inode we locked, then read the record and decide whether its writer
 * still holds the lock (see doc/protocol.md, rules A-C).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define OPEN_EXISTING (O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
/* Beside the kinds in a busy mask: the file is another user's, which a
 * wait must not keep open (unlockable_try()). */
#define BUSY_UNKEPT (1U << 8)

/*
 * Like fs.protected_regular, for root daemons in /tmp: a file somebody
 * else planted in a world-writable sticky directory is not ours to
 * write into, even if we could.
 */
static int check_owner(const struct pidlock *lock, const struct stat *st)
{
	struct stat dst;

	if (st->st_uid == geteuid())
		return 0;
	if (stat(lock->set.dir, &dst) < 0)
		return -errno;
	if ((dst.st_mode & (S_IWOTH | S_ISVTX)) == (S_IWOTH | S_ISVTX) &&
	    st->st_uid != dst.st_uid)
		return -EPERM;
	return 0;
}

/* The device /proc/locks lists st's file under, learned through fd or,
 * without one, through the directory, which is on the same mount. */
static dev_t listed_dev(struct pidlock *lock, int fd, const struct stat *st)
{
	dev_t dev;
	int dfd;

	if (fd >= 0)
		return klock_listed_dev(lock, fd, st->st_dev);
	dfd = open(lock->set.dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return st->st_dev;
	dev = klock_listed_dev(lock, dfd, st->st_dev);
	io_close_keep_errno(dfd);
	return dev;
}

/*
 * Does anybody hold a kernel lock on the file st describes?  Asked of a
 * file that we may not lock ourselves (another user's), so nothing is
 * taken: /proc/locks lists both kinds.  Only where it cannot be read
 * whole, the OFD query and a shared flock(2) of a moment answer,
 * through fd or a read-only descriptor of a moment.  The kinds held, 0,
 * or -errno.
 */
static int held_untaken(struct pidlock *lock, int fd, const struct stat *st)
{
	struct klock_holders h;
	pid_t ignored = 0;
	bool shared;
	int ofd, fl, probe = fd;

	if (klock_holders(listed_dev(lock, fd, st), st->st_ino, false,
			  &h) == 0 && !h.torn)
		return (int)h.kinds;
	if (probe < 0)
		probe = open(lock->set.path, O_RDONLY | O_NOFOLLOW |
					     O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (probe < 0)
		return -errno;
	ofd = klock_query_ofd(probe, &ignored);
	fl = ofd < 0 ? 0 : klock_probe_flock_mode(probe, &shared);
	if (probe != fd)
		io_close_keep_errno(probe);
	if (ofd < 0 || fl < 0)
		return ofd < 0 ? ofd : fl;
	return ofd | (fl ? PIDLOCK_KIND_FLOCK : 0);
}

/*
 * A file that we may not lock: another user's that we cannot open for
 * writing (err -EACCES), or one planted in a shared sticky directory
 * (-EPERM, check_owner()).  While somebody holds it, it is busy like any
 * held file: -n says so, a wait waits for the release, which lets a new
 * file of ours be made.  Only a file that nobody holds is refused with
 * err; one gone or replaced meanwhile is tried again.  fd: open on the
 * file (read-only will do), or -1 where not even that was allowed.
 */
static int busy_or_refused(struct pidlock *lock, int fd, int err,
			   unsigned int *busy)
{
	struct stat st, lst;
	int held;

	if (fd >= 0 ? fstat(fd, &st) < 0 : lstat(lock->set.path, &st) < 0)
		return path_replaced(-errno) ? TRY_AGAIN : -errno;
	if (!S_ISREG(st.st_mode))
		return err;
	held = held_untaken(lock, fd, &st);
	/* Its look at the file (a /proc/locks that took more than one
	 * read, as on a busy machine) found it gone: the holder let go. */
	if (held < 0)
		return path_replaced(held) ? TRY_AGAIN : held;
	if (held) {
		*busy = (unsigned int)held;
		return -EWOULDBLOCK;
	}
	if (lstat(lock->set.path, &lst) < 0)
		return path_replaced(-errno) ? TRY_AGAIN : -errno;
	if (st.st_nlink == 0 || lst.st_dev != st.st_dev ||
	    lst.st_ino != st.st_ino)
		return TRY_AGAIN;
	return err;
}

/*
 * 0: the path names fd's inode, as far as this host's lookup can tell;
 * 1: it does not (or is gone).  A file with no links is gone even if a
 * lookup still finds it: an unlink drops the link count before the
 * name, and a spec-only peer unlinks without holding any lock.  Enough
 * to decide what to wait on; never enough to go on as the holder.
 */
int existing_names_inode(const struct pidlock *lock, int fd, struct stat *st)
{
	struct stat lst;

	if (fstat(fd, st) < 0)
		return -errno;
	if (st->st_nlink == 0)
		return 1;
	if (lstat(lock->set.path, &lst) < 0)
		return errno == ENOENT || errno == ESTALE ? 1 : -errno;
	return lst.st_dev != st->st_dev || lst.st_ino != st->st_ino;
}

/*
 * As existing_names_inode(), and where the client of a shared file
 * system may answer both from its cache, the server is asked too
 * (remote.c).  That asking opens the path, which a waiter's own watch
 * would see as a close: so it is done only where the answer lets us
 * hold the lock, never in a wait's rounds.
 */
int existing_same_inode(struct pidlock *lock, int fd, struct stat *st)
{
	int r = existing_names_inode(lock, fd, st);

	if (r != 0)
		return r;
	return remote_same_inode(lock, fd, st);
}

/*
 * The file at the path went away or was replaced while we looked: look
 * again.  A shared file system says ESTALE where a local one says
 * ENOENT: the client still had the old file's handle (a cached lookup,
 * or the descriptor we opened), and the server no longer has that file.
 */
bool path_replaced(int r)
{
	return r == -ENOENT || r == -ESTALE;
}

/*
 * Devices, FIFOs and sockets are refused before open(2), which could
 * have side effects on a device.  Symlinks and directories are left to
 * open(2) itself: O_NOFOLLOW refuses a symlink (ELOOP) even if one is
 * swapped in after the lstat, and O_RDWR a directory (EISDIR).
 * O_NONBLOCK keeps a FIFO swapped in late, or a lease (whose break an
 * open would otherwise wait for), from hanging us: lease_open().
 */
/*
 * ETXTBSY: the file is a program that somebody runs, which open(2) for
 * writing refuses.  A running program is no lock file, and saying
 * "Text file busy" hides that: read it, and answer what its content
 * says (-EBADMSG), as for any other data file.  Nothing is written.
 */
static int running_program(const char *path)
{
	char buf[CONTENT_READ_MAX];
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
			    O_NOCTTY);

	if (fd < 0)
		return -ETXTBSY;
	n = fstat(fd, &st) < 0 ? -1 : io_read_bounded(fd, buf, sizeof(buf));
	io_close_keep_errno(fd);
	if (n < 0 || !S_ISREG(st.st_mode) ||
	    content_is_lock_file(buf, (size_t)n, (int64_t)st.st_size))
		return -ETXTBSY;
	return -EBADMSG;
}

/* -EPERM for a file planted in a shared sticky directory, before it is
 * opened: an open of ours while its holder lets go with
 * PIDLOCK_KEEP_IF_USED would keep it at the path, ours to use never. */
static int open_existing(const struct pidlock *lock)
{
	const char *path = lock->set.path;
	struct stat lst;
	int fd;

	if (lstat(path, &lst) < 0)
		return -errno;
	if (!S_ISREG(lst.st_mode) && !S_ISLNK(lst.st_mode) &&
	    !S_ISDIR(lst.st_mode))
		return -EINVAL;
	if (S_ISREG(lst.st_mode) && check_owner(lock, &lst) == -EPERM)
		return -EPERM;
	fd = lease_open(path, OPEN_EXISTING);
	if (fd == -ETXTBSY)
		return running_program(path);
	return fd == -ENXIO ? -EINVAL : fd;
}

/*
 * nlink > 1 with our marker: a named-temp publisher died between link()
 * and unlink().  Drop that temp name (found by prefix and inode) so the
 * lock is not refused forever.  Any other extra link is refused: it may
 * be a hard link planted to make us write somebody else's file.
 */
static int repair_links(const struct pidlock *lock, int fd,
			const struct content *c, struct stat *st)
{
	DIR *d;
	struct dirent *de;
	int dfd, r = 0;

	if (!c->marker)
		return -EMLINK;
	d = opendir(lock->set.dir);
	if (!d)
		return -errno;
	dfd = dirfd(d);
	while ((de = readdir(d))) {
		struct stat tst;

		if (strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) != 0 ||
		    de->d_ino != st->st_ino)
			continue;
		if (fstatat(dfd, de->d_name, &tst, AT_SYMLINK_NOFOLLOW) < 0 ||
		    tst.st_dev != st->st_dev || tst.st_ino != st->st_ino)
			continue;
		if (unlinkat(dfd, de->d_name, 0) < 0 && errno != ENOENT)
			r = -errno;
	}
	closedir(d);
	if (r < 0)
		return r;
	if (fstat(fd, st) < 0)
		return -errno;
	return st->st_nlink == 1 ? 0 : -EMLINK;
}

static void note_holder(struct pidlock *lock, enum pidlock_state state,
			unsigned int kernel, const struct content *c,
			const struct stat *st)
{
	inspect_fill_info(&lock->seen.holder, state, kernel, c, st);
	lock->seen.dev = st->st_dev;
	lock->seen.ino = st->st_ino;
	lock->seen.known = true;
}

/*
 * A waiter retries the same busy file many times: its record is read
 * again only if the file changed (another inode, a rewrite) or another
 * kind of lock shows up, not on every try (four system calls each).
 */
static bool holder_known(const struct pidlock *lock, const struct stat *st,
			 unsigned int busy)
{
	return lock->seen.known &&
	       lock->seen.holder.state == PIDLOCK_STATE_HELD &&
	       lock->seen.dev == st->st_dev && lock->seen.ino == st->st_ino &&
	       lock->seen.size == st->st_size &&
	       lock->seen.mtime.tv_sec == st->st_mtim.tv_sec &&
	       lock->seen.mtime.tv_nsec == st->st_mtim.tv_nsec &&
	       (busy & ~lock->seen.holder.kernel_locks) == 0;
}

static void note_kernel_holder(struct pidlock *lock, int fd,
			       const struct stat *st, unsigned int busy)
{
	char buf[CONTENT_READ_MAX];
	struct content c;
	ssize_t n;

	pid_t ignored = 0;
	int ofd;

	if (holder_known(lock, st, busy))
		return;
	/* klock_take stops at the first busy kind; the OFD query is cheap. */
	ofd = klock_query_ofd(fd, &ignored);
	if (ofd > 0)
		busy |= (unsigned int)ofd;
	n = io_read_bounded(fd, buf, sizeof(buf));
	content_parse(buf, n > 0 ? (size_t)n : 0, &c);
	note_holder(lock, PIDLOCK_STATE_HELD, busy, &c, st);
	lock->seen.size = st->st_size;
	lock->seen.mtime = st->st_mtim;
}

/*
 * Parse the record, or refuse a file that no locker could have left:
 * its bytes are a user's, and must stay as they are.
 */
static int read_record(int fd, const struct stat *st, struct content *c,
		       bool *lock_file)
{
	char buf[CONTENT_READ_MAX];
	ssize_t n = io_read_bounded(fd, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	*lock_file = content_is_lock_file(buf, (size_t)n, (int64_t)st->st_size);
	content_parse(buf, (size_t)n, c);
	return 0;
}

/* Rule C: no marker and no complete spec record. */
static bool incomplete(const struct content *c)
{
	return !c->marker && !content_is_spec(c);
}

/*
 * Rule C's pid: a pidfile's or dotlock's writer holds no kernel lock,
 * and holds as long as it lives.  The pid is that of the process about
 * to hold (ours, or the shell of pidlock_lock_fd()): it wrote the file
 * itself, and is no other holder.
 */
static bool pidfile_held(struct pidlock *lock, const struct content *c,
			 const struct stat *st)
{
	pid_t pid = c->pid ? c->pid : c->bare_pid;

	if (!incomplete(c) || pid <= 0 || pid == self_pid() ||
	    pid == lock->hold.fd_pid || !writer_may_hold(pid, st))
		return false;
	note_holder(lock, PIDLOCK_STATE_HELD_PIDFILE, 0, c, st);
	return true;
}

/*
 * A spec-only writer between its O_EXCL create and its write holds the
 * file open.  Nobody else has it open (a write lease tells): no writer
 * is in that window, and the grace has nothing to wait for.  Asked only
 * within the grace, so an old file costs nothing.  The writer may have
 * written and closed between our read and the lease: the record is read
 * again (nobody can change it now), and *st and *c are the new ones.
 * 1: decided by what the file holds now; 0: wait out the grace.
 */
static int nobody_writing(int fd, struct stat *st, struct content *c,
			  struct pidlock *lock)
{
	bool lock_file = false;
	int r, alone;

	if (io_grace_left_ms(st, lock->set.grace_ms) <= 0)
		return 0;
	/* Our own second open of a borrowed description is nobody else's. */
	split_suspend(lock);
	alone = lease_alone(fd, st, lock->set.grace_ms);
	r = split_resume(lock, fd);
	if (r < 0)
		return r;
	if (alone != 1)
		return 0;
	if (fstat(fd, st) < 0)
		return -errno;
	r = read_record(io_read_fd(lock, fd), st, c, &lock_file);
	if (r == 0 && !lock_file)
		r = -EBADMSG;
	return r < 0 ? r : 1;
}

/*
 * The record is incomplete: it may be a spec-only peer between its
 * O_EXCL create and its write.  Watch for that write until the grace
 * period, counted from the file's mtime, is over; *c is then the
 * latest record.  Returns 1 if the caller's deadline (-1: none) came
 * first, the file still within its grace.
 */
static int wait_for_writer(struct pidlock *lock, int fd,
			   const struct stat *st, struct content *c,
			   int64_t deadline)
{
	int64_t left = io_grace_left_ms(st, lock->set.grace_ms);
	int64_t until = io_now_ms() + left;
	bool lock_file = false;
	struct watch w;
	int r = 0;

	if (left <= 0)
		return 0;
	/* The caller's time limit comes first: a try-once does not wait. */
	if (deadline >= 0 && deadline < until)
		until = deadline;
	wait_init(&w, NULL);
	wait_watch_file(&w, lock->set.path, WATCH_WRITES);
	for (;;) {
		struct stat now;

		if (fstat(fd, &now) < 0) {
			r = -errno;
			break;
		}
		r = read_record(io_read_fd(lock, fd), &now, c, &lock_file);
		if (r == 0 && !lock_file)
			r = -EBADMSG;
		if (r < 0 || !incomplete(c))
			break;
		left = until - io_now_ms();
		if (left <= 0) {
			r = io_grace_left_ms(st, lock->set.grace_ms) > 0;
			break;
		}
		r = wait_for_event(&w, NULL, left, GRACE_POLL_MS);
		if (r < 0)
			break;
	}
	wait_close(&w);
	return r;
}

/*
 * Keep the inode for good if the file is what a locker that does not
 * check it leaves: an empty file (flock(1), with-lock-ex, Perl and
 * Python flock users).  Such a peer may be blocked on this inode, and
 * would hold an orphan if we unlinked it.  Our own record passes the
 * choice on.  A bare pid (a pidfile; libbsd and liblockfile, which never
 * wait on an inode) and a spec-only peer's file may go, as their
 * writers expect: absent means free.
 */
static bool must_keep(const struct pidlock *lock, const struct content *c)
{
	/* A caller's descriptor (pidlock_lock_fd()) stays open on this
	 * inode after the hold: the inode must stay at the path too. */
	if ((lock->set.flags & PIDLOCK_KEEP_FILE) || lock->hold.fd_pid)
		return true;
	return c->marker ? c->keep : c->empty;
}

static int takeover(struct pidlock *lock, int fd, const struct stat *st,
		    const struct content *c)
{
	pid_t pid = lock->hold.fd_pid ? lock->hold.fd_pid : self_pid();
	/* A crashed or released holder's bytes after its record go with
	 * it; a shared record's stay: its other holders may be alive, and
	 * one of them wrote them. */
	const struct io_old old = { (size_t)st->st_size, c->head };
	int r = io_write_record(lock, io_write_fd(lock, fd), pid,
				must_keep(lock, c), &old,
				c->shared ? IO_KEEP_TAIL : 0);

	if (r < 0)
		return r;
	lock->hold.fd = fd;
	lock->hold.dev = st->st_dev;
	lock->hold.ino = st->st_ino;
	/* Its holder crashed: it may have left a temp file too. */
	if (c->marker && !c->released)
		lock->cache.swept = false;
	return TRY_HELD_BY_US;
}

/* Rule A's test: a locker of a kind we did not take (another flag set,
 * or the other peer family) may still hold the file.  A shared acquirer
 * is kept out only by a writer: readers share with it. */
static int others_hold(struct pidlock *lock, int fd, const struct content *c,
		       const struct stat *st)
{
	unsigned int busy = 0;
	int r = klock_test_others(fd, lock->set.kinds, lock->set.shared, &busy);

	if (r < 0)
		return r;
	if (!busy)
		return 0;
	note_holder(lock, PIDLOCK_STATE_HELD, busy, c, st);
	return TRY_BUSY;
}

/*
 * The content is no lock file's; is a holder writing its record right
 * now (io_read_settled())?  Ours write only under a kernel lock: a
 * holder of a kind we did not take, or, beside a shared acquirer, a
 * co-holder.  The first keeps us out anyway: busy, and judged again
 * once it lets go.  Co-holders cannot all be seen (flock(2) has no
 * query): read again for a while.  With nobody there, nobody can be
 * writing, and the file is somebody's data.
 */
static int unreadable(struct pidlock *lock, int fd, struct stat *st,
		      struct content *c)
{
	char buf[CONTENT_READ_MAX];
	ssize_t n;
	int r;

	/* What we read may be half of its record: name none. */
	content_parse("", 0, c);
	r = others_hold(lock, fd, c, st);
	if (r != 0)
		return r;
	if (!lock->set.shared)
		return -EBADMSG;
	n = io_read_settled(io_read_fd(lock, fd), buf, sizeof(buf), st);
	if (n < 0)
		return (int)n;
	if (!content_is_lock_file(buf, (size_t)n, (int64_t)st->st_size))
		return -EBADMSG;
	content_parse(buf, (size_t)n, c);
	return 0;
}

/* We hold our kernel locks on the file at the path: whose is it? */
static int decide(struct pidlock *lock, int fd, struct stat *st,
		  int64_t deadline)
{
	bool lock_file = false;
	struct content c;
	int r = read_record(io_read_fd(lock, fd), st, &c, &lock_file);

	/* Rule C, a live writer: a running daemon's pidfile, a dotlock.
	 * Busy, whatever else: liblockfile publishes by link(2), so its
	 * lock has a second name for a moment, and we write nothing. */
	if (r == 0 && lock_file && pidfile_held(lock, &c, st))
		return TRY_BUSY;
	/* A planted hard link is named as such, whatever it holds. */
	if (r == 0 && st->st_nlink != 1)
		r = repair_links(lock, fd, &c, st);
	if (r == 0 && !lock_file)
		r = unreadable(lock, fd, st, &c);
	if (r == TRY_BUSY)
		return r;
	/* Rule C: incomplete content waits out the grace, then is ours;
	 * at once if no other description is open, as a writer's is. */
	if (r == 0 && incomplete(&c)) {
		r = nobody_writing(fd, st, &c, lock);
		if (r == 0)
			r = wait_for_writer(lock, fd, st, &c, deadline);
		else if (r > 0)
			r = 0;
	}
	if (r < 0)
		return r;
	if (r > 0 && incomplete(&c)) {
		/* Maybe a spec-only writer: busy until the grace is over. */
		note_holder(lock, PIDLOCK_STATE_HELD_SPEC, 0, &c, st);
		return TRY_BUSY;
	}
	/* ...and a writer that came during the grace may be alive. */
	if (pidfile_held(lock, &c, st))
		return TRY_BUSY;
	/* Rule B: a spec-only holder holds no kernel lock; only staleness
	 * (old AND dead) frees it. */
	if (!c.marker && content_is_spec(&c) &&
	    !inspect_spec_is_stale(&c, lock->set.stale_sec)) {
		note_holder(lock, PIDLOCK_STATE_HELD_SPEC, 0, &c, st);
		return TRY_BUSY;
	}
	r = others_hold(lock, fd, &c, st);
	if (r != 0)
		return r;
	/* The final inode check, whatever the kinds: the grace wait and the
	 * test above take time, and a spec-only peer (no kernel lock) or a
	 * holder of another kind may have replaced the file meanwhile. */
	r = existing_same_inode(lock, fd, st);
	if (r != 0)
		return r < 0 ? r : TRY_AGAIN;
	return takeover(lock, fd, st, &c);
}

/*
 * A reader that has just got its locks looks for a queued writer once
 * more.  A release that ends one of the holds of the moment wakes the
 * writer queued behind it, and the kernel lists a woken waiter again
 * only once it has run and blocked again (for a timed writer, its
 * stand-in, standin.c): a look before the take at that moment misses
 * it.  If the writer lost that race to us, it is blocked behind us by
 * now, and listed: we give way (doc/protocol.md, "Writers first").
 */
static int give_way(struct pidlock *lock, int fd, const struct stat *st,
		    unsigned int *busy)
{
	int r;

	if (!klock_writer_waits(klock_listed_dev(lock, fd, st->st_dev),
				st->st_ino))
		return 0;
	r = klock_drop(fd, lock->set.kinds);
	if (r < 0)
		return r;
	*busy = lock->set.kinds;
	return -EWOULDBLOCK;
}

/* *st: the file as it was before the lock was tried (for a busy one). */
static int lock_and_check(struct pidlock *lock, int fd, int64_t deadline,
			  struct stat *st, unsigned int *busy)
{
	int r;

	if (fstat(fd, st) < 0)
		return -errno;
	r = handle_check_type(st->st_mode);
	if (r == 0)
		r = check_owner(lock, st);
	if (r == -EPERM) {
		r = busy_or_refused(lock, fd, r, busy);
		if (r == -EWOULDBLOCK)
			*busy |= BUSY_UNKEPT;
		return r;
	}
	/* Writers first: a shared acquirer waits while an exclusive one
	 * waits in the kernel (doc/protocol.md, "Shared locks"). */
	if (r == 0 && lock->set.shared &&
	    klock_writer_waits(klock_listed_dev(lock, fd, st->st_dev),
			       st->st_ino)) {
		*busy = lock->set.kinds;
		r = -EWOULDBLOCK;
	}
	if (r == 0)
		r = klock_take_mode(fd, lock->set.kinds, lock->set.shared,
				    deadline == -1, busy);
	if (r == 0 && lock->set.shared)
		r = give_way(lock, fd, st, busy);
	if (r < 0)
		return r;
	/* The inode check: a holder may have unlinked or replaced the file
	 * after we opened it; then what we locked is not the lock. */
	r = existing_same_inode(lock, fd, st);
	if (r != 0)
		return r < 0 ? r : TRY_AGAIN;
	return decide(lock, fd, st, deadline);
}

/* klock_take_mode() takes flock first: refused a later kind, it holds
 * flock still.  -EWOULDBLOCK once nothing is held. */
static int drop_taken(const struct pidlock *lock, int fd, unsigned int busy)
{
	int r = 0;

	if ((lock->set.kinds & PIDLOCK_KIND_FLOCK) &&
	    !(busy & PIDLOCK_KIND_FLOCK))
		r = klock_drop(fd, PIDLOCK_KIND_FLOCK);
	return r < 0 ? r : -EWOULDBLOCK;
}

/*
 * The path names a file we may not lock (err: -EACCES, we cannot open
 * it for writing; -EPERM, another user's in a shared sticky directory):
 * busy while somebody holds it, else err (busy_or_refused()).  Asked
 * without a descriptor, from /proc/locks, where it can answer.  The
 * holder is read only once it is known to hold, through a descriptor of
 * a moment.  No descriptor is kept for the wait, which watches the
 * directory: a read-only one could not take the OFD lock, and any open
 * one would make a PIDLOCK_KEEP_IF_USED release keep the file, which
 * then is nobody's to take.
 */
static int unlockable_try(struct pidlock *lock, int err)
{
	unsigned int busy = 0;
	struct stat st;
	int r = busy_or_refused(lock, -1, err, &busy), fd;

	if (r == TRY_AGAIN)
		return TRY_GONE;
	if (r != -EWOULDBLOCK)
		return r;
	/* Read once per holder: every open is a chance to meet its
	 * release's test for users of the file. */
	if (lstat(lock->set.path, &st) == 0 && holder_known(lock, &st, busy))
		return TRY_BUSY;
	fd = open(lock->set.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
				  O_CLOEXEC | O_NOCTTY);
	if (fd >= 0 && fstat(fd, &st) == 0)
		note_kernel_holder(lock, fd, &st, busy);
	if (fd >= 0)
		io_close_keep_errno(fd);
	return TRY_BUSY;
}

/*
 * deadline: CLOCK_MONOTONIC ms, 0 to try once, -1 to block in the kernel.
 * *fdp: a descriptor kept from an earlier busy try, or -1.  On TRY_BUSY
 * for a kernel-lock holder without waiting, the descriptor is handed
 * back in *fdp so the wait can watch that inode; otherwise it is closed
 * or owned by the lock.
 */
int existing_try(struct pidlock *lock, int64_t deadline, int *fdp)
{
	unsigned int busy = 0;
	struct stat st;
	int fd = *fdp;
	int r;

	*fdp = -1;
	if (fd < 0) {
		fd = open_existing(lock);
		if (path_replaced(fd))
			return TRY_GONE;
		/* A lease on the file: our open started its break; the file
		 * is busy until its holder lets go, like any holder's. */
		if (fd == -EWOULDBLOCK)
			return TRY_BUSY;
		if (fd == -EACCES || fd == -EPERM)
			return unlockable_try(lock, fd);
		if (fd < 0)
			return fd;
	}
	r = lock_and_check(lock, fd, deadline, &st, &busy);
	/* A waiter holds nothing: the flock taken before the OFD lock was
	 * refused would shut out flock(1) users, and a writer queued
	 * behind it that a shared waiter then backs off for. */
	if (r == -EWOULDBLOCK)
		r = drop_taken(lock, fd, busy);
	if (r == -EWOULDBLOCK) {
		note_kernel_holder(lock, fd, &st, busy & ~BUSY_UNKEPT);
		if (busy & BUSY_UNKEPT)
			io_close_keep_errno(fd);
		else
			*fdp = fd;
		return TRY_BUSY;
	}
	if (r != TRY_HELD_BY_US)
		io_close_keep_errno(fd);
	else
		opens_taken(lock);	/* others' opens count from here */
	return path_replaced(r) ? TRY_GONE : r;
}

/*
 * Step 3 on an open descriptor of the path: lock, check the inode,
 * decide.  -EWOULDBLOCK: a kernel-lock holder, noted for
 * pidlock_holder(); the caller owns fd whatever the result, except on
 * TRY_HELD_BY_US, where the handle holds through it.
 */
int existing_lock_fd(struct pidlock *lock, int fd, int64_t deadline)
{
	unsigned int busy = 0;
	struct stat st;
	int r = lock_and_check(lock, fd, deadline, &st, &busy);

	if (r == -EWOULDBLOCK)
		note_kernel_holder(lock, fd, &st, busy & ~BUSY_UNKEPT);
	return r;
}
