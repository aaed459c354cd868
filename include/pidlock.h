/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpidlock - file locks that never go stale and that other lockers
 * on the same path understand.
 *
 * Functions return 0 (or a non-negative value where documented) on
 * success and a negative errno value on failure; the pidlock_pidfile_*
 * ones follow pidfile(3) instead (-1 or NULL, and errno).  The codes are
 * part of the API: they are those listed under ERRORS in pidlock(3), and
 * each function's page says which it returns.  Any other error of a
 * system call is returned as -EIO.  See pidlock(3).
 */
#ifndef PIDLOCK_H
#define PIDLOCK_H

#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque lock handle, made once with pidlock_new() and reused. */
struct pidlock;

/* Flags for pidlock_new(). Neither *_ONLY flag: both kernel locks. */
enum {
	/** Take only flock(LOCK_EX); for peers that use flock(2). */
	PIDLOCK_FLOCK_ONLY = 1U << 0,
	/** Take only the OFD fcntl write lock; needs write access. */
	PIDLOCK_OFD_ONLY = 1U << 1,
	/** No fdatasync(2) of the record: the default after 1.3.0 (see
	 * PIDLOCK_SYNC), kept so that code written for 1.3 builds. */
	PIDLOCK_NO_SYNC = 1U << 2,
	/** Write the bare pid as the first line (classic pidfile). */
	PIDLOCK_PLAIN_PID = 1U << 3,
	/** Never unlink on release; the inode at the path stays. */
	PIDLOCK_KEEP_FILE = 1U << 4,
	/** The holder's exit is its release (a lock handed to a program it
	 * execs): a file left with no kernel lock reads as free, not
	 * abandoned. Since 1.1.0. */
	PIDLOCK_EXIT_RELEASES = 1U << 5,
	/** A shared (read) lock: shared holders hold it together, and an
	 * exclusive holder excludes them (flock(2) LOCK_SH and an OFD read
	 * lock); the last one out removes the file.  Since 1.2.0. */
	PIDLOCK_SHARED = 1U << 6,
	/** Only this host uses the directory: lock where the file system
	 * keeps its locks on this host (NFS nolock or local_lock=, CIFS
	 * nobrl, sshfs, ...), which is refused otherwise.  Since 1.3.0. */
	PIDLOCK_HOST_LOCAL = 1U << 7,
	/** Release leaves the file at the path, marked released, when
	 * another process is blocked on it or has it open: an inode-blind
	 * locker (flock(1) on a path libpidlock created) would otherwise
	 * hold the unlinked inode while the next acquirer makes a new
	 * file.  Answered by the opens the process's inotify watch saw
	 * (one read per release), else by /proc/locks and a lease test;
	 * pidlock(1) sets it.  Added after 1.3.0. */
	PIDLOCK_KEEP_IF_USED = 1U << 8,
	/** fdatasync(2) the record after each write (create, takeover,
	 * refresh, a kept file's released record), as the File-Based
	 * Semaphore spec asks: a power loss then leaves the last record
	 * whole.  Costs a journal commit per write on a disk.  Added after
	 * 1.3.0; what every handle did until then. */
	PIDLOCK_SYNC = 1U << 9,
	/** A fencing token for each grant: a 64-bit number greater than
	 * every earlier holder's of the path, on every host, kept in an
	 * extended attribute of the directory and written as token= in
	 * the record (pidlock_token()).  Not with PIDLOCK_SHARED.  Since
	 * 1.4.0. */
	PIDLOCK_TOKEN = 1U << 10,
};

/* Kernel lock kinds, as reported in struct pidlock_info. */
enum {
	PIDLOCK_KIND_FLOCK = 1U << 0,	/**< flock(2) LOCK_EX */
	PIDLOCK_KIND_OFD = 1U << 1,	/**< OFD or POSIX fcntl(2) write lock */
};

/** Defaults, see the setters. */
#define PIDLOCK_DEFAULT_STALE_SEC 3600U
#define PIDLOCK_DEFAULT_RETRY_MS 100U
#define PIDLOCK_DEFAULT_GRACE_MS 200U
#define PIDLOCK_DEFAULT_MODE 0644U
/** Names of the library's own temporary files in the lock's directory
 * start with this (used only where O_TMPFILE is unsupported). */
