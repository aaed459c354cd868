# SPDX-License-Identifier: LGPL-2.1-or-later
"""The kernel's answer, for the interrupt tests: whichever pidlock
module the caller uses (inject.py's is a rewritten copy, so this module
imports none)."""

from __future__ import annotations

from typing import Any


def kernel_free(pidlock: Any, path: str) -> bool:
    """Can another open file description take path's lock at once?  (It
    lets go again.)"""
    probe = pidlock.Lock(path)
    try:
        probe.acquire(timeout=0)
    except pidlock.Busy:
        return False
    finally:
        if probe.locked:
            probe.release()
        probe.close()
    return True
