/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Protocol rules, one test (at least) per rule; each names the rule of
 * doc/protocol.md it guards and would fail if that rule were removed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static const char *pid_line(pid_t pid)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), "pid=%ld\n", (long)pid);
	return buf;
}

/* Rule "content": pid=, timestamp=, tag=, lock= marker; LF endings. */
TU_LOCK_TEST(acquire_writes_record, 0)
{
	char want[256];
	long now = (long)time(NULL);
	struct stat st;
	long ts;

	ck_assert_int_eq(pidlock_set_tag(l, "nightly backup"), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(sscanf(tu_read(p), "pid=%*d\ntimestamp=%ld", &ts), 1);
	ck_assert_int_ge(ts, now);
	ck_assert_int_le(ts, now + 2);
	snprintf(want, sizeof(want), "pid=%ld\ntimestamp=%ld\ntag=nightly backup\n"
		 "lock=flock,ofd\n%s", (long)getpid(), ts, tu_host_lines());
	ck_assert_str_eq(tu_read(p), want);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0644 & ~0022);
	ck_assert_int_eq(st.st_nlink, 1);
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert(!tu_exists(p));
}

/* Rule "plain pid": the bare pid leads, for PIDFile= and pkill -F. */
START_TEST(plain_pid_first_line)
{
	const char *p = tu_path("a.pid");
	struct pidlock *l = tu_new(p, PIDLOCK_PLAIN_PID);
	char want[32];

	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	snprintf(want, sizeof(want), "%ld\npid=%ld\n", (long)getpid(),
		 (long)getpid());
	ck_assert(strncmp(tu_read(p), want, strlen(want)) == 0);
	ck_assert_int_eq(tu_sh("test \"$(head -n1 '%s')\" = %ld", p,
			       (long)getpid()), 0);
	pidlock_free(l);
	ck_assert(!tu_exists(p));
}
END_TEST

/* Rule "held": two handles exclude each other, even in one process
 * (both kernel locks belong to the open file description). */
START_TEST(two_handles_one_process)
{
	const char *p = tu_path("a.lock");
	struct pidlock *a = tu_new(p, 0), *b = tu_new(p, 0);
	struct pidlock_info info;

	ck_assert_int_eq(pidlock_acquire(a, 0), 0);
	ck_assert_int_eq(pidlock_acquire(b, 0), -EWOULDBLOCK);
	ck_assert_int_eq(pidlock_holder(b, &info), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD);
	ck_assert_int_eq(info.pid, getpid());
	ck_assert_int_eq(info.kernel_pid, getpid());
	ck_assert_int_eq(pidlock_acquire(a, 0), -EALREADY);
	ck_assert_int_eq(pidlock_release(a), 0);
	ck_assert_int_eq(pidlock_acquire(b, 0), 0);
	ck_assert_int_eq(pidlock_holder(b, &info), -ENODATA);
	pidlock_free(a);
	pidlock_free(b);
}
END_TEST

/* Rule "held", flock half: a flock(2) holder (fslock-guard, flock(1),
 * libbsd) on the file at the path keeps us out. */
TU_LOCK_TEST(flock_holder_excludes, 0)
{
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(flock(fd, LOCK_EX), 0);
	/* An old empty file: only the flock can keep us out, not rule C. */
	tu_set_mtime_ago(p, 100);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	ck_assert_int_eq(pidlock_acquire(l, 150), -ETIMEDOUT);
	close(fd);
	/* Its fresh empty file is ours once the grace has passed. */
	ck_assert_int_eq(pidlock_acquire(l, 2000), 0);
}

static int posix_hold(struct tu_child *c, void *arg)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = 0, .l_len = 1 };
	int fd = open(arg, O_RDWR | O_CREAT | O_CLOEXEC, 0644);

	if (fd < 0 || fcntl(fd, F_SETLK, &fl) < 0)
		return 2;
	tu_signal(c, 'L');
	tu_wait_parent(c);
	return 0;
}

/* Rule "held", OFD half: a classic fcntl lock on byte 0 (with-lock-ex's
 * protocol) keeps us out. */
TU_LOCK_TEST(fcntl_holder_excludes, 0)
{
	struct tu_child c;

	tu_spawn(&c, posix_hold, p);
	ck_assert_int_eq(tu_wait_signal(&c), 'L');
	/* An old empty file: only the fcntl lock can keep us out. */
	tu_set_mtime_ago(p, 100);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	tu_tell(&c, 'R');
	ck_assert_int_eq(tu_join(&c), 0);
	pidlock_set_grace(l, 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
}

/* Rule "held": our lock keeps both families out. */
TU_LOCK_TEST(we_exclude_both_families, 0)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = 0, .l_len = 1 };
	int fd;

	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	fd = open(p, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(flock(fd, LOCK_EX | LOCK_NB), -1);
	ck_assert_int_eq(errno, EWOULDBLOCK);
	ck_assert_int_eq(fcntl(fd, F_OFD_SETLK, &fl), -1);
	ck_assert_int_eq(errno, EAGAIN);
	close(fd);
}

/* Flags select the kinds; the marker names what was taken. */
START_TEST(kind_flags)
{
	const char *p = tu_path("a.lock");
	struct pidlock *l;
	struct pidlock_info info;

	ck_assert_int_eq(pidlock_new(&l, p, PIDLOCK_FLOCK_ONLY | PIDLOCK_OFD_ONLY),
			 -EINVAL);
	ck_assert_int_eq(pidlock_new(&l, p, 1U << 20), -EINVAL);
	l = tu_new(p, PIDLOCK_FLOCK_ONLY);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_ptr_nonnull(strstr(tu_read(p), "\nlock=flock\n"));
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_uint_eq(info.kernel_locks, PIDLOCK_KIND_FLOCK);
	ck_assert_uint_eq(info.marker, PIDLOCK_KIND_FLOCK);
	pidlock_free(l);
	l = tu_new(p, PIDLOCK_OFD_ONLY);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_ptr_nonnull(strstr(tu_read(p), "\nlock=ofd\n"));
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_uint_eq(info.kernel_locks, PIDLOCK_KIND_OFD);
	pidlock_free(l);
}
END_TEST

