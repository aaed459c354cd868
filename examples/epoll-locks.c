/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * epoll-locks: take two locks and keep a timer ticking, all in one
 * epoll(7) loop, with pidlock_acquire_async(3): no thread, no signal.
 *
 *   epoll-locks PATH1 PATH2 [SECONDS]
 *
 * Prints a line per timer tick while it waits, and one per lock taken;
 * exits 0 once it holds both (and lets them go), 1 if SECONDS (default
 * 10) pass first, 2 on an error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pidlock.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

struct want {
	struct pidlock *lock;
	int fd;			/* registered with epoll, or -1 */
	long due_ms;		/* when to try again anyway */
	int held;
};

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Try once; on busy, watch the descriptor the library gave.  The
 * descriptor stays the same while the wait goes on, so it is added to
 * the epoll set once and removed when the wait ends. */
static int step(int ep, struct want *w, int idx)
{
	int fd, ms, r = pidlock_acquire_async(w->lock, &fd, &ms);

	if (r == -EWOULDBLOCK) {
		w->due_ms = now_ms() + ms;
		if (fd >= 0 && fd != w->fd) {
			struct epoll_event ev = { .events = EPOLLIN,
						  .data.u32 = (uint32_t)idx };

			if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
				return -errno;
			w->fd = fd;
		}
		return 0;
	}
	if (w->fd >= 0)
		(void)epoll_ctl(ep, EPOLL_CTL_DEL, w->fd, NULL);
	w->fd = -1;
	if (r < 0)
		return r;
	w->held = 1;
	printf("holding %s\n", pidlock_path(w->lock));
	return 0;
}

/* The epoll timeout: until the earliest retry a busy lock asked for. */
static int next_timeout(const struct want *w, int n)
{
	long soonest = -1;

	for (int i = 0; i < n; i++)
		if (!w[i].held && (soonest < 0 || w[i].due_ms < soonest))
			soonest = w[i].due_ms;
	if (soonest < 0)
		return -1;
	soonest -= now_ms();
	return soonest < 0 ? 0 : (int)soonest;
}

static int run(int ep, int tfd, struct want *w, long deadline)
{
	int ticks = 0, r;

	for (int i = 0; i < 2; i++)
		if ((r = step(ep, &w[i], i)) < 0)
			return r;
	while (!(w[0].held && w[1].held)) {
		struct epoll_event evs[4];
		int n = epoll_wait(ep, evs, 4, next_timeout(w, 2));

		if (n < 0 && errno != EINTR)
			return -errno;
		if (now_ms() >= deadline)
			return 1;
		for (int i = 0; i < n; i++) {
			uint64_t expired;

			if (evs[i].data.u32 != 2)
				continue;
			if (read(tfd, &expired, sizeof(expired)) > 0)
				printf("tick %d: still waiting\n", ++ticks);
		}
		/* Woken by a lock's descriptor or its retry time: try the
		 * locks not held yet; a quiet one answers busy again. */
		for (int i = 0; i < 2; i++)
			if (!w[i].held && (r = step(ep, &w[i], i)) < 0)
				return r;
	}
	return 0;
}

static int make_timer(int ep)
{
	struct itimerspec its = { .it_interval = { 0, 250000000 },
				  .it_value = { 0, 250000000 } };
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 2 };
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);

	if (tfd < 0)
		return -errno;
	if (timerfd_settime(tfd, 0, &its, NULL) < 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev) < 0) {
		int e = errno;

		close(tfd);
		return -e;
	}
	return tfd;
}

int main(int argc, char **argv)
{
	struct want w[2] = { { NULL, -1, 0, 0 }, { NULL, -1, 0, 0 } };
	long seconds = argc > 3 ? strtol(argv[3], NULL, 10) : 10;
	int ep, tfd, r;

	/* One line per event, as it happens, also into a pipe or a file. */
	(void)setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3 || seconds <= 0) {
		(void)fprintf(stderr, "usage: epoll-locks PATH1 PATH2 [SECONDS]\n");
		return 2;
	}
	for (int i = 0; i < 2; i++) {
		r = pidlock_new(&w[i].lock, argv[1 + i], 0);
		if (r < 0) {
			(void)fprintf(stderr, "%s: %s\n", argv[1 + i],
				      strerror(-r));
			pidlock_free(w[0].lock);
			return 2;
		}
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	tfd = ep < 0 ? -errno : make_timer(ep);
	r = tfd < 0 ? tfd : run(ep, tfd, w, now_ms() + seconds * 1000L);
	if (r < 0)
		(void)fprintf(stderr, "epoll-locks: %s\n", strerror(-r));
	else if (r == 1)
		printf("gave up after %ld s\n", seconds);
	/* Freeing a handle lets go of its lock, or cancels its wait. */
	for (int i = 0; i < 2; i++)
		pidlock_free(w[i].lock);
	if (tfd >= 0)
		(void)close(tfd);
	if (ep >= 0)
		(void)close(ep);
	return r < 0 ? 2 : r;
}
