/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Running a command under the lock: take it (waiting as the options say),
 * then either exec the command in place or fork it and wait for it while
 * forwarding signals and refreshing the lock file's timestamp.  No signal
 * handlers: the signals are blocked and taken with sigtimedwait(2), whose
 * timeout is the next refresh, so nothing can arrive between a check and
 * a wait.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* Milliseconds on a clock that never jumps.  CLOCK_MONOTONIC cannot fail
 * on Linux; should it, every reading is 0 and each wait is a full one. */
static int64_t mono_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds on CLOCK_BOOTTIME, which runs on while the machine
 * sleeps, as a file server's timeout does: the check schedule and the
 * lease run on it, so that a machine woken from a suspend checks at once
 * and finds a lease that lapsed meanwhile lapsed. */
static int64_t boot_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
		return mono_ms();
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- taking the lock ---------------------------------------------- */

/* What became of the lock while the command ran. */
struct hold {
	bool lost;		/* no longer ours: nothing more to write */
	bool taken_away;	/* --check found so: exit 75 */
	int64_t last_ok;	/* boot_ms() of the last check that said 0 */
};

/* The command and what it started (job.c). */
struct job {
	pid_t child;
	bool done;		/* the command has exited: status is set */
	int status;
	int64_t kill_at;	/* boot_ms() at which survivors get KILL; -1 */
	bool killing;		/* past it: KILL again at each SIGCHLD */
};

static void say_holder(struct pidlock *lock, const char *what)
{
	struct pidlock_info info;
	char who[PIDLOCK_TAG_MAX + 160];

	if (pidlock_holder(lock, &info) < 0)
		text_set(who, sizeof(who), "another process");
	else
		describe_holder(pidlock_path(lock), &info, who, sizeof(who));
	warn_file(pidlock_path(lock), "%s %s", what, who);
}

static void say_done(const struct opts *o, struct pidlock *lock,
		     int64_t start)
{
	int64_t ms = mono_ms() - start;

	if (!o->verbose)
		return;
	warn_file(pidlock_path(lock), "locked after %lld.%03lld s",
		  (long long)(ms / 1000), (long long)(ms % 1000));
}

/* One call of the library: the lock on a path, or on the shell's
 * descriptor (pidlock FD), whose record names the shell (fd.c). */
static int take(const struct opts *o, struct pidlock *lock, int timeout_ms)
{
	if (o->mode == MODE_FD)
		return pidlock_lock_fd(lock, o->fd, o->fd_pid, timeout_ms);
	return pidlock_acquire(lock, timeout_ms);
}

/* The wait after a first try that found the lock busy: what is left of
 * the timeout (at least 1 ms, a last try), or forever. */
static int wait_for_lock(const struct opts *o, struct pidlock *lock,
			 int timeout_ms, int64_t start)
{
	int left = timeout_ms;

	if (timeout_ms > 0) {
		int64_t spent = mono_ms() - start;

		left = spent >= timeout_ms ? 1 : timeout_ms - (int)spent;
	}
	if (o->verbose)
		say_holder(lock, "waiting for");
	return take(o, lock, left);
}

/*
 * 0: we hold the lock.  1: it is busy (and said so, with `refused`, unless
 * -q).  -errno.
 * The first try never waits, so -v can name the holder before waiting.
 */
int acquire_lock(const struct opts *o, struct pidlock *lock, int timeout_ms,
		 const char *refused)
{
	int64_t start = mono_ms();
	int r = take(o, lock, 0);
	char what[96];

	if (r == -EWOULDBLOCK && timeout_ms != 0) {
		r = wait_for_lock(o, lock, timeout_ms, start);
		if (r == -ETIMEDOUT)
			r = -EWOULDBLOCK;
	}
	if (r == 0)
		say_done(o, lock, start);
	if (r != -EWOULDBLOCK)
		return r;
	if (o->quiet)
		return 1;
	text_set(what, sizeof(what), "%s%s, held by", refused,
		 timeout_ms ? " (timed out)" : "");
	say_holder(lock, what);
	return 1;
}

