# SPDX-License-Identifier: LGPL-2.1-or-later
# The proof suite: the mixed-peer SIGKILL torture (tests/torture), fault
# injection (tests/fault), and the sanitizer and valgrind runs.
#
#   make check                 the short torture of every mix (< 60 s)
#   make check-torture         the long one; TORTURE_DURATION (s per mix),
#                              TORTURE_PROCS, TORTURE_KILL_RATE (kills/s),
#                              TORTURE_MIXES
#   make check-notmpfile       the whole suite with RENAME_NOREPLACE and
#                              O_TMPFILE refused, so the last way to publish
#                              in lib/create.c (in place, O_EXCL) runs
#   make check-asan            the whole suite built with --enable-sanitizers
#   make check-valgrind        the whole suite under valgrind

# --- the torture ------------------------------------------------------------
check_PROGRAMS += tests/torture/torture
tests_torture_torture_SOURCES = \
	tests/torture/torture.h \
	tests/torture/torture.c \
	tests/torture/peers.c \
	tests/torture/journal.c
tests_torture_torture_LDADD = lib/libpidlock.la $(LIBBSD_LIBS)

TORTURE_SHORT = \
	tests/torture/short-flock.sh \
	tests/torture/short-fcntl.sh \
	tests/torture/short-spec.sh \
	tests/torture/short-alone.sh \
	tests/torture/short-flock1.sh \
	tests/torture/short-keepfile.sh \
	tests/torture/short-unsafe-flock.sh \
	tests/torture/short-unsafe-rename.sh
TESTS += $(TORTURE_SHORT)

check_PROGRAMS += tests/torture/test-unlink-race
tests_torture_test_unlink_race_SOURCES = tests/torture/test-unlink-race.c
tests_torture_test_unlink_race_LDADD = lib/libpidlock.la
TESTS += tests/torture/test-unlink-race
EXTRA_DIST += $(TORTURE_SHORT) tests/torture/run.sh tests/torture/README \
	tests/torture/vg-run tests/torture/valgrind.supp

TORTURE_DURATION = 60
TORTURE_PROCS = 8
TORTURE_KILL_RATE = 10
TORTURE_MIXES = flock fcntl spec alone flock1 keepfile

.PHONY: check-torture check-notmpfile check-asan check-valgrind
check-torture: tests/torture/torture
	$(AM_V_at)for m in $(TORTURE_MIXES); do \
	  TORTURE_DURATION=$(TORTURE_DURATION) TORTURE_PROCS=$(TORTURE_PROCS) \
	  TORTURE_KILL_RATE=$(TORTURE_KILL_RATE) \
	  $(SHELL) $(srcdir)/tests/torture/run.sh --mix $$m --bound 60 || exit 1; \
	done

# Runs every test (the library's, the torture, the fault tests) under
# valgrind: compiled tests directly, the torture's participants through
# TORTURE_VALGRIND.
check-valgrind: all
	$(AM_V_at)$(MAKE) $(AM_MAKEFLAGS) check \
	  LOG_COMPILER="$(SHELL) $(abs_srcdir)/tests/torture/vg-run" \
	  TORTURE_VALGRIND=1 LIBTOOL="$(LIBTOOL)"

# A separate build: the source tree as `make dist` would ship it,
# configured with --enable-sanitizers.
ASAN_DIR = _check-asan
check-asan:
	$(AM_V_at)rm -rf $(ASAN_DIR) && mkdir $(ASAN_DIR)
	$(AM_V_at)$(MAKE) $(AM_MAKEFLAGS) distdir distdir=$(ASAN_DIR)/src
	$(AM_V_at)cd $(ASAN_DIR)/src && \
	  ./configure --enable-sanitizers --enable-werror \
	    $(ASAN_CONFIGURE_FLAGS) >../configure.log && \
	  grep -q 'sanitizers: *yes' ../configure.log && \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(MAKE) $(AM_MAKEFLAGS) check
	$(AM_V_at)rm -rf $(ASAN_DIR)

# --- fault injection -------------------------------------------------------
# The shim is a shared object: LD_PRELOADed by check-notmpfile, linked
# ahead of the C library by the fault test.
check_LTLIBRARIES = tests/fault/libfaultshim.la
tests_fault_libfaultshim_la_SOURCES = tests/fault/faultshim.c \
	tests/fault/faultshim.h
tests_fault_libfaultshim_la_LDFLAGS = -avoid-version -shared \
	-rpath $(abs_builddir)/tests/fault
tests_fault_libfaultshim_la_LIBADD = -ldl

if HAVE_CHECK
check_PROGRAMS += tests/fault/test-fault
tests_fault_test_fault_SOURCES = tests/fault/test-fault.c $(TEST_UTIL)
tests_fault_test_fault_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_fault_test_fault_LDADD = tests/fault/libfaultshim.la lib/libpidlock.la \
	$(CHECK_LIBS)
TESTS += tests/fault/test-fault
endif

# The whole suite on a file system without RENAME_NOREPLACE or O_TMPFILE,
# as far as the library can tell; the log proves both were refused.
NOTMPFILE_LOG = $(abs_builddir)/notmpfile.log
check-notmpfile: all tests/fault/libfaultshim.la
	$(AM_V_at)rm -f $(NOTMPFILE_LOG)
	$(AM_V_at)$(MAKE) $(AM_MAKEFLAGS) check TESTS_ENVIRONMENT='\
	  LD_PRELOAD=$(abs_builddir)/tests/fault/.libs/libfaultshim.so; \
	  FAULT_NOTMPFILE=1; FAULT_NORENAME=1; FAULT_LOG=$(NOTMPFILE_LOG); \
	  export LD_PRELOAD FAULT_NOTMPFILE FAULT_NORENAME FAULT_LOG;'
	$(AM_V_at)grep -q 'renameat2 refused' $(NOTMPFILE_LOG) && \
	  grep -q tmpfile-refused $(NOTMPFILE_LOG) && \
	  echo "check-notmpfile: RENAME_NOREPLACE refused $$(grep -c 'renameat2 refused' $(NOTMPFILE_LOG)) times, O_TMPFILE $$(grep -c tmpfile-refused $(NOTMPFILE_LOG)) times"
CLEANFILES += $(NOTMPFILE_LOG)
