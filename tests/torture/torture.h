/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The mixed-peer torture: many processes of different lockers take one
 * lock path in turn while a killer SIGKILLs them.  Each critical
 * section is journalled; the checker then proves that no two were ever
 * inside at once and that the shared counter is exact.
 */
#ifndef TORTURE_H
#define TORTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define MAX_SLOTS 64
#define LOCK_NAME "lock"
#define JOURNAL_NAME "journal"
#define COUNTER_NAME "counter"
#define SHM_NAME "shm"
/* Bytes per journal record; divides the page size (see journal.c). */
#define JOURNAL_RECORD 128

/* The lockers.  LIB_* use libpidlock through its C API. */
enum kind {
	K_LIB,		/* default flags */
	K_LIB_NOSYNC,
	K_LIB_PLAIN,	/* PIDLOCK_PLAIN_PID */
	K_LIB_FLOCK,	/* PIDLOCK_FLOCK_ONLY */
	K_LIB_OFD,	/* PIDLOCK_OFD_ONLY */
	K_LIB_KEEP,	/* PIDLOCK_KEEP_FILE */
	K_LIB_SH,	/* PIDLOCK_SHARED: a reader */
	K_LIB_SH_KEEP,	/* PIDLOCK_SHARED | PIDLOCK_KEEP_FILE */
	K_CLI,		/* the pidlock(1) tool */
	K_CLI_KEEP,	/* pidlock --keep-file */
	K_CLI_SH,	/* pidlock -s: a reader */
	K_WLE,		/* with-lock-ex -w */
	K_FSLOCK,	/* fslock-guard style: flock + inode check */
	K_BSD,		/* libbsd pidfile_open/pidfile_remove */
	K_SPEC,		/* spec-only: O_EXCL, write, fsync, unlink */
	K_FLOCK1,	/* flock(1), no inode check, file kept */
	K_FLOCK1_RM,	/* flock(1) running "job; rm -f lock" */
	K_FLOCK1_FD,	/* flock(1) on a shell's "9<lock": never creates it */
	K_RENAME,	/* spec peer publishing with rename(2) */
	K_DOTLOCK,	/* dotlockfile -p: a pid, no kernel lock */
	K_NKINDS
};

/* What a participant is doing, for the killer's choice and report. */
enum phase { PH_NONE, PH_ACQUIRE, PH_CS, PH_RELEASE, PH_IDLE, PH_NPHASES };

/* Shared between the supervisor and every participant (a mapped file,
 * so that exec'd critical sections reach it too). */
struct shm {
	volatile int stop;
	volatile int64_t last_enter_ns;
	volatile int phase[MAX_SLOTS];
	/* The killer's claim on an idle dotlock participant: see
	 * condemn_idle() in torture.c and set_phase() in peers.c. */
	volatile int condemned[MAX_SLOTS];
	/* Since when a polling participant (dotlockfile, no kernel lock)
	 * has been trying without getting the lock (0: not trying): see
	 * pause_between() in peers.c. */
	volatile int64_t polling_since_ns[MAX_SLOTS];
	/* 1 while a dotlock participant runs dotlockfile: see
	 * dotlock_turn() in peers.c. */
	volatile int dotlock_running;
};

struct config {
	const char *dir;
	const char *self;	/* this program, for exec'd critical sections */
	const char *cli;	/* pidlock(1), or NULL */
	const char *wle;	/* with-lock-ex */
	const char *flock1;	/* flock(1) */
	const char *dotlock;	/* dotlockfile(1) */
	bool no_plain_pid;	/* pidlock(1) never writes a bare pid */
	unsigned int cs_us;	/* longest sleep inside the critical section */
	unsigned int spec_stale;	/* spec peers' stale timeout, seconds */
	unsigned int lib_stale;	/* libpidlock's, in the spec mix */
	unsigned int grace_ms;	/* 0: library default */
};

/* torture.c */
extern const struct config *cfg;
extern struct shm *shm;
int64_t mono_ns(void);
uint32_t rnd(void);
void rnd_seed(uint64_t seed);
void sleep_us(unsigned int us);
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
const char *kind_name(enum kind k);
bool kind_is_lib(enum kind k);
bool kind_is_exec(enum kind k);
bool kind_is_reader(enum kind k);
int map_shm(const char *dir, bool create);

/* peers.c */
void run_participant(enum kind k, int slot, long id) __attribute__((noreturn));
void exec_participant(enum kind k, int slot, long id) __attribute__((noreturn));
int cs_main(int argc, char **argv);

/* journal.c */
int journal_open(const char *dir);
void journal_line(int fd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int counter_read(int dirfd, long *v);
int counter_write(int dirfd, long v);

struct kill_stat {
	long kills;
	long holder_kills;
	long by_phase[PH_NPHASES];
	long acquisitions;
	long per_kind[K_NKINDS];
	long leaves;
	long reads;		/* readers' enters (R lines) */
	long dead_inside;	/* killed between its E and L lines */
	long violations;
	long counter_errors;
	long stale_reports;	/* libpidlock verify/release said -ESTALE */
	long failures;		/* participants that reported an error */
	long final_counter;
	long expected_counter;
	int64_t *lat_ns;	/* kill of a holder -> next enter */
	long nlat;
	int64_t *lat_all_ns;	/* any kill -> next enter */
	long nlat_all;
};

int journal_check(const char *dir, long ninst, const unsigned char *kind_of,
		  struct kill_stat *ks, int verbose);
void kill_stat_free(struct kill_stat *ks);

#endif
