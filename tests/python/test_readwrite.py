# SPDX-License-Identifier: LGPL-2.1-or-later
"""ReadWriteLock on pidlock's shared locks: readers together, a writer
alone, across processes; filelock's reentrancy, singleton and fork
rules."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import textwrap

import pytest

import pidlock
from pidlock import ReadWriteLock, Timeout
from test_fork import in_child

OTHER = """
import sys, pidlock
lock = pidlock.ReadWriteLock(sys.argv[1])
take = lock.acquire_read if sys.argv[2] == "read" else lock.acquire_write
try:
    take(timeout=0)
    print("got")
except pidlock.Timeout:
    print("busy")
"""


def other_process(path: str, mode: str) -> str:
    return subprocess.run([sys.executable, "-c", OTHER, path, mode], check=True,
                          capture_output=True, text=True).stdout.strip()


def test_readers_share_and_exclude_writers(lockpath):
    lock = ReadWriteLock(lockpath)
    with lock.read_lock():
        assert other_process(lockpath, "read") == "got"
        assert other_process(lockpath, "write") == "busy"
    with lock.write_lock():
        assert other_process(lockpath, "read") == "busy"
        assert other_process(lockpath, "write") == "busy"
    assert other_process(lockpath, "write") == "got"
    assert not os.path.exists(lockpath)


def test_reentrancy_rules(lockpath):
    lock = ReadWriteLock(lockpath, is_singleton=False)
    with lock.acquire_read():
        with lock.acquire_read():
            pass
        with pytest.raises(RuntimeError, match="upgrade"):
            lock.acquire_write()
    with pytest.raises(RuntimeError, match="not held"):
        lock.release()
    lock.acquire_write()
    lock.acquire_write()
    with pytest.raises(RuntimeError, match="downgrade"):
        lock.acquire_read()
    seen = []
    t = threading.Thread(target=lambda: seen.append(
        pytest.raises(RuntimeError, lock.acquire_write)))
    t.start()
    t.join()
    assert len(seen) == 1
    lock.release(force=True)
    assert other_process(lockpath, "write") == "got"
    lock.close()
    with pytest.raises(RuntimeError):
        lock.acquire_read()


def test_state_under_filelocks_names(lockpath):
    # Code written for filelock's ReadWriteLock reads its hold's state:
    # the level, the mode, the writing thread.
    lock = ReadWriteLock(lockpath, is_singleton=False)
    assert (lock._lock_level, lock._current_mode, lock._write_thread_id) == (0, None, None)
    with lock.read_lock():
        with lock.read_lock():
            assert (lock._lock_level, lock._current_mode) == (2, "read")
        assert lock._lock_level == 1 and lock._write_thread_id is None
    assert (lock._lock_level, lock._current_mode) == (0, None)
    lock.acquire_write()
    lock.acquire_write()
    assert (lock._lock_level, lock._current_mode) == (2, "write")
    assert lock._write_thread_id == threading.get_ident()
    lock.release(force=True)
    assert (lock._lock_level, lock._current_mode, lock._write_thread_id) == (0, None, None)


READER_LOOP = """
import os, random, sys, time, pidlock
lock = pidlock.ReadWriteLock(sys.argv[1], is_singleton=False)
print("ready", flush=True)
while not os.path.exists(sys.argv[2]):
    with lock.read_lock():
        time.sleep(random.uniform(0.03, 0.08))
