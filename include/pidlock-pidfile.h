/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pidfile(3) names for libpidlock.  A daemon written against libbsd's
 * <bsd/libutil.h> (or FreeBSD's <libutil.h>) pidfile functions switches
 * by including this header instead and linking -lpidlock instead of
 * -lbsd.  Only the names are mapped: the library exports
 * pidlock_pidfile_*, never pidfile_*, so it can share a process with
 * libbsd.  See pidlock_pidfile_open(3).
 */
#ifndef PIDLOCK_PIDFILE_H
#define PIDLOCK_PIDFILE_H

#include "pidlock.h"

/* The pidfile(3) names of the pidlock_pidfile_* functions.  Also renames
 * the declarations of <bsd/libutil.h> if that is included later, which
 * keeps both headers usable in one file.  See pidlock_pidfile_open(3). */
#define pidfh pidlock_pidfh
#define pidfile_open pidlock_pidfile_open
#define pidfile_write pidlock_pidfile_write
#define pidfile_close pidlock_pidfile_close
#define pidfile_remove pidlock_pidfile_remove
#define pidfile_fileno pidlock_pidfile_fileno

#endif /* PIDLOCK_PIDFILE_H */
