/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pidlock(1): what the files of the tool share.  One file a mode, and
 * the calls between files go one way only, never in a circle:
 * main -> options, run, status, list, remove, fd, control; control ->
 * legacy -> legacy-trust; remove, fd ->
 * run (taking the lock); run -> slots (taking one of N slots); run, list
 * -> status (describing a holder, JSON); options -> control (signal
 * names); all -> util;
 * util -> none.
 */
#ifndef PIDLOCK_CLI_H
#define PIDLOCK_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include <pidlock.h>

/* MODE_FD: lock a descriptor the shell opened (pidlock [-n|-w S] FD);
 * MODE_UNLOCK: pidlock -u FD; MODE_SIGNAL, MODE_STOP, MODE_WAIT_FREE:
 * --signal, --stop, --wait-free (control.c). */
enum mode { MODE_RUN = 0, MODE_STATUS, MODE_LIST, MODE_REMOVE, MODE_FD,
	    MODE_UNLOCK, MODE_SIGNAL, MODE_STOP, MODE_WAIT_FREE };

/* --status exit codes; errors use <sysexits.h> codes (64 and up). */
enum {
	STATUS_FREE = 0,
	STATUS_HELD = 1,
	STATUS_LEFT = 2,	/* abandoned or stale */
};

/* --signal, --stop: the holder cannot be proven (a pid in a file with
 * no kernel lock, a holder out of sight or another user's), so nothing
 * was signalled.  Above --status's 0 to 2, below <sysexits.h>. */
#define EXIT_UNPROVEN 3

/* One step of --stop's schedule: send `sig`, or (sig 0) wait up to `ms`
 * (-1: no limit) for the lock to be free. */
struct stop_step {
	int sig;
	int ms;
};

/* Steps of a --retry schedule: start-stop-daemon's is as long as the
 * user likes; a handful is what anyone writes. */
#define STOP_STEPS_MAX 16

struct opts {
	enum mode mode;
	unsigned int flags;	/* PIDLOCK_* for pidlock_new() */
	const char *tag;
	unsigned int stale_sec;	/* 0: the library's default */
	int timeout_ms;		/* <0 wait forever, 0 try once */
	bool timeout_set;
	bool nonblock;		/* -n, which wins over -w */
	int conflict_code;
	bool quiet;
	bool close_fd;
	bool exec;
	bool verbose;
	bool json;
	unsigned int mode_bits;	/* --mode */
	bool mode_set;
	unsigned int slots;	/* --slots N: a semaphore of N slots; 0 none */
	char **files;		/* operands of --status, --list, --remove */
	int nfiles;
	const char *lockfile;	/* run mode */
	int fd;			/* MODE_FD, MODE_UNLOCK: the descriptor */
	bool fd_command;	/* MODE_FD with --fd: then run cmd */
	pid_t fd_pid;		/* MODE_FD: the process the record names */
	const char *shell_cmd;	/* -c before the operands (--fd) */
	char **cmd;		/* run mode, --fd: NULL-terminated argv */
	int signal;		/* --signal, --stop: the signal (default TERM) */
	bool signal_set;
	const char *retry;	/* --retry SCHEDULE, as given */
	struct stop_step steps[STOP_STEPS_MAX];	/* --stop: what to do */
	int nsteps;
	int repeat_from;	/* --retry's forever: the step after the
				 * last goes back to; -1: the schedule ends */
	const char *legacy_exec;	/* --legacy-exec PATH (legacy.c) */
	const char *legacy_name;	/* --legacy-name NAME */
	bool legacy_trust_file;	/* --legacy-trust-file: whoever could
				 * have written the pidfile */
	int check_ms;		/* --check: ask every check_ms; 0 never */
	int lease_ms;		/* --lease: the holder's lease; 0 none */
	int kill_after_ms;	/* --kill-after: TERM to KILL, once lost */
	bool kill_after_set;
};

/* --kill-after's default: TERM, then KILL 5 s later (job.c). */
#define KILL_AFTER_DEFAULT_MS 5000

/* options.c: 0 run with *o; 1 done (--help, --version); -code: exit. */
int parse_options(int argc, char **argv, struct opts *o);