#define PIDLOCK_TMP_PREFIX ".pidlock-tmp-"
/** Longest tag in bytes, without the terminating NUL. */
#define PIDLOCK_TAG_MAX 255

/** What pidlock_inspect() or a failed acquire found at a path. */
enum pidlock_state {
	/** Nobody holds it: no file at the path, or a file nobody holds a
	 * kernel lock on that its last holder released (our released record)
	 * or that an inode-blind locker left (an empty file). */
	PIDLOCK_STATE_FREE = 0,
	/** A process holds a kernel lock on the file at the path. */
	PIDLOCK_STATE_HELD = 1,
	/** A spec-only holder: complete content, no kernel lock, not stale. */
	PIDLOCK_STATE_HELD_SPEC = 2,
	/** A file no process holds a kernel lock on, whose holder is gone
	 * without releasing it (crashed): our record, a bare pid, or
	 * incomplete content. Free for kernel-lock lockers; spec-only
	 * peers see it as held until it is stale. */
	PIDLOCK_STATE_ABANDONED = 3,
	/** A spec-only lock past its stale timeout whose pid is not alive. */
	PIDLOCK_STATE_STALE = 4,
	/** The file exists but could not be read or checked. */
	PIDLOCK_STATE_UNREADABLE = 5,
	/** The file holds other data (a script, a document, anything over
	 * PIDLOCK_CONTENT_MAX bytes): no locker could have left it. The
	 * library never writes, truncates or unlinks it; acquire returns
	 * -EBADMSG. Since 1.1.0. */
	PIDLOCK_STATE_NOT_LOCK_FILE = 6,
	/** A pidfile or dotlock held without a kernel lock: a bare pid, or
	 * a pid= line without a timestamp, naming a live process that
	 * started before the file was last written, in this boot, so that
	 * it may be the file's writer (a running daemon's hand-written
	 * pidfile, a dotlockfile(1) lock). Since 1.3.0. */
	PIDLOCK_STATE_HELD_PIDFILE = 7,
};

/** Largest file the library takes for a lock file; see pidlock(5). */
#define PIDLOCK_CONTENT_MAX 4096

/** Details of a lock file.  Strings are NUL-terminated and cleaned. */
struct pidlock_info {
	enum pidlock_state state;
	/** pid from the content (pid= line, else a bare first-line pid); 0 if none. */
	pid_t pid;
	/** 1 if pid names a live process, 0 if not, -1 if unknown. */
	int pid_alive;
	/** Whether the content has a parsable timestamp= line. */
	int has_timestamp;
	/** timestamp= value in Unix seconds. */
	int64_t timestamp;
	/** PIDLOCK_KIND_* bits the kernel reports held on the file. */
	unsigned int kernel_locks;
	/** PIDLOCK_KIND_* bits named by the file's lock= marker; 0 if none. */
	unsigned int marker;
	/** pid the kernel names for a lock (/proc/locks); 0 if unknown. */
	pid_t kernel_pid;
	/** The file's modification time, Unix seconds. */
	int64_t mtime;
	/** errno of the failure, for PIDLOCK_STATE_UNREADABLE. */
	int error;
	/** Content of the tag= line, cleaned of control characters. */
	char tag[PIDLOCK_TAG_MAX + 1];
	/** 1 if the lock is held shared: the kernel lists a read lock on
	 * the file, or, with none listed, the record says shared=1.  Since
	 * 1.2.0 (zero before). */
	uint32_t shared;
	/** How many holders the kernel lists, at least: the larger of its
	 * flock(2) rows and its fcntl(2) rows for the file (a libpidlock
	 * holder has one of each).  Since 1.2.0 (zero before). */
	uint32_t holders;
	/** 1 if the kernel reports a lock on the file that /proc/locks does
	 * not list for this process: its taker is in a pid namespace this
	 * one cannot see into (another container, the host), so no pid can
	 * be named.  kernel_pid is then 0.  Since 1.3.0 (zero before). */
	uint32_t holder_hidden;
	/** 1 if the record names a kernel other than this one (its boot=
	 * line): written on another host of a shared file system, or on
	 * this one before a reboot.  Its pid is not judged here, and
	 * pid_alive is -1; pidlock_record_host() names the host.  Since
	 * 1.3.0 (zero before). */
	uint32_t foreign;
	/** Reserved for later versions; zero. */
	uint32_t reserved[4];
};

