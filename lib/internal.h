/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef PIDLOCK_INTERNAL_H
#define PIDLOCK_INTERNAL_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "pidlock.h"
#include "alive.h"

#define PIDLOCK_EXPORT __attribute__((visibility("default")))

/* Where the libc headers lack them (clone.c, standin.c, check.c). */
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

/* Bounded read of a lock file: a record of ours is far shorter. */
#define CONTENT_READ_MAX 4096
/* Room for our own record: plain pid, pid, timestamp, tag, marker. */
#define CONTENT_BUF_MAX (PIDLOCK_TAG_MAX + 256)
/* Upper bound of pidlock_set_grace(). */
#define PIDLOCK_GRACE_MAX_MS 10000U
/* While waiting out the grace period without inotify, look this often. */
#define GRACE_POLL_MS 5
/* Named temp files (no O_TMPFILE) start with this, in the lock's dir. */
#define TMP_PREFIX PIDLOCK_TMP_PREFIX
#define PATH_BUF (PATH_MAX + 64)

#define KINDS_ALL (PIDLOCK_KIND_FLOCK | PIDLOCK_KIND_OFD)

struct watch {
	int ifd;		/* inotify, -1 if unavailable, -2 not yet made */
	const char *dir;	/* watched only while no file watch is set */
	int dir_wd;
	int file_wd;
	ino_t ino;
	bool file_failed;	/* inotify_add_watch refused: sleep instead */
	bool standin_failed;	/* standin.c could not queue for us */
};

/*
 * The handle.  Its fields are grouped by concern, each group with its
 * own lifetime; buf alone is scratch space.
 */
struct pidlock {
	/* What the caller chose, at pidlock_new() and by the setters: no
	 * lock operation changes it. */
	struct {
		char *path;
		char *dir;	/* directory of path, for the temp file */
		const char *base;	/* last component, points into path */
		unsigned int flags;
		unsigned int kinds;	/* PIDLOCK_KIND_* we take */
		bool shared;	/* PIDLOCK_SHARED: read locks, many holders */
		mode_t mode;
		bool mode_exact;	/* pidlock_set_mode(): whatever the
					 * umask */
		unsigned int stale_sec;
		unsigned int retry_ms;
		unsigned int grace_ms;
		unsigned int lease_ms;	/* pidlock_set_lease(), 0: none */
		char tag[PIDLOCK_TAG_MAX + 1];
	} set;
	/* The lock held: set as one is taken, cleared by release and close
	 * (release.c: forget()) and at pidlock_lock_fd()'s end (adopt.c). */
	struct {
		int fd;		/* >= 0 while held */
		dev_t dev;	/* of the held file */
		ino_t ino;
		pid_t writer;	/* pid this handle last wrote into the file */
		unsigned long gen;	/* fork generation when the
					 * acquire began */
		bool keep;	/* release leaves the inode at the path */
		bool queued;	/* a shared release saw somebody queued
				 * in the kernel before it upgraded */
		pid_t fd_pid;	/* pidlock_lock_fd(): the pid its record
				 * names, and the file is kept; else 0 */
		bool fd_given;	/* pidlock_fd() told the caller the fd */
		signed char noappend;	/* RWF_NOAPPEND on it, as the hand-out
					 * found: 1 honoured, -1 ignored (a
					 * stacked file system), 0 untried */
		struct pidlock *self;	/* the handle, for pidlock_fd()'s
					 * const one to note the above */
		int wait_ifd;	/* the wait's inotify, closed after release */
		bool lost;	/* pidlock_check() or a write found the lock
				 * another's: so it stays until release */
		uint64_t token;	/* PIDLOCK_TOKEN: this grant's, else 0 */
		int64_t reached_ms;	/* CLOCK_BOOTTIME ms at which the last
					 * call began that the server answered
					 * (the holder's lease, check.c) */
	} hold;
	/* pidlock_check()'s question on a shared file system, asked by a
	 * helper so that a server that does not answer cannot hold the
	 * caller (check.c); pid 0 when none is under way. */
	struct {
		pid_t pid;
		int pidfd;
		int rfd, wfd;	/* the answer's pipe */
		int cfd;	/* the helper's copy of the lock descriptor */
		int64_t asked_ms;	/* when it began (CLOCK_BOOTTIME) */
	} check;
	/* pidlock_lock_fd() and pidlock_unlock_fd() on a caller's
	 * description that cannot read, or that appends (a shell's 9> and
	 * 9>>): the record is read, and if need be written, through a
	 * second open of the same inode (adopt.c), while the kernel locks,
	 * the lease test and the inode checks stay on the caller's. */
	struct {
		bool on;
		int rfd;	/* reads the record */
		int wfd;	/* writes it in place */
	} io;
	/* An event loop's wait (async.c), kept between its calls: begun
	 * by its first call, over when it ends or is cancelled. */
	struct {
		bool on;	/* an event loop's wait is under way */
		bool busy;
		int fd;		/* its kept descriptor, or -1 */
		int64_t due;	/* CLOCK_MONOTONIC ms of its next poll */
		struct watch w;
		pid_t pid;	/* the process that began the wait: a fork's
				 * child has copies of its descriptors */
	} wait;
	/* The busy holder the last try found (existing.c), for the next
	 * try and pidlock_holder(); forgotten when an acquire or
	 * pidlock_lock_fd() begins. */
	struct {
		bool known;	/* the fields below are set */
		dev_t dev;	/* file of the holder found by the last try */
		ino_t ino;
		struct timespec mtime;	/* and its record's last change */
		off_t size;
		struct pidlock_info holder;
	} seen;
	/* Who else opened the file since this hold began (opens.c): the
	 * entry is the handle's for its life in one process, the rest is
	 * set as an acquire begins and as it opens or publishes. */
	struct {
		int entry;	/* in opens.c's table, -1: none */
		bool ok;	/* counted since the acquire began */
		bool made;	/* our publish made the inode */
		bool took;	/* counted from before our open of it */
		unsigned int own;	/* our own opens of the name since */
		uint64_t id, epoch, creations, opens;	/* as then */
	} opens;
	/* What the directory and its file system were found to do: learned
	 * once, kept for the handle's life. */
	struct {
		int link_mode;	/* how to publish a temp file, see create.c */
		bool dir_checked;
		bool swept;	/* leftover temp files swept once */
		bool left_file;	/* our last release left the file at the path */
		bool fs_checked;	/* the file system keeps the protocol */
		struct {	/* its client may cache names (remote.c) */
			bool known;
			bool caches;
			dev_t dev;
		} remote;
		bool listed_known;	/* /proc/locks lists files of device */
		dev_t listed_for;	/* listed_for under listed_dev */
		dev_t listed_dev;
	} cache;
	char buf[CONTENT_BUF_MAX];	/* scratch: the record being written */
};

