# SPDX-License-Identifier: LGPL-2.1-or-later
"""Many tasks, each with its own asyncio lock on one path, in one loop
(issue 45, item 1): filelock's documented pattern.  No wait parks an
executor thread (an executor of one thread is enough for any number of
waiting tasks), and the waiting tasks share one kernel waiter: the
process holds at most one inotify instance for the path, not one per
task."""

from __future__ import annotations

import asyncio
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, List

import pytest

import pidlock
from helpers import Holder


# IN_EXCL_UNLINK: only the library's own instance (lib/opens.c), one
# per process, watches with it; the waits' instances do not.
EXCL_UNLINK = 0x04000000


def library_instance(name: str) -> bool:
    """Is descriptor name the library's per-process instance?"""
    try:
        with open("/proc/self/fdinfo/" + name) as f:
            for row in f:
                if row.startswith("inotify ") and "mask:" in row:
                    mask = int(row.split("mask:")[1].split()[0], 16)
                    if mask & EXCL_UNLINK:
                        return True
    except OSError:
        pass
    return False


def inotify_instances() -> int:
    """The inotify descriptors this process has open for its waits (the
    library's one per process, which reads opens at release, left out)."""
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + name) == "anon_inode:inotify" \
                    and not library_instance(name):
                count += 1
        except OSError:
            pass    # the listing's own descriptor, closed meanwhile
    return count


def one_per_task(kind: str, path: str,
                 executor: object = None) -> Callable[[], object]:
    if kind == "AsyncReadWriteLock":
        # All on the one executor given (of one thread, in the test).
        return lambda: pidlock.AsyncReadWriteLock(
            path, is_singleton=False, executor=executor).write_lock()
    if kind == "AsyncFileLock":
        return lambda: pidlock.AsyncFileLock(path)
    if kind == "AsyncFileLock-loop":
        return lambda: pidlock.AsyncFileLock(path, run_in_executor=False)
    return lambda: pidlock.AsyncLock(path)


async def gather_behind_a_holder(make: Callable[[], object], n: int,
                                 holder: Holder) -> List[int]:
    """n tasks, each with its own lock from make(), wait behind another
    process's hold; the most inotify instances seen while they wait."""
    inside = [0]
    seen = []

    async def one() -> None:
        async with make():      # type: ignore[attr-defined]
            inside[0] += 1
            assert inside[0] == 1
            await asyncio.sleep(0.0005)
            inside[0] -= 1

    tasks = [asyncio.create_task(one()) for _ in range(n)]
    for _ in range(20):         # all of them are waiting by now
        await asyncio.sleep(0.02)
        seen.append(inotify_instances())
    await asyncio.get_running_loop().run_in_executor(None, holder.release)
    # Run on: a lost wake-up would hang here, until pytest's timeout.
    done = 0
    for task in tasks:
        await asyncio.wait_for(task, 120)
        done += 1
    seen.append(inotify_instances())
    return [done, max(seen)]


@pytest.mark.parametrize("kind", ["AsyncFileLock", "AsyncFileLock-loop", "AsyncLock",
                                  "AsyncReadWriteLock"])
@pytest.mark.parametrize("n", [40, 1000])
def test_a_lock_per_task_behind_another_process(lockpath, kind, n):
    # An executor of one thread: a wait that parked it would stop every
    # other task's try and the holder's release.
    holder = Holder(lockpath)
    try:
        async def main() -> List[int]:
            executor = ThreadPoolExecutor(max_workers=1)
            asyncio.get_running_loop().set_default_executor(executor)
            return await gather_behind_a_holder(
                one_per_task(kind, lockpath, executor), n, holder)
        done, most = asyncio.run(main())
    finally:
        holder.close()
    assert done == n
    assert most <= 1, f"{most} inotify instances for one path"
    assert not os.path.exists(lockpath)


@pytest.mark.parametrize("n", [7, 40])
def test_filelocks_documented_pattern_on_the_default_executor(lockpath, n):
    # The program, with a timeout: every task gets the lock.
    async def one() -> None:
        async with pidlock.AsyncFileLock(lockpath, timeout=30):
            await asyncio.sleep(0.001)

    async def main() -> None:
        await asyncio.gather(*(one() for _ in range(n)))

    asyncio.run(main())
    assert not os.path.exists(lockpath)


def test_timed_out_and_cancelled_waiters_leave_the_line(lockpath):
    # A task at the head of the line times out, one behind it is
    # cancelled: the last still gets the lock once the holder lets go,
    # and nothing stays behind for the next loop.
    holder = Holder(lockpath)
    try:
        async def main() -> None:
            first = pidlock.AsyncFileLock(lockpath, timeout=0.2)
            second = pidlock.AsyncFileLock(lockpath)
            third = pidlock.AsyncFileLock(lockpath, timeout=10)
            t1 = asyncio.create_task(first.acquire())
            await asyncio.sleep(0.05)
            t2 = asyncio.create_task(second.acquire())
            t3 = asyncio.create_task(third.acquire())
            await asyncio.sleep(0.05)
            with pytest.raises(pidlock.Timeout):
                await t1
            t2.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t2
            assert inotify_instances() <= 1
            await asyncio.get_running_loop().run_in_executor(None, holder.release)
            await t3
            assert third.is_locked and not second.is_locked
            await third.release()
        asyncio.run(main())
    finally:
        holder.close()
    assert not os.path.exists(lockpath)


def test_cancel_check_of_a_task_in_line(lockpath):
    # A task behind another one in the line still asks its own
    # cancel_check, every poll_interval.
    holder = Holder(lockpath)
    asked = threading.Event()

    def stop_now() -> bool:
        asked.set()
        return True

    try:
        async def main() -> None:
            head = asyncio.create_task(pidlock.AsyncFileLock(lockpath).acquire())
            await asyncio.sleep(0.05)
            behind = pidlock.AsyncFileLock(lockpath, poll_interval=0.05)
            with pytest.raises(pidlock.Timeout):
                await asyncio.wait_for(behind.acquire(cancel_check=stop_now), 10)
            head.cancel()
            with pytest.raises(asyncio.CancelledError):
                await head
        asyncio.run(main())
    finally:
        holder.close()
    assert asked.is_set()
