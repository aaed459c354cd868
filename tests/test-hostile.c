/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Hostile paths, files and users.  Every case checks three things
 * besides its error code: the call returns (a Check timeout catches a
 * block), no descriptor is left open (counted around each test by the
 * fixture), and nothing on disk changed (a snapshot of the scratch
 * directory, and of any symlink target, before and after).
 *
 * Cases tagged "unprivileged" are run again as nobody by
 * test-hostile-nobody.sh when the suite runs as root, because root
 * passes every permission check.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pidlock.h"
#include "testutil.h"

/* A uid nobody on the system should have: the "other user". */
#define FOREIGN_UID 4242
#define NOBODY_UID 65534

static char *dir;	/* per test, inside tu_base() */
static int fds_before;
static char mnt[PATH_MAX];

static void setup(void)
{
	dir = tu_mkdtemp(tu_base(), "case");
	fds_before = tu_count_fds();
}

static void teardown(void)
{
	ck_assert_int_eq(tu_count_fds(), fds_before);
	ck_assert_msg(!tu_has_temp(dir), "a temp file was left in %s", dir);
	tu_rmtree(dir);
	free(dir);
}

/* dir/name in a buffer of the caller's. */
static char *in_dir(char *buf, const char *name)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);

	ck_assert(n > 0 && n < PATH_MAX);
	return buf;
}

/* a/b in buf (PATH_MAX bytes). */
static char *join(char *buf, const char *a, const char *b)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", a, b);

	ck_assert(n > 0 && n < PATH_MAX);
	return buf;
}

/* Root for real: fakeroot(1) says uid 0 but can neither mount nor
 * give files away, nor become another user. */
static bool is_root(void)
{
	return geteuid() == 0 && !getenv("FAKEROOTKEY");
}

/* Does the kernel let us past file permissions (CAP_DAC_OVERRIDE)?
 * Asked of the kernel itself, since fakeroot(1) fakes the uid. */
static bool passes_permissions(void)
{
	char probe[PATH_MAX];
	int fd;

	tu_write_file(in_dir(probe, ".probe"), "", 0, 0000);
	fd = open(probe, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	ck_assert_int_eq(unlink(probe), 0);
	return fd >= 0;
}

static void skip(const char *why)
{
	(void)fprintf(stderr, "SKIP %s\n", why);
}

/* A record left by a libpidlock holder that is gone: free to take. */
static void write_abandoned(const char *path, mode_t mode)
{
	char rec[128];
	int n = snprintf(rec, sizeof(rec), "pid=%d\ntimestamp=%lld\n"
			 "lock=flock,ofd\n", (int)tu_dead_pid(),
			 (long long)tu_now());

	tu_write_file(path, rec, (size_t)n, mode);
}

static const unsigned int flag_sets[] = {
	0,
	PIDLOCK_FLOCK_ONLY | PIDLOCK_NO_SYNC,
	PIDLOCK_OFD_ONLY | PIDLOCK_NO_SYNC,
	PIDLOCK_KEEP_FILE | PIDLOCK_PLAIN_PID | PIDLOCK_NO_SYNC,
};
/* try once, timed, and forever: none may wait on a hostile path. */
static const int timeouts[] = { 0, 50, -1 };

static void acquire_all(const char *path, int err)
{
	for (size_t f = 0; f < sizeof(flag_sets) / sizeof(flag_sets[0]); f++) {
		for (size_t t = 0; t < sizeof(timeouts) / sizeof(timeouts[0]);
		     t++) {
			struct pidlock *lock;
			int r;

			ck_assert_int_eq(pidlock_new(&lock, path, flag_sets[f]), 0);
			r = pidlock_acquire(lock, timeouts[t]);
			ck_assert_msg(r == err,
				      "%s: acquire(%d) flags %#x gave %d (%s), want %d (%s)",
				      path, timeouts[t], flag_sets[f], r,
				      strerror(-r), err, strerror(-err));
			ck_assert_int_eq(pidlock_fd(lock), -ENOLCK);
			pidlock_free(lock);
		}
	}
}

/* Any event: the file was opened, read, written or changed. */
#define NEVER_OPENED IN_ALL_EVENTS
/* Opened (and locked) to be looked at, but never changed. */
#define NEVER_CHANGED (IN_MODIFY | IN_ATTRIB | IN_MOVE_SELF | IN_DELETE_SELF)

/*
 * inotify on what is at path (not followed), and for a symlink on what
 * it leads to, unless that is under /dev where others open it too.
 */
static int watch_start(const char *path, uint32_t mask)
{
	int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	char *target;

	ck_assert_int_ge(ifd, 0);
	/* Fails if nothing is there (missing parent...): nothing to see. */
	(void)inotify_add_watch(ifd, path, mask | IN_DONT_FOLLOW);
	target = realpath(path, NULL);
	if (target && strncmp(target, "/dev/", 5) != 0)
		(void)inotify_add_watch(ifd, target, mask);
	free(target);
	return ifd;
}

static void watch_end(int ifd, const char *what)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	const struct inotify_event *ev = (const void *)buf;
	ssize_t n = read(ifd, buf, sizeof(buf));

	ck_assert_msg(n < 0 && errno == EAGAIN,
		      "%s: opened or changed (inotify mask %#x)", what,
		      n > 0 ? ev->mask : 0);
	ck_assert_int_eq(close(ifd), 0);
}

/*
 * The core check: every acquire variant fails with `err`, inspect
 * returns `inspect_err`, and neither `dir` nor `extra` (a second
 * tree, e.g. outside a symlink, may be NULL) changed.  Unless
 * `may_open`, acquire never even opens what is at the path (a FIFO,
 * a device, a symlink's target); inspect opens only what it reads.
 */
