/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Command-line parsing: everything here ends in a struct opts or exit 64. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"

/* The shell for -c: the POSIX one, whatever $SHELL the user logs in with,
 * so a command line in a crontab means the same everywhere. */
#define SHELL_PATH "/bin/sh"

/* Keys of the options that have no short letter. */
enum {
	OPT_TAG = 256,
	OPT_PLAIN_PID,
	OPT_NO_SYNC,
	OPT_SYNC,
	OPT_KEEP_FILE,
	OPT_FLOCK_ONLY,
	OPT_FCNTL_ONLY,
	OPT_STALE,
	OPT_FD,
	OPT_STATUS,
	OPT_JSON,
	OPT_LIST,
	OPT_REMOVE,
	OPT_MODE,
	OPT_UNLOCK,
	OPT_SLOTS,
	OPT_HOST_LOCAL,
	OPT_SIGNAL,
	OPT_STOP,
	OPT_RETRY,
	OPT_WAIT_FREE,
	OPT_LEGACY_EXEC,
	OPT_LEGACY_NAME,
	OPT_LEGACY_TRUST_FILE,
	OPT_CHECK,
	OPT_LEASE,
	OPT_TOKEN,
	OPT_KILL_AFTER,
};

/* Modes an option is allowed in, as bits. */
enum {
	M_RUN = 1 << MODE_RUN,
	M_STATUS = 1 << MODE_STATUS,
	M_LIST = 1 << MODE_LIST,
	M_REMOVE = 1 << MODE_REMOVE,
	M_FD = 1 << MODE_FD,
	M_UNLOCK = 1 << MODE_UNLOCK,
	M_SIGNAL = 1 << MODE_SIGNAL,
	M_STOP = 1 << MODE_STOP,
	M_WAIT_FREE = 1 << MODE_WAIT_FREE,
	/* what takes or lets go of a lock */
	M_LOCKING = M_RUN | M_FD | M_UNLOCK,
	/* what acts on a lock's holder without taking it */
	M_CONTROL = M_SIGNAL | M_STOP | M_WAIT_FREE,
	M_ALL = M_RUN | M_STATUS | M_LIST | M_REMOVE | M_FD | M_UNLOCK |
		M_CONTROL,
};

/* What an option does: the generic kinds are the table's own values. */
enum kind {
	SET_BOOL,	/* a bool in struct opts, at `field` */
	SET_FLAG,	/* `value` into opts.flags */
	SET_MODE,	/* `value` is the mode */
	SET_BY_CALL,	/* call() checks and stores its argument */
	IS_ALIAS,	/* another name of the first entry with its key */
};

struct optdef {
	const char *name;	/* long name without "--"; NULL: short only */
	int key;		/* the short letter; above 255: long only */
	int has_arg;		/* no_argument or required_argument */
	enum kind kind;
	unsigned int value;
	size_t field;
	/* 0 go on, 1 done (--help, --version), -EX_USAGE when said why */
	int (*call)(struct opts *o, const char *arg);
	unsigned int modes;	/* the modes it may be used with */
};

/* After the synopsis; its %u is the default stale timeout. */
#define HELP_TEXT \
"\n" \
"Run a command while holding a lock file, or inspect and clean up lock files.\n" \
"\n" \
"Options for running a command:\n" \
" -n, --nonblock               fail at once if the lock is busy (also\n" \
"                              --nonblocking, --nb); it wins over -w\n" \
" -w, --timeout SECONDS        wait at most SECONDS (fractions allowed; also\n" \
"                              --wait)\n" \
" -E, --conflict-exit-code N   exit with N when the lock is busy (default 1)\n" \
" -q, --quiet-conflict         exit 0 without a word when the lock is busy\n" \
" -s, --shared                 take a shared lock: shared holders hold it\n" \
"                              together, an exclusive one keeps them out\n" \
" -x, -e, --exclusive          take an exclusive lock (the default)\n" \
" -c, --command 'COMMAND'      after LOCKFILE (with --fd, before): run\n" \
"                              /bin/sh -c 'COMMAND'\n" \
"     --tag TEXT               write TEXT into the lock file\n" \
"     --plain-pid              write the bare pid as the first line\n" \
"     --sync                   sync the lock file to disk after each write\n" \
"     --no-sync                do not (the default)\n" \
"     --keep-file              leave the lock file in place on release\n" \
"     --mode OCTAL             mode of a new lock file, exact whatever the\n" \
"                              umask (default 0644 less the umask; 0600\n" \
"                              keeps other users from blocking it, 0666\n" \
"                              shares it with them)\n" \
"     --flock-only             take only the flock(2) lock\n" \
"     --fcntl-only, --fcntl    take only the fcntl(2) lock\n" \
"     --stale SECONDS          stale timeout for spec-only holders (default %u)\n"

/* In three pieces: one string literal of over 4095 bytes is more than
 * C99 promises to support (clang -Woverlength-strings). */
