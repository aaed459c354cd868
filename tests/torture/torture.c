/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * torture: the supervisor.  Starts the participants of one mix on one
 * lock path, SIGKILLs them at random moments and restarts them, stops
 * them, and then checks the journal, the counter, that everybody
 * finished, and that nothing left at the path blocks a libpidlock
 * acquirer.  See tests/torture/README for the mixes and the figures.
 */
#define _GNU_SOURCE
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pidlock.h>

#include "torture.h"

const struct config *cfg;
struct shm *shm;

static __thread uint64_t rnd_state = 0x853c49e6748fea9bULL;

int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void rnd_seed(uint64_t seed)
{
	rnd_state = seed ? seed : 1;
}

/* xorshift64*: good enough to pick victims and sleeps. */
uint32_t rnd(void)
{
	rnd_state ^= rnd_state >> 12;
	rnd_state ^= rnd_state << 25;
	rnd_state ^= rnd_state >> 27;
	return (uint32_t)((rnd_state * 0x2545F4914F6CDD1DULL) >> 32);
}

void sleep_us(unsigned int us)
{
	struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "torture[%ld]: ", (long)getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	_exit(2);
}

static const char *const kind_names[K_NKINDS] = {
	[K_LIB] = "lib", [K_LIB_NOSYNC] = "lib-nosync",
	[K_LIB_PLAIN] = "lib-plainpid", [K_LIB_FLOCK] = "lib-flockonly",
	[K_LIB_OFD] = "lib-ofdonly", [K_LIB_KEEP] = "lib-keepfile",
	[K_LIB_SH] = "lib-shared", [K_LIB_SH_KEEP] = "lib-shared-keepfile",
	[K_CLI_SH] = "pidlock-cli-shared",
	[K_CLI] = "pidlock-cli", [K_CLI_KEEP] = "pidlock-cli-keepfile",
	[K_WLE] = "with-lock-ex", [K_FSLOCK] = "fslock-guard",
	[K_BSD] = "libbsd-pidfile", [K_SPEC] = "spec-peer",
	[K_FLOCK1] = "flock1", [K_FLOCK1_RM] = "flock1-rm",
	[K_FLOCK1_FD] = "flock1-fd",
	[K_RENAME] = "spec-rename-peer", [K_DOTLOCK] = "dotlockfile",
};

static const char *const phase_names[PH_NPHASES] = {
	"starting", "acquire", "critical", "release", "idle",
};

const char *kind_name(enum kind k)
{
	return kind_names[k];
}

bool kind_is_lib(enum kind k)
{
	return k <= K_LIB_SH_KEEP;
}

bool kind_is_exec(enum kind k)
{
	return k == K_CLI || k == K_CLI_KEEP || k == K_CLI_SH || k == K_WLE ||
	       k == K_FLOCK1 || k == K_FLOCK1_RM || k == K_FLOCK1_FD;
}

/* Shared holders: many at once, never beside a writer. */
bool kind_is_reader(enum kind k)
{
	return k == K_LIB_SH || k == K_LIB_SH_KEEP || k == K_CLI_SH;
}

int map_shm(const char *dir, bool create)
{
	char path[4096];
	int fd;
	void *p;

	snprintf(path, sizeof(path), "%s/" SHM_NAME, dir);
	fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0),
		  0644);
	if (fd < 0)
		return -errno;
	if (create && ftruncate(fd, sizeof(struct shm)) < 0) {
		close(fd);
		return -errno;
	}
	p = mmap(NULL, sizeof(struct shm), PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	shm = p;
	return 0;
}

/* --- mixes ------------------------------------------------------------------ */

enum expect { SAFE, UNSAFE };

struct mix {
	const char *name;
	enum expect expect;
	unsigned int lib_flags;	/* of the final check's handle */
	enum kind kinds[8];	/* K_NKINDS ends; K_CLI dropped without a CLI */
	enum kind fill[4];	/* kinds that fill up to --procs */
	bool empty_first;	/* the path starts as flock(1) leaves it */
};