/* A writer's host: its name (uname(2), cleaned as a tag is) and the
 * kernel's boot id (a UUID; "" where /proc cannot tell). */
#define HOST_NAME_LEN PIDLOCK_HOST_MAX
#define HOST_BOOT_LEN 36
struct host_id {
	char name[HOST_NAME_LEN + 1];
	char boot[HOST_BOOT_LEN + 1];
};

/* What a parse of lock file content found. */
struct content {
	pid_t pid;		/* pid= value, 0 if missing or invalid */
	pid_t bare_pid;		/* a bare number on the first line, 0 if none */
	bool has_timestamp;
	int64_t timestamp;
	unsigned int marker;	/* PIDLOCK_KIND_* named by lock=, 0 if none */
	bool keep;		/* keep=1: the inode stays at the path for good */
	bool released;		/* released=: its last holder let it go */
	bool exit_releases;	/* release=exit: its holder's exit let it go */
	bool shared;		/* shared=1: held by shared holders */
	bool empty;		/* nothing but white space */
	char tag[PIDLOCK_TAG_MAX + 1];
	char host[HOST_NAME_LEN + 1];	/* host=: who wrote it, for people */
	char boot[HOST_BOOT_LEN + 1];	/* boot=: under which kernel, "" */
	uint64_t pidns;		/* pidns=: the writer's pid namespace, 0 */
	size_t head;		/* content_head_tail(): our record's length
				 * when the holder's bytes follow it, else 0 */
};


#define WATCH_NAMES (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)
#define WATCH_WRITES (IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF)
#define WATCH_RELEASE (IN_CLOSE_WRITE | IN_CLOSE_NOWRITE | IN_ATTRIB | \
		       IN_DELETE_SELF | IN_MOVE_SELF)

/* TRY_AGAIN: the file we locked was released or replaced meanwhile;
 * TRY_GONE: the file the path named was gone before we could lock and
 * check it (acquire.c, again_pause()). */
enum try_result { TRY_HELD_BY_US = 1, TRY_BUSY, TRY_AGAIN, TRY_GONE };

/*
 * Functions shared between files carry their file's name as a prefix,
 * so that a call says where to look; static ones do not.
 */

/* content.c */
#define FMT_PLAIN_PID 1U
#define FMT_KEEP 2U
/* PID_MAX_LIMIT: pids are below it, so no process has it. */
#define RELEASED_PID_TEXT "4194304"
#define FMT_EXIT_RELEASES 4U
#define FMT_SHARED 8U
/* Every record a shared holder writes is padded to this length at
 * least, so that concurrent writers all write the same length. */