/* ---- the command as a child --------------------------------------- */

static const int forwarded[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
};

struct sigstate {
	sigset_t wait;		/* what the loop takes */
	sigset_t old_mask;
	struct sigaction old_chld;
	bool chld_reset;
	timer_t timer;		/* CLOCK_BOOTTIME, signals SIGRTMIN */
	bool timer_ok;
};

/* The forwarded signals, less those ignored when we started (nohup, or a
 * background job of a non-interactive shell): those stay ignored for us
 * and for the command, as if there were no pidlock in between. */
static int forwarded_set(sigset_t *set)
{
	struct sigaction sa;

	if (sigemptyset(set) < 0)
		return -errno;
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++) {
		if (sigaction(forwarded[i], NULL, &sa) < 0)
			return -errno;
		if (sa.sa_handler != SIG_IGN && sigaddset(set, forwarded[i]) < 0)
			return -errno;
	}
	return 0;
}

/* SIGCHLD must not stay ignored: the kernel would then reap the command
 * before we could learn its status. */
static int block_signals(struct sigstate *s)
{
	struct sigaction sa;
	int r = forwarded_set(&s->wait);

	if (r < 0)
		return r;
	if (sigaddset(&s->wait, SIGCHLD) < 0 ||
	    sigaddset(&s->wait, SIGRTMIN) < 0 ||
	    sigaction(SIGCHLD, NULL, &s->old_chld) < 0)
		return -errno;
	s->chld_reset = s->old_chld.sa_handler == SIG_IGN;
	if (s->chld_reset) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		if (sigaction(SIGCHLD, &sa, NULL) < 0)
			return -errno;
	}
	if (sigprocmask(SIG_BLOCK, &s->wait, &s->old_mask) < 0)
		return -errno;
	return 0;
}

/* Only in the child before exec: the arguments are the ones that
 * succeeded in block_signals(), so these cannot fail. */
static void unblock_signals(const struct sigstate *s)
{
	if (s->chld_reset)
		(void)sigaction(SIGCHLD, &s->old_chld, NULL);
	(void)sigprocmask(SIG_SETMASK, &s->old_mask, NULL);
}

/* What flock(1) answers when the command cannot be started. */
static int exec_failed(const char *cmd, int err)
{
	warn_path(cmd, err);
	return err == ENOMEM ? EX_OSERR : EX_UNAVAILABLE;
}

/*
 * In the child: the signals as they were, the lock descriptor kept
 * across exec unless -o, then the command.  With --fd (no lock) the
 * descriptor is the shell's, inherited without close-on-exec: -o closes
 * it, which cannot fail for an open descriptor.
 */
static void __attribute__((noreturn))
start_command(const struct opts *o, struct pidlock *lock,
	      const struct sigstate *s)
{
	unblock_signals(s);
	if (!lock && o->close_fd)
		(void)close(o->fd);
	if (lock && !o->close_fd && fcntl(pidlock_fd(lock), F_SETFD, 0) < 0) {
		warn_path(o->lockfile, errno);
		_exit(EX_OSERR);
	}
	execvp(o->cmd[0], o->cmd);
	_exit(exec_failed(o->cmd[0], errno));
}

/* A third of the stale timeout: a spec-only peer judging age alone then
 * never sees the record older than two thirds of it. */
static int64_t refresh_interval_ms(const struct opts *o)
{
	int64_t ms = (int64_t)stale_or_default(o) * 1000 / 3;

	return ms > 0 ? ms : 1;
}

static void refresh(const struct opts *o, struct pidlock *lock,
		    struct hold *h)
{
	int r;

	if (h->lost)
		return;
	r = pidlock_refresh(lock);
	if (r == 0)
		return;
	warn_path(o->lockfile, -r);
	/* Somebody deleted or replaced the file, or another holder has the
	 * lock now: writing would be theirs. */
	if (r == -ESTALE || r == -ENOLCK)
		h->lost = true;
}