"""


def test_timed_writer_among_overlapping_readers(lockpath, tmp_path):
    """A writer with a timeout is not kept out by readers whose holds
    overlap all the time: its wait is seen through its stand-in in the
    kernel (doc/protocol.md, "A timed writer's stand-in")."""
    stop = str(tmp_path / "stop")
    readers = []
    try:
        for _ in range(4):
            reader = subprocess.Popen([sys.executable, "-c", READER_LOOP, lockpath, stop],
                                      stdout=subprocess.PIPE, text=True)
            readers.append(reader)
            assert reader.stdout.readline().strip() == "ready"
            time.sleep(0.02)
        time.sleep(0.3)
        writer = ReadWriteLock(lockpath, is_singleton=False)
        start = time.monotonic()
        with writer.write_lock(timeout=5):
            waited = time.monotonic() - start
        assert waited < 5
    finally:
        open(stop, "w").close()
        for reader in readers:
            assert reader.wait(timeout=30) == 0


def test_second_instance_times_out(lockpath):
    writer = ReadWriteLock(lockpath, is_singleton=False)
    other = ReadWriteLock(lockpath, is_singleton=False)
    with writer.write_lock():
        with pytest.raises(Timeout):
            other.acquire_read(timeout=0.05)
        with pytest.raises(Timeout):
            other.acquire_write(blocking=False)
    with other.read_lock(), writer.read_lock():
        pass


def test_singletons(lockpath, tmp_path):
    a = ReadWriteLock(lockpath)
    assert ReadWriteLock(str(tmp_path / "." / "a.lock")) is a
    assert ReadWriteLock.get_lock(lockpath) is a
    with pytest.raises(ValueError):
        ReadWriteLock(lockpath, timeout=3)
    assert ReadWriteLock(lockpath, is_singleton=False) is not a


def test_fork_child_sees_nothing_held(lockpath):
    lock = ReadWriteLock(lockpath)
    lock.acquire_write()

    def child():
        with pytest.raises(RuntimeError, match="fork"):
            lock.acquire_read()
        lock.release()
        lock.close()
        fresh = ReadWriteLock(lockpath)
        assert fresh is not lock
        with pytest.raises(Timeout):
            fresh.acquire_read(blocking=False)

    assert in_child(child) == 0
    assert other_process(lockpath, "read") == "busy"
    lock.release()
    assert other_process(lockpath, "read") == "got"


def test_async_read_write(lockpath):
    import asyncio

    async def main():
        lock = pidlock.AsyncReadWriteLock(lockpath, is_singleton=False)
        async with lock.read_lock():
            assert other_process(lockpath, "read") == "got"
            assert other_process(lockpath, "write") == "busy"
        async with await lock.acquire_write():
            async with await lock.acquire_write():
                pass
            with pytest.raises(RuntimeError, match="downgrade"):
                await lock.acquire_read()
            assert other_process(lockpath, "read") == "busy"
        assert other_process(lockpath, "write") == "got"
        await lock.close()

    asyncio.run(main())


def test_async_cancelled_acquire_leaves_nothing(lockpath):
    import asyncio

    async def main():
        holder = ReadWriteLock(lockpath, is_singleton=False)
        holder.acquire_write()
        lock = pidlock.AsyncReadWriteLock(lockpath, is_singleton=False)
        task = asyncio.create_task(lock.acquire_read(timeout=5))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The executor's wait was ended by the cancellation: nothing is
        # taken once the holder lets go.
        holder.release()
        for _ in range(100):
            await asyncio.sleep(0.02)
            if other_process(lockpath, "write") == "got":
                break
        assert other_process(lockpath, "write") == "got"
        await lock.close()

    asyncio.run(main())


def test_async_close_twice_and_its_executor(lockpath):
    import asyncio
    import gc
    from concurrent.futures import ThreadPoolExecutor

    async def main():
        lock = pidlock.AsyncReadWriteLock(lockpath, is_singleton=False)
        own = lock.executor
        await lock.close()
        await lock.close()          # nothing more to do, and no error
        with pytest.raises(RuntimeError):
            own.submit(int)         # its own executor is shut down
        given = ThreadPoolExecutor(max_workers=1)
        other = pidlock.AsyncReadWriteLock(lockpath, is_singleton=False,
                                           executor=given)
        await other.close()
        assert given.submit(int).result(timeout=5) == 0
        given.shutdown()

    asyncio.run(main())
    # A lock nobody can reach any more shuts its own executor down.
    lock = pidlock.AsyncReadWriteLock(lockpath, is_singleton=False)
    own = lock.executor
    del lock
    gc.collect()
    with pytest.raises(RuntimeError):
        own.submit(int)


def test_relative_path_is_fixed_when_made(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    monkeypatch.chdir(first)
    lock = ReadWriteLock("rw.lock", is_singleton=False)
    monkeypatch.chdir(second)
    with lock.write_lock():
        # The lock is the one in the directory it was made in.
        assert other_process(str(first / "rw.lock"), "read") == "busy"
        assert other_process(str(second / "rw.lock"), "read") == "got"
    assert lock.lock_file == "rw.lock"


ASYNC_FORK = textwrap.dedent("""
    import asyncio, os, sys
    import pidlock

    path = sys.argv[1]

    async def parent():
        lock = pidlock.AsyncReadWriteLock(path, is_singleton=False)
        return lock, await lock.acquire_write()

    lock, proxy = asyncio.run(parent())
    pid = os.fork()
    if pid == 0:
        async def child():
            async with proxy:      # the parent's hold: nothing to let go
                pass
            try:
                await lock.acquire_read()
            except RuntimeError as error:
                assert "was invalidated by fork()" in str(error), error
            else:
                raise AssertionError("an inherited lock was taken")
            await lock.release()
            await lock.close()
        asyncio.run(child())
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, status
    asyncio.run(lock.release())
    print("ok")
""")


def test_async_read_write_in_a_forked_child(lockpath):
    # The child's release and close must not call the inherited
    # executor, whose thread is not in the child: they waited for ever.
    proc = subprocess.run([sys.executable, "-c", ASYNC_FORK, lockpath],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
    assert other_process(lockpath, "write") == "got"
