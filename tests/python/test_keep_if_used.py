# SPDX-License-Identifier: LGPL-2.1-or-later
"""Flags.KEEP_IF_USED: the release leaves the file at the path while
another process has it open or waits for it (a flock(1) user of a path
this library creates), and removes it when nobody else is on it."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys

import pytest

import pidlock


def test_file_open_elsewhere_stays(lockpath):
    lock = pidlock.Lock(lockpath, flags=pidlock.Flags.KEEP_IF_USED)
    lock.acquire()
    ino = os.stat(lockpath).st_ino
    # Another process opens it and waits to lock it, as flock(1) would.
    peer = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, sys\n"
         "f = open(sys.argv[1], 'rb')\n"
         "print('open', flush=True)\n"
         "sys.stdin.readline()\n"
         "fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
         "print('locked', flush=True)\n"
         "sys.stdin.readline()\n", lockpath],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert peer.stdout.readline() == "open\n"
        lock.release()
        assert os.stat(lockpath).st_ino == ino, "removed under an opener"
        peer.stdin.write("\n")
        peer.stdin.flush()
        assert peer.stdout.readline() == "locked\n"
        # The peer holds the file at the path: we are kept out.
        other = pidlock.Lock(lockpath, flags=pidlock.Flags.KEEP_IF_USED)
        with pytest.raises(pidlock.Busy):
            other.acquire(timeout=0)
    finally:
        peer.stdin.close()
        peer.wait()
    # Nobody else on it now: the next release removes it.
    with pidlock.Lock(lockpath, flags=pidlock.Flags.KEEP_IF_USED):
        pass
    assert not os.path.exists(lockpath)


def test_default_removes_it(lockpath):
    lock = pidlock.Lock(lockpath)
    lock.acquire()
    with open(lockpath, "rb") as f:
        lock.release()
        assert not os.path.exists(lockpath)
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
