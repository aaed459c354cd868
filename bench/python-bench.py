#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Acquire+release per second from Python: pidlock against filelock;
and the hand-off between threads of one process against the hand-off
between processes.

    python3 bench/python-bench.py [--dir DIR] [--rounds N] [--cycles N]
                                  [--handoffs N] [--contended N]
                                  [--parts cycle,handoff,contended,threaded]
                                  [--csv FILE]

Each lock takes and lets go of a free lock --cycles times per round, in
turns, one round each in a row so that every lock sees the same machine;
the figure is the median of the rounds.  The ratio is against
filelock.FileLock (Debian's python3-filelock).

Hand-off: pidlock.FileLock players take turns on one path, as threads of
one process or as processes; one holds for 2 ms while the others wait
(1 or 8 of them), notes the time and lets go; the figure is the median
time from that release to the next holder holding, over --handoffs
hand-offs.  Contended: 20 threads of one process, or 20 processes, each
take and let go of one path --contended times in a loop (py-filelock's
threaded tests do this); the figures are acquire+release per second, all
together, and the CPU time (user and system, of all the players) per
acquire+release.  A waiter that a release wakes tries again, and a try
makes, writes and syncs a file: the herd costs CPU, and on a disk
(--dir) its syncs cost time too.

Threaded: py-filelock's two threaded tests, timed for
filelock.FileLock and pidlock.FileLock alike: one lock object used by
100 threads, 100 cycles each; and 20 threads, each with its own object
on one path, 1000 cycles each (the seconds of each, and the ratio).
Whichever filelock `import filelock' finds is timed (PYTHONPATH may
name a newer release than Debian's): before 3.10 the threads of one
object share its hold and never wait for one another, which the
heading then says.

Runs in /dev/shm by default, like bench/bench; `make bench' runs it with
the build tree's library (PIDLOCK_LIBRARY, PYTHONPATH), there and in a
disk directory.  Every heading names the directory and its filesystem.
--parts runs some of the parts only; --csv writes the figures
there: part,subject,per_second,us (us: the cycle's time, the hand-off's,
the CPU per contended cycle, or a threaded test's whole time).
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import multiprocessing
import os
import statistics
import tempfile
import threading
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


# The players' board: who holds (-1: nobody yet), how many hand-offs
# were noted, and when the last holder let go (time.perf_counter(),
# CLOCK_MONOTONIC, one clock for every process).
HOLDER, COUNT, RELEASED = 0, 1, 2


def play(me: int, path: str, board, lat, handoffs: int) -> None:
    lock = pidlock.FileLock(path)
    while True:
        lock.acquire()
        now = time.perf_counter()
        n = int(board[COUNT])
        if board[HOLDER] not in (-1, me) and n < handoffs:
            lat[n] = now - board[RELEASED]
            board[COUNT] = n + 1
        board[HOLDER] = me
        if board[COUNT] >= handoffs:
            lock.release()
            return
        time.sleep(0.002)        # the others are waiting by now
        board[RELEASED] = time.perf_counter()
        lock.release()
        # Queue again only once somebody else has taken over.
        while board[HOLDER] == me and board[COUNT] < handoffs:
            time.sleep(0.0001)


def handoff_us(directory: str, waiters: int, threads: bool,
               handoffs: int) -> float:
    path = os.path.join(directory, f"handoff-{waiters}-{int(threads)}.lock")
    board = multiprocessing.RawArray(ctypes.c_double, 3)
    board[HOLDER] = -1
    lat = multiprocessing.RawArray(ctypes.c_double, handoffs)
    args = [(me, path, board, lat, handoffs) for me in range(waiters + 1)]
    if threads:
        players = [threading.Thread(target=play, args=a) for a in args]
    else:
        fork = multiprocessing.get_context("fork")
        players = [fork.Process(target=play, args=a) for a in args]
    for p in players:
        p.start()
    for p in players:
        p.join()
    return statistics.median(lat[:int(board[COUNT])]) * 1e6


def contend(path: str, cycles: int) -> None:
    lock = pidlock.FileLock(path)
    for _ in range(cycles):
        with lock:
            pass


CONTENDERS = 20


def cpu_seconds() -> float:
    """CPU time of this process and of its waited-for children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def contended(directory: str, threads: bool, cycles: int) -> tuple:
    """(acquire+release per second, CPU microseconds per one)."""
    path = os.path.join(directory, f"contended-{int(threads)}.lock")
    if threads:
        players = [threading.Thread(target=contend, args=(path, cycles))
                   for _ in range(CONTENDERS)]
    else:
        fork = multiprocessing.get_context("fork")
        players = [fork.Process(target=contend, args=(path, cycles))
                   for _ in range(CONTENDERS)]
    start, cpu = time.perf_counter(), cpu_seconds()
    for p in players:
        p.start()
    for p in players:
        p.join()
    n = CONTENDERS * cycles
    return (n / (time.perf_counter() - start),
            (cpu_seconds() - cpu) / n * 1e6)


def threaded_seconds(make, path: str, shared: bool) -> float:
    """Seconds of one of py-filelock's threaded tests with locks from
    make: one object for 100 threads x 100 cycles (shared), or 20
    threads x 1000 cycles with an object each."""
    threads, cycles = (100, 100) if shared else (20, 1000)
    one = make(path) if shared else None

    def run() -> None:
        lock = one if shared else make(path)
        for _ in range(cycles):
            with lock:
                pass

    players = [threading.Thread(target=run) for _ in range(threads)]
    start = time.perf_counter()
    for p in players:
        p.start()
    for p in players:
        p.join()
    return time.perf_counter() - start


def filelock_version() -> tuple:
    try:
        return tuple(int(x) for x in filelock.__version__.split(".")[:2])
    except (AttributeError, ValueError):
        return (0, 0)


def threaded(directory: str, where: str, rows: list) -> None:
    impls = (("filelock.FileLock", filelock.FileLock),
             ("pidlock.FileLock", pidlock.FileLock))
    print(f"python bench: py-filelock's threaded tests in {where}, "
          f"seconds (filelock {getattr(filelock, '__version__', '?')})")
    if filelock_version() < (3, 10):
        print("  (this filelock's threads share one object's hold: its "
              "shared-object figure has no waiting in it)")
    for shared, test in ((True, "shared object 100x100"),
                         (False, "own objects 20x1000")):
        secs = {name: threaded_seconds(make,
                                       os.path.join(directory, f"t-{i}.lock"),
                                       shared)
                for i, (name, make) in enumerate(impls)}
        ratio = secs["pidlock.FileLock"] / secs["filelock.FileLock"]
        print(f"  {test:22} filelock {secs['filelock.FileLock']:7.3f} s  "
              f"pidlock {secs['pidlock.FileLock']:7.3f} s  ratio {ratio:5.2f}")
        for name, v in secs.items():
            rows.append(("threaded", f"{test} {name}", "", f"{v * 1e6:.0f}"))


def fstype(directory: str) -> str:
    """The type of the filesystem DIRECTORY is on, from the mount whose
    device number it has (/proc/self/mountinfo); "?" when not found."""
    dev = os.stat(directory).st_dev
    want = f"{os.major(dev)}:{os.minor(dev)}"
    found = "?"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            for line in f:
                fields, _, rest = line.partition(" - ")
                if fields.split()[2:3] == [want] and rest:
                    found = rest.split()[0]    # the last: the one on top
    except OSError:
        pass
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--cycles", type=int, default=2000)
    ap.add_argument("--handoffs", type=int, default=300)
    ap.add_argument("--contended", type=int, default=300)
    ap.add_argument("--parts", default="cycle,handoff,contended,threaded")
    ap.add_argument("--csv", metavar="FILE")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    if not parts <= {"cycle", "handoff", "contended", "threaded"}:
        ap.error(f"--parts: not a part: {', '.join(sorted(parts))}")
    directory = args.dir or tempfile.gettempdir()
    where = f"{directory} ({fstype(directory)})"
    rows = []
    if "cycle" in parts:
        results = {name: [] for name, _ in CANDIDATES}
        with tempfile.TemporaryDirectory(prefix="pidlock-pybench.",
                                         dir=args.dir) as d:
            for r in range(args.rounds):
                for i, (name, make) in enumerate(CANDIDATES):
                    path = os.path.join(d, f"{r}-{i}.lock")
                    results[name].append(cycles_per_second(make, path,
                                                           args.cycles))
        base = statistics.median(results["filelock.FileLock"])
        print(f"python bench: acquire+release per second, median of "
              f"{args.rounds} rounds of {args.cycles}, in {where}")
        for name, rates in results.items():
            med = statistics.median(rates)
            print(f"  {name:22} {med:10.0f}/s  ratio {med / base:5.2f}"
                  f"  (min {min(rates):.0f}, max {max(rates):.0f})")
            rows.append(("cycle", name, f"{med:.0f}", f"{1e6 / med:.2f}"))
    with tempfile.TemporaryDirectory(prefix="pidlock-pybench.", dir=args.dir) as d:
        if "handoff" in parts:
            print(f"python bench: pidlock.FileLock hand-off in {where}, "
                  f"release to next holder, median of {args.handoffs}")
            for waiters in (1, 8):
                us = {kind: handoff_us(d, waiters, kind == "threads",
                                       args.handoffs)
                      for kind in ("threads", "processes")}
                print(f"  {waiters} waiting: threads of one process "
                      f"{us['threads']:7.0f} us, processes "
                      f"{us['processes']:7.0f} us")
                for kind, v in us.items():
                    rows.append(("handoff", f"{waiters} waiting {kind}", "",
                                 f"{v:.1f}"))
        if "contended" in parts:
            print(f"python bench: pidlock.FileLock in {where}, {CONTENDERS} "
                  f"contending, {args.contended} cycles each")
            for kind in ("threads", "processes"):
                rate, cpu = contended(d, kind == "threads", args.contended)
                name = "threads of one process" if kind == "threads" else kind
                print(f"  {name:22} {rate:10.0f}/s  CPU {cpu:6.0f} us "
                      f"per cycle")
                rows.append(("contended", kind, f"{rate:.0f}", f"{cpu:.1f}"))
        if "threaded" in parts:
            threaded(d, where, rows)
    if args.csv:
        with open(args.csv, "w", newline="", encoding="utf-8") as f:
            out = csv.writer(f, lineterminator="\n")
            out.writerow(("part", "subject", "per_second", "us"))
            out.writerows(rows)


if __name__ == "__main__":
    main()