/* How often --check asks: as given, or four times a lease. */
static int64_t check_interval_ms(const struct opts *o)
{
	if (o->check_ms)
		return o->check_ms;
	return o->lease_ms ? (o->lease_ms + 3) / 4 : -1;
}

/* Why the lock is lost, in the user's words.  Asked once the command
 * has its TERM: the server answered the check a moment ago, but a
 * question to it may still take a while. */
static void loss_cause(const struct opts *o, struct pidlock *lock, int r,
		       const struct hold *h, int64_t now, char *buf,
		       size_t size)
{
	struct pidlock_info info;
	struct stat held, named;

	if (r != -ENOLCK) {
		text_set(buf, size, "cannot tell whether it is still ours (%s), "
			 "which a shared file system's server says before it "
			 "gives the lock away", strerror(-r));
	} else if (o->lease_ms && now - h->last_ok > o->lease_ms) {
		text_set(buf, size, "the lease of %d.%03d s ran out: no check "
			 "was answered for %lld ms", o->lease_ms / 1000,
			 o->lease_ms % 1000, (long long)(now - h->last_ok));
	} else if (fstat(pidlock_fd(lock), &held) < 0 ||
		   lstat(pidlock_path(lock), &named) < 0 ||
		   held.st_dev != named.st_dev || held.st_ino != named.st_ino) {
		text_set(buf, size, "the path was removed or replaced");
	} else if (pidlock_inspect(pidlock_path(lock), &info, 0) == 0 &&
		   info.pid > 0 && info.pid != getpid()) {
		text_set(buf, size, "another holder has it (pid %d)",
			 (int)info.pid);
	} else {
		text_set(buf, size, "the file server dropped its kernel locks");
	}
}

/*
 * --check: is the lock still ours?  The server is given the interval to
 * answer, or a second, whichever is shorter: no answer (or an
 * interrupted wait) is no verdict, and the lease turns a silence into
 * one.  Any other error is taken as a loss: on a shared file system the
 * server says EIO or the like while it drops the client's locks.  Lost:
 * the command and everything it started get TERM, KILL after the grace,
 * and we exit 75.
 */
static void check(const struct opts *o, struct pidlock *lock, struct job *j,
		  struct hold *h, int64_t now)
{
	int64_t ms = check_interval_ms(o);
	char why[256];
	int r, n;

	if (h->lost)
		return;
	r = pidlock_check(lock, (int)(ms < 1000 ? ms : 1000));
	if (r == 0)
		h->last_ok = now;
	if (r == 0 || r == -ETIMEDOUT || r == -EAGAIN || r == -EINTR)
		return;
	h->lost = true;
	h->taken_away = true;
	n = job_signal(j->child, j->done, SIGTERM);
	j->kill_at = now + o->kill_after_ms;
	loss_cause(o, lock, r, h, now, why, sizeof(why));
	warn_file(o->lockfile, "the lock is lost: %s; sent TERM to %d "
		  "process%s of the command, KILL in %d.%03d s to any left",
		  why, n > 0 ? n : 0, n == 1 ? "" : "es",
		  o->kill_after_ms / 1000, o->kill_after_ms % 1000);
}

/* Past the grace: KILL to whatever of the job is left; and again at each
 * SIGCHLD after, to any it started meanwhile, until none is left. */
static void kill_survivors(const struct opts *o, struct job *j)
{
	int n = job_signal(j->child, j->done, SIGKILL);

	if (n > 0 && !j->killing)
		warn_file(o->lockfile, "sent KILL to %d process%s still "
			  "running", n, n == 1 ? "" : "es");
	j->kill_at = -1;
	j->killing = true;
}

/* Ctrl-C and Ctrl-\ go to the whole foreground process group, the
 * command included: sending them again would make it see two. */
static bool from_terminal(int sig, const siginfo_t *si)
{
	return (sig == SIGINT || sig == SIGQUIT) && si->si_code == SI_KERNEL;
}

