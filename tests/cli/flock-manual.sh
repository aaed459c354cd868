#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The examples of flock(1)'s manual (util-linux), with the word `flock'
# changed to `pidlock' and the lock's path moved into the test's own
# directory (/var/lock/mylockfile -> $T/mylockfile), so that runs in
# parallel do not share it.  Each is run by two holders at once: one
# gets in, the other is refused or waits until the first is done.  The
# subshell form `( flock -n 9 || exit 1; ... ) 9>FILE' opens the file
# write-only, and truncates it; `9>>' appends.  pidlock(1), "FLOCK(1)
# COMPATIBILITY".
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

# pidlock on PATH as `pidlock', as a script that was migrated calls it.
mkdir bin && ln -s "$PIDLOCK" bin/pidlock || exit 99
PATH=$T/bin:$PATH
export PATH

# holder NAME OPEN: in the background, the manual's subshell form with
# redirection OPEN ('>' or '>>'), holding until told (touch NAME.go),
# however slow the machine; NAME.in once it holds, NAME.out as it leaves.
holder() {
	local name=$1 open=$2
	case $open in
	'>')  ( pidlock -n 9 || exit 1; touch "$name.in"; wait_for "$name.go"; touch "$name.out"; ) 9>"$T/mylockfile" & ;;
	'>>') ( pidlock -n 9 || exit 1; touch "$name.in"; wait_for "$name.go"; touch "$name.out"; ) 9>>"$T/mylockfile" & ;;
	esac
	track $!
	wait_until test -e "$name.in" || fail "$name never got the lock"
}

