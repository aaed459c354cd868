#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The manual page and the bash completion know every option --help lists,
# the page is clean for mandoc, and the completion completes.
. "$(dirname "$0")/lib.sh"

MAN=$TOP_SRCDIR/man/pidlock.1
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
for code in 64 65 66 69 70 71 73 74 77; do
	grep -q "^\.It $code\$" "$MAN" || fail "EXIT STATUS lacks $code"
done
pass "EXIT STATUS lists every <sysexits.h> code the tool uses"
for ref in "pidlock 3" "pidlock 5" "pidlock 7" "flock 1"; do
	sed -n '/^\.Sh SEE ALSO/,$p' "$MAN" | grep -q "^\.Xr $ref\b" ||
		fail "SEE ALSO lacks $ref"
done
pass "SEE ALSO names pidlock(3), pidlock(5) and pidlock(7)"
# The caveats that apply to the command are in its own page, which is
# the one the pidlock package carries.
for sect in "FLOCK(1) ON THE SAME PATH" "FLOCK(1) COMPATIBILITY" PERMISSIONS; do
	grep -q "^\.Sh $sect\$" "$MAN" || fail "the manual page lacks $sect"
done
# The busy message is a difference from flock(1), listed with the two
# ways to silence it.
sed -n '/^\.Sh FLOCK(1) COMPATIBILITY$/,/^\.Sh /p' "$MAN" > "$T/compat"
grep -q 'lock is busy' "$T/compat" && grep -q '2>/dev/null' "$T/compat" &&
	grep -q '^\.Fl q$' "$T/compat" ||
	fail "FLOCK(1) COMPATIBILITY does not list the busy message with -q and 2>/dev/null"
grep -q 'flock -s' "$MAN" && grep -q 'Fl \\-mode Li 0600' "$MAN" ||
	fail "PERMISSIONS does not say who can block a 0644 file and what to use"
pass "the page carries the flock(1) and permission caveats"

# lint PAGE: mandoc -Tlint's messages about the page, every level, but
# one: whether the manuals named by .Xr are installed here depends on
# the machine, not on the page.  Its advice about the host's mandoc.db
# goes to standard error and is dropped too; anything else there stays.
lint() {
	mandoc -Tlint "$1" > "$T/lint.out" 2> "$T/lint.err"
	grep -Ev ': STYLE: referenced manual not found: Xr [^ ]+ [1-9]( \([0-9]+ times\))?$' "$T/lint.out"
	grep -v 'outdated mandoc.db' "$T/lint.err"
}
if command -v mandoc >/dev/null; then
	lint "$MAN" > "$T/lint"
	[ ! -s "$T/lint" ] || fail "mandoc -Tlint: $(cat "$T/lint")"
	pass "mandoc -Tlint is clean"
	# The filter hides nothing else: a page with a missing reference
	# and trailing white space reports the white space only.
	printf '.Dd May 1, 2026\n.Dt X 1\n.Os\n.Sh NAME\n.Nm x\n.Nd y\n.Sh DESCRIPTION\nSee \n.Xr no-such-page-here 1 .\n' > "$T/bad.1"
	lint "$T/bad.1" > "$T/lint"
	grep -q 'STYLE: whitespace at end of input line' "$T/lint" &&
		! grep -q 'no-such-page-here' "$T/lint" ||
		fail "the lint filter: $(cat "$T/lint")"
	pass "the lint filter drops only missing references"
else
	fail "mandoc is not installed"
fi
if command -v groff >/dev/null; then
	groff -mdoc -ww -Tutf8 "$MAN" 2> "$T/groff" > "$T/page"
	[ ! -s "$T/groff" ] || fail "groff -ww: $(cat "$T/groff")"
	head -n 1 "$T/page" | grep -q '^PIDLOCK(1) *General Commands Manual *PIDLOCK(1)$' ||
		fail "groff header: $(head -n 1 "$T/page")"
	! grep -q 'BSD' "$T/page" || fail "groff says BSD: $(grep BSD "$T/page")"
	pass "groff renders the page with a plain header and footer"
else
	fail "groff is not installed"
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
grep -qx -- --status c && grep -qx -- --stale c && grep -qx -- --stop c && [ "$(wc -l < c)" = 3 ] ||
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
complete_line pidlock -n --fd 9 fl > c
grep -qx flock c || fail "pidlock -n --fd 9 fl<TAB>: $(cat c)"
complete_line pidlock --fd 9 -c fl > c
grep -qx flock c || fail "pidlock --fd 9 -c fl<TAB>: $(cat c)"
complete_line pidlock --fd 9 --n > c
grep -qx -- --nonblock c && grep -qx -- --nb c || fail "pidlock --fd 9 --n<TAB>: $(cat c)"
pass "completion: --fd FD, then options or a command"
done_testing
