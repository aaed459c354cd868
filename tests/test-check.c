/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pidlock_check(), the holder's lease, and the write guard (issue 38):
 * a holder whose kernel locks were taken away learns it, and writes
 * nothing over the next holder.  The loss is made as a file server
 * makes it: the holder's locks are dropped under it, and another
 * process, a real one, takes the same file in place.
 *
 *   check_held            a held lock: 0, again and again; a free
 *                         handle: -ENOLCK; bad arguments: -EINVAL
 *   another_holds         the locks dropped, another process holds
 *                         them and has written nothing yet: check,
 *                         verify, refresh and release say -ENOLCK, and
 *                         the file stays as it was
 *   flock1_holds          the same with flock(1) as the other holder
 *                         (a flock only: the re-take tells)
 *   dropped_not_retaken   the locks dropped and nobody else holds them
 *                         (a file server restarted without its locks):
 *                         -ENOLCK, for good, and the lock is left free
 *                         for the next holder, not taken back
 *   path_replaced         another file renamed over the path: -ENOLCK
 *   refresh_guard         the other holder wrote its record: refresh,
 *                         with no check before it, says -ENOLCK, and
 *                         the other's record stays
 *   lease_lapses          with a 150 ms lease and no check for 300 ms:
 *                         -ENOLCK, and release leaves the file
 *   hung_server           a FUSE mount (bindfs) whose daemon is stopped:
 *                         a 300 ms check says -ETIMEDOUT within 450 ms,
 *                         every time; with a lease, -ENOLCK once it
 *                         lapses; once the daemon runs again, a check
 *                         says 0 on another handle (its question put
 *                         again), and the locks a release dropped are
 *                         free for the next holder
 *   check_under_signals   on that mount, a signal every 200 us: a 1000
 *                         ms check says 0 or -EINTR, never -ETIMEDOUT
 *                         before its bound; with the daemon stopped, a
 *                         caller that calls again on what is left gets
 *                         -ETIMEDOUT at the bound, not before
 *   record_another        on that mount: nobody holds the locks, but
 *                         the record names another process, which took
 *                         the file in place and died: -ENOLCK, and the
 *                         file stays
 *
 * On a local file system a record changed under our locks is a lockless
 * writer's, which refresh repairs (test-lock refresh_in_place): only a
 * shared file system's record is asked about.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pidlock.h"
#include "testutil.h"

/* The holder's locks dropped under it, as a server drops a client's. */
static void drop_locks(struct pidlock *l)
{
	struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET };
	int fd = pidlock_fd(l);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(flock(fd, LOCK_UN), 0);
	ck_assert_int_eq(fcntl(fd, F_OFD_SETLK, &fl), 0);
}

/* Another holder takes the file in place: both kernel locks, its own
 * record; it says 'L' and holds until told, or exits at once. */
struct taker {
	const char *path;
	bool stay;
	bool record;	/* writes its own; else it has only the locks */
};

