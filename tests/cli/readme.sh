#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The README's sample session of pidlock(1) is what the tool prints: the
# same lines, once pids, times and the path are put aside.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99
README=$TOP_SRCDIR/README.md
[ -f "$README" ] || fail "no README.md at $README"

# norm: pids, dates, ages and the lock path become placeholders.
norm() {
	sed -E -e 's,/run/lock/backup\.lock|[^ :]*x\.lock,LOCK,g' \
		-e 's/[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} [-+][0-9]{4}/DATE/g' \
		-e 's/[0-9]+ (s|min|h|d)( [0-9]+ (s|min|h))? ago/AGE ago/g' \
		-e 's/pid [0-9]+/pid N/g' -e 's/pid: +[0-9]+/pid: N/'
}

# The session in the README, between "```sh" and "```", after the
# "From the shell" heading.
sed -n '/^## From the shell/,/^## /p' "$README" |
	sed -n '/^```sh$/,/^```$/p' | sed '1d;$d' > session
grep -q '^\$ pidlock --status ' session || fail "no --status in the README's session"

start_bg --tag "nightly backup" x.lock sleep 30
wait_until held x.lock
sleep 1.1	# an age of at least one second, as in the README
"$PIDLOCK" --status x.lock > status.out
"$PIDLOCK" -n x.lock true 2> busy.out

# The output lines of --status: from the command to the next "$ ".
sed -n '/^\$ pidlock --status /,/^\$ /p' session | sed '1d;$d' | norm > want
norm < status.out > got
diff want got > d || fail "--status differs from the README: $(cat d)"
pass "the README's --status output is the tool's"
grep '^pidlock: .*lock is busy' session | norm > want
norm < busy.out > got
diff want got > d || fail "the busy message differs from the README: $(cat d)"
pass "the README's busy message is the tool's"
done_testing
