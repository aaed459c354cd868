# SPDX-License-Identifier: LGPL-2.1-or-later
"""pidlock.AsyncFileLock: filelock's AsyncFileLock over pidlock locks.

The wait is the library's own asynchronous one (pidlock_acquire_async(3),
as pidlock.AsyncLock waits): the loop watches a descriptor, no thread
and no executor wait in the library.  loop, run_in_executor and executor
are accepted for filelock's sake; nothing runs in an executor."""

from __future__ import annotations

import asyncio
import os
import time
from types import TracebackType
from typing import Any, Callable, Optional, Type

from . import _filelock as _fl, _lib, _log
from ._async import take_async
from ._errors import Busy, Timeout
from ._filelock import FileLock, _Context, _let_go_uncounted, _raise_both
from ._lock import Lock, timeout_ms


class AsyncAcquireReturnProxy:
    """What AsyncFileLock.acquire() returns: ``async with await
    lock.acquire():`` releases once."""

    def __init__(self, lock: "BaseAsyncFileLock") -> None:
        self.lock = lock

    async def __aenter__(self) -> "BaseAsyncFileLock":
        return self.lock

    async def __aexit__(self, exc_type: Optional[Type[BaseException]],
                        exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        await self.lock.release()


class BaseAsyncFileLock(FileLock):
    """FileLock for asyncio: ``async with AsyncFileLock(path): ...``.

    The arguments are FileLock's, thread_local defaults to False (the
    tasks of one loop share the hold and its count, as with filelock),
    and loop, run_in_executor, executor are accepted (thread_local with
    run_in_executor is refused with ValueError, as filelock does).
    acquire() and release() are coroutines; a cancelled or interrupted
    acquire() leaves nothing held and no wait under way.  The deadlock
    rule is per task: a task that waits without a limit for another
    object's hold of the same task raises RuntimeError."""

    _holder_kind = "AsyncFileLock instance in this task"

    def _deadlock_key(self) -> Any:
        return (id(asyncio.current_task()), _fl._canonical(self._lock_file))

    def __new__(cls, lock_file: Any, timeout: float = -1,
                mode: Optional[int] = None, thread_local: bool = False,
                *args: Any, **kwargs: Any) -> "BaseAsyncFileLock":
        if thread_local and kwargs.get("run_in_executor", True):
            raise ValueError("run_in_executor is not supported when "
                             "thread_local is True")
        return super().__new__(cls, lock_file, timeout, mode, thread_local,
                               *args, **kwargs)

    def __init__(self, lock_file: Any, timeout: float = -1,
                 mode: Optional[int] = None, thread_local: bool = False, *,
                 loop: Optional[asyncio.AbstractEventLoop] = None,
                 run_in_executor: bool = True, executor: Any = None,
                 **kwargs: Any) -> None:
        if getattr(self, "_ready", False):
            return
        super().__init__(lock_file, timeout, mode, thread_local, **kwargs)
        self._loop = loop
        self._run_in_executor = run_in_executor
        self._executor = executor
        # One task at a time takes the kernel lock for this object;
        # others that find it being taken wait for that to end.
        self._taking: "Optional[asyncio.Future[None]]" = None

    @property
    def loop(self) -> Optional[asyncio.AbstractEventLoop]:
        return self._loop

    @property
    def run_in_executor(self) -> bool:
        return self._run_in_executor

    @property
    def executor(self) -> Any:
        return self._executor

    @executor.setter
    def executor(self, value: Any) -> None:
        self._executor = value

    async def acquire(self, timeout: Optional[float] = None,  # type: ignore[override]
                      poll_interval: Optional[float] = None, *,
                      blocking: Optional[bool] = None,
                      cancel_check: Optional[Callable[[], bool]] = None,
                      **_: Any) -> AsyncAcquireReturnProxy:
        """Take the lock (or count one more level) without blocking the
        loop.  timeout, blocking and cancel_check as for FileLock."""
        if timeout is None:
            timeout = self.timeout
        if blocking is None:
            blocking = self.blocking
        if not blocking:
            timeout = 0
        ms = timeout_ms(None if timeout < 0 else timeout)
        deadline = None if ms < 0 else time.monotonic() + ms / 1000
        proxy = AsyncAcquireReturnProxy(self)
        ctx = self._context
        while self._taking is not None and not self.is_locked:
            # Another task of this object is taking it: wait for that.
            if deadline is not None and time.monotonic() >= deadline:
                raise Timeout(self._lock_file)
            waiter = self._taking
            try:
                await asyncio.wait_for(asyncio.shield(waiter),
                                       None if deadline is None
                                       else max(0.0, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                raise Timeout(self._lock_file) from None
            except Exception:  # noqa: BLE001 - that task's failure is not ours
                pass
        if self.is_locked:
            ctx.counter += 1
            return proxy
        self._refuse_inherited()
        key = self._refuse_deadlock(ctx, -1 if ms < 0 else timeout)
        self._taking = asyncio.get_running_loop().create_future()
        try:
            _log.debug_filelock(_log.ATTEMPT_ACQUIRE, self, self._lock_file)
            await self._take_async(ctx, ms, deadline, cancel_check)
            ctx.counter += 1
            _fl._HELD.paths[key] = id(self)
            ctx.held = (_fl._HELD.paths, key)
            _log.debug_filelock(_log.ACQUIRED, self, self._lock_file)
            if self._on_acquired is not None:
                self._call_on_acquired(ctx, [True])
        except BaseException:
            # Cancelled, interrupted, Timeout: nothing of this call stays.
            _lib.settle(lambda: _abandon(ctx))
            raise
        finally:
            taking, self._taking = self._taking, None
            if taking is not None and not taking.done():
                taking.set_result(None)
        return proxy

    async def _take_async(self, ctx: _Context, ms: int,
                          deadline: Optional[float],
                          cancel_check: Optional[Callable[[], bool]]) -> None:
        if ctx.lock is None:
            lock = Lock(self._lock_file, tag=self._tag, flags=self._flags,
                        mode=0o666 if self._mode is None else self._mode)
            lock._quiet = True
            ctx.lock = lock
        lock = ctx.lock
        if lock._owner is not None:   # a forked child's stale record
            lock._owner = None
        try:
            if cancel_check is None:
                await self._wait(lock, ms, deadline)
            else:
                await self._wait_checking(lock, ms, deadline, cancel_check)
        except FileNotFoundError:
            if not self._make_parents():
                raise
            await self._wait(lock, ms, deadline)
        lock._owner = os.getpid()
        self._apply_mode(lock)

    async def _wait(self, lock: Lock, ms: int,
                    deadline: Optional[float]) -> None:
        try:
            if ms != 0:
                # A first try, so that a wait that begins is recorded
                # (once: the wait wakes on the release, not by polling).
                try:
                    await take_async(lock, 0, time.monotonic(), None)
                    return
                except Busy:
                    _log.debug_filelock(_log.WAITING, self, self._lock_file)
            await take_async(lock, ms, deadline, None)
        except Busy as busy:
            _log.debug_filelock(_log.FAILED_AT_ONCE if ms == 0 else _log.TIMED_OUT,
                                self, self._lock_file)
            raise Timeout(self._lock_file, busy.holder, busy.errno) from None

    async def _wait_checking(self, lock: Lock, ms: int,
                             deadline: Optional[float],
                             cancel_check: Callable[[], bool]) -> None:
        step = max(0.001, self.poll_interval)
        until = time.monotonic()    # the first slice: one try
        ms = 0
        while True:
            try:
                await self._wait(lock, ms, until)
                return
            except Timeout:
                if deadline is not None and time.monotonic() >= deadline:
                    raise
            if cancel_check():
                _log.debug_filelock(_log.CANCELLED, self, self._lock_file)
                raise Timeout(self._lock_file)
            until = time.monotonic() + step
            ms = 1
            if deadline is not None:
                until = min(until, deadline)

    async def release(self, force: bool = False) -> None:  # type: ignore[override]
        """Count one level down; let go at 0 (at once if force)."""
        FileLock.release(self, force)

    def __enter__(self) -> "BaseAsyncFileLock":
        raise NotImplementedError("Do not use `with` for asyncio locks, use "
                                  "`async with` instead.")

    def __exit__(self, exc_type: Optional[Type[BaseException]],
                 exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        raise NotImplementedError("Do not use `with` for asyncio locks, use "
                                  "`async with` instead.")

    async def __aenter__(self) -> "BaseAsyncFileLock":
        await self.acquire()
        return self

    async def __aexit__(self, exc_type: Optional[Type[BaseException]],
                        exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        try:
            await self.release()
        except BaseException as release_error:
            if exc is None or self._context_error_policy == "chain":
                raise
            _raise_both(exc, release_error)

    def __del__(self) -> None:
        try:
            FileLock.release(self, force=True)
        except Exception:  # noqa: BLE001 - a finalizer must not raise
            pass

    def __repr__(self) -> str:
        state = "locked" if self.is_locked else "unlocked"
        return f"<pidlock.{type(self).__name__} {self._lock_file!r} {state}>"


def _abandon(ctx: _Context) -> None:
    """After a failed first acquire: a hold the call took is let go, a
    library wait under way is ended (pidlock_fd() tells which)."""
    lock = ctx.lock
    if lock is None or ctx.counter > 0:
        return
    handle = lock._handle
    if handle is None:
        return
    if _lib.lib.pidlock_fd(handle) >= 0:
        lock._owner = os.getpid()
        _let_go_uncounted(ctx)
    else:
        _lib.lib.pidlock_close(handle)   # ENOLCK when no wait is under way
    lock._owner = None


class AsyncFileLock(BaseAsyncFileLock):
    """filelock's AsyncFileLock (AsyncUnixFileLock)."""


AsyncUnixFileLock = AsyncFileLock
