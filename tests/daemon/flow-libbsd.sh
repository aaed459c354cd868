#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The reference: the libbsd daemon, built with libbsd, passes flow.sh.
exec tests/daemon/reaper "${srcdir:-.}/tests/daemon/flow.sh" libbsd tests/daemon/bsd-daemon-libbsd
