/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * File systems with no lock manager behind them (doc/protocol.md,
 * "Never silently local").  The client takes a flock(2) or fcntl(2)
 * lock in this kernel only, and another host's lock on the same file is
 * granted too.  Nothing a process can ask of the file tells: a second
 * open file description here is refused as it should be.  Only the way
 * the file system was mounted says so, in /proc/self/mountinfo:
 *
 *   36 35 0:52 / /mnt rw,relatime shared:1 - nfs4 srv:/x rw,...,local_lock=all
 *
 * after the " - ": the type, the source, and the super block's options.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mounts.h"

/* "mnt_id:\t42" in /proc/self/fdinfo/FD; -1 if not there. */
int mounts_fd_id(int fd)
{
	char name[64], buf[512];
	const char *p;
	ssize_t n;
	int ifd, id, saved;

	(void)snprintf(name, sizeof(name), "/proc/self/fdinfo/%d", fd);
	ifd = open(name, O_RDONLY | O_CLOEXEC);
	if (ifd < 0)
		return -1;
	do
		n = read(ifd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	saved = errno;
	(void)close(ifd);	/* read-only: nothing to lose */
	errno = saved;
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, "mnt_id:");
	if (!p || sscanf(p, "mnt_id: %d", &id) != 1)
		return -1;
	return id;
}

char *mounts_line(int id)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t size = 0;
	int mid;

	if (!f)
		return NULL;
	/* getline(3): an NFS mount's options make a long line. */
	while (getline(&line, &size, f) >= 0) {
		if (sscanf(line, "%d", &mid) == 1 && mid == id) {
			(void)fclose(f);	/* read-only */
			return line;
		}
	}
	free(line);
	(void)fclose(f);
	return NULL;
}

/* The space-separated field at *p, copied to out (cut to its size);
 * *p moves past it. */
static bool next_field(const char **p, char *out, size_t size)
{
	const char *s = *p + strspn(*p, " ");
	size_t n = strcspn(s, " \n");

	if (n == 0)
		return false;
	(void)snprintf(out, size, "%.*s", (int)n, s);
	*p = s + n;
	return true;
}

/* The length of the option at o: options end at a comma, the line at
 * its newline. */
static size_t opt_len(const char *o)
{
	return strcspn(o, ",\n");
}

static bool opt_is(const char *o, const char *value)
{
	return opt_len(o) == strlen(value) && strncmp(o, value, opt_len(o)) == 0;
}

/* The option of opts that equals name, or starts with it where name
 * ends in '=' (its value follows); NULL if none. */
static const char *find_opt(const char *opts, const char *name)
{
	size_t len = strlen(name);
	bool prefix = len > 0 && name[len - 1] == '=';

	for (const char *o = opts; *o && *o != '\n'; o += opt_len(o)) {
		o += *o == ',';
		if (prefix ? opt_len(o) >= len && strncmp(o, name, len) == 0
			   : opt_is(o, name))
			return o;
	}
	return NULL;
}

static int local_by(struct mounts_local *out, const char *type,
		    const char *opt)
{
	(void)snprintf(out->type, sizeof(out->type), "%s", type);
	(void)snprintf(out->option, sizeof(out->option), "%.*s",
		       opt ? (int)opt_len(opt) : 0, opt ? opt : "");
	return 1;
}

/*
 * NFS: "nolock" keeps both kinds on the client (no NLM); "local_lock="
 * names the kinds kept there, "none" being none.  nfs(5) says such
 * locks "provide exclusion only against other applications running on
 * the same client".  Even local_lock=flock (fcntl locks still reach the
 * server) is refused: a flock(1) peer on another host would be let in.
 */
static int nfs_local(const char *type, const char *opts,
		     struct mounts_local *out)
{
	const char *o = find_opt(opts, "nolock");

	if (o)
		return local_by(out, type, o);
	o = find_opt(opts, "local_lock=");
	if (o && !opt_is(o, "local_lock=none"))
		return local_by(out, type, o);
	return 0;
}

/*
 * 9P2000.L (the default, no "version=" shown) sends locks to the server
 * (TLOCK).  The older dialects have no lock message: the kernel locks
 * in this host only.  Their mounts show "noextend" (9P2000) or
 * "version=9p2000.u".
 */
static int v9fs_local(const char *type, const char *opts,
		      struct mounts_local *out)
{
	const char *o = find_opt(opts, "noextend");
	const char *v = find_opt(opts, "version=");

	if (o)
		return local_by(out, type, o);
	if (v && !opt_is(v, "version=9p2000.L"))
		return local_by(out, type, v);
	return 0;
}

/*
 * Types not listed are not refused: local file systems, and FUSE ones
 * that forward locks to their servers (fuse.glusterfs, fuse.ceph-fuse)
 * or have no other host (fuse-overlayfs, bindfs).  sshfs: SFTP has no
 * lock request, so sshfs implements none, and the kernel keeps FUSE
 * locks local for a file system that has none.
 */
int mounts_classify(const char *line, struct mounts_local *out)
{
	char type[64], source[4096];
	const char *p = strstr(line, " - "), *opts;

	/* Spaces within the earlier fields are escaped (\040): the first
	 * " - " is the separator. */
	if (!p)
		return 0;
	p += 3;
	if (!next_field(&p, type, sizeof(type)) ||
	    !next_field(&p, source, sizeof(source)))
		return 0;
	opts = p + strspn(p, " ");
	if (strcmp(type, "nfs") == 0 || strcmp(type, "nfs4") == 0)
		return nfs_local(type, opts, out);
	/* cifs(5) "nobrl": byte-range locks are not sent to the server. */
	if ((strcmp(type, "cifs") == 0 || strcmp(type, "smb3") == 0) &&
	    find_opt(opts, "nobrl"))
		return local_by(out, type, find_opt(opts, "nobrl"));
	/* kAFS "flock=local": no reference is made to the server. */
	if (strcmp(type, "afs") == 0 && find_opt(opts, "flock=local"))
		return local_by(out, type, find_opt(opts, "flock=local"));
	if (strcmp(type, "9p") == 0)
		return v9fs_local(type, opts, out);
	if (strcmp(type, "fuse.sshfs") == 0)
		return local_by(out, type, NULL);
	return 0;
}

int mounts_fd_local(int fd, struct mounts_local *out)
{
	int id = mounts_fd_id(fd);
	char *line;
	int r;

	if (id < 0)
		return 0;
	line = mounts_line(id);
	if (!line)
		return 0;
	r = mounts_classify(line, out);
	free(line);
	return r;
}