/* One blocked signal, waiting at most until the boot_ms() time `until`
 * (for ever if it is negative); 0 when that time came first, -errno on
 * failure.  The wait is a CLOCK_BOOTTIME timer, which the kernel fires
 * on resume when its time passed during a suspend; a relative one, so
 * that only readings of the clock decide when (a sigtimedwait(2) runs on
 * CLOCK_MONOTONIC, which stops in a suspend: the fallback). */
static int next_signal(const struct sigstate *s, int64_t until,
		       siginfo_t *si)
{
	int64_t left = until - boot_ms();
	struct timespec ts;
	int sig;

	if (until >= 0 && left <= 0)
		return 0;
	ts.tv_sec = (time_t)(left / 1000);
	ts.tv_nsec = (long)(left % 1000) * 1000000L;
	if (until >= 0 && s->timer_ok) {
		struct itimerspec its = { { 0, 0 }, ts };

		if (timer_settime(s->timer, 0, &its, NULL) < 0)
			return -errno;
	}
	if (until < 0 || s->timer_ok)
		sig = sigwaitinfo(&s->wait, si);
	else
		sig = sigtimedwait(&s->wait, si, &ts);
	if (sig == SIGRTMIN || (sig < 0 && errno == EAGAIN))
		return 0;
	return sig >= 0 ? sig : -errno;
}

/* The next of two timers (< 0: none). */
static int64_t earliest(int64_t a, int64_t b)
{
	if (a < 0)
		return b;
	return b < 0 || a < b ? a : b;
}

/* Over: the command has exited, and after a loss, all it started too. */
static bool job_over(const struct job *j, const struct hold *h)
{
	return j->done && (!h->taken_away ||
			   job_signal(j->child, true, 0) <= 0);
}

/* Forward signals to the child until it exits; refresh the record of
 * a lock we hold meanwhile (with --fd there is none: lock is NULL), and
 * with --check or --lease ask whether it is still ours, and stop the
 * job once it is not.  The clocks are read at every wake. */
static int wait_command(const struct opts *o, struct pidlock *lock,
			struct job *j, const struct sigstate *s,
			struct hold *h)
{
	int64_t interval = refresh_interval_ms(o);
	int64_t every = lock ? check_interval_ms(o) : -1;
	int64_t now = boot_ms();
	int64_t next = lock ? now + interval : -1;
	int64_t next_check = every > 0 ? now + every : -1;

	h->last_ok = now;
	for (;;) {
		siginfo_t si;
		int64_t until = earliest(earliest(next, next_check),
					 j->kill_at);
		int sig = next_signal(s, until, &si);

		if (sig < 0 && sig != -EINTR)
			return sig;
		if (sig == SIGCHLD) {
			int r = job_reap(j->child, &j->status, &j->done);

			if (r < 0)
				return r;
		} else if (sig > 0 && !j->done && !from_terminal(sig, &si)) {
			/* ESRCH: it is exiting; its SIGCHLD comes next. */
			(void)kill(j->child, sig);
		}
		now = boot_ms();
		if (next_check >= 0 && now >= next_check) {
			check(o, lock, j, h, now);
			next_check = h->lost ? -1 : now + every;
		}
		if (next >= 0 && now >= next) {
			refresh(o, lock, h);
			next = h->lost ? -1 : now + interval;
		}
		if ((j->kill_at >= 0 && now >= j->kill_at) ||
		    (j->killing && sig == SIGCHLD))
			kill_survivors(o, j);
		if (job_over(j, h))
			return 0;
	}
}

static void release(const struct opts *o, struct pidlock *lock, bool lost)
{
	int r;

	if (!lock)
		return;		/* --fd: the shell's descriptor keeps it */
	r = pidlock_release(lock);

	if ((r == -ESTALE || r == -ENOLCK) && lost)
		return;		/* already said */
	if (r < 0)
		warn_path(o->lockfile, -r);
	else if (o->verbose)
		warn_file(o->lockfile, "released");
}

