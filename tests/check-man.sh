#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The manual pages, checked against the library (run by make check):
#  a. every symbol in lib/libpidlock.sym has a page: man/SYMBOL.3 is a
#     page, or an alias of one (man/aliases; man -l reads every page of
#     the source tree), whose NAME and SYNOPSIS name the symbol;
#  b. the built library exports exactly those symbols, each carrying a
#     version node of the script, and nothing else;
#  c. mandoc -Tlint -Wwarning and groff -ww (what man -l runs) say
#     nothing about any page, and the pidlock pages that pages refer to
#     exist;
#  d. the example program of pidlock(3), built from the page, works.
# Exit 77 (skip) only when mandoc is missing and everything else passed.

set -u
srcdir=${srcdir:-.}
man=$srcdir/man
symfile=$srcdir/lib/libpidlock.sym
so=${PIDLOCK_SO:-lib/.libs/libpidlock.so}
example=${PIDLOCK_EXAMPLE:-man/pidlock-example}
fail=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

err() {
	echo "check-man: FAIL: $*" >&2
	fail=1
}

# Lines of one .SH section of a page.
section() {
	sed -n "/^\\.SH $2\$/,/^\\.SH /p" "$1" | sed '1d;$d'
}

# man/aliases: ALIAS TARGET.  The page an alias stands for, else empty.
alias_target() {
	sed -n "s/^${1##*/} \\([a-z_]*\\.3\\)\$/\\1/p" "$man/aliases"
}

# ---- a0. the aliases: links in the source tree, copies in a tarball ------
# A .so alias would not open under man -l outside the installed tree.
while read -r a t; do
	case $a in '#'*|'') continue ;; esac
	if [ ! -f "$man/$t" ] || [ -n "$(alias_target "$t")" ]; then
		err "man/aliases: $a: target $t is missing or an alias"
	elif [ -L "$man/$a" ]; then
		[ "$(readlink "$man/$a")" = "$t" ] ||
			err "man/$a links to $(readlink "$man/$a"), not $t"
	elif ! cmp -s "$man/$a" "$man/$t"; then
		err "man/$a is neither a link to $t nor a copy of it"
	fi
done < "$man/aliases"
for page in "$man"/*.[1-9]; do
	if [ -L "$page" ] || head -n 1 "$page" | grep -q '^\.so '; then
		[ -n "$(alias_target "$page")" ] ||
			err "$page is an alias that man/aliases does not list"
	fi
done
if command -v man > /dev/null 2>&1; then
	for page in "$man"/*.[1-9]; do
		out=$(cd "$man/.." && MANWIDTH=80 man -l "man/${page##*/}" 2>&1 >/dev/null)
		[ -z "$out" ] || err "man -l man/${page##*/}: $out"
	done
else
	echo "check-man: man(1) not found, man -l of the source tree skipped"
fi

# ---- a. a page for every symbol ----------------------------------------
symbols=$(sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\);.*/\1/p' "$symfile")
nodes=$(sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_.]*\)[[:space:]]*{.*/\1/p' "$symfile")
[ -n "$symbols" ] || err "no symbols found in $symfile"
[ -n "$nodes" ] || err "no version node found in $symfile"

for s in $symbols; do
	# pidlock(3) indexes every exported function and its page.
	grep -q "[ \"]$s\"\{0,1\} (3)" "$man/pidlock.3" ||
		err "$s is missing from the index in pidlock(3)"
	page=$man/$s.3
	if [ ! -f "$page" ]; then
		err "$s has no manual page ($page)"
		continue
	fi
	target=$(alias_target "$page")
	[ -z "$target" ] || page=$man/$target
	section "$page" NAME | grep -qw -- "$s" ||
		err "$page: NAME does not list $s"
	section "$page" SYNOPSIS | grep -q -- "[ *]$s(" ||
		err "$page: SYNOPSIS has no prototype of $s"
done

# ---- b. exported symbols -----------------------------------------------
if [ -f "$so" ]; then
	nm -D --defined-only "$so" > "$tmp/nm" || err "nm -D $so failed"
	[ -s "$tmp/nm" ] || err "nm -D $so shows no symbols"
	while read -r f1 f2 f3; do
		name=${f3:-$f2}
		type=${f3:+$f2}
		[ -n "$type" ] || type=$f1
		if [ "$type" = A ] && echo "$nodes" | grep -qxF -- "$name"; then
			continue
		fi
		case $name in
		*@*) base=${name%%@*}; ver=${name##*@} ;;
		*) err "$so exports $name without a version"; continue ;;
		esac
		case $base in
		pidlock_*) ;;
		*) err "$so exports $name, which is not pidlock_*" ;;
		esac
		echo "$nodes" | grep -qxF -- "$ver" ||
			err "$so: $name has a version not in $symfile"
		echo "$symbols" | grep -qxF -- "$base" ||
			err "$so exports $base, which $symfile does not list"
		echo "$base" >> "$tmp/exported"
	done < "$tmp/nm"
	for s in $symbols; do
		grep -qxF -- "$s" "$tmp/exported" 2>/dev/null ||
			err "$s is in $symfile but $so does not export it"
	done