#define HELP_TEXT_SHARED \
"     --check SECONDS          while the command runs, ask every SECONDS whether\n" \
"                              the lock is still ours (a shared file system's\n" \
"                              server may give it away); lost: TERM the\n" \
"                              command and all it started, KILL after the\n" \
"                              grace, exit 75\n" \
"     --kill-after SECONDS     the grace between TERM and KILL once the lock\n" \
"                              is lost (default 5)\n" \
"     --lease SECONDS          count the lock lost once the server has not\n" \
"                              answered for SECONDS (below its own timeout);\n" \
"                              checks every SECONDS/4 unless --check says\n" \
"     --token                  a fencing token for this hold, greater than\n" \
"                              every earlier holder's: PIDLOCK_TOKEN tells\n" \
"                              the command\n"

#define HELP_TEXT_MORE \
"     --host-local             only this host uses the directory: lock where\n" \
"                              locks exclude only this host (NFS nolock,\n" \
"                              sshfs, ...), which is refused otherwise\n" \
" -o, --close                  do not pass the lock descriptor to the command\n" \
" -F, --exec, --no-fork        run the command in place of pidlock, no fork\n" \
"     --slots N                a semaphore: hold one of N slots, LOCKFILE.0 to\n" \
"                              LOCKFILE.N-1; PIDLOCK_SLOT tells the command which\n" \
" -v, --verbose                tell when waiting, for whom, and when locked\n" \
"\n" \
"Inspecting and cleaning up:\n" \
"     --status                 show the state of each LOCKFILE, never lock it\n" \
"     --list                   show the lock files in DIRECTORY\n" \
"     --json                   with --status or --list: print JSON\n" \
"     --slots N                with --status: show each of the N slots\n" \
"     --remove                 delete each LOCKFILE if nobody holds it\n" \
"\n" \
"Acting on the holder, never on a pid guess (pidfds proven to hold the lock):\n" \
"     --signal SIG LOCKFILE    send SIG (TERM, SIGHUP, 10...) to the holder(s)\n" \
"     --stop LOCKFILE          send TERM (or --signal SIG), wait until free;\n" \
"                              -w SECONDS: at most that long (default: no limit)\n" \
"     --retry SCHEDULE         with --stop: SIG/SECONDS/SIG/SECONDS..., such as\n" \
"                              TERM/5/KILL/2; a lone T means SIG/T/KILL/T;\n" \
"                              'forever' marks where it starts again\n" \
"     --legacy-exec PATH       with --signal, --stop: also a legacy daemon's\n" \
"                              pidfile (a pid, no kernel lock) whose process\n" \
"                              runs PATH and started before the file was\n" \
"                              written; --legacy-name NAME: is called NAME;\n" \
"                              never if a user other than root, you or the\n" \
"                              process's user could have written the pidfile\n" \
"     --legacy-trust-file      with these: trust the pidfile all the same\n" \
"     --wait-free LOCKFILE     wait until nobody holds it, without taking it\n" \
"                              (-w SECONDS: at most that long)\n" \
"     --slots N                with these: every slot, LOCKFILE.0 to .N-1\n" \
"\n" \
"Locking a descriptor the shell opened (exec 9<>FILE), as flock(1) FD:\n" \
"     FD                       lock it (-n, -w, -x as above; not -s); the lock\n" \
"                              file names the shell, and the lock lasts while\n" \
"                              the shell keeps FD open\n" \
"     --fd FD COMMAND [ARG...] lock it, then run COMMAND (-c 'SHELL COMMAND'\n" \
"                              too); the lock stays with FD afterwards\n" \
" -u, --unlock FD              release it\n" \
"\n" \
" -h, --help                   show this help and exit\n" \
" -V, --version                show the version and exit\n" \
"\n" \
"Exit status: the command's, or 128+N if signal N killed it; 1 (or -E N) if\n" \
"the lock is busy; --status: 0 free, 1 held, 2 abandoned or stale;\n" \
"--signal: 0 sent, 1 free; --stop, --wait-free: 0 free, 1 still held;\n" \
"3 holder cannot be proven (a pid in a file, out of sight), nothing sent;\n" \
"64 usage (or FD not open for reading and writing), 65 not a lock file\n" \
"(nothing changed) or FD not open, 66 unusable lock file, 69 command cannot\n" \
"run, 71 system error, 75 FD's file is no longer at its path (open it\n" \
"again) or, with --check or --lease, the lock was lost while the command\n" \
"ran, 77 permission denied.\n" \
"See pidlock(1).\n"

static void usage(void)
{
	static const char *const synopsis[] = {
		"[options] LOCKFILE COMMAND [ARG...]",
		"[options] LOCKFILE -c 'SHELL COMMAND'",
		"--status [--json] LOCKFILE...",
		"--list [--json] DIRECTORY",
		"--remove LOCKFILE...",
		"--signal SIG [--slots N] LOCKFILE",
		"--stop [-w SECONDS | --retry SCHEDULE] [--signal SIG] LOCKFILE",
		"--signal SIG | --stop ... --legacy-exec PATH LOCKFILE",
		"--wait-free [-w SECONDS] [--slots N] LOCKFILE",
		"[-n | -w SECONDS] FD",
		"[options] --fd FD COMMAND [ARG...]",
		"[options] --fd FD -c 'SHELL COMMAND'",
		"-u FD",
	};

	out(stdout, "Usage:\n");
	for (size_t i = 0; i < sizeof(synopsis) / sizeof(synopsis[0]); i++)
		out(stdout, " %s %s\n", program_name, synopsis[i]);
	out(stdout, HELP_TEXT, PIDLOCK_DEFAULT_STALE_SEC);
	out(stdout, "%s", HELP_TEXT_SHARED);
	out(stdout, "%s", HELP_TEXT_MORE);
}

