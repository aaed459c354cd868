# SPDX-License-Identifier: LGPL-2.1-or-later
"""lock_descriptor() and unlock_descriptor(): filelock 3.30's functions
over pidlock_lock_fd(3) and pidlock_unlock_fd(3), the lock taken on a
descriptor that the caller opened and keeps."""

from __future__ import annotations

import ctypes
import errno
import math
import os
from typing import Optional

from . import _lib
from ._errors import raise_for
from ._lock import retrying
from ._types import Flags


def _fd_path(fd: int) -> str:
    """The path that fd was opened by, as the kernel names it now; an fd
    that is not open raises OSError(EBADF), as os.fstat() does."""
    os.fstat(fd)
    return os.readlink(f"/proc/self/fd/{int(fd)}")


def _with_handle(fd: int, tag: Optional[str], flags: Flags, call) -> "tuple[int, str]":  # type: ignore[no-untyped-def]
    """call(handle) on a handle made for fd's path and freed after it: it
    only names the path and settings; the hold is the descriptor's."""
    path = _fd_path(fd)
    handle = _lib.Handle()
    rc = _lib.lib.pidlock_new(ctypes.byref(handle), os.fsencode(path), int(flags))
    if rc < 0:
        raise_for(rc, path)
    try:
        if tag is not None:
            rc = _lib.lib.pidlock_set_tag(handle, tag.encode("utf-8"))
            if rc < 0:
                raise_for(rc, path)
        return int(call(handle.value)), path
    finally:
        _lib.lib.pidlock_free(handle)


def lock_descriptor(fd: int, *, blocking: bool = True,
                    poll_interval: float = 0.05, timeout: Optional[float] = None,
                    tag: Optional[str] = None, flags: Flags = Flags.NONE) -> bool:
    """Take the lock on fd, a descriptor the caller opened (for writing)
    on the lock file, and keeps: the lock belongs to its open file
    description until unlock_descriptor() or its last close.

    blocking=False tries once and returns False if the lock is held;
    otherwise it waits (timeout seconds if given, then False) and returns
    True.  poll_interval is validated as filelock does and not used: the
    wait wakes when the holder lets go.  Unlike filelock's, the file gets
    pidlock's record (pid, timestamp, tag; keep=1, the file stays) and a
    file that is not a lock file raises OSError(EBADMSG); see
    pidlock_lock_fd(3).  Raises OSError for anything else (EBADF: fd is
    not open for writing)."""
    if blocking and (not math.isfinite(poll_interval) or poll_interval <= 0):
        raise ValueError("poll_interval must be finite and greater than 0, "
                         f"got {poll_interval}")
    if not blocking:
        ms = 0
    elif timeout is None or timeout < 0:
        ms = -1
    else:
        ms = max(1, math.ceil(timeout * 1000)) if timeout > 0 else 0
    rc, path = _with_handle(fd, tag, flags, lambda h: retrying(
        lambda handle, left: _lib.lib.pidlock_lock_fd(handle, fd, 0, left), h, ms))
    if rc == 0:
        return True
    if rc in (-errno.EWOULDBLOCK, -errno.ETIMEDOUT):
        return False
    raise_for(rc, path)
    return False


def unlock_descriptor(fd: int) -> None:
    """Let go of the lock that fd's open file description holds (the
    record says released; fd stays open, the file at its path).  Raises
    OSError: ENOLCK if another description holds the lock."""
    rc, path = _with_handle(fd, None, Flags.NONE,
                            lambda h: _lib.lib.pidlock_unlock_fd(h, fd))
    if rc < 0:
        raise_for(rc, path)
