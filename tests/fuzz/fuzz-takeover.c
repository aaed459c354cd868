/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: pidlock_inspect() and pidlock_acquire() on a file
 * whose content (and mtime) the fuzzer chooses.
 *
 * Input: one control byte, then the file's content.  The control byte
 * picks the file's mtime (some only a tmpfs can store, which is why the
 * scratch directory goes to /dev/shm when it can) and the lock flags.
 *
 * Checked on every input: inspect succeeds and agrees with the rules
 * applied to the parsed content; acquire takes exactly what is free to
 * take (abandoned or stale; not a pidfile whose live writer may hold
 * it, such as "pid=1" written after boot) and then the file holds our record and
 * nothing of the old one; a busy acquire leaves the file byte for byte
 * as it was; no descriptor is left open; release removes only our file.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(cond) do { if (!(cond)) fail(#cond, __LINE__); } while (0)
#define STALE_SEC 3600
#define TMPFS_MAGIC 0x01021994

static char dir[PATH_MAX];
static char path[PATH_MAX];

static void fail(const char *what, int line)
{
	(void)fprintf(stderr, "fuzz-takeover: check failed at line %d: %s\n", line,
		what);
	abort();
}

static void cleanup(void)
{
	(void)unlink(path);
	(void)rmdir(dir);
}

static bool on_tmpfs(const char *p)
{
	struct statfs sf;

	return statfs(p, &sf) == 0 && sf.f_type == TMPFS_MAGIC;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");
	int n;

	(void)argc;
	(void)argv;
	if (on_tmpfs("/dev/shm") && access("/dev/shm", W_OK) == 0)
		tmp = "/dev/shm";
	else if (!tmp || !tmp[0])
		tmp = "/tmp";
	n = snprintf(dir, sizeof(dir), "%s/pidlock-fuzz.XXXXXX", tmp);
	REQUIRE(n > 0 && (size_t)n < sizeof(dir));
	REQUIRE(mkdtemp(dir) != NULL);
	n = snprintf(path, sizeof(path), "%s/lock", dir);
	REQUIRE(n > 0 && (size_t)n < sizeof(path));
	REQUIRE(atexit(cleanup) == 0);
	return 0;
}

static int fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	REQUIRE(d != NULL);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1;
}

static int64_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec;
}

/* The control byte's low bits: the file's mtime. */
static int64_t pick_mtime(unsigned int sel, int64_t t)
{
	static const int64_t fixed[] = { INT64_MAX, INT64_MIN, 0, -1,
					 INT64_MAX / 1000 + 1,
					 INT64_MIN / 1000 - 1 };

	switch (sel) {
	case 0: case 1: case 2: case 3:
		return t - 60;	/* mostly: grace long over */
	case 4:
		return t;	/* just written */
	case 5:
		return t + 86400;
	case 6:
		return t - 7200;
	}
	return fixed[(sel - 7) % (sizeof(fixed) / sizeof(fixed[0]))];
}

/* ... and its high bits: the flags. */
static unsigned int pick_flags(unsigned int sel)
{
	static const unsigned int kinds[] = { 0, PIDLOCK_FLOCK_ONLY,
					      PIDLOCK_OFD_ONLY, 0 };
	unsigned int f = kinds[sel & 3] | PIDLOCK_NO_SYNC;

	if (sel & 4)
		f |= PIDLOCK_PLAIN_PID;
	if (sel & 8)
		f |= PIDLOCK_KEEP_FILE;
	return f;
}

static void write_file(const uint8_t *data, size_t size, int64_t mtime)
{
	struct timespec ts[2] = { { .tv_sec = (time_t)mtime },
				  { .tv_sec = (time_t)mtime } };
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	size_t done = 0;

	REQUIRE(fd >= 0);
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);

		REQUIRE(n > 0);
		done += (size_t)n;
	}
	REQUIRE(close(fd) == 0);
	/* ext4 clamps what it cannot store; that is fine too. */
	REQUIRE(utimensat(AT_FDCWD, path, ts, 0) == 0);
}

static char *read_file(size_t *len)
{
	static char buf[1 << 20];	/* more than any input */
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	REQUIRE(fd >= 0);
	n = read(fd, buf, sizeof(buf));
	REQUIRE(n >= 0);
	close(fd);
	*len = (size_t)n;
	return buf;
}