/* After a usage error: where to read how it goes. */
static int try_help(void)
{
	out(stderr, "Try '%s --help' for more information.\n", program_name);
	return -EX_USAGE;
}

#define usage_error(...) (warn_msg(__VA_ARGS__), try_help())

/* Seconds with an optional fraction, to milliseconds rounded up so a
 * tiny timeout never turns into "try once" by accident. */
static int parse_seconds(const char *s, int *ms)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0 ||
	    s[strspn(s, " \t")] == '-')
		return -1;
	v = ceil(v * 1000.0);
	if (v > (double)INT_MAX)
		return -1;
	*ms = (int)v;
	return 0;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!s[0] || s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Octal permission bits that a lock file may have: no execute, setuid,
 * setgid or sticky bit (pidlock_set_mode(3) refuses those). */
static int parse_mode(const char *s, unsigned int *out)
{
	char *end;
	unsigned long v;

	if (s[0] < '0' || s[0] > '7')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 8);
	if (errno || *end || (v & ~0666UL))
		return -1;
	*out = (unsigned int)v;
	return 0;
}

/* -n wins over -w whichever comes first, as in flock(1): see
 * parse_options(). */
static int set_nonblock(struct opts *o, const char *arg)
{
	(void)arg;
	o->nonblock = true;
	return 0;
}

static int set_timeout(struct opts *o, const char *arg)
{
	if (parse_seconds(arg, &o->timeout_ms) < 0)
		return usage_error("invalid timeout '%s' (seconds from 0 to "
				   "%d.%03d, fractions allowed)", arg,
				   INT_MAX / 1000, INT_MAX % 1000);
	o->timeout_set = true;
	return 0;
}

static int set_check(struct opts *o, const char *arg)
{
	if (parse_seconds(arg, &o->check_ms) < 0 || o->check_ms == 0)
		return usage_error("invalid check interval '%s' (seconds from "
				   "0.001 to %d.%03d, fractions allowed)", arg,
				   INT_MAX / 1000, INT_MAX % 1000);
	return 0;
}

static int set_lease(struct opts *o, const char *arg)
{
	if (parse_seconds(arg, &o->lease_ms) < 0 || o->lease_ms == 0 ||
	    (unsigned int)o->lease_ms > PIDLOCK_LEASE_MAX_MS)
		return usage_error("invalid lease '%s' (seconds from 0.001 to "
				   "%u, fractions allowed)", arg,
				   PIDLOCK_LEASE_MAX_MS / 1000);
	return 0;
}

static int set_kill_after(struct opts *o, const char *arg)
{
	if (parse_seconds(arg, &o->kill_after_ms) < 0)
		return usage_error("invalid grace '%s' (seconds from 0 to "
				   "%d.%03d, fractions allowed)", arg,
				   INT_MAX / 1000, INT_MAX % 1000);
	o->kill_after_set = true;
	return 0;
}

static int set_conflict_code(struct opts *o, const char *arg)
{
	unsigned long v;

	if (parse_uint(arg, 255, &v) < 0)
		return usage_error("invalid conflict exit code '%s' (0..255)", arg);
	o->conflict_code = (int)v;
	return 0;
}

static int set_tag(struct opts *o, const char *arg)
{
	if (strlen(arg) > PIDLOCK_TAG_MAX)
		return usage_error("tag too long: %zu bytes, at most %d",
				   strlen(arg), PIDLOCK_TAG_MAX);
	o->tag = arg;
	return 0;
}

static int set_stale(struct opts *o, const char *arg)
{
	unsigned long v;

	if (parse_uint(arg, UINT_MAX, &v) < 0 || v == 0)
		return usage_error("invalid stale timeout '%s' (whole seconds "
				   "from 1 to %u)", arg, UINT_MAX);
	o->stale_sec = (unsigned int)v;
	return 0;
}

static int set_file_mode(struct opts *o, const char *arg)
{
	if (parse_mode(arg, &o->mode_bits) < 0)
		return usage_error("invalid mode '%s' (octal, read and write "
				   "bits only: 0 to 0666, such as 0600)", arg);
	o->mode_set = true;
	return 0;
}

static int set_slots(struct opts *o, const char *arg)
{
	unsigned long v;

	if (parse_uint(arg, PIDLOCK_SLOTS_MAX, &v) < 0 || v == 0)
		return usage_error("invalid number of slots '%s' (1 to %u)", arg,
				   PIDLOCK_SLOTS_MAX);
	o->slots = (unsigned int)v;
	return 0;
}

/* -s and -x as flock(1) has them: the last one given counts. */
static int set_shared(struct opts *o, const char *arg)
{
	(void)arg;
	o->flags |= PIDLOCK_SHARED;
	return 0;
}

