#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The libbsd daemon switched to <pidlock-pidfile.h> and -lpidlock: first
# prove the switch took (libpidlock's symbols, no libbsd at all), then
# run the same flow.sh as the libbsd build.
set -eu
bin=tests/daemon/bsd-daemon-pidlock
syms=$(nm -D --undefined-only "$bin")
echo "$syms" | grep -qw pidlock_pidfile_open ||
	{ echo "$bin does not call pidlock_pidfile_open" >&2; exit 1; }
if echo "$syms" | grep -qw 'pidfile_open'; then
	echo "$bin still calls pidfile_open" >&2; exit 1
fi
if ldd "$bin" | grep -q libbsd; then
	echo "$bin still links libbsd" >&2; exit 1
fi
echo "ok - $bin uses pidlock_pidfile_*, no libbsd"
exec tests/daemon/reaper "${srcdir:-.}/tests/daemon/flow.sh" pidfile "$bin"
