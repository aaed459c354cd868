/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Command-line parsing: everything here ends in a struct opts or exit 64. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"

/* The shell for -c: the POSIX one, whatever $SHELL the user logs in with,
 * so a command line in a crontab means the same everywhere. */
#define SHELL_PATH "/bin/sh"

enum {
	OPT_TAG = 256,
	OPT_PLAIN_PID,
	OPT_NO_SYNC,
	OPT_KEEP_FILE,
	OPT_FLOCK_ONLY,
	OPT_FCNTL_ONLY,
	OPT_STALE,
	OPT_EXEC,
	OPT_STATUS,
	OPT_JSON,
	OPT_LIST,
	OPT_REMOVE,
	OPT_MODE,
};

static const struct option long_options[] = {
	{ "nonblock", no_argument, NULL, 'n' },
	{ "timeout", required_argument, NULL, 'w' },
	{ "conflict-exit-code", required_argument, NULL, 'E' },
	{ "quiet-conflict", no_argument, NULL, 'q' },
	{ "close", no_argument, NULL, 'o' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ "tag", required_argument, NULL, OPT_TAG },
	{ "plain-pid", no_argument, NULL, OPT_PLAIN_PID },
	{ "no-sync", no_argument, NULL, OPT_NO_SYNC },
	{ "keep-file", no_argument, NULL, OPT_KEEP_FILE },
	{ "flock-only", no_argument, NULL, OPT_FLOCK_ONLY },
	{ "fcntl-only", no_argument, NULL, OPT_FCNTL_ONLY },
	{ "stale", required_argument, NULL, OPT_STALE },
	{ "exec", no_argument, NULL, OPT_EXEC },
	{ "status", no_argument, NULL, OPT_STATUS },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "list", no_argument, NULL, OPT_LIST },
	{ "remove", no_argument, NULL, OPT_REMOVE },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ NULL, 0, NULL, 0 },
};

/* Which modes take an option; checked after parsing, so the message can
 * name both the option and the mode. */
enum { M_RUN = 1 << MODE_RUN, M_STATUS = 1 << MODE_STATUS,
       M_LIST = 1 << MODE_LIST, M_REMOVE = 1 << MODE_REMOVE };

struct seen {
	const char *name;
	unsigned int modes;
};

static void usage(FILE *f)
{
	static const char *const synopsis[] = {
		"[options] LOCKFILE COMMAND [ARG...]",
		"[options] LOCKFILE -c 'SHELL COMMAND'",
		"--status [--json] LOCKFILE...",
		"--list [--json] DIRECTORY",
		"--remove LOCKFILE...",
	};

	fputs("Usage:\n", f);
	for (size_t i = 0; i < sizeof(synopsis) / sizeof(synopsis[0]); i++)
		fprintf(f, " %s %s\n", program_name, synopsis[i]);
	fprintf(f,
"\n"
"Run a command while holding a lock file, or inspect and clean up lock files.\n"
"\n"
"Options for running a command:\n"
" -n, --nonblock               fail at once if the lock is busy\n"
" -w, --timeout SECONDS        wait at most SECONDS (fractions allowed)\n"
" -E, --conflict-exit-code N   exit with N when the lock is busy (default 1)\n"
" -q, --quiet-conflict         exit 0 without a word when the lock is busy\n"
"     --tag TEXT               write TEXT into the lock file\n"
"     --plain-pid              write the bare pid as the first line\n"
"     --no-sync                do not sync the lock file to disk\n"
"     --keep-file              leave the lock file in place on release\n"
"     --mode OCTAL             mode of a new lock file (default 0644; 0600\n"
"                              keeps other users from blocking it)\n"
"     --flock-only             take only the flock(2) lock\n"
"     --fcntl-only             take only the fcntl(2) lock\n"
"     --stale SECONDS          stale timeout for spec-only holders (default %u)\n"
" -o, --close                  do not pass the lock descriptor to the command\n"
"     --exec                   run the command in place of pidlock, no fork\n"
" -v, --verbose                tell when waiting, for whom, and when locked\n"
"\n"
"Inspecting and cleaning up:\n"
"     --status                 show the state of each LOCKFILE, never lock it\n"
"     --list                   show the lock files in DIRECTORY\n"
"     --json                   with --status or --list: print JSON\n"
"     --remove                 delete each LOCKFILE if nobody holds it\n"
"\n"
" -h, --help                   show this help and exit\n"
" -V, --version                show the version and exit\n"
"\n"
"Exit status: the command's, or 128+N if signal N killed it; 1 (or -E N) if\n"
"the lock is busy; --status: 0 free, 1 held, 2 abandoned or stale;\n"
"64 usage, 65 not a lock file (nothing changed), 66 unusable lock file,\n"
"69 command cannot run, 71 system error, 77 permission denied.\n"
"See pidlock(1).\n",
		PIDLOCK_DEFAULT_STALE_SEC);
}