static int set_exclusive(struct opts *o, const char *arg)
{
	(void)arg;
	o->flags &= ~(unsigned int)PIDLOCK_SHARED;
	return 0;
}

static int set_signal(struct opts *o, const char *arg)
{
	o->signal = parse_signal(arg);
	if (o->signal <= 0)
		return usage_error("invalid signal '%s' (a name such as TERM, "
				   "SIGHUP or USR1, or a number from 1 to %d)",
				   arg, SIGRTMAX);
	o->signal_set = true;
	return 0;
}

/* --retry: checked here, turned into steps once --signal is known
 * (make_steps()). */
static int check_schedule(const char *s);

static int set_retry(struct opts *o, const char *arg)
{
	if (check_schedule(arg) < 0)
		return try_help();
	o->retry = arg;
	return 0;
}

/* --legacy-exec, --legacy-name: the opt-in to signal a pidfile's pid
 * that no kernel lock backs, if its process is this (legacy.c). */
static int set_legacy_exec(struct opts *o, const char *arg)
{
	if (!arg[0])
		return usage_error("%s", "--legacy-exec needs the daemon's "
				   "executable, such as /usr/sbin/exampled");
	o->legacy_exec = arg;
	return 0;
}

static int set_legacy_name(struct opts *o, const char *arg)
{
	if (!arg[0])
		return usage_error("%s", "--legacy-name needs the daemon's "
				   "process name, such as exampled");
	o->legacy_name = arg;
	return 0;
}

static int show_help(struct opts *o, const char *arg)
{
	(void)o;
	(void)arg;
	usage();
	return 1;
}

static int show_version(struct opts *o, const char *arg)
{
	(void)o;
	(void)arg;
	out(stdout, "%s (%s) %s\n", program_name, PACKAGE_NAME, PACKAGE_VERSION);
	return 1;
}

/* -c before the operands: the command of --fd FD -c 'COMMAND'; with a
 * LOCKFILE it goes after it (parse_command() says so). */
static int set_command(struct opts *o, const char *arg)
{
	o->shell_cmd = arg;
	return 0;
}

static int parse_fd(const char *s);

/* --fd FD: lock the shell's descriptor, then run a command (flock(1)
 * --fd); the mode is decided once all options are read. */
static int set_fd(struct opts *o, const char *arg)
{
	o->fd = parse_fd(arg);
	if (o->fd < 0)
		return usage_error("invalid descriptor '%s' (a number from 0 "
				   "to %d, such as 9 after exec 9<>FILE)", arg,
				   INT_MAX);
	o->fd_command = true;
	return 0;
}

#define BOOL(name, key, member, modes) { name, key, no_argument, \
	SET_BOOL, 0, offsetof(struct opts, member), NULL, modes }
#define FLAG(name, key, flag) \
	{ name, key, no_argument, SET_FLAG, flag, 0, NULL, M_LOCKING }
#define MODE(name, key, mode) \
	{ name, key, no_argument, SET_MODE, mode, 0, NULL, M_ALL }
#define CALL(name, key, has_arg, fn, modes) \
	{ name, key, has_arg, SET_BY_CALL, 0, 0, fn, modes }
/* A long name flock(1) spells differently: it acts as the entry before
 * it with the same key, whose name the messages use. */
#define ALIAS(name, key, has_arg) \
	{ name, key, has_arg, IS_ALIAS, 0, 0, NULL, 0 }

/*
 * Every option: how it is spelled, what it sets, and with which modes it
 * may be used.  The order is getopt_long's, which names the candidates
 * of an ambiguous abbreviation in it.  -o and -F with a descriptor act
 * on the command of --fd, and -s with a descriptor is refused: see
 * check_combinations().
 */