#define SHARED_RECORD_LEN 512
size_t content_format(char *buf, size_t size, pid_t pid, int64_t now,
		      const char *tag, unsigned int kinds, unsigned int opts);
size_t content_format_released(char *buf, size_t size, int64_t now,
			       unsigned int kinds, unsigned int opts);
void content_parse(const char *data, size_t len, struct content *c);
bool content_is_lock_file(const char *data, size_t len, int64_t size);
size_t content_head(const char *data, size_t len);
size_t content_head_tail(const char *data, size_t len);
bool content_is_spec(const struct content *c);
void content_clean_tag(char *dst, size_t size, const char *src, size_t len);
bool content_boot_ok(const char *s, const char *end);
size_t content_put_token(char *buf, size_t size, size_t len,
			 uint64_t token);
size_t content_put_host(char *buf, size_t size, size_t len,
			const struct host_id *h);

/* clone.c */
unsigned long clone_files_flag(void);
pid_t clone_fork(unsigned long flags, int *pidfd);

/* standin.c */
bool standin_wanted(const struct pidlock *lock, const struct watch *w,
		    int fd, int64_t deadline);
int standin_wait(const struct pidlock *lock, struct watch *w, int fd,
		 int64_t deadline);

/* klock.c */
int klock_take(int fd, unsigned int kinds, bool wait, unsigned int *busy);
int klock_take_mode(int fd, unsigned int kinds, bool shared, bool wait,
		    unsigned int *busy);
int klock_try_exclusive(int fd, unsigned int kinds);
int klock_test_exclusive(int fd, unsigned int kinds, unsigned int *held);
int klock_test_others(int fd, unsigned int kinds, bool shared,
		      unsigned int *held);
bool klock_shared_excludes(int fd, unsigned int kinds);
bool klock_writer_waits(dev_t dev, ino_t ino);
int klock_ofd_conflict(int fd);
bool klock_anyone_waits(ino_t ino);
bool klock_fd_listed_dev(int fd, dev_t *dev);
dev_t klock_listed_dev(struct pidlock *lock, int fd, dev_t st_dev);
#define KLOCK_PIDS_MAX 64
struct klock_holders {
	unsigned int kinds;	/* PIDLOCK_KIND_* listed */
	bool shared;		/* a read lock among them */
	bool elsewhere;		/* the inode number listed on another device */
	bool torn;		/* read in pieces: a row may be missing */
	unsigned int flock_rows;
	unsigned int ofd_rows;
	unsigned int npids;
	pid_t pids[KLOCK_PIDS_MAX];	/* pids named, in /proc/locks order */
};
int klock_holders(dev_t dev, ino_t ino, bool any_dev, struct klock_holders *h);
#define KLOCK_TORN_READS 8
int klock_holders_n(dev_t dev, ino_t ino, bool any_dev,
		    struct klock_holders *h, int readings);
int klock_test(int fd, unsigned int kinds, unsigned int *held);
int klock_query_ofd(int fd, pid_t *pid);
int klock_probe_flock(int fd);
int klock_probe_flock_mode(int fd, bool *shared);
bool klock_list_partial(void);
int klock_drop(int fd, unsigned int kinds);

/* host.c */
const struct host_id *host_self(void);
bool host_foreign(const struct content *c);
int host_pid_alive(const struct content *c, pid_t pid);

/* pidns.c */
uint64_t pidns_self(void);
int pidns_proc_ours(int procdir);
bool pidns_judged(const struct content *c);

/* io.c */
int io_rc_filter(int r);
ssize_t io_read_bounded(int fd, char *buf, size_t size);
/* The descriptor the record of `fd` is read, or written, through:
 * fd itself, or the second open of a borrowed description (lock->io). */
static inline int io_read_fd(const struct pidlock *lock, int fd)
{
	return lock->io.on ? lock->io.rfd : fd;
}

static inline int io_write_fd(const struct pidlock *lock, int fd)
{
	return lock->io.on ? lock->io.wfd : fd;
}

/* split.c: the second open of a description that cannot read or appends */
int split_begin(struct pidlock *lock, int fd);
void split_end(struct pidlock *lock);
void split_suspend(struct pidlock *lock);
int split_resume(struct pidlock *lock, int fd);
ssize_t io_read_settled(int fd, char *buf, size_t size, struct stat *st);
/* What a record is written over: the file's length, and the length of
 * our record in it when the holder's bytes follow (content_head_tail()),
 * else 0. */
