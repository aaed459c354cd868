#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make check-token-names: `pidlock --token` on N distinct lock names in
# one directory (a lock per job, user or file), then what the directory
# keeps.  Each run must succeed and the directory must keep a bounded
# set of attributes, whatever N.  Not part of make check (100,000 runs
# take minutes).
#
#   tests/torture/token-names.sh PIDLOCK DIR [N]
#
# Prints the runs that failed, the attributes kept (count and bytes) and
# the time; exits 1 on any failed run or more than 16 attributes.
set -u
pidlock=$1 dir=$2 n=${3:-100000}
python=${PYTHON:-python3}
[ -d "$dir" ] || { echo "token-names: $dir is not a directory" >&2; exit 99; }
sub=$(mktemp -d "$dir/token-names.XXXXXX") || exit 99
trap 'rm -rf "$sub"' EXIT
t0=$(date +%s)
i=0 failed=0 first=
while [ "$i" -lt "$n" ]; do
	i=$((i + 1))
	if ! "$pidlock" --token "$sub/job-$i.lock" true 2>"$sub.err"; then
		failed=$((failed + 1))
		[ -n "$first" ] || first="name $i: $(cat "$sub.err")"
	fi
done
rm -f "$sub.err"
t1=$(date +%s)
set -- $("$python" -c 'import os, sys
a = [x for x in os.listxattr(sys.argv[1]) if x.startswith("user.pidlock.token")]
print(len(a), sum(len(x) + len(os.getxattr(sys.argv[1], x)) for x in a))' "$sub")
echo "token-names: $dir ($(stat -f -c %T "$dir")): $n names, $failed failed, $1 attributes ($2 bytes of names and values) kept, $((t1 - t0)) s"
[ -z "$first" ] || echo "token-names: first failure: $first"
[ "$failed" = 0 ] && [ "$1" -le 16 ]
