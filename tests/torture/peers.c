/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The participants.  Each runs in its own process group (so the killer
 * takes a pidlock(1) tool together with its command) and loops
 * acquire -> critical section -> release until told to stop; the ones
 * that run an external program do one cycle per process.
 *
 * The peers written here follow their protocols as published, with no
 * extra care: their weaknesses are the point of some scenarios.
 */
#define _GNU_SOURCE
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pidlock.h>
#ifdef HAVE_LIBBSD
#include <bsd/libutil.h>
#endif

#include "torture.h"

/* Per process: where the lock, journal and counter are. */
static struct {
	char lock[4096];
	int dirfd;
	int jfd;
	int slot;
	long id;
} me;

static void me_init(const char *dir, int slot, long id)
{
	snprintf(me.lock, sizeof(me.lock), "%s/" LOCK_NAME, dir);
	me.slot = slot;
	me.id = id;
	me.dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (me.dirfd < 0)
		die("%s: %m", dir);
	me.jfd = journal_open(dir);
	if (me.jfd < 0)
		die("journal: %m");
	if (map_shm(dir, false) < 0)
		die("shm: %m");
}

static void set_phase(enum phase ph)
{
	__atomic_store_n(&shm->phase[me.slot], (int)ph, __ATOMIC_SEQ_CST);
	/* The killer chose us while idle and has not decided yet: wait, as
	 * the kill must find no dotlock of ours and no half-made one. */
	while (__atomic_load_n(&shm->condemned[me.slot], __ATOMIC_SEQ_CST))
		sleep_us(50);
}

/* A participant hit an error that the scenario does not allow. */
static void __attribute__((noreturn)) fail(int err, const char *what)
{
	journal_line(me.jfd, "F %ld %d %s:%s\n", me.id, err, what,
		     strerror(err));
	_exit(3);
}

static void broken(const char *what)
{
	journal_line(me.jfd, "S %ld %s %lld\n", me.id, what,
		     (long long)mono_ns());
}

/* Into a critical section: the counter's value, journalled as
 * "<tag> id value ns", then a random stay. */
static long cs_in(char tag)
{
	long v;
	int r;

	set_phase(PH_CS);
	r = counter_read(me.dirfd, &v);
	if (r < 0)
		fail(-r, "counter-read");
	shm->last_enter_ns = mono_ns();
	journal_line(me.jfd, "%c %ld %ld %lld\n", tag, me.id, v,
		     (long long)mono_ns());
	/* Long enough for a second process to get in, were that possible. */
	if (cfg->cs_us)
		sleep_us(rnd() % cfg->cs_us);
	return v;
}

static long cs_enter(void)
{
	return cs_in('E');
}

static void cs_leave(long v)
{
	int r = counter_write(me.dirfd, v + 1);

	if (r < 0)
		fail(-r, "counter-write");
	journal_line(me.jfd, "L %ld %ld %lld\n", me.id, v + 1,
		     (long long)mono_ns());
}

/*
 * A reader's critical section: the counter, read on the way in and on
 * the way out, may not change in between (no writer is inside), and
 * other readers may be inside at the same time.
 *   R id value ns   a reader entered; Q id value ns   it is leaving
 */
static void cs_read(void)
{
	long w;
	int r;

	(void)cs_in('R');
	r = counter_read(me.dirfd, &w);
	if (r < 0)
		fail(-r, "counter-read");
	journal_line(me.jfd, "Q %ld %ld %lld\n", me.id, w,
		     (long long)mono_ns());
}

/* Between cycles, so that the others get a chance. */
/* A polling peer starving for longer than this makes everyone stay
 * away from the lock between turns until it has had one, for at most
 * POLL_YIELD_MAX_US (a poller stopped by the machine must not stop
 * the storm). */
#define POLL_STARVED_NS (500 * 1000000LL)
#define POLL_YIELD_MAX_US 300000
#define POLL_YIELD_STEP_US 1000

