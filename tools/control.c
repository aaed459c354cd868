/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * --signal, --stop and --wait-free: act on whoever holds a lock, without
 * taking it.  A signal goes only through a pidfd that the library proved,
 * after opening it, to belong to a process that holds the kernel lock
 * (pidlock_holder_pidfds(3)).  A pid read from a file, which may be
 * anybody's by the time it is used, is never signalled.  --stop keeps
 * the pidfds of its one look-up for every step of its schedule: a KILL
 * five seconds after the TERM reaches the process the TERM reached, or
 * nobody; never a process that got its pid since, nor one that took the
 * lock since.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* ---- signal names -------------------------------------------------- */

static const struct {
	const char *name;
	int sig;
} signal_names[] = {
	{ "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT },
	{ "ILL", SIGILL }, { "TRAP", SIGTRAP }, { "ABRT", SIGABRT },
	{ "IOT", SIGIOT }, { "BUS", SIGBUS }, { "FPE", SIGFPE },
	{ "KILL", SIGKILL }, { "USR1", SIGUSR1 }, { "SEGV", SIGSEGV },
	{ "USR2", SIGUSR2 }, { "PIPE", SIGPIPE }, { "ALRM", SIGALRM },
	{ "TERM", SIGTERM }, { "CHLD", SIGCHLD }, { "CONT", SIGCONT },
	{ "STOP", SIGSTOP }, { "TSTP", SIGTSTP }, { "TTIN", SIGTTIN },
	{ "TTOU", SIGTTOU }, { "URG", SIGURG }, { "XCPU", SIGXCPU },
	{ "XFSZ", SIGXFSZ }, { "VTALRM", SIGVTALRM }, { "PROF", SIGPROF },
	{ "WINCH", SIGWINCH }, { "IO", SIGIO }, { "POLL", SIGPOLL },
	{ "PWR", SIGPWR }, { "SYS", SIGSYS },
};

#define NSIGNAL_NAMES (sizeof(signal_names) / sizeof(signal_names[0]))

/* TERM, SIGTERM, term or 15: the signal, or -1. */
int parse_signal(const char *s)
{
	const char *name = strncasecmp(s, "SIG", 3) == 0 ? s + 3 : s;
	unsigned long v;
	char *end;

	for (size_t i = 0; i < NSIGNAL_NAMES; i++)
		if (strcasecmp(name, signal_names[i].name) == 0)
			return signal_names[i].sig;
	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v == 0 || v > (unsigned long)SIGRTMAX)
		return -1;
	return (int)v;
}

/* "TERM", or NULL for a signal without a name here (real-time ones). */
const char *signal_abbrev(int sig)
{
	for (size_t i = 0; i < NSIGNAL_NAMES; i++)
		if (signal_names[i].sig == sig)
			return signal_names[i].name;
	return NULL;
}

static void signal_text(int sig, char *buf, size_t size)
{
	const char *name = signal_abbrev(sig);

	if (name)
		text_set(buf, size, "SIG%s", name);
	else
		text_set(buf, size, "signal %d", sig);
}

/* ---- the lock files and their holders ------------------------------ */

/* One lock file (a slot of --slots, or the one named) and the pidfds
 * proven to hold it. */
struct target {
	char path[PATH_MAX + 16];
	int *pidfds;
	pid_t *pids;
	unsigned int n;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void drop_holders(struct target *t)
{
	for (unsigned int i = 0; i < t->n; i++)
		(void)close(t->pidfds[i]);	/* a pidfd: nothing to flush */
	free(t->pidfds);
	free(t->pids);
	t->pidfds = NULL;
	t->pids = NULL;
	t->n = 0;
}

static void free_targets(struct target *t, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		drop_holders(&t[i]);
	free(t);
}

/* The lock files: PATH.0 to PATH.N-1 with --slots N, else PATH. */
static struct target *make_targets(const struct opts *o, unsigned int *np)
{
	unsigned int n = o->slots ? o->slots : 1;
	struct target *t = calloc(n, sizeof(*t));

