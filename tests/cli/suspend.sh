#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# --lease and --check count the time the machine slept, as a file
# server's timeout does: the schedule and the lease run on CLOCK_BOOTTIME,
# not on CLOCK_MONOTONIC, which stops during a suspend.  Nothing here can
# suspend the machine: the fault shim puts a suspend into pidlock's
# clock (FAULT_BOOTTIME_FILE: CLOCK_BOOTTIME jumps, CLOCK_MONOTONIC does
# not), and a signal wakes its loop as the kernel's CLOCK_BOOTTIME timer
# does on resume.
. "$(dirname "$0")/lib.sh"
shim_preload
# A build for another C library (make check-musl) makes a shim that the
# system's programs (setsid, sh) cannot load: nothing to put the suspend
# into here; the glibc builds test it.
if ! LD_PRELOAD=$SHIM /bin/true 2>/dev/null; then
	echo "SKIP: the fault shim cannot be preloaded into this system's programs (a build for another C library)"
	exit 77
fi
cd "$T" || exit 99

# A 20 s lease, checked every 10 s: a 30 s suspend once the command runs.
LD_PRELOAD=$SHIM FAULT_BOOTTIME_FILE=$T/slept start_bg --lease 20 --check 10 \
	x.lock sh -c 'trap : USR1; echo $$ > cmd.pid; while :; do sleep 0.1; done'
holder=$LAST
wait_until test -s cmd.pid
echo 30000 > slept
t0=$(date +%s%N)
kill -USR1 "$holder"
# The bound of the wait: without the boot clock, nothing happens for
# 10 s (the next check), and then the lease looks fresh.
i=0
while ! gone "$holder" && [ $i -lt 80 ]; do sleep 0.1; i=$((i + 1)); done
gone "$holder" || fail "a 30 s suspend against a 20 s lease: pidlock goes on"
wait "$holder"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$rc" -eq 75 ] || fail "pidlock exited $rc after the suspend, not 75"
gone "$(cat cmd.pid)" || fail "the command still runs"
pass "a 30 s suspend: at the wake, the check ran and the 20 s lease had lapsed ($ms ms, exit 75)"
done_testing