/* Before the command runs: the lock goes back, and we say why. */
static int cannot_start(const struct opts *o, struct pidlock *lock,
			const char *what, int err)
{
	release(o, lock, false);
	warn_msg("cannot %s: %s", what, strerror(err));
	return EX_OSERR;
}

/* The wake-up timer of the loop (next_signal()): without one, the wait
 * falls back to sigtimedwait(2). */
static void start_timer(struct sigstate *s)
{
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL,
			       .sigev_signo = SIGRTMIN };

	s->timer_ok = timer_create(CLOCK_BOOTTIME, &ev, &s->timer) == 0;
}

/* With --check or --lease the job must be stoppable whole: its orphans
 * must come to us (job.c).  A kernel that refuses is said, not fatal:
 * the command and its own children are still reached. */
static void become_reaper(const struct opts *o)
{
	int r;

	if (!o->check_ms && !o->lease_ms)
		return;
	r = job_reaper();
	if (r < 0)
		warn_msg("cannot become a child subreaper (%s): a lost lock "
			 "stops only the command's own processes",
			 strerror(-r));
}

static int run_child(const struct opts *o, struct pidlock *lock)
{
	struct sigstate s;
	struct hold h = { false, false, 0 };
	struct job j = { 0, false, 0, -1, false };
	int r;

	r = block_signals(&s);
	if (r < 0)
		return cannot_start(o, lock, "block signals", -r);
	become_reaper(o);
	/* Unwritten output would be written twice, by us and the child;
	 * a stream that cannot be flushed keeps its error (see out()). */
	(void)fflush(NULL);
	j.child = fork();
	if (j.child < 0)
		return cannot_start(o, lock, "fork", errno);
	if (j.child == 0)
		start_command(o, lock, &s);
	start_timer(&s);
	r = wait_command(o, lock, &j, &s, &h);
	/* The signals stay blocked: one arriving now must not kill us
	 * before the command's status is passed on. */
	release(o, lock, h.lost);
	if (r < 0) {
		warn_msg("waiting for the command: %s", strerror(-r));
		return EX_OSERR;
	}
	if (h.taken_away)
		return EX_TEMPFAIL;
	if (WIFSIGNALED(j.status))
		return 128 + WTERMSIG(j.status);
	return WEXITSTATUS(j.status);
}

/* ---- --fd FD COMMAND ---------------------------------------------- */

/*
 * The command of --fd, once the shell's descriptor holds the lock
 * (fd.c): forked and waited for with the signals forwarded, or with -F
 * run in our place.  Either way the lock stays with the descriptor after
 * the command, as flock(1) --fd leaves it: nothing to refresh (the
 * record names the shell, which lives on) or release.
 */
int run_fd_command(const struct opts *o)
{
	if (!o->exec)
		return run_child(o, NULL);
	(void)fflush(NULL);	/* as in run_child() */
	execvp(o->cmd[0], o->cmd);
	return exec_failed(o->cmd[0], errno);
}

/* ---- --exec ------------------------------------------------------- */

/* A slot's lock belongs to its set: freeing the set releases it. */
static void free_lock(struct pidlock *lock, struct pidlock_slots *set)
{
	if (set)
		pidlock_slots_free(set);
	else
		pidlock_free(lock);
}

/*
 * --exec: become the command.  The file names our pid, which is now the
 * command's; the kernel locks last as long as it does, and the file it
 * leaves behind (marked release=exit, see make_lock) reads as free and
 * is taken over by the next locker.
 */
static int exec_locked(const struct opts *o, struct pidlock *lock,
		       struct pidlock_slots *set)
{
	int fd = pidlock_fd(lock);
	int err;

	if (fcntl(fd, F_SETFD, 0) < 0) {
		err = errno;
		free_lock(lock, set);
		return fail_path(o->lockfile, err);
	}
	(void)fflush(NULL);	/* as in run_child() */
	execvp(o->cmd[0], o->cmd);
	err = errno;
	/* Nothing ran under the lock: give it back, file and all. */
	(void)pidlock_release(lock);
	free_lock(lock, set);
	return exec_failed(o->cmd[0], err);
}