/* Make a handle for the lock at path, with PIDLOCK_* flags; it holds
 * nothing yet.  See pidlock_new(3). */
int pidlock_new(struct pidlock **lockp, const char *path, unsigned int flags);
/* Release the lock if the handle holds it, then free the handle.  See
 * pidlock_free(3). */
void pidlock_free(struct pidlock *lock);

/* The text of the tag= line written with the record (cleaned, at most
 * PIDLOCK_TAG_MAX bytes).  See pidlock_set_tag(3). */
int pidlock_set_tag(struct pidlock *lock, const char *tag);
/* The mode of a lock file the handle creates.  See pidlock_set_mode(3). */
int pidlock_set_mode(struct pidlock *lock, mode_t mode);
/* The age after which a spec-only holder's record is stale, if its pid
 * is dead too.  See pidlock_set_stale_timeout(3). */
int pidlock_set_stale_timeout(struct pidlock *lock, unsigned int seconds);
/* The longest a wait sleeps between two looks at the path.  See
 * pidlock_set_retry_interval(3). */
int pidlock_set_retry_interval(struct pidlock *lock, unsigned int ms);
/* How long an incomplete record is given to be written before it is
 * taken over.  See pidlock_set_grace(3). */
int pidlock_set_grace(struct pidlock *lock, unsigned int ms);

/* Take the lock: timeout_ms 0 tries once, > 0 waits that long, < 0
 * waits without a limit.  See pidlock_acquire(3). */
int pidlock_acquire(struct pidlock *lock, int timeout_ms);
/* Try once, for an event loop: 0 when held; -EWOULDBLOCK when busy, with
 * *pollfd (-1 if none) to watch for POLLIN and *timeout_ms, the longest
 * to wait before calling again.  pidlock_close() or pidlock_free()
 * cancels the wait.  See pidlock_acquire_async(3).  Since 1.2.0. */
int pidlock_acquire_async(struct pidlock *lock, int *pollfd, int *timeout_ms);
/* Let go of the lock, removing the file if the record is still ours.
 * See pidlock_release(3). */
int pidlock_release(struct pidlock *lock);
/* Close the held descriptor and leave the file as it is (a parent that
 * hands the lock to a child).  See pidlock_close(3). */
int pidlock_close(struct pidlock *lock);
/* Rewrite the record with this process's pid and the time now.  See
 * pidlock_refresh(3). */
int pidlock_refresh(struct pidlock *lock);
/* Whether the path still names the file the handle holds.  See
 * pidlock_verify(3). */
int pidlock_verify(struct pidlock *lock);
/* Whether the lock is still this handle's where it counts, on a shared
 * file system's server: 0 yes, -ENOLCK no (for good), -ETIMEDOUT no
 * answer within timeout_ms (< 0: no limit).  Never waits longer, even
 * on a server that does not answer.  Since 1.4.0.  See
 * pidlock_check(3). */
int pidlock_check(struct pidlock *lock, int timeout_ms);
/** The variable pidlock(1) --token sets to the hold's fencing token for
 * the command it runs. */
#define PIDLOCK_TOKEN_ENV "PIDLOCK_TOKEN"
/* The fencing token of the hold, with PIDLOCK_TOKEN: greater than every
 * earlier holder's of the path.  Since 1.4.0.  See pidlock_token(3). */
int pidlock_token(const struct pidlock *lock, uint64_t *token);
/** Longest lease pidlock_set_lease() takes: one day. */
#define PIDLOCK_LEASE_MAX_MS 86400000U
/* The holder's own lease: count the lock as lost once no call has
 * reached the server for ms (0: never).  Since 1.4.0.  See
 * pidlock_set_lease(3). */
int pidlock_set_lease(struct pidlock *lock, unsigned int ms);
/* The descriptor that holds the kernel locks.  See pidlock_fd(3). */
int pidlock_fd(const struct pidlock *lock);
/* The handle's path.  See pidlock_path(3). */
const char *pidlock_path(const struct pidlock *lock);
/* Who held the lock when the last acquire found it busy.  See
 * pidlock_holder(3). */