static void expect_refusal_in(const char *path, int err, int inspect_err,
			      const char *extra, bool may_open)
{
	char *before = tu_snapshot(dir);
	char *xbefore = extra ? tu_snapshot(extra) : NULL;
	struct pidlock_info info;
	int fds = tu_count_fds();
	int ifd, r;

	ifd = watch_start(path, may_open ? NEVER_CHANGED : NEVER_OPENED);
	acquire_all(path, err);
	watch_end(ifd, "acquire");
	ifd = watch_start(path, inspect_err ? NEVER_OPENED : NEVER_CHANGED);
	r = pidlock_inspect(path, &info, 0);
	watch_end(ifd, "inspect");
	ck_assert_msg(r == inspect_err, "%s: inspect gave %d (%s), want %d",
		      path, r, strerror(-r), inspect_err);
	ck_assert_int_eq(tu_count_fds(), fds);
	tu_assert_unchanged(dir, before, path);
	if (extra)
		tu_assert_unchanged(extra, xbefore, path);
}

static void expect_refusal(const char *path, int err, int inspect_err)
{
	expect_refusal_in(path, err, inspect_err, NULL, false);
}

/* Take, check it is ours, release: the positive controls. */
static void expect_taken(const char *path)
{
	struct pidlock *lock;
	int r;

	ck_assert_int_eq(pidlock_new(&lock, path, 0), 0);
	r = pidlock_acquire(lock, 0);
	ck_assert_msg(r == 0, "%s: acquire gave %d (%s)", path, r, strerror(-r));
	ck_assert_int_eq(pidlock_verify(lock), 0);
	ck_assert_int_eq(pidlock_release(lock), 0);
	pidlock_free(lock);
	ck_assert_int_eq(access(path, F_OK), -1);
}

/* --- paths --------------------------------------------------------- */

START_TEST(test_empty_and_null)
{
	struct pidlock *lock = (void *)1;
	struct pidlock_info info;

	ck_assert_int_eq(pidlock_new(&lock, "", 0), -EINVAL);
	ck_assert_ptr_null(lock);
	ck_assert_int_eq(pidlock_new(&lock, NULL, 0), -EINVAL);
	ck_assert_int_eq(pidlock_new(NULL, "x", 0), -EINVAL);
	ck_assert_int_eq(pidlock_inspect("", &info, 0), -EINVAL);
	ck_assert_int_eq(pidlock_inspect(NULL, &info, 0), -EINVAL);
	ck_assert_int_eq(pidlock_inspect("x", NULL, 0), -EINVAL);
	ck_assert_int_eq(pidlock_acquire(NULL, 0), -EINVAL);
}
END_TEST

/* A lock is a file: anything that can only name a directory is refused
 * up front, whatever exists on disk. */
START_TEST(test_trailing_slash)
{
	char buf[PATH_MAX], file[PATH_MAX];
	const char *names[] = { "", "lock/", "file/", "sub/", ".", "..",
				"sub/.", "sub/..", "sub//" };
	struct pidlock_info info;
	struct pidlock *lock;
	char *before;

	ck_assert_int_eq(mkdir(in_dir(buf, "sub"), 0700), 0);
	write_abandoned(in_dir(file, "file"), 0644);
	before = tu_snapshot(dir);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		tu_fmt(buf, sizeof(buf), "%s/%s", dir, names[i]);
		ck_assert_msg(pidlock_new(&lock, buf, 0) == -EISDIR, "%s", buf);
		ck_assert_msg(pidlock_inspect(buf, &info, 0) == -EISDIR, "%s",
			      buf);
	}
	ck_assert_int_eq(pidlock_new(&lock, "/", 0), -EISDIR);
	ck_assert_int_eq(pidlock_new(&lock, "//", 0), -EISDIR);
	ck_assert_int_eq(pidlock_new(&lock, ".", 0), -EISDIR);
	ck_assert_int_eq(pidlock_new(&lock, "..", 0), -EISDIR);
	tu_assert_unchanged(dir, before, "trailing slash");
}
END_TEST

START_TEST(test_long_names)
{
	char name[NAME_MAX + 2];
	char buf[PATH_MAX + 16];
	char *path = malloc(PATH_MAX + 1);
	struct pidlock_info info;
	struct pidlock *lock;
	size_t n;

	ck_assert_ptr_nonnull(path);
	/* A whole path of PATH_MAX bytes: no room for the NUL. */
	n = (size_t)snprintf(path, PATH_MAX + 1, "%s/", dir);
	for (; n < PATH_MAX; n++)
		path[n] = (n % 200) ? 'p' : '/';
	path[PATH_MAX] = '\0';
	ck_assert_int_eq(pidlock_new(&lock, path, 0), -ENAMETOOLONG);
	ck_assert_int_eq(pidlock_inspect(path, &info, 0), -ENAMETOOLONG);
	free(path);

	/* A last component of NAME_MAX + 1 bytes. */
	memset(name, 'n', NAME_MAX + 1);
	name[NAME_MAX + 1] = '\0';
	tu_fmt(buf, sizeof(buf), "%s/%s", dir, name);
	ck_assert_int_eq(pidlock_new(&lock, buf, 0), -ENAMETOOLONG);
	ck_assert_int_eq(pidlock_inspect(buf, &info, 0), -ENAMETOOLONG);

	/* Too long a directory component: only the kernel can tell. */
	tu_fmt(buf, sizeof(buf), "%s/%s/lock", dir, name);
	expect_refusal(buf, -ENAMETOOLONG, -ENAMETOOLONG);

	/* NAME_MAX itself is fine: the limit is the kernel's, not less. */
	name[NAME_MAX] = '\0';
	tu_fmt(buf, sizeof(buf), "%s/%s", dir, name);
	expect_taken(buf);
}
END_TEST

