/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pidlock_lock_fd() and pidlock_unlock_fd(): the lock on a caller's own
 * descriptor (a shell's exec 9<>path), doc/protocol.md section 4c.  Real
 * processes hold and wait; each test names the rule it guards.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pidlock.h"
#include "testutil.h"

#define RELEASED "pid=4194304\n"

static int open_rw(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);

	ck_assert_int_ge(fd, 0);
	return fd;
}

/* Can another open file description of fd's inode take flock(LOCK_EX)
 * at once?  /proc/self/fd reaches the inode even once it is unlinked. */
static bool flock_free(int fd)
{
	char link[64];
	int other, r;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	other = open(link, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(other, 0);
	r = flock(other, LOCK_EX | LOCK_NB);
	close(other);
	return r == 0;
}

/* The pid= value of the record at path, 0 if none. */
static long record_pid(const char *path)
{
	const char *s = strstr(tu_read(path), "pid=");

	return s ? strtol(s + 4, NULL, 10) : 0;
}

/* A child that opens path, locks its descriptor with pidlock_lock_fd()
 * for itself, says 'L', and on 'U' lets go with pidlock_unlock_fd() and
 * says 'U'; it is killed otherwise. */
static void fd_holder(struct tu_child *c, const char *path)
{
	struct pidlock *l = tu_new(path, 0);

	if (tu_fork(c) == 0) {
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);

		TU_CHILD_CHECK(fd >= 0 && pidlock_lock_fd(l, fd, 0, 0) == 0);
		tu_signal(c, 'L');
		TU_CHILD_CHECK(tu_wait_parent(c) == 'U');
		TU_CHILD_CHECK(pidlock_unlock_fd(l, fd) == 0);
		tu_signal(c, 'U');
		(void)tu_wait_parent(c);
		_exit(0);
	}
	pidlock_free(l);
	ck_assert_int_eq(tu_wait_signal(c), 'L');
}

/* An fd_holder() child holds path; then our own descriptor of the file,
 * another open file description that it keeps out. */
static int ours_beside_fd_holder(struct tu_child *c, const char *path)
{
	fd_holder(c, path);
	return open_rw(path);
}

/* The record names the pid given (the shell), and the file is kept. */
TU_LOCK_TEST(lock_fd_names_pid, 0)
{
	pid_t shell = getppid();
	int fd = open_rw(p);
	struct tu_child c;

	tu_set_mtime_ago(p, 60);	/* not a young empty file */
	ck_assert_int_eq(pidlock_lock_fd(l, fd, shell, 0), 0);
	ck_assert_int_eq(record_pid(p), shell);
	ck_assert_ptr_nonnull(strstr(tu_read(p), "\nkeep=1\n"));
	/* The handle lent the path: the caller's descriptor holds. */
	ck_assert_int_eq(pidlock_fd(l), -ENOLCK);
	ck_assert(!flock_free(fd));
	tu_waiter(&c, p, 0);
	tu_tell(&c, 'G');
	tu_msleep(200);
	ck_assert_int_eq(pidlock_unlock_fd(l, fd), 0);
	tu_waiter_took(&c);
	close(fd);
}

/* Even a file this library created, which its holder would unlink on
 * release, is kept once a descriptor locked it; the acquirer that takes
 * it over next keeps it too (keep=1 passed on): the inode the descriptor
 * is open on stays at the path. */
