#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The service files of doc/examples (see doc-examples.sh).
exec tests/daemon/reaper "${srcdir:-.}/tests/daemon/doc-examples.sh"
