# SPDX-License-Identifier: LGPL-2.1-or-later
"""pidlock.Slots: at most n holders at once (pidlock_slots_new(3))."""

from __future__ import annotations

import ctypes
import errno
import os
from typing import Optional

from . import _lib, _log
from ._errors import Busy, raise_for
from ._lock import DEFAULT, _Default, retrying, timeout_ms
from ._types import Flags, PathArg, path_bytes


class Slots(_lib.Owner):
    """A semaphore of n slots on path: slot k is the lock file path.k.

    Slots(path, n, *, timeout=None, flags=Flags.NONE)

    acquire() takes a free slot and returns its number (0 to n-1), also
    kept in .slot; release() lets it go.  Every slot is a full lock of
    its own: a holder killed with SIGKILL frees its slot at once, and a
    wait wakes when any slot frees.  Every user of the path must give
    the same n.  As a context manager, the with-block holds one slot.
    A Slots is for one thread at a time.  Paths are checked as for Lock
    (a NUL: ValueError); attempts are logged on the "pidlock" logger.
    """

    def __init__(self, path: PathArg, n: int, *,
                 timeout: Optional[float] = None,
                 flags: Flags = Flags.NONE) -> None:
        raw = path_bytes(path)
        self._path = os.fsdecode(raw)
        self._handle: Optional[int] = None
        self.timeout = timeout
        self.n = n
        self.slot: Optional[int] = None
        if n < 0:
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL), self._path)
        handle = _lib.Handle()
        rc = _lib.lib.pidlock_slots_new(ctypes.byref(handle), raw, n, int(flags))
        if rc < 0:
            raise_for(rc, self._path)
        self._handle = handle.value

    def _live(self) -> int:
        if self._handle is None:
            raise ValueError(f"semaphore {self._path!r} is closed")
        return self._handle

    @property
    def path(self) -> str:
        """The semaphore's path, as given (slot k is path.k)."""
        return self._path

    def acquire(self, timeout: "Optional[float] | _Default" = DEFAULT) -> int:
        """Take a free slot and return its number.

        timeout in seconds (default: the Slots'): None or negative waits
        without a limit, 0 tries once.  Raises Busy if every slot stays
        held, OSError with the library's errno for anything else.  As
        for Lock.acquire(), a signal whose handler returns does not end
        the wait, and one whose handler raises leaves no slot held.
        """
        limit = self.timeout if isinstance(timeout, _Default) else timeout
        ms = timeout_ms(limit)
        mine = False
        try:
            handle = self._live()
            mine = self.slot is None
            _log.debug(_log.ATTEMPT_ACQUIRE, self, self._path)
            rc = retrying(_lib.lib.pidlock_slots_acquire, handle, ms)
            if rc >= 0:
                self.slot = rc
                _log.debug(_log.ACQUIRED, self, f"{self._path}.{rc}")
                return rc
        except BaseException:
            if mine:
                _lib.settle(self._let_go_untold)
            raise
        if rc in (-errno.EWOULDBLOCK, -errno.ETIMEDOUT):
            code = errno.EWOULDBLOCK if ms == 0 else errno.ETIMEDOUT
            _log.debug(_log.FAILED_AT_ONCE if ms == 0 else _log.TIMED_OUT,
                       self, self._path)
            raise Busy(self._path, None, code)
        raise_for(rc, self._path)

    def _let_go_untold(self) -> None:
        # pidlock_slots_slot() tells which slot the handle holds, if any:
        # after an interrupt, one that nobody was told of.
        handle = self._handle
        if handle is not None and _lib.lib.pidlock_slots_slot(handle) >= 0:
            _lib.lib.pidlock_slots_release(handle)
        self.slot = None

    def release(self) -> None:
        """Let go of the slot held; OSError(ENOLCK) if none is.  An
        interrupted release still lets go."""
        try:
            handle = self._live()
            held = self.slot
            _log.debug(_log.ATTEMPT_RELEASE, self, self._path)
            rc = _lib.lib.pidlock_slots_release(handle)
            if rc != -errno.ENOLCK:
                self.slot = None
            if rc == 0:
                _log.debug(_log.RELEASED, self, f"{self._path}.{held}")
        except BaseException:
            _lib.settle(self._let_go_untold)
            raise
        if rc < 0:
            raise_for(rc, self._path)

    def close(self) -> None:
        """Let go of the slot held, if any, and free the handle."""
        if self._handle is None:
            return
        _lib.settle(self._let_go_untold)
        handle, self._handle = self._handle, None
        if handle is not None:
            self._free_handle(handle)

    def _free_handle(self, handle: int) -> None:
        _lib.lib.pidlock_slots_free(handle)

    def __enter__(self) -> int:
        # As Lock.__enter__(): an interrupt after acquire() returned.
        mine = self.slot is None
        try:
            return self.acquire()
        except BaseException:
            if mine:
                _lib.settle(self._let_go_untold)
            raise

    def __repr__(self) -> str:
        held = f"slot {self.slot}" if self.slot is not None else "no slot"
        return f"<pidlock.Slots {self._path!r} n={self.n} {held}>"