elif [ -x ./libtool ] && ./libtool --config | grep -qx 'build_libtool_libs=no'; then
	echo "check-man: shared library not built, export check skipped"
else
	err "$so not found: build the library first"
fi

# ---- d. the example of pidlock(3) ----------------------------------------
if [ -x "$example" ]; then
	lockf=$tmp/example.lock
	"$example" "$lockf" > "$tmp/ex1" 2>&1 ||
		err "example failed: $(cat "$tmp/ex1")"
	grep -q "held by pid" "$tmp/ex1" || err "example did not take the lock"
	[ ! -e "$lockf" ] || err "example left $lockf behind"
	# Two at once: the second waits for the first, then takes the lock.
	: > "$tmp/ex2"
	"$example" "$lockf" > "$tmp/ex2" 2>&1 &
	first=$!
	n=0
	while ! grep -q "held by pid" "$tmp/ex2" && [ $n -lt 100 ] &&
	      kill -0 $first 2>/dev/null; do
		sleep 0.05
		n=$((n + 1))
	done
	"$example" "$lockf" > "$tmp/ex3" 2>&1 ||
		err "waiting example failed: $(cat "$tmp/ex3")"
	wait $first || err "first example failed: $(cat "$tmp/ex2")"
	grep -q "held by pid" "$tmp/ex3" ||
		err "waiting example did not take the lock"
	[ ! -e "$lockf" ] || err "examples left $lockf behind"
else
	err "example program $example not built"
fi

# ---- c. mandoc lint and cross references ---------------------------------
stage=$tmp/stage
for page in "$man"/*.[1-9]; do
	[ -f "$page" ] && [ -z "$(alias_target "$page")" ] || continue
	sec=${page##*.}
	mkdir -p "$stage/man$sec"
	cp "$page" "$stage/man$sec/"
done
[ -d "$stage/man3" ] || err "no manual pages in $man"

for page in "$stage"/man*/*; do
	[ -f "$page" ] || continue
	name=${page##*/}
	for ref in $(grep -o 'pidlock[a-z_]*"\{0,1\} ([357])' "$page" |
		     tr -d '"() ' | sed 's/\([0-9]\)$/.\1/'); do
		[ -f "$stage/man${ref##*.}/$ref" ] || [ -n "$(alias_target "$ref")" ] ||
			err "$name refers to $ref, which does not exist"
	done
done

if ! command -v "${MANDOC:-mandoc}" > /dev/null 2>&1; then
	echo "check-man: mandoc not found, lint skipped"
	[ $fail -eq 0 ] && exit 77
	exit 1
fi
cd "$stage" || exit 99
for page in man*/*; do
	out=$("${MANDOC:-mandoc}" -Tlint -Wwarning "$page" 2>&1)
	rc=$?
	if [ -n "$out" ] || [ $rc -ne 0 ]; then
		err "mandoc -Tlint $page (exit $rc):"
		printf '%s\n' "$out" >&2
	fi
done

# man -l renders with groff: it must not warn either (at its default width).
if command -v groff > /dev/null 2>&1; then
	for page in man*/*; do
		out=$(groff -t -man -ww -z -Tutf8 "$page" 2>&1)
		[ -z "$out" ] || err "groff -ww $page: $out"
	done
else
	echo "check-man: groff not found, man -l check skipped"
fi

exit $fail
