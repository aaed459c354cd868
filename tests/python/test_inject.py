# SPDX-License-Identifier: LGPL-2.1-or-later
"""Interrupts at every point of the package during `with lock:` and
`async with lock:` (issue 45, item 2; inject.py does the work, in a
process of its own, on a rewritten copy of the package): after each
run, what the object says is what the kernel says, and the next
with-statement holds and lets go of everything.

make check: every single point, every pair for Lock and FileLock, and
1,000 random pairs and 200 random triples for the asyncio classes (about
half a minute in all), drawn with a new seed each run (printed on a
failure; PIDLOCK_INJECT_SEED sets it), so that runs add up to more than
one sample.  make check-interrupts (PIDLOCK_INJECT_ALL=1): every pair
and 1,000 random triples for each."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ALL = bool(os.environ.get("PIDLOCK_INJECT_ALL"))

CASES = [("Lock", "interrupt"), ("FileLock", "interrupt"),
         ("AsyncLock", "interrupt"), ("AsyncLock", "cancel"),
         ("AsyncFileLock", "interrupt"), ("AsyncFileLock", "cancel")]


@pytest.mark.parametrize("kind,mode", CASES)
def test_no_interrupts_leave_a_lock_stuck(lockpath, kind, mode):
    exhaustive = ALL or not kind.startswith("Async")
    triples = "1000" if ALL else "200"
    pairs = "-1" if exhaustive else "1000"
    seed = os.environ.get("PIDLOCK_INJECT_SEED") or str(random.randrange(1 << 30))
    proc = subprocess.run(
        [sys.executable, os.path.join(HERE, "inject.py"), kind, mode,
         lockpath, triples, seed, pairs],
        capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, f"seed {seed}: " + proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    runs = out["runs"]
    assert out["points"] >= 50 and runs["single"] == out["points"], out
    if exhaustive:
        assert runs["pair"] == out["points"] * (out["points"] - 1) // 2, out
    assert out["stuck"] == 0, (seed, out)
