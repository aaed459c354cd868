#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make check: every entry of the mutation table still applies to the
# sources, each substitution exactly once.  One that matches nothing (the
# code moved on) or twice would make check-mutations prove nothing, or
# the wrong thing; this finds it at once, not at the next mutation run.
srcdir=${srcdir:-.}
exec perl "$srcdir/tests/mutations/apply.pl" \
	"$srcdir/tests/mutations/mutations.txt" verify "$srcdir"
