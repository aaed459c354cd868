# SPDX-License-Identifier: LGPL-2.1-or-later
"""filelock's public behaviour that pidlock's classes lacked (issue 37):
an on_acquired error that a cancellation raced still reaches the
caller; an AsyncFileLock acquire queued behind another task's keeps to
its own cancel_check; an AsyncReadWriteLock acquire that the caller
cancelled, and whose executor call the executor then cancelled, keeps
the caller's cancellation as the __context__ (and a cancelled one ends
its executor thread's wait, letting go of what it took); a FileLock
taken in an at-fork callback registered before pidlock's import is not
held (nor counted, nor a singleton) in the child.  Real tasks, threads and
processes; no mocks."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import pidlock
from helpers import Holder


def free_for_another_process(path: str) -> bool:
    """Whether another process takes the lock at its first try."""
    script = "import pidlock, sys; pidlock.Lock(sys.argv[1]).acquire(0)"
    return subprocess.run([sys.executable, "-c", script, path],
                          timeout=30).returncode == 0


async def cancel_during_hook(path: str, policy: str,
                             error: BaseException) -> BaseException:
    """An executor acquire whose on_acquired is cancelled while it runs
    and then raises error: what the acquire raised."""
    loop = asyncio.get_running_loop()
    in_hook = asyncio.Event()
    go_on = threading.Event()

    def hook(fd: int) -> None:
        loop.call_soon_threadsafe(in_hook.set)
        assert go_on.wait(10)
        raise error

    lock = pidlock.AsyncFileLock(path, context_error_policy=policy,
                                 on_acquired=hook)
    task = asyncio.create_task(lock.acquire())
    await in_hook.wait()
    task.cancel("stop")
    go_on.set()
    with pytest.raises(BaseException) as info:
        await task
    assert (lock.is_locked, lock.lock_counter) == (False, 0)
    return info.value


def test_cancelled_acquire_chains_the_hook_error(lockpath):
    earlier = LookupError("earlier")
    error = ValueError("hook failed")
    error.__context__ = earlier
    raised = asyncio.run(cancel_during_hook(lockpath, "chain", error))
    assert raised is error
    cancelled = error.__context__
    assert isinstance(cancelled, asyncio.CancelledError)
    assert cancelled.args == ("stop",)
    # The error's own context is not lost: it moved behind the
    # cancellation.
    assert cancelled.__context__ is earlier
    assert free_for_another_process(lockpath)


def test_cancelled_acquire_groups_the_hook_error(lockpath):
    earlier = LookupError("earlier")
    error = ValueError("hook failed")
    error.__context__ = earlier
    raised = asyncio.run(cancel_during_hook(lockpath, "group", error))
    assert isinstance(raised, BaseExceptionGroup)
    cancelled, grouped = raised.exceptions
    assert isinstance(cancelled, asyncio.CancelledError)
    assert grouped is error and error.__context__ is earlier
    assert raised.__suppress_context__ and raised.__cause__ is None
    assert free_for_another_process(lockpath)


@pytest.mark.parametrize("context_message,kept",
                         [("another", True), ("attempt", False)])
def test_group_drops_a_context_that_repeats_the_hook_error(lockpath,
                                                           context_message,
                                                           kept):
    # A group of the same message and members is a copy of the error
    # (except* makes them): printing it again as the context adds nothing.
    leaf = LookupError("leaf")
    error = ExceptionGroup("attempt", [leaf])
    earlier = ExceptionGroup(context_message, [leaf])
    error.__context__ = earlier
    raised = asyncio.run(cancel_during_hook(lockpath, "group", error))
    assert raised.exceptions[1] is error
    assert error.__context__ is (earlier if kept else None)


def test_queued_acquire_asks_its_own_cancel_check(lockpath):
    holder = Holder(lockpath)

    async def main() -> None:
        lock = pidlock.AsyncFileLock(lockpath)
        first_asked = asyncio.Event()

        def first_check() -> bool:
            first_asked.set()
            return False

        first = asyncio.create_task(
            lock.acquire(cancel_check=first_check, poll_interval=0.01))
        await first_asked.wait()   # the first waits in the executor
        give_up = asyncio.Event()
        second = asyncio.create_task(
            lock.acquire(cancel_check=give_up.is_set, poll_interval=0.01))
        await asyncio.sleep(0.1)
        assert not second.done()
        give_up.set()
        with pytest.raises(pidlock.Timeout):
            await asyncio.wait_for(second, 5)
        assert not first.done()
        await asyncio.to_thread(holder.release)
        await asyncio.wait_for(first, 10)
        assert lock.lock_counter == 1
        await lock.release()

    try:
        asyncio.run(main())
    finally:
        holder.close()
    assert free_for_another_process(lockpath)


def test_executor_cancelled_read_write_acquire_keeps_the_callers(lockpath):
    async def main() -> None:
        busy, go_on = threading.Event(), threading.Event()
        executor = ThreadPoolExecutor(max_workers=1)
        # The executor's only thread is busy: the acquire waits queued.
        blocker = executor.submit(lambda: (busy.set(), go_on.wait(10)))
        assert busy.wait(10)
        lock = pidlock.AsyncReadWriteLock(lockpath, is_singleton=False,
                                          executor=executor)
        task = asyncio.create_task(lock.acquire_write())
        await asyncio.sleep(0)
        task.cancel("caller")
        await asyncio.sleep(0)
        executor.shutdown(wait=False, cancel_futures=True)
        go_on.set()
        blocker.result(10)
        with pytest.raises(asyncio.CancelledError) as info:
            await task
        assert isinstance(info.value.__context__, asyncio.CancelledError)
        assert info.value.__context__.args == ("caller",)

    asyncio.run(main())
    assert free_for_another_process(lockpath)


def test_cancelled_read_write_wait_ends_and_holds_nothing(lockpath):
    # The executor's wait for a held lock is ended by the cancellation,
    # and the CancelledError comes once it has: the executor is free.
    holder = Holder(lockpath)

    async def main() -> None:
        executor = ThreadPoolExecutor(max_workers=1)
        lock = pidlock.AsyncReadWriteLock(lockpath, is_singleton=False,
                                          executor=executor)
        task = asyncio.create_task(lock.acquire_write())
        await asyncio.sleep(0.2)
        task.cancel()
        try:
            await asyncio.wait({task}, timeout=5)
            assert task.done()
            with pytest.raises(asyncio.CancelledError):
                task.result()
            # The thread is done with the wait: its next call runs at once.
            assert executor.submit(lambda: 1).result(1) == 1
        finally:
            # Else a thread still waiting would hang the test's end.
            await asyncio.to_thread(holder.release)
            executor.shutdown()

    try:
        asyncio.run(main())
    finally:
        holder.close()
    assert free_for_another_process(lockpath)


class GatedExecutor(ThreadPoolExecutor):
    """One thread; a call after which the lock file is there (the call
    that took the lock), once done, waits for gate before it returns:
    the test cancels the caller between the two."""

    def __init__(self, path: str) -> None:
        super().__init__(max_workers=1)
        self.path = path
        self.gate = threading.Event()
        self.done = threading.Event()

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
        def gated():  # type: ignore[no-untyped-def]
            try:
                return fn(*args, **kwargs)
            finally:
                if os.path.exists(self.path):
                    self.done.set()
                    self.gate.wait(10)
        return super().submit(gated)


def test_cancelled_read_write_acquire_lets_go_what_its_call_took(lockpath):
    # The executor's call took the (free) lock before the cancellation
    # could end its wait: the CancelledError comes once that hold is let
    # go, in the executor.
    async def main() -> None:
        executor = GatedExecutor(lockpath)
        lock = pidlock.AsyncReadWriteLock(lockpath, is_singleton=False,
                                          executor=executor)
        task = asyncio.create_task(lock.acquire_write())
        assert await asyncio.to_thread(executor.done.wait, 10)
        task.cancel()
        await asyncio.sleep(0.05)
        executor.gate.set()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)
        assert free_for_another_process(lockpath)
        executor.shutdown()

    asyncio.run(main())


FORK_SCRIPT = textwrap.dedent("""
    import os, sys
    taken = None
    seen = None

    def before():
        global taken
        taken = FileLock(sys.argv[2], is_singleton=True)
        taken.acquire()

    def in_parent():
        taken.release()

    def in_child():
        global seen
        again = FileLock(sys.argv[1], is_singleton=True)
        seen = (taken.is_locked, taken.lock_counter, again is singleton)

    # Before pidlock's own at-fork callback: these run first in the child.
    os.register_at_fork(before=before, after_in_parent=in_parent,
                        after_in_child=in_child)
    from pidlock import FileLock
    singleton = FileLock(sys.argv[1], is_singleton=True)
    pid = os.fork()
    if pid == 0:
        print(seen, flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
    print(taken.is_locked, taken.lock_counter, flush=True)
    """)


def test_lock_taken_in_an_earlier_fork_callback_is_not_the_childs(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", FORK_SCRIPT, str(tmp_path / "singleton"),
         str(tmp_path / "taken")],
        capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    child, parent = out.stdout.splitlines()
    assert child == "(False, 0, False)"
    assert parent == "False 0"
