#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make check: the short torture, mix "flock1-made" (see tests/torture/README).
exec "${SHELL:-/bin/sh}" "${srcdir:-.}/tests/torture/run.sh" --mix flock1-made
