/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The semaphore torture (tests/torture/README, mix "slots"): many
 * processes take one of N slots of one semaphore, with pidlock_slots_*
 * in several modes and with pidlock --slots, while a killer SIGKILLs
 * random participants (holders, waiters, releasers) and restarts them.
 *
 * Each holder journals "E inst slot" after it got its slot and
 * "L inst slot" before it lets go; the killer journals "K inst" before
 * each kill.  Every record is one write(2) of JOURNAL_REC bytes on an
 * O_APPEND descriptor, so the journal is the order of events.  A slot
 * can only pass to the next holder after its holder left or died, and
 * a holder can only die after its K record; so the checker proves from
 * the journal alone:
 *   - never two live holders in one slot, and never more than N live
 *     holders at all (the over-admission count, which must be 0);
 *   - every slot number is one of 0 .. N-1 (pidlock(1) passes it in
 *     PIDLOCK_SLOT);
 *   - every slot was used, no participant failed;
 * and after the storm: N fresh tries get the N slots at once (none
 * lost), an N+1th is busy, and the lock directory holds nothing but
 * what is allowed (no temp files; nothing once the tries released).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pidlock.h>

#define JOURNAL_REC 64		/* divides the page size: never cut */
#define MAX_PROCS 64
#define MAX_N 16

enum kind { K_LIB, K_LIB_NOSYNC, K_LIB_FLOCK, K_LIB_OFD, K_CLI, K_NKINDS };

static const char *const kind_names[K_NKINDS] = {
	"lib", "lib-nosync", "lib-flockonly", "lib-ofdonly", "pidlock-cli",
};

static struct {
	const char *dir;
	const char *cli;
	const char *self;
	unsigned int n;
	int procs;
	int duration;
	int kill_rate;
	unsigned int seed;
} cfg = { .n = 3, .procs = 8, .duration = 6, .kill_rate = 8 };

static volatile int *stop_flag;	/* shared with every participant */
static char sem_path[4200], journal_path[4200], lock_dir[4100];

__attribute__((noreturn)) static void die(const char *what)
{
	fprintf(stderr, "slots-torture: %s: %s\n", what, strerror(errno));
	exit(99);
}

/* "E inst slot", "L inst slot", "K inst 0", "F inst errno call". */
static void journal_call(int fd, char op, long a, long b, const char *call)
{
	char buf[JOURNAL_REC + 1];
	int n = snprintf(buf, sizeof(buf), "%c %ld %ld %s", op, a, b, call);

	if (n < 0 || n >= JOURNAL_REC)
		n = JOURNAL_REC - 1;
	memset(buf + n, ' ', (size_t)(JOURNAL_REC - 1 - n));
	buf[JOURNAL_REC - 1] = '\n';
	if (write(fd, buf, JOURNAL_REC) != JOURNAL_REC)
		_exit(98);
}

static void journal(int fd, char op, long a, long b)
{
	journal_call(fd, op, a, b, "-");
}