#define END K_NKINDS
static const struct mix mixes[] = {
	{ "flock", SAFE, 0,
	  { K_LIB, K_LIB_NOSYNC, K_LIB_PLAIN, K_CLI, K_FSLOCK, K_BSD, END },
	  { K_LIB, K_FSLOCK, K_BSD, END }, false },
	{ "fcntl", SAFE, 0,
	  { K_LIB, K_LIB_NOSYNC, K_LIB_PLAIN, K_CLI, K_WLE, K_WLE, END },
	  { K_LIB, K_WLE, END }, false },
	/* One spec peer: two of them race each other in the spec's own
	 * stale removal, which is no business of ours. */
	{ "spec", SAFE, 0,
	  { K_LIB, K_LIB_NOSYNC, K_LIB_PLAIN, K_CLI, K_SPEC, END },
	  { K_LIB, K_LIB_NOSYNC, END }, false },
	{ "alone", SAFE, 0,
	  { K_LIB, K_LIB_NOSYNC, K_LIB_PLAIN, K_LIB_FLOCK, K_LIB_OFD,
	    K_LIB_KEEP, K_CLI, END },
	  { K_LIB, K_LIB_FLOCK, K_LIB_OFD, END }, false },
	/* Default-flag libpidlock and flock(1) on a path flock(1) has used
	 * first: the empty file is kept for good, so flock(1) never holds
	 * an orphan (doc/protocol.md, "Kept files"). */
	{ "flock1", SAFE, 0,
	  { K_LIB, K_FLOCK1, K_CLI, K_LIB_NOSYNC, K_FLOCK1, END },
	  { K_LIB, K_FLOCK1, END }, true },
	/* pidlock(1) and flock(1) on a path whose file pidlock(1) makes:
	 * flock(1) opens it through a shell's "9<", which never creates
	 * it, so it is never a file flock(1) made, never kept for good,
	 * and unlinked by every release that finds nobody else on it
	 * (PIDLOCK_KEEP_IF_USED, which pidlock(1) sets).  The shell holds
	 * the file open while flock(1) starts: the widest window. */
	{ "flock1-made", SAFE, 0,
	  { K_CLI, K_FLOCK1_FD, K_CLI, K_FLOCK1_FD, END },
	  { K_CLI, K_FLOCK1_FD, END }, false },
	/* The same with flock(1)'s own "flock FILE cmd", which makes the
	 * file when it finds none: from then on the file is an empty one
	 * taken over, kept for good (doc/protocol.md, "Kept files"). */
	{ "flock1-new", SAFE, 0,
	  { K_CLI, K_FLOCK1, K_CLI, K_FLOCK1, END },
	  { K_CLI, K_FLOCK1, END }, false },
	{ "keepfile", SAFE, PIDLOCK_KEEP_FILE,
	  { K_LIB_KEEP, K_FLOCK1, K_CLI_KEEP, K_LIB_KEEP, K_FLOCK1, END },
	  { K_LIB_KEEP, K_FLOCK1, END }, false },
	/* Shared holders (readers) and exclusive ones (writers): readers
	 * together, never beside a writer; the last reader out unlinks. */
	{ "shared", SAFE, 0,
	  { K_LIB_SH, K_LIB, K_CLI_SH, K_LIB_NOSYNC, K_LIB_SH, K_CLI, END },
	  { K_LIB_SH, K_LIB, END }, false },
	{ "shared-keep", SAFE, PIDLOCK_KEEP_FILE,
	  { K_LIB_SH_KEEP, K_LIB_KEEP, K_LIB_SH_KEEP, K_FLOCK1, END },
	  { K_LIB_SH_KEEP, K_LIB_KEEP, END }, false },
	/* liblockfile's dotlocks: held while the pid in them lives
	 * (doc/protocol.md, rule C).  No bare-pid or kept records of ours:
	 * liblockfile would read the one as a dead holder's and remove it
	 * while we take it over, and wait 5 minutes on the other. */
	{ "dotlock", SAFE, 0,
	  { K_LIB, K_DOTLOCK, K_CLI, K_LIB_NOSYNC, K_DOTLOCK, END },
	  { K_LIB, K_DOTLOCK, END }, false },
	{ "unsafe-flock", UNSAFE, 0,
	  { K_LIB, K_FLOCK1_RM, K_LIB, K_FLOCK1_RM, END },
	  { K_LIB, K_FLOCK1_RM, END }, false },
	{ "unsafe-rename", UNSAFE, 0,
	  { K_LIB, K_RENAME, K_LIB, K_RENAME, END },
	  { K_LIB, K_RENAME, END }, false },
};

