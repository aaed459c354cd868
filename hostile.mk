# SPDX-License-Identifier: LGPL-2.1-or-later
# Hostile paths, files, users and content; fuzzing; static analysis.
# Pulled in by Makefile.am.

HOSTILE_UTIL = tests/hostile-util.c tests/hostile-util.h

if HAVE_CHECK
check_PROGRAMS += tests/test-hostile tests/test-content-hostile
TESTS += tests/test-hostile tests/test-hostile-nobody.sh \
	tests/test-content-hostile
endif
tests_test_hostile_SOURCES = tests/test-hostile.c $(HOSTILE_UTIL)
tests_test_hostile_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
# The convenience library: a real executable (no libtool wrapper), which
# test-hostile-nobody.sh can run as another user.
tests_test_hostile_LDADD = lib/libpidlock-core.la $(CHECK_LIBS)

# Reaches the parser and the size limits in lib/internal.h.
tests_test_content_hostile_SOURCES = tests/test-content-hostile.c \
	$(HOSTILE_UTIL)
tests_test_content_hostile_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_content_hostile_LDADD = lib/libpidlock-core.la $(CHECK_LIBS)

EXTRA_DIST += tests/test-hostile-nobody.sh
