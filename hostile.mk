# SPDX-License-Identifier: LGPL-2.1-or-later
# Hostile paths, files, users and content; fuzzing; static analysis.
# Pulled in by Makefile.am.

if HAVE_CHECK
check_PROGRAMS += tests/test-hostile tests/test-content-hostile
TESTS += tests/test-hostile tests/test-hostile-nobody.sh \
	tests/test-content-hostile
endif
tests_test_hostile_SOURCES = tests/test-hostile.c $(TEST_UTIL)
tests_test_hostile_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
# The convenience library: a real executable (no libtool wrapper), which
# test-hostile-nobody.sh can run as another user.
tests_test_hostile_LDADD = lib/libpidlock-core.la $(CHECK_LIBS)

# Reaches the parser and the size limits in lib/internal.h.
tests_test_content_hostile_SOURCES = tests/test-content-hostile.c \
	$(TEST_UTIL)
tests_test_content_hostile_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_content_hostile_LDADD = lib/libpidlock-core.la $(CHECK_LIBS)

EXTRA_DIST += tests/test-hostile-nobody.sh doc/security.md

# --- fuzzing ---------------------------------------------------------------
# libFuzzer targets, built with clang apart from the libtool build (they
# need -fsanitize=fuzzer on every object).  `make fuzz` runs each for
# FUZZ_SECONDS from the committed seeds; new inputs go to
# tests/fuzz/found-*, never into the seed corpus; crashes to
# tests/fuzz/crash-*.  Shorter runs: make fuzz FUZZ_SECONDS=10.
FUZZ_CC = clang-14
FUZZ_SECONDS = 60
FUZZ_MAX_LEN = 4200
FUZZ_CFLAGS = -g -O1 -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-I$(top_builddir) -I$(top_srcdir)/include -I$(top_srcdir)/lib
# The library's sources, from its own list (plain make: no $(filter)).
FUZZ_LIB = `for f in $(lib_libpidlock_core_la_SOURCES); do \
	case $$f in *.c) echo $(top_srcdir)/$$f;; esac; done`
FUZZ_TARGETS = tests/fuzz/fuzz-content tests/fuzz/fuzz-takeover
FUZZ_RUN = -max_len=$(FUZZ_MAX_LEN) -print_final_stats=1 \
	-artifact_prefix=tests/fuzz/ \
	-dict=$(top_srcdir)/tests/fuzz/content.dict

tests/fuzz/fuzz-content: tests/fuzz/fuzz-content.c \
		$(lib_libpidlock_core_la_SOURCES) include/pidlock.h
	$(AM_V_at)$(MKDIR_P) tests/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(top_srcdir)/tests/fuzz/fuzz-content.c $(FUZZ_LIB)

tests/fuzz/fuzz-takeover: tests/fuzz/fuzz-takeover.c \
		$(lib_libpidlock_core_la_SOURCES) include/pidlock.h
	$(AM_V_at)$(MKDIR_P) tests/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(top_srcdir)/tests/fuzz/fuzz-takeover.c $(FUZZ_LIB)

.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_TARGETS)

fuzz: $(FUZZ_TARGETS)
	$(AM_V_at)$(MKDIR_P) tests/fuzz/found-content tests/fuzz/found-takeover
	tests/fuzz/fuzz-content $(FUZZ_RUN) -max_total_time=$(FUZZ_SECONDS) \
		tests/fuzz/found-content $(top_srcdir)/tests/fuzz/corpus/content
	tests/fuzz/fuzz-takeover $(FUZZ_RUN) -max_total_time=$(FUZZ_SECONDS) \
		tests/fuzz/found-takeover $(top_srcdir)/tests/fuzz/corpus/takeover

# Branch coverage of the library by the fuzzers' corpora (seeds plus
# what `make fuzz` found): each input run once by a profiling build.
LLVM_PROFDATA = llvm-profdata-14
LLVM_COV = llvm-cov-14
FUZZ_COV_CFLAGS = -g -O0 -fsanitize=fuzzer -fprofile-instr-generate \
	-fcoverage-mapping -I$(top_builddir) -I$(top_srcdir)/include \
	-I$(top_srcdir)/lib

