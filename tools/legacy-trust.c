/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who could have written a legacy pidfile (legacy.c): a pid in a file is
 * only as good as the users who can write that file.  Root's
 * `pidlock --stop --legacy-name sleep /tmp/x/daemon.pid` must not kill
 * root's sleep(1) because user nobody wrote its pid there.
 *
 * Trusted writers: root, the caller (its effective uid), and the user
 * the named process runs as (its real, effective, saved and file-system
 * uids all one user: who can signal it anyway).  The pidfile is trusted
 * only if no one else can write it or replace it:
 *
 *  - the file itself (never a symlink: O_NOFOLLOW) belongs to a trusted
 *    writer and is neither group- nor world-writable (an ACL that lets
 *    another user write shows in the group bits, its mask);
 *  - every directory its path passes through, from / on, as open(2)
 *    resolves it (symlinks followed, and ".."), belongs to a trusted
 *    writer and is neither group- nor world-writable, unless it has the
 *    sticky bit (there only an entry's owner can remove or replace it);
 *  - every symlink on the way belongs to a trusted writer: in a sticky
 *    directory the owner of a link can replace it.
 *
 * That is the rule a privileged init system needs to follow a pidfile;
 * systemd refuses a PIDFile= in the same spirit.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* As the kernel's MAXSYMLINKS: more is a loop. */
#define LINKS_MAX 40
#define NO_UID ((uid_t)-1)

/* The walk: where it is, and who may write. */
struct walk {
	uid_t caller;
	uid_t owner;		/* the process's one uid, or NO_UID */
	char where[PATH_MAX];	/* the directory reached, for messages */
	char *why;
	size_t size;
};

/* "nobody (uid 65534)", "staff (gid 50)": name is NULL when the
 * database has none. */
static void id_text(const char *name, const char *kind, unsigned int id,
		    char *buf, size_t size)
{
	if (name)
		text_set(buf, size, "%s (%s %u)", name, kind, id);
	else
		text_set(buf, size, "%s %u", kind, id);
}

static void user_text(uid_t uid, char *buf, size_t size)
{
	const struct passwd *pw = getpwuid(uid);

	id_text(pw ? pw->pw_name : NULL, "uid", (unsigned int)uid, buf, size);
}

static void group_text(gid_t gid, char *buf, size_t size)
{
	const struct group *gr = getgrgid(gid);

	id_text(gr ? gr->gr_name : NULL, "gid", (unsigned int)gid, buf, size);
}

/* The user that pid runs as: all four uids of /proc/PID/status one
 * user, else NO_UID (a set-uid program is not its real user's). */
static uid_t process_owner(pid_t pid)
{
	char path[64], line[256];
	unsigned int r, e, s, f;
	uid_t uid = NO_UID;
	FILE *fp;

	text_set(path, sizeof(path), "/proc/%ld/status", (long)pid);
	fp = fopen(path, "re");
	if (!fp)
		return NO_UID;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "Uid: %u %u %u %u", &r, &e, &s, &f) == 4) {
			if (r == e && e == s && s == f)
				uid = (uid_t)r;
			break;
		}
	(void)fclose(fp);	/* read only: nothing to flush */
	return uid;
}

static bool trusted(const struct walk *w, uid_t uid)
{
	return uid == 0 || uid == w->caller ||
	       (w->owner != NO_UID && uid == w->owner);
}

/* Untrusted: "WHAT, so WHO could have put any pid in the pidfile". */
static int untrusted(struct walk *w, const char *what, const char *who)
{
	text_set(w->why, w->size, "%s, so %s could have put any pid in "
		 "the pidfile", what, who);
	return 1;
}

/* Is the entry (a directory, a symlink, the file) `kind` named name,
 * with st, writable by an untrusted user?  0 no, 1 yes (said). */