/* Rule A: a holder with other flags is tested for the kind we did not
 * take, so a flock-only and an OFD-only user still exclude each other. */
START_TEST(mixed_flags_exclude)
{
	const char *p = tu_path("a.lock");
	struct pidlock *l = tu_new(p, PIDLOCK_OFD_ONLY);
	struct tu_child c;

	tu_hold(&c, p, PIDLOCK_FLOCK_ONLY);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	tu_kill(&c);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	pidlock_free(l);
	l = tu_new(p, PIDLOCK_FLOCK_ONLY);
	tu_hold(&c, p, PIDLOCK_OFD_ONLY);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	tu_release_to(&c, l);
	pidlock_free(l);
}
END_TEST

static int crash_holder(struct tu_child *c, void *arg)
{
	struct pidlock *l;

	if (pidlock_new(&l, arg, 0) < 0 || pidlock_acquire(l, 0) < 0)
		return 2;
	tu_signal(c, 'L');
	pause();
	return 0;
}

/* Rule A (marker) and "never stale": after SIGKILL of a holder its file
 * stays, with a fresh timestamp, and the next acquirer takes it at once.
 * Without the marker rule it would look like a live spec-only lock. */
TU_LOCK_TEST(sigkill_holder_next_gets_it_at_once, 0)
{
	struct pidlock_info info;
	struct tu_child c;
	ino_t ino;

	tu_spawn(&c, crash_holder, p);
	ck_assert_int_eq(tu_wait_signal(&c), 'L');
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	tu_kill(&c);
	ck_assert(tu_exists(p));
	ino = tu_ino(p);
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_ABANDONED);
	ck_assert_int_eq(info.pid, c.pid ? c.pid : info.pid);
	ck_assert_int_eq(info.pid_alive, 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	/* Taken over in place: same inode, our record. */
	ck_assert_uint_eq(tu_ino(p), ino);
	ck_assert(strncmp(tu_read(p), pid_line(getpid()), strlen(pid_line(getpid()))) == 0);
}

/* The holder's bytes (doc/protocol.md, 3a): what a holder writes through
 * pidlock_fd() -- write(2), and pwrite(2) at offset 0, which O_APPEND
 * sends to the end as well -- lands after its record. */
static int metadata_holder(struct tu_child *c, void *arg)
{
	struct pidlock *l;
	int fd;

	if (pidlock_new(&l, arg, 0) < 0 || pidlock_acquire(l, 0) < 0)
		return 2;
	fd = pidlock_fd(l);
	if (fd < 0 || write(fd, "holder-", 7) != 7 ||
	    pwrite(fd, "metadata", 8, 0) != 8)
		return 3;
	tu_signal(c, 'L');
	pause();
	return 0;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);

	return n >= m && strcmp(s + n - m, tail) == 0;
}

/* ... so a losing contender leaves them be, every reader still finds
 * the holder's record, and after the holder's SIGKILL the file is taken
 * over (rule A), the dead holder's bytes cut.  Before, the write landed
 * on the record ("holder-metadatatamp=...") and every later acquire
 * failed with EBADMSG until somebody removed the file. */
TU_LOCK_TEST(fd_writes_survive_sigkill, 0)
{
	struct pidlock_info info;
	struct tu_child c;
	char want[32];
	char *before;
	int r;

	tu_spawn(&c, metadata_holder, p);
	ck_assert_int_eq(tu_wait_signal(&c), 'L');
	snprintf(want, sizeof(want), "pid=%ld\n", (long)c.pid);
	ck_assert_msg(strncmp(tu_read(p), want, strlen(want)) == 0,
		      "the holder's writes landed on its record: \"%s\"",
		      tu_read(p));
	ck_assert_msg(ends_with(tu_read(p), "holder-metadata"),
		      "the holder's bytes are not at the end: \"%s\"",
		      tu_read(p));
	before = tu_snapshot(p);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	tu_assert_unchanged(p, before, "a losing contender");
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD);
	ck_assert_int_eq(info.pid, c.pid);
	tu_kill(&c);
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_msg(info.state == PIDLOCK_STATE_ABANDONED,
		      "state after the holder's SIGKILL: %s",
		      pidlock_state_name(info.state));
	r = pidlock_acquire(l, 0);
	ck_assert_msg(r == 0, "acquire after the holder's SIGKILL: %d (%s)",
		      r, strerror(-r));
	ck_assert(strncmp(tu_read(p), pid_line(getpid()),
			  strlen(pid_line(getpid()))) == 0);
	ck_assert_msg(strstr(tu_read(p), "metadata") == NULL,
		      "the dead holder's bytes stayed: \"%s\"", tu_read(p));
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert(!tu_exists(p));
}


/* Takes the lock and writes meta through the descriptor handed out:
 * the holder's bytes (doc/protocol.md 3a). */
static void hold_and_write(struct pidlock *l, const char *meta)
{
	int fd;

	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	fd = pidlock_fd(l);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, meta, strlen(meta)), (ssize_t)strlen(meta));
}
/* The holder's bytes are kept while it holds: a refresh, by the holder
 * or by a forked child (another pid, so another record), rewrites the
 * record only; key lines among them name nobody; a kept file's release
 * leaves them to the next holder's takeover, which cuts them. */
TU_LOCK_TEST(fd_writes_kept_while_held, PIDLOCK_KEEP_FILE)
{
	const char *meta = "meta\npid=1\ntimestamp=1\n";
	struct pidlock_info info;
	pid_t child;
	int st;

	hold_and_write(l, meta);
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_msg(info.state == PIDLOCK_STATE_HELD && info.pid == getpid(),
		      "inspect: %s, pid %ld", pidlock_state_name(info.state),
		      (long)info.pid);
	ck_assert_int_eq(pidlock_refresh(l), 0);
	ck_assert_msg(ends_with(tu_read(p), meta), "refresh lost them: \"%s\"",
		      tu_read(p));
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0)
		_exit(pidlock_refresh(l) == 0 ? 0 : 1);
	ck_assert_int_eq(waitpid(child, &st, 0), child);
	ck_assert_int_eq(st, 0);
	ck_assert(strncmp(tu_read(p), pid_line(child),
			  strlen(pid_line(child))) == 0);
	ck_assert_msg(ends_with(tu_read(p), meta),
		      "the child's refresh lost them: \"%s\"", tu_read(p));
	ck_assert_int_eq(pidlock_refresh(l), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_msg(info.state == PIDLOCK_STATE_FREE,
		      "released: %s", pidlock_state_name(info.state));
	ck_assert(ends_with(tu_read(p), meta));
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_msg(strstr(tu_read(p), "meta") == NULL,
		      "the last holder's bytes stayed: \"%s\"", tu_read(p));
	ck_assert_int_eq(pidlock_release(l), 0);
}

