# SPDX-License-Identifier: LGPL-2.1-or-later
"""pidlock.AsyncFileLock's run_in_executor (issue 29): the take and the
letting go run in the executor (the one given, else the loop's), as
filelock's do; run_in_executor=False waits in the loop, with no thread;
a cancelled acquire leaves nothing held, even one whose thread took the
lock after the cancellation."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import pidlock
from helpers import Holder

PREFIX = "pidlock-test-executor"


class CountingExecutor(ThreadPoolExecutor):
    """A real thread pool that counts the calls handed to it."""

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix=PREFIX)
        self.calls = 0

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.calls += 1
        return super().submit(fn, *args, **kwargs)


def free_for_another_process(path: str) -> bool:
    """Whether another process takes the lock at its first try."""
    script = "import pidlock, sys; pidlock.Lock(sys.argv[1]).acquire(0)"
    return subprocess.run([sys.executable, "-c", script, path],
                          timeout=30).returncode == 0


def open_fds() -> set:
    gc.collect()
    return set(os.listdir("/proc/self/fd"))


def test_executor_takes_and_lets_go_in_its_thread(lockpath, caplog):
    caplog.set_level("DEBUG", logger="filelock")
    hooked = []

    async def main(executor: CountingExecutor) -> None:
        lock = pidlock.AsyncFileLock(
            lockpath, executor=executor,
            on_acquired=lambda fd: hooked.append(threading.current_thread().name))
        assert lock.run_in_executor and lock.executor is executor
        await lock.acquire()
        assert lock.is_locked and executor.calls == 1
        assert len(hooked) == 1 and hooked[0].startswith(PREFIX)
        async with lock:                 # a nested level only counts
            assert lock.lock_counter == 2
        assert lock.is_locked and executor.calls == 1
        await lock.release()
        assert not lock.is_locked and executor.calls == 2
        assert not os.path.exists(lockpath)

    with CountingExecutor() as executor:
        asyncio.run(main(executor))
    released = [r for r in caplog.records if "released" in r.getMessage()]
    assert released and all(r.threadName.startswith(PREFIX) for r in released)


def test_the_loops_default_executor_when_none_is_given(lockpath):
    async def main(executor: CountingExecutor) -> None:
        asyncio.get_running_loop().set_default_executor(executor)
        async with pidlock.AsyncFileLock(lockpath) as lock:
            assert lock.is_locked and executor.calls == 1
        assert executor.calls == 2

    executor = CountingExecutor()
    asyncio.run(main(executor))         # the loop shuts it down


def test_without_executor_no_thread_is_used(lockpath):
    hooked = []
    holder = Holder(lockpath)

    async def main(executor: CountingExecutor) -> None:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(executor)
        lock = pidlock.AsyncFileLock(
            lockpath, run_in_executor=False, executor=executor,
            on_acquired=lambda fd: hooked.append(threading.get_ident()))
        loop.call_later(0.2, holder.release)
        async with lock:                 # waits in the loop for the holder
            assert lock.is_locked
        assert executor.calls == 0
        assert hooked == [threading.get_ident()]

    try:
        executor = CountingExecutor()
        asyncio.run(main(executor))
    finally:
        holder.close()


def test_cancelled_executor_acquire_leaves_nothing(lockpath):
    holder = Holder(lockpath)
    # A cancelled acquire ends the thread's wait at once: it does not
    # wait for this release, which comes much later.
    late = threading.Timer(5.0, holder.release)

    async def main(executor: ThreadPoolExecutor) -> float:
        lock = pidlock.AsyncFileLock(lockpath, executor=executor)
        task = asyncio.create_task(lock.acquire())
        await asyncio.sleep(0.3)
        assert lock.lock_counter == 1 and not lock.is_locked
        start = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        elapsed = time.monotonic() - start
        assert not lock.is_locked and lock.lock_counter == 0
        return elapsed

    try:
        fds = open_fds()
        late.start()
        with ThreadPoolExecutor(max_workers=1) as executor:
            assert asyncio.run(main(executor)) < 2.0
        assert open_fds() == fds        # no pipe, no descriptor left
    finally:
        late.join()
        holder.close()
    assert free_for_another_process(lockpath)


def test_cancelled_acquire_whose_thread_took_lets_go(lockpath):
    # The executor is busy when the acquire is cancelled; its thread then
    # takes the (free) lock, as filelock's attempt does, and the
    # cancelled acquire lets go of it before its CancelledError.
    hooked = threading.Event()
    go_on = threading.Event()

    async def main(executor: ThreadPoolExecutor) -> pidlock.AsyncFileLock:
        lock = pidlock.AsyncFileLock(lockpath, executor=executor,
                                     on_acquired=lambda fd: hooked.set())
        task = asyncio.create_task(lock.acquire())
        await asyncio.sleep(0.1)
        task.cancel()
        go_on.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not lock.is_locked and lock.lock_counter == 0
        return lock

    with ThreadPoolExecutor(max_workers=1) as executor:
        busy = executor.submit(go_on.wait, 30)
        # Kept alive: its finalizer would let go of a leaked hold.
        lock = asyncio.run(main(executor))
        assert busy.result()
    assert hooked.is_set()
    assert free_for_another_process(lockpath)
    assert not os.path.exists(lockpath)
    del lock
