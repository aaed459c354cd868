#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The daemon flow with examples/daemon (see flow.sh).
exec tests/daemon/reaper "${srcdir:-.}/tests/daemon/flow.sh" example examples/daemon
