# SPDX-License-Identifier: LGPL-2.1-or-later
"""pidlock.FileLock against filelock's documented behaviour, and beside
real filelock users on one path."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading

import filelock
import pytest

import pidlock
from pidlock import FileLock, Timeout
from helpers import Holder, holder_script


def test_timeout_is_filelock_shaped(lockpath):
    assert issubclass(Timeout, TimeoutError)
    exc = Timeout(lockpath)
    assert exc.lock_file == lockpath
    assert str(exc) == f"The file lock '{lockpath}' could not be acquired."


def test_nesting_counts(lockpath):
    lock = FileLock(lockpath)
    assert not lock.is_locked and lock.lock_counter == 0
    with lock:
        with lock.acquire() as inner:
            assert inner is lock
            assert lock.lock_counter == 2
        assert lock.is_locked and lock.lock_counter == 1
        assert os.path.exists(lockpath)
    assert not lock.is_locked and lock.lock_counter == 0
    assert not os.path.exists(lockpath)


def test_force_release(lockpath):
    lock = FileLock(lockpath)
    lock.acquire()
    lock.acquire()
    lock.release(force=True)
    assert not lock.is_locked and lock.lock_counter == 0
    lock.release()                      # not held: a no-op, as in filelock


def test_timeouts_and_blocking(lockpath):
    holder = Holder(lockpath, tag="holder")
    try:
        lock = FileLock(lockpath, timeout=0.1)
        with pytest.raises(Timeout) as exc:
            lock.acquire()
        assert exc.value.lock_file == lockpath and exc.value.pid == holder.pid
        with pytest.raises(Timeout):
            lock.acquire(timeout=0)
        with pytest.raises(Timeout):
            lock.acquire(timeout=10, blocking=False)
        with pytest.raises(Timeout):
            FileLock(lockpath, blocking=False).acquire()
        assert lock.lock_counter == 0 and not lock.is_locked
        lock.timeout = "-1"              # filelock's setter takes strings
        assert lock.timeout == -1.0
        threading.Timer(0.2, holder.tell, ("release",)).start()
        with lock.acquire(poll_interval=0.01):
            assert lock.is_locked
        holder.expect("released")
    finally:
        holder.close()


def test_decorator(lockpath):
    lock = FileLock(lockpath)

    @lock
    def work():
        return lock.is_locked

    assert work() is True and not lock.is_locked


def test_thread_local_holds_exclude(lockpath):
    lock = FileLock(lockpath)
    got = []
    with lock:
        t = threading.Thread(target=lambda: got.append(_try(lock)))
        t.start()
        t.join()
    assert got == ["timeout"]
    t = threading.Thread(target=lambda: got.append(_try(lock)))
    t.start()
    t.join()
    assert got == ["timeout", "acquired"]


def test_shared_hold_counts_across_threads(lockpath):
    lock = FileLock(lockpath, thread_local=False)
    got = []
    with lock:
        t = threading.Thread(target=lambda: got.append((lock.acquire(timeout=0), lock.lock_counter)))
        t.start()
        t.join()
        assert got[0][1] == 2
        lock.release()
    assert not lock.is_locked


def _try(lock: FileLock) -> str:
    try:
        with lock.acquire(timeout=0):
            return "acquired"
    except Timeout:
        return "timeout"


def test_singleton(lockpath):
    a = FileLock(lockpath, is_singleton=True)
    assert FileLock(lockpath, is_singleton=True) is a
    assert FileLock(lockpath) is not a
    with pytest.raises(ValueError):
        FileLock(lockpath, timeout=5, is_singleton=True)


# A program written for filelock; run once with each module.
PROGRAM = textwrap.dedent("""
    import sys
    from MODULE import FileLock, Timeout
    lock = FileLock(sys.argv[1], timeout=0.1)
    with lock:
        with lock:
            print("nested", lock.is_locked)
        other = FileLock(sys.argv[1])
        try:
            other.acquire(timeout=0.05)
            print("not excluded")
        except Timeout as exc:
            print("timeout", exc.lock_file == sys.argv[1])
    print("released", lock.is_locked)
    """)


def test_filelock_program_runs_unchanged(lockpath):
    outputs = []
    for module in ("filelock", "pidlock"):
        out = subprocess.run(
            [sys.executable, "-c", PROGRAM.replace("MODULE", module), lockpath],
            check=True, capture_output=True, text=True).stdout
        outputs.append(out)
    assert outputs[0] == outputs[1] == "nested True\ntimeout True\nreleased False\n"


FILELOCK_HOLDER = holder_script("import filelock; "
                                "lock = filelock.FileLock(sys.argv[1])")


def test_excludes_real_filelock_holder(lockpath):
    holder = Holder(lockpath, script=FILELOCK_HOLDER)
    try:
        with pytest.raises(Timeout):
            FileLock(lockpath).acquire(timeout=0.1)
        holder.release()
        with FileLock(lockpath, flags=pidlock.Flags.KEEP_FILE):
            with pytest.raises(filelock.Timeout):
                filelock.FileLock(lockpath).acquire(timeout=0)
    finally:
        holder.close()


def test_thread_ending_with_a_hold_lets_go(lockpath):
    lock = FileLock(lockpath)
    t = threading.Thread(target=lock.acquire)
    t.start()
    t.join()
    gc.collect()
    assert not os.path.exists(lockpath)
    with lock.acquire(timeout=0):
        assert lock.lock_counter == 1
