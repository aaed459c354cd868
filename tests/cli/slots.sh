#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# --slots N: a semaphore of N lock files LOCKFILE.0 to LOCKFILE.N-1; the
# command learns its slot in PIDLOCK_SLOT; --status --slots lists them.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

# Two holders of two slots: each command sees its own slot number.
start_bg --slots 2 sem sh -c 'echo "$PIDLOCK_SLOT" > a.slot; exec sleep 30'
a=$LAST
wait_until test -s a.slot
start_bg --slots 2 sem sh -c 'echo "$PIDLOCK_SLOT" > b.slot; exec sleep 30'
b=$LAST
wait_until test -s b.slot
sa=$(cat a.slot) sb=$(cat b.slot)
case "$sa$sb" in 01 | 10) ;; *) fail "slots given: '$sa' and '$sb'" ;; esac
pass "two holders get slots 0 and 1, in PIDLOCK_SLOT"
held "sem.$sa" && held "sem.$sb" || fail "the slot files are not held"
pass "each slot is a lock file of its own, held"
[ "$(field "sem.$sa" pid)" = "$a" ] || fail "sem.$sa names pid $(field "sem.$sa" pid), not $a"
pass "a slot's record names its holder"

# The third is busy: -n, -w, -E and the message.
expect 1 "all slots busy: a try exits 1" -- "$PIDLOCK" --slots 2 -n sem true
"$PIDLOCK" --slots 2 -n sem true 2> busy.out
grep -q "sem: all 2 slots are busy" busy.out || fail "busy message: $(cat busy.out)"
pass "the busy message says how many slots"
expect 7 "all slots busy: -E 7" -- "$PIDLOCK" --slots 2 -n -E 7 sem true
expect 1 "all slots busy: -w 0.3 times out" -- "$PIDLOCK" --slots 2 -w 0.3 sem true
expect 0 "all slots busy: -q exits 0" -- "$PIDLOCK" --slots 2 -q sem true
ls -A > files
[ "$(sort files | tr '\n' ' ')" = "a.slot b.slot busy.out files sem.0 sem.1 " ] ||
	fail "a busy try left files: $(tr '\n' ' ' < files)"
pass "busy tries make no file"

# --status with --slots: every slot, the count, and 1 while all are held.
expect 1 "--status --slots: all held exits 1" -- "$PIDLOCK" --status --slots 2 sem
"$PIDLOCK" --status --slots 3 sem > st.out
grep -q "^sem: semaphore, 2 of 3 slots held$" st.out || fail "count: $(cat st.out)"
grep -q "^sem.2: free$" st.out || fail "free slot: $(cat st.out)"
expect 0 "--status --slots 3: a slot free exits 0" -- "$PIDLOCK" --status --slots 3 sem
# Without --slots: the slot files found beside the path are listed.
"$PIDLOCK" --status sem > found.out
grep -q "^sem.0: held" found.out && grep -q "^sem.1: held" found.out ||
	fail "--status PATH does not list the slot files: $(cat found.out)"
pass "--status PATH lists the slot files it finds"
"$PIDLOCK" --status --json --slots 2 sem > st.json
[ "$(grep -o '"state": "held"' st.json | wc -l)" = 2 ] || fail "JSON: $(cat st.json)"
pass "--status --json --slots: one object per slot"

# A waiter gets the slot a SIGKILLed holder had, at once, and is told it.
start_bg --slots 2 -w 20 sem sh -c 'echo "$PIDLOCK_SLOT" > c.slot; exec sleep 30'
c=$LAST
sleep 0.3
[ ! -s c.slot ] || fail "a third holder got in"
bsleep=$(pgrep -P "$b")
kill -KILL "$b" $bsleep
wait_until test -s c.slot
[ "$(cat c.slot)" = "$sb" ] || fail "the waiter got slot $(cat c.slot), not the freed $sb"
pass "a SIGKILLed holder's slot goes to the waiter, in PIDLOCK_SLOT"

# --exec: the command is the holder, and knows its slot.
kill -TERM "$a" "$c"
wait "$a" "$c" 2>/dev/null
expect 0 "both slots free again" -- "$PIDLOCK" --status --slots 2 sem
out=$("$PIDLOCK" --slots 3 --exec sem sh -c 'echo "$PIDLOCK_SLOT"')
case "$out" in [012]) ;; *) fail "--exec: PIDLOCK_SLOT '$out'" ;; esac
pass "--exec --slots: the command gets PIDLOCK_SLOT"

# Bad input: a clear usage error, nothing made.
rm -f sem.* ./*.slot
expect 64 "--slots 0 is refused" -- "$PIDLOCK" --slots 0 sem true
expect 64 "--slots 257 is refused" -- "$PIDLOCK" --slots 257 sem true
expect 64 "--slots x is refused" -- "$PIDLOCK" --slots x sem true
expect 64 "--slots with --shared is refused" -- "$PIDLOCK" --slots 2 -s sem true
expect 64 "--slots with --remove is refused" -- "$PIDLOCK" --remove --slots 2 sem
ln -s elsewhere sem.0
ln -s elsewhere sem.1
expect 66 "a symlink at a slot's path is refused" -- "$PIDLOCK" --slots 2 -n sem true
[ ! -e sem.2 ] && [ -L sem.0 ] && [ -L sem.1 ] || fail "a refused try changed the files"
"$PIDLOCK" --slots 2 -n sem true 2> ln.out
grep -q "^pidlock: sem.0: .*symbolic link" ln.out ||
	fail "the symlink message: $(cat ln.out)"
pass "the refusal names the symlink, sem.0"

# The slot file at fault is named, not the semaphore: a user's script at
# sem.2, a directory at sem.1.
rm -f sem.*
printf '#!/bin/sh\necho hello\n' > sem.2
"$PIDLOCK" --slots 3 sem true 2> bad.out
rc=$?
[ $rc -eq 65 ] || fail "a script at sem.2: exit $rc: $(cat bad.out)"
grep -q "^pidlock: sem.2: not a lock file" bad.out ||
	fail "the message does not name sem.2: $(cat bad.out)"
grep -q "slot 2 of the semaphore 'sem'" bad.out ||
	fail "the message does not say which slot: $(cat bad.out)"
[ "$(cat sem.2)" = "$(printf '#!/bin/sh\necho hello')" ] ||
	fail "the script changed"
pass "a script at sem.2: exit 65, the message names sem.2, slot 2 of sem"
rm -f sem.*
mkdir sem.1
expect 66 "a directory at sem.1: 66" -- "$PIDLOCK" --slots 3 sem true 2> bad.out
grep -q "^pidlock: sem.1: Is a directory" bad.out ||
	fail "the message does not name sem.1: $(cat bad.out)"
pass "a directory at sem.1: the message names sem.1"
rmdir sem.1
done_testing