static const struct optdef options[] = {
	CALL("nonblock", 'n', no_argument, set_nonblock,
	     M_RUN | M_REMOVE | M_FD),
	ALIAS("nonblocking", 'n', no_argument),
	ALIAS("nb", 'n', no_argument),
	CALL("timeout", 'w', required_argument, set_timeout,
	     M_RUN | M_REMOVE | M_FD | M_STOP | M_WAIT_FREE),
	ALIAS("wait", 'w', required_argument),
	CALL("conflict-exit-code", 'E', required_argument, set_conflict_code,
	     M_RUN | M_REMOVE | M_FD | M_UNLOCK),
	BOOL("quiet-conflict", 'q', quiet, M_RUN | M_REMOVE),
	CALL("shared", 's', no_argument, set_shared, M_RUN | M_FD),
	CALL("exclusive", 'x', no_argument, set_exclusive, M_RUN | M_FD),
	CALL(NULL, 'e', no_argument, set_exclusive, M_RUN | M_FD),
	BOOL("close", 'o', close_fd, M_RUN | M_FD),
	BOOL("verbose", 'v', verbose, M_ALL),
	CALL("help", 'h', no_argument, show_help, M_ALL),
	CALL("version", 'V', no_argument, show_version, M_ALL),
	CALL("tag", OPT_TAG, required_argument, set_tag, M_RUN | M_FD),
	FLAG("plain-pid", OPT_PLAIN_PID, PIDLOCK_PLAIN_PID),
	FLAG("sync", OPT_SYNC, PIDLOCK_SYNC),
	FLAG("no-sync", OPT_NO_SYNC, PIDLOCK_NO_SYNC),
	FLAG("keep-file", OPT_KEEP_FILE, PIDLOCK_KEEP_FILE),
	FLAG("flock-only", OPT_FLOCK_ONLY, PIDLOCK_FLOCK_ONLY),
	FLAG("fcntl-only", OPT_FCNTL_ONLY, PIDLOCK_OFD_ONLY),
	ALIAS("fcntl", OPT_FCNTL_ONLY, no_argument),
	FLAG("host-local", OPT_HOST_LOCAL, PIDLOCK_HOST_LOCAL),
	FLAG("token", OPT_TOKEN, PIDLOCK_TOKEN),
	CALL("stale", OPT_STALE, required_argument, set_stale, M_ALL),
	CALL("check", OPT_CHECK, required_argument, set_check, M_RUN),
	CALL("lease", OPT_LEASE, required_argument, set_lease, M_RUN),
	CALL("kill-after", OPT_KILL_AFTER, required_argument, set_kill_after,
	     M_RUN),
	BOOL("exec", 'F', exec, M_RUN | M_FD),
	ALIAS("no-fork", 'F', no_argument),
	MODE("status", OPT_STATUS, MODE_STATUS),
	BOOL("json", OPT_JSON, json, M_STATUS | M_LIST),
	MODE("list", OPT_LIST, MODE_LIST),
	MODE("remove", OPT_REMOVE, MODE_REMOVE),
	MODE("unlock", 'u', MODE_UNLOCK),
	CALL("mode", OPT_MODE, required_argument, set_file_mode, M_RUN),
	CALL("slots", OPT_SLOTS, required_argument, set_slots,
	     M_RUN | M_STATUS | M_CONTROL),
	CALL("signal", OPT_SIGNAL, required_argument, set_signal,
	     M_SIGNAL | M_STOP),
	MODE("stop", OPT_STOP, MODE_STOP),
	CALL("retry", OPT_RETRY, required_argument, set_retry, M_STOP),
	MODE("wait-free", OPT_WAIT_FREE, MODE_WAIT_FREE),
	CALL("legacy-exec", OPT_LEGACY_EXEC, required_argument,
	     set_legacy_exec, M_SIGNAL | M_STOP),
	CALL("legacy-name", OPT_LEGACY_NAME, required_argument,
	     set_legacy_name, M_SIGNAL | M_STOP),
	BOOL("legacy-trust-file", OPT_LEGACY_TRUST_FILE, legacy_trust_file,
	     M_SIGNAL | M_STOP),
	CALL("fd", OPT_FD, required_argument, set_fd, M_FD),
	CALL("command", 'c', required_argument, set_command, M_RUN | M_FD),
};

#define NOPTIONS (sizeof(options) / sizeof(options[0]))

/* What the parse has gathered besides struct opts. */
struct parser {
	const struct optdef *seen[NOPTIONS];	/* each once, as first given */
	int nseen;
	int modes_given;
};

/* getopt_long's view of the table: its long options and short letters.
 * '+': stop at LOCKFILE, so the command's own options stay its own. */
static void getopt_tables(struct option *longopts, char *shortopts)
{
	size_t nl = 0, ns = 0;

	shortopts[ns++] = '+';
	for (size_t i = 0; i < NOPTIONS; i++) {
		const struct optdef *d = &options[i];

		if (d->name)
			longopts[nl++] = (struct option){ d->name, d->has_arg,
							  NULL, d->key };
		if (d->key > 255 || d->kind == IS_ALIAS)
			continue;
		shortopts[ns++] = (char)d->key;
		if (d->has_arg)
			shortopts[ns++] = ':';
	}
	longopts[nl] = (struct option){ NULL, 0, NULL, 0 };
	shortopts[ns] = '\0';
}

/* The entry an option's key stands for: an alias's is the one before. */
static const struct optdef *find_option(int key)
{
	for (size_t i = 0; i < NOPTIONS; i++)
		if (options[i].key == key && options[i].kind != IS_ALIAS)
			return &options[i];
	return NULL;
}

/* Each option is remembered once, however often it is given. */
static void note(struct parser *p, const struct optdef *d)
{
	for (int i = 0; i < p->nseen; i++)
		if (p->seen[i] == d)
			return;
	p->seen[p->nseen++] = d;
}

static int take_option(struct opts *o, struct parser *p, int key)
{
	const struct optdef *d = find_option(key);
	int r = 0;

	if (!d)
		return try_help();	/* getopt_long said what was wrong */
	switch (d->kind) {
	case SET_BOOL:
		*(bool *)((char *)o + d->field) = true;
		break;
	case SET_FLAG:
		/* --sync and --no-sync: the last one given counts. */
		if (d->value & (PIDLOCK_SYNC | PIDLOCK_NO_SYNC))
			o->flags &= ~(unsigned int)(PIDLOCK_SYNC |
						    PIDLOCK_NO_SYNC);
		o->flags |= d->value;
		break;
	case SET_MODE:
		o->mode = (enum mode)d->value;
		p->modes_given++;
		break;
	case SET_BY_CALL:
		r = d->call(o, optarg);
		break;
	case IS_ALIAS:
		break;	/* find_option() never returns one */
	}
	if (r == 0)
		note(p, d);
	return r;
}