/* run.c */
int cmd_run(const struct opts *o);
int run_fd_command(const struct opts *o);
int acquire_lock(const struct opts *o, struct pidlock *lock, int timeout_ms,
		 const char *refused);

/* Older C libraries' headers lack them: the numbers are the same on
 * every architecture. */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

/* util.c: what /proc/PID/stat says of a process: 0, or -1 if it is gone
 * or the line cannot be read. */
struct proc_stat {
	char state;		/* 'R', 'S', ..., 'Z' */
	pid_t ppid;
	int exit_signal;	/* 0 for a clone without one */
};
int proc_stat(pid_t pid, struct proc_stat *st);

/* job.c: the command and all it started (--check, --lease) */
int job_reaper(void);
int job_signal(pid_t child, bool child_done, int sig);
int job_reap(pid_t child, int *status, bool *done);

/* status.c */
int cmd_status(const struct opts *o);
void format_age(int64_t seconds, char *buf, size_t size);
void format_kinds(unsigned int kinds, char *buf, size_t size);
void describe_holder(const char *path, const struct pidlock_info *info,
		     char *buf, size_t size);
void json_info(const char *path, const struct pidlock_info *info, int error);

/* slots.c */
int slots_acquire(const struct opts *o, struct pidlock_slots **setp,
		  struct pidlock **lockp);
int slots_fail(const struct opts *o, int err);

/* control.c */
int cmd_signal(const struct opts *o);
int cmd_stop(const struct opts *o);
int cmd_wait_free(const struct opts *o);
int parse_signal(const char *s);
const char *signal_abbrev(int sig);

/* legacy.c: a pidfile holder with no kernel lock, --legacy-exec or
 * --legacy-name; -1 when the file is none (the kernel-lock path runs). */
int legacy_control(const struct opts *o);
/* legacy-trust.c: could a user other than root, the caller and the
 * process's own user have written the pidfile at path (or replaced it)?
 * 0 no; 1 yes, said in why; -errno. */
int pidfile_untrusted(const char *path, pid_t pid, char *why, size_t size);
void say_holders_gone(const char *path, const pid_t *pids, unsigned int n);

/* list.c */
int cmd_list(const struct opts *o);

/* fd.c */
int cmd_fd(const struct opts *o);
int cmd_unlock(const struct opts *o);

/* remove.c */
int cmd_remove(const struct opts *o);

/* util.c */
extern char program_name[];
void print_clean(FILE *f, const char *s);
void warn_prefix(const char *path);
size_t text_len(const char *buf, size_t size);

/*
 * Output and texts, as macros rather than functions taking "...", which
 * would need a va_list: clang-tidy 14's va_list check carries its state
 * from one file to the next and calls every later va_start's list
 * uninitialised, a false finding that depends on the order of the files.
 *
 * A stream keeps its error: stdout's is checked once, by finish_stdout()
 * before the exit status is decided; stderr's has nowhere left to go.
 * Texts are built in buffers sized for what they hold, and one cut short
 * at its buffer's end is still worth showing.  text_add() uses buf and
 * size more than once.
 */
#define out(f, ...) ((void)fprintf((f), __VA_ARGS__))
#define text_set(buf, size, ...) ((void)snprintf((buf), (size), __VA_ARGS__))
#define text_add(buf, size, ...) \
	((void)snprintf((buf) + text_len((buf), (size)), \
			(size) - text_len((buf), (size)), __VA_ARGS__))
/* "pidlock: message" and "pidlock: PATH: message" */
#define warn_msg(...) \
	(warn_prefix(NULL), out(stderr, __VA_ARGS__), out(stderr, "\n"))
#define warn_file(path, ...) \
	(warn_prefix(path), out(stderr, __VA_ARGS__), out(stderr, "\n"))

void warn_path(const char *path, int err);
int exit_for_errno(int err);
int fail_path(const char *path, int err);
int fail_acquire(const char *path, int err);
int check_parent(const char *path);
int open_std_fds(void);
unsigned int stale_or_default(const struct opts *o);
int make_lock(const struct opts *o, const char *path, struct pidlock **lockp);
unsigned int lock_flags(const struct opts *o);
int configure_lock(const struct opts *o, struct pidlock *lock);
int finish_stdout(void);

#endif
