/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * --signal and --stop with --legacy-exec PATH or --legacy-name NAME: a
 * legacy daemon's hand-written pidfile, which no kernel lock backs.  Its
 * pid is all there is to go by, so the evidence is gathered in the order
 * that keeps a reused pid safe:
 *
 *  1. pidfd_open(2) the pid that the file names: from then on the pidfd
 *     pins that process, and the pid cannot pass to another while it
 *     lives;
 *  2. the library's rule C (doc/protocol.md), through pidlock_inspect(3):
 *     the file is held by a pidfile holder (PIDLOCK_STATE_HELD_PIDFILE),
 *     the pid is still the one opened, and so the process is alive and
 *     started before the file was last written;
 *  2b. who could have written the file (legacy-trust.c): nobody but
 *     root, the caller and the process's own user, unless
 *     --legacy-trust-file; else anyone who can write it aims our signal;
 *  3. its identity, as start-stop-daemon(8) checks it: /proc/PID/exe is
 *     PATH (the same inode, or PATH deleted by an upgrade, in our mount
 *     namespace), /proc/PID/comm is NAME;
 *  4. the pidfd still names a live process: so /proc/PID, read in 2 and
 *     3, was that process's all along;
 *
 * and only then is it signalled, through the pidfd.  --stop waits for the
 * pidfd to poll readable (the process gone: by rule C the file is free),
 * with --retry's schedule as for a kernel lock's holder.
 *
 * Also here: what --stop says when the holders it signalled have gone but
 * the lock is still held (control.c calls say_holders_gone()).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* /proc/PID/comm: TASK_COMM_LEN of <linux/sched.h> less its '\0'. */
#define COMM_MAX 15
/* What readlink(2) of /proc/PID/exe adds once the file is unlinked. */
#define DELETED_SUFFIX " (deleted)"