static int check_entry(struct walk *w, const struct stat *st,
		       const char *kind, const char *name)
{
	char what[PATH_MAX + 128], who[128];
	bool sticky = S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX);

	if (!trusted(w, st->st_uid)) {
		user_text(st->st_uid, who, sizeof(who));
		text_set(what, sizeof(what), "%s %s belongs to %s", kind, name,
			 who);
		return untrusted(w, what, who);
	}
	if (S_ISLNK(st->st_mode) || sticky)
		return 0;
	if (st->st_mode & S_IWOTH) {
		text_set(what, sizeof(what), "%s %s is writable by everyone%s",
			 kind, name, S_ISDIR(st->st_mode) ?
			 " and has no sticky bit" : "");
		return untrusted(w, what, "any user");
	}
	if (st->st_mode & S_IWGRP) {
		char group[96];

		group_text(st->st_gid, group, sizeof(group));
		text_set(what, sizeof(what), "%s %s is writable by its group "
			 "%s%s", kind, name, group, S_ISDIR(st->st_mode) ?
			 " and has no sticky bit" : "");
		text_set(who, sizeof(who), "any member of group %s", group);
		return untrusted(w, what, who);
	}
	return 0;
}

/* *to is fd from now on; the descriptor it held, closed. */
static void move_fd(int *to, int fd)
{
	if (*to >= 0)
		(void)close(*to);	/* O_PATH: nothing to flush */
	*to = fd;
}

/* fstat(2) fd, or close it: 0, or -errno. */
static int stat_or_close(int fd, struct stat *st)
{
	int err;

	if (fstat(fd, st) == 0)
		return 0;
	err = errno;
	(void)close(fd);	/* O_PATH: nothing to flush */
	return -err;
}

/* The walk starts, or starts again after an absolute symlink, at /. */
static int enter_root(struct walk *w, int *dirfd)
{
	struct stat st;
	int r, fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	r = stat_or_close(fd, &st);
	if (r < 0)
		return r;
	move_fd(dirfd, fd);
	text_set(w->where, sizeof(w->where), "/");
	return check_entry(w, &st, "the directory", "/");
}

/* "A/B" in buf, or -ENAMETOOLONG. */
static int join(char *buf, size_t size, const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);

	if (na + 1 + nb >= size)
		return -ENAMETOOLONG;
	memcpy(buf, a, na);
	buf[na] = '/';
	memcpy(buf + na + 1, b, nb + 1);
	return 0;
}

/* w->where's entry name, in buf: "/run/x" (for messages: the name
 * alone if that is too long) */
static void entry_path(const struct walk *w, const char *name, char *buf,
		       size_t size)
{
	bool root = strcmp(w->where, "/") == 0;

	if (join(buf, size, root ? "" : w->where, name) < 0)
		text_set(buf, size, "%s", name);
}

/* w->where after a step through the directory name. */
static void where_step(struct walk *w, const char *name)
{
	char *slash;

	if (strcmp(name, "..") != 0) {
		char next[PATH_MAX];

		entry_path(w, name, next, sizeof(next));
		text_set(w->where, sizeof(w->where), "%s", next);
		return;
	}
	slash = strrchr(w->where, '/');
	if (slash && slash != w->where)
		*slash = '\0';
	else
		text_set(w->where, sizeof(w->where), "/");
}

/*
 * One step of the walk, from the directory *dirfd through name, which
 * is not the path's last: 0 on, 1 untrusted (said), 2 a symlink (its
 * target in link, to be walked instead), or -errno.
 */
