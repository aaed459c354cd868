#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The README and the documents of doc/ (run by make check):
#  a. the README stays a five-minute read: under 1,500 words, with the
#     quick start's two commands, the tarball install and the comparison
#     table; the rest is linked, and every link resolves;
#  b. version strings agree with AC_INIT in configure.ac: a tarball
#     name (libpidlock-X.Y.Z) is the current version, and no "since
#     X.Y.Z" names a release newer than it;
#  c. every document of doc/ is shipped (EXTRA_DIST) and packaged
#     (debian/libpidlock-dev.docs);
#  d. every manual page lives under man/;
#  e. doc/protocol.md's table of rules names only what exists: each
#     row's section, its tests (resolved as the expect: lines of
#     tests/mutations/mutations.txt are, by apply.pl) and its mutation IDs.
set -u
top=${srcdir:-.}
fail=0
n=0

err() {
	echo "not ok - $*" >&2
	fail=$((fail + 1))
}
ok() {
	n=$((n + 1))
	echo "ok $n - $*"
}

readme=$top/README.md
[ -f "$readme" ] || { echo "docs: no README.md in $top" >&2; exit 99; }
version=$(sed -n 's/^AC_INIT(\[[^]]*\], *\[\([^]]*\)\].*/\1/p' "$top/configure.ac")
[ -n "$version" ] || { echo "docs: no version in AC_INIT of $top/configure.ac" >&2; exit 99; }

# ---- a. the README ----------------------------------------------------------
words=$(wc -w < "$readme")
[ "$words" -lt 1500 ] || err "README.md has $words words; keep it under 1500 (move the rest to doc/)"
for line in './bootstrap demo ' './bootstrap check ' './configure && make && make install' \
	'| | libpidlock | flock(1) |'; do
	grep -qF -- "$line" "$readme" || err "README.md lacks: $line"
done
[ $fail = 0 ] && ok "README.md: $words words, quick start, install and comparison table"

# Every relative link of the README and of doc/*.md names a file; so
# does every doc/NAME.md (or doc/examples/NAME) mentioned in their text
# and in the manual pages.
before=$fail
for f in "$top"/man/*.[1-8]; do
	for target in $(grep -o 'doc/[a-z-]*\.md\|doc/examples/[a-z_.-]*[a-z]' "$f" | sort -u); do
		[ -e "$top/$target" ] || err "$f names $target, which does not exist"
	done
done
for f in "$readme" "$top"/doc/*.md; do
	dir=$(dirname "$f")
	for target in $(grep -o '](\([^)#:]*\))' "$f" | sed 's/^](//; s/)$//'); do
		[ -e "$dir/$target" ] || err "$f links to $target, which does not exist"
	done
	for target in $(grep -o 'doc/[a-z-]*\.md' "$f" | sort -u); do
		[ -e "$top/$target" ] || err "$f names $target, which does not exist"
	done
done
[ $fail = "$before" ] && ok "every link and doc/ name of the README, doc/ and man/ resolves"

# ---- b. versions --------------------------------------------------------------
# A line that names Linux or the kernel gives the kernel's versions.
before=$fail
for f in "$readme" "$top"/doc/*.md; do
	for v in $(grep -oE 'libpidlock-[0-9]+\.[0-9]+\.[0-9]+' "$f" | sed 's/^libpidlock-//'); do
		[ "$v" = "$version" ] || err "$f: libpidlock-$v, but configure.ac says $version"
	done
	for v in $(grep -viE 'linux|kernel' "$f" |
		   grep -oiE 'since [0-9]+\.[0-9]+(\.[0-9]+)?' | sed 's/^[Ss]ince //'); do
		newest=$(printf '%s\n%s\n' "$v" "$version" | sort -V | tail -n 1)
		[ "$newest" = "$version" ] || err "$f: since $v, newer than configure.ac's $version"
	done
done
[ $fail = "$before" ] && ok "version strings agree with AC_INIT ($version)"

# ---- c. doc/ is shipped and packaged ----------------------------------------
before=$fail
for f in "$top"/doc/*.md; do
	name=doc/${f##*/}
	grep -qw -- "$name" "$top/doc/Makemodule.am" || err "$name is not in EXTRA_DIST (doc/Makemodule.am)"
	grep -qx -- "$name" "$top/debian/libpidlock-dev.docs" || err "$name is not in debian/libpidlock-dev.docs"
done
[ $fail = "$before" ] && ok "every document of doc/ is shipped and packaged"

# ---- d. manual pages ----------------------------------------------------------
# A manual page: a file named NAME.SECTION whose first line is roff.
# Directories named man (an install's man1/ is not) are where pages
# live; those of the build (_*, .*), debian/ and the older releases that
# make bench-compare unpacks (bench/ref/) are not searched.
before=$fail
for page in $(find "$top" -mindepth 1 \( -name man -o -name debian -o -name '_*' \
	-o -name '.*' -o -path "$top/bench/ref" \) -prune -o -type f -name '*.[1-8]' \
	-print 2>/dev/null); do
	head -n 1 "$page" | grep -qE '^\.(\\"|TH|Dd|so |SH)' &&
		err "a manual page outside man/: $page"
done
[ -f "$top/man/pidlock.1" ] || err "man/pidlock.1 is missing"
[ $fail = "$before" ] && ok "every manual page is under man/"

# ---- e. the table of rules of doc/protocol.md -------------------------------
# A row: | rule | section | `test`, ... | ID, ... (or -) |; the last three
# cells are read from the right, so a rule may hold any text.
before=$fail
proto=$top/doc/protocol.md
table=$top/tests/mutations/mutations.txt
rows=$(awk '/^## /{in_t = ($0 == "## The rules at a glance"); next}
	in_t && /^\| / && !/^\| Rule \|/ && !/^\|---/' "$proto")
[ -n "$rows" ] || err "doc/protocol.md has no table under '## The rules at a glance'"
tmp=$(mktemp) || exit 99
printf '%s\n' "$rows" > "$tmp.rows"
trap 'rm -f "$tmp" "$tmp.rows"' EXIT
nrows=0
names=
while IFS= read -r row; do
	[ -n "$row" ] || continue
	nrows=$((nrows + 1))
	sec=$(echo "$row" | awk -F'|' '{gsub(/ /, "", $(NF-3)); print $(NF-3)}')
	tests=$(echo "$row" | awk -F'|' '{print $(NF-2)}' | grep -o '`[^`]*`' | tr -d '`')
	ids=$(echo "$row" | awk -F'|' '{print $(NF-1)}' | tr ',' ' ')
	grep -q "^##* $sec\. " "$proto" ||
		err "doc/protocol.md: the table names section '$sec', which has no heading: $row"
	[ -n "$tests" ] || err "doc/protocol.md: a rule without a test: $row"
	names="$names $tests"
	for id in $ids; do
		[ "$id" = - ] && continue
		grep -qF -- "[$id] " "$table" ||
			err "doc/protocol.md: the table names mutation $id, which is not in mutations.txt"
	done
done < "$tmp.rows"
if command -v perl >/dev/null 2>&1; then
	printf '[X] lib/io.c\nwhat: the table of doc/protocol.md\nexpect: %s\n' \
		"$(echo $names)" > "$tmp"
	for t in $(perl "$top/tests/mutations/apply.pl" "$tmp" tests X "$top"); do
		case $t in '?'*) err "doc/protocol.md: the table names test ${t#?}, which is not in tests/" ;; esac
	done
fi
[ $fail = "$before" ] && ok "doc/protocol.md's table: $nrows rules, each test, mutation and section exists"

echo "1..$n"
[ $fail = 0 ]