.PHONY: fuzz-coverage
fuzz-coverage: tests/fuzz/fuzz-content.c tests/fuzz/fuzz-takeover.c \
		$(lib_libpidlock_core_la_SOURCES)
	$(AM_V_at)$(MKDIR_P) tests/fuzz/coverage tests/fuzz/found-content \
		tests/fuzz/found-takeover
	$(AM_V_at)for t in content takeover; do \
		$(FUZZ_CC) $(FUZZ_COV_CFLAGS) -o tests/fuzz/coverage/fuzz-$$t \
			$(top_srcdir)/tests/fuzz/fuzz-$$t.c $(FUZZ_LIB) || exit 1; \
		LLVM_PROFILE_FILE=tests/fuzz/coverage/$$t.profraw \
			tests/fuzz/coverage/fuzz-$$t -runs=0 -max_len=$(FUZZ_MAX_LEN) \
			tests/fuzz/found-$$t $(top_srcdir)/tests/fuzz/corpus/$$t \
			>tests/fuzz/coverage/$$t.log 2>&1 || exit 1; \
		$(LLVM_PROFDATA) merge -o tests/fuzz/coverage/$$t.profdata \
			tests/fuzz/coverage/$$t.profraw || exit 1; \
		echo "== fuzz-$$t: library coverage"; \
		$(LLVM_COV) report -show-branch-summary \
			-instr-profile=tests/fuzz/coverage/$$t.profdata \
			tests/fuzz/coverage/fuzz-$$t $(FUZZ_LIB) || exit 1; \
	done

CLEANFILES += $(FUZZ_TARGETS)
clean-local: clean-hostile
.PHONY: clean-hostile
clean-hostile:
	-rm -rf tests/fuzz/found-content tests/fuzz/found-takeover tests/fuzz/coverage
	-rm -f tests/fuzz/crash-* tests/fuzz/leak-* tests/fuzz/timeout-* \
		tests/fuzz/oom-* tests/fuzz/slow-unit-*

EXTRA_DIST += tests/fuzz/fuzz-content.c tests/fuzz/fuzz-takeover.c \
	tests/fuzz/content.dict tests/fuzz/corpus

# --- static analysis -------------------------------------------------------
# `make lint`: cppcheck and clang-tidy over the library and these tests,
# configured by .cppcheck-suppressions and .clang-tidy; any finding fails.
# Other C files join through LINT_EXTRA (e.g. LINT_EXTRA = tools/pidlock.c
# in their own fragment).
CPPCHECK = cppcheck
CLANG_TIDY = clang-tidy-14
LINT_EXTRA =
LINT_FILES = $(FUZZ_LIB) \
	$(top_srcdir)/tests/testutil-fs.c \
	$(top_srcdir)/tests/test-hostile.c \
	$(top_srcdir)/tests/test-content-hostile.c \
	$(top_srcdir)/tests/fuzz/fuzz-content.c \
	$(top_srcdir)/tests/fuzz/fuzz-takeover.c \
	$(LINT_EXTRA)
LINT_CPPFLAGS = $(DEFS) $(DEFAULT_INCLUDES) $(AM_CPPFLAGS) $(CPPFLAGS) \
	$(CHECK_CFLAGS)

.PHONY: lint lint-cppcheck lint-clang-tidy
lint: lint-cppcheck lint-clang-tidy

lint-cppcheck:
	$(CPPCHECK) --enable=warning,style,performance,portability,information \
		--library=gnu --std=c11 --inline-suppr --error-exitcode=1 --quiet \
		--suppressions-list=$(top_srcdir)/.cppcheck-suppressions \
		-I$(top_builddir) -I$(top_srcdir)/include -I$(top_srcdir)/lib \
		$(LINT_FILES)

lint-clang-tidy:
	$(CLANG_TIDY) --quiet --config-file=$(top_srcdir)/.clang-tidy \
		$(LINT_FILES) -- -std=gnu11 $(LINT_CPPFLAGS)

EXTRA_DIST += .clang-tidy .cppcheck-suppressions
