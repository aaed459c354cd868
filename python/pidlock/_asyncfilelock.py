# SPDX-License-Identifier: LGPL-2.1-or-later
"""pidlock.AsyncFileLock: filelock's AsyncFileLock over pidlock locks.

The wait is always the event loop's (pidlock_acquire_async(3), as
pidlock.AsyncLock waits): no thread is ever parked in it, so that any
number of tasks can wait while the executor's threads stay free for the
holder's release.  With run_in_executor (filelock's default) each try,
on_acquired and the release that lets go run in the executor (the one
given, else the loop's), as filelock's calls do: one short call each.
The tasks of one loop waiting for one path share one kernel waiter
(_async._Line)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from types import TracebackType
from typing import Any, Callable, NoReturn, Optional, Type

from . import _filelock as _fl, _lib, _log
from ._async import Attempt, drain, in_executor, take_async
from ._errors import Busy, Timeout
from ._filelock import FileLock, _Context, _let_go_uncounted
from ._lock import Lock, site_over, timeout_ms, with_site


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
    held and no wait under way (a try under way in the executor is
    waited for, and what it took is let go).  The deadlock
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
        self._taking_task: "Optional[asyncio.Task]" = None
        # A first acquire under way: (its task, its counted flag), for
        # the next acquire to undo if interrupts cut it short, even in
        # its clean-up (_undo_entering()).
        self._entering: Optional[tuple] = None
        self._withs: list = []
        # A try in the executor whose acquire an interrupt ended.
        self._orphan: "Optional[asyncio.Future[Any]]" = None
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
                      _counted: Optional[list] = None,
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
        ctx = self._context
        timeout, poll_interval = self._call_settings(ctx, timeout,
                                                     poll_interval, blocking)
        step = max(0.001, poll_interval)
        ms = timeout_ms(None if timeout < 0 else timeout)
        deadline = None if ms < 0 else time.monotonic() + ms / 1000
        proxy = AsyncAcquireReturnProxy(self)
        # First: in a forked child, _taking may be a future of the
        # parent's loop.
        self._refuse_inherited()
        task = asyncio.current_task()
        if self._orphan is not None:
            await self._settle_orphan(ctx)
        if self._entering is not None:
            _lib.settle(lambda: self._undo_entering(ctx, task))
        while self._taking is not None:
            if self._taking_over(task):
                _lib.settle(lambda: self._end_taking(ctx))
                break
            await self._wait_turn(self._taking, deadline, cancel_check, step)
        counted = [False] if _counted is None else _counted
        if self.is_locked:
            ctx.counter, counted[0] = ctx.counter + 1, True
            return proxy
        key = self._refuse_deadlock(ctx, -1 if ms < 0 else timeout)
        # Each pair in one statement: a signal handler runs between
        # statements, never between the two stores.
        self._taking, self._taking_task = \
            asyncio.get_running_loop().create_future(), task
        self._entering, self._claiming = (task, counted), True
        try:
            _log.debug_filelock(_log.ATTEMPT_ACQUIRE, self, self._lock_file)
            await self._take(ctx, ms, deadline, cancel_check, step)
            ctx.counter, counted[0] = ctx.counter + 1, True
            _fl._HELD.paths[key] = id(self)
            ctx.held = (_fl._HELD.paths, key)
            _log.debug_filelock(_log.ACQUIRED, self, self._lock_file)
            if self._on_acquired is not None and not self._run_in_executor:
                self._call_on_acquired(ctx, counted)
            self._entering = None
        except BaseException:
            # Cancelled, interrupted, Timeout: nothing of this call stays.
            _lib.settle(lambda: self._undo_entering(ctx, task))
            raise
        finally:
            self._claiming = False
            _lib.settle(lambda: self._end_taking(ctx))
        return proxy

    def _undo_entering(self, ctx: _Context, task: "Optional[asyncio.Task]") -> None:
        """A first acquire that did not return (this one, or one whose
        task ended or is this one: cut short by interrupts): its count
        is taken back and a hold that no count knows is let go.  Run
        again until done (idempotent)."""
        entering = self._entering
        if entering is None:
            return
        owner, counted = entering
        if owner is not task and owner is not None and not owner.done():
            return      # another task's, under way
        if counted[0]:
            ctx.counter, counted[0] = ctx.counter - 1, False
        if ctx.counter == 0:
            _fl._forget_held(ctx)
        if self._orphan is None or self._orphan.done():
            # (A try still running in the executor owns the handle until
            # it ends: the next acquire lets go of what it took.)
            _abandon(ctx)
        self._entering = None

    def _taking_over(self, task: "Optional[asyncio.Task]") -> bool:
        """Is the take or letting go under way over?  Its task ended, or
        is this one (which is in no other call): interrupts cut it short
        before it said so."""
        owner = self._taking_task
        return owner is None or owner is task or owner.done()

    def _end_taking(self, ctx: _Context) -> None:
        """The take or letting go under way is over: the tasks queued
        behind it go on."""
        taking, self._taking = self._taking, None
        self._taking_task = None
        if taking is not None and not taking.done():
            taking.set_result(None)

    async def _wait_turn(self, waiter: "asyncio.Future[None]",
                         deadline: Optional[float],
                         cancel_check: Optional[Callable[[], bool]],
                         step: float) -> None:
        """Wait for another task's take or letting go of this object
        (waiter) to end.  This call's own deadline and cancel_check hold
        meanwhile, as they do in a wait for the file: Timeout when either
        says so.  waiter is never cancelled from here."""
        owner = self._taking_task
        while not waiter.done() and not (owner is not None and owner.done()):
            limit = None if deadline is None else deadline - time.monotonic()
            if limit is not None and limit <= 0:
                raise Timeout(self._lock_file)
            if cancel_check is not None:
                limit = step if limit is None else min(limit, step)
            # Its task too: one that interrupts ended never sets waiter.
            await asyncio.wait({waiter} if owner is None else {waiter, owner},
                               timeout=limit,
                               return_when=asyncio.FIRST_COMPLETED)
            if (not waiter.done() and cancel_check is not None
                    and cancel_check()):
                _log.debug_filelock(_log.CANCELLED, self, self._lock_file)
                raise Timeout(self._lock_file)

    async def _take(self, ctx: _Context, ms: int, deadline: Optional[float],
                    cancel_check: Optional[Callable[[], bool]],
                    step: float) -> None:
        """Take ctx's handle, give the file its mode.  With
        run_in_executor each try runs in the executor, followed there by
        the mode and on_acquired once it holds (one call: no thread
        waits); else in the loop.  The wait between tries is the loop's
        (take_async())."""
        lock = self._handle_of(ctx)
        if lock._owner is not None:   # a forked child's stale record
            lock._owner = None
        attempt = None
        if self._run_in_executor:
            policy = self._context_error_policy
            attempt = in_executor(
                self._executor, self._finish_take,
                lambda cancelled, failure: _raise_raced(policy, cancelled, failure),
                self._left_behind)
        try:
            await self._wait(lock, ms, deadline, cancel_check, step, attempt)
        except FileNotFoundError:
            if not self._make_parents():
                raise
            await self._wait(lock, ms, deadline, cancel_check, step, attempt)
        if not self._run_in_executor:
            lock._owner = os.getpid()
            self._apply_mode(lock)

    def _left_behind(self, job: "asyncio.Future[Any]") -> None:
        """A try in the executor that an interrupt left running: the
        next acquire waits for it, and lets go of what it took."""
        self._orphan = job

    async def _settle_orphan(self, ctx: _Context) -> None:
        job = self._orphan
        if job is None:
            return
        cancelled = await drain(job)
        _lib.settle(lambda: _abandon(ctx))
        self._orphan = None
        if cancelled is not None:
            raise cancelled

    def _finish_take(self, lock: Lock) -> None:
        """In the executor's thread, once the handle holds: the file's
        mode and on_acquired.  A failure lets go before it goes on."""
        lock._owner = os.getpid()
        try:
            self._apply_mode(lock)
            if self._on_acquired is not None:
                self._on_acquired(_lib.lib.pidlock_fd(lock._live()))
        except BaseException:
            _lib.settle(lock._undo_acquire)
            raise

    async def _wait(self, lock: Lock, ms: int, deadline: Optional[float],
                    cancel_check: Optional[Callable[[], bool]], step: float,
                    attempt: Optional[Attempt]) -> None:
        """take_async(), with filelock's records and Timeout; the first
        try is made before cancel_check is asked, which is then asked
        every step seconds."""
        def waiting() -> None:
            # Once: the wait wakes on the release, not by polling.
            _log.debug_filelock(_log.WAITING, self, self._lock_file)

        def check() -> None:
            assert cancel_check is not None
            if cancel_check():
                _log.debug_filelock(_log.CANCELLED, self, self._lock_file)
                raise Timeout(self._lock_file)

        try:
            await take_async(lock, ms, deadline, None, attempt=attempt,
                             check=None if cancel_check is None else check,
                             step=step, waiting=waiting)
        except Busy as busy:
            _log.debug_filelock(_log.FAILED_AT_ONCE if ms == 0 else _log.TIMED_OUT,
                                self, self._lock_file)
            raise Timeout(self._lock_file, busy.holder, busy.errno) from None

    async def release(self, force: bool = False,  # type: ignore[override]
                      _todo: Optional[list] = None) -> None:
        """Count one level down; let go at 0 (at once if force): with
        run_in_executor in the executor, which a cancellation waits for
        (the lock is let go all the same)."""
        todo = [True] if _todo is None else _todo
        ctx = self._context
        if self._run_in_executor and self._creator_pid == os.getpid():
            task = asyncio.current_task()
            while self.is_locked and self._taking is not None:
                if self._taking_over(task):
                    _lib.settle(lambda: self._end_taking(ctx))
                    break
                # Another task's letting go: after it.
                await self._wait_turn(self._taking, None, None, 0.05)
        if (not self._run_in_executor or not self.is_locked
                or self._creator_pid != os.getpid()
                or (ctx.counter > 1 and not force)):
            self._release_level(force, todo)
            return
        self._taking, self._taking_task = \
            asyncio.get_running_loop().create_future(), asyncio.current_task()
        try:
            job = asyncio.get_running_loop().run_in_executor(
                self._executor, self._release_level, force, todo)
            cancelled = await drain(job)
            job.result()
            if cancelled is not None:
                raise cancelled
        finally:
            _lib.settle(lambda: self._end_taking(ctx))

    def __enter__(self) -> "BaseAsyncFileLock":
        raise NotImplementedError("Do not use `with` for asyncio locks, use "
                                  "`async with` instead.")

    def __exit__(self, exc_type: Optional[Type[BaseException]],
                 exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        raise NotImplementedError("Do not use `with` for asyncio locks, use "
                                  "`async with` instead.")

    async def __aenter__(self) -> "BaseAsyncFileLock":
        # Each async-with's level: [its task, its site, its flag], the
        # flag set in the statement that counts the level in and cleared
        # in the one that counts it out.  Recorded before it counts in,
        # so that a level whose statement is over without __aexit__
        # having counted it out (interrupts cut it short, even twice) is
        # counted out by the next one (_count_out_over()).
        task = asyncio.current_task()
        if self._withs:
            await self._count_out_over(task)
        entry = (task, with_site(sys._getframe(1)), [False])
        self._withs.append(entry)
        try:
            await self.acquire(_counted=entry[2])
        except BaseException:
            _lib.settle(lambda: self._forget_with(entry))
            raise
        return self

    def _forget_with(self, entry: tuple) -> None:
        if not entry[2][0] and entry in self._withs:
            self._withs.remove(entry)

    async def _count_out_over(self, task: "Optional[asyncio.Task]") -> None:
        """Count out the levels of async-with statements that are over:
        their task ended, or it is this task (running: its frames are on
        the stack) and the statement's frame is gone or past the block."""
        for entry in list(self._withs):
            owner, site, counted = entry
            if owner is not None and not owner.done() and \
                    (owner is not task or not site_over(site)):
                continue
            if counted[0]:
                await self.release(_todo=counted)
            _lib.settle(lambda: self._forget_with(entry))

    async def __aexit__(self, exc_type: Optional[Type[BaseException]],
                        exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        task = asyncio.current_task()
        entry = next((e for e in reversed(self._withs) if e[0] is task
                      and e[2][0]), None)
        try:
            await self.release(_todo=None if entry is None else entry[2])
            if entry is not None:
                _lib.settle(lambda: self._forget_with(entry))
        except BaseException as release_error:
            self._exit_error(exc, release_error)

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
