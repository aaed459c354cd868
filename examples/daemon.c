/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A daemon with a pidfile that never goes stale.
 *
 *   daemon [-t] [-i MS] [PIDFILE]      (default /run/daemon.pid)
 *
 * 1. Take the pidfile lock in the foreground, so "already running (pid N)"
 *    reaches the terminal that started us.
 * 2. fork(); the child rebinds the lock (the file now names the child),
 *    then tells the parent, which closes its handle (no unlink) and
 *    exits.  When the parent exits the file already names the daemon,
 *    as systemd's Type=forking with PIDFile= wants.
 * 3. The daemon keeps the timestamp fresh (from its main loop, or with
 *    -t from a background thread) and on SIGTERM or SIGINT releases:
 *    the file is gone.  After a crash or SIGKILL the next start simply
 *    takes the lock over.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pidlock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *prog = "daemon";

static int fail(const char *what, int r)
{
	(void)fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(-r));
	return EXIT_FAILURE;
}

/* The parent: wait until the child names itself in the file. */
static int parent(struct pidlock *lock, int ready)
{
	char ok;
	ssize_t n;

	do
		n = read(ready, &ok, 1);
	while (n < 0 && errno == EINTR);
	/* Closing never unlinks: the file is the child's now. */
	pidlock_close(lock);
	pidlock_free(lock);
	if (n != 1) {
		(void)fprintf(stderr, "%s: the daemon failed to start\n", prog);
		return EXIT_FAILURE;
	}
	return EXIT_SUCCESS;
}

static int detach_stdio(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	for (int i = 0; i < 3; i++)
		if (dup2(fd, i) < 0)
			return -errno;
	if (fd > 2)
		close(fd);
	return 0;
}

/* Until SIGTERM or SIGINT; without a refresher thread, refresh here. */
static void serve(struct pidlock *lock, const sigset_t *stop,
		  unsigned int refresh_ms)
{
	struct timespec tick = {
		.tv_sec = refresh_ms / 1000,
		.tv_nsec = (long)(refresh_ms % 1000) * 1000000L,
	};

	for (;;) {
		if (sigtimedwait(stop, NULL, refresh_ms ? &tick : NULL) > 0)
			return;
		/* A failed refresh (say, an admin deleted the file) is no
		 * reason to stop serving; release will not unlink then. */
		if (errno == EAGAIN)
			pidlock_refresh(lock);
	}
}

static int start(struct pidlock *lock, int ready, int thread,
		 unsigned int interval_ms, struct pidlock_refresher **ref)
{
	int r;

	setsid();
	r = pidlock_daemon_rebind(lock);
	if (r < 0)
		return fail("rebind", r);
	if (thread) {
		r = pidlock_daemon_refresher_start(ref, lock, interval_ms);
		if (r < 0)
			return fail("refresher", r);
	}
	if (chdir("/") < 0)
		return fail("chdir", -errno);
	r = detach_stdio();
	if (r < 0)
		return fail("detach", r);
	/* Ready: the parent may exit now. */
	if (write(ready, "1", 1) != 1)
		return EXIT_FAILURE;
	close(ready);
	return EXIT_SUCCESS;
}

static int child(struct pidlock *lock, int ready, int thread,
		 unsigned int interval_ms)
{
	struct pidlock_refresher *ref = NULL;
	sigset_t stop;
	int r;

	/* Blocked before any thread starts, so all threads block them. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigprocmask(SIG_BLOCK, &stop, NULL);

	r = start(lock, ready, thread, interval_ms, &ref);
	if (r == EXIT_SUCCESS)
		serve(lock, &stop, thread ? 0 : interval_ms);

	/* Stop the thread before the handle goes away. */
	if (ref)
		pidlock_daemon_refresher_stop(ref);
	/* Release unlinks the file: it names us and we hold it. */
	pidlock_release(lock);
	pidlock_free(lock);
	return r;
}

int main(int argc, char **argv)
{
	unsigned int interval_ms = PIDLOCK_DAEMON_REFRESH_MS;
	struct pidlock *lock;
	int thread = 0, opt, r;
	const char *path;
	pid_t running = -1;
	int ready[2];

	prog = program_invocation_short_name;
	while ((opt = getopt(argc, argv, "ti:")) != -1) {
		if (opt == 't') {
			thread = 1;
		} else if (opt == 'i' && atoi(optarg) > 0) {
			interval_ms = (unsigned int)atoi(optarg);
		} else {
			(void)fprintf(stderr, "usage: %s [-t] [-i MS] [PIDFILE]\n", prog);
			return 2;
		}
	}
	path = optind < argc ? argv[optind] : NULL;

	r = pidlock_daemon_open(&lock, path, 0, 0, &running);
	if (r == -EEXIST && running > 0) {
		(void)fprintf(stderr, "%s: already running (pid %ld)\n", prog,
			      (long)running);
		return EXIT_FAILURE;
	}
	if (r == -EEXIST) {
		(void)fprintf(stderr, "%s: already running\n", prog);
		return EXIT_FAILURE;
	}
	if (r < 0)
		return fail(path ? path : "pidfile", r);

	if (pipe2(ready, O_CLOEXEC) < 0) {
		pidlock_free(lock);	/* releases: the file names us */
		return fail("pipe", -errno);
	}
	switch (fork()) {
	case -1:
		pidlock_free(lock);
		return fail("fork", -errno);
	case 0:
		close(ready[0]);
		return child(lock, ready[1], thread, interval_ms);
	default:
		close(ready[1]);
		return parent(lock, ready[0]);
	}
}