/* A shared acquirer that joins keeps the holder's bytes: a co-holder
 * that is alive wrote them (a takeover cut them before). */
TU_LOCK_TEST(fd_writes_kept_by_shared_joiner, PIDLOCK_SHARED)
{
	const char *meta = "meta-of-a-reader";
	pid_t child;
	int st;

	hold_and_write(l, meta);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		struct pidlock *b;

		_exit(pidlock_new(&b, p, PIDLOCK_SHARED) < 0 ? 2
		      : pidlock_acquire(b, 0) < 0	    ? 3
							    : 0);
	}
	ck_assert_int_eq(waitpid(child, &st, 0), child);
	ck_assert_int_eq(st, 0);
	ck_assert_msg(ends_with(tu_read(p), meta),
		      "a joining reader cut them: \"%s\"", tu_read(p));
	ck_assert_int_eq(pidlock_release(l), 0);
}

/* A child forked during the hold shares the description: its
 * pidlock_fd() makes it append for the parent too, whose later record
 * writes must still go at the record (pidlock(1) hands the descriptor to
 * its command so; the released record landed after the child's bytes). */
TU_LOCK_TEST(fd_given_in_child_parent_writes_at_record, PIDLOCK_KEEP_FILE)
{
	struct pidlock_info info;
	pid_t child;
	int st;

	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		int fd = pidlock_fd(l);

		_exit(fd >= 0 && write(fd, "child-meta", 10) == 10 ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(child, &st, 0), child);
	ck_assert_int_eq(st, 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert_msg(strncmp(tu_read(p), "pid=4194304\n", 12) == 0,
		      "the released record is not at the start: \"%s\"",
		      tu_read(p));
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_FREE);
}

/*
 * An overlay mount of the test's own, in a private mount namespace
 * (Check's fork of this test owns it, and its end takes the mount
 * away): where it cannot be had (no root, CK_FORK=no, a chroot whose
 * "/" cannot be made private, no overlayfs), why, and NULL.
 */
static const char *overlay_dir(char *why, size_t size)
{
	static const char *const sub[] = { "", "/lower", "/upper", "/work",
					   "/merged" };
	static char merged[1024];
	const char *fork_mode = getenv("CK_FORK");
	char top[1024], d[1100], opts[4096];
	size_t i;

	if (geteuid() != 0 || (fork_mode && strcmp(fork_mode, "no") == 0)) {
		tu_fmt(why, size, "needs root and CK_FORK");
		return NULL;
	}
	if (unshare(CLONE_NEWNS) < 0 ||
	    mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		tu_fmt(why, size, "no private mount namespace: %s",
		       strerror(errno));
		return NULL;
	}
	tu_fmt(top, sizeof(top), "%s/ovl", tu_dir());
	for (i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		tu_fmt(d, sizeof(d), "%s%s", top, sub[i]);
		ck_assert_msg(mkdir(d, 0755) == 0, "mkdir %s: %s", d,
			      strerror(errno));
	}
	tu_fmt(merged, sizeof(merged), "%s/merged", top);
	tu_fmt(opts, sizeof(opts), "lowerdir=%s/lower,upperdir=%s/upper,"
	       "workdir=%s/work", top, top, top);
	if (mount("overlay", merged, "overlay", 0, opts) < 0) {
		ck_assert_msg(errno == ENODEV || errno == EINVAL ||
			      errno == EPERM || errno == EOPNOTSUPP,
			      "mount -t overlay: %s", strerror(errno));
		tu_fmt(why, size, "mount -t overlay: %s", strerror(errno));
		return NULL;
	}
	return merged;
}

/*
 * On overlayfs a write goes on to the upper file system's own open file,
 * which appends, and RWF_NOAPPEND is dropped on the way: the holder's
 * record must still be rewritten at its place, by the handle that
 * handed the descriptor out and by one whose fork did (io.c,
 * noappend_probe() and write_record_bytes()).
 */
START_TEST(fd_writes_on_overlay)
{
	char why[256], path[1024];
	const char *dir = overlay_dir(why, sizeof(why));
	struct pidlock *l;

	if (!dir) {
		(void)fprintf(stderr, "SKIP fd_writes_on_overlay: %s\n", why);
		return;
	}
	tu_fmt(path, sizeof(path), "%s/a.lock", dir);
	ck_assert_int_eq(pidlock_new(&l, path, PIDLOCK_KEEP_FILE), 0);
	fd_writes_kept_while_held_body(path, l);
	pidlock_free(l);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(pidlock_new(&l, path, PIDLOCK_KEEP_FILE), 0);
	fd_given_in_child_parent_writes_at_record_body(path, l);
	pidlock_free(l);
	ck_assert_int_eq(umount2(dir, MNT_DETACH), 0);
}
END_TEST

/* pidlock_set_mode() is exact, whatever the umask (a lock shared
 * between users needs 0666 under a umask of 022); the default, 0644,
 * has the umask applied. */
TU_LOCK_TEST(mode_exact_whatever_umask, 0)
{
	mode_t old = umask(022);
	struct pidlock *dflt;
	struct stat st;

	ck_assert_int_eq(pidlock_set_mode(l, 0666), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0666);
	ck_assert_int_eq(pidlock_release(l), 0);
	(void)umask(027);
	dflt = tu_new(p, 0);
	ck_assert_int_eq(pidlock_acquire(dflt, 0), 0);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0640);
	ck_assert_int_eq(pidlock_release(dflt), 0);
	pidlock_free(dflt);
	(void)umask(old);
}

