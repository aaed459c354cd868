# SPDX-License-Identifier: LGPL-2.1-or-later
"""pidlock.AsyncFileLock: filelock's AsyncFileLock over pidlock locks.

With run_in_executor (filelock's default) the blocking take and the
release that lets go run in the executor (the one given, else the
loop's), as filelock's do; on_acquired runs there too.  The thread
waits on the library's descriptor (pidlock_acquire_async(3)), woken by
the holder's release, and a pipe of the acquire's own ends its wait
when the acquire is cancelled.  With run_in_executor=False the wait is
the event loop's own, as pidlock.AsyncLock waits: no thread."""

from __future__ import annotations

import asyncio
import errno
import os
import time
from types import TracebackType
from typing import Any, Callable, NoReturn, Optional, Type

from . import _filelock as _fl, _lib, _log
from ._async import Stop, Stopped, acquire_steps, drain, take_async
from ._errors import Busy, Timeout
from ._filelock import FileLock, _Context, _let_go_uncounted, _raise_both
from ._lock import Lock, timeout_ms
from ._types import LockInfo


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
    and loop, run_in_executor, executor are filelock's: with
    run_in_executor the take and the letting go run in executor (None:
    the loop's default one); thread_local with run_in_executor is
    refused with ValueError, as filelock does.  acquire() and release()
    are coroutines; a cancelled or interrupted acquire() leaves nothing
    held and no wait under way (one that runs in the executor ends when
    the thread is done, and lets go of what the thread took).  The deadlock
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
        # A first acquire under way counts in lock_counter, as filelock's
        # provisional claim does.
        self._claiming = False

    @property
    def lock_counter(self) -> int:
        """The nesting count, with a first acquire under way as 1."""
        _fl._catch_up_after_fork()
        counter = self._context.counter
        return counter + 1 if self._claiming and counter == 0 else counter

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
        loop.  timeout, blocking, poll_interval and cancel_check as for
        FileLock; a call queued behind another task's take or letting go
        of this object keeps to its own timeout and cancel_check.

        A failure of the executor's attempt (on_acquired's error) that a
        cancellation of this task raced is not lost: with
        context_error_policy "chain" it is raised with the
        CancelledError as its __context__, with "group" the two are
        raised together in a BaseExceptionGroup."""
        if timeout is None:
            timeout = self.timeout
        if blocking is None:
            blocking = self.blocking
        if not blocking:
            timeout = 0
        if poll_interval is None:
            poll_interval = self.poll_interval
        step = max(0.001, poll_interval)
        ms = timeout_ms(None if timeout < 0 else timeout)
        deadline = None if ms < 0 else time.monotonic() + ms / 1000
        proxy = AsyncAcquireReturnProxy(self)
        ctx = self._context
        # First: in a forked child, _taking may be a future of the
        # parent's loop.
        self._refuse_inherited()
        while self._taking is not None:
            await self._wait_turn(self._taking, deadline, cancel_check, step)
        if self.is_locked:
            ctx.counter += 1
            return proxy
        key = self._refuse_deadlock(ctx, -1 if ms < 0 else timeout)
        self._taking = asyncio.get_running_loop().create_future()
        self._claiming = True
        try:
            _log.debug_filelock(_log.ATTEMPT_ACQUIRE, self, self._lock_file)
            if self._run_in_executor:
                await self._take_in_executor(ctx, ms, deadline, cancel_check,
                                             step)
            else:
                await self._take_async(ctx, ms, deadline, cancel_check, step)
            ctx.counter += 1
            _fl._HELD.paths[key] = id(self)
            ctx.held = (_fl._HELD.paths, key)
            _log.debug_filelock(_log.ACQUIRED, self, self._lock_file)
            if self._on_acquired is not None and not self._run_in_executor:
                self._call_on_acquired(ctx, [True])
        except BaseException:
            # Cancelled, interrupted, Timeout: nothing of this call stays.
            _lib.settle(lambda: _abandon(ctx))
            raise
        finally:
            self._claiming = False
            taking, self._taking = self._taking, None
            if taking is not None and not taking.done():
                taking.set_result(None)
        return proxy

    async def _wait_turn(self, waiter: "asyncio.Future[None]",
                         deadline: Optional[float],
                         cancel_check: Optional[Callable[[], bool]],
                         step: float) -> None:
        """Wait for another task's take or letting go of this object
        (waiter) to end.  This call's own deadline and cancel_check hold
        meanwhile, as they do in a wait for the file: Timeout when either
        says so.  waiter is never cancelled from here."""
        while not waiter.done():
            limit = None if deadline is None else deadline - time.monotonic()
            if limit is not None and limit <= 0:
                raise Timeout(self._lock_file)
            if cancel_check is not None:
                limit = step if limit is None else min(limit, step)
            await asyncio.wait({waiter}, timeout=limit)
            if (not waiter.done() and cancel_check is not None
                    and cancel_check()):
                _log.debug_filelock(_log.CANCELLED, self, self._lock_file)
                raise Timeout(self._lock_file)

    def _handle_of(self, ctx: _Context) -> Lock:
        """ctx's pidlock.Lock, made at the first acquire."""
        if ctx.lock is None:
            lock = Lock(self._lock_file, tag=self._tag, flags=self._flags,
                        mode=0o666 if self._mode is None else self._mode)
            lock._quiet = True
            ctx.lock = lock
        lock = ctx.lock
        if lock._owner is not None:   # a forked child's stale record
            lock._owner = None
        return lock

    async def _take_in_executor(self, ctx: _Context, ms: int,
                                deadline: Optional[float],
                                cancel_check: Optional[Callable[[], bool]],
                                step: float) -> None:
        """The take in the executor (_take_blocking()); the loop only
        asks cancel_check, every step seconds, as filelock does.  On a
        cancellation (or cancel_check's True) the thread's wait is ended
        and the thread waited for: what it took, acquire() lets go of,
        and what failed in it (on_acquired) goes on with the
        cancellation (_raise_raced())."""
        lock = self._handle_of(ctx)
        stop = Stop()
        job = asyncio.get_running_loop().run_in_executor(
            self._executor, self._take_blocking, lock, ms, deadline, stop)
        if cancel_check is None:
            step = None
        try:
            while not job.done():
                await asyncio.wait({job}, timeout=step)
                # Asked once the thread waits: a free lock is taken.
                if (not job.done() and cancel_check is not None
                        and stop.waiting and cancel_check()):
                    _log.debug_filelock(_log.CANCELLED, self, self._lock_file)
                    raise Timeout(self._lock_file)
        except asyncio.CancelledError as cancelled:
            stop.set()
            await drain(job)
            failure = _attempt_failure(job)
            if failure is not None:
                _raise_raced(self._context_error_policy, cancelled, failure)
            raise
        except BaseException:
            stop.set()
            await drain(job)
            raise
        job.result()

    def _take_blocking(self, lock: Lock, ms: int, deadline: Optional[float],
                       stop: "Stop") -> None:
        """In the executor's thread: take lock's handle (the first try is
        made even when stop is already set, as filelock's attempt is),
        give the file its mode, call on_acquired.  A failure after the
        take lets go before it goes on."""
        try:
            try:
                self._wait_blocking(lock, ms, deadline, stop)
            except FileNotFoundError:
                if not self._make_parents():
                    raise
                self._wait_blocking(lock, ms, deadline, stop)
        finally:
            stop.close()
        lock._owner = os.getpid()
        try:
            self._apply_mode(lock)
            if self._on_acquired is not None:
                self._on_acquired(_lib.lib.pidlock_fd(lock._live()))
        except BaseException:
            _lib.settle(lock._undo_acquire)
            raise

    def _wait_blocking(self, lock: Lock, ms: int, deadline: Optional[float],
                       stop: "Stop") -> None:
        """acquire_steps() in this thread: woken by the release (the
        library's descriptor) or by stop."""
        def expired(holder: Optional[LockInfo], err: int) -> NoReturn:
            _log.debug_filelock(_log.FAILED_AT_ONCE if err == errno.EWOULDBLOCK
                                else _log.TIMED_OUT, self, self._lock_file)
            raise Timeout(self._lock_file, holder, err)

        for fd, delay in acquire_steps(lock, ms, deadline, expired):
            if not stop.waiting:
                # Once: the wait wakes on the release, not by polling.
                _log.debug_filelock(_log.WAITING, self, self._lock_file)
                stop.waiting = True
            if stop.wait(fd, delay):
                raise Stopped(self._lock_file)

    async def _take_async(self, ctx: _Context, ms: int,
                          deadline: Optional[float],
                          cancel_check: Optional[Callable[[], bool]],
                          step: float) -> None:
        lock = self._handle_of(ctx)
        try:
            if cancel_check is None:
                await self._wait(lock, ms, deadline)
            else:
                await self._wait_checking(lock, ms, deadline, cancel_check,
                                          step)
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
                             cancel_check: Callable[[], bool],
                             step: float) -> None:
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
        """Count one level down; let go at 0 (at once if force): with
        run_in_executor in the executor, which a cancellation waits for
        (the lock is let go all the same)."""
        ctx = self._context
        if self._run_in_executor and self._creator_pid == os.getpid():
            while self.is_locked and self._taking is not None:
                # Another task's letting go: after it.
                await asyncio.shield(self._taking)
        if (not self._run_in_executor or not self.is_locked
                or self._creator_pid != os.getpid()
                or (ctx.counter > 1 and not force)):
            FileLock.release(self, force)
            return
        self._taking = asyncio.get_running_loop().create_future()
        try:
            job = asyncio.get_running_loop().run_in_executor(
                self._executor, FileLock.release, self, force)
            cancelled = await drain(job)
            job.result()
            if cancelled is not None:
                raise cancelled
        finally:
            taking, self._taking = self._taking, None
            if taking is not None and not taking.done():
                taking.set_result(None)

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
    library wait under way is ended (_lib.held() tells which)."""
    lock = ctx.lock
    if lock is None or ctx.counter > 0:
        return
    handle = lock._handle
    if handle is None:
        return
    if _lib.held(handle):
        lock._owner = os.getpid()
        _let_go_uncounted(ctx)
    else:
        _lib.lib.pidlock_close(handle)   # ENOLCK when no wait is under way
    lock._owner = None


def _attempt_failure(job: "asyncio.Future[None]") -> Optional[BaseException]:
    """What the executor's attempt raised that the caller must still
    hear of after its cancellation: not the end of the wait that the
    cancellation itself brought (Stopped) or a Timeout that it raced."""
    if job.cancelled():
        return None
    error = job.exception()
    if error is None or isinstance(error, (Stopped, Timeout)):
        return None
    return error


def _raise_raced(policy: str, cancelled: BaseException,
                 error: BaseException) -> NoReturn:
    """Raise error (from the executor's attempt) and the cancellation
    that raced it, both, as context_error_policy says.  "chain": error,
    whose __context__ becomes the cancellation, which takes over the
    context error had (the cancellation's own is kept at its end), so
    no link is lost.  "group": a BaseExceptionGroup of the two."""
    if policy == "group":
        _detach_repeats((cancelled, error))
        raise BaseExceptionGroup("the acquire was cancelled and its "
                                 "attempt failed", [cancelled, error]) from None
    earlier = error.__context__
    if earlier is not None and earlier is not cancelled:
        if cancelled.__context__ is not None:
            _append_context(earlier, cancelled.__context__)
        cancelled.__context__ = earlier
    error.__context__ = cancelled
    raise error


def _append_context(chain: BaseException, tail: BaseException) -> None:
    """tail at the end of chain's __cause__/__context__ links, unless
    it is in them already (or they are in it: no cycle)."""
    if _links_to(tail, chain):
        return
    last = chain
    seen = {id(last)}
    while True:
        after = last.__cause__ if last.__cause__ is not None else last.__context__
        if after is None or id(after) in seen:
            break
        if after is tail:
            return
        seen.add(id(after))
        last = after
    last.__context__ = tail


def _links_to(start: BaseException, target: BaseException) -> bool:
    """Whether target is start or reached from it by __cause__,
    __context__ or a group's members."""
    todo, seen = [start], set()
    while todo:
        exc = todo.pop()
        if exc is target:
            return True
        if id(exc) in seen:
            continue
        seen.add(id(exc))
        todo += [e for e in (exc.__cause__, exc.__context__) if e is not None]
        if isinstance(exc, BaseExceptionGroup):
            todo += exc.exceptions
    return False


def _detach_repeats(members: "tuple[BaseException, ...]") -> None:
    """Before members are grouped: a __context__ that only repeats what
    the group shows is cut, so that a traceback prints each error once.
    That is one of the members (or inside one of them), the exception
    itself, or a copy of it (a group of the same type, message and
    members, as except* makes when it re-raises)."""
    shown = set()
    todo = list(members)
    while todo:
        exc = todo.pop()
        shown.add(id(exc))
        if isinstance(exc, BaseExceptionGroup):
            todo += exc.exceptions
    todo, seen = list(members), set()
    while todo:
        exc = todo.pop()
        if id(exc) in seen:
            continue
        seen.add(id(exc))
        context = exc.__context__
        if context is not None and (context is exc or id(context) in shown
                                    or _same_group(exc, context)):
            exc.__context__ = None
        elif context is not None:
            todo.append(context)
        if exc.__cause__ is not None:
            todo.append(exc.__cause__)
        if isinstance(exc, BaseExceptionGroup):
            todo += exc.exceptions


def _same_group(one: BaseException, other: BaseException) -> bool:
    """Whether one and other are groups of the same type and message
    whose members are the same exceptions (or such groups again)."""
    if one is other:
        return True
    if type(one) is not type(other) or not isinstance(one, BaseExceptionGroup):
        return False
    assert isinstance(other, BaseExceptionGroup)
    return (one.message == other.message
            and len(one.exceptions) == len(other.exceptions)
            and all(_same_group(a, b)
                    for a, b in zip(one.exceptions, other.exceptions)))


class AsyncFileLock(BaseAsyncFileLock):
    """filelock's AsyncFileLock (AsyncUnixFileLock)."""


AsyncUnixFileLock = AsyncFileLock
# As filelock names its AsyncFileLock on Linux (see _filelock.py).
AsyncFileLock.__name__ = AsyncFileLock.__qualname__ = "AsyncUnixFileLock"
