# SPDX-License-Identifier: LGPL-2.1-or-later
"""pidlock.ReadWriteLock: filelock 3.21's read-write lock, on pidlock's
shared locks (a reader holds the file shared, a writer exclusive) rather
than on an SQLite database."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import threading
import time
import weakref
from concurrent import futures
from typing import Any, AsyncIterator, Iterator, Optional, Tuple

from . import _lib
from ._async import Attempt, drain, take_async, try_once
from ._errors import Busy, Timeout
from ._lock import Lock, timeout_ms
from ._types import LockInfo, PathArg


class ReadWriteReturnProxy:
    """What acquire_read() and acquire_write() return: ``with`` on it
    releases one level."""

    def __init__(self, lock: "ReadWriteLock") -> None:
        self.lock = lock

    def __enter__(self) -> "ReadWriteLock":
        return self.lock

    def __exit__(self, *exc: Any) -> None:
        self.lock.release()


class ReadWriteLock:
    """Readers together, or one writer, across processes.

    ReadWriteLock(lock_file, timeout=-1, *, blocking=True, is_singleton=True)

    As filelock's: reentrant in one mode (reads nest; writes nest in the
    thread that took the write); read to write (upgrade) and write to
    read (downgrade) raise RuntimeError; release() of nothing held raises
    RuntimeError; is_singleton=True (the default) gives one object per
    resolved path, and asking it again with another timeout or blocking
    raises ValueError.  After os.fork() the child's object holds nothing
    and raises RuntimeError when used; release() and close() there do
    nothing.  Unlike filelock's, lock_file is a pidlock lock file (no
    SQLite database): the file is removed when the last holder lets go.
    """

    _instances: "weakref.WeakValueDictionary[str, ReadWriteLock]" = weakref.WeakValueDictionary()
    _instances_guard = threading.Lock()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._instances = weakref.WeakValueDictionary()

    def __new__(cls, lock_file: PathArg, timeout: float = -1, *,
                blocking: bool = True, is_singleton: bool = True) -> "ReadWriteLock":
        if not is_singleton:
            return super().__new__(cls)
        key = os.path.realpath(os.fsdecode(lock_file))
        with cls._instances_guard:
            found = cls._instances.get(key)
            if found is None:
                found = super().__new__(cls)
                cls._instances[key] = found
                return found
        if found.timeout != timeout or found.blocking != blocking:
            raise ValueError(f"Singleton lock created with timeout={found.timeout}, "
                             f"blocking={found.blocking}, cannot be changed to "
                             f"timeout={timeout}, blocking={blocking}")
        return found

    @classmethod
    def get_lock(cls, lock_file: PathArg, timeout: float = -1, *,
                 blocking: bool = True) -> "ReadWriteLock":
        """The singleton for lock_file."""
        return cls(lock_file, timeout, blocking=blocking)

    def __init__(self, lock_file: PathArg, timeout: float = -1, *,
                 blocking: bool = True, is_singleton: bool = True) -> None:
        if getattr(self, "_ready", False):
            return
        self.lock_file = os.fsdecode(lock_file)
        # The file is the one the path named when the lock was made: a
        # later chdir() does not move a relative path to another lock.
        self._path = os.path.abspath(self.lock_file)
        self.timeout = timeout
        self.blocking = blocking
        self._guard = threading.RLock()
        # The hold's state, under filelock's names: code written for its
        # ReadWriteLock reads them (the level, "read"/"write", the writer).
        self._lock_level = 0
        self._current_mode: Optional[str] = None
        self._write_thread_id: Optional[int] = None
        self._held: Optional[Lock] = None
        self._closed = False
        self._creator_pid = os.getpid()
        _LIVE.add(self)
        self._ready = True

    def acquire_read(self, timeout: float = -1, *,
                     blocking: bool = True) -> ReadWriteReturnProxy:
        """Take the lock shared (with other readers); raises Timeout."""
        return self._acquire("read", timeout, blocking)

    def acquire_write(self, timeout: float = -1, *,
                      blocking: bool = True) -> ReadWriteReturnProxy:
        """Take the lock alone; raises Timeout."""
        return self._acquire("write", timeout, blocking)

    @contextlib.contextmanager
    def read_lock(self, timeout: Optional[float] = None, *,
                  blocking: Optional[bool] = None) -> Iterator[None]:
        self.acquire_read(self.timeout if timeout is None else timeout,
                          blocking=self.blocking if blocking is None else blocking)
        try:
            yield
        finally:
            self.release()

    @contextlib.contextmanager
    def write_lock(self, timeout: Optional[float] = None, *,
                   blocking: Optional[bool] = None) -> Iterator[None]:
        self.acquire_write(self.timeout if timeout is None else timeout,
                           blocking=self.blocking if blocking is None else blocking)
        try:
            yield
        finally:
            self.release()

    def _usable(self) -> None:
        if self._creator_pid != os.getpid():
            # "was invalidated by fork()" is filelock's wording for
            # its read-write lock, which programs match.
            raise RuntimeError(f"ReadWriteLock on {self.lock_file} was invalidated "
                               "by fork() (made before os.fork()): make a new "
                               "one in the child")
        if self._closed:
            raise RuntimeError(f"ReadWriteLock on {self.lock_file} is closed")

    def _again(self, mode: str) -> ReadWriteReturnProxy:
        if self._current_mode != mode:
            turn = "downgrade" if mode == "read" else "upgrade"
            raise RuntimeError(f"Cannot acquire {mode} lock on {self.lock_file}: "
                               f"already holding a {self._current_mode} lock ({turn} not allowed)")
        if mode == "write" and self._write_thread_id != threading.get_ident():
            raise RuntimeError(f"Cannot acquire write lock on {self.lock_file} from "
                               f"thread {threading.get_ident()} while it is held by "
                               f"thread {self._write_thread_id}")
        self._lock_level += 1
        return ReadWriteReturnProxy(self)

    def _acquire(self, mode: str, timeout: float,
                 blocking: bool) -> ReadWriteReturnProxy:
        """The take of either mode."""
        self._usable()
        with self._guard:
            if self._lock_level > 0:
                return self._again(mode)
            lock = Lock(self._path, shared=(mode == "read"))
            wait = 0 if not blocking else (None if timeout < 0 else timeout)
            try:
                lock.acquire(wait)
            except Busy as busy:
                lock.close()
                raise Timeout(self.lock_file, busy.holder, busy.errno) from None
            except BaseException:
                lock.close()
                raise
            self._record(lock, mode)
            return ReadWriteReturnProxy(self)

    def _record(self, lock: Lock, mode: str) -> None:
        self._held, self._current_mode, self._lock_level = lock, mode, 1
        self._write_thread_id = threading.get_ident() if mode == "write" else None

    def _again_or_none(self, mode: str, took: list) -> bool:
        """AsyncReadWriteLock's first call: one level more of what is
        held (or the refusal), and True (took gets it); False when
        nothing is held."""
        self._usable()
        with self._guard:
            if self._lock_level == 0:
                return False
            self._again(mode)
            took.append(True)
            return True

    def _took(self, lock: Lock, mode: str) -> None:
        """AsyncReadWriteLock's call whose try took lock's handle: the
        hold, or one level more of a hold that another task of this
        lock's took meanwhile (this handle is let go; a reader beside
        our own reader gets in at once)."""
        lock._owner = os.getpid()
        with self._guard:
            if self._lock_level == 0:
                self._record(lock, mode)
                return
            _lib.settle(lock.close)
            self._again(mode)

    def release(self, *, force: bool = False) -> None:
        """One level down; let go at 0 (at once if force).  RuntimeError
        if nothing is held (and not force)."""
        if self._creator_pid != os.getpid():
            return
        with self._guard:
            if self._lock_level == 0:
                if force:
                    return
                raise RuntimeError(f"Cannot release a lock on {self.lock_file} "
                                   f"(lock id: {id(self)}) that is not held")
            self._lock_level = 0 if force else self._lock_level - 1
            if self._lock_level > 0:
                return
            held, self._held = self._held, None
            self._current_mode = self._write_thread_id = None
            if held is not None:
                _lib.settle(held.close)

    def close(self) -> None:
        """Let go of everything; the object is not usable afterwards."""
        if self._creator_pid != os.getpid():
            return
        self.release(force=True)
        self._closed = True

    def __del__(self) -> None:
        held = getattr(self, "_held", None)
        if held is not None and getattr(self, "_creator_pid", None) == os.getpid():
            held.close()

    def _after_fork_in_child(self) -> None:
        held, self._held = self._held, None
        self._guard = threading.RLock()
        self._lock_level = 0
        self._current_mode = self._write_thread_id = None
        if held is not None:
            held._guard = threading.RLock()
            held.close()      # the child's descriptor only (see Lock)


_LIVE: "weakref.WeakSet[ReadWriteLock]" = weakref.WeakSet()


def _reset_in_child() -> None:
    for lock in list(_LIVE):
        if lock._creator_pid != os.getpid():
            lock._after_fork_in_child()
    classes = [ReadWriteLock]
    while classes:
        cls = classes.pop()
        cls._instances = weakref.WeakValueDictionary()
        cls._instances_guard = threading.Lock()
        classes.extend(cls.__subclasses__())


os.register_at_fork(after_in_child=_reset_in_child)


class AsyncReadWriteReturnProxy:
    """What AsyncReadWriteLock's acquires return: ``async with`` on it
    releases one level."""

    def __init__(self, lock: "AsyncReadWriteLock") -> None:
        self.lock = lock

    async def __aenter__(self) -> "AsyncReadWriteLock":
        return self.lock

    async def __aexit__(self, *exc: Any) -> None:
        await self.lock.release()


class AsyncReadWriteLock:
    """ReadWriteLock for asyncio: each call runs in an executor (by
    default one thread of its own, which close() shuts down), so the
    write lock's thread is always that one.  A wait is the event
    loop's, between tries that are short calls: no thread waits.

    AsyncReadWriteLock(lock_file, timeout=-1, *, blocking=True,
    is_singleton=True, loop=None, executor=None)

    A cancelled acquire lets go of what its executor call takes."""

    def __init__(self, lock_file: PathArg, timeout: float = -1, *,
                 blocking: bool = True, is_singleton: bool = True,
                 loop: "Optional[asyncio.AbstractEventLoop]" = None,
                 executor: "Optional[futures.Executor]" = None) -> None:
        self._lock = ReadWriteLock(lock_file, timeout, blocking=blocking,
                                   is_singleton=is_singleton)
        self._loop = loop
        self._owns_executor = executor is None
        self._executor = executor or futures.ThreadPoolExecutor(max_workers=1)
        self._closed = False
        self._orphan: Optional[tuple] = None

    @property
    def lock_file(self) -> str:
        return self._lock.lock_file

    @property
    def timeout(self) -> float:
        return self._lock.timeout

    @property
    def blocking(self) -> bool:
        return self._lock.blocking

    @property
    def loop(self) -> "Optional[asyncio.AbstractEventLoop]":
        return self._loop

    @property
    def executor(self) -> "futures.Executor":
        return self._executor

    async def _run(self, func, *args: Any, **kwargs: Any) -> Any:  # type: ignore[no-untyped-def]
        loop = self._loop or asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor, functools.partial(func, *args, **kwargs))

    async def _acquire(self, mode: str, timeout: float,
                       blocking: bool) -> AsyncReadWriteReturnProxy:
        """Each try is one short call in the executor (where the write
        lock's thread is); the waits between tries are the loop's
        (take_async()), so no thread of the executor waits for the lock,
        and the tasks of one loop that wait for one path cost one kernel
        waiter.  A reentrant acquire is decided in the executor first."""
        rw = self._lock
        rw._usable()
        loop = self._loop or asyncio.get_running_loop()
        await self._settle_orphan(loop)
        again: list = []
        job = loop.run_in_executor(self._executor, functools.partial(
            rw._again_or_none, mode, again))
        if await self._outcome(loop, job, again, None):
            return AsyncReadWriteReturnProxy(self)
        ms = timeout_ms(0 if not blocking else (None if timeout < 0 else timeout))
        deadline = None if ms < 0 else time.monotonic() + ms / 1000
        lock = Lock(rw._path, shared=(mode == "read"))
        took: list = []
        try:
            await take_async(lock, ms, deadline, None,
                             attempt=self._attempt(loop, mode, took))
        except Busy as busy:
            lock.close()
            raise Timeout(rw.lock_file, busy.holder, busy.errno) from None
        except BaseException:
            if not took and self._orphan is None:
                lock.close()
            raise
        return AsyncReadWriteReturnProxy(self)

    def _attempt(self, loop: asyncio.AbstractEventLoop, mode: str,
                 took: list) -> Attempt:
        """One try in the executor; once the handle holds, the
        ReadWriteLock records the hold in the same call (took gets it).
        See _outcome() for a cancellation or an interrupt."""
        rw = self._lock

        def call(lock: Lock) -> Tuple[int, int, int]:
            result = try_once(lock)
            if result[0] == 0:
                rw._took(lock, mode)
                took.append(True)
            return result

        async def attempt(lock: Lock) -> Tuple[int, int, int]:
            job = loop.run_in_executor(self._executor, call, lock)
            result: Tuple[int, int, int] = await self._outcome(loop, job, took, lock)
            return result
        return attempt

    async def _outcome(self, loop: asyncio.AbstractEventLoop,
                       job: "asyncio.Future[Any]", took: list,
                       lock: Optional[Lock]) -> Any:
        """job's result.  A cancellation waits for the call to end, lets
        go of what it took, and then goes on; a call that the executor
        cancelled before it ran raises that cancellation (with the
        caller's as its __context__).  An interrupt that is no
        cancellation leaves the call running: the next acquire waits for
        it (_settle_orphan())."""
        try:
            await asyncio.wait({job})
        except asyncio.CancelledError:
            await drain(job)
            if job.cancelled():
                job.result()   # the executor's (__context__: the caller's)
            error = job.exception()
            if error is None and took:
                await self._let_go_taken(loop)
            elif error is not None:
                raise error    # a failure: the cancellation its __context__
            raise
        except BaseException:
            if not job.done():
                self._orphan = (job, took, lock)
            raise
        return job.result()

    async def _settle_orphan(self, loop: asyncio.AbstractEventLoop) -> None:
        """A try that an interrupt left running: wait for it, and let go
        of what it took, before this lock is used again."""
        if self._orphan is None:
            return
        job, took, lock = self._orphan
        cancelled = await drain(job)
        self._orphan = None
        if took:
            await self._let_go_taken(loop)
        elif lock is not None:
            lock.close()
        if cancelled is not None:
            raise cancelled

    async def _let_go_taken(self, loop: asyncio.AbstractEventLoop) -> None:
        """What a cancelled acquire's executor call took is let go there
        (through a cancellation of this task too); here, if the executor
        was shut down meanwhile and takes no more calls."""
        try:
            job = loop.run_in_executor(self._executor, self._lock.release)
        except RuntimeError:
            self._lock.release()
            return
        await drain(job)
        job.result()

    async def acquire_read(self, timeout: float = -1, *,
                           blocking: bool = True) -> AsyncReadWriteReturnProxy:
        return await self._acquire("read", timeout, blocking)

    async def acquire_write(self, timeout: float = -1, *,
                            blocking: bool = True) -> AsyncReadWriteReturnProxy:
        return await self._acquire("write", timeout, blocking)

    @contextlib.asynccontextmanager
    async def read_lock(self, timeout: Optional[float] = None, *,
                        blocking: Optional[bool] = None) -> AsyncIterator[None]:
        await self.acquire_read(self.timeout if timeout is None else timeout,
                                blocking=self.blocking if blocking is None else blocking)
        try:
            yield
        finally:
            await self.release()

    @contextlib.asynccontextmanager
    async def write_lock(self, timeout: Optional[float] = None, *,
                         blocking: Optional[bool] = None) -> AsyncIterator[None]:
        await self.acquire_write(self.timeout if timeout is None else timeout,
                                 blocking=self.blocking if blocking is None else blocking)
        try:
            yield
        finally:
            await self.release()

    async def release(self, *, force: bool = False) -> None:
        # In a forked child the executor's thread is not there (a call
        # would wait for ever), and there is nothing to let go: the
        # hold is the parent's (ReadWriteLock.release()).
        if self._inherited():
            return
        await self._run(self._lock.release, force=force)

    def _inherited(self) -> bool:
        return self._lock._creator_pid != os.getpid()

    async def close(self) -> None:
        """Let go, and shut down the executor if it is this lock's own.
        A second close() does nothing; in a forked child, close() only
        marks the lock closed."""
        if self._closed:
            return
        if self._inherited():
            self._closed = True
            return
        await self._run(self._lock.close)
        self._closed = True
        self._shut_own_executor()

    def _shut_own_executor(self) -> None:
        if self._owns_executor:
            self._executor.shutdown(wait=False)

    def __del__(self) -> None:
        # An executor of its own would keep its thread for nothing once
        # no one can reach this lock; a given one is the caller's.
        if getattr(self, "_executor", None) is not None:
            self._shut_own_executor()