/* The legacy holder: the pid the file names, pinned by its pidfd. */
struct legacy {
	const char *path;
	pid_t pid;
	int pidfd;
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int pidfd_signal(int pidfd, int sig)
{
	return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 ?
	       -errno : 0;
}

/* "signal 15 (Terminated)": the names are control.c's, which calls
 * this file, and the calls between files go one way only. */
static void sig_text(int sig, char *buf, size_t size)
{
	text_set(buf, size, "signal %d (%s)", sig, strsignal(sig));
}

/* A state nobody holds: the next locker takes the file at once. */
static bool state_free(enum pidlock_state s)
{
	return s == PIDLOCK_STATE_FREE || s == PIDLOCK_STATE_ABANDONED ||
	       s == PIDLOCK_STATE_STALE;
}

/* Is /proc this process's pid namespace's?  Otherwise /proc/PID is
 * another process than the pid that pidfd_open(2) takes. */
static bool proc_is_ours(void)
{
	char buf[32], want[32];
	ssize_t n = readlink("/proc/self", buf, sizeof(buf) - 1);

	if (n < 0)
		return false;
	buf[n] = '\0';
	text_set(want, sizeof(want), "%ld", (long)getpid());
	return strcmp(buf, want) == 0;
}

/* Refused: nothing was signalled. */
static int refuse(const struct legacy *l, const char *why)
{
	warn_file(l->path, "pid %d, the pidfile's: %s; nothing was signalled",
		  (int)l->pid, why);
	return EXIT_UNPROVEN;
}

/* Is pid in this process's mount namespace?  1, 0, -errno. */
static int same_mounts(pid_t pid)
{
	char path[64];
	struct stat ours, its;

	text_set(path, sizeof(path), "/proc/%ld/ns/mnt", (long)pid);
	if (stat("/proc/self/ns/mnt", &ours) < 0 || stat(path, &its) < 0)
		return -errno;
	return ours.st_dev == its.st_dev && ours.st_ino == its.st_ino;
}

/* Does `seen` (a /proc/PID/exe) name `exec`, or its real path, marked
 * deleted? */
static bool deleted_exec(const char *seen, const char *exec)
{
	char real[PATH_MAX], with[PATH_MAX + 16];

	text_set(with, sizeof(with), "%s%s", exec, DELETED_SUFFIX);
	if (strcmp(seen, with) == 0)
		return true;
	if (!realpath(exec, real))
		return false;
	text_set(with, sizeof(with), "%s%s", real, DELETED_SUFFIX);
	return strcmp(seen, with) == 0;
}

/*
 * Does pid run `exec`?  Its /proc/PID/exe is the same inode, or, once
 * an upgrade has replaced the file, the name `exec` (or its real path)
 * marked deleted.  A name is only a name in the mount namespace that
 * resolves it: in another, a program of its own may have run from that
 * path and been deleted, so there only the inode counts.  1 yes, 0 no
 * (*seen: what it runs), RUNS_ELSEWHERE (deleted, in another mount
 * namespace), -errno unknown.
 */
#define RUNS_ELSEWHERE 2
static int runs_exec(pid_t pid, const char *exec, char *seen, size_t size)
{
	char link[64];
	struct stat want, got;
	ssize_t n;
	int r;

	text_set(link, sizeof(link), "/proc/%ld/exe", (long)pid);
	if (stat(link, &got) == 0 && stat(exec, &want) == 0 &&
	    got.st_dev == want.st_dev && got.st_ino == want.st_ino)
		return 1;
	n = readlink(link, seen, size - 1);
	if (n < 0)
		return -errno;
	seen[n] = '\0';
	if (!deleted_exec(seen, exec))
		return 0;
	r = same_mounts(pid);
	return r == 0 ? RUNS_ELSEWHERE : r;
}

/* Is pid's command name (/proc/PID/comm) `name`?  1, 0 (*seen), -errno. */
static int has_name(pid_t pid, const char *name, char *seen, size_t size)
{
	char path[64];
	FILE *f;
	bool got;

	text_set(path, sizeof(path), "/proc/%ld/comm", (long)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	got = fgets(seen, (int)size, f) != NULL;
	(void)fclose(f);	/* read only: nothing to flush */
	if (!got)
		return -EIO;
	seen[strcspn(seen, "\n")] = '\0';
	return strcmp(seen, name) == 0;
}

/* Step 3: --legacy-exec and --legacy-name.  0, or the exit status. */
static int check_identity(const struct opts *o, const struct legacy *l)
{
	char seen[PATH_MAX], why[2 * PATH_MAX + 256];
	int r;

	if (o->legacy_exec) {
		r = runs_exec(l->pid, o->legacy_exec, seen, sizeof(seen));
		if (r < 0)
			return refuse(l, "what it runs cannot be read (another "
				      "user's process: run this as that user or "
				      "as root)");
		text_set(why, sizeof(why), "it runs %s, not %s", seen,
			 o->legacy_exec);
		if (r == 0)
			return refuse(l, why);
		text_set(why, sizeof(why), "it runs %s in another mount "
			 "namespace than yours, where that name may have been "
			 "another program; a deleted executable is taken for "
			 "%s only in your own mount namespace", seen,
			 o->legacy_exec);
		if (r == RUNS_ELSEWHERE)
			return refuse(l, why);
	}
	if (o->legacy_name) {
		r = has_name(l->pid, o->legacy_name, seen, sizeof(seen));
		if (r < 0)
			return refuse(l, "its name cannot be read");
		text_set(why, sizeof(why), "its name is %s, not %s", seen,
			 o->legacy_name);
		if (r == 0)
			return refuse(l, why);
	}
	return 0;
}

/* Step 2b: who could have written the pid (legacy-trust.c), unless
 * --legacy-trust-file.  0, or the exit status. */
static int check_writers(const struct opts *o, const struct legacy *l)
{
	char why[2 * PATH_MAX + 256], text[sizeof(why) + 256];
	int r;

	if (o->legacy_trust_file)
		return 0;
	r = pidfile_untrusted(l->path, l->pid, why, sizeof(why));
	if (r < 0)
		text_set(why, sizeof(why), "who could have written the pidfile "
			 "cannot be told: %s", strerror(-r));
	if (r == 0)
		return 0;
	text_set(text, sizeof(text), "%s; only a pidfile that no user but "
		 "root, you and the process's own user can write or "
		 "replace aims a signal (--legacy-trust-file: trust it all "
		 "the same)", why);
	return refuse(l, text);
}

/*
 * Steps 2 to 4, with the pidfd open.  0: l's process may be signalled;
 * -1: it has exited meanwhile (the file is free: the kernel-lock path
 * says so); else the exit status, said why.
 */
static int check_holder(const struct opts *o, const struct legacy *l)
{
	struct pidlock_info info;
	int r = pidlock_inspect(l->path, &info, stale_or_default(o));

	if (r < 0)
		return fail_path(l->path, -r);
	if (info.state != PIDLOCK_STATE_HELD_PIDFILE || info.pid != l->pid) {
		if (pidfd_signal(l->pidfd, 0) == -ESRCH)
			return -1;
		return refuse(l, "the file changed, or no longer reads as its "
			      "writer's, while it was checked");
	}
	r = check_writers(o, l);
	if (r)
		return r;
	r = check_identity(o, l);
	if (r)
		return r;
	r = pidfd_signal(l->pidfd, 0);
	if (r == -ESRCH)
		return -1;
	return r < 0 ? fail_path(l->path, -r) : 0;
}

/* Send sig: 1 sent, 0 the process had gone, or the exit status. */
static int send_one(const struct opts *o, const struct legacy *l, int sig)
{
	char name[64];
	int r = pidfd_signal(l->pidfd, sig);

	sig_text(sig, name, sizeof(name));
	if (r == -ESRCH)
		return 0;
	if (r < 0)
		return fail_path(l->path, -r);
	if (o->verbose)
		warn_file(l->path, "sent %s to pid %d (the pidfile's, no "
			  "kernel lock)", name, (int)l->pid);
	return 1;
}

/* Until the process has gone, for at most ms (-1: no limit).  0 gone,
 * 1 not yet, or the exit status. */
static int wait_gone(const struct legacy *l, int ms)
{
	int64_t deadline = mono_ms() + (ms > 0 ? ms : 0);

	for (;;) {
		struct pollfd p = { .fd = l->pidfd, .events = POLLIN };
		int64_t left = deadline - mono_ms();
		int r = poll(&p, 1, ms < 0 ? -1 : left > 0 ? (int)left : 0);

		if (r > 0)
			return 0;
		if (r == 0)
			return 1;
		if (errno != EINTR)
			return fail_path(l->path, errno);
	}
}

/* The process has gone: is the file free now, by rule C?  0, or 1 with
 * who holds it now (a new instance, not signalled). */
static int free_after(const struct opts *o, const struct legacy *l,
		      int64_t start)
{
	struct pidlock_info info;
	int64_t ms = mono_ms() - start;
	int r = pidlock_inspect(l->path, &info, stale_or_default(o));

	if (r < 0)
		return fail_path(l->path, -r);
	if (state_free(info.state)) {
		if (o->verbose)
			warn_file(l->path, "free after %lld.%03lld s",
				  (long long)(ms / 1000), (long long)(ms % 1000));
		return 0;
	}
	warn_file(l->path, "still held: pid %d, which was signalled, has "
		  "exited, and the file is %s now (pid %d); it was not "
		  "signalled", (int)l->pid, pidlock_state_name(info.state),
		  (int)info.pid);
	return 1;
}

/* --stop's schedule, on the one pidfd: 0 free, 1 still held, or the
 * exit status. */
static int stop_legacy(const struct opts *o, const struct legacy *l)
{
	int64_t start = mono_ms();
	int code = 1;

	for (int i = 0; code == 1 && i < o->nsteps;) {
		const struct stop_step *s = &o->steps[i];

		/* send_one()'s 0 (gone) and 1 (sent) are free and go on */
		code = s->sig ? send_one(o, l, s->sig) : wait_gone(l, s->ms);
		if (i + 1 == o->nsteps && o->repeat_from >= 0)
			i = o->repeat_from;
		else
			i++;
	}
	if (code == 0)
		return free_after(o, l, start);
	if (code == 1)
		warn_file(l->path, "still held at the end of the wait: pid %d, "
			  "the pidfile's, is alive", (int)l->pid);
	return code;
}

/* --signal: 0 sent, 1 the process had gone. */
static int signal_legacy(const struct opts *o, const struct legacy *l)
{
	int r = send_one(o, l, o->signal);

	if (r == 0) {
		warn_file(l->path, "its holder exited before the signal; "
			  "nothing was sent");
		return 1;
	}
	return r == 1 ? 0 : r;
}

/* Not a pidfile holder: say why a live pid in it is not signalled, if it
 * is not its writer (a reused pid), and let the kernel-lock path go on. */
static int not_legacy(const char *path, const struct pidlock_info *info)
{
	if (info->pid > 0 && info->pid_alive == 1 && !info->kernel_locks &&
	    info->state == PIDLOCK_STATE_ABANDONED)
		warn_file(path, "pid %d is alive but started after the file "
			  "was last written: a reused pid, not the pidfile's "
			  "writer; it was not signalled", (int)info->pid);
	return -1;
}

/*
 * --signal and --stop with --legacy-exec or --legacy-name: -1 when the
 * file is no pidfile holder's (then the kernel-lock path runs, so that
 * one init script serves before and after the upgrade); else the exit
 * status.
 */
int legacy_control(const struct opts *o)
{
	struct pidlock_info info;
	struct legacy l = { .path = o->files[0], .pidfd = -1 };
	int r;

	if (!o->legacy_exec && !o->legacy_name)
		return -1;
	if (o->legacy_name && strlen(o->legacy_name) > COMM_MAX) {
		warn_msg("--legacy-name '%s': longer than the %d bytes that "
			 "the kernel keeps of a command's name", o->legacy_name,
			 COMM_MAX);
		return EX_USAGE;
	}
	r = pidlock_inspect(l.path, &info, stale_or_default(o));
	if (r < 0 || info.state != PIDLOCK_STATE_HELD_PIDFILE)
		return r < 0 ? -1 : not_legacy(l.path, &info);
	if (!proc_is_ours()) {
		warn_file(l.path, "held by pid %d, the pidfile's, but /proc is "
			  "another pid namespace's, so it cannot be checked; "
			  "nothing was signalled", (int)info.pid);
		return EXIT_UNPROVEN;
	}
	l.pid = info.pid;
	l.pidfd = (int)syscall(SYS_pidfd_open, l.pid, 0);
	if (l.pidfd < 0)
		return errno == ESRCH ? -1 : fail_path(l.path, errno);
	r = check_holder(o, &l);
	if (r == 0)
		r = o->mode == MODE_STOP ? stop_legacy(o, &l) :
		    signal_legacy(o, &l);
	(void)close(l.pidfd);	/* a pidfd: nothing to flush */
	return r;
}

/* ---- --stop: the holders signalled have gone, the lock is held -------- */

static bool among(const pid_t *pids, unsigned int n, pid_t pid)
{
	for (unsigned int i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

/* A holder of path now, or 0. */
static pid_t holder_now(const char *path)
{
	int pidfd = -1;
	pid_t pid = 0;

	if (pidlock_holder_pidfds(path, &pidfd, &pid, 1) < 1)
		return 0;
	(void)close(pidfd);	/* a pidfd: nothing to flush */
	return pid;
}

/*
 * Still held when --stop's schedule ends, and the processes it
 * signalled (pids, the one lock file's) have all exited.  If the record
 * still names one of them, nobody took the lock since: a process that
 * shared its descriptor holds it, the command of `pidlock FILE cmd`
 * whose pidlock was killed.
 */
void say_holders_gone(const char *path, const pid_t *pids, unsigned int n)
{
	struct pidlock_info info;
	pid_t now;

	if (pidlock_inspect(path, &info, 0) < 0 ||
	    info.state != PIDLOCK_STATE_HELD || !among(pids, n, info.pid)) {
		warn_file(path, "still held: the holders signalled have exited, "
			  "and another process that took the lock since holds "
			  "it; it was not signalled");
		return;
	}
	now = holder_now(path);
	if (now > 0)
		warn_file(path, "still held: pid %d, which the record names, "
			  "has exited, but pid %d, which inherited the lock's "
			  "descriptor from it (the command of pidlock LOCKFILE "
			  "COMMAND), holds it still; it was not signalled.  "
			  "pidlock -F runs the command in pidlock's place, so "
			  "that --stop signals the command itself",
			  (int)info.pid, (int)now);
	else
		warn_file(path, "still held: pid %d, which the record names, "
			  "has exited, but a process that inherited the lock's "
			  "descriptor from it (the command of pidlock LOCKFILE "
			  "COMMAND) holds it still; it was not signalled.  "
			  "pidlock -F runs the command in pidlock's place, so "
			  "that --stop signals the command itself",
			  (int)info.pid);
}
