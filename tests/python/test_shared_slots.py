# SPDX-License-Identifier: LGPL-2.1-or-later
"""Shared locks (Lock(shared=True)) and semaphores (Slots), with real
processes holding, and flock(1) as a peer."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess

import pytest

import pidlock
from helpers import Holder, holder_script

SHARED_HOLDER = holder_script("import pidlock; "
                              "lock = pidlock.Lock(sys.argv[1], shared=True)")
# Takes one slot of argv[1] (2 slots), says "held" and the slot number.
SLOT_HOLDER = holder_script("import pidlock; lock = pidlock.Slots(sys.argv[1], 2)",
                            "print(lock.slot, flush=True)")


def test_shared_holders_together_exclusive_kept_out(lockpath):
    other = Holder(lockpath, script=SHARED_HOLDER)
    try:
        with pidlock.Lock(lockpath, shared=True, timeout=0) as mine:
            assert mine.locked
            with pytest.raises(pidlock.Busy):
                pidlock.Lock(lockpath, timeout=0).acquire()
            assert pidlock.inspect(lockpath).shared
        # The other reader still holds: the file stays, a writer waits.
        assert os.path.exists(lockpath)
        with pytest.raises(pidlock.Busy):
            pidlock.Lock(lockpath, timeout=0).acquire()
        other.release()
        assert not os.path.exists(lockpath)  # the last one out removed it
        with pidlock.Lock(lockpath, timeout=0):
            pass
    finally:
        other.close()


def test_shared_against_flock1_exclusive(lockpath):
    flock = shutil.which("flock")
    assert flock, "flock(1) (util-linux) is required"
    open(lockpath, "w").close()
    # -o: flock(1) itself holds, not the command it runs.
    peer = subprocess.Popen([flock, "-o", "-x", lockpath, "sleep", "30"])
    try:
        for _ in range(200):
            if subprocess.call([flock, "-n", "-s", lockpath, "true"]) == 1:
                break
        with pytest.raises(pidlock.Busy):
            pidlock.Lock(lockpath, shared=True, timeout=0).acquire()
    finally:
        peer.kill()
        peer.wait()
    # The empty file flock(1) left is young: its grace (a spec-only
    # writer may be about to write) is waited out.
    with pidlock.Lock(lockpath, shared=True, timeout=5):
        assert subprocess.call([flock, "-n", "-s", lockpath, "true"]) == 0
        assert subprocess.call([flock, "-n", "-x", lockpath, "true"]) == 1


def test_slots_at_most_n(tmp_path):
    sem = str(tmp_path / "sem")
    a = Holder(sem, script=SLOT_HOLDER)
    b = Holder(sem, script=SLOT_HOLDER)
    try:
        assert a.proc.stdout is not None and b.proc.stdout is not None
        taken = {int(a.proc.stdout.readline()), int(b.proc.stdout.readline())}
        assert taken == {0, 1}
        mine = pidlock.Slots(sem, 2, timeout=0)
        with pytest.raises(pidlock.Busy):
            mine.acquire()
        # A holder killed with SIGKILL frees its slot at once.
        os.kill(b.pid, signal.SIGKILL)
        b.proc.wait(timeout=10)
        with pidlock.Slots(sem, 2, timeout=5) as slot:
            assert slot in taken
        mine.close()
    finally:
        a.close()
        b.close()


def test_slots_bad_input(tmp_path):
    with pytest.raises(OSError) as e:
        pidlock.Slots(str(tmp_path / "sem"), 0)
    assert e.value.errno == 22
    with pytest.raises(OSError) as e:
        pidlock.Slots(str(tmp_path / "sem"), 2, flags=pidlock.Flags.SHARED)
    assert e.value.errno == 22
    assert os.listdir(tmp_path) == []