static int __attribute__((format(printf, 1, 2)))
usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", program_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help' for more information.\n",
		program_name);
	return -EX_USAGE;
}

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

static void set_mode(struct opts *o, enum mode m, int *modes_given)
{
	o->mode = m;
	(*modes_given)++;
}

/* Each option once: repeating one must not overflow the table. */
static void note(struct seen *s, int *n, const char *name, unsigned int modes)
{
	for (int i = 0; i < *n; i++)
		if (s[i].name == name)
			return;
	s[*n].name = name;
	s[*n].modes = modes;
	(*n)++;
}

static int parse_one(int c, struct opts *o, struct seen *seen, int *nseen,
		     int *modes_given)
{
	unsigned long v;

	switch (c) {
	case 'n':
		o->timeout_ms = 0;
		o->timeout_set = true;
		note(seen, nseen, "--nonblock", M_RUN | M_REMOVE);
		return 0;
	case 'w':
		if (parse_seconds(optarg, &o->timeout_ms) < 0)
			return usage_error("invalid timeout '%s' (seconds from 0 to "
					   "%d.%03d, fractions allowed)", optarg,
					   INT_MAX / 1000, INT_MAX % 1000);
		o->timeout_set = true;
		note(seen, nseen, "--timeout", M_RUN | M_REMOVE);
		return 0;
	case 'E':
		if (parse_uint(optarg, 255, &v) < 0)
			return usage_error("invalid conflict exit code '%s' (0..255)", optarg);
		o->conflict_code = (int)v;
		note(seen, nseen, "--conflict-exit-code", M_RUN | M_REMOVE);
		return 0;
	case 'q':
		o->quiet = true;
		note(seen, nseen, "--quiet-conflict", M_RUN | M_REMOVE);
		return 0;
	case 'o':
		o->close_fd = true;
		note(seen, nseen, "--close", M_RUN);
		return 0;
	case 'v':
		o->verbose = true;
		return 0;
	case 'h':
		usage(stdout);
		return 1;
	case 'V':
		printf("%s (%s) %s\n", program_name, PACKAGE_NAME, PACKAGE_VERSION);
		return 1;
	case OPT_TAG:
		if (strlen(optarg) > PIDLOCK_TAG_MAX)
			return usage_error("tag too long: %zu bytes, at most %d",
					   strlen(optarg), PIDLOCK_TAG_MAX);
		o->tag = optarg;
		note(seen, nseen, "--tag", M_RUN);
		return 0;
	case OPT_PLAIN_PID:
		o->flags |= PIDLOCK_PLAIN_PID;
		note(seen, nseen, "--plain-pid", M_RUN);
		return 0;
	case OPT_NO_SYNC:
		o->flags |= PIDLOCK_NO_SYNC;
		note(seen, nseen, "--no-sync", M_RUN);
		return 0;
	case OPT_KEEP_FILE:
		o->flags |= PIDLOCK_KEEP_FILE;
		note(seen, nseen, "--keep-file", M_RUN);
		return 0;
	case OPT_FLOCK_ONLY:
		o->flags |= PIDLOCK_FLOCK_ONLY;
		note(seen, nseen, "--flock-only", M_RUN);
		return 0;
	case OPT_FCNTL_ONLY:
		o->flags |= PIDLOCK_OFD_ONLY;
		note(seen, nseen, "--fcntl-only", M_RUN);
		return 0;
	case OPT_STALE:
		if (parse_uint(optarg, UINT_MAX, &v) < 0 || v == 0)
			return usage_error("invalid stale timeout '%s' (whole seconds "
					   "from 1 to %u)", optarg, UINT_MAX);
		o->stale_sec = (unsigned int)v;
		return 0;
	case OPT_MODE:
		if (parse_mode(optarg, &o->mode_bits) < 0)
			return usage_error("invalid mode '%s' (octal, read and write "
					   "bits only: 0 to 0666, such as 0600)",
					   optarg);
		o->mode_set = true;
		note(seen, nseen, "--mode", M_RUN);
		return 0;
	case OPT_EXEC:
		o->exec = true;
		note(seen, nseen, "--exec", M_RUN);
		return 0;
	case OPT_STATUS:
		set_mode(o, MODE_STATUS, modes_given);
		return 0;
	case OPT_LIST:
		set_mode(o, MODE_LIST, modes_given);
		return 0;
	case OPT_REMOVE:
		set_mode(o, MODE_REMOVE, modes_given);
		return 0;
	case OPT_JSON:
		o->json = true;
		note(seen, nseen, "--json", M_STATUS | M_LIST);
		return 0;
	case 'c':
		return usage_error("%s goes after LOCKFILE: pidlock LOCKFILE -c 'COMMAND'",
				   "-c");
	default:
		/* getopt_long has printed what was wrong. */
		fprintf(stderr, "Try '%s --help' for more information.\n",
			program_name);
		return -EX_USAGE;
	}
}