/* Rule B: a spec-only holder holds until stale = old AND pid dead. */
TU_LOCK_TEST(spec_holder_rules, 0)
{
	struct pidlock_info info;
	pid_t dead = tu_dead_pid();

	tu_write_spec(p, getppid(), 0, "spec");	/* fresh, alive */
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	ck_assert_int_eq(pidlock_holder(l, &info), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD_SPEC);
	ck_assert_int_eq(info.pid, getppid());
	ck_assert_str_eq(info.tag, "spec");
	tu_write_spec(p, dead, 0, "spec");	/* fresh, dead */
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	tu_write_spec(p, getppid(), 7200, "spec");	/* old, alive */
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	tu_write_spec(p, dead, 3590, "spec");	/* not old enough */
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	ck_assert_int_eq(pidlock_set_stale_timeout(l, 60), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);	/* old for 60 s */
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert_int_eq(pidlock_set_stale_timeout(l, 3600), 0);
	tu_write_spec(p, dead, 3700, "spec");	/* old and dead */
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_STALE);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert(strncmp(tu_read(p), pid_line(getpid()), strlen(pid_line(getpid()))) == 0);
}

static int late_writer(struct tu_child *c, void *arg)
{
	int fd = open(arg, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	char buf[128];
	int n;

	if (fd < 0)
		return 2;
	tu_signal(c, 'C');
	if (tu_wait_parent(c) != 'W')
		return 3;
	n = snprintf(buf, sizeof(buf), "pid=%ld\ntimestamp=%ld\n",
		     (long)getppid(), (long)time(NULL));
	if (write(fd, buf, (size_t)n) != n || fsync(fd) < 0)
		return 4;
	return 0;
}

/* Rule C: a fresh incomplete file may be a spec-only peer between its
 * O_EXCL create and its write: a try reports it busy at once; a wait
 * watches for the write, and then sees a spec-only holder. */
TU_LOCK_TEST(grace_waits_for_spec_writer, 0)
{
	struct pidlock_info info;
	struct tu_child c;
	long t0;

	ck_assert_int_eq(pidlock_set_grace(l, 2000), 0);
	tu_spawn(&c, late_writer, p);
	ck_assert_int_eq(tu_wait_signal(&c), 'C');
	t0 = tu_ms();
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	ck_assert_int_lt(tu_ms() - t0, 1000);	/* a try does not wait */
	ck_assert_int_eq(pidlock_holder(l, &info), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD_SPEC);
	tu_tell_later(&c, 100, 'W');
	t0 = tu_ms();
	ck_assert_int_eq(pidlock_acquire(l, 600), -ETIMEDOUT);
	ck_assert_int_ge(tu_ms() - t0, 590);
	ck_assert_int_eq(pidlock_holder(l, &info), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD_SPEC);
	ck_assert_int_eq(info.pid, getpid());	/* late_writer wrote our pid */
	ck_assert(info.has_timestamp);
	ck_assert_int_eq(tu_join(&c), 0);
	wait(NULL);
}

/*
 * A process that holds no kernel lock and waits for a word on its pipe,
 * then exits (it stays a zombie until it is reaped): the writer of a
 * hand-written pidfile, or an innocent process that got a dead one's pid.
 */
static pid_t pidfile_writer(struct tu_child *c)
{
	if (tu_fork(c) == 0) {
		(void)tu_wait_parent(c);
		_exit(0);
	}
	return c->pid;
}

/* The pid, bare or on a pid= line, written over `path` with the mtime
 * `ago` seconds ago (0: now, then out of rule C's grace of 200 ms). */
static void write_pidfile(const char *path, bool pid_line, pid_t pid,
			  long ago)
{
	char text[64];

	snprintf(text, sizeof(text), "%s%ld\n", pid_line ? "pid=" : "",
		 (long)pid);
	tu_write(path, text);
	if (ago)
		tu_set_mtime_ago(path, ago);
	else
		tu_msleep(250);
}

/* The state of `pid`'s process in /proc/PID/stat ('Z' for a zombie). */
static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	p = p ? strrchr(buf, ')') : NULL;
	if (!p || !p[1])
		return 0;
	return p[2];
}

/* The command name of `pid`'s process; "" if unknown. */
static const char *proc_comm(pid_t pid)
{
	static char buf[64];
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/comm", (long)pid);
	buf[0] = '\0';
	f = fopen(path, "re");
	if (!f)
		return buf;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

/*
 * Rule C, a live writer: a running daemon's pidfile (a bare pid, or a
 * pid= line and no timestamp) whose process started before the file was
 * written is held, as hand-written pidfile code and liblockfile judge
 * it: a second daemon must not start beside the first.  Nothing is
 * written; the busy report names the process; a timed wait ends when it
 * exits, even as a zombie that nobody reaped.
 */
TU_LOCK_TEST(live_pidfile_held, 0)
{
	struct pidlock_info info;

	for (int with_key = 0; with_key <= 1; with_key++) {
		struct tu_child c;
		pid_t pid = pidfile_writer(&c);
		char *before;
		long t0;

		tu_msleep(20);	/* the file is written after the start */
		write_pidfile(p, with_key, pid, 0);
		before = tu_snapshot(p);
		ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
		ck_assert_int_eq(pidlock_holder(l, &info), 0);
		ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD_PIDFILE);
		ck_assert_int_eq(info.pid, pid);
		ck_assert_int_eq(info.kernel_locks, 0);
		ck_assert_int_eq(pidlock_acquire(l, 300), -ETIMEDOUT);
		ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
		ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD_PIDFILE);
		ck_assert_str_eq(pidlock_state_name(info.state), "held-pidfile");
		tu_assert_unchanged(p, before, "a live pidfile");
		/* It exits and stays a zombie: its pidfile is abandoned. */
		tu_tell_later(&c, 200, 'x');
		t0 = tu_ms();
		ck_assert_int_eq(pidlock_acquire(l, 10000), 0);
		ck_assert_int_lt(tu_ms() - t0, 5000);
		ck_assert_int_eq(proc_state(pid), 'Z');
		ck_assert_int_eq(pidlock_release(l), 0);
		ck_assert_int_eq(tu_join(&c), 0);
		wait(NULL);	/* tu_tell_later's messenger */
	}
}

