#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# -s/--shared and -x/-e/--exclusive, as flock(1) has them: readers hold
# together, a writer keeps them out and is kept out, the last reader out
# removes the file; --status and --json report the mode and the holders.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

# status_says PATTERN: --status r.lock has a line that matches, now (a
# process substitution given to wait_until would be read only once).
status_says() {
	"$PIDLOCK" --status r.lock | grep -q "$1"
}

start_bg -s r.lock sleep 30
r1=$LAST
wait_until held r.lock
start_bg --shared r.lock sleep 30
r2=$LAST
wait_until status_says "^  mode:    shared, 2 holders"
pass "two -s holders hold at once"

expect 0 "-s -n runs beside the readers" -- "$PIDLOCK" -s -n r.lock true
expect 1 "-n (exclusive) is busy while readers hold" -- \
	"$PIDLOCK" -n r.lock true
expect 1 "-x -n is busy while readers hold" -- "$PIDLOCK" -x -n r.lock true
expect 1 "-s then -x: the last one counts, as in flock(1)" -- \
	"$PIDLOCK" -s -x -n r.lock true
expect 0 "-x then -s: the last one counts" -- "$PIDLOCK" -x -s -n r.lock true
"$PIDLOCK" -n r.lock true 2> err
grep -q "held by pid [0-9]* holding flock,fcntl shared with 1 other" err ||
	fail "conflict message: $(cat err)"
pass "the conflict message says the lock is shared"

"$PIDLOCK" --status r.lock > st
grep -q "^  mode:    shared, 2 holders: pids [0-9]* [0-9]*$" st ||
	fail "--status: $(cat st)"
pass "--status names the mode and every holder"
status_json r.lock
[ "$(jv j 0 mode)" = shared ] && [ "$(jv j 0 holders)" = 2 ] ||
	fail "--json: $(cat j)"
pids=$(jv j 0 holder_pids)
case "$pids" in
\[*,*\]) ;;
*) fail "--json holder_pids: $pids" ;;
esac
pass "--json names the mode and the holders"
[ "$(field r.lock shared)" = 1 ] || fail "record: $(cat r.lock)"
pass "the record says shared=1"

# The last one out removes the file; earlier ones leave it.
kill -TERM "$r1"
wait "$r1"
[ -e r.lock ] || fail "the first reader out removed the file"
pass "a reader that is not the last leaves the file"
kill -TERM "$r2"
wait "$r2"
[ ! -e r.lock ] || fail "the last reader out left the file"
pass "the last reader out removes the file"

# A writer keeps readers out.
start_bg -x w.lock sleep 30
w=$LAST
wait_until held w.lock
expect 1 "-s -n is busy while a writer holds" -- "$PIDLOCK" -s -n w.lock true
"$PIDLOCK" --status w.lock > st
grep -q "^  mode:    exclusive$" st || fail "--status: $(cat st)"
pass "--status says exclusive"
status_json w.lock
[ "$(jv j 0 mode)" = exclusive ] || fail "--json: $(cat j)"
pass "--json says exclusive"
kill -TERM "$w"
wait "$w"

# Holders whose takers exited: a shell opens the file on fd 9 and runs
# flock -s 9, whose own pid /proc/locks names; flock(1) exits, the shell
# keeps the open file description and the lock.  --status names the
# shells, which hold it, and not the dead takers.
: > f.lock
for n in 1 2; do
	bg_peer bash -c 'exec 9<>f.lock; flock -s 9 || exit 1
		echo $$ > sh$0.pid; exec sleep 300' "$n"
done
wait_until test -s sh1.pid
wait_until test -s sh2.pid
s1=$(cat sh1.pid) s2=$(cat sh2.pid)
takers=$(sed -n "s/^.* READ \([0-9]*\) .*:$(stat -c %i f.lock) .*/\1/p" /proc/locks)
[ -n "$takers" ] || fail "no flock rows for f.lock"
for t in $takers; do
	gone "$t" || fail "taker $t still runs"
done
"$PIDLOCK" --status f.lock > st
grep -q "^  mode:    shared, [0-9]* holders: pids .*$s1 (taken by pid [0-9]*, which exited)" st &&
	grep -q "$s2 (taken by pid [0-9]*, which exited)" st ||
	fail "--status does not name the shells $s1 $s2: $(cat st) $(grep ":$(stat -c %i f.lock) " /proc/locks)"
for t in $takers; do
	grep -q "pids.* $t " st && fail "--status names the dead taker $t: $(cat st)"
done
pass "--status names the shells that keep the lock, not flock(1)'s dead pids"
status_json f.lock
hp=$(jv j 0 holder_pids)
[ "$hp" = "[$s1, $s2]" ] || [ "$hp" = "[$s2, $s1]" ] ||
	fail "--json holder_pids $hp, shells $s1 $s2, takers $takers"
pass "--json holder_pids are the shells"

expect 64 "-s is for running a command" -- "$PIDLOCK" --status -s w.lock
done_testing