START_TEST(test_missing_parent)
{
	char buf[PATH_MAX];

	/* Not "free": no lock file can be made there. */
	in_dir(buf, "nope/lock");
	expect_refusal(buf, -ENOENT, -ENOENT);
	ck_assert_int_eq(access(in_dir(buf, "nope"), F_OK), -1);
}
END_TEST

START_TEST(test_parent_not_dir)
{
	char buf[PATH_MAX];

	write_abandoned(in_dir(buf, "file"), 0644);
	in_dir(buf, "file/lock");
	expect_refusal(buf, -ENOTDIR, -ENOTDIR);
}
END_TEST

/* --- symbolic and hard links -------------------------------------- */

/* A symlink is refused whatever it points at, and its target is never
 * opened for writing, created, truncated or locked. */
static void symlink_case(const char *target, const char *extra)
{
	char buf[PATH_MAX];

	ck_assert_int_eq(symlink(target, in_dir(buf, "lock")), 0);
	expect_refusal_in(buf, -ELOOP, -ELOOP, extra, false);
}

START_TEST(test_symlink_to_record)
{
	char target[PATH_MAX];

	/* The tempting case: the target holds a record free for taking. */
	write_abandoned(in_dir(target, "record"), 0644);
	symlink_case(target, NULL);
}
END_TEST

START_TEST(test_symlink_to_outside_file)
{
	char *other = tu_mkdtemp(tu_base(), "victim");
	char target[PATH_MAX];
	static const char data[] = "precious data, not a lock\n";

	join(target, other, "victim");
	tu_write_file(target, data, sizeof(data) - 1, 0644);
	symlink_case(target, other);
	tu_rmtree(other);
	free(other);
}
END_TEST