static const char *mode_name(enum mode m)
{
	static const char *const names[] = {
		[MODE_RUN] = "running a command", [MODE_STATUS] = "--status",
		[MODE_LIST] = "--list", [MODE_REMOVE] = "--remove",
	};

	return names[m];
}

static int check_combinations(const struct opts *o, const struct seen *seen,
			      int nseen)
{
	char msg[128];

	for (int i = 0; i < nseen; i++) {
		if (seen[i].modes & (1U << o->mode))
			continue;
		snprintf(msg, sizeof(msg), "%s cannot be used with %s",
			 seen[i].name, mode_name(o->mode));
		return usage_error("%s", msg);
	}
	if ((o->flags & PIDLOCK_FLOCK_ONLY) && (o->flags & PIDLOCK_OFD_ONLY))
		return usage_error("%s", "--flock-only and --fcntl-only exclude each other");
	if (o->exec && o->close_fd)
		return usage_error("%s", "--exec and --close exclude each other: the lock would end at exec");
	return 0;
}

/* LOCKFILE COMMAND [ARG...], LOCKFILE -c 'COMMAND', or LOCKFILE -- COMMAND */
static int parse_command(int argc, char **argv, struct opts *o)
{
	static char *shell_argv[4];
	char **rest;
	int n;

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
		shell_argv[0] = (char *)SHELL_PATH;
		shell_argv[1] = (char *)"-c";
		shell_argv[2] = rest[1];
		shell_argv[3] = NULL;
		o->cmd = shell_argv;
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
	for (int i = 0; i < o->nfiles; i++)
		if (!o->files[i][0])
			return usage_error("%s", "empty file name");
	return 0;
}

/* 0: run with *o; 1: done (--help, --version); -code: exit with code. */
int parse_options(int argc, char **argv, struct opts *o)
{
	struct seen seen[sizeof(long_options) / sizeof(long_options[0])];
	int nseen = 0, modes_given = 0;
	int c, r;

	memset(o, 0, sizeof(*o));
	o->timeout_ms = -1;
	o->conflict_code = 1;
	/* '+': stop at LOCKFILE, so the command's own options stay its own. */
	while ((c = getopt_long(argc, argv, "+nw:E:qovhVc", long_options,
				NULL)) != -1) {
		r = parse_one(c, o, seen, &nseen, &modes_given);
		if (r != 0)
			return r;
	}
	if (modes_given > 1)
		return usage_error("%s", "--status, --list and --remove exclude each other");
	r = check_combinations(o, seen, nseen);
	if (r < 0)
		return r;
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
