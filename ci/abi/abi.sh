#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The ABI guard of the shared library, on libabigail (Debian abigail-tools).
#
#   abi.sh baseline LIBRARY HEADERS-DIR ABI-DIR   write ABI-DIR/libpidlock.abi
#                                                 and ABI-DIR/constants.txt
#   abi.sh check    ABI-DIR LIBRARY HEADERS-DIR   compare against them
#
# check fails on anything that breaks a program built against the
# baseline: a removed or re-versioned symbol, a changed function
# signature, a changed layout of a public type (struct pidlock_info and
# everything else reachable from an exported function), and a symbol
# added to a version node the baseline already has (a released node never
# changes; new functions go into a new node).  Added functions in a new
# node pass.
#
# Only types declared under HEADERS-DIR count: struct pidlock itself is
# opaque, so its private definition may change freely.
#
# The values of the PIDLOCK_* constants (flags, kinds, states, defaults,
# and the strings such as the temp-file prefix) are compiled into callers but invisible to abidiff, so they are kept in
# constants.txt and compared too: a changed or removed value fails, a new
# constant passes.
#
# (Needs a shell with 'local', as dash and bash are.)
#
# ABI-DIR/libpidlock.suppr, if present, is handed to abidiff: a reviewed
# exception (such as a reserved member put to use) goes there, with a
# comment saying why it is safe.
set -eu

me=abi.sh

die() {
	echo "$me: $*" >&2
	exit 1
}

need() {
	command -v "$1" >/dev/null 2>&1 ||
		die "$1 not found (Debian: apt-get install ${2:-$1})"
}

# abidw reads the types from DWARF; a stripped or -g-less build would give
# an ABI with no types, and a baseline or comparison without them is
# worthless.
dump() {
	local lib=$1 hdrs=$2 out=$3

	need abidw abigail-tools
	need readelf binutils
	[ -r "$lib" ] || die "no library at $lib (run make first)"
	[ -d "$hdrs" ] || die "no header directory $hdrs"
	readelf -S -W "$lib" | grep -q '\.debug_info' ||
		die "$lib has no debug information; build it with -g (configure's default CFLAGS have it)"
	abidw --headers-dir "$hdrs" --drop-private-types \
		--no-corpus-path --no-comp-dir-path --no-show-locs \
		--exported-interfaces-only \
		--out-file "$out" "$lib" ||
		die "abidw failed on $lib"
}

# "NAME VALUE" for every integer PIDLOCK_* constant of the public headers,
# as the compiler sees it.
constants() {
	local hdrs=$1 out=$2 cc=${CC:-cc} h

	need "$cc" gcc
	{
		echo '#include <stdio.h>'
		for h in "$hdrs"/*.h; do
			echo "#include \"${h##*/}\""
		done
		# A string constant prints as its text, anything else as an
		# integer: (x) + 0 turns a string literal into a char pointer.
		cat <<-'EOF'
		static void show_int(const char *name, long long v)
		{
			printf("%s %lld\n", name, v);
		}
		static void show_str(const char *name, const char *v)
		{
			printf("%s \"%s\"\n", name, v);
		}
		#define SHOW(x) _Generic((x) + 0, char *: show_str, \
			const char *: show_str, default: show_int)(#x, (x))
		int main(void)
		{
		EOF
		cat "$hdrs"/*.h |
			sed -n -e 's/^[[:space:]]*\(PIDLOCK_[A-Z0-9_]*\)[[:space:]]*=.*/\1/p' \
				-e 's/^#[[:space:]]*define[[:space:]]\{1,\}\(PIDLOCK_[A-Z0-9_]*\)[[:space:]]\{1,\}[^[:space:]].*/\1/p' |
			LC_ALL=C sort -u |
			sed 's/.*/\tSHOW(&);/'
		printf '\treturn 0;\n'
		echo '}'
	} >"$tmp/constants.c"
	"$cc" -std=gnu11 -I"$hdrs" -o "$tmp/constants" "$tmp/constants.c" ||
		die "cannot compile the constants of $hdrs"
	"$tmp/constants" >"$out"
	[ -s "$out" ] || die "no PIDLOCK_* constant found in $hdrs"
}

