/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Interoperation with real peers on one path: a spec-only locker written
 * here from the File-Based Semaphore Protocol v1.0, with-lock-ex (fcntl
 * family), flock(1) (flock family, no inode check) and libbsd pidfile(3).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_LIBBSD
#include <bsd/libutil.h>
#endif

#include "testutil.h"

/* ---- a spec-only peer, exactly as the spec says ---------------------- */

struct spec_opts {
	long stale_sec;
	int retry_ms;
	int saw_incomplete;	/* out: read an existing file without pid/timestamp */
};

/* The spec's parser: pid= and timestamp= both parse, else unparsable. */
static int spec_parse(const char *path, long *pid, long *ts)
{
	char buf[4096], *line, *save = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	int got = 0;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "pid=%ld", pid) == 1)
			got |= 1;
		else if (sscanf(line, "timestamp=%ld", ts) == 1)
			got |= 2;
	}
	return got == 3 ? 0 : -EINVAL;
}

static int spec_acquire(const char *path, struct spec_opts *o)
{
	for (;;) {
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		long pid = 0, ts = 0;
		int r;

		if (fd >= 0) {
			char buf[128];
			int n = snprintf(buf, sizeof(buf), "pid=%ld\ntimestamp=%ld\n",
					 (long)getpid(), (long)time(NULL));

			if (write(fd, buf, (size_t)n) != n || fsync(fd) < 0)
				return -EIO;
			close(fd);
			return 0;
		}
		if (errno != EEXIST)
			return -errno;
		r = spec_parse(path, &pid, &ts);
		if (r == -EINVAL)
			o->saw_incomplete++;
		if (r == 0 && time(NULL) - ts > o->stale_sec && unlink(path) < 0 &&
		    errno != ENOENT)
			return -errno;
		usleep((useconds_t)o->retry_ms * 1000);
	}
}

/* ---- a shared counter ------------------------------------------------- */

static int bump(const char *counter)
{
	char buf[32];
	int fd = open(counter, O_RDWR | O_CLOEXEC);
	ssize_t n;
	long v;

	if (fd < 0)
		return -1;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	v = strtol(buf, NULL, 10);
	usleep(200);	/* widen the window a lost update would need */
	n = snprintf(buf, sizeof(buf), "%ld\n", v + 1);
	if (pwrite(fd, buf, (size_t)n, 0) != n)
		return -1;
	return close(fd);
}

struct job {
	const char *lock;
	const char *counter;
	int rounds;
	unsigned int flags;
	unsigned int grace_ms;
};

static int lib_worker(struct tu_child *c, void *arg)
{
	const struct job *j = arg;
	struct pidlock *l;

	(void)c;
	if (pidlock_new(&l, j->lock, j->flags) < 0 ||
	    pidlock_set_grace(l, j->grace_ms) < 0)
		return 2;
	for (int i = 0; i < j->rounds; i++) {
		if (pidlock_acquire(l, -1) != 0)
			return 3;
		if (bump(j->counter) < 0)
			return 4;
		if (pidlock_release(l) != 0)
			return 5;
	}
	pidlock_free(l);
	return 0;
}

static int spec_worker(struct tu_child *c, void *arg)
{
	const struct job *j = arg;
	struct spec_opts o = { 3600, 2, 0 };

	(void)c;
	for (int i = 0; i < j->rounds; i++) {
		if (spec_acquire(j->lock, &o) < 0)
			return 3;
		if (bump(j->counter) < 0)
			return 4;
		if (unlink(j->lock) < 0)
			return 5;
	}
	/* Only one spec worker runs, so any incomplete file it read was
	 * ours: the spec reader must never see that, except where the file
	 * system makes us publish in place (protocol.md, section 3). */
	return o.saw_incomplete && !tu_in_place() ? 6 : 0;
}

static int shell_worker(struct tu_child *c, void *arg)
{
	const char *cmd = arg;

	(void)c;
	execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
	return 127;
}

static void run_jobs(struct tu_child *kids, int n)
{
	for (int i = 0; i < n; i++)
		ck_assert_msg(tu_join(&kids[i]) == 0, "worker %d failed", i);
}

