# SPDX-License-Identifier: LGPL-2.1-or-later
"""FileLock after os.fork(), and a second FileLock on a held path in the
same thread (filelock 3.32's rules)."""

from __future__ import annotations

import os
import threading

import pytest

import pidlock
from test_fork import held_by, in_child


def test_child_sees_filelock_unheld_and_leaves_parents_hold(lockpath):
    """The child sees the lock unheld (count 0); reusing the inherited
    object raises; its release does nothing; its exit (finalizers)
    neither unlocks nor removes the parent's lock."""
    lock = pidlock.FileLock(lockpath)
    lock.acquire()
    lock.acquire()
    record = open(lockpath).read()

    def child():
        assert not lock.is_locked
        assert lock.lock_counter == 0
        # filelock's wording, which programs may match.
        with pytest.raises(RuntimeError, match="inherited across fork"):
            lock.acquire(timeout=0)
        lock.release()
        lock.release(force=True)
        del_me = lock
        del del_me

    assert in_child(child) == 0
    assert lock.is_locked and lock.lock_counter == 2
    assert held_by(lockpath) == str(os.getpid())
    assert open(lockpath).read() == record
    lock.release(force=True)
    assert held_by(lockpath) == ""
    assert not os.path.exists(lockpath)


def test_new_filelock_in_child_waits_for_parent(lockpath):
    """A FileLock made in the child is the child's own: it does not get
    the parent's hold through the inherited descriptor."""
    lock = pidlock.FileLock(lockpath)
    lock.acquire()

    def child():
        mine = pidlock.FileLock(lockpath)
        with pytest.raises(pidlock.Timeout):
            mine.acquire(timeout=0)

    assert in_child(child) == 0
    lock.release()


def test_singletons_start_empty_in_child(lockpath):
    lock = pidlock.FileLock(lockpath, is_singleton=True)
    assert pidlock.FileLock(lockpath, is_singleton=True) is lock

    def child():
        fresh = pidlock.FileLock(lockpath, is_singleton=True)
        assert fresh is not lock
        with fresh:
            assert fresh.is_locked

    assert in_child(child) == 0


def test_second_instance_in_same_thread_raises(lockpath):
    """A wait without a limit for a hold of this very thread would never
    end: RuntimeError.  A timeout (or blocking=False) keeps Timeout; one
    instance (a singleton) counts in; another thread waits as before."""
    first, second = pidlock.FileLock(lockpath), pidlock.FileLock(lockpath)
    with first:
        with pytest.raises(RuntimeError, match="Deadlock"):
            second.acquire()
        with pytest.raises(RuntimeError, match="Deadlock"):
            with second:
                pass
        assert not second.is_locked and second.lock_counter == 0
        with pytest.raises(pidlock.Timeout):
            second.acquire(timeout=0)
        with pytest.raises(pidlock.Timeout):
            second.acquire(blocking=False)
        with first:
            assert first.lock_counter == 2
        seen = []

        def other():
            try:
                second.acquire(timeout=0.05)
            except pidlock.Timeout:
                seen.append("timeout")
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert seen == ["timeout"]
    with second:
        assert second.is_locked
    with first:
        pass


def test_async_second_instance_in_same_task_raises(lockpath):
    """AsyncFileLock's deadlock rule is per task: the same task raises,
    another task of the loop waits (and gets it once let go)."""
    import asyncio

    async def main():
        first, second = pidlock.AsyncFileLock(lockpath), pidlock.AsyncFileLock(lockpath)
        async with first:
            with pytest.raises(RuntimeError, match="Deadlock"):
                await second.acquire()
            with pytest.raises(pidlock.Timeout):
                await second.acquire(timeout=0.05)
            other = asyncio.create_task(second.acquire())
            await asyncio.sleep(0.05)
            assert not other.done()
        await asyncio.wait_for(other, 5)
        assert second.is_locked
        await second.release()
        async with first:
            pass

    asyncio.run(main())