static const struct mix *find_mix(const char *name)
{
	for (size_t i = 0; i < sizeof(mixes) / sizeof(mixes[0]); i++)
		if (strcmp(mixes[i].name, name) == 0)
			return &mixes[i];
	return NULL;
}

/* --- the supervisor's state ---------------------------------------------- */

struct slot {
	enum kind kind;
	pid_t pid;		/* 0: not running */
	long id;
	bool killed;		/* by us, since its start */
};

struct opts {
	const struct mix *mix;
	double duration;
	int procs;
	double kill_rate;
	double bound;		/* seconds for everybody to finish */
	double stuck;		/* seconds without a holder = stuck */
	uint64_t seed;
	bool keep_dir;
	bool slow;		/* participants under valgrind */
	int verbose;
};

static struct {
	struct config cfg;
	struct opts o;
	struct slot slots[MAX_SLOTS];
	int nslots;
	unsigned char *kind_of;	/* by instance id */
	long ninst, cap;
	long restarts;
	long bad_exits;
	int jfd;
	const char *failure;	/* first thing that went wrong */
} S;

static void note_failure(const char *what)
{
	if (!S.failure)
		S.failure = what;
}

static long new_instance(enum kind k)
{
	if (S.ninst + 1 >= S.cap) {
		long cap = S.cap ? S.cap * 2 : 1024;
		unsigned char *p = realloc(S.kind_of, (size_t)cap);

		if (!p)
			die("out of memory");
		S.kind_of = p;
		S.cap = cap;
	}
	S.kind_of[++S.ninst] = (unsigned char)k;
	return S.ninst;
}

static void child_setup(void)
{
	/* Own group: the killer takes a tool and its command together. */
	setpgid(0, 0);
	/* Nobody outlives an interrupted run. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
}

static void spawn(int i)
{
	struct slot *s = &S.slots[i];
	long id = new_instance(s->kind);
	pid_t pid;

	shm->phase[i] = PH_NONE;
	shm->condemned[i] = 0;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork: %m");
	if (pid == 0) {
		child_setup();
		if (kind_is_exec(s->kind)) {
			shm->phase[i] = PH_ACQUIRE;
			exec_participant(s->kind, i, id);
		}
		run_participant(s->kind, i, id);
	}
	setpgid(pid, pid);
	s->pid = pid;
	s->id = id;
	s->killed = false;
}

static struct slot *slot_of(pid_t pid)
{
	for (int i = 0; i < S.nslots; i++)
		if (S.slots[i].pid == pid)
			return &S.slots[i];
	return NULL;
}

static void reaped(struct slot *s, int status)
{
	bool ours = s->killed && WIFSIGNALED(status) &&
		    WTERMSIG(status) == SIGKILL;

	if (!ours && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		S.bad_exits++;
		note_failure("a participant failed");
		if (WIFSIGNALED(status))
			fprintf(stderr, "FAILURE: %s instance %ld died of signal %d\n",
				kind_name(s->kind), s->id, WTERMSIG(status));
		else
			fprintf(stderr, "FAILURE: %s instance %ld exited with %d\n",
				kind_name(s->kind), s->id, WEXITSTATUS(status));
	}
	s->pid = 0;
	shm->phase[s - S.slots] = PH_NONE;
}

/* Reap whoever is done; restart them while the storm lasts. */
static int reap(bool restart)
{
	int status, n = 0;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		struct slot *s = slot_of(pid);

		if (!s)
			continue;
		reaped(s, status);
		n++;
		if (restart) {
			spawn((int)(s - S.slots));
			S.restarts++;
		}
	}
	return n;
}

/* --- the killer ------------------------------------------------------------- */

static int running_in(enum phase want, int *cand)
{
	int n = 0;

	for (int i = 0; i < S.nslots; i++) {
		if (!S.slots[i].pid || S.slots[i].killed)
			continue;
		/* A dotlock of a killed holder is stale to liblockfile and
		 * to us alike, and liblockfile's removal of a stale lock
		 * races with whoever takes it (two liblockfile users race
		 * the same way): its holders die only while idle. */
		if (S.slots[i].kind == K_DOTLOCK && shm->phase[i] != PH_IDLE)
			continue;
		if (want == PH_NONE || shm->phase[i] == (int)want)
			cand[n++] = i;
	}
	return n;
}

