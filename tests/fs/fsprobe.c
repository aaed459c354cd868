/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fsprobe DIR: what the file system under DIR offers the lock protocol.
 * Prints one "key=value" line per feature; values start with "yes" or
 * "no" and may carry a detail after a space.  Exit 0 after probing,
 * 2 if DIR is unusable.  It never uses libpidlock: it measures the
 * ground the library stands on, not the library.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

static const char *dir;
static int failures;

static char *at(const char *name)
{
	static char bufs[4][4096];
	static int n;
	char *b = bufs[n++ % 4];

	snprintf(b, 4096, "%s/%s", dir, name);
	return b;
}

static void out(const char *key, const char *fmt, ...)
{
	va_list ap;

	printf("%s=", key);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* A step that must work for the probe itself to mean anything. */
static int must(int r, const char *what)
{
	if (r < 0) {
		fprintf(stderr, "fsprobe: %s: %s\n", what, strerror(errno));
		failures++;
	}
	return r;
}

static int make_file(const char *name)
{
	int fd;

	(void)unlink(at(name));
	fd = open(at(name), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	return must(fd, name);
}

static void probe_tmpfile(void)
{
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	char proc[64];

	if (fd < 0) {
		out("o_tmpfile", "no %s", strerror(errno));
		out("linkat_tmpfile", "no (no O_TMPFILE)");
		return;
	}
	out("o_tmpfile", "yes");
	(void)unlink(at("probe-tmpfile"));
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, at("probe-tmpfile"),
		   AT_SYMLINK_FOLLOW) == 0)
		out("linkat_tmpfile", "yes");
	else
		out("linkat_tmpfile", "no %s", strerror(errno));
	(void)unlink(at("probe-tmpfile"));
	close(fd);
}

/* Two open file descriptions of one file: the second must be refused. */
static void probe_exclusion(void)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int a = make_file("probe-lock"), b;

	if (a < 0)
		return;
	b = must(open(at("probe-lock"), O_RDWR | O_CLOEXEC), "reopen");
	if (b < 0) {
		close(a);
		return;
	}
	if (flock(a, LOCK_EX | LOCK_NB) < 0)
		out("flock", "no %s", strerror(errno));
	else if (flock(b, LOCK_EX | LOCK_NB) == 0)
		out("flock", "no not exclusive: a second open file got it too");
	else if (errno != EWOULDBLOCK)
		out("flock", "no second try: %s", strerror(errno));
	else
		out("flock", "yes");
	if (fcntl(a, F_OFD_SETLK, &fl) < 0) {
		out("ofd", "no %s", strerror(errno));
	} else {
		struct flock q = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

		if (fcntl(b, F_OFD_SETLK, &fl) == 0)
			out("ofd", "no not exclusive: a second open file got it too");
		else if (errno != EAGAIN && errno != EACCES)
			out("ofd", "no second try: %s", strerror(errno));
		else if (fcntl(b, F_OFD_GETLK, &q) < 0 || q.l_type == F_UNLCK)
			out("ofd", "no F_OFD_GETLK does not see the holder");
		else
			out("ofd", "yes");
	}
	close(b);
	close(a);
	(void)unlink(at("probe-lock"));
}

/*
 * Does /proc/locks name the file the way stat(2) does?  inspect and the
 * CLI's status find a file's kernel holders there by st_dev:st_ino.
 */
static void probe_proc_locks(void)
{
	int fd = make_file("probe-proc");
	struct stat st;
	char line[256], seen[64] = "";
	FILE *f;
	int match = 0;

	if (fd < 0)
		return;
	if (must(fstat(fd, &st), "fstat") < 0 || flock(fd, LOCK_EX) < 0) {
		out("proc_locks", "no (flock: %s)", strerror(errno));
		close(fd);
		return;
	}
	f = fopen("/proc/locks", "re");
	if (!f) {
		out("proc_locks", "no %s", strerror(errno));
		close(fd);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned int maj, min;
		unsigned long long ino;
		char type[16];
		int pid;

		if (sscanf(line, "%*d: %15s %*s %*s %d %x:%x:%llu", type, &pid,
			   &maj, &min, &ino) != 5 || pid != getpid() ||
		    strcmp(type, "FLOCK") != 0)
			continue;
		snprintf(seen, sizeof(seen), "%02x:%02x:%llu", maj, min, ino);
		if (ino == (unsigned long long)st.st_ino &&
		    maj == major(st.st_dev) && min == minor(st.st_dev))
			match = 1;
	}
	fclose(f);
	if (match)
		out("proc_locks", "yes");
	else
		out("proc_locks", "no stat says %02x:%02x:%llu, /proc/locks says %s",
		    major(st.st_dev), minor(st.st_dev),
		    (unsigned long long)st.st_ino, seen[0] ? seen : "nothing");
	close(fd);
	(void)unlink(at("probe-proc"));
}