# Every constant of the baseline keeps its value.
check_constants() {
	local base=$1 cur=$2 name value now

	LC_ALL=C sort "$base" >"$tmp/c.base"
	LC_ALL=C sort "$cur" >"$tmp/c.cur"
	LC_ALL=C comm -23 "$tmp/c.base" "$tmp/c.cur" >"$tmp/c.lost"
	[ -s "$tmp/c.lost" ] || return 0
	echo "$me: public constants removed or changed (baseline value shown):" >&2
	while read -r name value; do
		now=$(awk -v n="$name" '$1 == n { sub(/^[^ ]* /, ""); print }' "$tmp/c.cur")
		echo "  $name: $value -> ${now:-removed}" >&2
	done <"$tmp/c.lost"
	echo "$me: callers have these values compiled in; a reviewed change that is" >&2
	echo "$me: safe (such as a new default) edits $base in the same commit" >&2
	return 1
}

# name@node of every defined exported symbol in an ABI dump.
symbols() {
	sed -n "s/.*<elf-symbol name='\([^']*\)' version='\([^']*\)'.*is-defined='yes'.*/\1@\2/p" "$1" |
		LC_ALL=C sort -u
}

# The baseline's nodes must export exactly what they exported before.
check_nodes() {
	local base=$1 cur=$2 bad=0 node

	symbols "$base" >"$tmp/base.syms"
	symbols "$cur" >"$tmp/cur.syms"
	[ -s "$tmp/base.syms" ] || die "$base lists no versioned symbols"
	for node in $(sed 's/.*@//' "$tmp/base.syms" | LC_ALL=C sort -u); do
		grep "@$node\$" "$tmp/base.syms" >"$tmp/node.base" || true
		grep "@$node\$" "$tmp/cur.syms" >"$tmp/node.cur" || true
		if ! cmp -s "$tmp/node.base" "$tmp/node.cur"; then
			echo "$me: version node $node changed (a released node never changes):" >&2
			diff "$tmp/node.base" "$tmp/node.cur" | sed -n 's/^[<>]/  &/p' >&2
			bad=1
		fi
	done
	return $bad
}

check() {
	local dir=$1 lib=$2 hdrs=$3 base=$1/libpidlock.abi bad=0 rc added nconst

	need abidiff abigail-tools
	[ -r "$base" ] || die "no baseline at $base (make abi-baseline makes one)"
	[ -r "$dir/constants.txt" ] || die "no $dir/constants.txt (make abi-baseline makes one)"
	dump "$lib" "$hdrs" "$tmp/current.abi"
	constants "$hdrs" "$tmp/constants.txt"
	set --
	if [ -r "$dir/libpidlock.suppr" ]; then
		set -- --suppressions "$dir/libpidlock.suppr"
	fi

	check_nodes "$base" "$tmp/current.abi" || bad=1
	check_constants "$dir/constants.txt" "$tmp/constants.txt" || bad=1

	# abidiff exit status is a bit mask: 1 error, 2 usage, 4 ABI change,
	# 8 incompatible change.  Added symbols are left out of the report
	# (they were vetted above), so any remaining change fails.
	set +e
	abidiff --no-added-syms "$@" "$base" "$tmp/current.abi" >"$tmp/report"
	rc=$?
	set -e
	if [ $((rc & 3)) -ne 0 ]; then
		cat "$tmp/report" >&2
		die "abidiff could not compare (status $rc)"
	fi
	if [ "$rc" -ne 0 ]; then
		cat "$tmp/report" >&2
		echo "$me: incompatible ABI change against $base (abidiff status $rc)" >&2
		bad=1
	fi
	if [ $bad -ne 0 ]; then
		echo "$me: new functions go into a new version node; an intended break" >&2
		echo "$me: needs a new soname and make abi-baseline (doc/maintainers.md, Stability)" >&2
		return 1
	fi
	abidiff "$@" "$base" "$tmp/current.abi" >"$tmp/full" || true
	added=$(grep -c "^ *\[A\]" "$tmp/full" || true)
	nconst=$(wc -l <"$tmp/constants.txt")
	echo "$me: $lib is compatible with $base ($added added function(s), $nconst constants checked)"
}

usage="usage: $me baseline LIBRARY HEADERS-DIR ABI-DIR | check ABI-DIR LIBRARY HEADERS-DIR"
[ $# -ge 1 ] || die "$usage"
cmd=$1
shift
tmp=$(mktemp -d "${TMPDIR:-/tmp}/abi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

case $cmd in
baseline)
	[ $# -eq 3 ] || die "$usage"
	dump "$1" "$2" "$tmp/libpidlock.abi"
	constants "$2" "$tmp/constants.txt"
	cp "$tmp/libpidlock.abi" "$tmp/constants.txt" "$3"/
	echo "$me: wrote $3/libpidlock.abi and $3/constants.txt from $1"
	;;
check)
	[ $# -eq 3 ] || die "$usage"
	check "$1" "$2" "$3"
	;;
*)
	die "unknown command $cmd"
	;;
esac
