/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The library's helper processes (lib/clone.c: the stand-in of a timed
 * writer, the lease tester of rule C and of PIDLOCK_KEEP_IF_USED) with
 * real processes, a real FUSE daemon and real limits on processes.
 *
 *   fuse_timed_acquire   an unrelated file open on a FUSE mount whose
 *                        FLUSH is never answered (fuse-stall): a 300 ms
 *                        acquire behind a reader returns within 400 ms,
 *                        and no FLUSH reaches the daemon (issue 35.1);
 *   fuse_keep_release    the same for a PIDLOCK_KEEP_IF_USED release:
 *                        within 50 ms, and no FLUSH;
 *   refused_release      a process that cannot clone (RLIMIT_NPROC 0 as
 *                        nobody; a pids cgroup at its maximum) releases
 *                        with PIDLOCK_KEEP_IF_USED while another process
 *                        has the file open on its way to flock(2): the
 *                        file stays, so that opener and the next
 *                        acquirer exclude each other (issue 35.2);
 *   refused_grace        such a process finds a young empty file that a
 *                        spec-only writer has open: busy, the file as
 *                        it was (rule C's grace is kept);
 *   refused_timed_writer such a process, a timed writer behind a
 *                        reader, still gets the lock once the reader
 *                        lets go (it waits as without a stand-in).
 *
 * The refused_* tests run once per limit (_i: 0 RLIMIT_NPROC, 1 a pids
 * cgroup); both need root, and the cgroup one a pids controller.  What
 * cannot be set up here is said ("not tested"), not passed in silence.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pidlock.h"
#include "testutil.h"

/* How long fuse-stall keeps a FLUSH unanswered: far past every bound
 * below, and short enough that a failing test still ends
 * (FUSE_STALL_SECONDS sets another, to reproduce a given stall). */
#define STALL_SECONDS "8"
#define TIMED_MS 300
#define TIMED_BOUND_MS 400
#define RELEASE_BOUND_MS 50
#define NOBODY 65534

/* --- the FUSE daemon ------------------------------------------------- */

struct stall {
	pid_t daemon;
	char mnt[PATH_MAX];	/* a copy: tu_path()'s buffers are reused */
	int fd;		/* the caller's unrelated file on the mount */
};

static const char *stall_bin(void)
{
	const char *bin = getenv("FUSE_STALL");

	return bin && bin[0] && access(bin, X_OK) == 0 ? bin : NULL;
}

/*
 * Mounts fuse-stall and opens its file as the caller's unrelated
 * descriptor.  false (said why) where this machine cannot.  The mount
 * is made in a mount namespace of this test's own, private: whatever
 * ends the test (a failed check, Check's timeout), the mount goes with
 * the namespace's last process, the daemon, which dies with the test.
 */
static bool stall_start(struct stall *s)
{
	const char *bin = stall_bin();
	const char *secs = getenv("FUSE_STALL_SECONDS");
	char *f;

	if (!bin || access("/dev/fuse", R_OK | W_OK) != 0) {
		fprintf(stderr, "not tested: %s\n", bin ? "no /dev/fuse" :
		       "no fuse-stall (libfuse3-dev) built");
		return false;
	}
	if (!tu_own_mounts())
		return false;
	snprintf(s->mnt, sizeof(s->mnt), "%s", tu_path("mnt"));
	ck_assert_int_eq(mkdir(s->mnt, 0755), 0);
	s->daemon = fork();
	ck_assert_int_ge(s->daemon, 0);
	if (s->daemon == 0) {
		/* Gone with the test: an abort ends its stalled FLUSHes. */
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(bin, bin, s->mnt, secs && secs[0] ? secs : STALL_SECONDS,
		      (char *)NULL);
		_exit(127);
	}
	f = tu_path("mnt/f");
	for (int i = 0; i < 500 && !tu_exists(f); i++)
		tu_msleep(10);
	ck_assert_msg(tu_exists(f), "fuse-stall did not mount %s", s->mnt);
	s->fd = open(f, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(s->fd, 0);
	return true;
}

/* How many FLUSHes of the file have reached the daemon. */
static int stall_flushes(void)
{
	char *f = tu_path("mnt/flushes");
	char buf[32] = "";
	int fd = open(f, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	n = read(fd, buf, sizeof(buf) - 1);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(close(fd), 0);
	return atoi(buf);
}

/* Kills the daemon first: the test's own close of its file would
 * otherwise wait for the FLUSH too. */
static void stall_end(struct stall *s)
{
	ck_assert_int_eq(kill(s->daemon, SIGKILL), 0);
	(void)tu_reap(s->daemon);
	(void)close(s->fd);
	ck_assert_int_eq(umount2(s->mnt, MNT_DETACH), 0);
}

/* The call under test beside the FUSE file (a timed acquire, or a
 * release), timed; then the daemon is ended, and no FLUSH may have
 * reached it.  The call's result, its time in *ms. */
static int stall_call(struct stall *s, const char *what, struct pidlock *l,
		      bool release, long *ms)
{
	long t0 = tu_ms();
	int r = release ? pidlock_release(l) : pidlock_acquire(l, TIMED_MS);
	int flushes;

	*ms = tu_ms() - t0;
	flushes = stall_flushes();
	stall_end(s);
	fprintf(stderr, "%s: %d after %ld ms, %d FLUSH\n", what, r, *ms,
		flushes);
	ck_assert_int_eq(flushes, 0);
	return r;
}

START_TEST(fuse_timed_acquire)
{
	char *p = tu_path("a.lock");
	struct stall s;
	struct tu_child reader;
	struct pidlock *l;
	long ms;
	int r;

	if (!stall_start(&s))
		return;
	tu_hold(&reader, p, PIDLOCK_SHARED);
	l = tu_new(p, 0);
	r = stall_call(&s, "fuse_timed_acquire", l, false, &ms);
	ck_assert_int_eq(r, -ETIMEDOUT);
	ck_assert_msg(ms < TIMED_BOUND_MS,
		      "a %d ms acquire took %ld ms beside a FUSE file",
		      TIMED_MS, ms);
	tu_release_to(&reader, l);
	pidlock_free(l);
}
END_TEST

START_TEST(fuse_keep_release)
{
	char *p = tu_path("a.lock");
	struct stall s;
	struct pidlock *l;
	long ms;
	int r;

	if (!stall_start(&s))
		return;
	l = tu_new(p, PIDLOCK_KEEP_IF_USED);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	r = stall_call(&s, "fuse_keep_release", l, true, &ms);
	ck_assert_int_eq(r, 0);
	ck_assert_msg(ms < RELEASE_BOUND_MS,
		      "a KEEP_IF_USED release took %ld ms beside a FUSE file",
		      ms);
	/* Nobody else was on it: the lease test answered, and said so. */
	ck_assert(!tu_exists(p));
	pidlock_free(l);
}
END_TEST

/* --- processes that cannot clone -------------------------------------- */

enum limit { BY_NPROC, BY_CGROUP };

/* A pids cgroup of our own: v2 (a cgroup2 mount with the pids
 * controller) or v1 (a "pids" hierarchy). */
struct cg {
	char dir[PATH_MAX + 32];
};

static bool write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	size_t len = strlen(text);
	bool ok;

	if (fd < 0)
		return false;
	ok = write(fd, text, len) == (ssize_t)len;
	return close(fd) == 0 && ok;
}

/* The mount point of the pids controller, and whether it is v2. */
static bool pids_mount(char *root, size_t size, bool *v2)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	char dev[256], mnt[PATH_MAX], type[64], opts[1024];
	bool found = false;

	if (!f)
		return false;
	while (!found && fscanf(f, "%255s %4095s %63s %1023s %*d %*d", dev,
				mnt, type, opts) == 4) {
		char ctl[PATH_MAX + 32];
		const char *c;

		if (strcmp(type, "cgroup") == 0 && strstr(opts, "pids")) {
			*v2 = false;
			found = true;
		} else if (strcmp(type, "cgroup2") == 0) {
			snprintf(ctl, sizeof(ctl), "%s/cgroup.controllers",
				 mnt);
			c = tu_read(ctl);
			*v2 = true;
			found = c && strstr(c, "pids");
		}
		if (found)
			snprintf(root, size, "%s", mnt);
	}
	fclose(f);
	return found;
}

/* The cgroups of earlier runs that a failed check left (it ends the
 * test before its clean-up): each one whose maker (the pid in its name)
 * is gone, so that another tree's run beside this one keeps its own;
 * rmdir(2) refuses one still in use. */
static void cg_sweep(const char *root)
{
	DIR *d = opendir(root);
	const struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		long pid;

		if (sscanf(de->d_name, "pidlock-test-%ld", &pid) == 1 &&
		    pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			(void)unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
	}
	(void)closedir(d);
}

static bool cg_make(struct cg *cg)
{
	char root[PATH_MAX];
	bool v2 = false;

	if (!pids_mount(root, sizeof(root), &v2))
		return false;
	cg_sweep(root);
	if (v2) {
		char ctl[PATH_MAX + 32];

		snprintf(ctl, sizeof(ctl), "%s/cgroup.subtree_control", root);
		(void)write_text(ctl, "+pids");
	}
	snprintf(cg->dir, sizeof(cg->dir), "%s/pidlock-test-%d", root,
		 (int)getpid());
	return mkdir(cg->dir, 0755) == 0;
}

/* Puts pid into the cgroup, and its limit at one task: pid's own. */
static void cg_enter(const struct cg *cg, pid_t pid)
{
	char path[PATH_MAX + 64], text[32];

	snprintf(text, sizeof(text), "%d", (int)pid);
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg->dir);
	ck_assert_msg(write_text(path, text), "%s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "%s/pids.max", cg->dir);
	ck_assert_msg(write_text(path, "1"), "%s: %s", path, strerror(errno));
}

static void cg_remove(const struct cg *cg)
{
	ck_assert_msg(rmdir(cg->dir) == 0, "rmdir %s: %s", cg->dir,
		      strerror(errno));
}

/* The test's directory, for a process that runs as nobody. */
static char *nobody_dir(void)
{
	char *d = tu_path("nobody");

	ck_assert_int_eq(mkdir(d, 0755), 0);
	ck_assert_int_eq(chown(d, NOBODY, NOBODY), 0);
	return d;
}

/* In the limited child: can it still make a process?  A limit that did
 * not take would make the test prove nothing. */
static bool clones_refused(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	if (pid > 0) {
		(void)waitpid(pid, NULL, 0);
		return false;
	}
	return errno == EAGAIN;
}

typedef int (*limited_fn)(struct tu_child *c, const char *path);

struct limited {
	enum limit how;
	const char *path;
	limited_fn fn;
};

/* The child: under its limit (the cgroup's is set by the parent, which
 * says 'C' once it is), then fn.  Exit 4: the limit did not take. */
static int limited_main(struct tu_child *c, void *arg)
{
	const struct limited *a = arg;
	const struct rlimit none = { 0, 0 };

	if (a->how == BY_NPROC) {
		TU_CHILD_CHECK(setgroups(0, NULL) == 0);
		TU_CHILD_CHECK(setgid(NOBODY) == 0 && setuid(NOBODY) == 0);
		TU_CHILD_CHECK(setrlimit(RLIMIT_NPROC, &none) == 0);
	} else {
		TU_CHILD_CHECK(tu_wait_parent(c) == 'C');
	}
	if (!clones_refused()) {
		fprintf(stderr, "child: the limit did not refuse a fork\n");
		return 4;
	}
	return a->fn(c, a->path);
}

/*
 * Runs fn in a child under limit `how`, with the lock at name in a
 * directory the child can write; parent() then plays the other
 * processes, and the child's exit status is returned.  false where the
 * limit cannot be had here (said why).
 */
typedef void (*parent_fn)(struct tu_child *c, const char *path);

static bool run_limited(enum limit how, const char *name, limited_fn fn,
			parent_fn parent, int *status)
{
	char *path = malloc(PATH_MAX);
	struct limited a = { how, path, fn };
	struct tu_child c;
	struct cg cg;

	ck_assert_ptr_nonnull(path);
	if (geteuid() != 0) {
		fprintf(stderr, "not tested: root is needed to set a limit\n");
		free(path);
		return false;
	}
	if (how == BY_CGROUP && !cg_make(&cg)) {
		fprintf(stderr, "not tested: no pids cgroup controller here\n");
		free(path);
		return false;
	}
	snprintf(path, PATH_MAX, "%s/%s", how == BY_NPROC ? nobody_dir() :
		 tu_dir(), name);
	tu_spawn(&c, limited_main, &a);
	if (how == BY_CGROUP) {
		cg_enter(&cg, c.pid);
		tu_tell(&c, 'C');
	}
	parent(&c, path);
	*status = tu_join(&c);
	if (how == BY_CGROUP)
		cg_remove(&cg);
	free(path);
	return true;
}

/* A refused_* test: child under the limit _i names, parent beside it. */
#define REFUSED_TEST(name, file, child, parent)				\
	START_TEST(name)						\
	{								\
		int status = 0;						\
									\
		if (run_limited((enum limit)_i, file, child, parent,	\
				&status))				\
			ck_assert_int_eq(status, 0);			\
	}								\
	END_TEST

/* refused_release: the child takes over a dead holder's file that the
 * parent has open (so that only the kernel's lease question, not the
 * opens the child saw, can tell it: lib/opens.c), says 'L', releases
 * when told 'G' and says whether the file stayed. */
static int release_child(struct tu_child *c, const char *path)
{
	struct pidlock *l;
	struct stat before, after;

	TU_CHILD_CHECK(tu_wait_parent(c) == 'O');
	TU_CHILD_CHECK(pidlock_new(&l, path, PIDLOCK_KEEP_IF_USED) == 0);
	TU_CHILD_CHECK(pidlock_acquire(l, 0) == 0);
	TU_CHILD_CHECK(stat(path, &before) == 0);
	tu_signal(c, 'L');
	TU_CHILD_CHECK(tu_wait_parent(c) == 'G');
	TU_CHILD_CHECK(pidlock_release(l) == 0);
	pidlock_free(l);
	if (stat(path, &after) < 0 || after.st_ino != before.st_ino) {
		fprintf(stderr, "child: the release removed a file that "
			"another process had open\n");
		return 5;
	}
	return 0;
}

/* The other process: "exec 9<>F" on its way to flock 9, opened before
 * the child's take; the file, a dead holder's, is the directory
 * owner's (the child's), so that the child may ask for a lease. */
static void release_parent(struct tu_child *c, const char *path)
{
	char dir[PATH_MAX], record[128];
	struct pidlock *next;
	struct stat d;
	int fd;

	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	ck_assert_int_eq(stat(dir, &d), 0);
	snprintf(record, sizeof(record), "pid=%d\ntimestamp=%lld\n"
		 "lock=flock,ofd\n", (int)tu_dead_pid(), (long long)tu_now());
	tu_write(path, record);
	ck_assert_int_eq(chown(path, d.st_uid, d.st_gid), 0);
	fd = open(path, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	tu_tell(c, 'O');
	ck_assert_int_eq(tu_wait_signal(c), 'L');
	tu_tell(c, 'G');
	ck_assert_int_eq(tu_wait_signal(c), 0);	/* it has exited */
	ck_assert_int_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
	/* Two holders, were the file gone: the next acquirer must see ours. */
	next = tu_new(path, 0);
	ck_assert_int_eq(pidlock_acquire(next, 0), -EWOULDBLOCK);
	pidlock_free(next);
	ck_assert_int_eq(close(fd), 0);
}

REFUSED_TEST(refused_release, "r.lock", release_child, release_parent)

/* refused_grace: a young empty file, open in the parent as a spec-only
 * writer's between its O_EXCL create and its write. */
static int grace_child(struct tu_child *c, const char *path)
{
	struct pidlock *l;
	struct stat before, after;
	int r;

	TU_CHILD_CHECK(tu_wait_parent(c) == 'G');
	TU_CHILD_CHECK(stat(path, &before) == 0);
	TU_CHILD_CHECK(pidlock_new(&l, path, 0) == 0);
	r = pidlock_acquire(l, 0);
	pidlock_free(l);
	if (r != -EWOULDBLOCK) {
		fprintf(stderr, "child: a try in a writer's grace gave %d\n",
			r);
		return 5;
	}
	TU_CHILD_CHECK(stat(path, &after) == 0);
	TU_CHILD_CHECK(after.st_ino == before.st_ino && after.st_size == 0);
	return 0;
}

static void grace_parent(struct tu_child *c, const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fchown(fd, NOBODY, NOBODY), 0);
	tu_tell(c, 'G');
	ck_assert_int_eq(tu_wait_signal(c), 0);
	ck_assert_int_eq(close(fd), 0);
}

REFUSED_TEST(refused_grace, "g.lock", grace_child, grace_parent)

/* refused_timed_writer: the parent's reader holds; the child waits as a
 * timed writer, and gets the lock once the reader has let go. */
static int writer_child(struct tu_child *c, const char *path)
{
	struct pidlock *l;
	int r;

	TU_CHILD_CHECK(pidlock_new(&l, path, 0) == 0);
	/* Once the reader holds the file, and has given it to us. */
	TU_CHILD_CHECK(tu_wait_parent(c) == 'G');
	tu_signal(c, 'W');
	r = pidlock_acquire(l, 5000);
	if (r != 0) {
		fprintf(stderr, "child: a timed writer got %d\n", r);
		return 5;
	}
	TU_CHILD_CHECK(pidlock_verify(l) == 0);
	TU_CHILD_CHECK(pidlock_release(l) == 0);
	pidlock_free(l);
	return 0;
}

static void writer_parent(struct tu_child *c, const char *path)
{
	struct pidlock *l = tu_new(path, PIDLOCK_SHARED);

	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(chown(path, NOBODY, NOBODY), 0);
	tu_tell(c, 'G');
	ck_assert_int_eq(tu_wait_signal(c), 'W');
	tu_msleep(200);
	ck_assert_int_eq(pidlock_release(l), 0);
	pidlock_free(l);
	ck_assert_int_eq(tu_wait_signal(c), 0);
}

REFUSED_TEST(refused_timed_writer, "w.lock", writer_child, writer_parent)

int main(void)
{
	const struct tu_case cases[] = {
		{ fuse_timed_acquire, 1 },
		{ fuse_keep_release, 1 },
		{ refused_release, 2 },
		{ refused_grace, 2 },
		{ refused_timed_writer, 2 },
		{ NULL, 0 },
	};

	tu_run_cases("clones", "clones", 60, cases);
}