/*
 * Rule C: a crashed daemon's pidfile whose pid now names an unrelated
 * live process, one that started after the file was written (beyond
 * the slack), is taken over, and that process is left alone.
 */
TU_LOCK_TEST(reused_pid_taken_over, 0)
{
	struct pidlock_info info;
	struct tu_child c;
	pid_t pid = pidfile_writer(&c);

	write_pidfile(p, false, pid, 10);
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_ABANDONED);
	ck_assert_int_eq(info.pid, pid);
	ck_assert_int_eq(info.pid_alive, 1);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(kill(pid, 0), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	/* A dead pid, and a zombie's, free the file as well. */
	write_pidfile(p, false, tu_dead_pid(), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	tu_tell(&c, 'x');
	while (proc_state(pid) != 'Z')
		tu_msleep(5);
	write_pidfile(p, false, pid, 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(tu_join(&c), 0);
}

/*
 * Rule C: a file written before this boot names no live writer, even if
 * its pid is that of a process started at boot (init).  The same file
 * written since is held by init.  The caller's own pid is no other
 * holder: a process that wrote its own pidfile takes it.
 */
TU_LOCK_TEST(pidfile_boot_and_self, 0)
{
	struct pidlock_info info;
	struct timespec up;

	ck_assert_int_eq(clock_gettime(CLOCK_BOOTTIME, &up), 0);
	if (proc_state(1) == 0) {
		fprintf(stderr, "SKIP pidfile_boot_and_self: /proc/1 unreadable\n");
		return;
	}
	write_pidfile(p, false, 1, (long)up.tv_sec + 3600);
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_ABANDONED);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	write_pidfile(p, false, 1, 0);
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD_PIDFILE);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	ck_assert_int_eq(unlink(p), 0);
	write_pidfile(p, false, getpid(), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	/* A kernel thread (kthreadd, pid 2 where it is visible) writes no
	 * pidfile, however early it started. */
	if (strcmp(proc_comm(2), "kthreadd") == 0) {
		write_pidfile(p, false, 2, 0);
		ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
		ck_assert_int_eq(info.state, PIDLOCK_STATE_ABANDONED);
		ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	}
}

/* Rule C: an incomplete file older than the grace (a with-lock-ex or
 * flock(1) leftover, a libbsd bare pid) is taken at once; a fresh one
 * that somebody has open (a writer between its create and its write)
 * only after the grace. */
TU_LOCK_TEST(grace_then_takeover, 0)
{
	struct timespec now;
	struct stat st;
	long age;
	int writer;

	tu_write(p, "");
	tu_set_mtime_ago(p, 5);
	/* A try, which never waits out a grace: taken at once. */
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	{
		char bare[32];	/* a fresh libbsd-style leftover, dead pid */

		snprintf(bare, sizeof(bare), "%ld\n", (long)tu_dead_pid());
		tu_write(p, bare);
	}
	writer = open(p, O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(writer, 0);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_int_eq(pidlock_set_grace(l, 300), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	ck_assert_int_eq(pidlock_acquire(l, 5000), 0);
	/* Not before the grace is over, counted from the file's mtime as
	 * the library counts it (from a time of ours taken later, a busy
	 * machine's stall before it looked like a short grace). */
	ck_assert_int_eq(clock_gettime(CLOCK_REALTIME, &now), 0);
	age = (now.tv_sec - st.st_mtim.tv_sec) * 1000 +
	      (now.tv_nsec - st.st_mtim.tv_nsec) / 1000000;
	fprintf(stderr, "grace_then_takeover: taken %ld ms after the "
		"write, grace 300 ms\n", age);
	ck_assert_int_ge(age, 290);
	ck_assert_int_eq(close(writer), 0);
	ck_assert_int_eq(pidlock_set_grace(l, 10001), -EINVAL);
}

/* The inode check.  The waiter blocks in flock on the holder's inode;
 * the holder unlinks it and closes.  The waiter then holds kernel locks
 * on a file that is no longer the lock: it must start again, and end up
 * holding the file that is at the path. */
TU_LOCK_TEST(inode_check_after_unlink, PIDLOCK_NO_SYNC)
{
	struct tu_child c;

	/* Spawned before we lock: a child forked while we hold would
	 * share our open file description, and so our lock. */
	tu_waiter(&c, p, PIDLOCK_NO_SYNC);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	tu_tell(&c, 'G');
	usleep(100 * 1000);	/* let it block on our inode */
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert_int_eq(tu_wait_signal(&c), 'L');
	ck_assert(tu_exists(p));
	ck_assert(strncmp(tu_read(p), pid_line(c.pid), strlen(pid_line(c.pid))) == 0);
	/* And we are locked out of the new file. */
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	tu_tell(&c, 'R');
	ck_assert_int_eq(tu_join(&c), 0);
}

/* Release rule: only the process named in the file unlinks; a forked
 * child's release or a daemonizing parent's close leaves the file. */
TU_LOCK_TEST(fork_release_pid_check, 0)
{
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(tu_forked_release(l), 0);
	ck_assert(tu_exists(p));
	ck_assert_int_eq(pidlock_verify(l), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert(!tu_exists(p));
}

static int daemon_child(struct tu_child *c, void *arg)
{
	struct pidlock *l = arg;

	/* The daemon flow: the child takes the record over... */
	if (pidlock_refresh(l) != 0)
		return 2;
	tu_signal(c, 'D');
	tu_wait_parent(c);
	return pidlock_release(l) == 0 ? 0 : 3;
}

/* Daemon flow: acquire, fork, child refresh (its pid), parent close. */
START_TEST(daemonize_flow)
{
	const char *p = tu_path("d.pid");
	struct pidlock *l = tu_new(p, PIDLOCK_PLAIN_PID);
	struct pidlock *other = tu_new(p, 0);
	struct tu_child c;
	char first[32];

	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	tu_spawn(&c, daemon_child, l);
	ck_assert_int_eq(tu_wait_signal(&c), 'D');
	ck_assert_int_eq(pidlock_close(l), 0);
	ck_assert_int_eq(pidlock_close(l), -ENOLCK);
	snprintf(first, sizeof(first), "%ld\npid=%ld\n", (long)c.pid, (long)c.pid);
	ck_assert(strncmp(tu_read(p), first, strlen(first)) == 0);
	ck_assert_int_eq(pidlock_acquire(other, 0), -EWOULDBLOCK);
	tu_tell(&c, 'R');
	ck_assert_int_eq(tu_join(&c), 0);
	ck_assert(!tu_exists(p));
	ck_assert_int_eq(pidlock_acquire(other, 0), 0);
	pidlock_free(other);
	pidlock_free(l);
}
END_TEST

/* Verify/release: someone broke the lock (unlinked and re-created the
 * file); we say so and never delete the new file. */
TU_LOCK_TEST(broken_lock_reported, 0)
{
	ck_assert_int_eq(pidlock_verify(l), -ENOLCK);
	ck_assert_int_eq(pidlock_release(l), -ENOLCK);
	ck_assert_int_eq(pidlock_refresh(l), -ENOLCK);
	ck_assert_int_eq(pidlock_fd(l), -ENOLCK);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_ge(pidlock_fd(l), 0);
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_int_eq(pidlock_verify(l), -ESTALE);
	tu_write(p, "somebody else\n");
	ck_assert_int_eq(pidlock_verify(l), -ESTALE);
	ck_assert_int_eq(pidlock_refresh(l), -ESTALE);
	ck_assert_str_eq(tu_read(p), "somebody else\n");
	ck_assert_int_eq(pidlock_release(l), -ESTALE);
	ck_assert_str_eq(tu_read(p), "somebody else\n");
	ck_assert_int_eq(pidlock_fd(l), -ENOLCK);
}

/* Refresh: new timestamp and pid, in place (same inode). */
TU_LOCK_TEST(refresh_in_place, 0)
{
	ino_t ino;
	int fd;

	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ino = tu_ino(p);
	fd = tu_open(p, O_WRONLY);
	ck_assert_int_eq(pwrite(fd, "pid=1\ntimestamp=1\n", 18, 0), 18);
	close(fd);
	ck_assert_int_eq(pidlock_refresh(l), 0);
	ck_assert(strncmp(tu_read(p), pid_line(getpid()),
			  strlen(pid_line(getpid()))) == 0);
	ck_assert_ptr_null(strstr(tu_read(p), "timestamp=1\n"));
	ck_assert_uint_eq(tu_ino(p), ino);
}

/* Takeover never shows a shorter record: the rewrite is padded with
 * newlines to the old length, in one write, on the same inode. */
TU_LOCK_TEST(takeover_pads_old_length, 0)
{
	char junk[1000];
	struct stat st;

	/* A long spec record, cut mid-write: a takeover's old content. */
	memcpy(junk, "pid=", 4);
	memset(junk + 4, '7', 8);
	memcpy(junk + 12, "\ntag=", 5);
	memset(junk + 17, 'j', sizeof(junk) - 18);
	junk[sizeof(junk) - 1] = '\0';
	tu_write(p, junk);
	tu_set_mtime_ago(p, 10);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)sizeof(junk) - 1);
	ck_assert_ptr_null(strchr(tu_read(p), 'j'));
}

/* KEEP_FILE: release never unlinks; the inode stays across holders. */
START_TEST(keep_file_mode)
{
	const char *p = tu_path("a.lock");
	struct pidlock *l = tu_new(p, PIDLOCK_KEEP_FILE);
	struct pidlock_info info;
	ino_t ino;

	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ino = tu_ino(p);
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert(tu_exists(p));
	/* Released, not abandoned: nobody holds it, and no pid is left
	 * for pkill -F or an init system to act on. */
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_FREE);
	ck_assert_int_eq(info.pid, 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_uint_eq(tu_ino(p), ino);
	pidlock_free(l);
	ck_assert_uint_eq(tu_ino(p), ino);
}
END_TEST

/* Timestamp = the moment of acquisition, not of the start of the wait. */
TU_LOCK_TEST(timestamp_is_acquisition_time, 0)
{
	struct tu_child c;
	long start = (long)time(NULL), ts;

	tu_hold(&c, p, 0);
	tu_tell_later(&c, 2000, 'R');
	ck_assert_int_eq(pidlock_acquire(l, -1), 0);
	ck_assert_int_eq(sscanf(tu_read(p), "pid=%*d\ntimestamp=%ld", &ts), 1);
	ck_assert_int_ge(ts, start + 1);
	ck_assert_int_eq(tu_join(&c), 0);
	wait(NULL);
}

/* O_NOFOLLOW: a symlink at the path is refused; its target untouched. */
START_TEST(symlink_refused)
{
	const char *p = tu_path("a.lock"), *t = tu_path("target");
	struct pidlock *l = tu_new(p, 0);
	int before = tu_count_fds();

	tu_write(t, "precious\n");
	tu_set_mtime_ago(t, 100);
	ck_assert_int_eq(symlink(t, p), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), -ELOOP);
	ck_assert_int_eq(pidlock_acquire(l, 100), -ELOOP);
	ck_assert_str_eq(tu_read(t), "precious\n");
	ck_assert_int_eq(tu_count_fds(), before);
	pidlock_free(l);
}
END_TEST

/* Non-regular files: refused with a clear error, never blocking. */
START_TEST(non_regular_refused)
{
	const char *p = tu_path("fifo");
	struct pidlock *l = tu_new(p, 0);

	ck_assert_int_eq(mkfifo(p, 0644), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EINVAL);
	pidlock_free(l);
	ck_assert_int_eq(mkdir(tu_path("d"), 0755), 0);
	l = tu_new(tu_path("d"), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EISDIR);
	pidlock_free(l);
	ck_assert_int_eq(pidlock_new(&l, "", 0), -EINVAL);
	ck_assert_int_eq(pidlock_new(&l, "/tmp/", 0), -EISDIR);
	ck_assert_int_eq(pidlock_new(&l, NULL, 0), -EINVAL);
	l = tu_new("/nonexistent-dir/x.lock", 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), -ENOENT);
	pidlock_free(l);
}
END_TEST

