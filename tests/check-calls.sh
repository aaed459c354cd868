#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Calls between lib/'s files, and imports between python/pidlock's
# modules, go one way: tests/check-calls.py (doc/layout.md says why).
command -v nm >/dev/null 2>&1 || { echo "check-calls: no nm(1)"; exit 77; }
exec "${PYTHON:-python3}" "${srcdir:-.}/tests/check-calls.py"