static int same_id(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/*
 * Identity: fstat of an open file against lstat of its name, for a
 * plain file and for a second name made by link(2) (the named-temp
 * publish).  Then the link count each view reports after the temp name
 * is unlinked, and whether a lock taken through the first name excludes
 * an opener of the second (locks must follow the inode, not the name).
 */
static void probe_identity(void)
{
	int fd = make_file("probe-id"), fd2;
	struct stat fst, lst, st2;

	if (fd < 0)
		return;
	if (must(fstat(fd, &fst), "fstat") < 0 ||
	    must(lstat(at("probe-id"), &lst), "lstat") < 0) {
		close(fd);
		return;
	}
	if (same_id(&fst, &lst))
		out("identity", "yes");
	else
		out("identity", "no fstat %u:%u/%llu, lstat %u:%u/%llu",
		    major(fst.st_dev), minor(fst.st_dev),
		    (unsigned long long)fst.st_ino, major(lst.st_dev),
		    minor(lst.st_dev), (unsigned long long)lst.st_ino);

	(void)unlink(at("probe-id2"));
	if (link(at("probe-id"), at("probe-id2")) < 0) {
		out("link", "no %s", strerror(errno));
		close(fd);
		(void)unlink(at("probe-id"));
		return;
	}
	out("link", "yes");
	if (must(lstat(at("probe-id2"), &lst), "lstat link") == 0)
		out("link_identity", same_id(&fst, &lst) ? "yes" :
		    "no the new name has another st_ino/st_dev");
	fd2 = must(open(at("probe-id2"), O_RDWR | O_CLOEXEC), "open link");
	if (fd2 >= 0) {
		if (flock(fd, LOCK_EX | LOCK_NB) < 0)
			out("link_lock", "no flock: %s", strerror(errno));
		else if (flock(fd2, LOCK_EX | LOCK_NB) == 0)
			out("link_lock", "no a flock through the first name does not exclude the second name");
		else
			out("link_lock", "yes");
		(void)flock(fd, LOCK_UN);
	}
	if (must(unlink(at("probe-id")), "unlink first name") == 0 &&
	    must(lstat(at("probe-id2"), &lst), "lstat after unlink") == 0) {
		int fd3 = open(at("probe-id2"), O_RDONLY | O_CLOEXEC);
		long reopen = -1, held = -1;

		/* FUSE hard_remove: the unlinked file's fd can no longer
		 * be asked anything.  Worth knowing, not fatal here. */
		if (fstat(fd, &fst) < 0) {
			out("fstat_unlinked", "no %s", strerror(errno));
			fst.st_nlink = (nlink_t)-1;
		} else {
			out("fstat_unlinked", "yes");
		}

		if (fd3 >= 0 && fstat(fd3, &st2) == 0)
			reopen = (long)st2.st_nlink;
		if (fd2 >= 0 && fstat(fd2, &st2) == 0)
			held = (long)st2.st_nlink;
		if (fd3 >= 0)
			close(fd3);
		/* All four views should say 1 at once. */
		if (fst.st_nlink == 1 && lst.st_nlink == 1 && reopen == 1 &&
		    held == 1)
			out("nlink_after_unlink", "yes");
		else
			out("nlink_after_unlink",
			    "no fd-of-unlinked-name %ld, lstat %ld, reopen %ld, fd-of-second-name %ld (want 1 1 1 1)",
			    (long)fst.st_nlink, (long)lst.st_nlink, reopen, held);
	}
	if (fd2 >= 0)
		close(fd2);
	close(fd);
	(void)unlink(at("probe-id2"));
}

/* inotify: an unlink of a watched file must reach the watcher. */
static void probe_inotify(void)
{
	int fd = make_file("probe-ino"), ifd, dwd, fwd;
	struct pollfd p;

	if (fd < 0)
		return;
	close(fd);
	ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (ifd < 0) {
		out("inotify", "no %s", strerror(errno));
		return;
	}
	dwd = inotify_add_watch(ifd, dir, IN_DELETE | IN_ONLYDIR);
	fwd = inotify_add_watch(ifd, at("probe-ino"), IN_ATTRIB | IN_DELETE_SELF);
	if (dwd < 0 || fwd < 0) {
		out("inotify", "no add_watch: %s", strerror(errno));
		close(ifd);
		(void)unlink(at("probe-ino"));
		return;
	}
	if (must(unlink(at("probe-ino")), "unlink") < 0) {
		close(ifd);
		return;
	}
	p.fd = ifd;
	p.events = POLLIN;
	if (poll(&p, 1, 500) == 1)
		out("inotify", "yes");
	else
		out("inotify", "no no event within 500 ms of an unlink");
	close(ifd);
}

static void probe_renameat2(void)
{
	int a = make_file("probe-ra"), b = make_file("probe-rb");
	long r;

	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
	if (a < 0 || b < 0)
		return;
	r = syscall(SYS_renameat2, AT_FDCWD, at("probe-ra"), AT_FDCWD,
		    at("probe-rb"), RENAME_NOREPLACE);
	if (r == 0)
		out("rename_noreplace", "no it replaced an existing name");
	else if (errno == EEXIST)
		out("rename_noreplace", "yes");
	else
		out("rename_noreplace", "no %s", strerror(errno));
	(void)unlink(at("probe-ra"));
	(void)unlink(at("probe-rb"));
}

int main(int argc, char **argv)
{
	struct stat st;

	if (argc != 2) {
		fprintf(stderr, "usage: fsprobe DIR\n");
		return 2;
	}
	dir = argv[1];
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "fsprobe: %s: not a directory\n", dir);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	probe_tmpfile();
	probe_exclusion();
	probe_proc_locks();
	probe_identity();
	probe_inotify();
	probe_renameat2();
	return failures ? 2 : 0;
}