static int as_nobody_acquire(struct tu_child *c, void *arg)
{
	struct pidlock *l;
	int r;

	(void)c;
	if (setgid(65534) < 0 || setuid(65534) < 0)
		return 2;
	if (pidlock_new(&l, arg, PIDLOCK_KEEP_FILE) < 0)
		return 3;
	r = pidlock_acquire(l, 0);
	pidlock_free(l);
	return r == 0 ? 0 : 10 + (-r % 100);
}

/* Step 1 needs a writable directory, step 3 does not: a user who may
 * write a pre-made lock file, but not its directory, still takes it. */
START_TEST(existing_file_in_readonly_dir)
{
	const char *d = tu_path("ro");
	char p[4096];
	struct tu_child c;

	if (geteuid() != 0) {
		fprintf(stderr, "existing_file_in_readonly_dir: needs root, not run\n");
		return;
	}
	ck_assert_int_eq(mkdir(d, 0755), 0);
	snprintf(p, sizeof(p), "%s/x.lock", d);
	tu_write(p, "");
	ck_assert_int_eq(chmod(p, 0666), 0);
	tu_set_mtime_ago(p, 100);
	ck_assert_int_eq(chmod(tu_dir(), 0755), 0);
	tu_spawn(&c, as_nobody_acquire, p);
	ck_assert_int_eq(tu_join(&c), 0);
	ck_assert_ptr_nonnull(strstr(tu_read(p), "lock=flock,ofd\n"));
	/* No file and no way to create one: the creation error. */
	ck_assert_int_eq(unlink(p), 0);
	tu_spawn(&c, as_nobody_acquire, p);
	ck_assert_int_eq(tu_join(&c), 10 + EACCES);
}
END_TEST

