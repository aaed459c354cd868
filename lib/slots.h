/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Semaphores of N slots (slots.c, slots-look.c): what the two share. */
#ifndef PIDLOCK_SLOTS_H
#define PIDLOCK_SLOTS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal.h"

/* What a look at one slot's path found, before any try. */
enum slot_state {
	SLOT_ABSENT,	/* no file: a try publishes one */
	SLOT_LOCKED,	/* an fcntl (OFD or POSIX) lock is held on it */
	SLOT_UNLOCKED,	/* a lock file with no fcntl lock, or not known */
};

struct slot_look {
	enum slot_state state;
	dev_t dev;
	ino_t ino;
	int64_t mtime_ns;
};

/* A slot whose file had no fcntl lock but whose try said busy (a
 * flock(1) or spec-only holder): not tried again, which would open it
 * for writing and wake every other waiter, until the retry interval is
 * over or the file changed. */
struct slot_busy {
	dev_t dev;
	ino_t ino;
	int64_t mtime_ns;
	int64_t until_ms;
};

struct pidlock_slots {
	unsigned int n;
	struct pidlock **locks;		/* slot k: the lock on "PATH.k" */
	struct slot_look *looks;
	struct slot_busy *busy;
	char *dir;			/* of the slot files */
	char *prefix;			/* "base." of every slot file's name */
	size_t prefix_len;
};

/* The waiter's inotify: the directory and the slot files that exist. */
struct slots_watch {
	int ifd;			/* -1: none, the wait is a sleep */
	int dir_wd;
};

/* slots-look.c */
int slots_look(const char *path, struct slot_look *look);
int slots_name_is_slot(const struct pidlock_slots *s, const char *name);
void slots_watch_init(struct slots_watch *w, const char *dir);
void slots_watch_files(struct slots_watch *w, const struct pidlock_slots *s);
int slots_watch_wait(struct slots_watch *w, const struct pidlock_slots *s,
		     int64_t ms);
void slots_watch_close(struct slots_watch *w);

#endif