int pidlock_holder(const struct pidlock *lock, struct pidlock_info *info);

/* ---- A caller's descriptor (a shell's exec 9<>path) -------------------
 * Since 1.2.0. */

/* Take the lock on fd, the caller's own descriptor of the handle's path,
 * open for reading and writing: the kernel locks go on its open file
 * description, and the record names pid (0: the caller).  The file is
 * kept at the path.  timeout_ms as for pidlock_acquire(); the handle
 * holds nothing afterwards.  See pidlock_lock_fd(3). */
int pidlock_lock_fd(struct pidlock *lock, int fd, pid_t pid, int timeout_ms);
/* Let go of the lock that fd's open file description holds on the
 * handle's path: mark the record released in place, drop the kernel
 * locks; fd stays open.  See pidlock_unlock_fd(3). */
int pidlock_unlock_fd(struct pidlock *lock, int fd);

/* What is at path and who holds it, without taking the lock; stale_sec
 * 0 is the default.  See pidlock_inspect(3). */
int pidlock_inspect(const char *path, struct pidlock_info *info,
		    unsigned int stale_sec);
/* The host that wrote the record at path, into host (size bytes, ""
 * when the record names none); 1 if it names a kernel other than this
 * one, 0 if not.  Since 1.3.0.  See pidlock_record_host(3). */
int pidlock_record_host(const char *path, char *host, size_t size);
/** The longest host name a record carries, without the '\0'. */
#define PIDLOCK_HOST_MAX 64

/* ---- The holder, from outside (since 1.3.0) ---------------------------
 * A pidfd (pidfd_open(2)) for each process that holds the lock at path,
 * each proven to hold it by the kernel lock that its open file
 * description holds, looked at after the pidfd was opened: a process that
 * took over the pid meanwhile is never returned.  For an exclusive lock,
 * the process its record names (the one of several that share the
 * descriptor), else the one the kernel names; for a shared lock, every
 * holder.  Returns how many hold it (>= 1); the first n of them are stored
 * in pidfds (close-on-exec) and pids, the others not opened.  -ESRCH: the
 * lock is free; -ENOLCK: its holder holds no kernel lock (a spec-only
 * record, a pidfile, a dotlock), so no process can be proven; -EREMOTE:
 * a kernel lock whose holder is out of sight (another pid namespace,
 * another host).  See pidlock_holder_pidfds(3). */
int pidlock_holder_pidfds(const char *path, int *pidfds, pid_t *pids,
			  unsigned int n);
/* Wait until nobody holds the lock at path, without taking it, for at
 * most timeout_ms (-1: no limit; 0: only look): asleep in poll(2) on
 * inotify and the holder's pidfd, never spinning.  0: free; -EWOULDBLOCK
 * (timeout 0) or -ETIMEDOUT: still held.  See pidlock_wait_free(3). */
int pidlock_wait_free(const char *path, int timeout_ms);
/* The name of a state, such as "held"; NULL for an unknown value.  See
 * pidlock_state_name(3). */
const char *pidlock_state_name(enum pidlock_state state);

/* ---- Semaphores: N slots, each a lock of its own (since 1.2.0) --------
 * Slot k of PATH is the lock file "PATH.k" (k from 0 to n - 1, decimal),
 * a full lock of this library: at most n holders at once, and a holder
 * that dies frees its slot at once.  See pidlock_slots_new(3). */

/** Opaque semaphore handle, made with pidlock_slots_new(). */
struct pidlock_slots;
/** Most slots one semaphore may have. */
#define PIDLOCK_SLOTS_MAX 256U
/** The variable pidlock(1) --slots sets to the slot number for the
 * command it runs. */
#define PIDLOCK_SLOT_ENV "PIDLOCK_SLOT"

/* Make a handle for the n slots PATH.0 ... PATH.n-1, each with the
 * PIDLOCK_* flags; it holds nothing yet.  See pidlock_slots_new(3). */
int pidlock_slots_new(struct pidlock_slots **slotsp, const char *path,
		      unsigned int n, unsigned int flags);
/* Release the slot held, if any, then free the handle.  See
 * pidlock_slots_free(3). */
