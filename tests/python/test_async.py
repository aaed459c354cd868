# SPDX-License-Identifier: LGPL-2.1-or-later
"""pidlock.AsyncLock: waits in the event loop on the library's descriptor."""

from __future__ import annotations

import asyncio
import errno
import gc
import os
import signal

import pytest

import pidlock
from helpers import Holder


def open_fds() -> set:
    # Garbage of earlier tests first (a subprocess's pipes, closed when
    # it is collected): a collection during the test would change the
    # count.
    gc.collect()
    return set(os.listdir("/proc/self/fd"))


def test_async_with(lockpath):
    async def main():
        async with pidlock.AsyncLock(lockpath, tag="async") as lock:
            assert lock.locked
            assert pidlock.inspect(lockpath).tag == "async"
        assert not os.path.exists(lockpath)

    asyncio.run(main())


def test_wait_lets_the_loop_run(lockpath):
    holder = Holder(lockpath)
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    async def main():
        tick = asyncio.create_task(ticker())
        loop = asyncio.get_running_loop()
        loop.call_later(0.3, holder.tell, "release")
        async with pidlock.AsyncLock(lockpath, timeout=30):
            seen = ticks
            assert open(lockpath).read().startswith(f"pid={os.getpid()}\n")
        tick.cancel()
        return seen

    try:
        fds = open_fds()
        seen = asyncio.run(main())
        holder.expect("released")
        assert seen >= 2          # the loop ran other tasks while it waited
        assert open_fds() == fds
    finally:
        holder.close()


def test_timeout_raises_busy(lockpath):
    holder = Holder(lockpath, tag="h")
    try:
        fds = open_fds()
        with pytest.raises(pidlock.Busy) as exc:
            asyncio.run(pidlock.AsyncLock(lockpath).acquire(timeout=0.2))
        assert exc.value.errno == errno.ETIMEDOUT
        assert exc.value.pid == holder.pid and exc.value.tag == "h"
        with pytest.raises(pidlock.Busy) as exc:
            asyncio.run(pidlock.AsyncLock(lockpath, timeout=0).acquire())
        assert exc.value.errno == errno.EWOULDBLOCK
        assert open_fds() == fds
    finally:
        holder.close()


def test_cancel_ends_the_wait(lockpath):
    holder = Holder(lockpath)

    async def main():
        lock = pidlock.AsyncLock(lockpath)
        task = asyncio.create_task(lock.acquire())
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return lock

    try:
        fds = open_fds()
        lock = asyncio.run(main())
        assert open_fds() == fds and not lock.locked
        holder.release()
        asyncio.run(lock.acquire(timeout=0))
        lock.release()
    finally:
        holder.close()


def test_killed_holder_wakes_the_loop(lockpath):
    holder = Holder(lockpath)

    async def main():
        asyncio.get_running_loop().call_later(0.2, os.kill, holder.pid, signal.SIGKILL)
        async with pidlock.AsyncLock(lockpath, timeout=30, retry_interval=60):
            return True

    assert asyncio.run(main())
    assert holder.close() == -signal.SIGKILL


def test_tasks_take_turns(lockpath):
    """Tasks sharing one AsyncLock wait their turn (in order), as with
    asyncio.Lock, behind a holder in another process: none raises
    EALREADY, and never two at once."""
    holder = Holder(lockpath)
    inside, order = [], []

    async def worker(lock, name):
        async with lock:
            inside.append(name)
            assert len(inside) == 1, inside
            order.append(name)
            await asyncio.sleep(0.05)
            inside.remove(name)

    async def main():
        lock = pidlock.AsyncLock(lockpath, timeout=30)
        tasks = []
        for name in "abc":
            tasks.append(asyncio.create_task(worker(lock, name)))
            await asyncio.sleep(0.05)   # a waits for the holder, b and c queue
        holder.tell("release")
        await asyncio.gather(*tasks)
        await lock.acquire(timeout=0)   # the turns ended with the last one
        lock.release()

    try:
        asyncio.run(main())
        holder.expect("released")
        assert order == ["a", "b", "c"]
        assert not os.path.exists(lockpath)
    finally:
        holder.close()


def test_cancelled_or_timed_out_turn_leaves_nothing(lockpath):
    """A task cancelled while it queues, one whose timeout runs out in
    the queue, and the first task cancelled during the library's wait:
    the next task still gets the lock once the holder (another process)
    lets go, and the AsyncLock works after."""
    holder = Holder(lockpath)
    fds = open_fds()

    async def main():
        lock = pidlock.AsyncLock(lockpath, timeout=30)
        first = asyncio.create_task(lock.acquire())
        await asyncio.sleep(0.05)
        queued = asyncio.create_task(lock.acquire())
        late = asyncio.create_task(lock.acquire(timeout=0.1))
        last = asyncio.create_task(lock.acquire())
        await asyncio.sleep(0.05)
        queued.cancel()
        with pytest.raises(asyncio.CancelledError):
            await queued
        with pytest.raises(pidlock.Busy) as exc:
            await late
        assert exc.value.errno == errno.ETIMEDOUT
        with pytest.raises(pidlock.Busy) as exc:
            await lock.acquire(timeout=0)
        assert exc.value.errno == errno.EWOULDBLOCK
        first.cancel()                  # it waits in the library
        with pytest.raises(asyncio.CancelledError):
            await first
        assert not last.done()
        holder.tell("release")
        await last
        assert lock.locked and pidlock.inspect(lockpath).pid == os.getpid()
        lock.release()
        await lock.acquire(timeout=0)
        lock.release()
        lock.close()

    try:
        asyncio.run(main())
        holder.expect("released")
        assert not open_fds() - fds     # no descriptor left open
        assert not os.path.exists(lockpath)
    finally:
        holder.close()


def test_close_ends_waiting_tasks(lockpath):
    """close() while one task waits in the library and another in the
    queue: both end with ValueError (the handle is gone), when the
    library's descriptor or the timer wakes them; nothing stays open."""
    holder = Holder(lockpath)
    fds = open_fds()

    async def main():
        lock = pidlock.AsyncLock(lockpath, timeout=30, retry_interval=0.1)
        waiting = asyncio.create_task(lock.acquire())
        queued = asyncio.create_task(lock.acquire())
        await asyncio.sleep(0.1)
        lock.close()
        for task in (waiting, queued):
            with pytest.raises(ValueError):
                await asyncio.wait_for(task, 20)

    try:
        asyncio.run(main())
        assert not open_fds() - fds
    finally:
        holder.close()
