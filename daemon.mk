# SPDX-License-Identifier: LGPL-2.1-or-later
# Daemons and the pidfile(3) layer: header, example, tests, manual pages.
# The library sources (lib/daemon.c, lib/pidfile.c) are in Makefile.am.

include_HEADERS += include/pidlock-pidfile.h

# --- the example daemon ------------------------------------------------------
# -no-install: a real binary, not a libtool wrapper script, so that
# start-stop-daemon, pgrep and /proc see the daemon itself.
noinst_PROGRAMS += examples/daemon
examples_daemon_SOURCES = examples/daemon.c
examples_daemon_LDADD = lib/libpidlock.la
examples_daemon_LDFLAGS = $(AM_LDFLAGS) -no-install

EXTRA_DIST += doc/daemon.md doc/examples/daemon.service \
	doc/examples/daemon.init doc/examples/daemon.openrc

# --- tests -------------------------------------------------------------------
check_PROGRAMS += tests/daemon/reaper tests/daemon/bsd-daemon-pidlock
tests_daemon_reaper_SOURCES = tests/daemon/reaper.c

# The libbsd daemon with its one include line switched, nothing else:
# the switch a packager makes, done by sed so the source stays libbsd's.
nodist_tests_daemon_bsd_daemon_pidlock_SOURCES = tests/daemon/bsd-daemon-pidlock.c
tests_daemon_bsd_daemon_pidlock_LDADD = lib/libpidlock.la
tests_daemon_bsd_daemon_pidlock_LDFLAGS = $(AM_LDFLAGS) -no-install
CLEANFILES += tests/daemon/bsd-daemon-pidlock.c
tests/daemon/bsd-daemon-pidlock.c: $(srcdir)/tests/daemon/bsd-daemon.c
	$(AM_V_GEN)$(MKDIR_P) tests/daemon && \
	sed 's|^#include <bsd/libutil.h>$$|#include <pidlock-pidfile.h>|' \
		$(srcdir)/tests/daemon/bsd-daemon.c >$@.tmp && \
	grep -q '^#include <pidlock-pidfile.h>$$' $@.tmp && \
	! grep -q 'bsd/libutil' $@.tmp && \
	mv $@.tmp $@

TESTS += tests/daemon/flow-example.sh tests/daemon/flow-pidfile.sh \
	tests/daemon/docs.sh
EXTRA_DIST += tests/daemon/bsd-daemon.c tests/daemon/flow.sh \
	tests/daemon/flow-example.sh tests/daemon/flow-pidfile.sh \
	tests/daemon/flow-libbsd.sh tests/daemon/docs.sh \
	tests/daemon/doc-examples.sh tests/daemon/man-lint.sh

if HAVE_LIBBSD
check_PROGRAMS += tests/daemon/bsd-daemon-libbsd \
	tests/daemon/both-headers tests/daemon/both-headers-bsd-first
tests_daemon_bsd_daemon_libbsd_SOURCES = tests/daemon/bsd-daemon.c
tests_daemon_bsd_daemon_libbsd_LDADD = $(LIBBSD_LIBS)
tests_daemon_bsd_daemon_libbsd_LDFLAGS = $(AM_LDFLAGS) -no-install
tests_daemon_both_headers_SOURCES = tests/daemon/both-headers.c
# The renamed libbsd prototypes repeat ours, which is the point.
tests_daemon_both_headers_CFLAGS = $(AM_CFLAGS) -Wno-redundant-decls
tests_daemon_both_headers_LDADD = lib/libpidlock.la $(LIBBSD_LIBS)
tests_daemon_both_headers_LDFLAGS = $(AM_LDFLAGS) -no-install
tests_daemon_both_headers_bsd_first_SOURCES = tests/daemon/both-headers.c
tests_daemon_both_headers_bsd_first_CPPFLAGS = $(AM_CPPFLAGS) -DBSD_FIRST
tests_daemon_both_headers_bsd_first_LDADD = lib/libpidlock.la $(LIBBSD_LIBS)
tests_daemon_both_headers_bsd_first_LDFLAGS = $(AM_LDFLAGS) -no-install
TESTS += tests/daemon/flow-libbsd.sh tests/daemon/both-headers \
	tests/daemon/both-headers-bsd-first
endif

if HAVE_CHECK
check_PROGRAMS += tests/daemon/pidlock-daemon-unit
tests_daemon_pidlock_daemon_unit_SOURCES = tests/daemon/unit.c $(TEST_UTIL)
tests_daemon_pidlock_daemon_unit_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_daemon_pidlock_daemon_unit_LDADD = lib/libpidlock.la $(CHECK_LIBS) \
	$(LIBBSD_LIBS)
tests_daemon_pidlock_daemon_unit_LDFLAGS = $(AM_LDFLAGS) -no-install
TESTS += tests/daemon/pidlock-daemon-unit
endif

# --- manual pages --------------------------------------------------------------
DAEMON_MANS = \
	man/pidlock_daemon_open.3 \
	man/pidlock_daemon_rebind.3 \
	man/pidlock_daemon_refresher_start.3 \
	man/pidlock_daemon_refresher_status.3 \
	man/pidlock_daemon_refresher_stop.3 \
	man/pidlock_pidfile_open.3 \
	man/pidlock_pidfile_write.3 \
	man/pidlock_pidfile_close.3 \
	man/pidlock_pidfile_remove.3 \
	man/pidlock_pidfile_fileno.3 \
	man/pidlock_pidfile_handle.3
dist_man_MANS += $(DAEMON_MANS)

if HAVE_MANDOC
TESTS += tests/daemon/man-lint.sh
endif