/* Spec-only peer + libpidlock on one path: exclusion holds both ways,
 * and the spec reader never sees a half-written file of ours. */
START_TEST(spec_peer_counter)
{
	struct job j = { tu_path("x.lock"), tu_path("counter"), 150, 0, 200 };
	struct tu_child k[4];

	/* In place (bindfs), a contended create leaves a kept file, which
	 * spec peers take as held until stale: doc/protocol.md section 7
	 * says the two do not mix there.  Not run; said so. */
	if (tu_in_place()) {
		printf("spec_peer_counter: not run: the library publishes in "
		       "place in %s\n", tu_dir());
		return;
	}
	tu_write(j.counter, "0\n");
	tu_spawn(&k[0], spec_worker, &j);
	for (int i = 1; i < 4; i++) {
		j.flags = i == 1 ? 0 : PIDLOCK_NO_SYNC;
		tu_spawn(&k[i], lib_worker, &j);
	}
	run_jobs(k, 4);
	ck_assert_str_eq(tu_read(j.counter), "600\n");
}
END_TEST

static int stale_judge(struct tu_child *c, void *arg)
{
	const char *lock = arg;
	long deadline = tu_ms() + 2500;

	tu_signal(c, 'S');
	/* A Rust-style spec peer: deletes any lock older than its stale
	 * timeout (1 s here), whatever its pid. */
	while (tu_ms() < deadline) {
		long pid = 0, ts = 0;

		if (spec_parse(lock, &pid, &ts) == 0 && time(NULL) - ts > 1)
			return 7;
		usleep(20 * 1000);
	}
	return 0;
}