/* Whether a polling participant has been trying for POLL_STARVED_NS.
 * The library's waiters wake at a release and publish within
 * microseconds, so that a peer that polls (a fork and exec of
 * dotlockfile every 0.2-2.2 ms, the spec peer's O_EXCL every 1-10 ms)
 * finds the path free only by chance.  The library promises no
 * fairness to a peer without a kernel lock (doc/protocol.md); the mix
 * is about exclusion, and its "every participant got the lock" check
 * about the peer taking part, so the others keep off the lock once it
 * has waited, and the path comes free at the next release.  A margin,
 * as measured: beside two busy loops and without it, dotlockfile had
 * 40-90 turns in each of 25 runs of 6 s.  The runs without a turn that
 * CI saw, which this was first made for, were on a path published in
 * place and kept, which liblockfile reads as held for 5 minutes
 * (short-dotlock.sh). */
static bool poller_starved(void)
{
	int64_t now = mono_ns();

	for (int i = 0; i < MAX_SLOTS; i++) {
		int64_t since = __atomic_load_n(&shm->polling_since_ns[i],
						__ATOMIC_RELAXED);

		if (i != me.slot && since > 0 && now - since > POLL_STARVED_NS)
			return true;
	}
	return false;
}

static void pause_between(void)
{
	set_phase(PH_IDLE);
	sleep_us(rnd() % 500);
	for (int waited = 0; waited < POLL_YIELD_MAX_US && !shm->stop &&
			     poller_starved();
	     waited += POLL_YIELD_STEP_US)
		sleep_us(POLL_YIELD_STEP_US);
}

/* A polling participant (no kernel lock, no wake-up at a release)
 * says when it starts and stops trying: see poller_starved(). */
static void poll_begin(void)
{
	__atomic_store_n(&shm->polling_since_ns[me.slot], mono_ns(),
			 __ATOMIC_RELAXED);
}

static void poll_end(void)
{
	__atomic_store_n(&shm->polling_since_ns[me.slot], 0,
			 __ATOMIC_RELAXED);
}

/* --- libpidlock through the C API ----------------------------------------- */

/* "lib" syncs its records (PIDLOCK_SYNC), as every default handle did
 * up to 1.3.0: the mixes keep both ways, and the synced one keeps the
 * path free a moment longer between holders, as a disk user's is. */
static unsigned int lib_flags(enum kind k)
{
	switch ((int)k) {
	case K_LIB:
		return PIDLOCK_SYNC;
	case K_LIB_NOSYNC:
		return PIDLOCK_NO_SYNC;
	case K_LIB_PLAIN:
		return PIDLOCK_PLAIN_PID;
	case K_LIB_FLOCK:
		return PIDLOCK_FLOCK_ONLY;
	case K_LIB_OFD:
		return PIDLOCK_OFD_ONLY;
	case K_LIB_KEEP:
		return PIDLOCK_KEEP_FILE;
	case K_LIB_SH:
		return PIDLOCK_SHARED;
	case K_LIB_SH_KEEP:
		return PIDLOCK_SHARED | PIDLOCK_KEEP_FILE;
	default:
		return 0;
	}
}

/* Blocking, timed and try-once acquires all get their share. */
static int pick_timeout(void)
{
	uint32_t r = rnd() % 4;

	if (r < 2)
		return -1;
	return r == 2 ? (int)(1 + rnd() % 200) : 0;
}

static struct pidlock *lib_open(enum kind k)
{
	struct pidlock *lock;
	int r = pidlock_new(&lock, me.lock, lib_flags(k));

	if (r < 0)
		fail(-r, "pidlock_new");
	pidlock_set_tag(lock, kind_name(k));
	if (cfg->lib_stale && pidlock_set_stale_timeout(lock, cfg->lib_stale) < 0)
		fail(EINVAL, "stale-timeout");
	if (cfg->grace_ms && pidlock_set_grace(lock, cfg->grace_ms) < 0)
		fail(EINVAL, "grace");
	return lock;
}

