/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared (read) locks, PIDLOCK_SHARED: doc/protocol.md, "Shared locks".
 * Real processes and real peers: flock(1) -s and -x, with-lock-ex,
 * classic fcntl(2) read and write locks taken by a forked process, and
 * a spec-only reader.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define SH PIDLOCK_SHARED

/* pid= of the record at path, 0 if none. */
static long record_pid(const char *path)
{
	const char *s = strstr(tu_read(path), "pid=");

	return s ? strtol(s + 4, NULL, 10) : 0;
}

/* tu_hold() with a bounded wait: a reader that is wrongly kept out
 * fails the test in seconds instead of hanging it. */
static int hold_fn(struct tu_child *c, void *arg)
{
	struct pidlock *l = arg;
	int r = pidlock_acquire(l, 5000);

	tu_signal(c, r == 0 ? 'L' : 'F');
	if (r == 0)
		r = tu_wait_parent(c) != 'R' ? 3 : pidlock_release(l) == 0 ? 0 : 4;
	pidlock_free(l);
	return r == 0 ? 0 : 2;
}

static void hold(struct tu_child *c, const char *path, unsigned int flags)
{
	struct pidlock *l = tu_new(path, flags);

	tu_spawn(c, hold_fn, l);
	pidlock_free(l);	/* never acquired here: frees memory only */
	ck_assert_msg(tu_wait_signal(c) == 'L', "a holder (flags %#x) was "
		      "refused the lock", flags);
}

static void assert_try(const char *path, unsigned int flags, int expect,
		       const char *what)
{
	struct pidlock *l = tu_new(path, flags);
	int r = pidlock_acquire(l, 0);

	ck_assert_msg(r == expect, "%s: acquire %d, expected %d", what, r,
		      expect);
	pidlock_free(l);
}

/*
 * Shared holders hold together; an exclusive acquirer is kept out by
 * them, and keeps them out.  The kernel's locks decide: LOCK_SH and an
 * OFD read lock against LOCK_EX and an OFD write lock.
 */
TU_LOCK_TEST(shared_holders_coexist, SH)
{
	struct tu_child a, b;
	struct pidlock_info info;

	hold(&a, p, SH);
	hold(&b, p, SH);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_verify(l), 0);
	assert_try(p, 0, -EWOULDBLOCK, "exclusive among readers");
	/* A reader of one kind is not kept out by readers of the other. */
	assert_try(p, SH | PIDLOCK_OFD_ONLY, 0, "ofd-only reader among readers");
	assert_try(p, SH | PIDLOCK_FLOCK_ONLY, 0,
		   "flock-only reader among readers");
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_int_eq(info.state, PIDLOCK_STATE_HELD);
	ck_assert_uint_eq(info.shared, 1);
	ck_assert_uint_eq(info.holders, 3);
	ck_assert_int_eq(pidlock_release(l), 0);
	tu_tell(&a, 'R');
	ck_assert_int_eq(tu_join(&a), 0);
	tu_tell(&b, 'R');
	ck_assert_int_eq(tu_join(&b), 0);
	ck_assert(!tu_exists(p));
}

