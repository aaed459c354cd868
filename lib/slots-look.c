/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Semaphores: a look at each slot before any try, and the one wait of a
 * waiter for any slot.
 *
 * The look reads a slot's file without writing or locking it: it
 * refuses what no slot may be (a symlink, a directory, another file
 * type, somebody's data), so that a bad slot is reported before any
 * slot is taken, and it skips a slot whose fcntl lock is held without
 * trying it.  A try of a held slot would open the file for writing (a
 * close event for every other waiter) and make a temp file for nothing.
 *
 * The wait is one inotify instance: the directory (slot files removed,
 * created, renamed) and each slot file that exists (the close of a
 * descriptor opened for writing: a holder's release or death), bounded
 * by the retry interval for file systems without events.  The look's
 * own opens are read-only, so they wake nobody.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "slots.h"

#define LOOK_OPEN (O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
/* A holder's descriptor is open for writing: its close ends the hold,
 * by release or by death.  Read-only closes (the looks of other
 * waiters) are not watched. */
#define SLOT_FILE_EVENTS (IN_CLOSE_WRITE | IN_DELETE_SELF | IN_DONT_FOLLOW)

/* Is an fcntl lock (OFD or POSIX, any process) held on the file? */
static bool fcntl_locked(int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
		return false;	/* not known: the try will tell */
	return fl.l_type != F_UNLCK;
}

/*
 * The content of an open slot file must be a lock file's.  We hold no
 * lock: a holder may be writing its record as we read, and we may see
 * half of it (io_read_settled()).  A slot locked by fcntl(2) is left
 * to its try, which judges under its locks; one that is not (free, or
 * held by flock(2) alone, which has no query) is read again a while.
 */
static int check_content(int fd, struct stat *st, bool locked)
{
	char buf[CONTENT_READ_MAX + 1];
	ssize_t n = io_read_bounded(fd, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	if (locked ||
	    content_is_lock_file(buf, (size_t)n, (int64_t)st->st_size))
		return 0;
	n = io_read_settled(fd, buf, sizeof(buf), st);
	if (n < 0)
		return (int)n;
	return content_is_lock_file(buf, (size_t)n, (int64_t)st->st_size) ?
	       0 : -EBADMSG;
}

/*
 * 0 and *look, or the error a try of this slot would give for what is
 * at its path (-ELOOP, -EISDIR, -EINVAL, -EBADMSG, or a failure of the
 * system).  Nothing is written, locked or removed.
 */
int slots_look(const char *path, struct slot_look *look)
{
	struct stat st, fst;
	int fd, r;

	look->state = SLOT_ABSENT;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	r = handle_check_type(st.st_mode);
	if (r < 0)
		return r;
	look->state = SLOT_UNLOCKED;
	look->dev = st.st_dev;
	look->ino = st.st_ino;
	look->mtime_ns = io_mtime_ns(&st);
	fd = lease_open(path, LOOK_OPEN);
	if (fd < 0) {
		if (errno == ENOENT)
			look->state = SLOT_ABSENT;
		/* Not readable by us (mode 0200): the try decides. */
		return errno == ENOENT || errno == EACCES ? 0 : -errno;
	}
	if (fstat(fd, &fst) < 0) {
		r = -errno;
	} else if (fst.st_dev != st.st_dev || fst.st_ino != st.st_ino) {
		r = 0;		/* replaced meanwhile: the try decides */
	} else {
		bool locked = fcntl_locked(fd);

		r = check_content(fd, &fst, locked);
		if (r == 0 && locked)
			look->state = SLOT_LOCKED;
	}
	io_close_keep_errno(fd);
	return r;
}

/* Does a name in the directory name one of the slots? */
int slots_name_is_slot(const struct pidlock_slots *s, const char *name)
{
	const char *p = name + s->prefix_len;
	char *end;
	unsigned long k;

	if (strncmp(name, s->prefix, s->prefix_len) != 0 || *p < '0' ||
	    *p > '9' || (*p == '0' && p[1]))
		return 0;
	errno = 0;
	k = strtoul(p, &end, 10);
	return !errno && !*end && k < s->n;
}

void slots_watch_init(struct slots_watch *w, const char *dir)
{
	w->dir_wd = -1;
	w->ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (w->ifd < 0)
		return;
	w->dir_wd = inotify_add_watch(w->ifd, dir, WATCH_NAMES | IN_ONLYDIR);
}

/*
 * Watch every slot file there is now.  A file watched already keeps its
 * watch (the kernel returns the same one); a file removed takes its
 * watch with it.  A refusal (no such file, a full watch quota) leaves
 * that slot to the directory watch and the retry interval.
 */
void slots_watch_files(struct slots_watch *w, const struct pidlock_slots *s)
{
	if (w->ifd < 0)
		return;
	for (unsigned int k = 0; k < s->n; k++)
		(void)inotify_add_watch(w->ifd, pidlock_path(s->locks[k]),
					SLOT_FILE_EVENTS);
}

struct slot_hit_arg {
	const struct slots_watch *w;
	const struct pidlock_slots *s;
};

/* An event frees or changes a slot: any on a slot file, or one on a
 * slot's name in the directory. */
static bool slot_hit(const struct inotify_event *ev, const void *arg)
{
	const struct slot_hit_arg *a = arg;

	return ev->wd != a->w->dir_wd || ev->mask & IN_Q_OVERFLOW ||
	       (ev->len && slots_name_is_slot(a->s, ev->name));
}

/*
 * Sleep up to ms for an event on a slot.  1 on an event, 0 when the
 * time is up, -EINTR if a signal handler ran.  Events on other names of
 * the directory (temp files, other locks) are read and slept through.
 */
int slots_watch_wait(struct slots_watch *w, const struct pidlock_slots *s,
		     int64_t ms)
{
	const struct slot_hit_arg a = { w, s };

	return wait_poll_events(w->ifd, ms, slot_hit, &a);
}

void slots_watch_close(struct slots_watch *w)
{
	if (w->ifd >= 0)
		io_close_keep_errno(w->ifd);
	w->ifd = -1;
	w->dir_wd = -1;
}