	if (!t)
		return NULL;
	for (unsigned int k = 0; k < n; k++) {
		if (o->slots)
			text_set(t[k].path, sizeof(t[k].path), "%s.%u",
				 o->files[0], k);
		else
			text_set(t[k].path, sizeof(t[k].path), "%s",
				 o->files[0]);
	}
	*np = n;
	return t;
}

/*
 * Look up t's holders: their number (>= 1), their pidfds kept in t, or
 * -errno (-ESRCH: free).  A shared lock may gain holders between a call
 * that counts them and one with room for all: then the room is made
 * again, a few times, and after that the ones that fit are kept.
 */
static int find_holders(struct target *t)
{
	unsigned int room = 8;

	for (int tries = 0;; tries++) {
		int r;

		t->pidfds = calloc(room, sizeof(*t->pidfds));
		t->pids = calloc(room, sizeof(*t->pids));
		if (!t->pidfds || !t->pids) {
			drop_holders(t);
			return -ENOMEM;
		}
		r = pidlock_holder_pidfds(t->path, t->pidfds, t->pids, room);
		if (r < 0) {
			drop_holders(t);
			return r;
		}
		t->n = (unsigned int)r < room ? (unsigned int)r : room;
		if ((unsigned int)r <= room || tries == 3)
			return (int)t->n;
		drop_holders(t);
		room = (unsigned int)r + 8;
	}
}

/* Why no holder can be proven; the exit status. */
static int say_unproven(const char *path, int err)
{
	const char *why =
		err == ENOLCK ? "its holder holds no kernel lock (a pid file, a "
				"dotlock or a spec-only record), and a pid read "
				"from a file is never signalled on its own (a "
				"daemon's pidfile: --legacy-exec PATH or "
				"--legacy-name NAME signals its process if it "
				"is that daemon's)" :
		err == EREMOTE ? "its holder is out of sight (in another pid "
				 "namespace, or on another host)" :
		"its holder's descriptors cannot be read (another user's "
		"process; run this as that user or as root)";

	warn_file(path, "held, but %s; nothing was signalled", why);
	return EXIT_UNPROVEN;
}

/* A failed look-up's exit status, said; 0 for a free lock. */
static int lookup_failed(const char *path, int err)
{
	switch (err) {
	case ESRCH:
		return 0;
	case ENOLCK:
	case EREMOTE:
		return say_unproven(path, err);
	case EACCES:
		/* The lock file itself unreadable is a plain error. */
		if (access(path, R_OK) == 0)
			return say_unproven(path, err);
		return fail_path(path, err);
	default:
		return fail_path(path, err);
	}
}

/*
 * Every lock file's holders, looked up before anything is sent: one
 * that cannot be proven stops it all, so that a stop never goes half
 * way.  0, or the worst exit status; *held counts the holders found.
 */
static int look_up_all(struct target *t, unsigned int n, unsigned int *held)
{
	int worst = 0;

	*held = 0;
	for (unsigned int k = 0; k < n; k++) {
		int r = find_holders(&t[k]);
		int code = r < 0 ? lookup_failed(t[k].path, -r) : 0;

		if (r > 0)
			*held += (unsigned int)r;
		if (code > worst)
			worst = code;
	}
	return worst;
}

/* ---- sending --------------------------------------------------------- */

static int send_signal(int pidfd, int sig)
{
	return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 ?
	       -errno : 0;
}

/* Send sig to t's holders.  How many got it (*gone: how many had
 * exited since), or -errno for one that may not be signalled. */
static int signal_holders(const struct opts *o, const struct target *t,
			  int sig, unsigned int *gone)
{
	char name[32];
	int sent = 0;

	signal_text(sig, name, sizeof(name));
	for (unsigned int i = 0; i < t->n; i++) {
		int r = send_signal(t->pidfds[i], sig);

		if (r == -ESRCH) {
			(*gone)++;
			if (o->verbose)
				warn_file(t->path, "pid %d has exited; %s not "
					  "sent", (int)t->pids[i], name);
			continue;
		}
		if (r < 0)
			return r;
		sent++;
		if (o->verbose)
			warn_file(t->path, "sent %s to pid %d", name,
				  (int)t->pids[i]);
	}
	return sent;
}

/* sig to every lock file's holders: 0 and *sent, or the exit status. */
static int signal_all(const struct opts *o, const struct target *t,
		      unsigned int n, int sig, unsigned int *sent,
		      unsigned int *gone)
{
	*sent = 0;
	for (unsigned int k = 0; k < n; k++) {
		int r = signal_holders(o, &t[k], sig, gone);

		if (r < 0)
			return fail_path(t[k].path, -r);
		*sent += (unsigned int)r;
	}
	return 0;
}

/* ---- waiting --------------------------------------------------------- */

/*
 * Until every lock file is free, for at most ms in all (-1: no limit).
 * 0 free; -ETIMEDOUT; -errno with *bad the lock file it came from.
 */
static int wait_all_free(const struct target *t, unsigned int n, int ms,
			 unsigned int *bad)
{
	int64_t deadline = now_ms() + (ms > 0 ? ms : 0);

	for (unsigned int k = 0; k < n; k++) {
		int64_t left = deadline - now_ms();
		int r = pidlock_wait_free(t[k].path, ms < 0 ? -1 :
					  left > 0 ? (int)left : 0);

		if (r == -EWOULDBLOCK || r == -ETIMEDOUT)
			return -ETIMEDOUT;
		if (r < 0) {
			*bad = k;
			return r;
		}
	}
	return 0;
}

static void say_free(const struct opts *o, int64_t start, const char *what)
{
	int64_t ms = now_ms() - start;

	if (o->verbose)
		warn_file(o->files[0], "%s after %lld.%03lld s", what,
			  (long long)(ms / 1000), (long long)(ms % 1000));
}

/* ---- the modes ------------------------------------------------------- */

/*
 * The start --signal and --stop share: the lock files named, a pidfile
 * holder's path tried first, then every holder looked up.  The targets,
 * with *code look_up_all()'s status; NULL when the command is over
 * already, with its exit status in *code.
 */
static struct target *start_control(const struct opts *o, unsigned int *n,
				    unsigned int *held, int *code)
{
	struct target *t = make_targets(o, n);

	if (!t) {
		*code = fail_path(o->files[0], ENOMEM);
		return NULL;
	}
	*code = legacy_control(o);
	if (*code >= 0) {
		free_targets(t, *n);
		return NULL;
	}
	*code = look_up_all(t, *n, held);
	return t;
}

/*
 * --signal SIG: 0 sent to every holder; 1 free (or the holders had
 * exited by the time of the signal); EXIT_UNPROVEN, nothing sent; an
 * error's status.
 */
int cmd_signal(const struct opts *o)
{
	unsigned int n, held, sent = 0, gone = 0;
	int code;
	struct target *t = start_control(o, &n, &held, &code);

	if (!t)
		return code;
	if (code == 0 && held)
		code = signal_all(o, t, n, o->signal, &sent, &gone);
	free_targets(t, n);
	if (code || sent)
		return code;
	if (gone)
		warn_file(o->files[0], "its holder exited before the signal; "
			  "nothing was sent");
	else
		warn_file(o->files[0], "%s: nobody holds it; nothing was sent",
			  o->slots ? "every slot is free" : "free");
	return 1;
}

/* A step of the schedule: 0 free, 1 go on, or the exit status (64 and
 * up). */
static int run_step(const struct opts *o, const struct target *t,
		    unsigned int n, const struct stop_step *s)
{
	unsigned int sent, gone = 0, bad = 0;
	int r;

	if (s->sig) {
		r = signal_all(o, t, n, s->sig, &sent, &gone);
		return r ? r : 1;
	}
	r = wait_all_free(t, n, s->ms, &bad);
	if (r == 0)
		return 0;
	if (r == -ETIMEDOUT)
		return 1;
	return fail_path(t[bad].path, -r);
}

/* The step after step i: --retry's forever goes back to its mark. */
static int next_step(const struct opts *o, int i)
{
	if (i + 1 == o->nsteps && o->repeat_from >= 0)
		return o->repeat_from;
	return i + 1;
}

/* Are all the holders signalled gone?  Then another holds it now. */
static bool holders_gone(const struct target *t, unsigned int n)
{
	for (unsigned int k = 0; k < n; k++)
		for (unsigned int i = 0; i < t[k].n; i++)
			if (send_signal(t[k].pidfds[i], 0) != -ESRCH)
				return false;
	return true;
}

/*
 * --stop: the schedule's signals to the holders of the one look-up, its
 * waits until the lock is free.  0 free (also free from the start);
 * 1 still held when the schedule ends; EXIT_UNPROVEN, nothing sent.
 */
int cmd_stop(const struct opts *o)
{
	int64_t start = now_ms();
	unsigned int n, held;
	int code;
	struct target *t = start_control(o, &n, &held, &code);

	if (!t)
		return code;
	if (code == 0 && held == 0 && o->verbose)
		warn_file(o->files[0], "already free; nothing was sent");
	if (code == 0 && held) {
		code = 1;
		for (int i = 0; code == 1 && i < o->nsteps;
		     i = next_step(o, i))
			code = run_step(o, t, n, &o->steps[i]);
		if (code == 0)
			say_free(o, start, "free");
	}
	if (code == 1 && holders_gone(t, n))
		say_holders_gone(t[0].path, t[0].pids, n == 1 ? t[0].n : 0);
	else if (code == 1)
		warn_file(o->files[0], "still held at the end of the wait");
	free_targets(t, n);
	return code;
}

/* --wait-free: 0 free, 1 still held when the time is up. */
int cmd_wait_free(const struct opts *o)
{
	int64_t start = now_ms();
	unsigned int n, bad = 0;
	struct target *t = make_targets(o, &n);
	int r;

	if (!t)
		return fail_path(o->files[0], ENOMEM);
	r = wait_all_free(t, n, o->timeout_ms, &bad);
	if (r == -ETIMEDOUT)
		warn_file(o->files[0], "still held at the end of the wait");
	else if (r < 0)
		r = -fail_path(t[bad].path, -r);
	else
		say_free(o, start, "free");
	free_targets(t, n);
	return r == -ETIMEDOUT ? 1 : -r;
}
