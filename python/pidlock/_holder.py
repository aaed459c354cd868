# SPDX-License-Identifier: LGPL-2.1-or-later
"""The holder, from outside: pidfds of the processes proven to hold a
lock, and a wait until nobody holds it, without taking it."""

from __future__ import annotations

import ctypes
import errno
import math
import os
import time
from typing import List, Optional, Tuple

from . import _lib
from ._errors import raise_for
from ._types import PathArg, path_bytes

#: How many holders one call brings back at most; a shared lock with more
#: is asked again with room for all.
_ROOM = 16


def holder_pidfds(path: PathArg) -> List[Tuple[int, int]]:
    """(pid, pidfd) of each process that holds the lock at path, each
    proven to hold its kernel lock after its pidfd was opened, so that a
    signal sent with signal.pidfd_send_signal() reaches the holder or
    nobody, never a process that took over its pid.  The caller closes
    the pidfds.  One for an exclusive lock (the one its record names),
    every holder of a shared one.

    Raises ProcessLookupError (ESRCH) when the lock is free, and OSError
    with ENOLCK when its holder holds no kernel lock (a spec-only record,
    a hand-written pidfile: nothing can be proven), EREMOTE when the
    holder is out of sight (another pid namespace or host).
    """
    raw = path_bytes(path)
    room = _ROOM
    while True:
        fds = (ctypes.c_int * room)()
        pids = (ctypes.c_int * room)()
        rc = _lib.lib.pidlock_holder_pidfds(raw, fds, pids, room)
        if rc < 0:
            raise_for(rc, os.fsdecode(raw))
        got = [(int(pids[i]), int(fds[i])) for i in range(min(rc, room))]
        if rc <= room:
            return got
        # More holders than room: give these back, ask with room for all.
        for _, fd in got:
            os.close(fd)
        room = rc


def wait_free(path: PathArg, timeout: Optional[float] = None) -> bool:
    """Wait until nobody holds the lock at path, without taking it: True
    once it is free, False if timeout seconds (None: no limit, 0: only
    look) passed first.  Asleep in the kernel all along.  A signal
    handler that returns does not end the wait (PEP 475)."""
    raw = path_bytes(path)
    deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
    while True:
        if deadline is None:
            ms = -1
        else:
            ms = max(0, math.ceil((deadline - time.monotonic()) * 1000))
        rc = _lib.lib.pidlock_wait_free(raw, ms)
        if rc == 0:
            return True
        if rc in (-errno.ETIMEDOUT, -errno.EWOULDBLOCK):
            return False
        if rc != -errno.EINTR:
            raise_for(rc, os.fsdecode(raw))
