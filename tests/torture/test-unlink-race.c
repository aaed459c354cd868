/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Guards the rule "a file with no links is gone" (existing_same_inode()).
 *
 * A spec-only peer creates, writes and unlinks its lock file in a tight
 * loop, holding no kernel lock, while libpidlock tries to take the same
 * path.  unlink(2) drops the link count before the name leaves the
 * dentry cache, so an acquirer can find the path naming an inode that
 * has no links.  That must read as "gone, try again", never as a hard
 * link attack (-EMLINK) or any other error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pidlock.h>

#define SECONDS 3
#define CHURNERS 2

static void __attribute__((noreturn)) churn(const char *path)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), "pid=%ld\ntimestamp=%lld\n",
			 (long)getpid(), (long long)time(NULL));

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (;;) {
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
			      0644);

		if (fd < 0)
			continue;
		if (write(fd, buf, (size_t)n) != n)
			_exit(1);
		close(fd);
		unlink(path);
	}
}

int main(void)
{
	char dir[] = "/tmp/pidlock-race-XXXXXX", path[64];
	long got = 0, busy = 0, bad = 0;
	struct pidlock *lock;
	time_t end;
	pid_t pid[CHURNERS];
	int r;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/lock", dir);
	for (int i = 0; i < CHURNERS; i++) {
		pid[i] = fork();
		if (pid[i] < 0) {
			perror("fork");
			return 1;
		}
		if (pid[i] == 0)
			churn(path);
	}
	r = pidlock_new(&lock, path, PIDLOCK_NO_SYNC);
	if (r < 0) {
		fprintf(stderr, "pidlock_new: %s\n", strerror(-r));
		return 1;
	}
	end = time(NULL) + SECONDS;
	while (time(NULL) < end) {
		r = pidlock_acquire(lock, 0);
		if (r == 0) {
			got++;
			pidlock_release(lock);
		} else if (r == -EWOULDBLOCK) {
			busy++;
		} else if (bad++ < 5) {
			fprintf(stderr, "acquire: %s\n", strerror(-r));
		}
	}
	for (int i = 0; i < CHURNERS; i++) {
		kill(pid[i], SIGKILL);
		waitpid(pid[i], NULL, 0);
	}
	pidlock_free(lock);
	unlink(path);
	rmdir(dir);
	printf("acquired %ld, busy %ld, errors %ld\n", got, busy, bad);
	return bad ? 1 : 0;
}