static int journal_fd(void)
{
	int fd = open(journal_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
		      0644);

	if (fd < 0)
		die("journal");
	return fd;
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The critical section: a random while, up to 5 ms. */
static void critical(int fd, long inst, long slot)
{
	journal(fd, 'E', inst, slot);
	sleep_us(random() % 5000);
	journal(fd, 'L', inst, slot);
}

static unsigned int lib_flags(enum kind k)
{
	switch (k) {
	case K_LIB_NOSYNC:
		return PIDLOCK_NO_SYNC;
	case K_LIB_FLOCK:
		return PIDLOCK_FLOCK_ONLY | PIDLOCK_NO_SYNC;
	case K_LIB_OFD:
		return PIDLOCK_OFD_ONLY | PIDLOCK_NO_SYNC;
	case K_LIB:
	case K_CLI:
	case K_NKINDS:
		break;
	}
	return 0;
}

/* A try, a timed wait or a blocking wait, at random. */
static int pick_timeout(void)
{
	static const int timeouts[] = { 0, 0, 100, 500, -1 };

	return timeouts[random() % 5];
}

__attribute__((noreturn)) static void lib_participant(enum kind k, long inst,
						   int fd)
{
	struct pidlock_slots *s;
	int r = pidlock_slots_new(&s, sem_path, cfg.n, lib_flags(k));

	if (r < 0) {
		journal_call(fd, 'F', inst, -r, "slots_new");
		_exit(1);
	}
	while (!*stop_flag) {
		int slot = pidlock_slots_acquire(s, pick_timeout());

		if (slot == -EWOULDBLOCK || slot == -ETIMEDOUT) {
			sleep_us(random() % 2000);
			continue;
		}
		if (slot < 0 || pidlock_slots_slot(s) != slot) {
			journal_call(fd, 'F', inst, slot < 0 ? -slot : 0,
				     slot < 0 ? "acquire" : "slot");
			_exit(1);
		}
		critical(fd, inst, slot);
		r = pidlock_slots_release(s);
		if (r < 0) {
			journal_call(fd, 'F', inst, -r, "release");
			_exit(1);
		}
	}
	pidlock_slots_free(s);
	_exit(0);
}

/* pidlock --slots N ... SELF --cs INST: the critical section runs in
 * the command, which reads its slot from PIDLOCK_SLOT. */
__attribute__((noreturn)) static void cli_participant(long inst, int fd)
{
	char n[16], id[32];

	snprintf(n, sizeof(n), "%u", cfg.n);
	snprintf(id, sizeof(id), "%ld", inst);
	while (!*stop_flag) {
		pid_t pid = fork();
		int st;

		if (pid < 0)
			die("fork");
		if (pid == 0) {
			execl(cfg.cli, cfg.cli, "--slots", n, "--no-sync", "-w",
			      "0.5", "-E", "75", sem_path, cfg.self, "--cs", id,
			      "--dir", cfg.dir, (char *)NULL);
			_exit(97);
		}
		if (waitpid(pid, &st, 0) != pid)
			die("waitpid");
		if (!WIFEXITED(st) ||
		    (WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 75)) {
			journal_call(fd, 'F', inst, 1000 + st, "pidlock(1)");
			_exit(1);
		}
	}
	_exit(0);
}

static int cs_main(long inst)
{
	const char *v = getenv(PIDLOCK_SLOT_ENV);
	int fd = journal_fd();

	if (!v || !*v) {
		journal_call(fd, 'F', inst, 2000, "PIDLOCK_SLOT");
		return 1;
	}
	srandom((unsigned int)getpid());
	critical(fd, inst, strtol(v, NULL, 10));
	return 0;
}

struct proc {
	pid_t pid;
	long inst;
	enum kind kind;
};

static long next_inst = 1;
static unsigned char inst_kind[1 << 20];

static void start(struct proc *p, int idx)
{
	int nkinds = cfg.cli ? K_NKINDS : K_CLI;

	p->kind = (enum kind)(idx % nkinds);
	p->inst = next_inst++;
	if (p->inst < (long)sizeof(inst_kind))
		inst_kind[p->inst] = (unsigned char)p->kind;
	p->pid = fork();
	if (p->pid < 0)
		die("fork");
	if (p->pid == 0) {
		int fd = journal_fd();

		/* Its own group: a kill takes pidlock(1) and its command. */
		(void)setpgid(0, 0);
		srandom((unsigned int)getpid() ^ cfg.seed);
		if (p->kind == K_CLI)
			cli_participant(p->inst, fd);
		lib_participant(p->kind, p->inst, fd);
	}
	(void)setpgid(p->pid, p->pid);
}

static void storm(struct proc *ps, long *kills)
{
	int64_t end = (int64_t)time(NULL) + cfg.duration;
	int fd = journal_fd();

	for (int i = 0; i < cfg.procs; i++)
		start(&ps[i], i);
	while ((int64_t)time(NULL) < end) {
		int i = (int)(random() % cfg.procs);

		sleep_us(1000000L / cfg.kill_rate);
		journal(fd, 'K', ps[i].inst, 0);
		(void)kill(-ps[i].pid, SIGKILL);
		(void)waitpid(ps[i].pid, NULL, 0);
		(*kills)++;
		start(&ps[i], i);
	}
	close(fd);
}

/* After the stop, everybody leaves within 60 s, or it is a deadlock. */
static int wind_down(struct proc *ps)
{
	int64_t end = (int64_t)time(NULL) + 60;
	int bad = 0;

	*stop_flag = 1;
	for (int i = 0; i < cfg.procs; i++) {
		int st;
		pid_t w;

		while ((w = waitpid(ps[i].pid, &st, WNOHANG)) == 0 &&
		       (int64_t)time(NULL) < end)
			sleep_us(10000);
		if (w == 0) {
			fprintf(stderr, "DEADLOCK: %s participant %ld did not "
				"finish\n", kind_names[ps[i].kind], ps[i].inst);
			(void)kill(-ps[i].pid, SIGKILL);
			(void)waitpid(ps[i].pid, &st, 0);
			bad++;
		} else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			bad++;
		}
	}
	return bad;
}

struct verdict {
	long enters, leaves, kills, holder_kills, failures;
	long over_admissions, slot_clashes, bad_slots, bad_leaves;
	long max_inside;
	long per_slot[MAX_N];
	long per_kind[K_NKINDS];
};