static int alive(pid_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int64_t t = now(), mtime;
	unsigned int flags, kinds;
	struct pidlock_info info;
	struct pidlock *lock;
	struct content c;
	struct stat st;
	bool old_enough, stale, take, is_lock, keep, pidfile, foreign;
	pid_t writer;
	int fds, was_alive, r;
	size_t len, head;
	char *back;

	if (size < 1)
		return 0;
	mtime = pick_mtime(data[0] & 15, t);
	flags = pick_flags(data[0] >> 4);
	kinds = flags & PIDLOCK_FLOCK_ONLY ? PIDLOCK_KIND_FLOCK
	      : flags & PIDLOCK_OFD_ONLY ? PIDLOCK_KIND_OFD : KINDS_ALL;
	data++;
	size--;
	write_file(data, size, mtime);
	REQUIRE(lstat(path, &st) == 0);
	fds = fd_count();

	/* What the rules say, from what the library will read. */
	content_parse((const char *)data,
		      size < CONTENT_READ_MAX ? size : CONTENT_READ_MAX, &c);
	is_lock = content_is_lock_file((const char *)data, size, (int64_t)size);
	writer = c.pid ? c.pid : c.bare_pid;
	was_alive = alive(writer);
	stale = content_is_spec(&c) && t - c.timestamp > STALE_SEC &&
		!was_alive;
	/* Rule C's live writer: a pidfile or dotlock naming a process that
	 * started before the file was written.  Our own pid is the one
	 * about to hold, so acquire takes it; inspect reports it held. */
	pidfile = !c.marker && !content_is_spec(&c) && writer > 0 &&
		  writer_may_hold(writer, &st);
	foreign = pidfile && writer != getpid();
	take = c.marker || (!content_is_spec(&c) && !foreign) || stale;
	keep = (flags & PIDLOCK_KEEP_FILE) || (c.marker ? c.keep : c.empty);

	REQUIRE(pidlock_inspect(path, &info, STALE_SEC) == 0);
	REQUIRE(info.kernel_locks == 0);
	REQUIRE(info.pid == (c.released ? 0 : c.pid ? c.pid : c.bare_pid));
	REQUIRE(info.marker == c.marker);
	REQUIRE(strcmp(info.tag, c.tag) == 0);
	/* Past mtimes only: a recent or future one keeps incomplete
	 * content "being written" for inspect's grace period. */
	old_enough = mtime < t - 1 && mtime >= t - 7200;
	if (!is_lock) {
		/* A user's data: reported, refused, and left byte for byte. */
		REQUIRE(info.state == PIDLOCK_STATE_NOT_LOCK_FILE);
		REQUIRE(pidlock_new(&lock, path, flags) == 0);
		REQUIRE(pidlock_acquire(lock, 0) == -EBADMSG);
		back = read_file(&len);
		REQUIRE(len == size && memcmp(back, data, size) == 0);
		pidlock_free(lock);
		REQUIRE(fd_count() == fds);
		return 0;
	}
	if (old_enough && alive(writer) == was_alive) {
		enum pidlock_state want = c.marker
			? (c.released || c.exit_releases ? PIDLOCK_STATE_FREE
							 : PIDLOCK_STATE_ABANDONED)
			: pidfile ? PIDLOCK_STATE_HELD_PIDFILE
			: !content_is_spec(&c)
			? (c.empty ? PIDLOCK_STATE_FREE : PIDLOCK_STATE_ABANDONED)
			: stale ? PIDLOCK_STATE_STALE : PIDLOCK_STATE_HELD_SPEC;

		REQUIRE(info.state == want);
	}

	/* Without a grace period, acquire decides at once. */
	REQUIRE(pidlock_new(&lock, path, flags) == 0);
	REQUIRE(pidlock_set_grace(lock, 0) == 0);
	REQUIRE(pidlock_set_stale_timeout(lock, STALE_SEC) == 0);
	r = pidlock_acquire(lock, 0);
	if (alive(writer) != was_alive) {
		/* The pid came or went meanwhile: no verdict to check. */
		pidlock_free(lock);
		REQUIRE(fd_count() == fds);
		return 0;
	}
	if (!take) {
		REQUIRE(r == -EWOULDBLOCK);
		REQUIRE(pidlock_holder(lock, &info) == 0);
		REQUIRE(info.state == (foreign ? PIDLOCK_STATE_HELD_PIDFILE
						: PIDLOCK_STATE_HELD_SPEC));
		back = read_file(&len);
		REQUIRE(len == size && memcmp(back, data, size) == 0);
		pidlock_free(lock);
		REQUIRE(fd_count() == fds);
		return 0;
	}
	REQUIRE(r == 0);
	back = read_file(&len);
	/* Our record, padded to the old length; never cut, but for the
	 * holder's bytes after a record of ours, which go with the hold
	 * (doc/protocol.md, 3a): then our record over the old one's. */
	head = content_head_tail((const char *)data, size);
	if (head)
		REQUIRE(len >= head && len <= (head > SHARED_RECORD_LEN
						       ? head
						       : SHARED_RECORD_LEN));
	else
		REQUIRE(len == size || (len > size && len < CONTENT_BUF_MAX));
	content_parse(back, len, &c);
	REQUIRE(c.pid == getpid());
	REQUIRE(c.marker == kinds);
	for (size_t i = 0; i < len; i++)
		REQUIRE(back[i] != '\0' && (unsigned char)back[i] < 0x80);
	REQUIRE(pidlock_release(lock) == 0);
	REQUIRE((access(path, F_OK) == 0) == keep);
	pidlock_free(lock);
	REQUIRE(fd_count() == fds);
	return 0;
}
