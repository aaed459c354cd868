# SPDX-License-Identifier: LGPL-2.1-or-later
# make check-mutations: each rule of tests/mutations/mutations.txt removed
# from a scratch copy of lib/ in turn must turn the suite red, and the
# test named for it must be among the failures.  Not part of `make check`
# (10 to 15 minutes on 2 cores).  MUTATIONS="1 5a" runs some;
# MUTATION_TESTS=all runs the whole `make check` for each.
EXTRA_DIST += tests/mutations/run.sh tests/mutations/apply.pl \
	tests/mutations/mutations.txt

.PHONY: check-mutations
check-mutations:
	$(AM_V_at)$(SHELL) $(srcdir)/tests/mutations/run.sh