static int taker_main(struct tu_child *c, void *arg)
{
	const struct taker *t = arg;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char rec[128];
	int fd = open(t->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	int n;

	TU_CHILD_CHECK(fd >= 0);
	TU_CHILD_CHECK(flock(fd, LOCK_EX | LOCK_NB) == 0);
	TU_CHILD_CHECK(fcntl(fd, F_OFD_SETLK, &fl) == 0);
	if (!t->record) {
		tu_signal(c, 'L');
		(void)tu_wait_parent(c);
		return 0;
	}
	n = snprintf(rec, sizeof(rec), "pid=%d\ntimestamp=%lld\ntag=other\n",
		     (int)getpid(), (long long)time(NULL));
	TU_CHILD_CHECK(ftruncate(fd, 0) == 0);
	TU_CHILD_CHECK(pwrite(fd, rec, (size_t)n, 0) == n);
	tu_signal(c, 'L');
	if (t->stay)
		(void)tu_wait_parent(c);
	return 0;
}

START_TEST(check_held)
{
	char *path = tu_path("held.lock");
	struct pidlock *l = tu_new(path, 0);

	ck_assert_int_eq(pidlock_check(l, 100), -ENOLCK);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(pidlock_check(l, 100), 0);
	ck_assert_int_eq(pidlock_check(l, -1), 0);
	ck_assert_int_eq(pidlock_check(l, -2), -EINVAL);
	ck_assert_int_eq(pidlock_check(NULL, 100), -EINVAL);
	ck_assert_int_eq(pidlock_set_lease(NULL, 10), -EINVAL);
	ck_assert_int_eq(pidlock_set_lease(l, PIDLOCK_LEASE_MAX_MS + 1),
			 -EINVAL);
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert_int_eq(pidlock_check(l, 100), -ENOLCK);
	pidlock_free(l);
}
END_TEST

/* The next holder has the locks, and has written nothing yet: A's own
 * record is all A sees, and neither it nor the file may change. */
static void another_holds_check(struct pidlock *l, const char *path)
{
	char *before = strdup(tu_read(path));

	ck_assert_ptr_nonnull(before);
	ck_assert_int_eq(pidlock_check(l, 1000), -ENOLCK);
	/* verify asks the path only, which still names the file. */
	ck_assert_int_eq(pidlock_verify(l), 0);
	ck_assert_int_eq(pidlock_refresh(l), -ENOLCK);
	ck_assert_int_eq(pidlock_check(l, 1000), -ENOLCK);
	ck_assert_int_eq(pidlock_release(l), -ENOLCK);
	ck_assert(tu_exists(path));
	ck_assert_str_eq(tu_read(path), before);
	free(before);
}

/* Another process holds the flock and the OFD lock. */
START_TEST(another_holds)
{
	char *path = tu_path("another.lock");
	struct pidlock *l = tu_new(path, 0);
	struct taker t = { path, true, false };
	struct tu_child c;

	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	drop_locks(l);
	tu_spawn(&c, taker_main, &t);
	ck_assert_int_eq(tu_wait_signal(&c), 'L');
	another_holds_check(l, path);
	tu_tell(&c, 'R');
	ck_assert_int_eq(tu_join(&c), 0);
	pidlock_free(l);
}
END_TEST

/* flock(1) holds: only a re-take of our flock can tell. */
/* Only the flock dropped, our OFD lock kept: nothing but the re-take of
 * the flock tells that flock(1) has it now. */
START_TEST(flock1_holds)
{
	char *path = tu_path("flock1.lock");
	struct pidlock *l = tu_new(path, 0);
	struct tu_child c;

	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(flock(pidlock_fd(l), LOCK_UN), 0);
	tu_flock1_hold(&c, path, false);
	another_holds_check(l, path);
	tu_tell(&c, '\n');
	ck_assert_int_eq(tu_join(&c), 0);
	pidlock_free(l);
}
END_TEST

START_TEST(dropped_not_retaken)
{
	char *path = tu_path("d.lock");
	struct pidlock *l = tu_new(path, 0), *next;

	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	drop_locks(l);
	ck_assert_int_eq(pidlock_check(l, 1000), -ENOLCK);
	ck_assert_int_eq(pidlock_check(l, 1000), -ENOLCK);
	next = tu_new(path, 0);
	ck_assert_int_eq(pidlock_acquire(next, 0), 0);
	ck_assert_int_eq(pidlock_release(next), 0);
	pidlock_free(next);
	pidlock_free(l);
}
END_TEST

START_TEST(path_replaced)
{
	char *path = tu_path("replaced.lock");
	char other[PATH_MAX];
	struct pidlock *l = tu_new(path, 0);

	snprintf(other, sizeof(other), "%s", tu_path("other"));
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	tu_write(other, "pid=1\n");
	ck_assert_int_eq(rename(other, path), 0);
	ck_assert_int_eq(pidlock_check(l, 1000), -ENOLCK);
	ck_assert_int_eq(pidlock_refresh(l), -ENOLCK);
	ck_assert_str_eq(tu_read(path), "pid=1\n");
	(void)pidlock_release(l);
	ck_assert_str_eq(tu_read(path), "pid=1\n");
	pidlock_free(l);
}
END_TEST

/* A refresh, with no check before it, asks the same questions. */
START_TEST(refresh_guard)
{
	char *path = tu_path("refresh.lock");
	struct pidlock *l = tu_new(path, 0);
	struct taker t = { path, true, true };
	struct tu_child c;

	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_refresh(l), 0);
	drop_locks(l);
	tu_spawn(&c, taker_main, &t);
	ck_assert_int_eq(tu_wait_signal(&c), 'L');
	ck_assert_int_eq(pidlock_refresh(l), -ENOLCK);
	ck_assert(strstr(tu_read(path), "tag=other") != NULL);
	tu_tell(&c, 'R');
	ck_assert_int_eq(tu_join(&c), 0);
	ck_assert_int_eq(pidlock_release(l), -ENOLCK);
	pidlock_free(l);
}
END_TEST