struct io_old {
	size_t size;
	size_t head;
};

/* How: IO_SYNC fdatasync(2)s; IO_KEEP_TAIL keeps what follows the old
 * record (the holder rewrites its own), else a longer file is cut at the
 * new record's end (a takeover); IO_APPENDS: the description may have
 * O_APPEND (pidlock_fd() handed it out, or a fork may have), with
 * IO_NOAPPEND_OK where the hand-out found RWF_NOAPPEND honoured and
 * IO_NOAPPEND_BAD where it found it ignored; IO_ROOM pads the record to
 * RECORD_ROOM. */
#define IO_SYNC 1U
#define IO_KEEP_TAIL 2U
#define IO_APPENDS 4U
#define IO_ROOM 8U
#define IO_NOAPPEND_OK 16U
#define IO_NOAPPEND_BAD 32U
/* Room that any record of ours fits, with its empty line: what a record
 * that the holder's bytes may follow is padded to, so that a rewrite
 * (another pid, a released record) never runs into them. */
#define RECORD_ROOM SHARED_RECORD_LEN
/* IO_SYNC where the handle asks for it (PIDLOCK_SYNC): see
 * doc/protocol.md, "Durability", for why the default does not. */
static inline unsigned int io_sync_how(const struct pidlock *lock)
{
	return (lock->set.flags & PIDLOCK_SYNC) ? IO_SYNC : 0;
}
int io_write_content(int fd, const char *buf, size_t len,
		     const struct io_old *old, unsigned int how);
int io_write_record(struct pidlock *lock, int fd, pid_t pid, bool keep,
		    const struct io_old *old, unsigned int how);
int io_held_old(const struct pidlock *lock, struct io_old *old);
unsigned int io_hold_how(const struct pidlock *lock);
int io_hand_out(const struct pidlock *lock, signed char *noappend);
int64_t io_now_sec(void);
int64_t io_now_ms(void);
int64_t io_boot_ms(void);
int64_t io_mtime_ns(const struct stat *st);
int64_t io_grace_left_ms(const struct stat *st, unsigned int grace_ms);
/* close(2) in cleanup, of a descriptor whose close has nothing to
 * report (read-only, or its locks already dropped); errno stays the
 * caller's.  Inline: files of every layer use it, and a call into io.c
 * would tie them to what io.c calls. */
static inline void io_close_keep_errno(int fd)
{
	int saved = errno;

	if (fd >= 0)
		(void)close(fd);
	errno = saved;
}

/* A pause of ns nanoseconds, whole whatever signal handlers run: a
 * pause that is there to outlast something (a look, a record half
 * written) and ended by each signal (a program's interval timer) would
 * outlast nothing.  To a deadline, not for the time left: each restart
 * of a relative sleep adds the timer's slack, and signals every 50 us
 * or so would keep it from ever ending.  Waits that end on a signal
 * (-EINTR to the caller) use poll(2) instead.  Inline, as
 * io_close_keep_errno(). */
static inline void io_pause(long ns)
{
	struct timespec end;

	if (clock_gettime(CLOCK_MONOTONIC, &end) < 0)
		return;
	end.tv_sec += ns / 1000000000L;
	end.tv_nsec += ns % 1000000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &end, NULL) ==
	       EINTR)
		;
}

/* proclocks.c: fn gets each line, without its newline; nonzero stops. */
typedef int (*proclocks_fn)(char *line, void *arg);
int proclocks_each(proclocks_fn fn, void *arg, bool *torn);

/* fstype.c: a shared file system's client, by statfs(2) */
bool fstype_caching(unsigned long type);
int fstype_others_unseen(int fd);

/* remote.c */
int remote_same_inode(struct pidlock *lock, int fd, const struct stat *st);
bool remote_locks_local(const struct pidlock *lock, int fd);

/* How create.c publishes (struct pidlock's link_mode). */
enum { PUB_RENAME = 0, PUB_TMPFILE, PUB_TMPFILE_PROC, PUB_IN_PLACE };

/* lease.c */
/* lease.c's "the question could not be put": no errno the kernel's
 * F_SETLEASE gives. */
#define LEASE_UNASKED (-ECHILD)
int lease_alone(int fd, const struct stat *st, unsigned int grace_ms);
int lease_others_open(int fd);
int lease_open(const char *path, int flags);

/* handle-check.c */
int handle_check_path(const char *path);
int handle_check_type(mode_t mode);
char *handle_dir_of(const char *path);
int handle_check_dir(const char *dir);

/* hold.c */
void hold_clear(struct pidlock *lock);

/* check.c */
int check_still_ours(struct pidlock *lock, bool everywhere);
void check_learn(struct pidlock *lock);

