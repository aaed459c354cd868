#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The init script's stop and start in a loop (see restart-loop.sh).
exec tests/daemon/reaper "${srcdir:-.}/tests/daemon/restart-loop.sh"