static int step(struct walk *w, int *dirfd, const char *name, char *link,
		size_t size)
{
	char full[PATH_MAX + NAME_MAX + 2];
	struct stat st;
	int r, fd;

	if (strcmp(name, ".") == 0)
		return 0;
	fd = openat(*dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = stat_or_close(fd, &st);
	if (r < 0)
		return r;
	entry_path(w, name, full, sizeof(full));
	if (S_ISLNK(st.st_mode)) {
		ssize_t n;

		r = check_entry(w, &st, "the symlink", full);
		n = r ? 0 : readlinkat(fd, "", link, size - 1);
		r = r ? r : n < 0 ? -errno : 2;
		link[n > 0 ? n : 0] = '\0';
		(void)close(fd);	/* O_PATH: nothing to flush */
		return r;
	}
	if (!S_ISDIR(st.st_mode)) {
		(void)close(fd);	/* O_PATH: nothing to flush */
		return -ENOTDIR;
	}
	move_fd(dirfd, fd);
	where_step(w, name);
	return check_entry(w, &st, "the directory", w->where);
}

/* The pidfile itself, name in *dirfd: 0 trusted, 1 not, -errno. */
static int check_file(struct walk *w, int dirfd, const char *name)
{
	char full[PATH_MAX + NAME_MAX + 2];
	struct stat st;
	int r, fd;

	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EISDIR;
	fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = stat_or_close(fd, &st);
	if (r < 0)
		return r;
	(void)close(fd);	/* O_PATH: nothing to flush */
	/* as pidlock_inspect(3) opens it: never through a symlink */
	if (S_ISLNK(st.st_mode))
		return -ELOOP;
	entry_path(w, name, full, sizeof(full));
	return check_entry(w, &st, "the file", full);
}

/*
 * The next name of the path at *p, in name; *p past it.  1 it is the
 * last, 0 more follow, -ENAMETOOLONG.  (A path that ends in "/" ends in
 * a directory: its last name is that, which check_file() refuses.)
 */
static int next_name(const char **p, char *name, size_t size)
{
	const char *s = *p + strspn(*p, "/");
	size_t n = strcspn(s, "/");

	if (n >= size)
		return -ENAMETOOLONG;
	memcpy(name, s, n);
	name[n] = '\0';
	*p = s + n;
	return (*p)[strspn(*p, "/")] == '\0';
}

/* The whole path to walk from /, in todo: relative ones after the
 * working directory (getcwd(3) gives it without symlinks). */
static int absolute(const char *path, char *todo, size_t size)
{
	char cwd[PATH_MAX];

	if (!path[0])
		return -ENOENT;
	if (path[0] != '/' && !getcwd(cwd, sizeof(cwd)))
		return -errno;
	if (path[0] != '/')
		return join(todo, size, cwd, path);
	if (strlen(path) >= size)
		return -ENAMETOOLONG;
	memcpy(todo, path, strlen(path) + 1);
	return 0;
}

/* A symlink's target instead of its name: todo becomes link + the rest
 * (rest points into todo); from / again if the link is absolute. */
static int follow_link(struct walk *w, int *dirfd, const char *link,
		  const char *rest, char *todo, size_t size)
{
	char next[2 * PATH_MAX];
	int r = join(next, sizeof(next), link, rest);

	if (r < 0 || strlen(next) >= size)
		return r < 0 ? r : -ENAMETOOLONG;
	memcpy(todo, next, strlen(next) + 1);
	return link[0] == '/' ? enter_root(w, dirfd) : 0;
}

int pidfile_untrusted(const char *path, pid_t pid, char *why, size_t size)
{
	struct walk w = { .caller = geteuid(), .owner = process_owner(pid),
			  .why = why, .size = size };
	char todo[2 * PATH_MAX], link[PATH_MAX] = "", name[NAME_MAX + 1];
	const char *p = todo;
	int dirfd = -1, links = 0;
	int r = absolute(path, todo, sizeof(todo));

	if (r == 0)
		r = enter_root(&w, &dirfd);
	while (r == 0) {
		int last = next_name(&p, name, sizeof(name));

		if (last != 0) {
			r = last < 0 ? last : check_file(&w, dirfd, name);
			break;
		}
		r = step(&w, &dirfd, name, link, sizeof(link));
		if (r != 2)
			continue;
		r = ++links > LINKS_MAX ? -ELOOP :
		    follow_link(&w, &dirfd, link, p, todo, sizeof(todo));
		p = todo;
	}
	move_fd(&dirfd, -1);
	return r;
}
