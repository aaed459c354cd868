# SPDX-License-Identifier: LGPL-2.1-or-later
"""pidlock.AsyncLock: waiting for a lock in an asyncio event loop.

The wait is pidlock_acquire_async(3): the library hands over a
descriptor that becomes readable when the lock may be free and the
longest time to wait before trying again; the loop watches it with
add_reader() and a timer.  No thread, no executor.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import errno
import os
import sys
import threading
import time
import weakref
from types import TracebackType
from typing import (Any, Awaitable, Callable, Deque, Dict, Iterator, NoReturn,
                    Optional, Tuple, Type)

from . import _lib, _log
from ._errors import Busy, raise_for
from ._lock import DEFAULT, Lock, _Default, site_over, timeout_ms, with_site
from ._types import Flags, LockInfo, PathArg, inspect


class AsyncLock:
    """Lock for asyncio: ``async with AsyncLock(path): ...``.

    The arguments are those of Lock.  acquire() is a coroutine; the
    rest (release, refresh, verify, fileno, path) does not wait and is
    plain.  Cancelling a waiting acquire() cancels the library's wait.
    Tasks that share one AsyncLock take turns, as with asyncio.Lock: an
    acquire() made while another task holds it, or waits for it, waits
    until the tasks before it have had their turn (in order), within its
    timeout.
    """

    def __init__(self, path: PathArg, *, timeout: Optional[float] = None,
                 tag: Optional[str] = None, flags: Flags = Flags.NONE,
                 mode: Optional[int] = None,
                 stale_timeout: Optional[float] = None,
                 retry_interval: Optional[float] = None,
                 grace: Optional[float] = None) -> None:
        self._lock = Lock(path, timeout=timeout, tag=tag, flags=flags,
                          mode=mode, stale_timeout=stale_timeout,
                          retry_interval=retry_interval, grace=grace)
        # This AsyncLock reports its attempts itself, under its own id.
        self._lock._quiet = True
        # The turn: one task at a time acquires and then holds through
        # the handle; the others wait in _queue, each on a future that
        # _pass_turn() sets to True (its turn) or a timer to False.
        self._taken = False
        self._holding = False
        # The task whose turn it is: a turn that an interrupt left taken
        # between two of these assignments is recognised and taken back.
        self._turn_task: "Optional[asyncio.Task]" = None
        self._queue: Deque["asyncio.Future[bool]"] = collections.deque()
        # The async-with statement whose hold it is (with_site()), or
        # None for a hold of acquire(): a hold whose statement is over
        # (its task ended, or went past the block) without __aexit__
        # letting go, because an interrupt cut it short, is let go by
        # the next acquire (_drop_hold_over()).
        self._site: Optional[tuple] = None

    @property
    def path(self) -> str:
        return self._lock.path

    @property
    def locked(self) -> bool:
        return self._lock.locked

    @property
    def timeout(self) -> Optional[float]:
        return self._lock.timeout

    async def acquire(self, timeout: "Optional[float] | _Default" = DEFAULT) -> "AsyncLock":
        """Take the lock without blocking the loop; returns self.

        timeout as for Lock.acquire(); raises Busy when it runs out.
        The time spent waiting for this AsyncLock's other tasks counts.
        """
        limit = self._lock.timeout if isinstance(timeout, _Default) else timeout
        ms = timeout_ms(limit)
        deadline = None if ms < 0 else time.monotonic() + ms / 1000
        return await self._acquire(ms, deadline, None)

    async def _acquire(self, ms: int, deadline: Optional[float],
                       site: Optional[tuple]) -> "AsyncLock":
        lock = self._lock
        lock._live()
        task = asyncio.current_task()
        turn = [False]
        if self._holding and self._hold_over(task):
            _lib.settle(self._drop_hold_over)
        try:
            if self._taken and not self._stale_turn(task):
                await self._wait_turn(deadline, ms == 0, turn)
            else:
                if not self._holding or self._site is not None:
                    # The turn is free, or its task is gone: a hold of
                    # the handle is one that no call returned, or an
                    # async-with's that is over (a hold of acquire()
                    # stays, for the task it was handed to).
                    _lib.settle(self._drop_hold_over)
                # turn first: an interrupt between the two leaves a turn
                # that _undo() passes on, never one that nobody has.
                turn[0] = True
                self._taken = True
            self._turn_task = task
            self._site = site
            _log.debug(_log.ATTEMPT_ACQUIRE, self, lock.path)
            await self._take(lock, ms, deadline)
            pid = os.getpid()
            lock._owner = pid
            self._holding = True
            _log.debug(_log.ACQUIRED, self, lock.path)
            return self
        except BaseException:
            # Busy, an error, a cancellation or a signal handler's
            # exception: no hold and no turn of this call stays behind.
            _lib.settle(lambda: self._undo(turn))
            raise

    async def _take(self, lock: Lock, ms: int,
                    deadline: Optional[float]) -> None:
        """The library's wait: returns when the handle holds (ValueError
        if close() freed it meanwhile)."""
        await take_async(lock, ms, deadline, self)

    async def _wait_turn(self, deadline: Optional[float], once: bool,
                         turn: list) -> None:
        """Wait until an earlier task's turn ends; turn[0] is then True."""
        if once:
            raise Busy(self.path, _inspect_or_none(self.path), errno.EWOULDBLOCK)
        loop = asyncio.get_running_loop()
        given: "asyncio.Future[bool]" = loop.create_future()
        self._queue.append(given)
        timer = None
        if deadline is not None:
            timer = loop.call_later(max(0.0, deadline - time.monotonic()),
                                    _settle_future, given, False)
        try:
            if await given:
                turn[0] = True
                return
        except BaseException:
            # Cancelled after _pass_turn() gave us the turn, before this
            # task ran again: ours to pass on (see _undo()).
            if given.done() and not given.cancelled() and given.result():
                turn[0] = True
            raise
        finally:
            if timer is not None:
                timer.cancel()
            if not turn[0]:
                given.cancel()
                with contextlib.suppress(ValueError):
                    self._queue.remove(given)
        raise Busy(self.path, _inspect_or_none(self.path), errno.ETIMEDOUT)

    def _hold_over(self, task: "Optional[asyncio.Task]") -> bool:
        """Is the hold an async-with statement's that is over?  Its task
        ended, or it is this very task (running, so its frames are on
        the stack) and the statement's frame is gone or past the block.
        A hold of acquire() may be let go by another task: never over."""
        site, owner = self._site, self._turn_task
        if site is None:
            return False
        if owner is None or owner.done():
            return True
        return owner is task and site_over(site)

    def _drop_hold_over(self) -> None:
        """Let go of a hold whose statement is over (run again until
        done): the turn stays taken, by its task, which _stale_turn()
        then finds over."""
        handle = self._lock._handle
        if handle is not None and _lib.held(handle):
            _lib.lib.pidlock_release(handle)
        self._lock._owner = None
        self._site = None
        self._holding = False

    def _stale_turn(self, task: "Optional[asyncio.Task]") -> bool:
        """Is the turn taken by nobody who can end it?  Its task has
        ended, or it is this very task, which is not holding and so is
        in no other acquire(): a KeyboardInterrupt (raised in whatever
        task runs) cut its bookkeeping short."""
        owner = self._turn_task
        if owner is None or owner.done():
            return True
        return owner is task and not self._holding

    def _undo(self, turn: list) -> None:
        """After acquire() failed: a hold that it took and did not return
        is let go (_lib.held() tells whether the handle holds), a wait
        under way in the library is ended, and its turn passes on."""
        if not turn[0]:
            return
        lock = self._lock
        handle = lock._handle
        # The turn was this call's: so is any hold of the handle, even
        # one recorded already (an interrupt after the record).
        if handle is not None:
            if _lib.held(handle):
                _lib.lib.pidlock_release(handle)
            else:
                # Ends the library's wait (ENOLCK if none is under way).
                _lib.lib.pidlock_close(handle)
        lock._owner = None
        self._holding = False
        turn[0] = False
        self._pass_turn()

    def _pass_turn(self) -> None:
        """The turn goes to the first task still waiting, or to nobody."""
        while self._queue:
            given = self._queue.popleft()
            if not given.done():
                given.set_result(True)
                return
        self._taken = False
        self._turn_task = None

    def release(self) -> None:
        """Let go of the lock; the next waiting task gets its turn."""
        try:
            _log.debug(_log.ATTEMPT_RELEASE, self, self.path)
            self._lock.release()
            _log.debug(_log.RELEASED, self, self.path)
        finally:
            if self._holding and self._lock._owner is None:
                self._site = None
                self._holding = False
                self._pass_turn()

    def refresh(self) -> None:
        self._lock.refresh()

    def verify(self) -> None:
        self._lock.verify()

    async def check(self, timeout: Optional[float] = 1.0) -> bool:
        """Lock.check() in the loop's executor: the server's answer may
        take up to timeout."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self._lock.check, timeout)

    def fileno(self) -> int:
        return self._lock.fileno()

    def holder(self) -> Optional[LockInfo]:
        return self._lock.holder()

    def close(self) -> None:
        """Free the handle (letting go of a hold); waiting tasks wake and
        raise ValueError."""
        try:
            self._lock.close()
        finally:
            if self._holding:
                self._holding = False
                self._pass_turn()

    async def __aenter__(self) -> "AsyncLock":
        ms = timeout_ms(self._lock.timeout)
        deadline = None if ms < 0 else time.monotonic() + ms / 1000
        return await self._acquire(ms, deadline, with_site(sys._getframe(1)))

    async def __aexit__(self, exc_type: Optional[Type[BaseException]],
                        exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "locked" if self.locked else "unlocked"
        return f"<pidlock.AsyncLock {self.path!r} {state}>"


Attempt = Callable[[Lock], Awaitable[Tuple[int, int, int]]]


def try_once(lock: Lock) -> Tuple[int, int, int]:
    """One pidlock_acquire_async(3) call on lock's handle: (its return,
    the descriptor to wait on, the milliseconds to wait at most)."""
    pollfd = ctypes.c_int(-1)
    wait_ms = ctypes.c_int(0)
    rc = _lib.lib.pidlock_acquire_async(
        lock._live(), ctypes.byref(pollfd), ctypes.byref(wait_ms))
    return rc, pollfd.value, wait_ms.value


async def _try_here(lock: Lock) -> Tuple[int, int, int]:
    return try_once(lock)


def in_executor(executor: Any, then: Optional[Callable[[Lock], None]] = None,
                raced: Optional[Callable[[BaseException, BaseException],
                                         NoReturn]] = None,
                left: Optional[Callable[["asyncio.Future[Any]"], None]] = None
                ) -> Attempt:
    """An attempt that makes try_once() in executor (None: the loop's
    default one), and then(lock) there too once the handle holds: one
    short call, never a wait.  A cancellation waits for the call to end
    (a thread cannot be stopped half way) and then goes on; what the
    call took, the caller lets go (it asks the handle, _lib.held()).  A
    failure of the call that the cancellation raced is handed to
    raced(cancellation, failure), which raises.  An exception that is
    no cancellation (a signal handler's) cannot wait: the call still
    running is handed to left(job), for the owner to wait for before it
    uses the handle again."""
    def call(lock: Lock) -> Tuple[int, int, int]:
        result = try_once(lock)
        if result[0] == 0 and then is not None:
            then(lock)
        return result

    async def attempt(lock: Lock) -> Tuple[int, int, int]:
        job = asyncio.get_running_loop().run_in_executor(executor, call, lock)
        try:
            cancelled = await drain(job)
        except BaseException:
            if left is not None and not job.done():
                left(job)
            raise
        if cancelled is not None:
            failure = None if job.cancelled() else job.exception()
            if failure is not None and raced is not None:
                raced(cancelled, failure)
            raise cancelled
        return job.result()
    return attempt


async def take_async(lock: Lock, ms: int, deadline: Optional[float],
                     reporter: object, *, attempt: Optional[Attempt] = None,
                     check: Optional[Callable[[], None]] = None,
                     step: Optional[float] = None,
                     waiting: Optional[Callable[[], None]] = None) -> None:
    """Take lock's handle in the running loop: returns when it holds,
    raises Busy when deadline (time.monotonic()) passes (ValueError if
    the handle was freed meanwhile).  reporter is who the log's records
    name (None: no record).

    Each try is attempt(lock) (default: in the loop); the waits between
    tries are the loop's, on the library's descriptor, never a thread's.
    The tasks of one loop that wait for one path stand in a line (_Line):
    only the first waits in the library, so that N waiting tasks cost
    one kernel waiter, not N; the others wait for their turn at the
    head, in order.  A single try (ms 0) does not stand in line.
    check(), if given, is called every step seconds while the wait goes
    on (it raises to end the wait); waiting() once, when the first try
    found the lock taken."""
    try_lock = attempt or _try_here
    if ms == 0:
        rc, _, _ = await try_lock(lock)
        if rc == 0:
            return
        if rc != -errno.EWOULDBLOCK:
            raise_for(rc, lock.path)
        _expired(lock, lock.holder(), errno.EWOULDBLOCK, reporter)
    loop = asyncio.get_running_loop()
    line = _Line.of(loop, lock.path)
    task = asyncio.current_task()
    asked = time.monotonic()
    try:
        await line.enter(task, lock, deadline, check, step, reporter)
        holder: Optional[LockInfo] = None
        while True:
            rc, fd, wait_ms = await try_lock(lock)
            if rc == 0:
                return
            if rc != -errno.EWOULDBLOCK:
                raise_for(rc, lock.path)
            holder = lock.holder() or holder
            if waiting is not None:
                waiting()
                waiting = None
            delay = wait_ms / 1000
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    _expired(lock, holder, errno.ETIMEDOUT, reporter)
                delay = min(delay, left)
            if check is not None and step is not None:
                delay = min(delay, max(0.0, asked + step - time.monotonic()))
            await _readable_or_later(loop, fd, delay)
            if check is not None and step is not None \
                    and time.monotonic() >= asked + step:
                check()
                asked = time.monotonic()
    finally:
        line.leave(task)


def _expired(lock: Lock, holder: Optional[LockInfo], err: int,
             reporter: object) -> NoReturn:
    if reporter is not None:
        _log.debug(_log.FAILED_AT_ONCE if err == errno.EWOULDBLOCK
                   else _log.TIMED_OUT, reporter, lock.path)
    raise Busy(lock.path, holder, err)


class _Line:
    """The tasks of one event loop that wait for one lock path, first
    come first served.  The head waits in the library; the others wait
    on a future that the head's leaving sets.  A head whose task ended
    without leaving (an interrupt between two statements) is done with:
    its task's done callback passes the turn on, and a newcomer that
    finds such a head takes its place."""

    _lines: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Dict[str, _Line]]" \
        = weakref.WeakKeyDictionary()

    def __init__(self, lines: "Dict[str, _Line]", key: str) -> None:
        self._lines = lines          # type: ignore[misc]
        self._key = key
        self.head: "Optional[asyncio.Task]" = None
        self._queue: "Deque[Tuple[asyncio.Task, asyncio.Future[None]]]" = \
            collections.deque()

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop, path: str) -> "_Line":
        lines = cls._lines.setdefault(loop, {})
        key = line_key(path)
        line = lines.get(key)
        if line is None:
            line = lines[key] = cls(lines, key)
        return line

    def _become_head(self, task: "Optional[asyncio.Task]") -> None:
        self.head = task
        if task is not None:
            task.add_done_callback(self._head_ended)

    def _head_ended(self, task: "asyncio.Task") -> None:
        if self.head is task:
            self.leave(task)

    async def enter(self, task: "Optional[asyncio.Task]", lock: Lock,
                    deadline: Optional[float],
                    check: Optional[Callable[[], None]],
                    step: Optional[float], reporter: object) -> None:
        """Return once task is at the head; Busy at deadline; check()
        every step seconds meanwhile."""
        head = self.head
        if head is None or head is task or head.done():
            self._become_head(task)
            return
        given: "asyncio.Future[None]" = asyncio.get_running_loop().create_future()
        self._queue.append((task, given))   # type: ignore[arg-type]
        try:
            while not given.done():
                limit = None if deadline is None else deadline - time.monotonic()
                if limit is not None and limit <= 0:
                    _expired(lock, _inspect_or_none(lock.path), errno.ETIMEDOUT,
                             reporter)
                if check is not None and step is not None:
                    limit = step if limit is None else min(limit, step)
                await asyncio.wait({given}, timeout=limit)
                if not given.done() and check is not None and step is not None:
                    check()
        except BaseException:
            if given.done() and self.head is task:
                self.leave(task)    # the turn came with the failure
            else:
                given.cancel()
                with contextlib.suppress(ValueError):
                    self._queue.remove((task, given))   # type: ignore[arg-type]
            raise

    def leave(self, task: "Optional[asyncio.Task]") -> None:
        """task is done at the head (or never got there): the next one
        still waiting becomes the head."""
        if self.head is not task:
            return
        if task is not None:
            task.remove_done_callback(self._head_ended)
        self.head = None
        while self._queue:
            nxt, given = self._queue.popleft()
            if not given.done():
                self._become_head(nxt)
                given.set_result(None)
                return
        if self._lines.get(self._key) is self:
            del self._lines[self._key]


def line_key(path: str) -> str:
    """One key per lock file: the path through its parent's real
    directory (a symbolic link to the directory names the same lock)."""
    path = os.path.abspath(os.fsdecode(path))
    parent, name = os.path.split(path)
    return os.path.join(os.path.realpath(parent), name)


def _settle_future(fut: "asyncio.Future[bool]", value: bool) -> None:
    if not fut.done():
        fut.set_result(value)


def _inspect_or_none(path: str) -> Optional[LockInfo]:
    try:
        return inspect(path)
    except OSError:
        return None


async def _readable_or_later(loop: asyncio.AbstractEventLoop, fd: int,
                             delay: float) -> None:
    """Return when fd is readable (fd -1: never) or after delay seconds."""
    woken = loop.create_future()

    def wake() -> None:
        if not woken.done():
            woken.set_result(None)

    timer = loop.call_later(delay, wake)
    if fd >= 0:
        loop.add_reader(fd, wake)
    try:
        await woken
    finally:
        timer.cancel()
        if fd >= 0:
            loop.remove_reader(fd)


async def drain(job: "asyncio.Future[Any]") -> Optional[BaseException]:
    """Wait for job to end, through any cancellation of this task (a
    thread cannot be stopped half way); returns the cancellation, if one
    came, for the caller to raise once it has dealt with the result."""
    cancelled: Optional[BaseException] = None
    while not job.done():
        try:
            await asyncio.wait({job})
        except asyncio.CancelledError as exc:
            cancelled = exc
    if not job.cancelled():
        job.exception()   # seen: no "never retrieved" report
    return cancelled