/* A holder that refreshes is never judged stale by a spec-only peer. */
START_TEST(refresh_keeps_spec_peers_away)
{
	char *p = tu_path("x.lock");
	struct pidlock *l;
	struct tu_child judge;
	long end;

	ck_assert_int_eq(pidlock_new(&l, p, PIDLOCK_NO_SYNC), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	tu_spawn(&judge, stale_judge, p);
	ck_assert_int_eq(tu_wait_signal(&judge), 'S');
	for (end = tu_ms() + 2600; tu_ms() < end; usleep(300 * 1000))
		ck_assert_int_eq(pidlock_refresh(l), 0);
	ck_assert_int_eq(tu_join(&judge), 0);
	pidlock_free(l);
}
END_TEST

/*
 * Two shell workers run 40 increments each through `locker LOCK sh -c`,
 * two libpidlock workers 100 each with `flags`: the total is exact.
 */
static void shell_peer_counter(const char *locker, unsigned int flags,
			       unsigned int grace_ms)
{
	struct job j = { tu_path("x.lock"), tu_path("counter"), 100, flags,
			 grace_ms };
	struct tu_child k[4];
	char cmd[4096];

	tu_write(j.counter, "0\n");
	snprintf(cmd, sizeof(cmd),
		 "i=0; while [ $i -lt 40 ]; do i=$((i+1)); %s '%s' sh -c "
		 "'n=$(cat \"$1\"); echo $((n+1)) > \"$1\"' sh '%s' || exit 1; done",
		 locker, j.lock, j.counter);
	tu_spawn(&k[0], shell_worker, cmd);
	tu_spawn(&k[1], shell_worker, cmd);
	tu_spawn(&k[2], lib_worker, &j);
	tu_spawn(&k[3], lib_worker, &j);
	run_jobs(k, 4);
	ck_assert_str_eq(tu_read(j.counter), "280\n");
}

/* with-lock-ex (fcntl lock on byte 0 + inode check) and libpidlock. */
START_TEST(with_lock_ex_counter)
{
	char locker[4200];

	snprintf(locker, sizeof(locker), "'%s' -w", tu_peer("WITH_LOCK_EX"));
	shell_peer_counter(locker, PIDLOCK_NO_SYNC, 20);
}
END_TEST

/*
 * Exclusion both ways with a shell peer on x.lock: while we hold it,
 * refused(bin, path) checks that the peer is kept out; then the peer runs
 * `exec BIN HOLD_ARGS PATH sleep 30` and keeps us out until it dies (and
 * seen(), if any, checks what we see of its hold).
 */
static void excludes_both_ways(const char *bin, const char *hold_args,
			       void (*refused)(const char *bin, const char *path),
			       void (*seen)(struct pidlock *l, const char *path,
					    pid_t peer_pid))
{
	const char *p = tu_path("x.lock");
	struct pidlock *l = tu_new(p, 0);
	struct tu_child c;
	char cmd[4096];

	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	refused(bin, p);
	ck_assert_int_eq(pidlock_release(l), 0);
	snprintf(cmd, sizeof(cmd), "exec '%s' %s '%s' sleep 30", bin, hold_args,
		 p);
	tu_spawn(&c, shell_worker, cmd);
	while (!tu_exists(p))
		usleep(1000);
	usleep(50 * 1000);	/* time to take its lock on the file it made */
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	if (seen)
		seen(l, p, c.pid);
	tu_kill(&c);
	/* Its empty leftover is taken over once the grace has passed. */
	ck_assert_int_eq(pidlock_acquire(l, 2000), 0);
	pidlock_free(l);
}

/* with-lock-ex -q gives up while we hold (it does not run its command). */
static void wle_refused(const char *bin, const char *path)
{
	ck_assert_int_eq(tu_sh("'%s' -q '%s' touch '%s'", bin, path,
			       tu_path("ran")), 0);
	ck_assert(!tu_exists(tu_path("ran")));
}

/* Its hold is an fcntl lock of its own pid: a holder, in the OFD family. */
static void wle_seen(struct pidlock *l, const char *path, pid_t peer_pid)
{
	struct pidlock_info info;

	ck_assert_int_eq(pidlock_holder(l, &info), 0);
	ck_assert_uint_eq(info.kernel_locks, PIDLOCK_KIND_OFD);
	ck_assert_int_eq(info.kernel_pid, peer_pid);
	ck_assert_int_eq(pidlock_inspect(path, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD);
}

/* with-lock-ex and libpidlock exclude each other both ways; we see its
 * hold. */
START_TEST(with_lock_ex_excludes)
{
	excludes_both_ways(tu_peer("WITH_LOCK_EX"), "-w", wle_refused, wle_seen);
}
END_TEST

/* flock(1) without an inode check is safe with PIDLOCK_KEEP_FILE. */
START_TEST(flock1_keep_file_counter)
{
	char locker[4200];

	snprintf(locker, sizeof(locker), "'%s'", tu_peer("FLOCK"));
	shell_peer_counter(locker, PIDLOCK_NO_SYNC | PIDLOCK_KEEP_FILE, 200);
}
END_TEST

/* flock(1) -n gives up while we hold, in either family. */
static void flock1_refused(const char *bin, const char *path)
{
	ck_assert_int_eq(tu_sh("'%s' -n '%s' true", bin, path), 1);
	ck_assert_int_eq(tu_sh("'%s' --fcntl -n '%s' true 2>/dev/null || "
			       "exit 1", bin, path), 1);
}

/* flock(1) and libpidlock exclude each other both ways.  -o: the lock
 * stays with flock(1), not with the sleep it runs. */
START_TEST(flock1_excludes)
{
	excludes_both_ways(tu_peer("FLOCK"), "-o", flock1_refused, NULL);
}
END_TEST

#ifdef HAVE_LIBBSD
static int bsd_holder(struct tu_child *c, void *arg)
{
	struct pidfh *ph = pidfile_open(arg, 0644, NULL);

	if (!ph || pidfile_write(ph) < 0)
		return 2;
	tu_signal(c, 'L');
	pause();
	return 0;
}

/* libbsd pidfile(3): it reads our plain-pid file and is excluded; we
 * are excluded by it, and take its file over once it is dead. */
START_TEST(libbsd_pidfile)
{
	char *p = tu_path("x.pid");
	struct pidlock *l;
	struct pidlock_info info;
	struct tu_child c;
	pid_t other = 0;
	struct pidfh *ph;

	ck_assert_int_eq(pidlock_new(&l, p, PIDLOCK_PLAIN_PID), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ph = pidfile_open(p, 0644, NULL);
	ck_assert_ptr_null(ph);
	ck_assert_int_eq(errno, EEXIST);
	/* libbsd reads the pid only from a file holding nothing else, so
	 * with pidptr it fails with EINVAL, but it still keeps out. */
	ph = pidfile_open(p, 0644, &other);
	ck_assert_ptr_null(ph);
	ck_assert(errno == EINVAL || (errno == EEXIST && other == getpid()));
	ck_assert_int_eq(pidlock_release(l), 0);

	tu_spawn(&c, bsd_holder, p);
	ck_assert_int_eq(tu_wait_signal(&c), 'L');
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	ck_assert_int_eq(pidlock_holder(l, &info), 0);
	ck_assert_int_eq(info.pid, c.pid);
	tu_kill(&c);
	ck_assert_int_eq(pidlock_acquire(l, 2000), 0);
	pidlock_free(l);
}
END_TEST
#else
START_TEST(libbsd_pidfile)
{
	ck_abort_msg("libbsd not found at configure time: install libbsd-dev");
}
END_TEST
#endif

/* Runs dotlockfile(1) with the arguments, NULL-terminated; its pid. */
static pid_t dotlockfile(const char *arg, ...)
{
	const char *argv[12] = { tu_peer("DOTLOCKFILE"), arg };
	/* execv(2) takes char *const *, and never writes the strings. */
	// cppcheck-suppress unusedStructMember
	union { const char **c; char *const *v; } args = { argv };
	va_list ap;
	int n = 2;
	pid_t pid;

	va_start(ap, arg);
	while (n < 11 && (argv[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execv(argv[0], args.v);
		_exit(127);
	}
	return pid;
}

/*
 * liblockfile's dotlock (dotlockfile -p: its pid, no kernel lock) is
 * held while its process lives, as liblockfile itself judges it: we
 * neither take it nor write into it, and name its holder.  When it
 * ends, a waiting acquire gets the lock.  The other way round,
 * dotlockfile finds our record (no number it can read, and young)
 * valid and does not take our lock.  (Rule C, doc/protocol.md.)
 */
START_TEST(dotlockfile_holder_excludes)
{
	char *path = tu_path("d.lock");
	struct pidlock *l = tu_new(path, 0);
	struct pidlock_info info;
	char want[32], *before;
	pid_t holder = dotlockfile("-p", "-r", "0", path, "sleep", "4", (char *)NULL);
	long t0 = tu_ms();

	snprintf(want, sizeof(want), "%ld\n", (long)holder);
	while (!tu_exists(path) || strcmp(tu_read(path), want) != 0) {
		ck_assert_msg(tu_ms() - t0 < 10000, "no dotlock after 10 s");
		tu_msleep(5);
	}
	/* Past rule C's grace, and past a FUSE mount's attribute cache
	 * (1 s on bindfs), which may still show the file as it was before
	 * dotlockfile unlinked its temp name: the snapshot would take a
	 * refresh of it for our change. */
	tu_msleep(1200);
	before = tu_snapshot(path);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	ck_assert_int_eq(pidlock_holder(l, &info), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD_PIDFILE);
	ck_assert_int_eq(info.pid, holder);
	tu_assert_unchanged(path, before, "a live dotlock");
	ck_assert_int_eq(pidlock_acquire(l, 20000), 0);
	ck_assert_int_eq(tu_reap(holder), 0);
	/* Ours held: dotlockfile's one try gives up (L_MAXTRYS). */
	ck_assert_int_eq(tu_reap(dotlockfile("-p", "-q", "-r", "0", path,
					     (char *)NULL)), 4);
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert(!tu_exists(path));
	pidlock_free(l);
}
END_TEST

int main(void)
{
	const struct tu_case cases[] = {
		{ spec_peer_counter, 1 },
		{ refresh_keeps_spec_peers_away, 1 },
		{ with_lock_ex_counter, 1 },
		{ with_lock_ex_excludes, 1 },
		{ flock1_keep_file_counter, 1 },
		{ flock1_excludes, 1 },
		{ libbsd_pidfile, 1 },
		{ dotlockfile_holder_excludes, 1 },
		{ NULL, 0 },
	};

	tu_run_cases("interop", "peers", 60, cases);
}
