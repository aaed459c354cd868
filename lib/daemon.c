/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Daemons: take the pidfile lock with classic-pidfile defaults before
 * daemonizing, hand it to the forked child, and optionally keep its
 * timestamp fresh from a thread.  Built on the public API only
 * (internal.h is included for PIDLOCK_EXPORT, io_rc_filter() and the
 * cancellation guard of cancel.c).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "daemon.h"

/* How long to wait for a busy holder to write its pid: the 20 tries of
 * 5 ms that pidfile(3) gives a daemon between open and write. */
#define HOLDER_TRIES 20
#define HOLDER_WAIT_NS 5000000L
/* The refresher only formats and writes a short record. */
#define REFRESHER_STACK ((size_t)128 * 1024)

/* The pid= of the record, read with the library's one parser. */
pid_t daemon_file_pid(int fd)
{
	char buf[CONTENT_READ_MAX];
	struct content c;
	ssize_t n = io_read_bounded(fd, buf, sizeof(buf));

	if (n < 0)
		return (pid_t)n;
	content_parse(buf, (size_t)n, &c);
	return c.pid;
}

/*
 * Who holds it?  A pidfile(3) daemon writes its pid only after
 * daemon(3), so an empty record gets the same short wait pidfile(3)
 * gives it; -1 if no pid shows up.  A pid that is not judged here
 * (pid_alive -1: written in another pid namespace, or under another
 * kernel) is a number of somebody else's: -1 too, since a caller may
 * well kill(2) what it is given.
 */
static pid_t holder_pid(const struct pidlock *lock)
{
	struct pidlock_info info;
	int r = pidlock_holder(lock, &info);

	for (int i = 0; r == 0; i++) {
		if (info.pid > 0)
			return info.pid_alive < 0 ? -1 : info.pid;
		if (info.state == PIDLOCK_STATE_FREE || i == HOLDER_TRIES)
			break;
		io_pause(HOLDER_WAIT_NS);
		r = pidlock_inspect(pidlock_path(lock), &info, 0);
	}
	return -1;
}