/* Holders and releasers are brief: watch for one for a few ms. */
static int pick_victim(void)
{
	static const enum phase want_of[] = { PH_CS, PH_CS, PH_RELEASE,
		PH_RELEASE, PH_ACQUIRE, PH_ACQUIRE, PH_NONE, PH_NONE };
	enum phase want = want_of[rnd() % 8];
	int64_t until = mono_ns() + 20 * 1000000LL;
	int cand[MAX_SLOTS], n;

	while ((n = running_in(want, cand)) == 0 && mono_ns() < until)
		sched_yield();
	if (n == 0)
		n = running_in(PH_NONE, cand);
	return n ? cand[rnd() % (unsigned int)n] : -1;
}

/* A dotlock participant dies only while idle (running_in()), but it was
 * seen idle some time ago, and under load it may since have forked
 * dotlockfile (whose temp file the kill would leave) or taken the lock
 * (whose stale removal races, doc/protocol.md).  Claim it, then look
 * again: either this sees it left idle, or set_phase() sees the claim
 * and waits there, lock-free, for the kill.  false: let it go. */
static bool condemn_idle(int i)
{
	if (S.slots[i].kind != K_DOTLOCK)
		return true;
	__atomic_store_n(&shm->condemned[i], 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&shm->phase[i], __ATOMIC_SEQ_CST) == PH_IDLE)
		return true;
	__atomic_store_n(&shm->condemned[i], 0, __ATOMIC_SEQ_CST);
	return false;
}

static void kill_one(void)
{
	int i = pick_victim();
	struct slot *s;
	int phase;

	if (i < 0 || !condemn_idle(i))
		return;
	s = &S.slots[i];
	phase = shm->phase[i];
	/* Written before the kill: nobody can take the lock from the victim
	 * before this line is in the journal. */
	journal_line(S.jfd, "K %ld %d %lld\n", s->id, phase,
		     (long long)mono_ns());
	s->killed = true;
	if (kill(-s->pid, SIGKILL) < 0 && errno != ESRCH)
		die("kill: %m");
}

static int64_t next_kill_gap(void)
{
	double mean_ns = 1e9 / S.o.kill_rate;

	/* Uniform on [0, 2 * mean): random moments, the asked-for rate. */
	return (int64_t)(mean_ns * 2.0 * (rnd() / 4294967296.0));
}

/* --- the storm ------------------------------------------------------------- */

static bool shown_yet(void)
{
	struct kill_stat ks;
	bool shown;

	journal_check(S.cfg.dir, S.ninst, S.kind_of, &ks, -1);
	shown = ks.violations > 0 && ks.stale_reports > 0;
	kill_stat_free(&ks);
	return shown;
}

static void storm(void)
{
	int64_t start = mono_ns(), now;
	int64_t end = start + (int64_t)(S.o.duration * 1e9);
	int64_t next_kill = S.o.kill_rate > 0 ? start + next_kill_gap() : -1;
	int64_t next_look = start;

	shm->last_enter_ns = start;
	for (int i = 0; i < S.nslots; i++)
		spawn(i);
	while ((now = mono_ns()) < end) {
		reap(true);
		if (next_kill >= 0 && now >= next_kill) {
			kill_one();
			next_kill = now + next_kill_gap();
		}
		if (now - shm->last_enter_ns > (int64_t)(S.o.stuck * 1e9)) {
			fprintf(stderr, "STUCK: nobody got the lock for %.1f s\n",
				S.o.stuck);
			note_failure("stuck");
			break;
		}
		/* The broken mixes stop as soon as the breakage is shown. */
		if (S.o.mix->expect == UNSAFE && now >= next_look) {
			if (shown_yet())
				break;
			next_look = now + 200 * 1000000LL;
		}
		sleep_us(1000);
	}
}

