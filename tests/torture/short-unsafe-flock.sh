#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make check: mix "unsafe-flock" runs until the breakage is shown (30 s at most).
exec "${SHELL:-/bin/sh}" "${srcdir:-.}/tests/torture/run.sh" --mix unsafe-flock --duration 30