static int default_path(char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/%s.pid", PIDLOCK_DAEMON_RUNDIR,
			 program_invocation_short_name);

	if (n < 0)
		return -EINVAL;
	return (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int daemon_open(struct pidlock **lockp, const char *path,
		       unsigned int flags, mode_t mode, pid_t *holder)
{
	char def[PATH_MAX];
	struct pidlock *lock;
	int r;

	if (!lockp)
		return -EINVAL;
	*lockp = NULL;
	if (!mode)
		mode = PIDLOCK_DEFAULT_MODE;
	/* start-stop-daemon refuses a world-writable pidfile, and anybody
	 * could write another pid into it. */
	if (mode & ~(mode_t)0664)
		return -EINVAL;
	if (!path) {
		r = default_path(def, sizeof(def));
		if (r < 0)
			return r;
		path = def;
	}
	r = pidlock_new(&lock, path, flags | PIDLOCK_PLAIN_PID);
	if (r < 0)
		return r;
	r = pidlock_set_mode(lock, mode);
	if (r == 0)
		r = pidlock_acquire(lock, 0);
	if (r == -EWOULDBLOCK) {
		if (holder)
			*holder = holder_pid(lock);
		r = -EEXIST;
	}
	if (r < 0) {
		pidlock_free(lock);
		return r;
	}
	*lockp = lock;
	return 0;
}

/* Not cancellable (cancel.c): the look for a busy holder's pid sleeps
 * and reads while the handle is not yet the caller's to free. */
PIDLOCK_EXPORT int pidlock_daemon_open(struct pidlock **lockp,
				       const char *path, unsigned int flags,
				       mode_t mode, pid_t *holder)
{
	int old = cancel_off();
	int r = daemon_open(lockp, path, flags, mode, holder);

	cancel_restore(old);
	return r;
}

/*
 * After fork(2) parent and child share the open file description and so
 * both hold the kernel locks; the record decides which of them owns the
 * file (pidlock_release() unlinks only for the pid it names).  Naming
 * the child is therefore all a hand-over takes.
 */
PIDLOCK_EXPORT int pidlock_daemon_rebind(struct pidlock *lock)
{
	if (!lock)
		return -EINVAL;
	return pidlock_refresh(lock);
}

/* ---- the background refresher ---------------------------------------- */

struct pidlock_refresher {
	struct pidlock *lock;
	pthread_t thread;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	pid_t owner;		/* the process the thread runs in */
	unsigned int interval_ms;
	bool stopping;		/* under mutex */
	int status;		/* atomic: result of the last refresh */
};

/*
 * The thread never takes the file back from a forked process that
 * rebound it: a record naming another pid ends the refresher.
 */
static int refresh_once(struct pidlock *lock)
{
	int fd = pidlock_fd(lock);
	pid_t pid;

	if (fd < 0)
		return fd;
	pid = daemon_file_pid(fd);
	if (pid < 0)
		return (int)pid;
	if (pid != getpid())
		return -ESTALE;
	return pidlock_refresh(lock);
}

static void due_after(struct timespec *ts, unsigned int ms)
{
	/* CLOCK_MONOTONIC cannot fail with a valid pointer. */
	(void)clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Sleep one interval with the mutex held; true when asked to stop. */
static bool sleep_interval(struct pidlock_refresher *ref)
{
	struct timespec due;

	due_after(&due, ref->interval_ms);
	while (!ref->stopping) {
		int r = pthread_cond_timedwait(&ref->cond, &ref->mutex, &due);

		if (r == ETIMEDOUT)
			return false;
	}
	return true;
}

static void *refresher_main(void *arg)
{
	struct pidlock_refresher *ref = arg;

	pthread_mutex_lock(&ref->mutex);
	while (!sleep_interval(ref)) {
		int r;

		pthread_mutex_unlock(&ref->mutex);
		r = refresh_once(ref->lock);
		__atomic_store_n(&ref->status, r, __ATOMIC_RELEASE);
		pthread_mutex_lock(&ref->mutex);
		/* Lost or handed over: every later try would fail alike. */
		if (r == -ESTALE || r == -ENOLCK)
			break;
	}
	pthread_mutex_unlock(&ref->mutex);
	return NULL;
}

static int init_sync(struct pidlock_refresher *ref)
{
	pthread_condattr_t ca;
	int r = pthread_condattr_init(&ca);

	if (r)
		return -r;
	r = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!r)
		r = pthread_cond_init(&ref->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (r)
		return -r;
	r = pthread_mutex_init(&ref->mutex, NULL);
	if (r) {
		pthread_cond_destroy(&ref->cond);
		return -r;
	}
	return 0;
}

/* All signals stay blocked in the thread, so the daemon's handlers and
 * sigwait(3) keep running on its own threads. */
static int spawn(struct pidlock_refresher *ref)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int r = pthread_attr_init(&attr);

	if (r)
		return -r;
	r = pthread_attr_setstacksize(&attr, REFRESHER_STACK);
	if (r)
		goto out;
	sigfillset(&all);
	r = pthread_sigmask(SIG_SETMASK, &all, &old);
	if (r)
		goto out;
	r = pthread_create(&ref->thread, &attr, refresher_main, ref);
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
out:
	pthread_attr_destroy(&attr);
	return -r;
}

PIDLOCK_EXPORT int pidlock_daemon_refresher_start(
	struct pidlock_refresher **refp, struct pidlock *lock,
	unsigned int interval_ms)
{
	struct pidlock_refresher *ref;
	int r;

	if (!refp)
		return -EINVAL;
	*refp = NULL;
	if (!lock || interval_ms == 0)
		return -EINVAL;
	r = pidlock_fd(lock);
	if (r < 0)
		return r;
	ref = calloc(1, sizeof(*ref));
	if (!ref)
		return -ENOMEM;
	ref->lock = lock;
	ref->owner = getpid();
	ref->interval_ms = interval_ms;
	r = init_sync(ref);
	if (r < 0) {
		free(ref);
		return io_rc_filter(r);
	}
	r = spawn(ref);
	if (r < 0) {
		pthread_mutex_destroy(&ref->mutex);
		pthread_cond_destroy(&ref->cond);
		free(ref);
		return io_rc_filter(r);
	}
	*refp = ref;
	return 0;
}

PIDLOCK_EXPORT int pidlock_daemon_refresher_status(
	const struct pidlock_refresher *ref)
{
	if (!ref)
		return -EINVAL;
	/* fork(2) copies the memory, never the thread. */
	if (ref->owner != getpid())
		return -ESRCH;
	return io_rc_filter(__atomic_load_n(&ref->status, __ATOMIC_ACQUIRE));
}

static int refresher_stop(struct pidlock_refresher *ref)
{
	int r;

	if (!ref)
		return -EINVAL;
	/* A forked copy: no thread to join, and the mutex may have been
	 * copied locked.  Only the memory is ours. */
	if (ref->owner != getpid()) {
		free(ref);
		return 0;
	}
	pthread_mutex_lock(&ref->mutex);
	ref->stopping = true;
	pthread_cond_signal(&ref->cond);
	pthread_mutex_unlock(&ref->mutex);
	r = pthread_join(ref->thread, NULL);
	/* Only a call from the thread itself fails; it still runs then. */
	if (r)
		return io_rc_filter(-r);
	r = __atomic_load_n(&ref->status, __ATOMIC_ACQUIRE);
	pthread_mutex_destroy(&ref->mutex);
	pthread_cond_destroy(&ref->cond);
	free(ref);
	return io_rc_filter(r);
}

/* Not cancellable (cancel.c): pthread_join(3) is a cancellation point,
 * and a caller cancelled there would leave the thread told to stop but
 * never joined, and its memory never freed. */
PIDLOCK_EXPORT int pidlock_daemon_refresher_stop(struct pidlock_refresher *ref)
{
	int old = cancel_off();
	int r = refresher_stop(ref);

	cancel_restore(old);
	return r;
}