# --- ( pidlock -n 9 || exit 1; ... ) 9>/var/lock/mylockfile ---------------------
for open in '>' '>>'; do
	rm -f mylockfile ./*.in ./*.out ./*.ran ./*.after ./*.go
	holder a "$open"
	[ "$(field mylockfile pid)" -gt 0 ] || fail "9$open: no record: $(cat mylockfile)"
	if [ "$open" = '>' ]; then
		( pidlock -n 9 || exit 1; touch b.ran; ) 9>"$T/mylockfile"
	else
		( pidlock -n 9 || exit 1; touch b.ran; ) 9>>"$T/mylockfile"
	fi
	rc=$?
	[ $rc -eq 1 ] || fail "9$open: a second holder at once: exit $rc, expected 1"
	[ ! -e b.ran ] || fail "9$open: the second holder ran its commands"
	pass "9$open, -n: the second holder is refused while the first holds"
	expect 1 "9$open: flock(1) -n is kept out too" -- flock -n mylockfile true
	touch a.go
	wait_until test -e a.out || fail "9$open: the first holder never finished"
	wait_until flock -n mylockfile true || fail "9$open: the lock outlived its subshell"
	if [ "$open" = '>' ]; then
		( pidlock -n 9 || exit 1; touch b.ran; ) 9>"$T/mylockfile"
	else
		( pidlock -n 9 || exit 1; touch b.ran; ) 9>>"$T/mylockfile"
	fi
	[ $? -eq 0 ] && [ -e b.ran ] || fail "9$open: refused once the first was done"
	pass "9$open, -n: once the first holder's subshell is gone, the next gets in"
done

# --- the issue's form: ( pidlock -w 5 9 || exit 1; cmd ) 9>FILE ------------------
for open in '>' '>>'; do
	rm -f mylockfile ./*.in ./*.out ./*.ran ./*.after ./*.go
	holder a "$open"
	# -v: it says when it waits; then the holder is told to go.
	if [ "$open" = '>' ]; then
		( pidlock -v -w 5 9 || exit 1; [ -e a.out ] && touch b.after; ) 9>"$T/mylockfile" 2> b.err &
	else
		( pidlock -v -w 5 9 || exit 1; [ -e a.out ] && touch b.after; ) 9>>"$T/mylockfile" 2> b.err &
	fi
	waiter=$!
	track $waiter
	wait_until grep -q "waiting for" b.err
	touch a.go
	wait "$waiter"
	rc=$?
	[ $rc -eq 0 ] || fail "9$open, -w 5: exit $rc: $(cat b.err)"
	[ -e b.after ] || fail "9$open, -w 5: ran while the first still held"
	pass "9$open, -w 5: the second waits for the first, then runs"
	rm -f a.in a.out a.go
	holder a "$open"
	start=$(date +%s%N)
	if [ "$open" = '>' ]; then
		( pidlock -w 0.5 9 || exit 1; touch b.ran; ) 9>"$T/mylockfile"
	else
		( pidlock -w 0.5 9 || exit 1; touch b.ran; ) 9>>"$T/mylockfile"
	fi
	rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
	[ $rc -eq 1 ] && [ ! -e b.ran ] || fail "9$open, -w 0.5: exit $rc against a holder"
	[ $ms -ge 400 ] || fail "9$open, -w 0.5: gave up after $ms ms"
	pass "9$open, -w 0.5: times out (1) after $ms ms, commands not run"
	touch a.go
	wait_until test -e a.out || fail "the holder never finished"
done

# --- -x (-e) and -u on 9> -------------------------------------------------------
rm -f mylockfile ./*.in ./*.out ./*.ran ./*.after
( pidlock -x 9 || exit 1; touch x.in
  wait_until test -e x.go || exit 2
  pidlock -u 9 || exit 3; touch x.un; wait_for x.end; ) 9>"$T/mylockfile" &
xpid=$!
track $xpid
wait_until test -e x.in || fail "-x 9 never got the lock"
( pidlock -e -n 9 || exit 1; touch e.ran; ) 9>>"$T/mylockfile"
[ $? -eq 1 ] && [ ! -e e.ran ] || fail "-e -n 9>> got in beside -x 9>"
pass "-x 9 on 9>: held; -e -n on 9>> is refused"
touch x.go
wait_until test -e x.un || fail "-u 9 failed"
( pidlock -e -n 9 || exit 1; touch e.ran; ) 9>>"$T/mylockfile"
[ $? -eq 0 ] && [ -e e.ran ] || fail "-u 9 on 9> did not let go"
[ "$(field mylockfile pid)" -gt 0 ] || fail "no record after -e -n 9>>: $(cat mylockfile)"
pass "-u 9 on 9>: released while the subshell goes on; -e -n 9>> then gets in"
touch x.end
wait "$xpid"; [ $? -eq 0 ] || fail "the -x/-u subshell failed"

# --- shell> exec 4<>/var/lock/mylockfile; shell> pidlock -n 4 ----------------------
rm -f mylockfile
exec 4<>"$T/mylockfile"
expect 0 "exec 4<>FILE; pidlock -n 4" -- pidlock -n 4
bash -c "exec 4<>'$T/mylockfile'; pidlock -n 4; exit \$?"
rc=$?; [ $rc -eq 1 ] || fail "a second shell's pidlock -n 4: exit $rc, expected 1"
pass "exec 4<>FILE: a second shell's pidlock -n 4 is refused (1)"
exec 4<&-
expect 0 "once the first shell closes 4, the lock is free" -- pidlock -n mylockfile true

# --- shell> pidlock -x local-lock-file echo 'a b c' ----------------------------------
rm -f ./*.in ./*.out
pidlock -x local-lock-file sh -c "$SH_WAIT_FOR"'; touch l.in; wait_for l.go; touch l.out' &
track $!
wait_until test -e l.in || fail "the first -x never got the lock"
# -v: it says when it waits; then the holder is told to go.
( pidlock -v -x local-lock-file echo 'a b c'; [ -e l.out ] && echo after ) > l.res 2> l.err &
track $!
wait_until grep -q "waiting for" l.err
touch l.go
wait $!
out=$(cat l.res)
[ "$out" = "a b c
after" ] || fail "pidlock -x local-lock-file echo: $out; $(cat l.err)"
pass "pidlock -x local-lock-file echo 'a b c': waits for the holder, then echoes"

# --- [ "${FLOCKER}" != "$0" ] && exec env FLOCKER="$0" pidlock -en "$0" "$0" "$@" || :
# The script is its own lock file, which holds other data: pidlock
# refuses it with 65 and leaves it as it was (pidlock(1), FLOCK(1)
# COMPATIBILITY); with a lock file of its own ("$0.lock"), two at once.
cat > self.sh <<'EOF'
#!/bin/bash
[ "${FLOCKER}" != "$0" ] && exec env FLOCKER="$0" pidlock -en "$0" "$0" "$@" || :
touch "$0.ran.$1"
EOF
cat > own.sh <<'EOF'
#!/bin/bash
[ "${FLOCKER}" != "$0" ] && exec env FLOCKER="$0" pidlock -en "$0.lock" "$0" "$@" || :
touch "$0.in.$1"
i=0	# until told, however slow the machine; a minute at most
while [ ! -e "$0.go.$1" ] && [ $i -lt 1200 ]; do i=$((i + 1)); sleep 0.05; done
touch "$0.out.$1"
EOF
chmod +x self.sh own.sh
before=$(cat self.sh)
./self.sh 1 2> self.err
[ $? -eq 65 ] && [ ! -e self.sh.ran.1 ] || fail "FLOCKER on the script itself: not refused with 65"
[ "$(cat self.sh)" = "$before" ] || fail "the script was written"
grep -q "not a lock file" self.err || fail "no word of why: $(cat self.err)"
pass "FLOCKER, the script as its own lock: refused with 65, the script unchanged"
./own.sh 1 &
track $!
wait_until test -e own.sh.in.1 || fail "FLOCKER with own.sh.lock: the first never ran"
./own.sh 2
[ $? -eq 1 ] && [ ! -e own.sh.in.2 ] || fail "FLOCKER: a second run got in beside the first"
pass "FLOCKER with a lock file of its own: a second run at once exits 1"
touch own.sh.go.1 own.sh.go.3
wait_until test -e own.sh.out.1 || fail "the first run never finished"
wait_until pidlock -n own.sh.lock true || fail "the lock outlived the first run"
./own.sh 3 || fail "FLOCKER: refused once the first run was done"
pass "FLOCKER: the next run gets in once the first is done"

done_testing