static void lib_cycle(struct pidlock *lock, bool reader)
{
	long v = 0;
	int r;

	set_phase(PH_ACQUIRE);
	r = pidlock_acquire(lock, pick_timeout());
	/* EINTR: no handler runs in a participant, so it is the file
	 * system's answer (fuse-overlayfs gave one in a blocking wait, once
	 * in 1200 turns): a caller tries again, as here. */
	if (r == -EWOULDBLOCK || r == -ETIMEDOUT || r == -EINTR) {
		pause_between();
		return;
	}
	if (r < 0)
		fail(-r, "acquire");
	if (reader)
		cs_read();
	else
		v = cs_enter();
	r = pidlock_verify(lock);
	if (r == -ESTALE)
		broken("verify");
	else if (r < 0)
		fail(-r, "verify");
	if (!reader)
		cs_leave(v);
	set_phase(PH_RELEASE);
	r = pidlock_release(lock);
	if (r == -ESTALE)
		broken("release");
	else if (r < 0)
		fail(-r, "release");
	pause_between();
}

static void lib_loop(enum kind k)
{
	struct pidlock *lock = lib_open(k);

	while (!shm->stop)
		lib_cycle(lock, kind_is_reader(k));
	pidlock_free(lock);
}

/* --- fslock-guard style: flock(2) plus the inode check ---------------------- */

static int same_file(int fd)
{
	struct stat st, lst;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (lstat(me.lock, &lst) < 0)
		return errno == ENOENT ? 0 : -errno;
	return st.st_dev == lst.st_dev && st.st_ino == lst.st_ino;
}