TU_LOCK_TEST(lock_fd_file_kept, 0)
{
	int fd;
	ino_t ino;

	tu_exit_holding(p, 0);		/* our record, no keep=1 */
	ck_assert_ptr_null(strstr(tu_read(p), "keep=1"));
	fd = open_rw(p);
	ino = tu_ino(p);
	ck_assert_int_eq(pidlock_lock_fd(l, fd, 0, 0), 0);
	ck_assert_ptr_nonnull(strstr(tu_read(p), "\nkeep=1\n"));
	ck_assert_int_eq(pidlock_unlock_fd(l, fd), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert(tu_exists(p));
	ck_assert_int_eq(tu_ino(p), ino);
	ck_assert_int_eq(pidlock_lock_fd(l, fd, 0, 0), 0);
	close(fd);
}

/* The handle only lends the path: after a lock on a caller's descriptor
 * (for the shell, with its pid), its own next acquire is a plain one.
 * The record names this process, and a file that is no kept one (a
 * crashed holder's record here) is removed by the release. */
TU_LOCK_TEST(handle_after_lock_fd_is_plain, 0)
{
	int fd = open_rw(p);

	tu_set_mtime_ago(p, 60);
	ck_assert_int_eq(pidlock_lock_fd(l, fd, getppid(), 0), 0);
	ck_assert_int_eq(record_pid(p), getppid());
	ck_assert_int_eq(pidlock_unlock_fd(l, fd), 0);
	close(fd);
	ck_assert_int_eq(unlink(p), 0);
	tu_exit_holding(p, 0);		/* our record, no keep=1 */
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_msg(record_pid(p) == getpid(), "the record names %ld, not "
		      "this process", record_pid(p));
	ck_assert_ptr_null(strstr(tu_read(p), "keep=1"));
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert_msg(!tu_exists(p), "the release kept the file");
}

/* A descriptor waits holding nothing.  Against a POSIX holder its try
 * takes flock(2), then is refused the OFD lock; the flock goes back, or
 * a flock(1) user would be shut out for the whole wait.  Looked at while
 * the waiter sleeps between two tries (in poll(2), no poll bound). */
static int fd_waiter(struct tu_child *c, void *arg)
{
	struct pidlock *l;
	int fd = open(arg, O_RDWR | O_CLOEXEC), r;

	(void)c;
	if (fd < 0 || pidlock_new(&l, arg, 0) < 0 ||
	    pidlock_set_retry_interval(l, 20000) < 0)
		return 2;
	r = pidlock_lock_fd(l, fd, 0, 30000);
	pidlock_free(l);
	return r == 0 ? 0 : 3;
}

TU_LOCK_TEST(lock_fd_waiter_holds_nothing, 0)
{
	struct tu_child h, w;

	(void)l;	/* the waiter makes its own */
	tu_write(p, "");
	tu_set_mtime_ago(p, 60);
	tu_posix_hold(&h, p);
	tu_spawn(&w, fd_waiter, p);
	if (tu_wait_in_poll(w.pid))
		ck_assert_msg(tu_sh("'%s' -n '%s' true", tu_flock_bin(), p) == 0,
			      "a waiting descriptor holds flock(2) on the file");
	else
		fprintf(stderr, "lock_fd_waiter_holds_nothing: /proc/PID/"
			"syscall not readable here, not tested\n");
	tu_tell(&h, 'X');
	ck_assert_int_eq(tu_join(&h), 0);
	ck_assert_int_eq(tu_join(&w), 0);
}

/* Exclusion both ways against pidlock_acquire() in another process. */
TU_LOCK_TEST(lock_fd_excludes_acquire, 0)
{
	struct pidlock_info info;
	struct tu_child c;
	int fd;

	tu_hold(&c, p, 0);
	fd = open_rw(p);
	ck_assert_int_eq(pidlock_lock_fd(l, fd, 0, 0), -EWOULDBLOCK);
	ck_assert_int_eq(pidlock_holder(l, &info), 0);
	ck_assert_int_eq(info.pid, c.pid);
	ck_assert(flock_free(fd) == false);	/* the holder's, not ours */
	tu_tell(&c, 'R');
	ck_assert_int_eq(tu_join(&c), 0);
	close(fd);

	fd_holder(&c, p);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	ck_assert_int_eq(record_pid(p), c.pid);
	tu_tell(&c, 'U');
	ck_assert_int_eq(tu_wait_signal(&c), 'U');
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	tu_tell(&c, 'x');
	ck_assert_int_eq(tu_join(&c), 0);
}

/* A timed wait on the descriptor wakes on the holder's unlock_fd. */
TU_LOCK_TEST(lock_fd_timed_waits, 0)
{
	struct tu_child c;
	int fd = ours_beside_fd_holder(&c, p);

	ck_assert_int_eq(pidlock_lock_fd(l, fd, 0, 300), -ETIMEDOUT);
	tu_tell_later(&c, 200, 'U');
	ck_assert_int_eq(pidlock_lock_fd(l, fd, 0, 10000), 0);
	ck_assert_int_eq(record_pid(p), getpid());
	ck_assert_int_eq(tu_wait_signal(&c), 'U');
	tu_tell(&c, 'x');
	ck_assert_int_eq(tu_join(&c), 0);
	ck_assert_int_ge(wait(NULL), 0);
	close(fd);
}

/* A holder killed with SIGKILL frees the lock at once (rule A). */
TU_LOCK_TEST(lock_fd_sigkill_frees, 0)
{
	struct tu_child c;
	int fd = ours_beside_fd_holder(&c, p);

	ck_assert_int_eq(pidlock_lock_fd(l, fd, 0, 0), -EWOULDBLOCK);
	tu_kill(&c);
	ck_assert_int_eq(pidlock_lock_fd(l, fd, 0, 0), 0);
	ck_assert_int_eq(record_pid(p), getpid());
	close(fd);
}

/* A live spec-only holder (rule B) writes its record at p; then a
 * descriptor opened with oflags is kept out: its record stays, and the
 * descriptor is left holding nothing. */
static void spec_holder_keeps_out(struct pidlock *l, const char *p,
				  int oflags)
{
	char *before;
	int fd;

	tu_write_spec(p, getppid(), 5, NULL);
	before = strdup(tu_read(p));
	ck_assert_ptr_nonnull(before);
	fd = tu_open(p, oflags);
	ck_assert_int_eq(pidlock_lock_fd(l, fd, 0, 0), -EWOULDBLOCK);
	ck_assert_str_eq(tu_read(p), before);
	ck_assert(flock_free(fd));
	free(before);
	close(fd);
}

/* A spec-only holder (rule B) keeps a descriptor out; its record stays. */
TU_LOCK_TEST(lock_fd_spec_holder, 0)
{
	spec_holder_keeps_out(l, p, O_RDWR | O_CREAT);
}

/* The inode check: a file removed or replaced is -ESTALE at once, even
 * while somebody holds the old inode; nothing at the path is written,
 * and the descriptor is left holding nothing. */
TU_LOCK_TEST(lock_fd_inode_check, 0)
{
	char *other = tu_path("other");
	int fd = open_rw(p), orphan_holder;

	tu_set_mtime_ago(p, 60);
	ck_assert_int_eq(pidlock_lock_fd(l, fd, 0, 0), 0);
	tu_write(other, "pid=1\n");
	ck_assert_int_eq(rename(other, p), 0);
	ck_assert_int_eq(pidlock_lock_fd(l, fd, 0, 0), -ESTALE);
	ck_assert(flock_free(fd));
	ck_assert_int_eq(pidlock_unlock_fd(l, fd), -ESTALE);
	ck_assert_str_eq(tu_read(p), "pid=1\n");
	/* Somebody holds the old inode: no wait for it, -ESTALE at once. */
	{
		char link[64];

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		orphan_holder = open(link, O_RDWR | O_CLOEXEC);
		ck_assert_int_ge(orphan_holder, 0);
		ck_assert_int_eq(flock(orphan_holder, LOCK_EX), 0);
	}
	ck_assert_int_eq(pidlock_lock_fd(l, fd, 0, 2000), -ESTALE);
	close(orphan_holder);
	close(fd);
}

/* unlock_fd by a description that does not hold: -ENOLCK, the holder's
 * record and locks untouched. */
TU_LOCK_TEST(unlock_fd_not_holder, 0)
{
	struct tu_child c;
	char *before;
	int fd;

	fd_holder(&c, p);
	before = strdup(tu_read(p));
	fd = open_rw(p);
	ck_assert_int_eq(pidlock_unlock_fd(l, fd), -ENOLCK);
	ck_assert_str_eq(tu_read(p), before);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	tu_tell(&c, 'U');
	ck_assert_int_eq(tu_wait_signal(&c), 'U');
	ck_assert_ptr_nonnull(strstr(tu_read(p), RELEASED));
	ck_assert_ptr_nonnull(strstr(tu_read(p), "\nreleased="));
	tu_tell(&c, 'x');
	ck_assert_int_eq(tu_join(&c), 0);
	free(before);
	close(fd);
}

/* A shared file system's client (statfs(2)'s f_type, as lib/remote.c
 * has them): another client's opens are out of this kernel's sight. */
static bool on_shared_client(const char *path)
{
	static const unsigned long types[] = {
		0x65735546, 0x6969, 0x517b, 0xff534d42, 0xfe534d42,
		0x00c36400, 0x01021997, 0x6b414653, 0x73757245,
	};
	struct statfs sf;

	ck_assert_int_eq(statfs(path, &sf), 0);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if ((unsigned long)sf.f_type == types[i])
			return true;
	return false;
}

/* The caller's own exec 9<>path made a young empty file a moment ago.
 * Its description is the only one open, so no writer is between create
 * and write: a try takes it at once, as the path form does, instead of
 * waiting out the grace (10 s here).  On a shared file system's client
 * a writer may have it open through another client, unseen: the grace
 * holds (1 s there). */
TU_LOCK_TEST(lock_fd_try_new_file, 0)
{
	int fd = open_rw(p);
	bool shared = on_shared_client(p);
	long t0 = tu_ms();

	ck_assert_int_eq(pidlock_set_grace(l, shared ? 1000 : 10000), 0);
	ck_assert_int_eq(pidlock_lock_fd(l, fd, 0, 0), 0);
	if (shared)
		ck_assert_msg(tu_ms() - t0 >= 500,
			      "decided before the grace on a shared client");
	else
		ck_assert_msg(tu_ms() - t0 < 5000,
			      "the try waited out the grace");
	ck_assert_int_eq(record_pid(p), getpid());
	close(fd);
}

/* The lease that tells nobody else has the young file open is taken on
 * the caller's description: its owner and signal (F_SETOWN, F_SETSIG,
 * which the lease sets) are the caller's again afterwards, whether the
 * caller set none or its own. */
TU_LOCK_TEST(lock_fd_keeps_owner_and_signal, 0)
{
	for (int own = 0; own < 2; own++) {
		int fd = open_rw(p);

		if (own) {
			ck_assert_int_eq(fcntl(fd, F_SETSIG, SIGUSR2), 0);
			ck_assert_int_eq(fcntl(fd, F_SETOWN, getpid()), 0);
		}
		ck_assert_int_eq(pidlock_set_grace(l, 10000), 0);
		ck_assert_int_eq(pidlock_lock_fd(l, fd, 0, 0), 0);
		ck_assert_int_eq(fcntl(fd, F_GETSIG), own ? SIGUSR2 : 0);
		ck_assert_int_eq(fcntl(fd, F_GETOWN), own ? getpid() : 0);
		ck_assert_int_eq(pidlock_unlock_fd(l, fd), 0);
		close(fd);
		ck_assert_int_eq(unlink(p), 0);
	}
}

/* Another description open for writing on the young file: maybe a
 * writer about to write.  Even a try waits out the grace, then takes it. */
TU_LOCK_TEST(lock_fd_try_waits_for_writer, 0)
{
	int fd = open_rw(p), writer = open(p, O_WRONLY | O_CLOEXEC);
	long t0 = tu_ms();

	ck_assert_int_ge(writer, 0);
	ck_assert_int_eq(pidlock_set_grace(l, 1000), 0);
	ck_assert_int_eq(pidlock_lock_fd(l, fd, 0, 0), 0);
	ck_assert_int_ge(tu_ms() - t0, 500);
	ck_assert_int_eq(record_pid(p), getpid());
	close(writer);
	close(fd);
}

/* Not a lock file: -EBADMSG, nothing written, no kernel lock left. */
TU_LOCK_TEST(lock_fd_not_lock_file, 0)
{
	const char *script = "#!/bin/sh\necho hello\n";
	int fd;

	tu_write(p, script);
	fd = open_rw(p);
	ck_assert_int_eq(pidlock_lock_fd(l, fd, 0, 0), -EBADMSG);
	ck_assert_str_eq(tu_read(p), script);
	ck_assert(flock_free(fd));
	ck_assert_int_eq(pidlock_unlock_fd(l, fd), -EBADMSG);
	ck_assert_str_eq(tu_read(p), script);
	close(fd);
}

/*
 * A shell's 9> (truncating, write-only) and 9>> (appending): the kernel
 * locks go on the caller's description, the record is read and written
 * through a second open.  The file 9> just emptied is young: our own
 * second open must not count as a writer in the lease test, or every
 * such lock waits out the grace (10 s here).  On a shared file system's
 * client no lease is asked, and the grace holds (1 s there), as in
 * lock_fd_try_new_file.
 */
TU_LOCK_TEST(lock_fd_write_only, 0)
{
	int wo = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	bool shared = on_shared_client(p);
	long t0 = tu_ms();

	ck_assert_int_ge(wo, 0);
	ck_assert_int_eq(pidlock_set_grace(l, shared ? 1000 : 10000), 0);
	ck_assert_int_eq(pidlock_lock_fd(l, wo, getppid(), 0), 0);
	if (!shared)
		ck_assert_int_lt(tu_ms() - t0, 5000);
	ck_assert_int_eq(record_pid(p), getppid());
	ck_assert(!flock_free(wo));
	/* Nothing left open but the caller's descriptor. */
	ck_assert_int_eq(fcntl(wo + 1, F_GETFD), -1);
	ck_assert_int_eq(pidlock_unlock_fd(l, wo), 0);
	ck_assert(strncmp(tu_read(p), RELEASED, strlen(RELEASED)) == 0);
	ck_assert(flock_free(wo));
	close(wo);
}

/* An appending description: the record replaces the old one in place,
 * from byte 0, not after it; and a live spec-only holder's record is
 * read through the second open, and honoured. */
TU_LOCK_TEST(lock_fd_append, 0)
{
	int ap;

	tu_write(p, "pid=4194304\ntimestamp=1\nlock=flock,ofd\nkeep=1\n"
		    "released=1\n\n\n\n");
	tu_set_mtime_ago(p, 60);
	ap = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
	ck_assert_int_ge(ap, 0);
	ck_assert_int_eq(pidlock_lock_fd(l, ap, 0, 0), 0);
	ck_assert_int_eq(strncmp(tu_read(p), "pid=", 4), 0);
	ck_assert_int_eq(record_pid(p), getpid());
	ck_assert(strstr(tu_read(p), "released=") == NULL);
	ck_assert_int_eq(pidlock_unlock_fd(l, ap), 0);
	ck_assert(strncmp(tu_read(p), RELEASED, strlen(RELEASED)) == 0);
	close(ap);
	spec_holder_keeps_out(l, p, O_WRONLY | O_APPEND);
}

/* Descriptors that cannot hold the lock, and bad arguments. */
TU_LOCK_TEST(lock_fd_refused, 0)
{
	int rw, ro;

	tu_write(p, "");
	tu_set_mtime_ago(p, 60);
	ro = open(p, O_RDONLY | O_CLOEXEC);
	rw = open_rw(p);
	ck_assert_int_eq(pidlock_lock_fd(l, ro, 0, 0), -EBADF);
	ck_assert_int_eq(pidlock_unlock_fd(l, ro), -EBADF);
	ck_assert(flock_free(rw));
	ck_assert_str_eq(tu_read(p), "");
	ck_assert_int_eq(pidlock_lock_fd(l, 999, 0, 0), -EBADF);
	ck_assert_int_eq(pidlock_lock_fd(l, -1, 0, 0), -EINVAL);
	ck_assert_int_eq(pidlock_lock_fd(NULL, rw, 0, 0), -EINVAL);
	ck_assert_int_eq(pidlock_unlock_fd(NULL, rw), -EINVAL);
	ck_assert_int_eq(pidlock_lock_fd(l, rw, -1, 0), -EINVAL);
	ck_assert_int_eq(pidlock_lock_fd(l, rw, 4194304, 0), -EINVAL);
	{
		struct pidlock *sh = tu_new(p, PIDLOCK_SHARED);

		ck_assert_int_eq(pidlock_lock_fd(sh, rw, 0, 0), -EINVAL);
		pidlock_free(sh);
	}
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_lock_fd(l, rw, 0, 0), -EALREADY);
	ck_assert_int_eq(pidlock_release(l), 0);
	close(ro);
	close(rw);
}

int main(void)
{
	const struct tu_case cases[] = {
		{ lock_fd_names_pid, 1 },
		{ lock_fd_file_kept, 1 },
		{ handle_after_lock_fd_is_plain, 1 },
		{ lock_fd_waiter_holds_nothing, 1 },
		{ lock_fd_excludes_acquire, 1 },
		{ lock_fd_timed_waits, 1 },
		{ lock_fd_sigkill_frees, 1 },
		{ lock_fd_spec_holder, 1 },
		{ lock_fd_inode_check, 1 },
		{ unlock_fd_not_holder, 1 },
		{ lock_fd_try_new_file, 1 },
		{ lock_fd_keeps_owner_and_signal, 1 },
		{ lock_fd_try_waits_for_writer, 1 },
		{ lock_fd_not_lock_file, 1 },
		{ lock_fd_refused, 1 },
		{ lock_fd_write_only, 1 },
		{ lock_fd_append, 1 },
		{ NULL, 0 },
	};

	tu_run_cases("fd", "fd", 60, cases);
}