/* Setters validate; tags are cleaned. */
START_TEST(setters)
{
	struct pidlock *l = tu_new(tu_path("a.lock"), 0);

	ck_assert_int_eq(pidlock_set_mode(l, 0600), 0);
	ck_assert_int_eq(pidlock_set_mode(l, 04644), -EINVAL);
	ck_assert_int_eq(pidlock_set_stale_timeout(l, 0), -EINVAL);
	ck_assert_int_eq(pidlock_set_retry_interval(l, 0), -EINVAL);
	ck_assert_int_eq(pidlock_set_tag(l, "a\nb"), 0);
	ck_assert_int_eq(pidlock_set_tag(NULL, "x"), -EINVAL);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_ptr_nonnull(strstr(tu_read(tu_path("a.lock")), "\ntag=a?b\n"));
	ck_assert_str_eq(pidlock_path(l), tu_path("a.lock"));
	{
		struct stat st;
		ck_assert_int_eq(stat(tu_path("a.lock"), &st), 0);
		ck_assert_int_eq(st.st_mode & 0777, 0600);
	}
	pidlock_free(l);
	ck_assert_str_eq(pidlock_state_name(PIDLOCK_STATE_HELD_SPEC), "held-spec");
	ck_assert_ptr_null(pidlock_state_name((enum pidlock_state)99));
}
END_TEST

START_TEST(inspect_states)
{
	const char *p = tu_path("a.lock");
	struct pidlock_info info;
	struct pidlock *l = tu_new(p, 0);

	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_FREE);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD);
	ck_assert_uint_eq(info.kernel_locks, PIDLOCK_KIND_FLOCK | PIDLOCK_KIND_OFD);
	ck_assert_int_eq(info.kernel_pid, getpid());
	ck_assert_int_eq(info.pid_alive, 1);
	ck_assert(info.has_timestamp);
	/* Inspect never takes the lock: we still hold it, nobody else can. */
	ck_assert_int_eq(pidlock_verify(l), 0);
	pidlock_free(l);
	ck_assert_int_eq(symlink("x", p), 0);
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), -ELOOP);
	ck_assert_int_eq(pidlock_inspect("/nonexistent-dir/x.lock", &info, 0),
			 -ENOENT);
}
END_TEST

/* No descriptor leaks over many cycles, busy tries and failures. */
START_TEST(no_fd_leak)
{
	const char *p = tu_path("a.lock");
	struct pidlock *a = tu_new(p, PIDLOCK_NO_SYNC), *b = tu_new(p, PIDLOCK_NO_SYNC);
	int before = tu_count_fds();

	for (int i = 0; i < 200; i++) {
		ck_assert_int_eq(pidlock_acquire(a, 0), 0);
		ck_assert_int_eq(pidlock_acquire(b, 0), -EWOULDBLOCK);
		ck_assert_int_eq(pidlock_acquire(b, 1), -ETIMEDOUT);
		ck_assert_int_eq(pidlock_release(a), 0);
	}
	ck_assert_int_eq(tu_count_fds(), before);
	pidlock_free(a);
	pidlock_free(b);
}
END_TEST

/*
 * A record names the kernel that wrote it (boot=, and host= for people).
 * Written under another kernel (another host of a shared file system),
 * its pid is judged nowhere here: a pid that runs here is somebody
 * else.  The same record with this kernel's boot id is judged as ever.
 */
#define OTHER_BOOT "00000000-1111-4222-8333-444444444444"

static void write_record_from(const char *p, pid_t pid, long age,
			      const char *boot, bool marker)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "pid=%ld\ntimestamp=%ld\n%s"
		 "host=elsewhere.example\nboot=%s\n", (long)pid,
		 (long)time(NULL) - age, marker ? "lock=flock,ofd\n" : "",
		 boot);
	tu_write(p, buf);
}

static struct pidlock_info inspected(const char *p)
{
	struct pidlock_info info;

	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	return info;
}

