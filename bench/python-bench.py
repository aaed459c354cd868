#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Acquire+release per second from Python: pidlock against filelock.

    python3 bench/python-bench.py [--dir DIR] [--rounds N] [--cycles N]

Each lock takes and lets go of a free lock --cycles times per round, in
turns, one round each in a row so that every lock sees the same machine;
the figure is the median of the rounds.  The ratio is against
filelock.FileLock (Debian's python3-filelock).  Runs in /dev/shm by
default, like bench/bench; `make bench' runs it with the build tree's
library (PIDLOCK_LIBRARY, PYTHONPATH).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import filelock

import pidlock


def cycles_per_second(make, path: str, cycles: int) -> float:
    lock = make(path)
    start = time.perf_counter()
    for _ in range(cycles):
        lock.acquire()
        lock.release()
    return cycles / (time.perf_counter() - start)


CANDIDATES = [
    ("filelock.FileLock", lambda p: filelock.FileLock(p)),
    ("pidlock.Lock", lambda p: pidlock.Lock(p)),
    ("pidlock.Lock NO_SYNC", lambda p: pidlock.Lock(p, flags=pidlock.Flags.NO_SYNC)),
    ("pidlock.FileLock", lambda p: pidlock.FileLock(p)),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--cycles", type=int, default=2000)
    args = ap.parse_args()
    results = {name: [] for name, _ in CANDIDATES}
    with tempfile.TemporaryDirectory(prefix="pidlock-pybench.", dir=args.dir) as d:
        for r in range(args.rounds):
            for i, (name, make) in enumerate(CANDIDATES):
                path = os.path.join(d, f"{r}-{i}.lock")
                results[name].append(cycles_per_second(make, path, args.cycles))
    base = statistics.median(results["filelock.FileLock"])
    print(f"python bench: acquire+release per second, median of {args.rounds} "
          f"rounds of {args.cycles}, in {args.dir or tempfile.gettempdir()}")
    for name, rates in results.items():
        med = statistics.median(rates)
        print(f"  {name:22} {med:10.0f}/s  ratio {med / base:5.2f}"
              f"  (min {min(rates):.0f}, max {max(rates):.0f})")


if __name__ == "__main__":
    main()