/* The journal, replayed: who is inside which slot, alive or killed. */
static void check_journal(struct verdict *v)
{
	static long occupant[MAX_N];	/* inst inside slot k, 0 none */
	static bool killed[1 << 20], inside[1 << 20];
	static long where[1 << 20];
	long live = 0;
	char rec[JOURNAL_REC + 1];
	FILE *f = fopen(journal_path, "re");

	if (!f)
		die("journal");
	while (fgets(rec, sizeof(rec), f)) {
		char op, call[16] = "?";
		long inst, slot;

		if (sscanf(rec, "%c %ld %ld %15s", &op, &inst, &slot, call) < 3 ||
		    inst <= 0 || inst >= (long)sizeof(killed))
			continue;
		if (op == 'F') {
			fprintf(stderr, "FAILURE: %s %ld: %s: error %ld (%s)\n",
				kind_names[inst_kind[inst]], inst, call, slot,
				slot < 1000 ? strerror((int)slot) : "a status");
			v->failures++;
		} else if (op == 'K') {
			v->kills++;
			killed[inst] = true;
			if (inside[inst]) {
				v->holder_kills++;
				inside[inst] = false;
				occupant[where[inst]] = 0;
				live--;
			}
		} else if (op == 'E') {
			v->enters++;
			if (slot < 0 || slot >= (long)cfg.n) {
				fprintf(stderr, "BAD SLOT: %ld entered slot %ld\n",
					inst, slot);
				v->bad_slots++;
				continue;
			}
			v->per_slot[slot]++;
			v->per_kind[inst_kind[inst]]++;
			if (occupant[slot]) {
				fprintf(stderr, "VIOLATION: %ld (%s) entered slot "
					"%ld while %ld (%s) was inside\n", inst,
					kind_names[inst_kind[inst]], slot,
					occupant[slot],
					kind_names[inst_kind[occupant[slot]]]);
				v->slot_clashes++;
			}
			if (killed[inst])
				continue;	/* dies holding: K came first */
			occupant[slot] = inst;
			inside[inst] = true;
			where[inst] = slot;
			if (++live > (long)cfg.n) {
				fprintf(stderr, "OVER-ADMISSION: %ld holders of "
					"%u slots\n", live, cfg.n);
				v->over_admissions++;
			}
			if (live > v->max_inside)
				v->max_inside = live;
		} else if (op == 'L') {
			v->leaves++;
			if (killed[inst] && !inside[inst])
				continue;
			if (!inside[inst] || where[inst] != slot) {
				fprintf(stderr, "BAD LEAVE: %ld left slot %ld\n",
					inst, slot);
				v->bad_leaves++;
				continue;
			}
			inside[inst] = false;
			occupant[slot] = 0;
			live--;
		}
	}
	fclose(f);
}

/* N fresh tries get the N slots at once (a crashed holder's slot is
 * taken over, not lost); an N+1th is busy.  Returns the slots lost. */
static long slots_lost(void)
{
	struct pidlock_slots *s[MAX_N + 1];
	bool got[MAX_N] = { false };
	long lost = 0;

	for (unsigned int i = 0; i <= cfg.n; i++) {
		int k;

		if (pidlock_slots_new(&s[i], sem_path, cfg.n, 0) < 0)
			die("pidlock_slots_new");
		k = pidlock_slots_acquire(s[i], 0);
		if (i == cfg.n) {
			if (k != -EWOULDBLOCK) {
				fprintf(stderr, "OVER-ADMISSION: try %u of %u "
					"slots got %d\n", i + 1, cfg.n, k);
				lost = 1000;
			}
		} else if (k < 0 || got[k]) {
			fprintf(stderr, "LOST: try %u got %d\n", i + 1, k);
			lost++;
		} else {
			got[k] = true;
		}
	}
	for (unsigned int i = 0; i <= cfg.n; i++)
		pidlock_slots_free(s[i]);
	return lost;
}

static bool env_is_1(const char *name)
{
	const char *v = getenv(name);

	return v && strcmp(v, "1") == 0;
}

/*
 * A slot file that may stay after the final tries released it: a kept
 * one, free, and only where the library publishes in place (make
 * check-notmpfile refuses RENAME_NOREPLACE and O_TMPFILE).  There a
 * holder killed between its create and its write leaves an empty file,
 * which its next holder keeps for inode-blind peers (doc/protocol.md,
 * section 4).  Elsewhere a file left after a release is a leftover.
 */
static bool kept_free_slot(const char *name)
{
	char path[4400];
	struct pidlock_info info;
	unsigned int k;
	int end = 0;

	if (!env_is_1("FAULT_NORENAME") || !env_is_1("FAULT_NOTMPFILE"))
		return false;
	if (sscanf(name, "sem.%u%n", &k, &end) != 1 || name[end] || k >= cfg.n)
		return false;
	snprintf(path, sizeof(path), "%s/%s", lock_dir, name);
	return pidlock_inspect(path, &info, 0) == 0 &&
	       info.state == PIDLOCK_STATE_FREE;
}