static const char *mode_name(enum mode m)
{
	static const char *const names[] = {
		[MODE_RUN] = "running a command", [MODE_STATUS] = "--status",
		[MODE_LIST] = "--list", [MODE_REMOVE] = "--remove",
		[MODE_FD] = "a descriptor", [MODE_UNLOCK] = "--unlock",
		[MODE_SIGNAL] = "--signal", [MODE_STOP] = "--stop",
		[MODE_WAIT_FREE] = "--wait-free",
	};

	return names[m];
}

/* The first option given that its table entry does not allow with the
 * mode is named; then the pairs that exclude each other. */
static int check_combinations(const struct opts *o, const struct parser *p)
{
	if (p->modes_given > 1)
		return usage_error("%s", "--status, --list, --remove, --unlock, "
				   "--stop and --wait-free exclude each other");
	for (int i = 0; i < p->nseen; i++)
		if (!(p->seen[i]->modes & (1U << o->mode)) && p->seen[i]->name)
			return usage_error("--%s cannot be used with %s",
					   p->seen[i]->name, mode_name(o->mode));
		else if (!(p->seen[i]->modes & (1U << o->mode)))
			return usage_error("-%c cannot be used with %s",
					   p->seen[i]->key, mode_name(o->mode));
	if ((o->flags & PIDLOCK_FLOCK_ONLY) && (o->flags & PIDLOCK_OFD_ONLY))
		return usage_error("%s", "--flock-only and --fcntl-only exclude each other");
	if (o->exec && o->close_fd)
		return usage_error("%s", "--exec and --close exclude each other: the lock would end at exec");
	if ((o->flags & PIDLOCK_TOKEN) && (o->flags & PIDLOCK_SHARED))
		return usage_error("%s", "--token and --shared exclude each "
				   "other: a token is one holder's");
	if ((o->flags & PIDLOCK_TOKEN) && o->mode != MODE_RUN)
		return usage_error("%s", "--token needs a lock file: a "
				   "descriptor's lock outlives pidlock, and no "
				   "token can be given for it");
	if (o->kill_after_set && !o->check_ms && !o->lease_ms)
		return usage_error("%s", "--kill-after needs --check or --lease: "
				   "it is the grace between TERM and KILL once "
				   "the lock is lost");
	if (o->exec && (o->check_ms || o->lease_ms))
		return usage_error("%s", "--exec excludes --check and --lease: "
				   "no pidlock process would be left to ask "
				   "whether the lock is still ours");
	if (o->slots && (o->flags & PIDLOCK_SHARED))
		return usage_error("%s", "--shared and --slots exclude each other: a slot has one holder");
	if (o->slots && (o->legacy_exec || o->legacy_name))
		return usage_error("%s", "--slots and --legacy-exec or "
				   "--legacy-name exclude each other: a slot is "
				   "never a legacy pidfile");
	if (o->legacy_trust_file && !o->legacy_exec && !o->legacy_name)
		return usage_error("%s", "--legacy-trust-file needs --legacy-exec "
				   "or --legacy-name: it trusts a legacy "
				   "pidfile that they check");
	if (o->retry && o->timeout_set)
		return usage_error("%s", "-w and --retry exclude each other: the "
				   "schedule says how long each step waits");
	if (o->mode == MODE_FD && !o->fd_command && (o->exec || o->close_fd))
		return usage_error("%s needs a command: pidlock --fd FD %s COMMAND",
				   o->exec ? "--exec" : "--close",
				   o->exec ? "-F" : "-o");
	/* Why, in pidlock(1), "LOCKING A SHELL'S DESCRIPTOR". */
	if (o->mode == MODE_FD && (o->flags & PIDLOCK_SHARED))
		return usage_error("%s", "--shared cannot lock a descriptor: the "
				   "lock file names one holder, and a shell that "
				   "leaves a shared lock by closing the descriptor "
				   "cannot hand the record on to those that stay; "
				   "use pidlock -s LOCKFILE COMMAND");
	return 0;
}

/* /bin/sh -c COMMAND, for -c and --command. */
static char **shell_command(const char *command)
{
	static char *shell_argv[4];

	shell_argv[0] = (char *)SHELL_PATH;
	shell_argv[1] = (char *)"-c";
	/* execvp(3) takes char *const[] but changes no string (POSIX):
	 * the option table's const string goes in as it is. */
	memcpy(&shell_argv[2], &command, sizeof(command));
	shell_argv[3] = NULL;
	return shell_argv;
}

