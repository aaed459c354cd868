# SPDX-License-Identifier: LGPL-2.1-or-later
"""Real processes: exclusion, timeouts, the busy holder, SIGKILL."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

import pidlock
from helpers import Holder, assert_gone_after_contention

COUNTER = textwrap.dedent("""
    import sys, pidlock
    path, counter, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    lock = pidlock.Lock(path)
    for _ in range(n):
        with lock:
            with open(counter) as f:
                value = int(f.read())
            with open(counter, "w") as f:
                f.write(str(value + 1))
    """)


def test_processes_exclude_each_other(lockpath, tmp_path):
    counter = tmp_path / "counter"
    counter.write_text("0")
    procs = [subprocess.Popen([sys.executable, "-c", COUNTER, lockpath,
                               str(counter), "60"]) for _ in range(4)]
    assert [p.wait(timeout=60) for p in procs] == [0] * 4
    assert counter.read_text() == "240"
    assert_gone_after_contention(lockpath)


def test_busy_names_the_holder(lockpath):
    holder = Holder(lockpath, tag="other process")
    try:
        with pytest.raises(pidlock.Busy) as exc:
            pidlock.Lock(lockpath).acquire(timeout=0)
        assert exc.value.pid == holder.pid
        assert exc.value.tag == "other process"
        assert exc.value.age is not None and exc.value.age >= 0
        with pytest.raises(pidlock.Busy) as exc:
            pidlock.Lock(lockpath, timeout=0.2).acquire()
        assert exc.value.errno == errno.ETIMEDOUT and exc.value.pid == holder.pid
        info = pidlock.inspect(lockpath)
        assert info.state == pidlock.State.HELD and info.pid == holder.pid
    finally:
        holder.close()


def test_waiter_gets_lock_on_release(lockpath):
    holder = Holder(lockpath)
    try:
        threading.Timer(0.2, holder.tell, ("release",)).start()
        with pidlock.Lock(lockpath, timeout=30):
            with open(lockpath) as f:
                assert f"pid={os.getpid()}\n" in f.read()
        holder.expect("released")
    finally:
        holder.close()


def test_sigkilled_holder_frees_lock_at_once(lockpath):
    holder = Holder(lockpath)
    os.kill(holder.pid, signal.SIGKILL)
    assert holder.close() == -signal.SIGKILL
    assert pidlock.inspect(lockpath).state == pidlock.State.ABANDONED
    lock = pidlock.Lock(lockpath)
    lock.acquire(timeout=0)        # a try: no waiting for anything to go stale
    lock.release()
    assert not os.path.exists(lockpath)


def test_waiter_wakes_when_holder_is_killed(lockpath):
    holder = Holder(lockpath)
    threading.Timer(0.2, os.kill, (holder.pid, signal.SIGKILL)).start()
    with pidlock.Lock(lockpath, timeout=30):
        pass
    assert holder.close() == -signal.SIGKILL
