/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pidlock(1): what the files of the tool share.  One file a mode, and
 * the calls go one way only: main -> options, run, status, list, remove;
 * run, list -> status; everything -> util; util -> nothing.
 */
#ifndef PIDLOCK_CLI_H
#define PIDLOCK_CLI_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <pidlock.h>

enum mode { MODE_RUN = 0, MODE_STATUS, MODE_LIST, MODE_REMOVE };

/* --status exit codes; errors use <sysexits.h> codes (64 and up). */
enum {
	STATUS_FREE = 0,
	STATUS_HELD = 1,
	STATUS_LEFT = 2,	/* abandoned or stale */
};

struct opts {
	enum mode mode;
	unsigned int flags;	/* PIDLOCK_* for pidlock_new() */
	const char *tag;
	unsigned int stale_sec;	/* 0: the library's default */
	int timeout_ms;		/* <0 wait forever, 0 try once */
	bool timeout_set;
	int conflict_code;
	bool quiet;
	bool close_fd;
	bool exec;
	bool verbose;
	bool json;
	unsigned int mode_bits;	/* --mode */
	bool mode_set;
	char **files;		/* operands of --status, --list, --remove */
	int nfiles;
	const char *lockfile;	/* run mode */
	char **cmd;		/* run mode: NULL-terminated argv */
};

#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

/* options.c: 0 run with *o; 1 done (--help, --version); -code: exit. */
int parse_options(int argc, char **argv, struct opts *o);

/* run.c */
int cmd_run(const struct opts *o);
int acquire_lock(const struct opts *o, struct pidlock *lock, int timeout_ms,
		 const char *refused);

/* status.c */
int cmd_status(const struct opts *o);
void format_age(int64_t seconds, char *buf, size_t size);
void format_kinds(unsigned int kinds, char *buf, size_t size);
void describe_holder(const char *path, const struct pidlock_info *info,
		     char *buf, size_t size);
void json_info(const char *path, const struct pidlock_info *info, int error);

/* list.c */
int cmd_list(const struct opts *o);

/* remove.c */
int cmd_remove(const struct opts *o);

/* util.c */
extern char program_name[];
void out(FILE *f, const char *fmt, ...) PRINTF_LIKE(2, 3);
void text_set(char *buf, size_t size, const char *fmt, ...) PRINTF_LIKE(3, 4);
void text_add(char *buf, size_t size, const char *fmt, ...) PRINTF_LIKE(3, 4);
void print_clean(FILE *f, const char *s);
void warn_msgv(const char *fmt, va_list ap) PRINTF_LIKE(1, 0);
void warn_msg(const char *fmt, ...) PRINTF_LIKE(1, 2);
void warn_file(const char *path, const char *fmt, ...) PRINTF_LIKE(2, 3);
void warn_path(const char *path, int err);
int exit_for_errno(int err);
int fail_path(const char *path, int err);
int check_parent(const char *path);
int open_std_fds(void);
unsigned int stale_or_default(const struct opts *o);
int make_lock(const struct opts *o, const char *path, struct pidlock **lockp);
int finish_stdout(void);

#endif