/* LOCKFILE COMMAND [ARG...], LOCKFILE -c 'COMMAND', or LOCKFILE -- COMMAND */
static int parse_command(int argc, char **argv, struct opts *o)
{
	char **rest;
	int n;

	if (o->shell_cmd)
		return usage_error("%s goes after LOCKFILE: pidlock LOCKFILE -c "
				   "'COMMAND' (before the operands only with --fd)",
				   "-c");
	if (argc - optind < 1)
		return usage_error("%s", "no lock file given");
	o->lockfile = argv[optind];
	rest = argv + optind + 1;
	n = argc - optind - 1;
	if (n > 0 && strcmp(rest[0], "--") == 0) {
		rest++;
		n--;
	} else if (n > 0 && (strcmp(rest[0], "-c") == 0 ||
			     strcmp(rest[0], "--command") == 0)) {
		if (n != 2)
			return usage_error("%s takes exactly one argument, the shell command",
					   rest[0]);
		o->cmd = shell_command(rest[1]);
		return 0;
	}
	if (n < 1)
		return usage_error("%s", "no command given");
	o->cmd = rest;
	return 0;
}

static int parse_operands(int argc, char **argv, struct opts *o)
{
	o->files = argv + optind;
	o->nfiles = argc - optind;
	if (o->nfiles < 1)
		return usage_error("%s needs %s", mode_name(o->mode),
				   o->mode == MODE_LIST ? "a directory" :
				   "a lock file name");
	if (o->mode == MODE_LIST && o->nfiles != 1)
		return usage_error("%s takes exactly one directory", "--list");
	if (((1U << o->mode) & M_CONTROL) && o->nfiles != 1)
		return usage_error("%s takes exactly one lock file",
				   mode_name(o->mode));
	for (int i = 0; i < o->nfiles; i++)
		if (!o->files[i][0])
			return usage_error("%s", "empty file name");
	return 0;
}

/* A descriptor number as a shell writes it: digits only, 0 to INT_MAX,
 * as flock(1) takes them (bash opens `exec 2000<>FILE` if the limit of
 * open files allows it). */
static int parse_fd(const char *s)
{
	unsigned long v;

	if (parse_uint(s, INT_MAX, &v) < 0 || s[strspn(s, "0123456789")])
		return -1;
	return (int)v;
}

/* pidlock [options] FD (flock(1)'s form): a lone operand of digits. */
static bool fd_form(int argc, char **argv)
{
	return argc - optind == 1 && parse_fd(argv[optind]) >= 0;
}

static int parse_fd_operand(int argc, char **argv, struct opts *o)
{
	if (argc - optind != 1)
		return usage_error("%s takes one descriptor number, such as 9",
				   "--unlock");
	o->fd = parse_fd(argv[optind]);
	if (o->fd < 0)
		return usage_error("invalid descriptor '%s' (a number from 0 "
				   "to %d, such as 9 after exec 9<>FILE)",
				   argv[optind], INT_MAX);
	return 0;
}

/* A lone FD takes no command, so no -c either. */
static int parse_fd_form(int argc, char **argv, struct opts *o)
{
	if (o->shell_cmd)
		return usage_error("%s", "-c with a descriptor goes with --fd: "
				   "pidlock --fd FD -c 'COMMAND'");
	return parse_fd_operand(argc, argv, o);
}

/* --fd FD COMMAND [ARG...], or --fd FD -c 'COMMAND' and nothing after. */
static int parse_fd_command(int argc, char **argv, struct opts *o)
{
	int n = argc - optind;

	if (o->shell_cmd && n > 0)
		return usage_error("%s takes exactly one argument, the shell "
				   "command", "-c");
	if (o->shell_cmd) {
		o->cmd = shell_command(o->shell_cmd);
		return 0;
	}
	if (n < 1)
		return usage_error("%s", "no command given: pidlock --fd FD "
				   "COMMAND, or pidlock FD to lock it alone");
	o->cmd = argv + optind;
	return 0;
}

/* The mode given by the operands and --fd, when no option named one. */
static void decide_mode(int argc, char **argv, struct opts *o,
			const struct parser *p)
{
	if (o->mode != MODE_RUN || p->modes_given > 0)
		return;
	if (o->signal_set)
		o->mode = MODE_SIGNAL;
	else if (o->fd_command || fd_form(argc, argv))
		o->mode = MODE_FD;
}

/* ---- --stop's schedule ------------------------------------------- */

/* A schedule item: a timeout in seconds (a plain number, fractions
 * allowed), else a signal, by name or as -NUMBER (start-stop-daemon's
 * spelling: a bare number is a timeout).  0 and *step set, or -1. */
static int schedule_item(const char *s, size_t len, struct stop_step *step)
{
	char item[32];

	if (len == 0 || len >= sizeof(item))
		return -1;
	memcpy(item, s, len);
	item[len] = '\0';
	step->sig = 0;
	step->ms = 0;
	if (item[0] >= '0' && item[0] <= '9')
		return parse_seconds(item, &step->ms);
	step->sig = parse_signal(item[0] == '-' ? item + 1 : item);
	return step->sig > 0 ? 0 : -1;
}

/* "forever" at p (len bytes): start-stop-daemon's mark, after which the
 * schedule repeats once it ends.  Once only, and not last. */
