/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The command as a child: fork it, then wait for it while forwarding
 * signals and refreshing the lock file's timestamp.  No signal handlers:
 * the signals are blocked and taken with sigtimedwait(2), whose timeout
 * is the next refresh, so nothing can arrive between a check and a wait.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const int forwarded[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
};

struct sigstate {
	sigset_t wait;		/* what the loop takes */
	sigset_t old_mask;
	struct sigaction old_chld;
	bool chld_reset;
};

/*
 * A signal ignored when we started (nohup, or a background job of a
 * non-interactive shell) stays ignored for us and for the command, as if
 * there were no pidlock in between.  SIGCHLD must not be: the kernel
 * would then reap the command before we could learn its status.
 */
static int block_signals(struct sigstate *s)
{
	struct sigaction sa;

	sigemptyset(&s->wait);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++) {
		if (sigaction(forwarded[i], NULL, &sa) < 0)
			return -errno;
		if (sa.sa_handler != SIG_IGN)
			sigaddset(&s->wait, forwarded[i]);
	}
	sigaddset(&s->wait, SIGCHLD);
	if (sigaction(SIGCHLD, NULL, &s->old_chld) < 0)
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

static void unblock_signals(const struct sigstate *s)
{
	if (s->chld_reset)
		(void)sigaction(SIGCHLD, &s->old_chld, NULL);
	(void)sigprocmask(SIG_SETMASK, &s->old_mask, NULL);
}

/* In the child: the signals as they were, the lock descriptor kept
 * across exec unless -o, then the command. */
static void __attribute__((noreturn))
start_command(const struct opts *o, struct pidlock *lock,
	      const struct sigstate *s)
{
	int fd = pidlock_fd(lock);

	unblock_signals(s);
	if (!o->close_fd && fcntl(fd, F_SETFD, 0) < 0) {
		warn_path(o->lockfile, errno);
		_exit(EX_OSERR);
	}
	execvp(o->cmd[0], o->cmd);
	_exit(exec_failed(o->cmd[0], errno));
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A third of the stale timeout: a spec-only peer judging age alone then
 * never sees the record older than two thirds of it. */
static int64_t refresh_interval_ms(const struct opts *o)
{
	int64_t ms = (int64_t)stale_or_default(o) * 1000 / 3;

	return ms > 0 ? ms : 1;
}

static void refresh(const struct opts *o, struct pidlock *lock, bool *lost)
{
	int r;

	if (*lost)
		return;
	r = pidlock_refresh(lock);
	if (r == 0)
		return;
	warn_path(o->lockfile, -r);
	/* Somebody deleted or replaced the file: writing would be theirs. */
	if (r == -ESTALE)
		*lost = true;
}

/* Ctrl-C and Ctrl-\ go to the whole foreground process group, the
 * command included: sending them again would make it see two. */
static bool from_terminal(int sig, const siginfo_t *si)
{
	return (sig == SIGINT || sig == SIGQUIT) && si->si_code == SI_KERNEL;
}

static int wait_command(const struct opts *o, struct pidlock *lock,
			pid_t child, const sigset_t *set, int *status,
			bool *lost)
{
	int64_t interval = refresh_interval_ms(o);
	int64_t next = mono_ms() + interval;

	for (;;) {
		int64_t left = next - mono_ms();
		struct timespec ts;
		siginfo_t si;
		pid_t w;
		int sig;

		if (left < 0)
			left = 0;
		ts.tv_sec = (time_t)(left / 1000);
		ts.tv_nsec = (long)(left % 1000) * 1000000L;
		sig = sigtimedwait(set, &si, &ts);
		if (sig < 0 && errno == EAGAIN) {
			refresh(o, lock, lost);
			next = mono_ms() + interval;
			continue;
		}
		if (sig < 0 && errno == EINTR)
			continue;
		if (sig < 0)
			return -errno;
		if (sig != SIGCHLD) {
			/* ESRCH: it is exiting; its SIGCHLD comes next. */
			if (!from_terminal(sig, &si))
				(void)kill(child, sig);
			continue;
		}
		w = waitpid(child, status, WNOHANG);
		if (w == child)
			return 0;
		if (w < 0 && errno != EINTR)
			return -errno;
	}
}

static void release(const struct opts *o, struct pidlock *lock, bool lost)
{
	int r = pidlock_release(lock);

	if (r == -ESTALE && lost)
		return;		/* already said */
	if (r < 0)
		warn_path(o->lockfile, -r);
	else if (o->verbose)
		warn_file(o->lockfile, "released");
}

static int exit_status(int status)
{
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

int run_child(const struct opts *o, struct pidlock *lock)
{
	struct sigstate s;
	bool lost = false;
	pid_t child;
	int r, status = 0;

	r = block_signals(&s);
	if (r < 0) {
		release(o, lock, false);
		warn_msg("cannot block signals: %s", strerror(-r));
		return EX_OSERR;
	}
	fflush(NULL);
	child = fork();
	if (child < 0) {
		r = errno;
		release(o, lock, false);
		warn_msg("cannot fork: %s", strerror(r));
		return EX_OSERR;
	}
	if (child == 0)
		start_command(o, lock, &s);
	r = wait_command(o, lock, child, &s.wait, &status, &lost);
	/* The signals stay blocked: one arriving now must not kill us
	 * before the command's status is passed on. */
	release(o, lock, lost);
	if (r < 0) {
		warn_msg("waiting for the command: %s", strerror(-r));
		return EX_OSERR;
	}
	return exit_status(status);
}
