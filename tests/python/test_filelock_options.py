# SPDX-License-Identifier: LGPL-2.1-or-later
"""pidlock.FileLock's options of filelock 3.32 and pidlock.AsyncFileLock
(issue 29): what each does on a pidlock lock, checked here as ours."""

from __future__ import annotations

import asyncio
import os
import pickle
import stat
import threading
import time
import warnings

import pytest

import pidlock
from pidlock import AsyncFileLock, FileLock, Timeout


def test_lifetime_is_validated_then_ignored_with_a_warning(lockpath):
    with pytest.warns(UserWarning, match="lifetime is ignored"):
        lock = FileLock(lockpath, lifetime=5)
    assert lock.lifetime is None
    for bad, exc in ((-1, ValueError), (float("inf"), ValueError),
                     ("5", TypeError), (True, TypeError)):
        with pytest.raises(exc):
            FileLock(lockpath, lifetime=bad)
        with pytest.raises(exc):
            lock.lifetime = bad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lock.lifetime = None            # None is no request: no warning


def test_policies_are_checked(lockpath):
    with pytest.raises(ValueError, match="context_error_policy"):
        FileLock(lockpath, context_error_policy="both")
    with pytest.raises(ValueError, match="close_error_policy"):
        FileLock(lockpath, close_error_policy="maybe")
    lock = FileLock(lockpath, context_error_policy="group",
                    close_error_policy="raise")
    assert (lock.context_error_policy, lock.close_error_policy) == ("group", "raise")


def test_group_policy_reports_the_body_and_the_release(lockpath):
    lock = FileLock(lockpath, context_error_policy="group")
    with pytest.raises(BaseExceptionGroup) as info:
        with lock:
            # Another file at the path: our release refuses to remove it
            # (BrokenLock), the stricter rule that stays.
            os.unlink(lockpath)
            raise KeyError("body")
    kinds = [type(e) for e in info.value.exceptions]
    assert kinds == [KeyError, pidlock.BrokenLock]
    assert not lock.is_locked


def test_preserve_lock_file_keeps_the_path(lockpath):
    with FileLock(lockpath, preserve_lock_file=True) as lock:
        assert lock.preserve_lock_file
    assert os.path.exists(lockpath)
    other = lockpath + ".2"
    with FileLock(other):
        pass
    assert not os.path.exists(other)   # ours removes it by default


def test_on_acquired_gets_the_descriptor_once(lockpath):
    seen = []
    lock = FileLock(lockpath, on_acquired=seen.append)
    with lock:
        with lock:
            pass
        assert len(seen) == 1
        assert os.fstat(seen[0]).st_ino == os.stat(lockpath).st_ino


def test_a_failing_on_acquired_lets_go(lockpath):
    def hook(fd: int) -> None:
        raise RuntimeError("hook")

    lock = FileLock(lockpath, on_acquired=hook)
    with pytest.raises(RuntimeError, match="hook"):
        lock.acquire()
    assert not lock.is_locked and lock.lock_counter == 0
    with FileLock(lockpath, timeout=0):
        pass


def test_cancel_check_ends_a_wait(lockpath):
    # Held by a pidlock.Lock: a FileLock's hold of this thread would make
    # the wait a deadlock (RuntimeError, test_filelock_fork.py).
    with pidlock.Lock(lockpath):
        other = FileLock(lockpath)
        calls = []

        def cancel() -> bool:
            calls.append(1)
            return len(calls) > 3

        start = time.monotonic()
        with pytest.raises(Timeout):
            other.acquire(cancel_check=cancel, poll_interval=0.01)
        assert time.monotonic() - start < 5 and len(calls) == 4
        assert not other.is_locked


def test_mode_unset_leaves_it_to_the_umask(lockpath):
    old = os.umask(0o027)
    try:
        lock = FileLock(lockpath)
        assert not lock.has_explicit_mode and lock.mode == 0o644
        with lock:
            assert stat.S_IMODE(os.stat(lockpath).st_mode) == 0o640   # 0o666 & ~0o027
        assert FileLock(lockpath, mode=0o600).has_explicit_mode
    finally:
        os.umask(old)


def test_timeout_pickles(lockpath):
    again = pickle.loads(pickle.dumps(Timeout(lockpath)))
    assert isinstance(again, Timeout) and again.lock_file == lockpath