TU_LOCK_TEST(exclusive_excludes_shared, 0)
{
	struct tu_child c;
	struct pidlock_info info;

	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	assert_try(p, SH, -EWOULDBLOCK, "shared under a writer");
	assert_try(p, SH | PIDLOCK_FLOCK_ONLY, -EWOULDBLOCK, "flock-only reader");
	assert_try(p, SH | PIDLOCK_OFD_ONLY, -EWOULDBLOCK, "ofd-only reader");
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_uint_eq(info.shared, 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	/* And a reader keeps the writer out, whichever kinds it took. */
	hold(&c, p, SH | PIDLOCK_FLOCK_ONLY);
	assert_try(p, 0, -EWOULDBLOCK, "writer under a flock-only reader");
	assert_try(p, PIDLOCK_OFD_ONLY, -EWOULDBLOCK,
		   "ofd-only writer under a flock-only reader");
	tu_tell(&c, 'R');
	ck_assert_int_eq(tu_join(&c), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
}

/* The record says shared=1, names a live holder, and every shared write
 * is SHARED_RECORD_LEN (512) bytes: writers that race write one length. */
TU_LOCK_TEST(shared_record_format, SH)
{
	size_t len;
	char *s;

	ck_assert_int_eq(pidlock_set_tag(l, "reader"), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	s = tu_read_file(p, &len);
	ck_assert_uint_eq(len, 512);
	ck_assert_ptr_nonnull(strstr(s, "\nshared=1\n"));
	ck_assert_ptr_nonnull(strstr(s, "\ntag=reader\n"));
	ck_assert_int_eq(record_pid(p), getpid());
	free(s);
	ck_assert_int_eq(pidlock_refresh(l), 0);
	s = tu_read_file(p, &len);
	ck_assert_uint_eq(len, 512);
	free(s);
}

/*
 * Last holder out: the file stays while any shared holder holds, and the
 * last one to release removes it, whichever order they leave in.
 */
TU_LOCK_TEST(last_holder_out_unlinks, SH)
{
	struct tu_child a, b;

	hold(&a, p, SH);
	hold(&b, p, SH);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert_msg(tu_exists(p), "first of three out removed the file");
	tu_tell(&b, 'R');
	ck_assert_int_eq(tu_join(&b), 0);
	ck_assert_msg(tu_exists(p), "second of three out removed the file");
	tu_tell(&a, 'R');
	ck_assert_int_eq(tu_join(&a), 0);
	ck_assert_msg(!tu_exists(p), "the last one out left the file");
}

/*
 * A leaver that is not the last, and whose pid the record names,
 * rewrites it to name a holder that stays: a spec-only reader must not
 * find a dead pid while the lock is held.
 */
TU_LOCK_TEST(leaver_names_a_staying_holder, SH)
{
	struct tu_child a;
	size_t len;

	hold(&a, p, SH);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(record_pid(p), getpid());
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert(tu_exists(p));
	ck_assert_int_eq(record_pid(p), a.pid);
	free(tu_read_file(p, &len));
	ck_assert_uint_eq(len, 512);
	tu_tell(&a, 'R');
	ck_assert_int_eq(tu_join(&a), 0);
	ck_assert(!tu_exists(p));
}

/*
 * SIGKILLed shared holders: the survivors still hold, and the last one
 * out removes the file, even when the killed holder was the one the
 * record named.  When every holder is killed, the file is a crashed
 * holder's: the next acquirer of either mode takes it at once.
 */
TU_LOCK_TEST(killed_holder_survivor_unlinks, SH)
{
	struct tu_child a, b;

	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	hold(&a, p, SH);
	ck_assert_int_eq(record_pid(p), a.pid);
	tu_kill(&a);
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert_msg(!tu_exists(p), "the survivor left the file");

	hold(&a, p, SH);
	hold(&b, p, SH);
	tu_kill(&a);
	tu_kill(&b);
	ck_assert(tu_exists(p));
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert(!tu_exists(p));
	hold(&a, p, SH);
	tu_kill(&a);
	assert_try(p, 0, 0, "exclusive after a killed reader");
}

/*
 * Leavers at the same moment: each one's upgrade may be refused by the
 * other's read lock.  The retry after letting go makes sure the last
 * one out still removes the file, every round.  Also with
 * PIDLOCK_KEEP_IF_USED (pidlock --shared): the last one out may see
 * another leaver's description, its locks dropped and its close to
 * come, and must not keep the file for it.
 */
static const unsigned int leaver_flags[] = { SH, SH | PIDLOCK_KEEP_IF_USED };
static unsigned int leaving_flags;

static int leave_together(struct tu_child *c, void *arg)
{
	struct pidlock *l = tu_new(arg, leaving_flags);

	TU_CHILD_CHECK(pidlock_acquire(l, 5000) == 0);
	tu_signal(c, 'L');
	TU_CHILD_CHECK(tu_wait_parent(c) == 'R');
	TU_CHILD_CHECK(pidlock_release(l) == 0);
	pidlock_free(l);
	return 0;
}

START_TEST(concurrent_leavers_one_unlinks)
{
	enum { HOLDERS = 4, ROUNDS = 150 };
	char *p = tu_path("a.lock");
	int left = 0;

	leaving_flags = leaver_flags[_i];

	for (int round = 0; round < ROUNDS; round++) {
		struct tu_child c[HOLDERS];

		for (int i = 0; i < HOLDERS; i++) {
			tu_spawn(&c[i], leave_together, p);
			ck_assert_int_eq(tu_wait_signal(&c[i]), 'L');
		}
		for (int i = 0; i < HOLDERS; i++)
			tu_tell(&c[i], 'R');
		for (int i = 0; i < HOLDERS; i++)
			ck_assert_int_eq(tu_join(&c[i]), 0);
		if (tu_exists(p)) {
			left++;
			ck_assert_int_eq(unlink(p), 0);
		}
	}
	ck_assert_msg(left == 0, "flags %#x: the file stayed after %d of %d "
		      "rounds", leaving_flags, left, ROUNDS);
}
END_TEST

/* ---- pidlock_fd() among shared holders ------------------------------ */

/*
 * pwritev2(2), as the library calls it (its own definition is found
 * first, as flock() below): armed, it lets another shared holder write
 * its record right before the library's write, then makes the call.
 */
static void (*pwritev2_hook)(void);

ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off,
		 int flags)
{
	void (*fn)(void) = pwritev2_hook;

	pwritev2_hook = NULL;
	if (fn)
		fn();
	return syscall(SYS_pwritev2, fd, iov, cnt, (long)off, 0L, flags);
}

static struct pidlock *other_reader;

static void other_reader_writes(void)
{
	ck_assert_int_eq(pidlock_acquire(other_reader, 0), 0);
}

/*
 * Shared holders write the record without a lock among themselves, each
 * write whole.  A hand-out that rewrote one byte of the record it had
 * read (its first, in a test of RWF_NOAPPEND) put it into the newer
 * record of another holder that wrote meanwhile: with a pid-first
 * record of the one and a pid= record of the other, "1id=...", a file
 * no program takes for a lock file again (the torture's shared mix).
 */
TU_LOCK_TEST(hand_out_keeps_other_readers_record, SH | PIDLOCK_PLAIN_PID)
{
	struct pidlock_info info;
	const char *s;

	other_reader = tu_new(p, SH);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert(isdigit((unsigned char)tu_read(p)[0]));
	pwritev2_hook = other_reader_writes;
	ck_assert_int_ge(pidlock_fd(l), 0);
	if (pwritev2_hook) {		/* no write of the hand-out's own */
		pwritev2_hook = NULL;
		other_reader_writes();
	}
	s = tu_read(p);
	ck_assert_msg(strncmp(s, "pid=", 4) == 0, "the record reads \"%.12s\" "
		      "after a reader's hand-out", s);
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_uint_eq(info.shared, 1);
	/* The hand-out's later writes go in whole. */
	ck_assert_int_eq(pidlock_refresh(l), 0);
	ck_assert_int_eq(pidlock_inspect(p, &info, 0), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert_int_eq(pidlock_release(other_reader), 0);
	ck_assert(!tu_exists(p));
	pidlock_free(other_reader);
}

/* ---- the order of the two kernel locks, by construction ------------- */

/*
 * flock(2), as the library calls it, comes here first: the program's own
 * definition is found before the C library's.  Armed, it runs fn once,
 * right before (or right after) the nth call with operation `op`, so a
 * test can make another holder's moves happen between two system calls
 * of a release: the interleavings a loop of leavers would meet once in a
 * great many rounds, every time.  The other holder is an open file
 * description of its own (flock(2) and OFD locks belong to the
 * description: to the kernel it is another holder, whatever process
 * makes its calls), or another handle of the library.  Disarmed, it is
 * the system call.
 */
static struct flock_hook {
	int op;
	int nth;
	bool after;
	void (*fn)(void);
	int seen;
} hook;

static void arm(int op, int nth, bool after, void (*fn)(void))
{
	hook.op = op;
	hook.nth = nth;
	hook.after = after;
	hook.seen = 0;
	hook.fn = fn;
}

/* Runs the armed moves once; their own calls pass straight through. */
static void fire(void)
{
	void (*fn)(void) = hook.fn;
	int saved = errno;

	hook.fn = NULL;
	fn();
	errno = saved;
}

int flock(int fd, int op)
{
	bool due = hook.fn && op == hook.op && ++hook.seen == hook.nth;
	int r;

	if (due && !hook.after)
		fire();
	r = (int)syscall(SYS_flock, fd, op);
	if (due && hook.after)
		fire();
	return r;
}

/* An OFD lock of `type` on the whole file, without waiting. */
static bool ofd(int fd, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET };

	return fcntl(fd, F_OFD_SETLK, &fl) == 0;
}

/*
 * A second shared holder that leaves by doc/protocol.md section 4a,
 * step by step with its own open file description: the peer of the
 * library's leaver.  One that gets the write lock and is refused LOCK_EX
 * in its last try gives up, but slowly: it still holds the write lock
 * when the other leaver makes its last try (peer_finish() lets go).
 */
enum peer_move { TRY_EXCLUSIVE, DROP_FLOCK, DROP_OFD, LAST_TRY, MOVES };

static struct {
	int fd;
	int next;		/* the move to make next */
	int until;		/* the moves of this turn end before this one */
	bool unlinked;		/* it was the last one out */
} peer;

/* Steps 1 and 4: the write lock, then LOCK_EX, then the inode check. */
static bool peer_alone(const char *path)
{
	struct stat a, b;

	if (!ofd(peer.fd, F_WRLCK))
		return false;
	if (syscall(SYS_flock, peer.fd, LOCK_EX | LOCK_NB) < 0)
		return false;
	return fstat(peer.fd, &a) == 0 && lstat(path, &b) == 0 &&
	       a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

static void peer_moves(const char *path)
{
	for (; peer.next < peer.until; peer.next++) {
		switch (peer.next) {
		case TRY_EXCLUSIVE:
		case LAST_TRY:
			if (peer_alone(path)) {
				ck_assert_int_eq(unlink(path), 0);
				peer.unlinked = true;
				peer.next = MOVES;
				return;
			}
			/* Refused: step 3 drops what the try took. */
			break;
		case DROP_FLOCK:
			ck_assert_int_eq(syscall(SYS_flock, peer.fd, LOCK_UN), 0);
			break;
		case DROP_OFD:
			ck_assert(ofd(peer.fd, F_UNLCK));
			break;
		}
	}
}

static void peer_rest(void)
{
	peer.until = MOVES;
	peer_moves(tu_path("a.lock"));
}

static void peer_finish(void)
{
	peer_rest();
	ck_assert_int_eq(close(peer.fd), 0);
}

/*
 * Why the order of the two kinds matters to the last one out (doc/
 * protocol.md section 4a, step 4's proof).  The library's leaver L and a
 * peer leaver P hold the lock shared; P's moves are made at one exact
 * point of L's release, where the order decides:
 *
 * - "drop order": P leaves entirely while L, in step 3, is about to
 *   drop its flock.  Flock first, then OFD: L still holds both, P's
 *   tries are refused by L's read lock, and L's last try gets both.
 *   Swapped: L has dropped its read lock, so P's last try gets the
 *   write lock and is refused LOCK_EX by L's LOCK_SH; L's own last try
 *   is refused the write lock by P.  Both give up; the file stays.
 * - "take order": P has had its step 1 refused and dropped its flock;
 *   the rest of its leave is made right after L's second LOCK_EX.
 *   Write lock first: L never gets that far (P's read lock refuses it);
 *   P, last, gets both.  LOCK_EX first: L holds LOCK_EX without the
 *   write lock at that moment; P's last try gets the write lock and is
 *   refused LOCK_EX, L is then refused the write lock.  The file stays.
 */
static const struct order_case {
	const char *name;
	int moves_before;	/* P's moves made before L releases */
	int op;			/* the library's call the rest goes at */
	int nth;
	bool after;
} order_cases[] = {
	{ "drop order", TRY_EXCLUSIVE, LOCK_UN, 1, false },
	{ "take order", DROP_OFD, LOCK_EX | LOCK_NB, 2, true },
};

START_TEST(leavers_kind_order)
{
	const struct order_case *oc = &order_cases[_i];
	char *p = tu_path("a.lock");
	struct pidlock *l = tu_new(p, SH);

	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	peer.fd = open(p, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(peer.fd, 0);
	ck_assert_int_eq(syscall(SYS_flock, peer.fd, LOCK_SH | LOCK_NB), 0);
	ck_assert(ofd(peer.fd, F_RDLCK));
	peer.next = 0;
	peer.until = oc->moves_before;
	peer.unlinked = false;
	peer_moves(p);
	ck_assert_msg(!peer.unlinked, "%s: the peer was alone", oc->name);
	arm(oc->op, oc->nth, oc->after, peer_rest);
	ck_assert_int_eq(pidlock_release(l), 0);
	hook.fn = NULL;
	peer_finish();
	ck_assert_msg(!tu_exists(p), "%s: both leavers gave up, the file "
		      "stays with nobody holding it", oc->name);
	pidlock_free(l);
}
END_TEST

/*
 * The last try's inode check (step 4).  L (flock only) is refused its
 * step 1 by another shared holder S and lets go; right then S leaves,
 * alone, and unlinks the file, and X takes a new one at the path.  L's
 * last try gets LOCK_EX on the old inode, which nobody holds any more:
 * only the inode check says that the path is X's now.  Without it, L
 * would unlink X's file, and the next acquirer would hold beside X.
 */
static struct leaver_turn {
	struct pidlock *s, *x;
	int s_rc, x_rc;
} turn;

static void leave_and_take(void)
{
	turn.s_rc = pidlock_release(turn.s);
	turn.x_rc = pidlock_acquire(turn.x, 0);
}

TU_LOCK_TEST(leaver_last_try_checks_inode, SH | PIDLOCK_FLOCK_ONLY)
{
	turn.s = tu_new(p, SH);
	turn.x = tu_new(p, 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_acquire(turn.s, 0), 0);
	turn.s_rc = turn.x_rc = 1;
	arm(LOCK_UN, 1, true, leave_and_take);
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert_msg(turn.s_rc == 0 && turn.x_rc == 0, "the moves were not "
		      "made (release %d, acquire %d)", turn.s_rc, turn.x_rc);
	ck_assert_msg(pidlock_verify(turn.x) == 0, "the leaver's last try "
		      "removed the file of the next holder");
	assert_try(p, 0, -EWOULDBLOCK, "an acquirer beside the next holder");
	ck_assert_int_eq(pidlock_release(turn.x), 0);
	pidlock_free(turn.s);
	pidlock_free(turn.x);
}

/*
 * Holders of the kind the last one out did not take: it must see them
 * (step 1, "then the kinds we did not take are tested").  A flock-only
 * leaver beside a POSIX reader, an OFD-only one beside flock(1) -s:
 * each gets its own kind exclusively, and still leaves the file, whose
 * other holder holds on.
 */
static const struct other_kind {
	const char *name;
	unsigned int flags;
	bool flock1;		/* the other holder: flock(1) -s, else fcntl */
} other_kinds[] = {
	{ "flock-only leaver, POSIX reader", SH | PIDLOCK_FLOCK_ONLY, false },
	{ "OFD-only leaver, flock(1) -s", SH | PIDLOCK_OFD_ONLY, true },
};

static int posix_holder(struct tu_child *c, void *arg);

START_TEST(last_out_sees_other_kind)
{
	const struct other_kind *ok = &other_kinds[_i];
	char *p = tu_path("a.lock");
	struct pidlock *l = tu_new(p, ok->flags);
	struct tu_child c;
	ino_t ino;

	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ino = tu_ino(p);
	if (ok->flock1) {
		tu_flock1_hold(&c, p, true);
	} else {
		tu_spawn(&c, posix_holder, (void *)(long)F_RDLCK);
		ck_assert_int_eq(tu_wait_signal(&c), 'L');
	}
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert_msg(tu_exists(p) && tu_ino(p) == ino, "%s: the file was "
		      "removed under its other holder", ok->name);
	tu_tell(&c, '\n');
	ck_assert_int_eq(tu_join(&c), 0);
	pidlock_free(l);
}
END_TEST

/*
 * A forked child that neither acquired nor refreshed is not the shared
 * lock's owner: its release only closes its copy of the descriptor.  It
 * shares the parent's open file description, so the leaver's steps would
 * find it "alone" there, unlink the file and drop the parent's locks.
 */
TU_LOCK_TEST(forked_child_leaves_shared_hold, SH)
{
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(tu_forked_release(l), 0);
	ck_assert_msg(pidlock_verify(l) == 0, "the child's release took the "
		      "parent's file");
	assert_try(p, 0, -EWOULDBLOCK, "a writer beside the parent");
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert(!tu_exists(p));
}

/* ---- flock(1): -s and -x against our two modes, both ways ------------ */

static int shell_worker(struct tu_child *c, void *arg)
{
	(void)c;
	execl("/bin/sh", "sh", "-c", (const char *)arg, (char *)NULL);
	_exit(127);
}

/* A peer that holds `path` with `args` until killed; returns once it
 * holds (its lock shows in /proc/locks). */
static void peer_holds(struct tu_child *c, const char *bin, const char *args,
		       const char *path)
{
	static char cmd[4200];
	struct pidlock_info info;

	snprintf(cmd, sizeof(cmd), "exec '%s' %s '%s' sleep 60", bin, args,
		 path);
	tu_spawn(c, shell_worker, cmd);
	for (int i = 0; i < 5000; i++) {
		if (pidlock_inspect(path, &info, 0) == 0 && info.kernel_locks)
			return;
		usleep(1000);
	}
	ck_abort_msg("%s %s never took its lock", bin, args);
}

static void stop_peer(struct tu_child *c)
{
	kill(c->pid, SIGKILL);
	(void)tu_join(c);
}

TU_LOCK_TEST(flock1_shared_both_ways, SH)
{
	const char *flock1 = tu_peer("FLOCK");
	struct tu_child c;

	/* flock(1) made the file first: it is kept (inode-blind peer).  It
	 * is empty and young: rule C's grace is waited out first. */
	peer_holds(&c, flock1, "-o -s", p);
	ck_assert_int_eq(pidlock_acquire(l, 5000), 0);
	assert_try(p, 0, -EWOULDBLOCK, "exclusive under flock -s");
	ck_assert_int_eq(tu_sh("'%s' -n -s '%s' true", flock1, p), 0);
	ck_assert_int_eq(tu_sh("'%s' -n -x '%s' true", flock1, p), 1);
	stop_peer(&c);
	ck_assert_int_eq(tu_sh("'%s' -n -x '%s' true", flock1, p), 1);
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert_msg(tu_exists(p), "a file flock(1) made is kept");
	ck_assert_int_eq(tu_sh("'%s' -n -x '%s' true", flock1, p), 0);

	peer_holds(&c, flock1, "-o -x", p);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	ck_assert_int_eq(tu_sh("'%s' -n -s '%s' true", flock1, p), 1);
	stop_peer(&c);
	/* Bounded, not a single try (CI once saw -EWOULDBLOCK here): the
	 * peer's command child, forked while flock(1) held the lock, has
	 * the description until -o's close runs in it, which a loaded
	 * machine may delay past the peer's death. */
	ck_assert_int_eq(pidlock_acquire(l, 5000), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
}

/* ---- fcntl(2) read and write locks of another process ---------------- */

/* A classic POSIX record lock over the whole file, in a process of its
 * own (they belong to processes), held until told anything. */
static int posix_holder(struct tu_child *c, void *arg)
{
	struct flock fl = { .l_type = (short)(long)arg, .l_whence = SEEK_SET };
	int fd = open(tu_path("a.lock"), O_RDWR | O_CREAT | O_CLOEXEC, 0644);

	TU_CHILD_CHECK(fd >= 0);
	tu_signal(c, fcntl(fd, F_SETLK, &fl) < 0 ? 'N' : 'L');
	(void)tu_wait_parent(c);
	return 0;
}

static char posix_try(long type)
{
	struct tu_child c;
	char got;

	tu_spawn(&c, posix_holder, (void *)type);
	got = tu_wait_signal(&c);
	tu_tell(&c, 'X');
	ck_assert_int_eq(tu_join(&c), 0);
	return got;
}

TU_LOCK_TEST(fcntl_read_write_both_ways, SH)
{
	struct tu_child c;

	/* The peers leave an empty file: no grace to wait out for it. */
	ck_assert_int_eq(pidlock_set_grace(l, 0), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(posix_try(F_RDLCK), 'L');
	ck_assert_int_eq(posix_try(F_WRLCK), 'N');
	ck_assert_int_eq(pidlock_release(l), 0);

	tu_write(p, "");
	tu_spawn(&c, posix_holder, (void *)(long)F_RDLCK);
	ck_assert_int_eq(tu_wait_signal(&c), 'L');
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	assert_try(p, 0, -EWOULDBLOCK, "exclusive under a POSIX read lock");
	ck_assert_int_eq(pidlock_release(l), 0);
	tu_tell(&c, 'X');
	ck_assert_int_eq(tu_join(&c), 0);

	tu_spawn(&c, posix_holder, (void *)(long)F_WRLCK);
	ck_assert_int_eq(tu_wait_signal(&c), 'L');
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	tu_tell(&c, 'X');
	ck_assert_int_eq(tu_join(&c), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
}

/* with-lock-ex: an exclusive fcntl-family peer with an inode check. */
TU_LOCK_TEST(with_lock_ex_excludes_shared, SH)
{
	const char *wle = tu_peer("WITH_LOCK_EX");
	struct tu_child c;

	ck_assert_int_eq(pidlock_set_grace(l, 0), 0);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	/* -q: exit 0 without running the command if the lock is busy. */
	ck_assert_int_eq(tu_sh("'%s' -q '%s' touch '%s'", wle, p,
			       tu_path("ran")), 0);
	ck_assert(!tu_exists(tu_path("ran")));
	ck_assert_int_eq(pidlock_release(l), 0);
	peer_holds(&c, wle, "-w", p);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	stop_peer(&c);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
}

/* ---- a spec-only peer --------------------------------------------------- */

/*
 * A spec-only reader sees the file as held, with a parsable record whose
 * pid is alive and timestamp fresh, for as long as any shared holder
 * holds; it finds the path free once the last one is out.
 */
TU_LOCK_TEST(spec_peer_sees_shared_held, SH)
{
	struct tu_child a;
	long pid;

	hold(&a, p, SH);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert_int_eq(open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644),
			 -1);
	ck_assert_int_eq(errno, EEXIST);
	pid = record_pid(p);
	ck_assert_int_eq(pid, a.pid);
	ck_assert_int_eq(kill((pid_t)pid, 0), 0);
	ck_assert_ptr_nonnull(strstr(tu_read(p), "timestamp="));
	tu_tell(&a, 'R');
	ck_assert_int_eq(tu_join(&a), 0);
	ck_assert(!tu_exists(p));
	/* And a spec record keeps readers out, as it keeps writers out. */
	tu_write_spec(p, getpid(), 0, NULL);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
}

/* ---- kept files ------------------------------------------------------- */

/* With PIDLOCK_KEEP_FILE the last one out marks the record released and
 * leaves the inode at the path; the earlier ones leave it held. */
TU_LOCK_TEST(last_out_keeps_kept_file, SH | PIDLOCK_KEEP_FILE)
{
	struct tu_child a;
	ino_t ino;

	hold(&a, p, SH | PIDLOCK_KEEP_FILE);
	ino = tu_ino(p);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert_ptr_null(strstr(tu_read(p), "released="));
	tu_tell(&a, 'R');
	ck_assert_int_eq(tu_join(&a), 0);
	ck_assert_uint_eq(tu_ino(p), ino);
	ck_assert_ptr_nonnull(strstr(tu_read(p), "released="));
}

/* A plain shared holder that was first in, and leaves last, keeps the
 * file a later PIDLOCK_KEEP_FILE holder made a kept one (keep=1): an
 * inode-blind peer may wait on it.  A refresh in between keeps keep=1. */
TU_LOCK_TEST(last_out_adopts_keep, SH)
{
	struct tu_child j;
	ino_t ino;

	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ino = tu_ino(p);
	hold(&j, p, SH | PIDLOCK_KEEP_FILE);
	ck_assert_ptr_nonnull(strstr(tu_read(p), "keep=1"));
	tu_tell(&j, 'R');
	ck_assert_int_eq(tu_join(&j), 0);
	ck_assert_int_eq(pidlock_refresh(l), 0);
	ck_assert_ptr_nonnull(strstr(tu_read(p), "keep=1"));
	ck_assert_int_eq(pidlock_release(l), 0);
	ck_assert_msg(tu_exists(p), "the last one out removed a kept file");
	ck_assert_uint_eq(tu_ino(p), ino);
	ck_assert_ptr_nonnull(strstr(tu_read(p), "released="));
}

/* ---- writers are not starved ------------------------------------------ */

/* A reader that takes the lock shared, holds it 20 to 80 ms, lets go and
 * comes back at once, until the file "stop" appears. */
static int steady_reader(struct tu_child *c, void *arg)
{
	struct pidlock *l = tu_new(arg, SH);
	unsigned int seed = (unsigned int)getpid();

	TU_CHILD_CHECK(pidlock_set_grace(l, 0) == 0);
	tu_signal(c, 'S');
	while (!tu_exists(tu_path("stop"))) {
		TU_CHILD_CHECK(pidlock_acquire(l, -1) == 0);
		usleep((useconds_t)(20000 + rand_r(&seed) % 60000));
		TU_CHILD_CHECK(pidlock_release(l) == 0);
	}
	pidlock_free(l);
	return 0;
}

#define TIMED_WRITER_MS 5000

/* The writer: blocks in the kernel (timeout -1), says when it is in. */
static int blocking_writer(struct tu_child *c, void *arg)
{
	struct pidlock *l = tu_new(arg, 0);

	TU_CHILD_CHECK(pidlock_acquire(l, -1) == 0);
	tu_signal(c, 'L');
	TU_CHILD_CHECK(pidlock_release(l) == 0);
	pidlock_free(l);
	return 0;
}

/* The writer with a timeout: says 'L' when it is in, 'T' when its time
 * ran out first. */
static int timed_writer(struct tu_child *c, void *arg)
{
	struct pidlock *l = tu_new(arg, 0);
	int r = pidlock_acquire(l, TIMED_WRITER_MS);

	TU_CHILD_CHECK(r == 0 || r == -ETIMEDOUT);
	tu_signal(c, r == 0 ? 'L' : 'T');
	if (r == 0)
		TU_CHILD_CHECK(pidlock_release(l) == 0);
	pidlock_free(l);
	return 0;
}

/* n steady readers, started 7 ms apart, so that their holds overlap. */
static void start_readers(struct tu_child *c, int n, char *p)
{
	for (int i = 0; i < n; i++) {
		tu_spawn(&c[i], steady_reader, p);
		ck_assert_int_eq(tu_wait_signal(&c[i]), 'S');
		tu_msleep(7);
	}
}

static void stop_readers(struct tu_child *c, int n)
{
	tu_write(tu_path("stop"), "");
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(tu_join(&c[i]), 0);
}

/* Did c say something within ms? */
static bool said_within(struct tu_child *c, int ms)
{
	struct pollfd pfd = { .fd = c->from_child, .events = POLLIN };

	return poll(&pfd, 1, ms) == 1;
}

/*
 * Six readers whose holds overlap all the time: without a rule, a
 * writer blocked in the kernel waits until they happen to be out all at
 * once, which may be never (flock(2) and fcntl locks do not queue).  A
 * shared acquirer backs off while a writer waits in the kernel, so the
 * writer gets in once the holds of the moment end (at most 80 ms).  The
 * bound, 10 s, is one of liveness, not of speed; the longest wait is
 * printed.
 */
#define WRITER_BOUND_MS 10000

/* Three writers (fn), one after the other, among six steady readers:
 * each must be in within WRITER_BOUND_MS.  Returns the longest wait. */
static long writes_among_readers(tu_fn writer)
{
	enum { READERS = 6, WRITES = 3 };
	char *p = tu_path("a.lock");
	struct tu_child c[READERS], w;
	long worst = 0;

	start_readers(c, READERS, p);
	for (int i = 0; i < WRITES; i++) {
		long t0;
		char said = 0;

		tu_msleep(300);	/* the readers' stream is steady again */
		t0 = tu_ms();
		tu_spawn(&w, writer, p);
		if (said_within(&w, WRITER_BOUND_MS))
			said = tu_wait_signal(&w);
		if (tu_ms() - t0 > worst)
			worst = tu_ms() - t0;
		if (said != 'L') {
			tu_write(tu_path("stop"), "");
			kill(w.pid, SIGKILL);
		}
		ck_assert_msg(said == 'L', "a writer was kept out by readers "
			      "(it said %c after %ld ms)", said ? said : '-',
			      tu_ms() - t0);
		ck_assert_int_eq(tu_join(&w), 0);
	}
	stop_readers(c, READERS);
	return worst;
}

START_TEST(writer_not_starved)
{
	fprintf(stderr, "writer_not_starved: longest writer wait %ld ms\n",
		writes_among_readers(blocking_writer));
}
END_TEST

/*
 * The same stream of readers, and a writer that waits with a timeout.
 * Such a writer sleeps in poll(2) between tries, where readers cannot
 * see it: it is seen through its stand-in, a child blocked in the
 * kernel on the writer's own open file description
 * (doc/protocol.md, "Writers first").  Without it the writer's 5 s run
 * out, every time.
 */
START_TEST(timed_writer_not_starved)
{
	fprintf(stderr, "timed_writer_not_starved: longest writer wait %ld "
		"ms\n", writes_among_readers(timed_writer));
}
END_TEST

/* Until somebody waits in the kernel on ino (at most 5 s). */
static void until_queued(ino_t ino)
{
	for (int i = 0; i < 500 && tu_queued(ino, 0) == 0; i++)
		tu_msleep(10);
	ck_assert_msg(tu_queued(ino, 0) > 0, "no request was queued in 5 s");
}

/* Did ifd see name removed from its directory? */
static bool removed(int ifd, const char *name)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	while ((n = read(ifd, buf, sizeof(buf))) > 0)
		for (char *q = buf; q < buf + n;) {
			const struct inotify_event *ev = (const void *)q;

			if (ev->len && strcmp(ev->name, name) == 0)
				return true;
			q += sizeof(*ev) + ev->len;
		}
	return false;
}

/*
 * The last reader out, a writer queued behind it: the file stays (a
 * released record), and the kernel's grant of it is the writer's lock.
 * Unlinked, the grant would be of a removed file, and the writer would
 * race the next readers to make a new one.
 */
START_TEST(last_reader_leaves_file_to_writer)
{
	char *p = tu_path("a.lock");
	struct tu_child r, w;
	ino_t ino;
	int ifd;

	hold(&r, p, SH);
	ino = tu_ino(p);
	tu_waiter(&w, p, 0);
	tu_tell(&w, 'G');
	until_queued(ino);
	/* The writer's own takeover may put a new file in place (by
	 * rename); only a removal leaves the path empty. */
	ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	ck_assert_int_ge(ifd, 0);
	ck_assert_int_ge(inotify_add_watch(ifd, tu_dir(), IN_DELETE), 0);
	tu_tell(&r, 'R');
	ck_assert_int_eq(tu_join(&r), 0);
	ck_assert_int_eq(tu_wait_signal(&w), 'L');
	ck_assert_msg(!removed(ifd, "a.lock"), "the last reader out removed "
		      "the file a writer was queued on");
	close(ifd);
	tu_tell(&w, 'x');
	ck_assert_int_eq(tu_join(&w), 0);
}
END_TEST

/*
 * A reader waiting without a limit gets its flock while a writer holds
 * only the OFD lock (a timed writer whose stand-in was just granted it,
 * here a classic fcntl(2) write lock); it must not then wait for the
 * OFD lock with its flock in hand, which the writer needs next.
 */
START_TEST(blocking_reader_backs_off_from_ofd_writer)
{
	char *p = tu_path("a.lock");
	struct pidlock *l = tu_new(p, PIDLOCK_KEEP_FILE);
	struct tu_child x, r;
	int fd, got;

	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	pidlock_free(l);
	tu_posix_hold(&x, p);
	tu_waiter(&r, p, SH);
	tu_tell(&r, 'G');
	tu_msleep(300);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	got = flock(fd, LOCK_EX | LOCK_NB);
	close(fd);
	ck_assert_msg(got == 0, "a waiting reader holds its flock behind a "
		      "writer's OFD lock");
	tu_tell(&x, 'x');
	ck_assert_int_eq(tu_join(&x), 0);
	tu_waiter_took(&r);
}
END_TEST

/* A timed writer that says 'T' (timed out), 'I' (interrupted) or 'L',
 * then waits to be told anything before it exits. */
static volatile sig_atomic_t usr1_seen;

static void on_usr1(int sig)
{
	(void)sig;
	usr1_seen = 1;
}

static int timed_writer_for(struct tu_child *c, const char *path, int ms)
{
	struct pidlock *l = tu_new(path, 0);
	struct sigaction sa;
	char said = 'F';
	int r;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;	/* no SA_RESTART */
	TU_CHILD_CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	r = pidlock_acquire(l, ms);
	if (r == 0)
		said = 'L';
	else if (r == -ETIMEDOUT)
		said = 'T';
	else if (r == -EINTR)
		said = 'I';
	tu_signal(c, said);
	(void)tu_wait_parent(c);
	pidlock_free(l);
	return 0;
}

static int timed_writer_stays(struct tu_child *c, void *arg)
{
	return timed_writer_for(c, arg, 1500);
}

/* Its stand-in stays queued long enough to be seen on a loaded machine
 * (until_queued() looks for 5 s). */
static int timed_writer_stays_long(struct tu_child *c, void *arg)
{
	return timed_writer_for(c, arg, 6000);
}

/* A timed writer for a signal to interrupt: its timeout (60 s) never
 * comes first, however late a loaded machine lets the test see it
 * queued and send the signal; the signal ends the wait. */
static int timed_writer_to_interrupt(struct tu_child *c, void *arg)
{
	return timed_writer_for(c, arg, 60000);
}

/*
 * The stand-in is the writer's only while it waits: timed out, or
 * interrupted by a signal handler, the writer has no request left in
 * the kernel, and readers go on; the writer is still alive then.  A
 * writer killed with SIGKILL takes its stand-in with it
 * (PR_SET_PDEATHSIG).
 */
START_TEST(timed_writer_leaves_no_standin)
{
	char *p = tu_path("a.lock");
	struct pidlock *l;
	struct tu_child r, w;
	ino_t ino;

	hold(&r, p, SH);
	ino = tu_ino(p);
	tu_spawn(&w, _i == 1 ? timed_writer_to_interrupt : timed_writer_stays, p);
	until_queued(ino);
	if (_i == 2) {
		/* The writer killed: its stand-in dies with it. */
		tu_kill(&w);
		for (int i = 0; i < 100 && tu_queued(ino, 0) > 0; i++)
			tu_msleep(10);
	} else {
		if (_i == 1)
			ck_assert_int_eq(kill(w.pid, SIGUSR1), 0);
		ck_assert_int_eq(tu_wait_signal(&w), _i == 1 ? 'I' : 'T');
	}
	ck_assert_int_eq(tu_queued(ino, 0), 0);
	l = tu_new(p, SH);
	ck_assert_int_eq(pidlock_acquire(l, 0), 0);
	ck_assert_int_eq(pidlock_release(l), 0);
	pidlock_free(l);
	if (_i != 2) {
		tu_tell(&w, 'x');
		ck_assert_int_eq(tu_join(&w), 0);
	}
	tu_tell(&r, 'R');
	ck_assert_int_eq(tu_join(&r), 0);
}
END_TEST

/* Has pid a child?  The stand-in is the timed writer's only one.  A
 * kernel without the list (CONFIG_PROC_CHILDREN) says no, and the test
 * is the weaker one it was before. */
static bool has_child(pid_t pid)
{
	char path[64];
	FILE *f;
	int c;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
		 (int)pid);
	f = fopen(path, "re");
	if (!f && errno == ENOENT) {
		fprintf(stderr, "%s: not listed by this kernel\n", path);
		return false;
	}
	ck_assert_msg(f, "%s: %s", path, strerror(errno));
	c = fgetc(f);
	fclose(f);
	return c != EOF;
}

/*
 * The stand-in is granted the OFD lock while a flock-only reader
 * (flock(1) -s) still holds: the writer cannot take its flock, and
 * gives the OFD lock back at once.  Kept, it would shut out every
 * reader of ours while the writer waits.
 */
START_TEST(standin_grant_given_back)
{
	char *p = tu_path("a.lock");
	struct pidlock *l;
	struct tu_child r, f, w;
	ino_t ino;
	char said;

	hold(&r, p, SH);
	ino = tu_ino(p);
	tu_flock1_hold(&f, p, true);
	tu_spawn(&w, timed_writer_stays_long, p);
	until_queued(ino);
	tu_tell(&r, 'R');
	ck_assert_int_eq(tu_join(&r), 0);
	/* The kernel only wakes a blocked request: a reader that tried
	 * before the stand-in ran again would take the read lock first,
	 * and prove nothing.  So the reader waits for the grant: the
	 * stand-in exits once it has it, and the writer reaps it. */
	for (long start = tu_ms(); has_child(w.pid);) {
		ck_assert_msg(tu_ms() - start < 5000, "the writer's stand-in "
			      "was not granted in 5 s");
		tu_msleep(2);
	}
	/* The writer gives a grant back within milliseconds; on a loaded
	 * machine it may not run for a while.  A kept grant shuts readers
	 * out until the writer's timeout (6 s from its start): the reader
	 * tries for 800 ms from the grant, not longer. */
	l = tu_new(p, SH);
	for (long start = tu_ms(); pidlock_acquire(l, 0) != 0;) {
		ck_assert_msg(tu_ms() - start < 800, "a reader was shut out by "
			      "a waiting writer's OFD lock");
		tu_msleep(20);
	}
	ck_assert_int_eq(pidlock_release(l), 0);
	pidlock_free(l);
	tu_tell(&f, '\n');
	ck_assert_int_eq(tu_join(&f), 0);
	said = tu_wait_signal(&w);
	ck_assert_msg(said == 'L' || said == 'T', "the writer said %c", said);
	tu_tell(&w, 'x');
	ck_assert_int_eq(tu_join(&w), 0);
}
END_TEST

/* ---- status ----------------------------------------------------------- */

/* pidlock_holder() after a busy try names the mode and counts holders. */
TU_LOCK_TEST(holder_reports_shared, 0)
{
	struct tu_child a, b;
	struct pidlock_info info;

	hold(&a, p, SH);
	hold(&b, p, SH);
	ck_assert_int_eq(pidlock_acquire(l, 0), -EWOULDBLOCK);
	ck_assert_int_eq(pidlock_holder(l, &info), 0);
	ck_assert_uint_eq(info.shared, 1);
	ck_assert_uint_eq(info.holders, 2);
	ck_assert(info.kernel_pid == a.pid || info.kernel_pid == b.pid);
	tu_tell(&a, 'R');
	ck_assert_int_eq(tu_join(&a), 0);
	tu_tell(&b, 'R');
	ck_assert_int_eq(tu_join(&b), 0);
}

int main(void)
{
	const struct tu_case cases[] = {
		{ shared_holders_coexist, 1 },
		{ exclusive_excludes_shared, 1 },
		{ shared_record_format, 1 },
		{ last_holder_out_unlinks, 1 },
		{ leaver_names_a_staying_holder, 1 },
		{ killed_holder_survivor_unlinks, 1 },
		{ concurrent_leavers_one_unlinks, 2 },
		{ leavers_kind_order,
		  (int)(sizeof(order_cases) / sizeof(order_cases[0])) },
		{ leaver_last_try_checks_inode, 1 },
		{ last_out_sees_other_kind,
		  (int)(sizeof(other_kinds) / sizeof(other_kinds[0])) },
		{ forked_child_leaves_shared_hold, 1 },
		{ flock1_shared_both_ways, 1 },
		{ fcntl_read_write_both_ways, 1 },
		{ with_lock_ex_excludes_shared, 1 },
		{ spec_peer_sees_shared_held, 1 },
		{ last_out_keeps_kept_file, 1 },
		{ last_out_adopts_keep, 1 },
		{ holder_reports_shared, 1 },
		{ writer_not_starved, 1 },
		{ timed_writer_not_starved, 1 },
		{ last_reader_leaves_file_to_writer, 1 },
		{ blocking_reader_backs_off_from_ofd_writer, 1 },
		{ timed_writer_leaves_no_standin, 3 },
		{ standin_grant_given_back, 1 },
		{ hand_out_keeps_other_readers_record, 1 },
		{ NULL, 0 },
	};

	tu_run_cases("shared", "shared", 60, cases);
}
