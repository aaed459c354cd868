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


def wait_blocked(ino: int, pid: int, limit: float = 60.0) -> None:
    """Wait until process pid is blocked in the kernel for a lock on
    inode ino (a "->" row of /proc/locks); the limit is a guard against a
    hang, not a bound on speed."""
    import time

    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        with open("/proc/locks") as f:
            for row in f:
                cols = row.split()
                if "->" in cols and int(cols[-4]) == pid and \
                        int(cols[-3].split(":")[-1]) == ino:
                    return
        time.sleep(0.01)
    raise AssertionError(f"pid {pid} never blocked on inode {ino}")