/* What the lock directory holds after the final tries released: any
 * other name is a leftover (a temp file, a slot beyond N, a held or
 * abandoned slot). */
static long leftovers(void)
{
	DIR *d = opendir(lock_dir);
	struct dirent *de;
	long n = 0;

	if (!d)
		die("opendir");
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' && (!de->d_name[1] ||
		    (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		if (kept_free_slot(de->d_name)) {
			fprintf(stderr, "  note: kept slot file %s, free\n",
				de->d_name);
			continue;
		}
		fprintf(stderr, "LEFTOVER: %s\n", de->d_name);
		n++;
	}
	closedir(d);
	return n;
}

__attribute__((noreturn)) static void usage(void)
{
	fprintf(stderr, "usage: slots-torture --dir DIR [--slots N] [--procs P] "
		"[--duration S] [--kill-rate R] [--cli PIDLOCK] [--seed X]\n");
	exit(64);
}

static void parse(int argc, char **argv, long *cs_inst)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "slots", required_argument, NULL, 'n' },
		{ "procs", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 't' },
		{ "kill-rate", required_argument, NULL, 'k' },
		{ "cli", required_argument, NULL, 'c' },
		{ "seed", required_argument, NULL, 's' },
		{ "cs", required_argument, NULL, 'x' },
		{ NULL, 0, NULL, 0 },
	};
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'd': cfg.dir = optarg; break;
		case 'n': cfg.n = (unsigned int)atoi(optarg); break;
		case 'p': cfg.procs = atoi(optarg); break;
		case 't': cfg.duration = atoi(optarg); break;
		case 'k': cfg.kill_rate = atoi(optarg); break;
		case 'c': cfg.cli = optarg[0] ? optarg : NULL; break;
		case 's': cfg.seed = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'x': *cs_inst = atol(optarg); break;
		default: usage();
		}
	}
	if (!cfg.dir || cfg.n < 1 || cfg.n > MAX_N || cfg.procs < 1 ||
	    cfg.procs > MAX_PROCS || cfg.duration < 1 || cfg.kill_rate < 1)
		usage();
}

int main(int argc, char **argv)
{
	struct proc ps[MAX_PROCS];
	struct verdict v = { 0 };
	long cs_inst = 0, kills = 0, lost, left;
	int bad_exits;
	bool ok;

	parse(argc, argv, &cs_inst);
	snprintf(journal_path, sizeof(journal_path), "%s/journal", cfg.dir);
	snprintf(lock_dir, sizeof(lock_dir), "%s/locks", cfg.dir);
	snprintf(sem_path, sizeof(sem_path), "%s/sem", lock_dir);
	if (cs_inst)
		return cs_main(cs_inst);
	cfg.self = argv[0][0] == '/' ? argv[0] : realpath(argv[0], NULL);
	if (!cfg.seed)
		cfg.seed = (unsigned int)time(NULL) ^ (unsigned int)getpid();
	srandom(cfg.seed);
	if (mkdir(lock_dir, 0755) < 0)
		die(lock_dir);
	stop_flag = mmap(NULL, sizeof(*stop_flag), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (stop_flag == MAP_FAILED)
		die("mmap");
	storm(ps, &kills);
	bad_exits = wind_down(ps);
	check_journal(&v);
	lost = slots_lost();
	left = leftovers();
	printf("slots: %u slots, %d participants (%s), %d s, seed %u\n", cfg.n,
	       cfg.procs, cfg.cli ? "with pidlock(1)" : "library only",
	       cfg.duration, cfg.seed);
	printf("  acquisitions %ld:", v.enters);
	for (int k = 0; k < K_NKINDS; k++)
		if (v.per_kind[k])
			printf(" %s %ld", kind_names[k], v.per_kind[k]);
	printf("\n  per slot:");
	for (unsigned int k = 0; k < cfg.n; k++)
		printf(" %u:%ld", k, v.per_slot[k]);
	printf("\n  SIGKILLs %ld (%ld of holders), most inside at once %ld\n",
	       kills, v.holder_kills, v.max_inside);
	printf("  over-admissions %ld, slot clashes %ld, bad slot numbers %ld, "
	       "bad leaves %ld\n", v.over_admissions, v.slot_clashes,
	       v.bad_slots, v.bad_leaves);
	printf("  participant failures %ld, bad exits %d, slots lost %ld, "
	       "leftover files %ld\n", v.failures, bad_exits, lost, left);
	ok = !v.over_admissions && !v.slot_clashes && !v.bad_slots &&
	     !v.bad_leaves && !v.failures && !bad_exits && !lost && !left &&
	     v.enters > 0;
	for (unsigned int k = 0; k < cfg.n; k++)
		ok = ok && v.per_slot[k] > 0;
	printf("%s\n", ok ? "PASS" : "FAIL");
	return ok ? 0 : 1;
}
