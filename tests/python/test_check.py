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
import sys
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


def test_token_increases(lockpath):
    try:
        os.setxattr(os.path.dirname(lockpath), "user.t", b"1")
    except OSError:
        pytest.skip("no user xattrs here (tests/test-token checks the refusal)")
    seen = []
    for _ in range(3):
        with pidlock.Lock(lockpath, flags=pidlock.Flags.TOKEN) as lock:
            seen.append(lock.token)
            assert f"token={lock.token}\n" in open(lockpath).read()
    assert seen == sorted(set(seen)) and seen[0] >= 1
    with pidlock.Lock(lockpath) as lock:
        assert lock.token is None


def test_fenced_store_refuses_a_stale_token(tmp_path):
    """doc/examples/fenced_store.py: a late write of an earlier holder is
    refused once a later holder has written."""
    tool = os.path.join(os.path.dirname(__file__), "..", "..", "doc",
                        "examples", "fenced_store.py")
    data = str(tmp_path / "data")

    def put(token: int, text: str) -> int:
        return subprocess.run([sys.executable, tool, data, str(token), text]
                              ).returncode

    assert put(4, "old holder") == 0
    assert put(5, "new holder") == 0
    assert put(4, "old holder, late") == 1
    assert put(5, "new holder again") == 0
    assert open(data).read().split("\n")[:-1] == [
        "old holder", "new holder", "new holder again"]
