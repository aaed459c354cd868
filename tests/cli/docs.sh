#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The manual page and the bash completion know every option --help lists,
# the page is clean for mandoc, and the completion completes.
. "$(dirname "$0")/lib.sh"

MAN=$TOP_SRCDIR/tools/pidlock.1
COMP=$TOP_SRCDIR/tools/completion/pidlock

"$PIDLOCK" --help | grep -o -- '--[a-z][a-z-]*' | sort -u > "$T/opts"
[ "$(wc -l < "$T/opts")" -ge 20 ] || fail "--help lists too few options: $(cat "$T/opts")"
while read -r opt; do
	# mdoc writes a long option as \-\-name, or Fl \-name.
	esc=$(printf '%s' "${opt#--}" | sed 's/-/\\\\-/g')
	grep -q -- "Fl \\\\-$esc\\b" "$MAN" || grep -q -- "Fl [a-zA-Z] , \\\\-$esc\\b" "$MAN" ||
		fail "the manual page lacks $opt"
	grep -qw -- "$opt" "$COMP" || fail "the completion lacks $opt"
done < "$T/opts"
pass "the manual page and the completion know every option of --help"
for sect in "EXIT STATUS" EXAMPLES "JSON OUTPUT" STATES; do
	grep -q "^\.Sh $sect\$" "$MAN" || fail "the manual page lacks $sect"
done
pass "the manual page has EXIT STATUS, EXAMPLES, JSON OUTPUT and STATES"
for code in 64 66 69 70 71 73 74 77; do
	grep -q "^\.It $code\$" "$MAN" || fail "EXIT STATUS lacks $code"
done
pass "EXIT STATUS lists every <sysexits.h> code the tool uses"

if command -v mandoc >/dev/null; then
	mandoc -Tlint "$MAN" 2>&1 | grep -v 'outdated mandoc.db' > "$T/lint"
	[ ! -s "$T/lint" ] || fail "mandoc -Tlint: $(cat "$T/lint")"
	pass "mandoc -Tlint is clean"
else
	fail "mandoc is not installed"
fi

# complete WORDS...: run the completion on a command line whose last
# word is being completed; COMPREPLY printed one per line.
complete_line() {
	bash -c '
		. "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		_pidlock
		printf "%s\n" "${COMPREPLY[@]}"' sh "$COMP" "$@"
}
cd "$T" || exit 99
mkdir adir
touch afile
complete_line pidlock --st > c
grep -qx -- --status c && grep -qx -- --stale c && [ "$(wc -l < c)" = 2 ] ||
	fail "pidlock --st<TAB>: $(cat c)"
pass "completion: options"
complete_line pidlock --list a > c
[ "$(cat c)" = adir ] || fail "pidlock --list a<TAB>: $(cat c)"
pass "completion: --list takes a directory"
complete_line pidlock -w 5 a > c
grep -qx afile c && grep -qx adir c || fail "pidlock -w 5 a<TAB>: $(cat c)"
pass "completion: LOCKFILE after an option with a value"
complete_line pidlock x.lock -- > c
grep -qx -- -- c || fail "pidlock x.lock -<TAB>: $(cat c)"
complete_line pidlock x.lock - > c
grep -qx -- -c c || fail "pidlock x.lock -<TAB>: $(cat c)"
complete_line pidlock x.lock flo > c
grep -qx flock c || fail "pidlock x.lock flo<TAB>: $(cat c)"
pass "completion: a command after LOCKFILE"
complete_line pidlock x.lock -c fl > c
grep -qx flock c || fail "pidlock x.lock -c fl<TAB>: $(cat c)"
pass "completion: a command after -c"
done_testing