def test_singletons_through_a_symlinked_parent(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    a = FileLock(str(real / "a.lock"), is_singleton=True)
    assert FileLock(str(tmp_path / "link" / "a.lock"), is_singleton=True) is a
    with pytest.raises(ValueError, match="differing arguments"):
        FileLock(str(real / "a.lock"), is_singleton=True,
                 context_error_policy="group")


def test_async_filelock_nests_and_lets_go(lockpath):
    async def main() -> None:
        lock = AsyncFileLock(lockpath)
        assert isinstance(lock, pidlock.BaseFileLock)
        async with lock:
            async with await lock.acquire():
                assert lock.lock_counter == 2
            assert lock.is_locked
        assert not lock.is_locked and not os.path.exists(lockpath)
        with pytest.raises(NotImplementedError):
            with lock:
                pass

    asyncio.run(main())


def test_async_filelock_times_out_without_blocking_the_loop(lockpath):
    async def main() -> None:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        ticker = asyncio.create_task(tick())
        with FileLock(lockpath):
            with pytest.raises(Timeout):
                await AsyncFileLock(lockpath, timeout=0.3).acquire()
        ticker.cancel()
        # A loop blocked by the wait would not run the ticker at all
        # before the Timeout; how often it ran depends on the load.
        assert ticks >= 2, f"{ticks} ticks during the 0.3 s wait"

    asyncio.run(main())


def test_cancelled_async_acquire_leaves_nothing(lockpath):
    holder = FileLock(lockpath, thread_local=False)
    holder.acquire()
    # A bound: a cancellation that waited for the holder (what this
    # test catches) waits for this late release, not for ever, and the
    # suite goes on (a mutation run counts a hung suite as not caught).
    late = threading.Timer(10.0, holder.release)

    async def main() -> None:
        lock = AsyncFileLock(lockpath)
        task = asyncio.create_task(lock.acquire())
        await asyncio.sleep(0.1)
        start = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert time.monotonic() - start < 5.0
        assert not lock.is_locked and lock.lock_counter == 0
        late.cancel()
        holder.release()
        async with lock:                 # the handle is usable again
            assert lock.is_locked
        assert not os.path.exists(lockpath)

    late.start()
    try:
        asyncio.run(main())
    finally:
        late.cancel()
        late.join()


def test_async_thread_local_with_executor_is_refused(lockpath):
    with pytest.raises(ValueError, match="run_in_executor"):
        AsyncFileLock(lockpath, thread_local=True)
    AsyncFileLock(lockpath, thread_local=True, run_in_executor=False)


def test_two_tasks_share_one_async_hold(lockpath):
    async def main() -> None:
        lock = AsyncFileLock(lockpath)
        held = threading.Event()

        async def one() -> None:
            async with lock:
                held.set()
                await asyncio.sleep(0.05)

        await asyncio.gather(one(), one())
        assert not lock.is_locked and held.is_set()

    asyncio.run(main())


def test_cancel_check_is_not_asked_for_a_free_lock(lockpath):
    # A free lock is taken by a first try; cancel_check answers only for
    # a wait (a True here would have ended the acquire with Timeout).
    lock = FileLock(lockpath)
    asked = []
    lock.acquire(cancel_check=lambda: asked.append(1) or True)
    try:
        assert lock.is_locked and asked == []
    finally:
        lock.release()

    async def main(in_executor: bool) -> None:
        alock = AsyncFileLock(lockpath, run_in_executor=in_executor)
        await alock.acquire(cancel_check=lambda: asked.append(1) or True)
        assert alock.is_locked and asked == []
        await alock.release()

    asyncio.run(main(True))
    asyncio.run(main(False))


def test_cancel_check_records_the_cancellation(lockpath, caplog):
    caplog.set_level("DEBUG", logger="filelock")
    with pidlock.Lock(lockpath):
        with pytest.raises(Timeout):
            FileLock(lockpath).acquire(timeout=5, cancel_check=lambda: True)
    assert any(r.getMessage().startswith("Cancellation requested for lock")
               for r in caplog.records)


def test_singleton_names_the_differing_option(lockpath):
    first = FileLock(lockpath, is_singleton=True, close_error_policy="raise")
    for option, value in (("close_error_policy", "suppress"),
                          ("fallback_to_soft", False),
                          ("on_acquired", print),
                          ("preserve_lock_file", True)):
        with pytest.raises(ValueError, match=f"differing arguments: .*{option}"):
            FileLock(lockpath, is_singleton=True,
                     **{"close_error_policy": "raise", option: value})
    assert FileLock(lockpath, is_singleton=True, close_error_policy="raise") is first


def test_mode_minus_one_is_unset(lockpath):
    # filelock's "no mode given" is -1, which code forwarding the
    # defaults passes on: the umask decides, as with no mode at all.
    old = os.umask(0o027)
    try:
        lock = FileLock(lockpath, mode=-1)
        assert not lock.has_explicit_mode and lock.mode == 0o644
        with lock:
            assert stat.S_IMODE(os.stat(lockpath).st_mode) == 0o640
        one = FileLock(lockpath, mode=-1, is_singleton=True)
        assert FileLock(lockpath, is_singleton=True) is one
    finally:
        os.umask(old)


class _PathOnly(FileLock):
    """A subclass whose constructor takes the path alone."""

    def __init__(self, lock_file: str) -> None:
        super().__init__(lock_file)


class _AsyncPathOnly(AsyncFileLock):
    def __init__(self, lock_file: str) -> None:
        super().__init__(lock_file)


def test_narrow_subclass_takes_the_options_at_their_defaults(lockpath):
    lock = _PathOnly(lockpath, timeout=-1, mode=-1, thread_local=True,
                     blocking=True, is_singleton=False, poll_interval=0.05,
                     lifetime=None, context_error_policy="chain",
                     close_error_policy="default", fallback_to_soft=True,
                     preserve_lock_file=False, on_acquired=None)
    with lock:
        assert lock.is_locked and lock.lock_file == lockpath
    alock = _AsyncPathOnly(lockpath, thread_local=False, loop=None,
                           run_in_executor=True, executor=None, timeout=-1)
    assert alock.lock_file == lockpath
    # Any other value is the subclass's to refuse, by the option's name.
    for option, value in (("timeout", 1), ("thread_local", False),
                          ("blocking", 0), ("mode", 0o600)):
        with pytest.raises(TypeError, match=option):
            _PathOnly(lockpath, **{option: value})
    with pytest.raises(TypeError, match="run_in_executor"):
        _AsyncPathOnly(lockpath, run_in_executor=False)


def test_subclass_singleton_is_made_once(lockpath):
    made = []

    class Counting(FileLock):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    first = Counting(lockpath, is_singleton=True)
    assert Counting(lockpath, is_singleton=True) is first
    assert made == [first]


def test_settings_are_per_thread_with_thread_local(lockpath):
    def seen_from_another_thread(lock):
        got = []
        t = threading.Thread(
            target=lambda: got.append((lock.timeout, lock.blocking, lock.poll_interval)))
        t.start()
        t.join()
        return got[0]

    own = FileLock(lockpath, timeout=3, poll_interval=0.05)
    own.timeout, own.blocking, own.poll_interval = 7, False, 0.5
    assert (own.timeout, own.blocking, own.poll_interval) == (7, False, 0.5)
    assert seen_from_another_thread(own) == (3, True, 0.05)
    shared = FileLock(lockpath, timeout=3, thread_local=False)
    shared.timeout, shared.blocking, shared.poll_interval = 7, False, 0.5
    assert seen_from_another_thread(shared) == (7, False, 0.5)


def test_singleton_refuses_another_poll_interval(lockpath):
    first = FileLock(lockpath, is_singleton=True)
    with pytest.raises(ValueError, match="differing arguments: .*poll_interval"):
        FileLock(lockpath, is_singleton=True, poll_interval=0.1)
    assert FileLock(lockpath, is_singleton=True, poll_interval=0.05) is first


def test_a_wait_is_recorded_once(lockpath, caplog):
    # A free lock: no record of a wait.  A held one: one record as the
    # wait begins (it wakes on the release, so there is no poll to log).
    caplog.set_level("DEBUG", logger="filelock")

    def waits() -> int:
        return sum("not acquired" in r.getMessage() and "waiting" in r.getMessage()
                   for r in caplog.records)

    with FileLock(lockpath, timeout=1):
        pass
    assert waits() == 0
    with pidlock.Lock(lockpath):
        with pytest.raises(Timeout):
            FileLock(lockpath).acquire(timeout=0.3)
        assert waits() == 1
        with pytest.raises(Timeout):
            FileLock(lockpath).acquire(timeout=0)    # no wait, no record
        assert waits() == 1

        async def main(in_executor: bool) -> None:
            with pytest.raises(Timeout):
                await AsyncFileLock(lockpath, timeout=0.3,
                                    run_in_executor=in_executor).acquire()

        asyncio.run(main(True))          # the wait in the executor's thread
        assert waits() == 2
        asyncio.run(main(False))         # the wait in the loop
        assert waits() == 3
