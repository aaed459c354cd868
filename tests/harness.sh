# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by the root harnesses that mount file systems of their own
# (tests/fs/run.sh, tests/distributed/run.sh, tests/test-lease-bindfs.sh):
# what each of them needs the same way.  They set top (the build
# directory) and, for the mix, PIDLOCK, before they call these.

# The build's library for programs run from .libs without their libtool
# wrapper (the harnesses run them hundreds of times).
use_built_lib() {
	LD_LIBRARY_PATH="$top/lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	export LD_LIBRARY_PATH
}

# finish(), the caller's clean-up, runs at the exit, and a signal ends
# the script with the shell's status for it, so that finish runs then
# too and no mount outlives the run.
trap_finish() {
	trap finish EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
}

# The end of a finish(): the logs copied to keep (when it is given and
# not empty), the work directory removed, and the exit with the
# script's status.
finish_work() {	# rc [keep logs who]
	if [ -n "${2:-}" ]; then
		mkdir -p "$2" && cp -r "$3" "$2/" ||
			echo "$4: could not keep the logs" >&2
	fi
	rm -rf "$WORK"
	exit "$1"
}

# One participant of a pidlock(1) mix: take the lock, and inside it
# claim a marker with mkdir (atomic, on a scratch file system, not the
# one under test), for hold seconds.  A claim that finds the marker
# there means two holders at once.  Until stop exists; then
# "turns doubles errors" in out, the tries' stderr in out.err.
mix_worker() {	# lock marker stop out hold [pidlock option...]
	lock=$1 marker=$2 stop=$3 out=$4 hold=$5
	shift 5
	turns=0 doubles=0 errors=0
	while [ ! -e "$stop" ]; do
		"$PIDLOCK" -w 20 "$@" "$lock" \
			sh -c 'mkdir "$1" 2>/dev/null || exit 99
			       sleep "$2"
			       rmdir "$1" || exit 99' sh "$marker" "$hold" \
			2>>"$out.err"
		case $? in
		0)	turns=$((turns + 1)) ;;
		99)	doubles=$((doubles + 1)) ;;
		*)	errors=$((errors + 1)) ;;
		esac
	done
	echo "$turns $doubles $errors" >"$out"
}

# The mix's sums over the workers' out files (their .err files passed
# over): T turns, D double holds, E errors, a worker that wrote no
# figures counted as an error.
mix_tally() {	# out...
	T=0 D=0 E=0
	for f; do
		case $f in *.err) continue ;; esac
		read -r t d e <"$f" || { E=$((E + 1)); continue; }
		T=$((T + t)) D=$((D + d)) E=$((E + e))
	done
}

# The mix's commonest errors, numbers folded, most frequent first.
mix_errors() {	# err-file...
	cat "$@" 2>/dev/null | sed 's/[0-9][0-9]*/N/g' | sort | uniq -c |
		sort -rn | head -5
}
