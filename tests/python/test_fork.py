# SPDX-License-Identifier: LGPL-2.1-or-later
"""After os.fork(), only the process the record names removes the file."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap

import pytest

import pidlock

TRY = "import sys, pidlock\ntry:\n    pidlock.Lock(sys.argv[1]).acquire(timeout=0)\nexcept pidlock.Busy as b:\n    print(b.pid)\n"


def held_by(path: str) -> str:
    """The pid another process finds holding path ('' if it got it)."""
    return subprocess.run([sys.executable, "-c", TRY, path], check=True,
                          capture_output=True, text=True).stdout.strip()


def in_child(action) -> int:
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            action()
            code = 0
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.mark.parametrize("how", ["release", "finalizer", "close", "exit"])
def test_child_does_not_remove_parents_lock(lockpath, how):
    lock = pidlock.Lock(lockpath)
    lock.acquire()
    before = open(lockpath).read()

    def child():
        nonlocal lock
        if how == "release":
            lock.release()
            assert not lock.locked
        elif how == "close":
            lock.close()
        elif how == "finalizer":
            del lock
            gc.collect()

    assert in_child(child) == 0
    assert open(lockpath).read() == before
    assert held_by(lockpath) == str(os.getpid())
    lock.release()
    assert not os.path.exists(lockpath)


def test_child_interpreter_exit_keeps_parents_lock(lockpath):
    # The child leaves through the interpreter's normal shutdown, which
    # runs every finalizer (Lock and FileLock).
    script = textwrap.dedent("""
        import os, sys, pidlock
        lock = pidlock.Lock(sys.argv[1]); lock.acquire()
        flock = pidlock.FileLock(sys.argv[1] + "2"); flock.acquire()
        pid = os.fork()
        if pid == 0:
            sys.exit(0)
        os.waitpid(pid, 0)
        print(open(sys.argv[1]).read().split()[0], os.path.exists(sys.argv[1] + "2"),
              flush=True)
        sys.stdin.readline()
        """)
    proc = subprocess.Popen([sys.executable, "-c", script, lockpath],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().split()
        assert line == [f"pid={proc.pid}", "True"]
        assert held_by(lockpath) == str(proc.pid)
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
    assert not os.path.exists(lockpath) and not os.path.exists(lockpath + "2")


def test_child_that_refreshes_owns_the_lock(lockpath):
    lock = pidlock.Lock(lockpath)
    lock.acquire()

    def child():
        lock.refresh()
        assert open(lockpath).read().startswith(f"pid={os.getpid()}\n")
        lock.release()
        assert not os.path.exists(lockpath)

    assert in_child(child) == 0
    assert not os.path.exists(lockpath)
    with pytest.raises(pidlock.BrokenLock):
        lock.release()


def test_filelock_child_release_only_closes(lockpath):
    lock = pidlock.FileLock(lockpath)
    lock.acquire()

    def child():
        lock.release()
        assert not lock.is_locked

    assert in_child(child) == 0
    assert held_by(lockpath) == str(os.getpid())
    lock.release()
    assert not os.path.exists(lockpath)
