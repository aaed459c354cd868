# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by the tests of doc/examples/daemon.init (doc-examples.sh,
# restart-loop.sh), which run under tests/daemon/reaper: what they need
# before they start, and a scratch directory with the daemon's pid file
# that goes at the exit with the daemons left in it.

# Exit 99 (a hard error: this suite's tests must run) unless each tool
# is on PATH and the LSB init functions the script sources are there.
init_test_needs() {	# who hint tool...: hint, e.g. " (dpkg)", or ""
	who=$1 hint=$2
	shift 2
	for tool; do
		command -v "$tool" >/dev/null 2>&1 ||
			{ echo "$who: $tool is required$hint" >&2; exit 99; }
	done
	[ -r /lib/lsb/init-functions ] ||
		{ echo "$who: /lib/lsb/init-functions is required" >&2; exit 99; }
}

# tmp, pidfile in it, and innocent (the pid of a bystander the caller
# may start, killed at the exit too).
init_test_tmp() {	# tag
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-$1.XXXXXX")
	pidfile=$tmp/exampled.pid
	innocent=
	trap init_test_cleanup EXIT
}

init_test_cleanup() {
	left=$(head -n1 "$pidfile" 2>/dev/null || true)
	[ -z "$left" ] || kill -9 "$left" 2>/dev/null || true
	[ -z "$innocent" ] || kill -9 "$innocent" 2>/dev/null || true
	rm -rf "$tmp"
}
