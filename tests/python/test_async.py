# SPDX-License-Identifier: LGPL-2.1-or-later
"""pidlock.AsyncLock: waits in the event loop on the library's descriptor."""

from __future__ import annotations

import asyncio
import errno
import os
import signal

import pytest

import pidlock
from helpers import Holder


def open_fds() -> set:
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
