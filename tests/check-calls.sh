#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Calls between lib/'s files, and imports between python/pidlock's
# modules, go one way, down doc/layout.md's lists, which name every file:
# tests/check-calls.py (doc/layout.md says why).
command -v nm >/dev/null 2>&1 || { echo "check-calls: no nm(1)"; exit 77; }
# PYTHON is ":" in a tree configured without one (the musl build): any
# python3 reads the objects as well.
py=${PYTHON:-python3}
case $py in :) py=python3 ;; esac
command -v "$py" >/dev/null 2>&1 || { echo "check-calls: no python3"; exit 77; }
exec "$py" "${srcdir:-.}/tests/check-calls.py"