static int forever_item(const char *s, const char *p, size_t len, int n,
			int *repeat_from)
{
	if (len != 7 || strncmp(p, "forever", 7) != 0)
		return 0;
	if (*repeat_from >= 0) {
		warn_msg("--retry '%s': 'forever' more than once", s);
		return -1;
	}
	if (!p[len]) {
		warn_msg("--retry '%s': 'forever' last, with nothing after it "
			 "to repeat", s);
		return -1;
	}
	*repeat_from = n;
	return 1;
}

/* The items of s into steps, and *repeat_from (-1: no forever); how
 * many steps, or -1 (said why). */
static int schedule_steps(const char *s, struct stop_step *steps,
			  int *repeat_from)
{
	const char *p = s;
	int n = 0;

	*repeat_from = -1;
	for (;;) {
		size_t len = strcspn(p, "/");
		int r = forever_item(s, p, len, n, repeat_from);

		if (r < 0)
			return -1;
		if (r == 0 && n == STOP_STEPS_MAX) {
			warn_msg("--retry '%s': more than %d items", s,
				 STOP_STEPS_MAX);
			return -1;
		}
		if (r == 0 && schedule_item(p, len, &steps[n++]) < 0) {
			warn_msg("--retry '%s': '%.*s' is neither a timeout in "
				 "seconds, a signal such as TERM or -9, nor "
				 "'forever'", s, (int)len, p);
			return -1;
		}
		if (!p[len])
			return n;
		p += len + 1;
	}
}

/* A lone timeout T, or items that end with a timeout, the wait after
 * the last signal. */
static int check_schedule(const char *s)
{
	struct stop_step steps[STOP_STEPS_MAX];
	int from, n = schedule_steps(s, steps, &from);
	int64_t waits = 0;

	if (n < 0)
		return -1;
	if (n == 1 && steps[0].sig == 0 && from < 0)
		return 0;
	if (n < 2 || steps[n - 1].sig != 0) {
		warn_msg("--retry '%s': a schedule ends with a timeout, the wait "
			 "after its last signal, such as TERM/5/KILL/2", s);
		return -1;
	}
	for (int i = from; i >= 0 && i < n; i++)
		waits += steps[i].ms;
	if (from >= 0 && waits == 0) {
		warn_msg("--retry '%s': what 'forever' repeats waits 0 seconds: "
			 "it would send signals without a pause", s);
		return -1;
	}
	return 0;
}

/*
 * --stop's steps: SIG then -w (or no limit); --retry T: SIG/T/KILL/T,
 * as start-stop-daemon has it; --retry with items: those, whose signals
 * --signal would contradict.
 */
static int make_steps(struct opts *o)
{
	int sig = o->signal_set ? o->signal : SIGTERM;

	o->repeat_from = -1;
	if (!o->retry) {
		o->steps[0] = (struct stop_step){ sig, 0 };
		o->steps[1] = (struct stop_step){ 0, o->timeout_ms };
		o->nsteps = 2;
		return 0;
	}
	o->nsteps = schedule_steps(o->retry, o->steps, &o->repeat_from);
	if (o->nsteps == 1) {
		int ms = o->steps[0].ms;

		o->steps[0] = (struct stop_step){ sig, 0 };
		o->steps[1] = (struct stop_step){ 0, ms };
		o->steps[2] = (struct stop_step){ SIGKILL, 0 };
		o->steps[3] = (struct stop_step){ 0, ms };
		o->nsteps = 4;
		return 0;
	}
	if (o->signal_set) {
		warn_msg("--signal and a --retry schedule of signals exclude "
			 "each other: the schedule names its signals");
		return -1;
	}
	return 0;
}

/* 0: run with *o; 1: done (--help, --version); -code: exit with code. */
int parse_options(int argc, char **argv, struct opts *o)
{
	struct option longopts[NOPTIONS + 1];
	char shortopts[2 * NOPTIONS + 2];
	struct parser p = { .nseen = 0 };
	int key, r;

	memset(o, 0, sizeof(*o));
	o->timeout_ms = -1;
	o->kill_after_ms = KILL_AFTER_DEFAULT_MS;
	o->conflict_code = 1;
	getopt_tables(longopts, shortopts);
	while ((key = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		r = take_option(o, &p, key);
		if (r != 0)
			return r;
	}
	decide_mode(argc, argv, o, &p);
	if (o->nonblock) {
		o->timeout_ms = 0;
		o->timeout_set = true;
	}
	r = check_combinations(o, &p);
	if (r < 0)
		return r;
	if (o->mode == MODE_FD && o->fd_command)
		return parse_fd_command(argc, argv, o);
	if (o->mode == MODE_FD)
		return parse_fd_form(argc, argv, o);
	if (o->mode == MODE_UNLOCK)
		return parse_fd_operand(argc, argv, o);
	if (o->mode == MODE_STOP && make_steps(o) < 0)
		return try_help();
	if (o->mode != MODE_RUN)
		return parse_operands(argc, argv, o);
	r = parse_command(argc, argv, o);
	if (r < 0)
		return r;
	if (!o->lockfile[0])
		return usage_error("%s", "empty lock file name");
	/* with-lock-ex -q: a cron job that finds the lock busy does not wait. */
	if (o->quiet && !o->timeout_set)
		o->timeout_ms = 0;
	return 0;
}