void pidlock_slots_free(struct pidlock_slots *slots);
/* Take a free slot: timeout_ms 0 tries each slot once, > 0 waits that
 * long, < 0 waits without a limit.  Returns the slot number (0 to
 * n - 1).  See pidlock_slots_acquire(3). */
int pidlock_slots_acquire(struct pidlock_slots *slots, int timeout_ms);
/* Release the slot held.  See pidlock_slots_release(3). */
int pidlock_slots_release(struct pidlock_slots *slots);
/* The number of the slot held, or -ENOLCK.  See pidlock_slots_slot(3). */
int pidlock_slots_slot(const struct pidlock_slots *slots);
/* The lock handle of slot `slot`, for the pidlock_set_*() settings and,
 * while it is held, pidlock_fd(), pidlock_refresh(), pidlock_verify();
 * NULL if out of range.  See pidlock_slots_lock(3). */
struct pidlock *pidlock_slots_lock(struct pidlock_slots *slots,
				   unsigned int slot);
/* ---- end of semaphores ----------------------------------------------- */

/* ---- Daemons and pidfile(3) --------------------------------------------
 * <pidlock-pidfile.h> maps the pidfile_* names to the pidlock_pidfile_*
 * functions below. */

/** Directory of pidlock_daemon_open()'s default path, /run/NAME.pid. */
#define PIDLOCK_DAEMON_RUNDIR "/run"
/** A refresher interval well inside the default stale timeout. */
#define PIDLOCK_DAEMON_REFRESH_MS 600000U

/* Take a daemon's pidfile lock before it forks (path NULL: /run/NAME.pid);
 * -EEXIST and *holder if another copy runs.  See pidlock_daemon_open(3). */
int pidlock_daemon_open(struct pidlock **lockp, const char *path,
			unsigned int flags, mode_t mode, pid_t *holder);
/* In the forked child: write its pid, so the lock is the child's.  See
 * pidlock_daemon_rebind(3). */
int pidlock_daemon_rebind(struct pidlock *lock);

/** Background refresher thread, see pidlock_daemon_refresher_start(3). */
struct pidlock_refresher;
/* Start a thread that refreshes the record every interval_ms.  See
 * pidlock_daemon_refresher_start(3). */
int pidlock_daemon_refresher_start(struct pidlock_refresher **refp,
				   struct pidlock *lock,
				   unsigned int interval_ms);
/* The result of the thread's last refresh: 0, or its negative errno.
 * See pidlock_daemon_refresher_status(3). */
int pidlock_daemon_refresher_status(const struct pidlock_refresher *ref);
/* Stop the thread and free it; returns its last status.  See
 * pidlock_daemon_refresher_stop(3). */
int pidlock_daemon_refresher_stop(struct pidlock_refresher *ref);

/** pidfile(3) handle; <pidlock-pidfile.h> calls it struct pidfh. */
struct pidlock_pidfh;
/* pidfile_open(): take the pidfile lock; NULL and errno EEXIST (and
 * *pidptr) if a daemon runs.  See pidlock_pidfile_open(3). */
struct pidlock_pidfh *pidlock_pidfile_open(const char *path, mode_t mode,
					   pid_t *pidptr);
/* pidfile_write(): write this process's pid.  See
 * pidlock_pidfile_write(3). */
int pidlock_pidfile_write(struct pidlock_pidfh *pfh);
/* pidfile_close(): close and free the handle, leaving the file (a parent
 * or worker of the daemon).  See pidlock_pidfile_close(3). */
int pidlock_pidfile_close(struct pidlock_pidfh *pfh);
/* pidfile_remove(): remove the file if it names the caller, and free
 * the handle.  See pidlock_pidfile_remove(3). */
int pidlock_pidfile_remove(struct pidlock_pidfh *pfh);
/* pidfile_fileno(): the descriptor that holds the lock.  See
 * pidlock_pidfile_fileno(3). */
int pidlock_pidfile_fileno(const struct pidlock_pidfh *pfh);
/* The struct pidlock behind a handle, for the pidlock_* functions.  See
 * pidlock_pidfile_handle(3). */
struct pidlock *pidlock_pidfile_handle(struct pidlock_pidfh *pfh);
/* ---- end of daemons and pidfile(3) ---------------------------------- */

#ifdef __cplusplus
}
#endif

#endif /* PIDLOCK_H */
