# SPDX-License-Identifier: LGPL-2.1-or-later
"""Flags, states and what pidlock_inspect() reports, as Python types."""

from __future__ import annotations

import ctypes
import enum
import errno
import os
import time
from dataclasses import dataclass, replace
from typing import Optional, Union

from . import _lib
from ._errors import raise_for

PathArg = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]


def path_bytes(path: PathArg) -> bytes:
    """The path as the C library is given it, checked as os.open() checks
    a path.  The library takes a C string, which ends at the first NUL:
    "dir/real\\0suffix" would reach it as "dir/real", a file the caller
    did not name, so a NUL raises ValueError.  An empty path names no
    file: FileNotFoundError (ENOENT), not the library's EINVAL."""
    raw = os.fsencode(path)
    if b"\0" in raw:
        raise ValueError("embedded null byte")
    if not raw:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), "")
    return raw


class Flags(enum.IntFlag):
    """The PIDLOCK_* flags of pidlock_new(3)."""

    NONE = 0
    FLOCK_ONLY = 1 << 0
    OFD_ONLY = 1 << 1
    #: The default after libpidlock 1.3.0 (no fdatasync of the record);
    #: kept for code written for 1.3.
    NO_SYNC = 1 << 2
    PLAIN_PID = 1 << 3
    KEEP_FILE = 1 << 4
    EXIT_RELEASES = 1 << 5
    #: A shared (read) lock, in libpidlock versions that have it; others
    #: refuse it (OSError EINVAL).
    SHARED = 1 << 6
    #: Only this host uses the directory: lock on a file system that
    #: keeps its locks on this host (NFS nolock, sshfs, ...), which is
    #: refused otherwise (OSError ENOLCK); libpidlock before 1.3.0
    #: refuses the flag (OSError EINVAL).
    HOST_LOCAL = 1 << 7
    #: Release leaves the file at the path while another process waits
    #: for it or has it open (flock(1) users of a path this library
    #: creates); libpidlock 1.3.0 and earlier refuse the flag (OSError
    #: EINVAL).
    KEEP_IF_USED = 1 << 8
    #: fdatasync(2) the record after each write, so that a power loss
    #: leaves it whole (the default up to 1.3.0, which refuses the flag:
    #: OSError EINVAL).
    SYNC = 1 << 9
    #: A fencing token for each grant, greater than every earlier
    #: holder's of the path (Lock.token; pidlock_token(3)).  Not with
    #: SHARED.  1.4.0 and later.
    TOKEN = 1 << 10


class Kind(enum.IntFlag):
    """Kernel lock kinds (PIDLOCK_KIND_*)."""

    NONE = 0
    FLOCK = 1 << 0
    OFD = 1 << 1


class State(enum.IntEnum):
    """enum pidlock_state: what is at a path."""

    FREE = 0
    HELD = 1
    HELD_SPEC = 2
    ABANDONED = 3
    STALE = 4
    UNREADABLE = 5
    NOT_LOCK_FILE = 6
    HELD_PIDFILE = 7

    @property
    def label(self) -> str:
        """The library's name of the state, such as "held"."""
        name = _lib.lib.pidlock_state_name(int(self))
        return name.decode() if name else self.name.lower()


@dataclass(frozen=True)
class LockInfo:
    """A lock file's state and holder (struct pidlock_info)."""

    state: State
    #: pid from the record, None if it names none.
    pid: Optional[int]
    #: Whether that pid is alive; None if unknown.
    pid_alive: Optional[bool]
    #: The record's timestamp= (Unix seconds), None if it has none.
    timestamp: Optional[int]
    kernel_locks: Kind
    marker: Kind
    #: pid the kernel names for a lock (/proc/locks), None if unknown.
    kernel_pid: Optional[int]
    #: The file's modification time, Unix seconds.
    mtime: int
    #: errno of the failure when state is UNREADABLE, else 0.
    error: int
    tag: str
    #: Whether the lock is held shared (False from a library without
    #: shared locks).
    shared: bool = False
    #: How many holders the kernel lists, at least (0 from a library
    #: without shared locks).
    holders: int = 0
    #: The kernel reports a lock whose holder this pid namespace cannot
    #: see (a process in another pid namespace, or on another host); the
    #: holder's pid is then unknown.  False from a library before 1.3.0.
    holder_hidden: bool = False
    #: The record names a kernel other than this one (another host of a
    #: shared file system, or this one before a reboot): its pid is not
    #: judged here, and pid_alive is None.  False before 1.3.0.
    foreign: bool = False
    #: The host that wrote the record, for a foreign one; else None.
    host: Optional[str] = None

    @property
    def age(self) -> Optional[float]:
        """Seconds since the record's timestamp, None without one."""
        if self.timestamp is None:
            return None
        return max(0.0, time.time() - self.timestamp)

    @classmethod
    def from_c(cls, info: _lib.Info) -> "LockInfo":
        try:
            state = State(info.state)
        except ValueError:  # a state of a later library version
            state = State.UNREADABLE
        alive = None if info.pid_alive < 0 else bool(info.pid_alive)
        return cls(
            state=state,
            pid=info.pid or None,
            pid_alive=alive,
            timestamp=info.timestamp if info.has_timestamp else None,
            kernel_locks=Kind(info.kernel_locks & 3),
            marker=Kind(info.marker & 3),
            kernel_pid=info.kernel_pid or None,
            mtime=info.mtime,
            error=info.error,
            tag=info.tag.decode("utf-8", "replace"),
            shared=bool(info.shared),
            holders=info.holders,
            holder_hidden=bool(info.holder_hidden),
            foreign=bool(info.foreign),
        )


def inspect(path: PathArg, *, stale_timeout: float = 0) -> LockInfo:
    """What is at path and who holds it, without taking the lock.

    stale_timeout (seconds, 0 for the library's default) decides when a
    spec-only holder's record counts as stale.  Raises OSError for a path
    that cannot be looked at (a directory, a symbolic link, ...); a
    missing or unreadable file is a state, not an error.
    """
    raw = path_bytes(path)
    info = _lib.Info()
    rc = _lib.lib.pidlock_inspect(raw, ctypes.byref(info), int(stale_timeout))
    if rc < 0:
        raise_for(rc, os.fsdecode(raw))
    result = LockInfo.from_c(info)
    if result.foreign:
        result = replace(result, host=_record_host(raw))
    return result


def _record_host(raw: bytes) -> Optional[str]:
    """The record's host= line; None when it names none, or when the
    record was replaced since and can no longer be read as one."""
    buf = ctypes.create_string_buffer(_lib.HOST_MAX + 1)
    if _lib.lib.pidlock_record_host(raw, buf, len(buf)) < 0 or not buf.value:
        return None
    return buf.value.decode("utf-8", "replace")