/* Stop everybody; whoever is not done within the bound is deadlocked. */
static void wind_down(void)
{
	int64_t until = mono_ns() + (int64_t)(S.o.bound * 1e9);
	int left;

	shm->stop = 1;
	do {
		reap(false);
		left = 0;
		for (int i = 0; i < S.nslots; i++)
			left += S.slots[i].pid != 0;
		if (left)
			sleep_us(2000);
	} while (left && mono_ns() < until);
	for (int i = 0; i < S.nslots && left; i++) {
		struct slot *s = &S.slots[i];

		if (!s->pid)
			continue;
		fprintf(stderr, "DEADLOCK: %s instance %ld still in phase '%s' %.0f s after the stop\n",
			kind_name(s->kind), s->id, phase_names[shm->phase[i]],
			S.o.bound);
		note_failure("deadlock");
		s->killed = true;
		kill(-s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		s->pid = 0;
	}
}

/* --- after the storm ------------------------------------------------------- */

/*
 * Nothing left behind may block a libpidlock acquirer.  The bound: an
 * empty file of an external locker waits out the grace (it might be a
 * spec writer's), a killed spec holder's file its stale timeout.
 */
static void final_acquire(void)
{
	char path[4096];
	struct pidlock *lock;
	struct pidlock_info info;
	int timeout = (int)(S.cfg.grace_ms ? S.cfg.grace_ms : 1000) + 1000;
	int r;

	if (S.cfg.lib_stale)
		timeout += (int)(S.cfg.lib_stale + 1) * 1000;

	snprintf(path, sizeof(path), "%s/" LOCK_NAME, S.cfg.dir);
	r = pidlock_new(&lock, path, S.o.mix->lib_flags);
	if (r < 0)
		die("pidlock_new: %s", strerror(-r));
	if (S.cfg.lib_stale)
		pidlock_set_stale_timeout(lock, S.cfg.lib_stale);
	r = pidlock_acquire(lock, timeout);
	if (r < 0) {
		fprintf(stderr, "LEFTOVER: a libpidlock acquire after the storm failed: %s\n",
			strerror(-r));
		if (pidlock_holder(lock, &info) == 0)
			fprintf(stderr, "  holder: state %s pid %d\n",
				pidlock_state_name(info.state), (int)info.pid);
		note_failure("leftover");
	} else if ((r = pidlock_release(lock)) < 0) {
		fprintf(stderr, "LEFTOVER: release after the storm: %s\n",
			strerror(-r));
		note_failure("leftover");
	}
	pidlock_free(lock);
}

static bool expected_file(const char *name)
{
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	    strcmp(name, JOURNAL_NAME) == 0 || strcmp(name, COUNTER_NAME) == 0 ||
	    strcmp(name, SHM_NAME) == 0)
		return true;
	return false;
}

/*
 * The lock file may stay after the storm only as a kept file that its
 * last holder released: once a keep-file holder or an inode-blind peer
 * (an empty file, a bare pid) has used the path, every later holder
 * keeps the inode.  Nobody holds it now, so it must read as free.
 */
static bool kept_and_free(const char *name)
{
	char path[PATH_MAX];
	struct pidlock_info info;
	int r;

	if (strcmp(name, LOCK_NAME) != 0)
		return false;
	snprintf(path, sizeof(path), "%s/" LOCK_NAME, S.cfg.dir);
	r = pidlock_inspect(path, &info, 0);
	if (r == 0 && info.state == PIDLOCK_STATE_FREE)
		return true;
	fprintf(stderr, "LEFTOVER: %s is %s after the storm, not free\n",
		path, r < 0 ? strerror(-r) : pidlock_state_name(info.state));
	return false;
}