START_TEST(lease_lapses)
{
	char *path = tu_path("lease.lock");
	struct pidlock *l = tu_new(path, 0);

	ck_assert_int_eq(pidlock_set_lease(l, 150), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(pidlock_check(l, 100), 0);
		tu_msleep(50);
	}
	tu_msleep(300);
	ck_assert_int_eq(pidlock_check(l, 100), -ENOLCK);
	ck_assert_int_eq(pidlock_refresh(l), -ENOLCK);
	ck_assert_int_eq(pidlock_release(l), -ENOLCK);
	/* Not unlinked: by now it may be the next holder's. */
	ck_assert(tu_exists(path));
	/* A new hold starts a new lease. */
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_check(l, 100), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert(!tu_exists(path));
	pidlock_free(l);
}
END_TEST

/* --- a FUSE mount whose daemon stops answering ----------------------- */

struct fuse_mnt {
	pid_t daemon;
	char mnt[PATH_MAX];
};

/* bindfs of a directory of ours, in the foreground, in a mount
 * namespace of this test's own (gone with the test, whatever ends it).
 * false (said why) where this machine cannot. */
static bool bindfs_start(struct fuse_mnt *m)
{
	char src[PATH_MAX];
	struct stat st;

	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0 ||
	    system("command -v bindfs >/dev/null 2>&1") != 0) {
		fprintf(stderr, "not tested: needs root, /dev/fuse and "
			"bindfs\n");
		return false;
	}
	if (!tu_own_mounts())
		return false;
	snprintf(src, sizeof(src), "%s", tu_path("src"));
	snprintf(m->mnt, sizeof(m->mnt), "%s", tu_path("mnt"));
	ck_assert_int_eq(mkdir(src, 0755), 0);
	ck_assert_int_eq(mkdir(m->mnt, 0755), 0);
	m->daemon = fork();
	ck_assert_int_ge(m->daemon, 0);
	if (m->daemon == 0) {
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		execlp("bindfs", "bindfs", "-f", src, m->mnt, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		struct stat top;

		if (stat(m->mnt, &top) == 0 && stat(src, &st) == 0 &&
		    top.st_dev != st.st_dev)
			return true;
		tu_msleep(10);
	}
	ck_abort_msg("bindfs did not mount %s", m->mnt);
	return false;
}

static void bindfs_end(struct fuse_mnt *m)
{
	(void)kill(m->daemon, SIGCONT);
	ck_assert_int_eq(kill(m->daemon, SIGKILL), 0);
	(void)tu_reap(m->daemon);
	(void)umount2(m->mnt, MNT_DETACH);
}

