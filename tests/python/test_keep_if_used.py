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

import kernel


def test_file_open_elsewhere_stays(lockpath):
    flags = pidlock.Flags.KEEP_IF_USED
    lock = pidlock.Lock(lockpath, flags=flags)
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
        other = pidlock.Lock(lockpath, flags=flags)
        with pytest.raises(pidlock.Busy):
            other.acquire(timeout=0)
    finally:
        peer.stdin.close()
        peer.wait()
    # Nobody else on it now: the next release removes it.
    with pidlock.Lock(lockpath, flags=flags):
        pass
    assert not os.path.exists(lockpath)


def test_flock1_behind_a_default_lock_keeps_the_next_out(lockpath):
    """Issue 46's three lines, with KEEP_IF_USED (not yet the default): a
    Lock, flock(1) opening and waiting behind it, then another acquire
    while flock(1) is inside: busy, not a second holder."""
    flock1 = os.environ.get("FLOCK") or "flock"
    lock = pidlock.Lock(lockpath, flags=pidlock.Flags.KEEP_IF_USED)
    lock.acquire()
    peer = subprocess.Popen(
        [flock1, "-x", lockpath, "-c", "echo in; read x"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        kernel.wait_blocked(os.stat(lockpath).st_ino, peer.pid)
        lock.release()
        assert peer.stdout.readline() == "in\n"
        with pytest.raises(pidlock.Busy):
            pidlock.Lock(lockpath).acquire(timeout=0)
    finally:
        peer.stdin.close()
        peer.wait()


def test_default_removes_it(lockpath):
    lock = pidlock.Lock(lockpath)
    lock.acquire()
    with open(lockpath, "rb") as f:
        lock.release()
        assert not os.path.exists(lockpath)
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