/* Temp files of a killed acquirer would be litter nobody removes. */
static void leftover_files(void)
{
	DIR *d = opendir(S.cfg.dir);
	struct dirent *de;
	int litter = 0;

	if (!d)
		die("%s: %m", S.cfg.dir);

	while ((de = readdir(d))) {
		if (expected_file(de->d_name) || kept_and_free(de->d_name))
			continue;
		/* With O_TMPFILE refused, a kill between creating the named
		 * temp file and publishing it leaves that file: nobody can
		 * unlink for a SIGKILLed process.  It blocks nobody. */
		if (strncmp(de->d_name, ".pidlock-tmp-", 13) == 0) {
			litter++;
			continue;
		}
		fprintf(stderr, "LEFTOVER: file %s/%s after the storm\n",
			S.cfg.dir, de->d_name);
		note_failure("leftover");
	}
	closedir(d);
	if (litter)
		printf("  note: %d named temp files of SIGKILLed acquirers left (O_TMPFILE unavailable)\n",
		       litter);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void print_latency(const char *what, int64_t *v, long n)
{
	if (n == 0) {
		printf("  kill -> next holder (%s): no such kills\n", what);
		return;
	}
	long mid = n / 2;

	qsort(v, (size_t)n, sizeof(*v), cmp_i64);
	printf("  kill -> next holder (%s, n=%ld): median %.2f ms, max %.2f ms\n",
	       what, n, (double)v[mid] / 1e6, (double)v[n - 1] / 1e6);
}

static void print_participants(const struct kill_stat *ks)
{
	int count[K_NKINDS] = { 0 };

	for (int i = 0; i < S.nslots; i++)
		count[S.slots[i].kind]++;
	printf("  participants:");
	for (int k = 0; k < K_NKINDS; k++)
		if (count[k])
			printf(" %s x%d (%ld acquisitions)", kind_name((enum kind)k),
			       count[k], ks->per_kind[k]);
	printf("\n");
}

static void report(struct kill_stat *ks, double secs)
{
	printf("torture mix=%s seed=%llu: %d processes, %.1f s, kill rate %.1f/s\n",
	       S.o.mix->name, (unsigned long long)S.o.seed, S.nslots, secs,
	       S.o.kill_rate);
	print_participants(ks);
	printf("  acquisitions %ld, clean leaves %ld, instances %ld, kills %ld (acquire %ld, critical %ld, release %ld, idle %ld, starting %ld), holder kills %ld\n",
	       ks->acquisitions, ks->leaves, S.ninst, ks->kills,
	       ks->by_phase[PH_ACQUIRE], ks->by_phase[PH_CS],
	       ks->by_phase[PH_RELEASE], ks->by_phase[PH_IDLE],
	       ks->by_phase[PH_NONE], ks->holder_kills);
	print_latency("holder killed", ks->lat_ns, ks->nlat);
	print_latency("any kill", ks->lat_all_ns, ks->nlat_all);
	printf("  counter %ld (journal %ld); violations %ld; counter errors %ld; libpidlock -ESTALE reports %ld; participant failures %ld\n",
	       ks->final_counter, ks->expected_counter, ks->violations,
	       ks->counter_errors, ks->stale_reports, ks->failures + S.bad_exits);
}

/* Did every kind of locker in the mix take the lock at least once? */
static void check_all_took_part(const struct kill_stat *ks)
{
	for (int i = 0; i < S.nslots; i++) {
		enum kind k = S.slots[i].kind;

		if (ks->per_kind[k] > 0)
			continue;
		fprintf(stderr, "FAILURE: %s never got the lock\n", kind_name(k));
		note_failure("a participant never got the lock");
		return;
	}
}

static int verdict(struct kill_stat *ks)
{
	if (S.o.mix->expect == UNSAFE) {
		if (ks->violations > 0 && ks->stale_reports > 0) {
			printf("  SHOWN: exclusion broken %ld times; libpidlock reported the broken lock %ld times\n",
			       ks->violations, ks->stale_reports);
			return 0;
		}
		fprintf(stderr, "FAILURE: the breakage was not shown (violations %ld, -ESTALE reports %ld)\n",
			ks->violations, ks->stale_reports);
		return 1;
	}
	if (ks->stale_reports) {
		fprintf(stderr, "FAILURE: libpidlock found its lock broken\n");
		note_failure("broken lock");
	}
	check_all_took_part(ks);
	if (S.failure || ks->violations || ks->counter_errors || ks->failures) {
		fprintf(stderr, "FAIL (%s)\n", S.failure ? S.failure : "journal");
		return 1;
	}
	printf("  PASS\n");
	return 0;
}

/* --- options and set-up ---------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: torture --mix NAME [options]\n"
		"  --mix flock|fcntl|spec|alone|flock1|flock1-made|flock1-new|keepfile|\n"
		"        shared|shared-keep|dotlock|unsafe-flock|unsafe-rename\n"
		"  --duration SEC     length of the storm (6)\n"
		"  --procs N          participants (at least one of each kind)\n"
		"  --kill-rate R      SIGKILLs per second (8; 0 for none)\n"
		"  --cli PATH         the pidlock tool, if built\n"
		"  --with-lock-ex P   --flock P   the external lockers\n"
		"  --cs-us N          longest sleep in the critical section (2000)\n"
		"  --spec-stale SEC   spec peers' stale timeout (1)\n"
		"  --grace MS         libpidlock grace (library default)\n"
		"  --bound SEC        time allowed to finish after the stop (30)\n"
		"  --slow             wider margins, for participants under valgrind\n"
		"  --seed N  --dir DIR  --keep  --verbose\n"
		"  torture cs DIR SLOT ID CS_US [rm]   (internal)\n");
}

static void defaults(void)
{
	S.o.duration = 6;
	S.o.kill_rate = 8;
	S.o.bound = 30;
	S.o.stuck = 15;
	S.o.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	S.cfg.wle = "/usr/bin/with-lock-ex";
	S.cfg.flock1 = "/usr/bin/flock";
	S.cfg.dotlock = "/usr/bin/dotlockfile";
	S.cfg.cs_us = 2000;
	S.cfg.spec_stale = 1;
}

static void parse_opts(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "mix", 1, 0, 'm' }, { "duration", 1, 0, 'd' },
		{ "procs", 1, 0, 'p' }, { "kill-rate", 1, 0, 'k' },
		{ "cli", 1, 0, 'c' }, { "with-lock-ex", 1, 0, 'w' },
		{ "flock", 1, 0, 'f' }, { "cs-us", 1, 0, 'u' },
		{ "spec-stale", 1, 0, 's' }, { "grace", 1, 0, 'g' },
		{ "bound", 1, 0, 'b' }, { "seed", 1, 0, 'S' },
		{ "dir", 1, 0, 'D' }, { "keep", 0, 0, 'K' },
		{ "verbose", 0, 0, 'v' }, { "slow", 0, 0, 'L' },
		{ "help", 0, 0, 'h' }, { 0 }
	};
	int c;

	defaults();
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'm': S.o.mix = find_mix(optarg);
			  if (!S.o.mix)
				  die("unknown mix '%s'", optarg);
			  break;
		case 'd': S.o.duration = atof(optarg); break;
		case 'p': S.o.procs = atoi(optarg); break;
		case 'k': S.o.kill_rate = atof(optarg); break;
		case 'c': S.cfg.cli = optarg[0] ? optarg : NULL; break;
		case 'w': S.cfg.wle = optarg; break;
		case 'f': S.cfg.flock1 = optarg; break;
		case 'u': S.cfg.cs_us = (unsigned int)atoi(optarg); break;
		case 's': S.cfg.spec_stale = (unsigned int)atoi(optarg); break;
		case 'g': S.cfg.grace_ms = (unsigned int)atoi(optarg); break;
		case 'b': S.o.bound = atof(optarg); break;
		case 'S': S.o.seed = strtoull(optarg, NULL, 0); break;
		case 'D': S.cfg.dir = optarg; break;
		case 'K': S.o.keep_dir = true; break;
		case 'v': S.o.verbose = 1; break;
		case 'L': S.o.slow = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(64);
		}
	}
	if (!S.o.mix || optind != argc) {
		usage(stderr);
		exit(64);
	}
}

static bool kind_available(enum kind k)
{
	if (k == K_CLI || k == K_CLI_KEEP || k == K_CLI_SH)
		return S.cfg.cli != NULL;
	return true;
}

static void add_slot(enum kind k)
{
	if (S.nslots >= MAX_SLOTS)
		die("too many participants (at most %d)", MAX_SLOTS);
	S.slots[S.nslots++].kind = k;
}

static void build_slots(void)
{
	const struct mix *m = S.o.mix;
	int f = 0, nfill = 0;

	for (int i = 0; m->kinds[i] != END; i++)
		if (kind_available(m->kinds[i]))
			add_slot(m->kinds[i]);
	while (m->fill[nfill] != END)
		nfill++;
	while (nfill > 0 && S.nslots < S.o.procs)
		add_slot(m->fill[f++ % nfill]);
}

static void check_tools(void)
{
	for (int i = 0; i < S.nslots; i++) {
		enum kind k = S.slots[i].kind;
		const char *p = k == K_WLE ? S.cfg.wle
			      : k == K_FLOCK1 || k == K_FLOCK1_RM ||
				k == K_FLOCK1_FD ? S.cfg.flock1
			      : k == K_DOTLOCK ? S.cfg.dotlock
			      : NULL;

		if (p && access(p, X_OK) < 0)
			die("%s: %m (needed by the %s participant)", p,
			    kind_name(k));
#ifndef HAVE_LIBBSD
		/* Only where libbsd cannot exist (a musl build) may its
		 * place go to another flock-family peer, and it says so. */
		if (k == K_BSD && !getenv("TORTURE_ALLOW_NO_LIBBSD"))
			die("libbsd is needed by the %s mix", S.o.mix->name);
		if (k == K_BSD) {
			fprintf(stderr, "torture: NOTE: no libbsd in this build; "
				"its slot runs the fslock-guard-style peer\n");
			S.slots[i].kind = K_FSLOCK;
		}
#endif
	}
}

