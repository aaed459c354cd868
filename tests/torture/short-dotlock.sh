#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make check: the short torture, mix "dotlock" (see tests/torture/README).
exec "${SHELL:-/bin/sh}" "${srcdir:-.}/tests/torture/run.sh" --mix dotlock
