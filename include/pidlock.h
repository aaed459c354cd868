/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpidlock - file locks that never go stale and that other lockers
 * on the same path understand.
 *
 * All functions return 0 (or a non-negative value where documented) on
 * success and a negative errno value on failure.  Every code a function
 * can return is listed in its manual page; the codes are part of the API.
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
	/** Do not fdatasync(2) the content after writing it. */
	PIDLOCK_NO_SYNC = 1U << 2,
	/** Write the bare pid as the first line (classic pidfile). */
	PIDLOCK_PLAIN_PID = 1U << 3,
	/** Never unlink on release; the inode at the path stays. */
	PIDLOCK_KEEP_FILE = 1U << 4,
	/** The holder's exit is its release (a lock handed to a program it
	 * execs): a file left with no kernel lock reads as free, not
	 * abandoned. Since 1.1.0. */
	PIDLOCK_EXIT_RELEASES = 1U << 5,
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
	/** Reserved for later versions; zero. */
	uint32_t reserved[8];
};

int pidlock_new(struct pidlock **lockp, const char *path, unsigned int flags);
void pidlock_free(struct pidlock *lock);

int pidlock_set_tag(struct pidlock *lock, const char *tag);
int pidlock_set_mode(struct pidlock *lock, mode_t mode);
int pidlock_set_stale_timeout(struct pidlock *lock, unsigned int seconds);
int pidlock_set_retry_interval(struct pidlock *lock, unsigned int ms);
int pidlock_set_grace(struct pidlock *lock, unsigned int ms);

int pidlock_acquire(struct pidlock *lock, int timeout_ms);
int pidlock_release(struct pidlock *lock);
int pidlock_close(struct pidlock *lock);
int pidlock_refresh(struct pidlock *lock);
int pidlock_verify(struct pidlock *lock);
int pidlock_fd(const struct pidlock *lock);
const char *pidlock_path(const struct pidlock *lock);
int pidlock_holder(const struct pidlock *lock, struct pidlock_info *info);

int pidlock_inspect(const char *path, struct pidlock_info *info,
		    unsigned int stale_sec);
const char *pidlock_state_name(enum pidlock_state state);

/* ---- Daemons and pidfile(3) (lib/daemon.c, lib/pidfile.c) -----------
 * See pidlock_daemon_open(3), pidlock_daemon_refresher_start(3) and
 * pidlock_pidfile_open(3); <pidlock-pidfile.h> maps the pidfile_* names. */

/** Directory of pidlock_daemon_open()'s default path, /run/NAME.pid. */
#define PIDLOCK_DAEMON_RUNDIR "/run"
/** A refresher interval well inside the default stale timeout. */
#define PIDLOCK_DAEMON_REFRESH_MS 600000U

int pidlock_daemon_open(struct pidlock **lockp, const char *path,
			unsigned int flags, mode_t mode, pid_t *holder);
int pidlock_daemon_rebind(struct pidlock *lock);

/** Background refresher thread, see pidlock_daemon_refresher_start(3). */
struct pidlock_refresher;
int pidlock_daemon_refresher_start(struct pidlock_refresher **refp,
				   struct pidlock *lock,
				   unsigned int interval_ms);
int pidlock_daemon_refresher_status(const struct pidlock_refresher *ref);
int pidlock_daemon_refresher_stop(struct pidlock_refresher *ref);

/** pidfile(3) handle; <pidlock-pidfile.h> calls it struct pidfh. */
struct pidlock_pidfh;
struct pidlock_pidfh *pidlock_pidfile_open(const char *path, mode_t mode,
					   pid_t *pidptr);
int pidlock_pidfile_write(struct pidlock_pidfh *pfh);
int pidlock_pidfile_close(struct pidlock_pidfh *pfh);
int pidlock_pidfile_remove(struct pidlock_pidfh *pfh);
int pidlock_pidfile_fileno(const struct pidlock_pidfh *pfh);
struct pidlock *pidlock_pidfile_handle(struct pidlock_pidfh *pfh);
/* ---- end of daemons and pidfile(3) ---------------------------------- */

#ifdef __cplusplus
}
#endif

#endif /* PIDLOCK_H */
