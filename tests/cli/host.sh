#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The record names its host.  pidlock writes host= and boot=; --status of
# a record written under another kernel (another host of a shared file
# system) shows that host, and never judges its pid here, even when a
# process of this host has it.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

boot=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)
[ -n "$boot" ] || { echo "# no boot id here: skipped"; exit 77; }

"$PIDLOCK" own.lock sh -c 'cat own.lock > rec' || fail "pidlock failed"
grep -qx "host=$(uname -n)" rec && grep -qx "boot=$boot" rec ||
	fail "the record names no host: $(cat rec)"
pass "the record names this host and its boot"

sleep 300 & live=$!
trap 'kill $live 2>/dev/null; cleanup' EXIT
printf 'pid=%d\ntimestamp=%d\nlock=flock,ofd\nhost=node7.example\nboot=%s\n' \
	"$live" "$(date +%s)" 00000000-1111-4222-8333-444444444444 > far.lock
"$PIDLOCK" --status far.lock > out
grep -q "^  host:    node7.example$" out || fail "--status: no host: $(cat out)"
grep -q "^  pid:     $live (not judged here: another host's)$" out ||
	fail "--status judged another host's pid here: $(cat out)"
if grep -q running out; then fail "--status: $(cat out)"; fi
pass "--status shows the other host, and does not call its pid running"

"$PIDLOCK" --status --json far.lock > out
grep -q '"pid_alive": null' out && grep -q '"host": "node7.example"' out &&
	grep -q '"foreign": true' out || fail "--json: $(cat out)"
"$PIDLOCK" --status --json own.lock > out
grep -q '"host": null' out && grep -q '"foreign": false' out ||
	fail "--json of a free lock: $(cat out)"
pass "--json: host, foreign, and pid_alive null"

# The same record from this kernel: its pid is judged, and it runs.
sed "s/^boot=.*/boot=$boot/" far.lock > near.lock
"$PIDLOCK" --status near.lock > out
grep -q "^  pid:     $live (running)$" out || fail "this host's record: $(cat out)"
if grep -q "host:" out; then fail "this host's record shows a host: $(cat out)"; fi
pass "this kernel's record is judged here, as before"
