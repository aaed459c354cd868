# SPDX-License-Identifier: LGPL-2.1-or-later
"""lock_descriptor() / unlock_descriptor(): the lock on a descriptor the
caller opened, against pidlock locks of other processes."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

import pidlock
from pidlock import lock_descriptor, unlock_descriptor
from test_fork import held_by


def open_rw(path: str) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)


def test_descriptor_lock_excludes_path_locks(lockpath):
    fd = open_rw(lockpath)
    try:
        assert lock_descriptor(fd, tag="by fd") is True
        assert held_by(lockpath) == str(os.getpid())
        with pytest.raises(pidlock.Timeout):
            pidlock.FileLock(lockpath).acquire(timeout=0)
        # Taken again on the description that holds it: a refresh.
        assert lock_descriptor(fd, blocking=False) is True
        unlock_descriptor(fd)
        assert held_by(lockpath) == ""
        assert os.path.exists(lockpath)      # the file stays (keep=1)
        os.fstat(fd)                         # and fd stays open
    finally:
        os.close(fd)


def test_descriptor_nonblocking_and_timeout_when_held(lockpath):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, pidlock; l = pidlock.Lock(sys.argv[1]);"
         " l.acquire(); print('held', flush=True); sys.stdin.read()", lockpath],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        fd = open_rw(lockpath)
        try:
            assert lock_descriptor(fd, blocking=False) is False
            assert lock_descriptor(fd, timeout=0.1) is False
            with pytest.raises(OSError) as exc:
                unlock_descriptor(fd)
            assert exc.value.errno == errno.ENOLCK
        finally:
            os.close(fd)
    finally:
        holder.stdin.close()
        holder.wait()


def test_descriptor_lock_ends_with_last_close(lockpath):
    fd = open_rw(lockpath)
    assert lock_descriptor(fd)
    os.close(fd)
    assert held_by(lockpath) == ""


def test_descriptor_bad_arguments(lockpath):
    with pytest.raises(ValueError):
        lock_descriptor(0, poll_interval=0)
    with pytest.raises(ValueError):
        lock_descriptor(0, poll_interval=float("inf"))
    fd = open_rw(lockpath)
    os.close(fd)
    with pytest.raises(OSError) as exc:
        lock_descriptor(fd)
    assert exc.value.errno == errno.EBADF
    ro = os.open(lockpath, os.O_RDONLY | os.O_CLOEXEC)
    try:
        with pytest.raises(OSError) as exc:
            lock_descriptor(ro)
        assert exc.value.errno == errno.EBADF
    finally:
        os.close(ro)
    with open(lockpath, "w") as f:
        f.write("not a lock file\n")
    fd = open_rw(lockpath)
    try:
        with pytest.raises(OSError) as exc:
            lock_descriptor(fd, blocking=False)
        assert exc.value.errno == errno.EBADMSG
    finally:
        os.close(fd)