/* A check while the daemon is stopped: -ETIMEDOUT or -ENOLCK (want),
 * within the bound. */
static void timed_check(struct pidlock *l, int want)
{
	long t0 = tu_ms(), ms;
	int r = pidlock_check(l, 300);

	ms = tu_ms() - t0;
	fprintf(stderr, "hung_server: check %d after %ld ms\n", r, ms);
	ck_assert_int_eq(r, want);
	ck_assert_msg(ms < 450, "a 300 ms check took %ld ms", ms);
}

START_TEST(hung_server)
{
	struct fuse_mnt m;
	struct pidlock *l, *l2;
	char path[PATH_MAX + 16];
	int fds;

	if (!bindfs_start(&m))
		return;
	snprintf(path, sizeof(path), "%s/h.lock", m.mnt);
	l = tu_new(path, 0);
	ck_assert_int_eq(pidlock_set_lease(l, 1500), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_check(l, 2000), 0);
	fds = tu_count_fds();
	ck_assert_int_eq(kill(m.daemon, SIGSTOP), 0);
	timed_check(l, -ETIMEDOUT);
	/* The question under way is waited for again, not asked anew. */
	timed_check(l, -ETIMEDOUT);
	ck_assert_int_le(tu_count_fds(), fds + 4);
	tu_msleep(1200);
	/* No call has reached the server for longer than the lease. */
	timed_check(l, -ENOLCK);
	ck_assert_int_eq(pidlock_refresh(l), -ENOLCK);
	ck_assert_int_eq(kill(m.daemon, SIGCONT), 0);
	/* Lost for good, though the server answers again. */
	ck_assert_int_eq(pidlock_check(l, 2000), -ENOLCK);
	ck_assert_int_eq(pidlock_release(l), -ENOLCK);
	pidlock_free(l);
	/* The release gave the question under way up: a helper that did
	 * not die within 10 ms of its SIGKILL (a slow machine, ASan) keeps
	 * a placeholder descriptor for the life of the process, by design
	 * (check_abandon()).  What follows must leak nothing beyond it. */
	fds = tu_count_fds();

	/* Without a lease: no answer is no verdict, and an answer that
	 * comes once the daemon runs again is put again, and says 0. */
	l2 = tu_new(path, 0);
	ck_assert_int_eq(pidlock_acquire(l2, 0), 0);
	ck_assert_int_eq(kill(m.daemon, SIGSTOP), 0);
	timed_check(l2, -ETIMEDOUT);
	ck_assert_int_eq(kill(m.daemon, SIGCONT), 0);
	ck_assert_int_eq(pidlock_check(l2, 5000), 0);
	ck_assert_int_eq(pidlock_release(l2), 0);
	ck_assert_int_le(tu_count_fds(), fds);
	pidlock_free(l2);
	bindfs_end(&m);
}
END_TEST

/* --- a check under an interval timer -------------------------------- */

static void on_tick(int sig)
{
	(void)sig;
}

/* SIGALRM every us microseconds, with a handler and no SA_RESTART (0:
 * stop). */
static void ticks(long us)
{
	struct sigaction sa = { .sa_handler = on_tick };
	struct itimerval it = { { 0, us }, { 0, us } };

	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGALRM, &sa, NULL), 0);
	ck_assert_int_eq(setitimer(ITIMER_REAL, &it, NULL), 0);
}

/* Checks of 1000 ms for about ms, counted by result; a -ETIMEDOUT
 * before its bound fails. */
static void checks_for(struct pidlock *l, long ms, int *held, int *intr)
{
	long end = tu_ms() + ms;

	*held = *intr = 0;
	while (tu_ms() < end) {
		long t0 = tu_ms();
		int r = pidlock_check(l, 1000);

		ck_assert_msg(r != -ETIMEDOUT, "-ETIMEDOUT after %ld of 1000 ms",
			      tu_ms() - t0);
		ck_assert_msg(r == 0 || r == -EINTR, "check: %d", r);
		(r == 0 ? (*held)++ : (*intr)++);
	}
}

