/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A caller's description that cannot read (a shell's `9>`) or that
 * appends (`9>>`) keeps the kernel locks of pidlock_lock_fd() (adopt.c);
 * its record is read, and for an appending one written, through a second
 * open of the same inode (lock->io; io_read_fd(), io_write_fd()).  Apart
 * from adopt.c so that existing.c, which closes the second open around
 * its lease test, needs nothing of adopt.c's.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/*
 * The second open of a description that cannot read or appends: through
 * /proc/self/fd/N, which names the description's own inode whatever has
 * become of the path since (O_NOFOLLOW would refuse the link itself; it
 * is the kernel's, not one anybody planted), and fstat(2) confirms it.
 * Read-only where only reading is missing; read-write for an appending
 * one, whose record is written through it.  The kernel locks, the lease
 * test and the inode checks stay on fd.
 */
static int split_open(struct pidlock *lock, int fd, int fl)
{
	char link[64];
	struct stat mine, other;
	int io;

	(void)snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	io = lease_open(link, ((fl & O_APPEND) ? O_RDWR : O_RDONLY) |
			      O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (io < 0)
		return io;
	if (fstat(fd, &mine) < 0 || fstat(io, &other) < 0) {
		io_close_keep_errno(io);
		return -errno;
	}
	if (mine.st_dev != other.st_dev || mine.st_ino != other.st_ino) {
		(void)close(io);	/* nothing written through it yet */
		return -ESTALE;
	}
	lock->io.rfd = io;
	lock->io.wfd = (fl & O_APPEND) ? io : fd;
	return 0;
}

int split_begin(struct pidlock *lock, int fd)
{
	int fl = fcntl(fd, F_GETFL), r;

	if (fl < 0)
		return -errno;
	if ((fl & O_ACCMODE) == O_RDWR && !(fl & O_APPEND))
		return 0;
	r = split_open(lock, fd, fl);
	if (r == 0)
		lock->io.on = true;
	return r;
}

/* Nothing written through the second open can be lost by its close:
 * close(2) does not undo a write, and a record write with PIDLOCK_SYNC
 * syncs before it returns. */
static void split_close(struct pidlock *lock)
{
	(void)close(lock->io.rfd);
	lock->io.rfd = -1;
	lock->io.wfd = -1;
}

void split_end(struct pidlock *lock)
{
	if (!lock->io.on)
		return;
	split_close(lock);
	lock->io.on = false;
}

/*
 * Rule C's lease test asks whether anybody else has the file open, and
 * our second open counts as somebody: closed for the test, open again
 * after it (existing.c: nobody_writing()).  Otherwise every lock taken
 * on a file that `9>` has just emptied would wait out the grace.
 */
void split_suspend(struct pidlock *lock)
{
	if (lock->io.on)
		split_close(lock);
}

int split_resume(struct pidlock *lock, int fd)
{
	int fl;

	if (!lock->io.on)
		return 0;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;
	return split_open(lock, fd, fl);
}