/* The lock, or with --slots one slot of the set: 0 held, 1 busy (said
 * unless -q), -errno. */
static int take_lock(const struct opts *o, struct pidlock **lockp,
		     struct pidlock_slots **setp)
{
	int r;

	*setp = NULL;
	if (o->slots) {
		r = slots_acquire(o, setp, lockp);
		if (r < 0 && *setp) {
			pidlock_slots_free(*setp);
			*setp = NULL;
		}
		return r;
	}
	r = make_lock(o, o->lockfile, lockp);
	if (r < 0)
		return r;
	r = acquire_lock(o, *lockp, o->timeout_ms, "lock is busy");
	if (r != 0)
		pidlock_free(*lockp);
	return r;
}

/* Is it the high mark that this user may not write (in a sticky
 * directory of another user's, only the owner may write user extended
 * attributes), and not the lock file?  Asked by replacing an attribute
 * that is not there: the kernel checks the permission first, so this
 * changes nothing either way. */
static bool token_write_refused(const char *path)
{
	char *copy = strdup(path);
	bool r;

	if (!copy)
		return false;
	r = setxattr(dirname(copy), "user.pidlock.tokens.probe", "", 0,
		     XATTR_REPLACE) < 0 && errno == EPERM;
	free(copy);
	return r;
}

/* --token: the high mark's own errors, said as such, with what to do
 * (pidlock_token(3)): the exit status, or 0 if err was none of them. */
static int token_error(const struct opts *o, int err)
{
	const char *why = err == ERANGE ? "holds something other than a "
					  "number; remove it with setfattr -x "
					  "once no holder uses the directory"
			: err == EOVERFLOW ? "is at its largest value, 2^53 - 1"
			: err == ETIME ? "is missing and the clock is unset "
					 "(before 2026): set the clock"
			: err == EOPNOTSUPP ? "cannot be kept: the file system "
					      "has no user extended attributes"
			: err == EPERM && token_write_refused(o->lockfile) ?
				"may not be written by this user: in a sticky "
				"directory (such as /tmp or /run/lock) only the "
				"directory's owner may; put the lock in a "
				"directory of your own"
			: NULL;

	if (!why)
		return 0;
	warn_file(o->lockfile, "the fencing token's high mark (an attribute "
		  "user.pidlock.tokens.N of the lock's directory) %s; the "
		  "command was not run", why);
	return err == EPERM ? EX_NOPERM : EX_OSERR;
}

/* --token: the hold's fencing token, for the command to send with its
 * writes (pidlock_token(3)).  0, or the exit status. */
static int export_token(const struct opts *o, struct pidlock *lock)
{
	uint64_t token;
	int r;

	if (!(o->flags & PIDLOCK_TOKEN))
		return 0;
	r = pidlock_token(lock, &token);
	if (r == 0) {
		char text[24];

		(void)snprintf(text, sizeof(text), "%" PRIu64, token);
		r = setenv(PIDLOCK_TOKEN_ENV, text, 1) < 0 ? -errno : 0;
	}
	if (r == 0)
		return 0;
	warn_path(o->lockfile, -r);
	return EX_OSERR;
}

int cmd_run(const struct opts *o)
{
	struct pidlock_slots *set;
	struct pidlock *lock;
	int r = take_lock(o, &lock, &set), code;

	if (r < 0 && o->slots)
		return slots_fail(o, -r);
	if (r < 0 && (o->flags & PIDLOCK_TOKEN) && (code = token_error(o, -r)))
		return code;
	if (r < 0)
		return fail_acquire(o->lockfile, -r);
	if (r > 0)
		return o->quiet ? 0 : o->conflict_code;
	r = export_token(o, lock);
	if (r != 0) {
		(void)pidlock_release(lock);
		free_lock(lock, set);
		return r;
	}
	if (o->exec)
		return exec_locked(o, lock, set);
	r = run_child(o, lock);
	free_lock(lock, set);
	return r;
}