/* token.c */
int token_publish(struct pidlock *lock);
void check_abandon(struct pidlock *lock);

/* create.c */
int create_publish(struct pidlock *lock);

/* acquire.c: the pieces of pidlock_acquire() that async.c shares.  The
 * first lock's file system check found no file to ask (internal code,
 * never returned); the acquire then starts over, this often. */
#define FS_CHECK_AGAIN (-10000)
#define FS_CHECK_TRIES 8
int acquire_begin(struct pidlock *lock);
int acquire_loop(struct pidlock *lock, int timeout_ms, struct watch *w,
		 int *fdp, bool *busyp);
int acquire_check_fs(struct pidlock *lock, int fd, dev_t dev,
		     ino_t ino);
int acquire_arm(struct pidlock *lock, struct watch *w, int *fdp);
void acquire_check_kept(struct pidlock *lock, struct watch *w, int *fdp);
int acquire_end(struct pidlock *lock, struct watch *w, int r);

/* async-state.c: an event loop's wait, ended (async.c begins it) */
bool async_inherited(const struct pidlock *lock);
void async_cancel(struct pidlock *lock);

/* existing.c */
int existing_names_inode(const struct pidlock *lock, int fd, struct stat *st);
int existing_same_inode(struct pidlock *lock, int fd, struct stat *st);
bool path_replaced(int r);
int existing_try(struct pidlock *lock, int64_t deadline, int *fdp);
/* adopt.c: the second open of a borrowed description, closed around
 * the lease test (lock->io). */
int existing_lock_fd(struct pidlock *lock, int fd, int64_t deadline);

/* self.c */
void self_init(void);
unsigned long self_fork_generation(void);
pid_t self_pid(void);
/* true: no fork since `gen` and none can start until self_close_end():
 * the descriptor about to be closed is nobody else's. */
bool self_close_begin(unsigned long gen);
void self_close_end(void);

/* cancel.c: around an exported call that holds state across a
 * cancellation point; cancel_off() returns what cancel_restore() puts
 * back. */
int cancel_off(void);
void cancel_restore(int old);

/* shared.c */
#define LET_GO 1
int shared_release(struct pidlock *lock);
int shared_adopt_keep(struct pidlock *lock);

/* leftover.c */
void leftover_sweep(const struct pidlock *lock);

/* writer.c: on either side of the file's mtime, how far a process
 * start may fall and still count as that of its writer. */
#define WRITER_SLACK_SEC 2
bool writer_may_hold(pid_t pid, const struct stat *st);
bool writer_running(pid_t pid);

/* inspect.c */
int inspect_open(const char *path, struct stat *st);
int inspect_fd(int fd, struct stat *st, struct pidlock_info *info,
	       unsigned int stale_sec, int readings);
bool inspect_spec_is_stale(const struct content *c, unsigned int stale_sec);
int inspect_state(const char *path, struct pidlock_info *info,
		  unsigned int stale_sec);
void inspect_fill_info(struct pidlock_info *info, enum pidlock_state state,
		       unsigned int kernel, const struct content *c,
		       const struct stat *st);

/* opens.c */
/* NONE: nobody else; BEFORE: the grant of a file that was there, and
 * no open of its name since (whoever has it open opened it before the
 * grant); UNKNOWN: ask the kernel. */
enum opens_answer { OPENS_NONE, OPENS_BEFORE, OPENS_UNKNOWN };
void opens_begin(struct pidlock *lock);
void opens_taken(struct pidlock *lock);
void opens_made(struct pidlock *lock, unsigned int own);
void opens_own(struct pidlock *lock);
enum opens_answer opens_answer(struct pidlock *lock, nlink_t links);
void opens_free(struct pidlock *lock);

/* wait.c */
void wait_init(struct watch *w, const char *dir);
int wait_watch_file(struct watch *w, const char *path, uint32_t mask);
void wait_unwatch_file(struct watch *w);
void wait_watch_dir(struct watch *w);
void wait_unwatch_dir(struct watch *w);
typedef bool (*wait_hit_fn)(const struct inotify_event *ev, const void *arg);
int wait_read_events(int ifd, wait_hit_fn hit, const void *arg);
int wait_poll_events(int ifd, int64_t ms, wait_hit_fn hit, const void *arg);
int wait_drain(struct watch *w, const char *base);
int wait_for_event(struct watch *w, const char *base, int64_t timeout_ms,
		   int64_t poll_ms);
int64_t wait_left_ms(const struct pidlock *lock, int64_t deadline);
void wait_close(struct watch *w);
void wait_drop_kept(struct watch *w, int *fdp);

#endif
