/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A daemon written against libbsd's pidfile(3), the way the manual
 * shows it.  The build compiles it twice: as is with -lbsd, and with the
 * one include line switched to <pidlock-pidfile.h> with -lpidlock (see
 * tests/daemon/Makemodule.am).  Nothing else in this file knows about
 * libpidlock.
 *
 *   bsd-daemon PIDFILE
 */
#include <bsd/libutil.h>
#include <err.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct pidfh *pfh;
	pid_t otherpid;
	sigset_t stop;
	int sig;

	if (argc != 2)
		errx(2, "usage: bsd-daemon PIDFILE");
	pfh = pidfile_open(argv[1], 0644, &otherpid);
	if (pfh == NULL) {
		if (errno == EEXIST)
			errx(EXIT_FAILURE, "already running (pid %jd)",
			     (intmax_t)otherpid);
		err(EXIT_FAILURE, "cannot open or create %s", argv[1]);
	}
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	if (daemon(0, 0) == -1) {
		warn("cannot daemonize");
		pidfile_remove(pfh);
		exit(EXIT_FAILURE);
	}
	if (pidfile_write(pfh) == -1) {
		pidfile_remove(pfh);
		exit(EXIT_FAILURE);
	}
	while (sigwait(&stop, &sig) != 0)
		;
	pidfile_remove(pfh);
	return EXIT_SUCCESS;
}
