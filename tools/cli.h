/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pidlock(1): shared declarations of the command-line tool. */
#ifndef PIDLOCK_CLI_H
#define PIDLOCK_CLI_H

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

/* options.c */
int parse_options(int argc, char **argv, struct opts *o);

/* util.c */
extern char program_name[];
void warn_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void warn_path(const char *path, int err);
void warn_file(const char *path, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int open_std_fds(void);
int exit_for_errno(int err);
int fail_path(const char *path, int err);
unsigned int stale_or_default(const struct opts *o);
int make_lock(const struct opts *o, const char *path, struct pidlock **lockp);
int finish_stdout(void);

/* describe.c */
void format_local_time(int64_t t, char *buf, size_t size);
void format_age(int64_t seconds, char *buf, size_t size);
void format_kinds(unsigned int kinds, char *buf, size_t size);
void print_clean(FILE *f, const char *s);
pid_t kernel_holder(const char *path, const struct pidlock_info *info);
void describe_holder(const char *path, const struct pidlock_info *info,
		     char *buf, size_t size);

/* json.c */
void json_string(FILE *f, const char *s);
void json_info(FILE *f, const char *path, const struct pidlock_info *info,
	       int error);

/* status.c */
int status_exit(const struct pidlock_info *info);
int cmd_status(const struct opts *o);

/* list.c */
int cmd_list(const struct opts *o);

/* remove.c */
int cmd_remove(const struct opts *o);

/* acquire.c */
int acquire_lock(const struct opts *o, struct pidlock *lock, int timeout_ms,
		 const char *refused);

/* run.c */
int exec_failed(const char *cmd, int err);
int cmd_run(const struct opts *o);

/* child.c */
int run_child(const struct opts *o, struct pidlock *lock);

#endif
