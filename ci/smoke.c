/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A program built outside the source tree against an installed (or
 * musl-built) libpidlock.  It checks the library's basic promise with real
 * processes: a second process is refused and sees the holder, release frees
 * the path at once, and a holder killed with SIGKILL leaves no stale lock.
 *
 * Usage: smoke [DIR]   (default: a fresh directory under $TMPDIR or /tmp)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pidlock.h>

static unsigned int passed, failed;

static void check(int ok, const char *what)
{
	if (ok) {
		passed++;
		return;
	}
	failed++;
	(void)fprintf(stderr, "smoke: FAIL: %s\n", what);
}

static void check_rc(int rc, int want, const char *what)
{
	if (rc != want)
		(void)fprintf(stderr, "smoke: %s returned %d (%s), want %d\n",
			      what, rc, rc < 0 ? strerror(-rc) : "ok", want);
	check(rc == want, what);
}

/* Exit status 0 when a second handle is refused and names the holder. */
static int contender(const char *path, pid_t holder)
{
	struct pidlock *lock;
	struct pidlock_info info;
	int rc;

	rc = pidlock_new(&lock, path, 0);
	if (rc < 0)
		return 10;
	rc = pidlock_acquire(lock, 0);
	if (rc != -EWOULDBLOCK)
		return 11;
	rc = pidlock_holder(lock, &info);
	if (rc < 0 || info.pid != holder || strcmp(info.tag, "smoke") != 0)
		return 12;
	if (info.state != PIDLOCK_STATE_HELD)
		return 13;
	pidlock_free(lock);
	return 0;
}

/* Take the lock and die holding it. */
__attribute__((noreturn)) static void crash_holder(const char *path)
{
	struct pidlock *lock;

	if (pidlock_new(&lock, path, 0) < 0 || pidlock_acquire(lock, 0) < 0)
		_exit(20);
	(void)raise(SIGKILL);
	/* Only if the signal did not kill us.  (This comment also keeps
	 * cppcheck, which takes raise() for noreturn, from calling the
	 * line unreachable.) */
	_exit(21);
}

static int wait_child(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -1;
	}
	return status;
}

static void run(const char *dir)
{
	char path[PATH_MAX];
	struct pidlock *lock = NULL;
	struct pidlock_info info;
	pid_t pid;
	int status;

	(void)snprintf(path, sizeof(path), "%s/smoke.lock", dir);
	check_rc(pidlock_new(&lock, path, 0), 0, "pidlock_new");
	if (!lock)
		return;
	check_rc(pidlock_set_tag(lock, "smoke"), 0, "pidlock_set_tag");
	check_rc(pidlock_acquire(lock, 0), 0, "first acquire");

	pid = fork();
	if (pid == 0)
		_exit(contender(path, getppid()));
	check(pid > 0, "fork contender");
	status = wait_child(pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		(void)fprintf(stderr, "smoke: contender status %#x\n",
			      (unsigned int)status);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "second process refused and sees the holder");

	check_rc(pidlock_release(lock), 0, "release");
	check(access(path, F_OK) < 0 && errno == ENOENT, "release removes the file");
	check_rc(pidlock_inspect(path, &info, PIDLOCK_DEFAULT_STALE_SEC), 0,
		 "inspect after release");
	check(info.state == PIDLOCK_STATE_FREE, "state is free after release");

	pid = fork();
	if (pid == 0)
		crash_holder(path);
	check(pid > 0, "fork crashing holder");
	status = wait_child(pid);
	check(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	      "holder died by SIGKILL");
	check_rc(pidlock_inspect(path, &info, PIDLOCK_DEFAULT_STALE_SEC), 0,
		 "inspect after crash");
	check(info.state == PIDLOCK_STATE_ABANDONED, "state is abandoned after crash");
	printf("smoke: after the crash: %s, pid %ld\n",
	       pidlock_state_name(info.state), (long)info.pid);
	check_rc(pidlock_acquire(lock, 0), 0, "acquire after crash, without waiting");
	check_rc(pidlock_release(lock), 0, "release after takeover");
	pidlock_free(lock);
}

int main(int argc, char **argv)
{
	/* dir points into it after the if block below. */
	/* cppcheck-suppress variableScope */
	char tmpl[PATH_MAX];
	const char *dir = argc > 1 ? argv[1] : NULL;
	const char *tmp = getenv("TMPDIR");

	if (!dir) {
		(void)snprintf(tmpl, sizeof(tmpl), "%s/pidlock-smoke.XXXXXX",
			       tmp && *tmp ? tmp : "/tmp");
		dir = mkdtemp(tmpl);
		if (!dir) {
			perror("smoke: mkdtemp");
			return 2;
		}
	}
	run(dir);
	if (argc < 2 && rmdir(dir) < 0)
		(void)fprintf(stderr, "smoke: rmdir %s: %s\n", dir, strerror(errno));
	printf("smoke: %u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