static char dirbuf[4096], selfbuf[4096];

static void set_up_dir(void)
{
	int fd;

	if (!S.cfg.dir) {
		const char *t = getenv("TMPDIR");

		snprintf(dirbuf, sizeof(dirbuf), "%s/torture-%s-XXXXXX",
			 t && t[0] ? t : "/tmp", S.o.mix->name);
		if (!mkdtemp(dirbuf))
			die("mkdtemp %s: %m", dirbuf);
		S.cfg.dir = dirbuf;
	} else if (mkdir(S.cfg.dir, 0755) < 0 && errno != EEXIST) {
		die("%s: %m", S.cfg.dir);
	}
	if (!realpath(S.cfg.dir, dirbuf))
		die("%s: %m", S.cfg.dir);
	S.cfg.dir = dirbuf;
	if (map_shm(S.cfg.dir, true) < 0)
		die("shm: %m");
	S.jfd = journal_open(S.cfg.dir);
	if (S.jfd < 0)
		die("journal: %m");
	fd = open(S.cfg.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || counter_write(fd, 0) < 0)
		die("counter: %m");
	close(fd);
	if (S.o.mix->empty_first) {
		char path[4200];

		snprintf(path, sizeof(path), "%s/" LOCK_NAME, S.cfg.dir);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 || close(fd) < 0)
			die("%s: %m", path);
	}
}