TU_LOCK_TEST(foreign_record_not_judged_here, 0)
{
	char host[PIDLOCK_HOST_MAX + 1];
	struct pidlock_info info;
	pid_t live;

	if (!tu_boot_id()[0]) {
		fprintf(stderr, "SKIP foreign_record_not_judged_here: no boot id\n");
		return;
	}
	live = fork();
	ck_assert_int_ge(live, 0);
	if (live == 0) {
		pause();
		_exit(0);
	}
	/* Spec-only and past the stale timeout: its pid runs here, so held;
	 * from another kernel, its age alone decides (rule B). */
	write_record_from(p, live, 7200, tu_boot_id(), false);
	info = inspected(p);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD_SPEC);
	ck_assert_int_eq(info.pid_alive, 1);
	ck_assert_int_eq(info.foreign, 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	write_record_from(p, live, 7200, OTHER_BOOT, false);
	info = inspected(p);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_STALE);
	ck_assert_int_eq(info.pid_alive, -1);
	ck_assert_int_eq(info.foreign, 1);
	ck_assert_int_eq(pidlock_record_host(p, host, sizeof(host)), 1);
	ck_assert_str_eq(host, "elsewhere.example");
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	/* Not yet stale: held, whoever wrote it. */
	write_record_from(p, live, 10, OTHER_BOOT, false);
	ck_assert_int_eq(inspected(p).state, PIDLOCK_STATE_HELD_SPEC);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	/* Our marker and no kernel lock: abandoned, and the pid that runs
	 * here is not called its holder. */
	write_record_from(p, live, 10, OTHER_BOOT, true);
	info = inspected(p);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_ABANDONED);
	ck_assert_int_eq(info.pid_alive, -1);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	/* Our own record names this host and kernel. */
	ck_assert_int_eq(pidlock_record_host(p, host, sizeof(host)), 0);
	ck_assert_str_eq(host, tu_host_name());
	info = inspected(p);
	ck_assert_int_eq(info.foreign, 0);
	ck_assert_int_eq(info.pid_alive, 1);
	ck_assert_int_eq(pidlock_release(l), 0);
	/* Its errors. */
	ck_assert_int_eq(pidlock_record_host(p, host, sizeof(host)), -ENOENT);
	ck_assert_int_eq(pidlock_record_host(p, NULL, 1), -EINVAL);
	ck_assert_int_eq(pidlock_record_host(p, host, 0), -EINVAL);
	tu_write(p, "precious=data\n");
	ck_assert_int_eq(pidlock_record_host(p, host, sizeof(host)), -EBADMSG);
	ck_assert_str_eq(tu_read(p), "precious=data\n");
	ck_assert_int_eq(kill(live, SIGKILL), 0);
	ck_assert_int_eq(waitpid(live, NULL, 0), live);
}

/*
 * A record names the pid namespace it was written in (pidns=).  Read in
 * another one, its pid is somebody else's number: not judged (a
 * container's holder seen from the host is not the host's pid 1), and a
 * spec-only record's age alone decides, as for another kernel's.  The
 * same record naming our namespace, or none, is judged as ever.
 */
static void write_record_in(const char *p, pid_t pid, long age,
			    const char *pidns)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "pid=%ld\ntimestamp=%ld\nboot=%s\n%s%s%s",
		 (long)pid, (long)time(NULL) - age, tu_boot_id(),
		 pidns ? "pidns=" : "", pidns ? pidns : "", pidns ? "\n" : "");
	tu_write(p, buf);
}

TU_LOCK_TEST(other_pidns_record_not_judged, 0)
{
	char other[32];
	struct pidlock_info info;
	pid_t live;

	if (!tu_boot_id()[0] || !tu_pidns()[0]) {
		fprintf(stderr, "SKIP other_pidns_record_not_judged: no /proc\n");
		return;
	}
	/* Not ours: nsfs numbers are 32 bits, ours plus one is another's
	 * or nobody's. */
	snprintf(other, sizeof(other), "%llu",
		 strtoull(tu_pidns(), NULL, 10) + 1);
	live = fork();
	ck_assert_int_ge(live, 0);
	if (live == 0) {
		pause();
		_exit(0);
	}
	write_record_in(p, live, 7200, tu_pidns());
	info = inspected(p);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD_SPEC);
	ck_assert_int_eq(info.pid_alive, 1);
	write_record_in(p, live, 7200, NULL);
	ck_assert_int_eq(inspected(p).pid_alive, 1);
	write_record_in(p, live, 10, other);
	info = inspected(p);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD_SPEC);
	ck_assert_int_eq(info.pid, live);
	ck_assert_int_eq(info.pid_alive, -1);
	ck_assert_int_eq(info.foreign, 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	write_record_in(p, live, 7200, other);
	ck_assert_int_eq(inspected(p).state, PIDLOCK_STATE_STALE);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	/* Our own record names our namespace, and is judged. */
	ck_assert(strstr(tu_read(p), "\npidns=") != NULL);
	info = inspected(p);
	ck_assert_int_eq(info.pid_alive, 1);
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert_int_eq(kill(live, SIGKILL), 0);
	ck_assert_int_eq(waitpid(live, NULL, 0), live);
}

int main(void)
{
	const struct tu_case cases[] = {
		{ acquire_writes_record, 1 },
		{ plain_pid_first_line, 1 },
		{ two_handles_one_process, 1 },
		{ flock_holder_excludes, 1 },
		{ fcntl_holder_excludes, 1 },
		{ we_exclude_both_families, 1 },
		{ kind_flags, 1 },
		{ mixed_flags_exclude, 1 },
		{ sigkill_holder_next_gets_it_at_once, 1 },
		{ fd_writes_survive_sigkill, 1 },
		{ fd_writes_kept_while_held, 1 },
		{ fd_writes_kept_by_shared_joiner, 1 },
		{ fd_given_in_child_parent_writes_at_record, 1 },
		{ fd_writes_on_overlay, 1 },
		{ mode_exact_whatever_umask, 1 },
		{ spec_holder_rules, 1 },
		{ grace_waits_for_spec_writer, 1 },
		{ grace_then_takeover, 1 },
		{ live_pidfile_held, 1 },
		{ reused_pid_taken_over, 1 },
		{ pidfile_boot_and_self, 1 },
		{ foreign_record_not_judged_here, 1 },
		{ other_pidns_record_not_judged, 1 },
		{ inode_check_after_unlink, 1 },
		{ fork_release_pid_check, 1 },
		{ daemonize_flow, 1 },
		{ broken_lock_reported, 1 },
		{ refresh_in_place, 1 },
		{ takeover_pads_old_length, 1 },
		{ keep_file_mode, 1 },
		{ timestamp_is_acquisition_time, 1 },
		{ symlink_refused, 1 },
		{ non_regular_refused, 1 },
		{ existing_file_in_readonly_dir, 1 },
		{ setters, 1 },
		{ inspect_states, 1 },
		{ no_fd_leak, 1 },
		{ NULL, 0 },
	};

	tu_run_cases("lock", "protocol", 20, cases);
}