START_TEST(test_symlink_dangling)
{
	char target[PATH_MAX];

	symlink_case(in_dir(target, "not-there"), NULL);
	ck_assert_int_eq(access(target, F_OK), -1);
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

START_TEST(test_symlink_to_dir)
{
	char target[PATH_MAX];

	ck_assert_int_eq(mkdir(in_dir(target, "sub"), 0700), 0);
	symlink_case(target, NULL);
}
END_TEST

START_TEST(test_symlink_to_dev_null)
{
	struct stat st;

	symlink_case("/dev/null", NULL);
	ck_assert_int_eq(stat("/dev/null", &st), 0);
	ck_assert(S_ISCHR(st.st_mode));
}
END_TEST

START_TEST(test_symlink_chain_and_loop)
{
	char a[PATH_MAX], b[PATH_MAX], rec[PATH_MAX];

	write_abandoned(in_dir(rec, "record"), 0644);
	ck_assert_int_eq(symlink(rec, in_dir(b, "b")), 0);
	ck_assert_int_eq(symlink(b, in_dir(a, "a")), 0);
	expect_refusal(a, -ELOOP, -ELOOP);
	ck_assert_int_eq(symlink("self", in_dir(a, "self")), 0);
	expect_refusal(a, -ELOOP, -ELOOP);
}
END_TEST

/* Only the last component must not be a link: a symlinked directory
 * is an ordinary path (protected by fs.protected_symlinks in /tmp). */
START_TEST(test_symlink_parent_followed)
{
	char real[PATH_MAX], link[PATH_MAX], path[PATH_MAX];
	struct stat st;

	ck_assert_int_eq(mkdir(in_dir(real, "real"), 0700), 0);
	ck_assert_int_eq(symlink(real, in_dir(link, "link")), 0);
	join(path, link, "lock");
	expect_taken(path);
	ck_assert_int_eq(lstat(link, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
}
END_TEST

/* A second name may be a planted link to somebody else's file. */
START_TEST(test_hard_link_plain_file)
{
	char a[PATH_MAX], b[PATH_MAX];
	static const char data[] = "somebody's data\n";
	struct pidlock_info info;

	tu_write_file(in_dir(a, "data"), data, sizeof(data) - 1, 0644);
	ck_assert_int_eq(link(a, in_dir(b, "lock")), 0);
	tu_set_mtime(b, tu_now() - 60);
	/* Opened and read (a marker would allow a repair), not written. */
	expect_refusal_in(b, -EMLINK, 0, NULL, true);
	/* inspect only reads: it reports the content, which is nobody's
	 * lock record, and leaves the refusal to acquire. */
	ck_assert_int_eq(pidlock_inspect(b, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_NOT_LOCK_FILE);
}
END_TEST

START_TEST(test_hard_link_record)
{
	char a[PATH_MAX], b[PATH_MAX];

	write_abandoned(in_dir(a, "other-name"), 0644);
	ck_assert_int_eq(link(a, in_dir(b, "lock")), 0);
	expect_refusal_in(b, -EMLINK, 0, NULL, true);
}
END_TEST

/* The one extra link the library removes: its own temp name, left by a
 * publisher that died between link() and unlink().  Repaired, not
 * refused forever; the marker says whose it is, even where the pid in
 * the record is alive (row 1: pid 1). */
START_TEST(test_hard_link_own_temp_repaired)
{
	static const char live_pid[] = "pid=1\ntimestamp=1\nlock=flock,ofd\n";
	char a[PATH_MAX], b[PATH_MAX];

	in_dir(a, PIDLOCK_TMP_PREFIX "1-2-3");
	if (_i == 0)
		write_abandoned(a, 0644);
	else
		tu_write_file(a, live_pid, sizeof(live_pid) - 1, 0644);
	ck_assert_int_eq(link(a, in_dir(b, "lock")), 0);
	expect_taken(b);
	ck_assert_int_eq(access(a, F_OK), -1);
}
END_TEST

/* --- file types ---------------------------------------------------- */

START_TEST(test_fifo)
{
	char buf[PATH_MAX];

	ck_assert_int_eq(mkfifo(in_dir(buf, "lock"), 0666), 0);
	expect_refusal(buf, -EINVAL, -EINVAL);
}
END_TEST

START_TEST(test_socket)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[PATH_MAX];
	int s;

	in_dir(buf, "lock");
	if (strlen(buf) >= sizeof(sa.sun_path)) {
		skip("socket: $TMPDIR too long for a socket path");
		return;
	}
	memcpy(sa.sun_path, buf, strlen(buf) + 1);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s, 0);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(close(s), 0);
	expect_refusal(buf, -EINVAL, -EINVAL);
}
END_TEST

START_TEST(test_directory)
{
	char buf[PATH_MAX], sub[PATH_MAX];

	ck_assert_int_eq(mkdir(in_dir(buf, "lock"), 0700), 0);
	write_abandoned(in_dir(sub, "lock/inside"), 0644);
	expect_refusal(buf, -EISDIR, -EISDIR);
}
END_TEST

START_TEST(test_devices)
{
	char buf[PATH_MAX];
	struct pidlock_info info;

	/* Anybody can point inspect at a device; it must not open it. */
	ck_assert_int_eq(pidlock_inspect("/dev/null", &info, 0), -EINVAL);
	ck_assert_int_eq(pidlock_inspect("/dev/zero", &info, 0), -EINVAL);
	if (!is_root()) {
		skip("devices: mknod needs root; acquire on a device untested");
		return;
	}
	ck_assert_int_eq(mknod(in_dir(buf, "null"), S_IFCHR | 0666,
			       makedev(1, 3)), 0);
	expect_refusal(buf, -EINVAL, -EINVAL);
	/* A block device node is never opened either (loop0 or not). */
	ck_assert_int_eq(mknod(in_dir(buf, "blk"), S_IFBLK | 0600,
			       makedev(7, 0)), 0);
	expect_refusal(buf, -EINVAL, -EINVAL);
}
END_TEST

/* --- permissions ------------------------------------------------------ */

/*
 * Root passes the permission checks these cases are about, so as root
 * they check the root outcome (an abandoned record is taken over) and
 * test-hostile-nobody.sh checks the refusals as nobody.
 */
static const struct perm_case {
	const char *name;
	mode_t dir_mode;	/* of a directory "sub" the file is in; 0: none */
	bool has_file;		/* an abandoned record at the path */
	mode_t file_mode;
	int inspect_err;	/* acquire always fails with -EACCES */
	enum pidlock_state state;	/* what inspect says, if it may */
	int error;			/* info.error */
	unsigned int marker;		/* info.marker */
} perm_cases[] = {
	{ "no permission", 0, true, 0000, 0, PIDLOCK_STATE_UNREADABLE,
	  EACCES, 0 },
	/* Readable, so inspect sees the record. */
	{ "read-only file", 0, true, 0444, 0, PIDLOCK_STATE_ABANDONED, 0,
	  PIDLOCK_KIND_FLOCK | PIDLOCK_KIND_OFD },
	{ "write-only file", 0, true, 0200, 0, PIDLOCK_STATE_UNREADABLE,
	  EACCES, 0 },
	{ "read-only dir", 0555, false, 0, 0, PIDLOCK_STATE_FREE, 0, 0 },
	{ "dir not searchable", 0600, true, 0644, -EACCES, 0, 0, 0 },
};

/* The path of a permission case, its file and directory made. */
static void perm_path(const struct perm_case *pc, char *buf)
{
	char sub[PATH_MAX];

	if (pc->dir_mode)
		ck_assert_int_eq(mkdir(in_dir(sub, "sub"), 0700), 0);
	in_dir(buf, pc->dir_mode ? "sub/lock" : "lock");
	if (pc->has_file)
		write_abandoned(buf, pc->file_mode);
	if (pc->dir_mode)
		ck_assert_int_eq(chmod(sub, pc->dir_mode), 0);
}

START_TEST(test_permission)
{
	const struct perm_case *pc = &perm_cases[_i];
	char buf[PATH_MAX];
	struct pidlock_info info;

	perm_path(pc, buf);
	if (passes_permissions()) {
		expect_taken(buf);
		return;
	}
	expect_refusal(buf, -EACCES, pc->inspect_err);
	if (pc->inspect_err)
		return;
	ck_assert_int_eq(pidlock_inspect(buf, &info, 0), 0);
	ck_assert_msg(info.state == pc->state, "%s: inspect says %s",
		      pc->name, pidlock_state_name(info.state));
	ck_assert_int_eq(info.error, pc->error);
	ck_assert_uint_eq(info.marker, pc->marker);
}
END_TEST

/*
 * A writable left-over file in a directory we cannot write is taken
 * over in place; release then cannot remove it (-EACCES) and leaves it
 * abandoned, unless PIDLOCK_KEEP_FILE says not to try.
 */
START_TEST(test_read_only_dir_with_record)
{
	char sub[PATH_MAX], buf[PATH_MAX];
	struct pidlock_info info;
	struct pidlock *lock;

	ck_assert_int_eq(mkdir(in_dir(sub, "ro"), 0700), 0);
	write_abandoned(in_dir(buf, "ro/lock"), 0644);
	ck_assert_int_eq(chmod(sub, 0555), 0);
	if (passes_permissions()) {
		expect_taken(buf);
		return;
	}
	ck_assert_int_eq(pidlock_new(&lock, buf, 0), 0);
	ck_assert_int_eq(pidlock_acquire(lock, 0), 0);
	ck_assert_int_eq(pidlock_release(lock), -EACCES);
	pidlock_free(lock);
	ck_assert_int_eq(pidlock_inspect(buf, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_ABANDONED);
	ck_assert_int_eq(info.pid, getpid());
	ck_assert_int_eq(pidlock_new(&lock, buf, PIDLOCK_KEEP_FILE), 0);
	ck_assert_int_eq(pidlock_acquire(lock, 0), 0);
	ck_assert_int_eq(pidlock_release(lock), 0);
	pidlock_free(lock);
}
END_TEST

/* Anybody may delete or replace a file in a world-writable directory
 * without the sticky bit: no lock can be kept there, so refuse. */
START_TEST(test_world_writable_no_sticky)
{
	char sub[PATH_MAX], buf[PATH_MAX], other[PATH_MAX];
	struct pidlock_info info;

	ck_assert_int_eq(mkdir(in_dir(sub, "ww"), 0700), 0);
	ck_assert_int_eq(chmod(sub, 0777), 0);
	in_dir(buf, "ww/lock");
	expect_refusal(buf, -EPERM, 0);
	ck_assert_int_eq(pidlock_inspect(buf, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_FREE);
	write_abandoned(in_dir(other, "ww/held"), 0644);
	expect_refusal(other, -EPERM, 0);
	/* The sticky bit is what makes the same directory acceptable. */
	ck_assert_int_eq(chmod(sub, 01777), 0);
	expect_taken(buf);
}
END_TEST

/* A file in a sticky world-writable directory owned by neither us nor
 * the directory's owner was planted: never write into it. */
static void foreign_case(const char *sticky, const char *path,
			 enum pidlock_state state)
{
	char mine[PATH_MAX];
	struct pidlock_info info;
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_ne(st.st_uid, geteuid());
	/* Opened and looked at (fstat), never locked or written. */
	expect_refusal_in(path, -EPERM, 0, sticky, true);
	ck_assert_int_eq(pidlock_inspect(path, &info, 0), 0);
	ck_assert_int_eq(info.state, state);
	/* Our own name in the same directory works. */
	tu_fmt(mine, sizeof(mine), "%s/mine-%d", sticky, (int)getpid());
	expect_taken(mine);
}

START_TEST(test_foreign_owner_sticky)
{
	const char *fixture = getenv("HOSTILE_FOREIGN_DIR");
	char buf[PATH_MAX];

	if (is_root()) {
		char sub[PATH_MAX];

		ck_assert_int_eq(mkdir(in_dir(sub, "sticky"), 0700), 0);
		ck_assert_int_eq(chmod(sub, 01777), 0);
		write_abandoned(in_dir(buf, "sticky/foreign"), 0666);
		ck_assert_int_eq(chown(buf, FOREIGN_UID, FOREIGN_UID), 0);
		foreign_case(sub, buf, PIDLOCK_STATE_ABANDONED);
		/* An empty file, as a released lock leaves: planted all
		 * the same. */
		tu_write_file(in_dir(buf, "sticky/empty"), "", 0, 0644);
		tu_set_mtime(buf, tu_now() - 100);
		ck_assert_int_eq(chown(buf, NOBODY_UID, NOBODY_UID), 0);
		foreign_case(sub, buf, PIDLOCK_STATE_FREE);
		return;
	}
	if (!fixture) {
		skip("foreign owner: needs root, or HOSTILE_FOREIGN_DIR from "
		     "test-hostile-nobody.sh");
		return;
	}
	join(buf, fixture, "foreign");
	foreign_case(fixture, buf, PIDLOCK_STATE_ABANDONED);
}
END_TEST

/* Outside sticky world-writable directories a foreign owner is fine:
 * only somebody trusted can have put the file there. */
START_TEST(test_foreign_owner_private_dir)
{
	char buf[PATH_MAX];

	if (!is_root()) {
		skip("foreign owner, private dir: chown needs root");
		return;
	}
	write_abandoned(in_dir(buf, "lock"), 0644);
	ck_assert_int_eq(chown(buf, FOREIGN_UID, FOREIGN_UID), 0);
	expect_taken(buf);
}
END_TEST

/* --- hostile users: the read-only denial of service -------------- */

/* A child that opens `path` read-only and takes `how` on it, then
 * waits to be killed.  Returns its pid once the lock is taken. */
enum { RO_FLOCK, RO_OFD_READ, RO_POSIX_READ };

static pid_t reader_holds(const char *path, int how)
{
	int p[2];
	char ok;
	pid_t pid;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		int r = -1;

		if (fd >= 0 && how == RO_FLOCK)
			r = flock(fd, LOCK_EX | LOCK_NB);
		else if (fd >= 0)
			r = fcntl(fd, how == RO_OFD_READ ? F_OFD_SETLK : F_SETLK,
				  &fl);
		if (r < 0)
			_exit(1);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], &ok, 1), 1);
	close(p[0]);
	return pid;
}

static void reap(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
}

/* Busy, and the blocker is named: whoever it is, it can be found. */
static void expect_busy(const char *path, unsigned int flags,
			unsigned int kernel, pid_t who)
{
	struct pidlock_info info;
	struct pidlock *lock;

	ck_assert_int_eq(pidlock_new(&lock, path, flags), 0);
	ck_assert_int_eq(pidlock_acquire(lock, 0), -EWOULDBLOCK);
	ck_assert_int_eq(pidlock_holder(lock, &info), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD);
	ck_assert_uint_eq(info.kernel_locks, kernel);
	ck_assert_int_eq(info.kernel_pid, who);
	pidlock_free(lock);
	ck_assert_int_eq(pidlock_inspect(path, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD);
	ck_assert_int_eq(info.kernel_pid, who);
}

/*
 * Neither kernel lock needs write access to block: flock(2) takes an
 * exclusive lock on a read-only descriptor, and a read lock (OFD or
 * POSIX) on one conflicts with the OFD write lock.  So whoever can
 * open the file can hold a left-over lock file forever; only the
 * file's mode or its directory keeps them out (doc/security.md).
 */
START_TEST(test_reader_blocks_leftover)
{
	char buf[PATH_MAX];
	char *before;
	pid_t pid;

	write_abandoned(in_dir(buf, "lock"), 0644);
	before = tu_snapshot(dir);

	pid = reader_holds(buf, RO_FLOCK);
	expect_busy(buf, 0, PIDLOCK_KIND_FLOCK, pid);
	expect_busy(buf, PIDLOCK_FLOCK_ONLY, PIDLOCK_KIND_FLOCK, pid);
	/* OFD-only mode tests for flock holders before a take-over too. */
	expect_busy(buf, PIDLOCK_OFD_ONLY, PIDLOCK_KIND_FLOCK, pid);
	reap(pid);

	/* An OFD lock belongs to no process: /proc/locks names none. */
	pid = reader_holds(buf, RO_OFD_READ);
	expect_busy(buf, 0, PIDLOCK_KIND_OFD, 0);
	expect_busy(buf, PIDLOCK_OFD_ONLY, PIDLOCK_KIND_OFD, 0);
	reap(pid);

	pid = reader_holds(buf, RO_POSIX_READ);
	expect_busy(buf, PIDLOCK_OFD_ONLY, PIDLOCK_KIND_OFD, pid);
	reap(pid);

	tu_assert_unchanged(dir, before, "read-only holders");
	/* Gone with its last descriptor: the record is free again. */
	expect_taken(buf);
}
END_TEST

/* What another user can do to a file of ours with this mode: 0 if it
 * can open it read-only and flock it, else the errno. */
static int other_user_flock(const char *path)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd;

		if (setgroups(0, NULL) < 0 ||
		    setresgid(NOBODY_UID, NOBODY_UID, NOBODY_UID) < 0 ||
		    setresuid(NOBODY_UID, NOBODY_UID, NOBODY_UID) < 0)
			_exit(100);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			_exit(errno);
		_exit(flock(fd, LOCK_EX | LOCK_NB) < 0 ? errno : 0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_ne(WEXITSTATUS(status), 100);
	return WEXITSTATUS(status);
}

/*
 * A lock shared between users (doc/protocol.md section 8): a file that
 * another user holds is busy, not "permission denied", to a caller that
 * may not lock it (it cannot write it, or it is another user's in a
 * sticky directory), and a wait takes the lock once the holder's release
 * removes the file, even with PIDLOCK_KEEP_IF_USED, which our wait must
 * not make keep it.  Nobody holding, such a file is refused.
 */
static void become_nobody(void)
{
	if (setgroups(0, NULL) < 0 ||
	    setresgid(NOBODY_UID, NOBODY_UID, NOBODY_UID) < 0 ||
	    setresuid(NOBODY_UID, NOBODY_UID, NOBODY_UID) < 0)
		_exit(100);
}

/* A holder of path in a child (as nobody if `nobody`), with
 * PIDLOCK_KEEP_IF_USED, that holds until a byte comes on *go (then
 * releases and exits 0).  Returns once it holds. */
static pid_t hold_as(const char *path, bool nobody, int *go)
{
	int up[2], down[2];
	char c;
	pid_t pid;

	ck_assert_int_eq(pipe2(up, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(down, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct pidlock *l;

		if (nobody)
			become_nobody();
		if (pidlock_new(&l, path, PIDLOCK_KEEP_IF_USED) < 0 ||
		    pidlock_acquire(l, 0) < 0)
			_exit(101);
		if (write(up[1], "h", 1) != 1 || read(down[0], &c, 1) != 1)
			_exit(102);
		_exit(pidlock_release(l) == 0 ? 0 : 103);
	}
	(void)close(up[1]);
	(void)close(down[0]);
	ck_assert_int_eq(read(up[0], &c, 1), 1);
	(void)close(up[0]);
	*go = down[1];
	return pid;
}

static void release_held(pid_t pid, int go)
{
	int st;

	ck_assert_int_eq(write(go, "g", 1), 1);
	(void)close(go);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "the holder: status %#x", st);
}

/* Root waits for nobody's file in a sticky directory; then nobody for
 * root's 0644 file, which it cannot write. */
START_TEST(test_other_users_file_busy_then_taken)
{
	char sub[PATH_MAX], buf[PATH_MAX];
	struct pidlock_info who;
	struct pidlock *lock;
	struct stat st;
	int go, status;
	pid_t holder, waiter;

	if (!is_root()) {
		skip("another user's hold: needs root to act as two users");
		return;
	}
	ck_assert_int_eq(chmod(dir, 0755), 0);
	ck_assert_int_eq(mkdir(in_dir(sub, "sticky"), 0700), 0);
	ck_assert_int_eq(chmod(sub, 01777), 0);
	join(buf, sub, "x.lock");

	holder = hold_as(buf, true, &go);
	ck_assert_int_eq(pidlock_new(&lock, buf, 0), 0);
	ck_assert_int_eq(pidlock_acquire(lock, 0), -EWOULDBLOCK);
	ck_assert_int_eq(pidlock_holder(lock, &who), 0);
	ck_assert_int_eq(who.pid, holder);
	ck_assert_int_eq(pidlock_acquire(lock, 300), -ETIMEDOUT);
	release_held(holder, go);
	ck_assert_int_eq(pidlock_acquire(lock, 5000), 0);
	ck_assert_int_eq(stat(buf, &st), 0);
	ck_assert_uint_eq(st.st_uid, 0);
	ck_assert_int_eq(pidlock_release(lock), 0);

	/* Root's file, mode 0644: nobody cannot write it. */
	holder = hold_as(buf, false, &go);
	waiter = fork();
	ck_assert_int_ge(waiter, 0);
	if (waiter == 0) {
		struct pidlock *l;

		become_nobody();
		if (pidlock_new(&l, buf, 0) < 0)
			_exit(110);
		if (pidlock_acquire(l, 0) != -EWOULDBLOCK)
			_exit(111);
		if (pidlock_acquire(l, 30000) != 0)
			_exit(112);
		if (stat(buf, &st) < 0 || st.st_uid != NOBODY_UID)
			_exit(113);
		_exit(pidlock_release(l) == 0 ? 0 : 114);
	}
	usleep(200000);		/* the waiter is waiting by now, or soon */
	release_held(holder, go);
	ck_assert_int_eq(waitpid(waiter, &status, 0), waiter);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "nobody's waiter: status %#x (110 + step)", status);

	/* Nobody holds root's kept file: nobody is refused, EACCES. */
	write_abandoned(buf, 0644);
	waiter = fork();
	ck_assert_int_ge(waiter, 0);
	if (waiter == 0) {
		struct pidlock *l;

		become_nobody();
		_exit(pidlock_new(&l, buf, 0) < 0 ? 120
		      : pidlock_acquire(l, 0) == -EACCES ? 0 : 121);
	}
	ck_assert_int_eq(waitpid(waiter, &status, 0), waiter);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "nobody on root's unheld file: status %#x", status);
	ck_assert_int_eq(unlink(buf), 0);
	pidlock_free(lock);
}
END_TEST

/* The defences: a 0600 file or a private directory keep other users
 * from even opening the file, so they cannot hold it. */
START_TEST(test_defence_mode_and_dir)
{
	char sub[PATH_MAX], buf[PATH_MAX];
	struct pidlock *lock;
	struct stat st;

	if (!is_root()) {
		skip("defences: need root to act as a second user");
		return;
	}
	/* mkdtemp made the scratch directory private: open it up. */
	ck_assert_int_eq(chmod(dir, 0755), 0);
	/* The default mode lets anybody in: that is the hole. */
	write_abandoned(in_dir(buf, "open"), 0644);
	ck_assert_int_eq(other_user_flock(buf), 0);

	ck_assert_int_eq(pidlock_new(&lock, in_dir(buf, "lock"), 0), 0);
	ck_assert_int_eq(pidlock_set_mode(lock, 0600), 0);
	ck_assert_int_eq(pidlock_acquire(lock, 0), 0);
	ck_assert_int_eq(stat(buf, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(pidlock_close(lock), 0);	/* leave it behind */
	ck_assert_int_eq(other_user_flock(buf), EACCES);
	ck_assert_int_eq(pidlock_acquire(lock, 0), 0);
	ck_assert_int_eq(pidlock_release(lock), 0);
	pidlock_free(lock);

	ck_assert_int_eq(mkdir(in_dir(sub, "private"), 0700), 0);
	write_abandoned(in_dir(buf, "private/lock"), 0644);
	ck_assert_int_eq(other_user_flock(buf), EACCES);
}
END_TEST

/* Whoever can write the directory can replace the lock file under a
 * holder.  The holder finds out, and never deletes the new file. */
START_TEST(test_dir_writer_replaces_file)
{
	char buf[PATH_MAX], side[PATH_MAX];
	struct pidlock *lock;
	char *before;

	ck_assert_int_eq(pidlock_new(&lock, in_dir(buf, "lock"), 0), 0);
	ck_assert_int_eq(pidlock_acquire(lock, 0), 0);
	write_abandoned(in_dir(side, "side"), 0644);
	ck_assert_int_eq(rename(side, buf), 0);
	before = tu_snapshot(dir);
	ck_assert_int_eq(pidlock_verify(lock), -ESTALE);
	ck_assert_int_eq(pidlock_refresh(lock), -ESTALE);
	ck_assert_int_eq(pidlock_release(lock), -ESTALE);
	tu_assert_unchanged(dir, before, "release after replace");
	pidlock_free(lock);
}
END_TEST

/* --- full and read-only file systems (root) ------------------------ */

/* A tmpfs of our own, in a mount namespace that dies with this test. */
static bool mount_tmpfs(const char *opts)
{
	const char *fork_mode = getenv("CK_FORK");

	if (!is_root()) {
		skip("EROFS/ENOSPC: mounting a small tmpfs needs root");
		return false;
	}
	if (fork_mode && strcmp(fork_mode, "no") == 0) {
		skip("EROFS/ENOSPC: needs CK_FORK so the mount stays private");
		return false;
	}
	if (unshare(CLONE_NEWNS) < 0) {
		/* A container's root may lack CAP_SYS_ADMIN. */
		ck_assert_msg(errno == EPERM, "unshare: %s", strerror(errno));
		skip("EROFS/ENOSPC: no CAP_SYS_ADMIN for a mount namespace");
		return false;
	}
	/*
	 * Without a private "/" our tmpfs would show in the caller's
	 * namespace too.  A chroot whose root is not a mount point (a
	 * buildd's, an mmdebstrap root) cannot have it: EINVAL.  This
	 * process is Check's fork, so its namespace goes with it.
	 */
	if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		char why[160];

		ck_assert_msg(errno == EINVAL || errno == EPERM ||
			      errno == EACCES, "mount --make-rprivate /: %s",
			      strerror(errno));
		tu_fmt(why, sizeof(why), "EROFS/ENOSPC: cannot make / private "
		       "in a mount namespace (%s; a chroot?)", strerror(errno));
		skip(why);
		return false;
	}
	ck_assert_int_eq(mkdir(in_dir(mnt, "mnt"), 0755), 0);
	ck_assert_msg(mount("tmpfs", mnt, "tmpfs", 0, opts) == 0,
		      "mount tmpfs %s: %s", opts, strerror(errno));
	return true;
}

static void unmount_tmpfs(void)
{
	ck_assert_int_eq(umount2(mnt, MNT_DETACH), 0);
}

/* Fill the file system: write until ENOSPC. */
static void fill(const char *path)
{
	char block[4096];
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	memset(block, 'f', sizeof(block));
	ck_assert_int_ge(fd, 0);
	for (;;) {
		ssize_t n = write(fd, block, sizeof(block));

		if (n < 0) {
			ck_assert_int_eq(errno, ENOSPC);
			break;
		}
	}
	ck_assert_int_eq(close(fd), 0);
}

START_TEST(test_read_only_fs)
{
	char buf[PATH_MAX], rec[PATH_MAX];
	struct pidlock_info info;

	if (!mount_tmpfs("size=64k,mode=0755"))
		return;
	join(rec, mnt, "leftover");
	write_abandoned(rec, 0644);
	ck_assert_int_eq(mount(NULL, mnt, NULL, MS_REMOUNT | MS_RDONLY, NULL), 0);
	join(buf, mnt, "lock");
	expect_refusal(buf, -EROFS, 0);
	expect_refusal(rec, -EROFS, 0);
	/* Reading still works: inspect tells what is there. */
	ck_assert_int_eq(pidlock_inspect(rec, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_ABANDONED);
	unmount_tmpfs();
}
END_TEST

static void expect_enospc_empty(const char *path)
{
	struct pidlock *lock;
	struct stat st;
	int fds = tu_count_fds();

	ck_assert_int_eq(pidlock_new(&lock, path, 0), 0);
	ck_assert_int_eq(pidlock_acquire(lock, 0), -ENOSPC);
	pidlock_free(lock);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 0);
	ck_assert_int_eq(tu_count_fds(), fds);
}

START_TEST(test_full_fs_blocks)
{
	char buf[PATH_MAX], rec[PATH_MAX];

	if (!mount_tmpfs("size=64k,mode=0755"))
		return;
	join(rec, mnt, "leftover");
	write_abandoned(rec, 0644);
	join(buf, mnt, "empty");
	tu_write_file(buf, "", 0, 0644);
	join(buf, mnt, "filler");
	fill(buf);
	join(buf, mnt, "lock");
	expect_refusal(buf, -ENOSPC, 0);
	/* An empty left-over would need a block: not taken, still empty.
	 * (The failed write does touch its mtime: tmpfs updates it first.) */
	join(buf, mnt, "empty");
	tu_set_mtime(buf, tu_now() - 60);
	expect_enospc_empty(buf);
	/* A left-over file with a block has room: taken over in place. */
	expect_taken(rec);
	unmount_tmpfs();
}
END_TEST

START_TEST(test_full_fs_inodes)
{
	char buf[PATH_MAX];
	int i;

	if (!mount_tmpfs("nr_inodes=8,mode=0755"))
		return;
	for (i = 0;; i++) {
		char name[32];
		int fd;

		tu_fmt(name, sizeof(name), "f%d", i);
		join(buf, mnt, name);
		fd = open(buf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0) {
			ck_assert_int_eq(errno, ENOSPC);
			break;
		}
		close(fd);
		ck_assert_int_lt(i, 100);
	}
	join(buf, mnt, "lock");
	expect_refusal(buf, -ENOSPC, 0);
	unmount_tmpfs();
}
END_TEST

static Suite *hostile_suite(void)
{
	Suite *s = suite_create("hostile");
	TCase *tc;

	tc = tu_tcase(s, "paths", setup, teardown, 0);
	tu_add_test(tc, test_empty_and_null);
	tu_add_test(tc, test_trailing_slash);
	tu_add_test(tc, test_long_names);
	tu_add_test(tc, test_missing_parent);
	tu_add_test(tc, test_parent_not_dir);

	tc = tu_tcase(s, "links", setup, teardown, 0);
	tu_add_test(tc, test_symlink_to_record);
	tu_add_test(tc, test_symlink_to_outside_file);
	tu_add_test(tc, test_symlink_dangling);
	tu_add_test(tc, test_symlink_to_dir);
	tu_add_test(tc, test_symlink_to_dev_null);
	tu_add_test(tc, test_symlink_chain_and_loop);
	tu_add_test(tc, test_symlink_parent_followed);
	tu_add_test(tc, test_hard_link_plain_file);
	tu_add_test(tc, test_hard_link_record);
	tu_add_loop_test(tc, test_hard_link_own_temp_repaired, 0, 2);

	tc = tu_tcase(s, "types", setup, teardown, 30);
	tu_add_test(tc, test_fifo);
	tu_add_test(tc, test_socket);
	tu_add_test(tc, test_directory);
	tu_add_test(tc, test_devices);

	tc = tu_tcase(s, "permissions", setup, teardown, 0);
	tcase_set_tags(tc, "unprivileged");
	tu_add_loop_test(tc, test_permission, 0, (int)(sizeof(perm_cases) /
						  sizeof(perm_cases[0])));
	tu_add_test(tc, test_read_only_dir_with_record);
	tu_add_test(tc, test_world_writable_no_sticky);
	tu_add_test(tc, test_foreign_owner_sticky);
	tu_add_test(tc, test_other_users_file_busy_then_taken);
	tu_add_test(tc, test_foreign_owner_private_dir);

	tc = tu_tcase(s, "users", setup, teardown, 0);
	tu_add_test(tc, test_reader_blocks_leftover);
	tu_add_test(tc, test_defence_mode_and_dir);
	tu_add_test(tc, test_dir_writer_replaces_file);

	tc = tu_tcase(s, "filesystems", setup, teardown, 30);
	tu_add_test(tc, test_read_only_fs);
	tu_add_test(tc, test_full_fs_blocks);
	tu_add_test(tc, test_full_fs_inodes);
	return s;
}

int main(void)
{
	tu_run_suite(hostile_suite());
}