static void remove_dir(void)
{
	DIR *d = opendir(S.cfg.dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	rmdir(S.cfg.dir);
}

static void configure_mix(void)
{
	ssize_t n = readlink("/proc/self/exe", selfbuf, sizeof(selfbuf) - 1);

	if (n < 0)
		die("/proc/self/exe: %m");
	selfbuf[n] = '\0';
	S.cfg.self = selfbuf;
	/* A spec holder that was killed blocks everybody until stale.  The
	 * spec peer removes such files first; libpidlock's stale timeout is
	 * longer, so the two never both act on one stale file (the spec's
	 * removal is racy by its own admission). */
	if (S.o.slow) {
		/* Under valgrind a spec writer can take long between its
		 * create and its write, and a holder long in its section. */
		S.o.bound = 120;
		S.o.stuck = 60;
		if (strcmp(S.o.mix->name, "spec") == 0) {
			S.cfg.spec_stale = 5;
			S.cfg.grace_ms = 3000;
		}
	}
	if (strcmp(S.o.mix->name, "spec") == 0) {
		S.cfg.lib_stale = S.cfg.spec_stale + 2;
		S.o.stuck += S.cfg.lib_stale;
	}
	S.cfg.no_plain_pid = strcmp(S.o.mix->name, "dotlock") == 0;
	if (S.o.mix->expect == UNSAFE)
		S.o.kill_rate = 0;
	if (S.o.kill_rate < 0)
		S.o.kill_rate = 0;
	cfg = &S.cfg;
	rnd_seed(S.o.seed);
}

int main(int argc, char **argv)
{
	struct kill_stat ks;
	int64_t t0;
	int rc;

	if (argc > 1 && strcmp(argv[1], "cs") == 0)
		return cs_main(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	parse_opts(argc, argv);
	configure_mix();
	build_slots();
	check_tools();
	set_up_dir();
	t0 = mono_ns();
	storm();
	wind_down();
	if (S.o.mix->expect == SAFE) {
		final_acquire();
		leftover_files();
	}
	journal_check(S.cfg.dir, S.ninst, S.kind_of, &ks, S.o.verbose);
	report(&ks, (double)(mono_ns() - t0) / 1e9);
	rc = verdict(&ks);
	kill_stat_free(&ks);
	if (rc || S.o.keep_dir)
		printf("  directory kept: %s\n", S.cfg.dir);
	else
		remove_dir();
	return rc;
}
