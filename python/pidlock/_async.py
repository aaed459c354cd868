# SPDX-License-Identifier: LGPL-2.1-or-later
"""pidlock.AsyncLock: waiting for a lock in an asyncio event loop.

The wait is pidlock_acquire_async(3): the library hands over a
descriptor that becomes readable when the lock may be free and the
longest time to wait before trying again; the loop watches it with
add_reader() and a timer.  No thread, no executor.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import os
import time
from types import TracebackType
from typing import Optional, Type

from . import _lib
from ._errors import Busy, raise_for
from ._lock import DEFAULT, Lock, _Default, timeout_ms
from ._types import Flags, LockInfo, PathArg


class AsyncLock:
    """Lock for asyncio: ``async with AsyncLock(path): ...``.

    The arguments are those of Lock.  acquire() is a coroutine; the
    rest (release, refresh, verify, fileno, path) does not wait and is
    plain.  Cancelling a waiting acquire() cancels the library's wait.
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
        """
        limit = self._lock.timeout if isinstance(timeout, _Default) else timeout
        ms = timeout_ms(limit)
        deadline = None if ms < 0 else time.monotonic() + ms / 1000
        loop = asyncio.get_running_loop()
        lock = self._lock
        handle = lock._live()
        pollfd = ctypes.c_int(-1)
        wait_ms = ctypes.c_int(0)
        # A call made before the library's due time tries nothing and
        # forgets the holder it saw: keep the last one seen.
        holder: Optional[LockInfo] = None
        try:
            while True:
                rc = _lib.lib.pidlock_acquire_async(
                    handle, ctypes.byref(pollfd), ctypes.byref(wait_ms))
                if rc == 0:
                    lock._owner = os.getpid()
                    return self
                if rc != -errno.EWOULDBLOCK:
                    raise_for(rc, lock.path)
                holder = lock.holder() or holder
                delay = wait_ms.value / 1000
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise Busy(lock.path, holder,
                                   errno.EWOULDBLOCK if ms == 0 else errno.ETIMEDOUT)
                    delay = min(delay, left)
                await _readable_or_later(loop, pollfd.value, delay)
        except BaseException:
            # Busy, an error or a cancellation: end the library's wait (a
            # wait that failed has none under way; close says ENOLCK).
            if not lock.locked:
                _lib.lib.pidlock_close(handle)
            raise

    def release(self) -> None:
        self._lock.release()

    def refresh(self) -> None:
        self._lock.refresh()

    def verify(self) -> None:
        self._lock.verify()

    def fileno(self) -> int:
        return self._lock.fileno()

    def holder(self) -> Optional[LockInfo]:
        return self._lock.holder()

    def close(self) -> None:
        self._lock.close()

    async def __aenter__(self) -> "AsyncLock":
        return await self.acquire()

    async def __aexit__(self, exc_type: Optional[Type[BaseException]],
                        exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "locked" if self.locked else "unlocked"
        return f"<pidlock.AsyncLock {self.path!r} {state}>"


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