START_TEST(check_under_signals)
{
	struct fuse_mnt m;
	struct pidlock *l;
	char path[PATH_MAX + 16];
	int held, intr, calls = 0;
	long t0;

	if (!bindfs_start(&m))
		return;
	snprintf(path, sizeof(path), "%s/s.lock", m.mnt);
	l = tu_new(path, 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ticks(200);
	checks_for(l, 1000, &held, &intr);
	fprintf(stderr, "check_under_signals: answering: %d held, %d -EINTR\n",
		held, intr);
	/* How many got through depends on the machine's load; each check
	 * asked the question under way, and without the signals says 0. */
	ticks(0);
	ck_assert_int_eq(pidlock_check(l, 5000), 0);
	ticks(200);
	/* Stopped: the bound, kept by calling again on what is left. */
	ck_assert_int_eq(kill(m.daemon, SIGSTOP), 0);
	t0 = tu_ms();
	do {
		long left = 1000 - (tu_ms() - t0);
		int r = pidlock_check(l, left > 0 ? (int)left : 0);

		calls++;
		if (r == -ETIMEDOUT)
			break;
		ck_assert_int_eq(r, -EINTR);
	} while (1);
	ticks(0);
	fprintf(stderr, "check_under_signals: stopped: -ETIMEDOUT after %ld ms"
		", %d calls\n", tu_ms() - t0, calls);
	ck_assert_int_ge(tu_ms() - t0, 999);
	ck_assert_int_eq(kill(m.daemon, SIGCONT), 0);
	ck_assert_int_eq(pidlock_check(l, 5000), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	pidlock_free(l);
	bindfs_end(&m);
}
END_TEST

/* Children of ours but the file system's daemon: a helper left
 * unreaped, alive or a zombie.  The helper is a child of the thread
 * that started it, ours. */
static int helpers_left(pid_t daemon)
{
	char path[64];
	FILE *f;
	int n = 0, pid;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children",
		 (int)getpid(), (int)getpid());
	f = fopen(path, "re");
	ck_assert_msg(f, "%s: %s", path, strerror(errno));
	while (fscanf(f, "%d", &pid) == 1)
		n += pid != daemon;
	fclose(f);
	return n;
}

/* Are all of pid's threads stopped (state T)? */
static bool all_stopped(pid_t pid)
{
	char dir[64], path[64 + 256 + 8], line[256];
	struct dirent *de;
	bool all = true;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	d = opendir(dir);
	ck_assert_msg(d, "%s: %s", dir, strerror(errno));
	while (all && (de = readdir(d))) {
		const char *state;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/stat", dir, de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;	/* a thread that has exited */
		state = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
		all = state && state[1] == ' ' && (state[2] == 'T' ||
						    state[2] == 't');
		fclose(f);
	}
	closedir(d);
	return all;
}

/* SIGSTOP takes effect when each thread next leaves the kernel: a
 * request the daemon read before that is answered by no one, and its
 * caller cannot die until it is (fuse's request wait). */
static void stop_daemon(pid_t pid)
{
	ck_assert_int_eq(kill(pid, SIGSTOP), 0);
	for (int i = 0; i < 500 && !all_stopped(pid); i++)
		tu_msleep(10);
	ck_assert_msg(all_stopped(pid), "the daemon did not stop in 5 s");
}

/*
 * A handle closed with a question under way, under an interval timer:
 * the helper is killed and waited for up to 10 ms, which the signal
 * handler's runs must not end.  Ended by the first, the wait gave the
 * helper up, unreaped: a zombie per close for the life of the process,
 * counted against its limit on processes.  The server is stopped, so
 * the helper waits for it until killed; a close asks it nothing (bindfs
 * has no flush: its close(2) returns at once, stopped).  On a
 * loaded machine a helper may take longer than 10 ms to die, and is
 * then given up by design: most rounds must reap it.
 */
#define ABANDON_ROUNDS 5

START_TEST(close_reaps_helper_under_signals)
{
	struct fuse_mnt m;
	char path[PATH_MAX + 16];
	int reaped = 0;

	if (!bindfs_start(&m))
		return;
	snprintf(path, sizeof(path), "%s/z.lock", m.mnt);
	for (int i = 0; i < ABANDON_ROUNDS; i++) {
		struct pidlock *l = tu_new(path, 0);
		/* An earlier round's helper given up stays, unreaped. */
		int before = helpers_left(m.daemon);
		long took;

		/* Such a helper dies once the server runs again, and its
		 * call's reference to the lock's file goes with it. */
		ck_assert_int_eq(pidlock_acquire(l, 5000), 0);
		ck_assert_int_eq(pidlock_check(l, 2000), 0);
		stop_daemon(m.daemon);
		timed_check(l, -ETIMEDOUT);
		ck_assert_int_eq(helpers_left(m.daemon), before + 1);
		ticks(100);
		took = tu_ms();
		ck_assert_int_eq(pidlock_close(l), 0);
		took = tu_ms() - took;
		ticks(0);
		/* Given up only after the whole wait: one given up sooner
		 * was given up by a signal. */
		ck_assert_msg(helpers_left(m.daemon) == before || took >= 9,
			      "the helper was given up %ld ms into its 10 ms "
			      "wait", took);
		reaped += helpers_left(m.daemon) == before;
		ck_assert_int_eq(kill(m.daemon, SIGCONT), 0);
		pidlock_free(l);
		/* The file is left (a close removes nothing): the next
		 * round takes it over. */
	}
	fprintf(stderr, "close_reaps_helper_under_signals: reaped in %d of "
		"%d rounds\n", reaped, ABANDON_ROUNDS);
	ck_assert_msg(reaped * 2 > ABANDON_ROUNDS, "the killed helper was "
		      "left unreaped in %d of %d rounds",
		      ABANDON_ROUNDS - reaped, ABANDON_ROUNDS);
	bindfs_end(&m);
}
END_TEST

/*
 * On a shared file system the record is asked about too: the next
 * holder took the file in place, wrote its record and died, its locks
 * gone with it, so that our re-take succeeds.  bindfs is the client.
 */
START_TEST(record_another)
{
	struct fuse_mnt m;
	struct pidlock *l;
	char path[PATH_MAX + 16];
	struct taker t = { path, false, true };
	struct tu_child c;

	if (!bindfs_start(&m))
		return;
	snprintf(path, sizeof(path), "%s/r.lock", m.mnt);
	l = tu_new(path, 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_check(l, 2000), 0);
	drop_locks(l);
	tu_spawn(&c, taker_main, &t);
	ck_assert_int_eq(tu_wait_signal(&c), 'L');
	ck_assert_int_eq(tu_join(&c), 0);
	ck_assert_int_eq(pidlock_check(l, 2000), -ENOLCK);
	ck_assert_int_eq(pidlock_release(l), -ENOLCK);
	ck_assert(tu_exists(path));
	ck_assert(strstr(tu_read(path), "tag=other") != NULL);
	pidlock_free(l);
	bindfs_end(&m);
}
END_TEST

int main(void)
{
	const struct tu_case cases[] = {
		{ check_held, 1 },
		{ another_holds, 1 },
		{ flock1_holds, 1 },
		{ record_another, 1 },
		{ dropped_not_retaken, 1 },
		{ path_replaced, 1 },
		{ refresh_guard, 1 },
		{ lease_lapses, 1 },
		{ hung_server, 1 },
		{ check_under_signals, 1 },
		{ close_reaps_helper_under_signals, 1 },
		{ NULL, 0 },
	};

	tu_run_cases("check", "check", 60, cases);
}
