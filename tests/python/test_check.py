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
        # A loss has a name of its own (an OSError all the same).
        with pytest.raises(pidlock.LockLost) as e:
            lock.refresh()
        assert e.value.errno == errno.ENOLCK
        assert isinstance(e.value, OSError)
        with pytest.raises(pidlock.LockLost) as e:
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
    # A release of what is not held is no loss.
    with pytest.raises(OSError) as e:
        lock.release()
    assert e.value.errno == errno.ENOLCK
    assert not isinstance(e.value, pidlock.LockLost)


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


# The child run in a mount namespace of its own: a bindfs mount (a FUSE
# file system, where checks are put by a helper and waited for), its
# daemon stopped, and a signal handler run every 200 us during
# check(timeout=1.0).  It prints the seconds check() took, what it
# raised, and how many times the handler ran.
_STORM = r"""
import os, signal, sys, time
import pidlock
mnt, daemon = sys.argv[1], int(sys.argv[2])
lock = pidlock.Lock(os.path.join(mnt, "s.lock"))
lock.acquire(timeout=0)
assert lock.check(timeout=2.0)
ran = 0
def tick(sig, frame):
    global ran
    ran += 1
signal.signal(signal.SIGALRM, tick)
os.kill(daemon, signal.SIGSTOP)
signal.setitimer(signal.ITIMER_REAL, 0.0002, 0.0002)
t0 = time.monotonic()
try:
    lock.check(timeout=1.0)
    what = "no error"
except TimeoutError:
    what = "TimeoutError"
took = time.monotonic() - t0
signal.setitimer(signal.ITIMER_REAL, 0, 0)
os.kill(daemon, signal.SIGCONT)
assert lock.check(timeout=5.0)
lock.release()
print(took, what, ran)
"""


def test_check_keeps_its_bound_under_a_signal_handler(tmp_path):
    """A Python signal handler that returns does not end check()'s wait:
    TimeoutError comes at the timeout, not at the first signal."""
    if os.geteuid() != 0 or not shutil.which("bindfs") or \
            not shutil.which("unshare") or not os.access("/dev/fuse", os.W_OK):
        pytest.skip("needs root, unshare(1), /dev/fuse and bindfs")
    src, mnt = tmp_path / "src", tmp_path / "mnt"
    src.mkdir()
    mnt.mkdir()
    script = tmp_path / "storm.py"
    script.write_text(_STORM)
    shell = ('bindfs -f "$1" "$2" & d=$!; '
             'i=0; while [ "$(stat -c %d "$2")" = "$(stat -c %d "$1")" ]; do '
             'i=$((i+1)); [ $i -lt 500 ] || exit 99; sleep 0.01; done; '
             '"$3" "$4" "$2" "$d"; rc=$?; kill -CONT $d; kill $d; wait $d; '
             'umount -l "$2" 2>/dev/null; exit $rc')
    out = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", shell, "sh",
         str(src), str(mnt), sys.executable, str(script)],
        capture_output=True, text=True, timeout=60, env=os.environ)
    assert out.returncode == 0, out.stderr
    took, what, ran = out.stdout.split()
    print(f"check(timeout=1.0) under a handler every 200 us: {what} after "
          f"{float(took):.3f} s, the handler ran {ran} times")
    assert what == "TimeoutError"
    assert float(took) >= 0.999
    assert int(ran) > 0
