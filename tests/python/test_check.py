# SPDX-License-Identifier: LGPL-2.1-or-later
"""Lock.check() and Lock(lease=...) (pidlock_check(3)): a lock taken
away under its holder is found lost, and its release writes nothing.
The loss is made as a file server makes it: the holder's kernel locks
are dropped under it, and flock(1), a real process, takes the file."""

from __future__ import annotations

import asyncio
import errno
import fcntl
import os
import shutil
import struct
import subprocess
import time

import pytest

import pidlock

F_OFD_SETLK = getattr(fcntl, "F_OFD_SETLK", 37)


def drop_locks(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)
    # struct flock: l_type, l_whence, l_start, l_len, l_pid
    fcntl.fcntl(fd, F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_UNLCK, 0, 0, 0, 0))


def test_check_held_and_not(lockpath):
    lock = pidlock.Lock(lockpath)
    assert lock.check() is False          # nothing held
    with lock:
        assert lock.check(0.5) is True
        assert lock.check(None) is True
    assert lock.check() is False


@pytest.mark.skipif(shutil.which("flock") is None, reason="no flock(1)")
def test_taken_away_is_lost_and_release_writes_nothing(lockpath):
    lock = pidlock.Lock(lockpath)
    lock.acquire()
    fd = lock.fileno()      # (the hand-out pads the record: read after)
    before = open(lockpath).read()
    drop_locks(fd)
    marker = lockpath + ".in"
    peer = subprocess.Popen(["flock", "-n", lockpath, "sh", "-c",
                             'touch "$0"; exec sleep 30', marker],
                            start_new_session=True)
    try:
        # No check before flock(1) holds: a check's re-take of our own
        # locks would have them back.
        deadline = time.monotonic() + 10
        while not os.path.exists(marker) and time.monotonic() < deadline:
            assert peer.poll() is None, "flock(1) did not get the lock"
            time.sleep(0.02)
        assert lock.check() is False
        with pytest.raises(OSError) as e:
            lock.refresh()
        assert e.value.errno == errno.ENOLCK
        with pytest.raises(OSError) as e:
            lock.release()
        assert e.value.errno == errno.ENOLCK
        assert not lock.locked
        assert open(lockpath).read() == before   # the file is flock(1)'s now
    finally:
        os.killpg(peer.pid, 9)        # flock(1) and its command
        peer.wait()
    lock.acquire(10)                  # a new hold starts afresh
    assert lock.check() is True
    lock.release()


def test_lease_lapses(lockpath):
    lock = pidlock.Lock(lockpath, lease=0.15)
    lock.acquire()
    assert lock.check() is True
    time.sleep(0.3)
    assert lock.check() is False
    with pytest.raises(OSError):
        lock.release()
    assert os.path.exists(lockpath)   # maybe the next holder's by now
    lock.close()


def test_async_check(lockpath):
    async def main() -> bool:
        async with pidlock.AsyncLock(lockpath) as lock:
            return await lock.check(0.5)

    assert asyncio.run(main()) is True