static int fslock_take(void)
{
	for (;;) {
		int fd = open(me.lock, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
		int r;

		if (fd < 0)
			fail(errno, "fslock-open");
		while ((r = flock(fd, LOCK_EX)) < 0 && errno == EINTR)
			;
		if (r < 0)
			fail(errno, "fslock-flock");
		r = same_file(fd);
		if (r < 0)
			fail(-r, "fslock-stat");
		if (r == 1)
			return fd;
		close(fd);
	}
}

static void fslock_loop(void)
{
	while (!shm->stop) {
		int fd;
		long v;

		set_phase(PH_ACQUIRE);
		fd = fslock_take();
		v = cs_enter();
		cs_leave(v);
		/* Its deletion algorithm: unlink while held, then close. */
		set_phase(PH_RELEASE);
		if (unlink(me.lock) < 0)
			fail(errno, "fslock-unlink");
		close(fd);
		pause_between();
	}
}

/* --- libbsd pidfile(3) ----------------------------------------------------- */

#ifdef HAVE_LIBBSD
static struct pidfh *bsd_take(void)
{
	for (;;) {
		struct pidfh *pfh = pidfile_open(me.lock, 0644, NULL);

		if (pfh)
			return pfh;
		/* Busy: pidfile_open never waits, so poll. */
		if (errno != EEXIST && errno != EAGAIN && errno != EWOULDBLOCK)
			fail(errno, "pidfile_open");
		if (shm->stop)
			return NULL;
		sleep_us(200 + rnd() % 2000);
	}
}

static void bsd_loop(void)
{
	while (!shm->stop) {
		struct pidfh *pfh;
		long v;

		set_phase(PH_ACQUIRE);
		pfh = bsd_take();
		if (!pfh)
			break;
		if (pidfile_write(pfh) < 0)
			fail(errno, "pidfile_write");
		v = cs_enter();
		cs_leave(v);
		set_phase(PH_RELEASE);
		if (pidfile_remove(pfh) < 0)
			fail(errno, "pidfile_remove");
		pause_between();
	}
}
#else
static void bsd_loop(void) __attribute__((noreturn));
static void bsd_loop(void)
{
	die("built without libbsd");
}
#endif

/* --- spec-only peers (File-Based Semaphore Protocol v1.0) ------------------ */

struct spec_rec {
	long pid;
	long long ts;
	bool pid_ok, ts_ok;
};

/* As the reference readers do: lines on LF, trimmed, split at the first
 * '=', unknown keys and lines without '=' skipped, last one wins. */
static void spec_parse(char *buf, struct spec_rec *rec)
{
	char *save = NULL;

	memset(rec, 0, sizeof(*rec));
	for (char *l = strtok_r(buf, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(l, '='), *end;

		if (!eq)
			continue;
		*eq = '\0';
		if (strcmp(l, "pid") == 0) {
			rec->pid = strtol(eq + 1, &end, 10);
			rec->pid_ok = end != eq + 1 && *end == '\0' && rec->pid > 0;
		} else if (strcmp(l, "timestamp") == 0) {
			rec->ts = strtoll(eq + 1, &end, 10);
			rec->ts_ok = end != eq + 1 && *end == '\0';
		}
	}
}

/* -ENOENT: gone; 1: stale; 0: held (unparsable content is held forever,
 * as the reference implementations have it). */
static int spec_stale(bool need_dead)
{
	char buf[4096];
	struct spec_rec rec;
	int fd = open(me.lock, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0 && errno == ENOENT)
		return -ENOENT;
	if (fd < 0)
		fail(errno, "spec-open");
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		fail(errno, "spec-read");
	buf[n] = '\0';
	spec_parse(buf, &rec);
	if (!rec.pid_ok || !rec.ts_ok)
		return 0;
	if ((long long)time(NULL) - rec.ts <= (long long)cfg->spec_stale)
		return 0;
	return !need_dead || kill((pid_t)rec.pid, 0) < 0;
}

static int spec_record(char *buf, size_t size)
{
	return snprintf(buf, size, "pid=%ld\ntimestamp=%lld\ntag=spec-peer\n",
			(long)getpid(), (long long)time(NULL));
}

static void spec_take(void)
{
	char buf[128];

	for (;;) {
		int fd = open(me.lock, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
			      0644);
		int r;

		if (fd >= 0) {
			int n = spec_record(buf, sizeof(buf));

			if (write(fd, buf, (size_t)n) != n || fsync(fd) < 0)
				fail(errno, "spec-write");
			close(fd);
			return;
		}
		if (errno != EEXIST)
			fail(errno, "spec-create");
		r = spec_stale(false);
		if (r == 1) {
			/* The spec's own step, racy as its text admits. */
			if (unlink(me.lock) < 0 && errno != ENOENT)
				fail(errno, "spec-unlink-stale");
			continue;
		}
		if (r == 0)
			sleep_us(1000 + rnd() % 9000);
	}
}

static void spec_loop(void)
{
	while (!shm->stop) {
		long v;

		set_phase(PH_ACQUIRE);
		poll_begin();
		spec_take();
		poll_end();
		v = cs_enter();
		cs_leave(v);
		set_phase(PH_RELEASE);
		/* The spec's release: unlink, no ownership check. */
		if (unlink(me.lock) < 0)
			fail(errno, "spec-unlink");
		pause_between();
	}
}

/* The TypeScript-style peer: write a temp file, check that the path is
 * free, rename(2) the temp file onto it.  rename replaces whatever was
 * created in between. */
static void rename_take(void)
{
	char tmp[4200], buf[128];

	for (;;) {
		int fd, n;

		snprintf(tmp, sizeof(tmp), "%s.%ld.%08x.tmp", me.lock,
			 (long)getpid(), rnd());
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			fail(errno, "rename-tmp");
		n = spec_record(buf, sizeof(buf));
		if (write(fd, buf, (size_t)n) != n || fsync(fd) < 0)
			fail(errno, "rename-write");
		close(fd);
		if (access(me.lock, F_OK) < 0 || spec_stale(true) == 1) {
			if (rename(tmp, me.lock) < 0)
				fail(errno, "rename");
			return;
		}
		unlink(tmp);
		sleep_us(200 + rnd() % 2000);
	}
}

static void rename_loop(void)
{
	char buf[4096];

	while (!shm->stop) {
		struct spec_rec rec;
		long v;
		int fd;
		ssize_t n;

		set_phase(PH_ACQUIRE);
		rename_take();
		v = cs_enter();
		cs_leave(v);
		set_phase(PH_RELEASE);
		/* Its release refuses a file whose pid is not its own. */
		fd = open(me.lock, O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = '\0';
		spec_parse(buf, &rec);
		if (rec.pid_ok && rec.pid == getpid())
			unlink(me.lock);
		pause_between();
	}
}

/* --- dispatch --------------------------------------------------------------- */

/* --- liblockfile: dotlockfile(1) -p ---------------------------------------- */

/* One dotlockfile at a time.  liblockfile's busy path (link(2) fails,
 * then the stat(2) of its check fails because the holder just left)
 * unlinks whatever the path names next, which may be the lock that
 * another dotlockfile linked in between (doc/protocol.md, section 7):
 * two dotlockfile holders 33 us apart, once in 95 runs beside two busy
 * loops.  The mix is about us against liblockfile, not liblockfile
 * against itself, so its two pollers take turns.  The flag never
 * leaks: a dotlock participant is killed only while idle
 * (condemn_idle() in torture.c). */
static bool dotlock_turn(void)
{
	for (;;) {
		int idle = 0;

		if (__atomic_compare_exchange_n(&shm->dotlock_running, &idle, 1,
						false, __ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			return true;
		if (shm->stop)
			return false;
		sleep_us(100);
	}
}

/* dotlockfile -p -r 0: one try, writing our pid (its caller's) into
 * the lock it publishes with link(2).  0: held; 1: busy. */
static int dotlock_try(void)
{
	pid_t pid;
	int status;

	if (!dotlock_turn())
		return 1;
	pid = fork();
	if (pid < 0)
		fail(errno, "fork");
	if (pid == 0) {
		execl(cfg->dotlock, cfg->dotlock, "-p", "-q", "-r", "0", me.lock,
		      (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			fail(errno, "waitpid");
	__atomic_store_n(&shm->dotlock_running, 0, __ATOMIC_SEQ_CST);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	/* L_MAXTRYS: a valid lock is there. */
	if (WIFEXITED(status) && WEXITSTATUS(status) == 4)
		return 1;
	fail(EPROTO, "dotlockfile");
}

static void dotlock_loop(void)
{
	while (!shm->stop) {
		long v;

		set_phase(PH_ACQUIRE);
		poll_begin();
		while (dotlock_try() != 0) {
			if (shm->stop)
				return;
			sleep_us(200 + rnd() % 2000);
		}
		poll_end();
		v = cs_enter();
		/* Now and then past rule C's grace (200 ms), where only the
		 * live pid in the file keeps the lock held. */
		if (rnd() % 4 == 0)
			sleep_us(200000 + rnd() % 200000);
		cs_leave(v);
		set_phase(PH_RELEASE);
		/* lockfile_remove(3): the lock is its name. */
		if (unlink(me.lock) < 0)
			fail(errno, "unlink dotlock");
		pause_between();
	}
}

void run_participant(enum kind k, int slot, long id)
{
	me_init(cfg->dir, slot, id);
	rnd_seed((uint64_t)id * 0x9E3779B97F4A7C15ULL ^ (uint64_t)mono_ns());
	if (kind_is_lib(k))
		lib_loop(k);
	else if (k == K_FSLOCK)
		fslock_loop();
	else if (k == K_BSD)
		bsd_loop();
	else if (k == K_SPEC)
		spec_loop();
	else if (k == K_RENAME)
		rename_loop();
	else if (k == K_DOTLOCK)
		dotlock_loop();
	else
		die("kind %s is not run in process", kind_name(k));
	_exit(0);
}

/* One cycle of an external locker running our critical section. */
void exec_participant(enum kind k, int slot, long id)
{
	char lock[4096], sslot[16], sid[32], scs[16], stale[16];
	const char *argv[20];
	/* execv() takes char *const *: the union converts without a cast
	 * that drops const. */
	// cppcheck-suppress unusedStructMember
	union { const char **c; char *const *v; } args = { argv };
	int n = 0;

	snprintf(lock, sizeof(lock), "%s/" LOCK_NAME, cfg->dir);
	snprintf(sslot, sizeof(sslot), "%d", slot);
	snprintf(sid, sizeof(sid), "%ld", id);
	snprintf(scs, sizeof(scs), "%u", cfg->cs_us);
	if (k == K_CLI || k == K_CLI_KEEP || k == K_CLI_SH) {
		argv[n++] = cfg->cli;
		if (k == K_CLI_KEEP)
			argv[n++] = "--keep-file";
		if (k == K_CLI_SH)
			argv[n++] = "--shared";
		/* The tool's modes take turns, one per cycle: synced (the
		 * default up to 1.3.0), unsynced (the default now), plain
		 * pid. */
		if (id % 3 == 0)
			argv[n++] = "--sync";
		else if (id % 3 == 1)
			argv[n++] = "--no-sync";
		else if (id % 3 == 2 && !cfg->no_plain_pid)
			argv[n++] = "--plain-pid";
		/* Its stale timeout for spec holders, as the library's. */
		if (cfg->lib_stale) {
			snprintf(stale, sizeof(stale), "%u", cfg->lib_stale);
			argv[n++] = "--stale";
			argv[n++] = stale;
		}
	} else if (k == K_WLE) {
		argv[n++] = cfg->wle;
		argv[n++] = "-w";
	} else if (k == K_FLOCK1_FD) {
		/* ( flock 9 && cs ) 9<lock: absent, the cycle ends at once
		 * (after a short sleep, so that it does not spin). */
		argv[n++] = "/bin/sh";
		argv[n++] = "-c";
		argv[n++] = "{ command exec 9<\"$0\"; } 2>/dev/null || "
			    "exec sleep 0.005; \"$1\" 9 || exit 1; shift; "
			    "exec \"$@\"";
		argv[n++] = lock;
		argv[n++] = cfg->flock1;
	} else {
		argv[n++] = cfg->flock1;
	}
	if (k != K_FLOCK1_FD)
		argv[n++] = lock;
	argv[n++] = cfg->self;
	argv[n++] = "cs";
	argv[n++] = cfg->dir;
	argv[n++] = sslot;
	argv[n++] = sid;
	argv[n++] = scs;
	if (k == K_FLOCK1_RM)
		argv[n++] = "rm";
	if (k == K_CLI_SH)
		argv[n++] = "read";
	argv[n] = NULL;
	/* execv(2) takes char *const[] but never writes the strings. */
	execv(argv[0], args.v);
	die("exec %s: %m", argv[0]);
}

/* "torture cs DIR SLOT ID CS_US [rm|read]": the critical section, run
 * by an external locker that holds the lock (read: a shared holder). */
int cs_main(int argc, char **argv)
{
	static struct config c;
	long v;

	if (argc < 6)
		die("usage: torture cs DIR SLOT ID CS_US [rm]");
	c.dir = argv[2];
	c.cs_us = (unsigned int)strtoul(argv[5], NULL, 10);
	cfg = &c;
	me_init(c.dir, atoi(argv[3]), strtol(argv[4], NULL, 10));
	rnd_seed((uint64_t)me.id * 0x9E3779B97F4A7C15ULL ^ (uint64_t)mono_ns());
	if (argc > 6 && strcmp(argv[6], "read") == 0) {
		cs_read();
		set_phase(PH_RELEASE);
		return 0;
	}
	v = cs_enter();
	cs_leave(v);
	set_phase(PH_RELEASE);
	/* flock(1) users' "job; rm -f lock": unlinks without an inode check. */
	if (argc > 6 && strcmp(argv[6], "rm") == 0 && unlink(me.lock) < 0 &&
	    errno != ENOENT)
		fail(errno, "rm");
	return 0;
}
