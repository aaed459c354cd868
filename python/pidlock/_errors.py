# SPDX-License-Identifier: LGPL-2.1-or-later
"""The exceptions of the module and the errno mapping."""

from __future__ import annotations

import errno as _errno
import os
from typing import NoReturn, Optional, Protocol


class HolderInfo(Protocol):
    """What an exception reads of a holder: LockInfo (in _types) has it.

    Named here by its shape, not imported, so that _types (which raises
    these exceptions) is the only one of the two to import the other.
    """

    pid: Optional[int]
    tag: str

    @property
    def age(self) -> Optional[float]:
        """Seconds since the holder's record was written, or None."""


class Busy(TimeoutError):
    """The lock is held by somebody else (a try, or a wait that ran out).

    Attributes: path, and the holder as the library saw it last: pid
    (None if unknown), tag, age (seconds since the holder's record was
    written, None without a timestamp) and holder (a LockInfo, or None).
    """

    def __init__(self, path: str, holder: "Optional[HolderInfo]" = None,
                 code: int = _errno.ETIMEDOUT) -> None:
        super().__init__(code, os.strerror(code), path)
        self.path = path
        self.holder = holder
        self.pid: Optional[int] = holder.pid if holder else None
        self.tag: str = holder.tag if holder else ""
        self.age: Optional[float] = holder.age if holder else None

    def __str__(self) -> str:
        who = f" by pid {self.pid}" if self.pid else ""
        tag = f" ({self.tag})" if self.tag else ""
        return f"lock {self.path!r} is held{who}{tag}"

    def __repr__(self) -> str:
        # Not OSError's: "Busy(110, 'Connection timed out')" says
        # nothing of the lock, and the errno's text is no timeout's.
        who = f", pid={self.pid}" if self.pid else ""
        return f"{type(self).__name__}({self.path!r}{who})"

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (type(self), (self.path, self.holder, self.errno))


class Timeout(Busy):
    """filelock's exception name: the lock was not acquired in time.

    Carries filelock's lock_file attribute, and Busy's holder details.
    """

    def __init__(self, lock_file: str, holder: "Optional[HolderInfo]" = None,
                 code: int = _errno.ETIMEDOUT) -> None:
        super().__init__(lock_file, holder, code)
        self.lock_file = lock_file

    def __reduce__(self):  # type: ignore[no-untyped-def]
        # pickle makes it again from the path (what filelock's carries);
        # the holder's details are a snapshot that does not travel.
        return type(self), (self.lock_file,)

    def __str__(self) -> str:
        return f"The file lock '{self.lock_file}' could not be acquired."

    def __repr__(self) -> str:
        # filelock's: the class and the path, as it was made.
        return f"{type(self).__name__}({self.lock_file!r})"


class BrokenLock(OSError):
    """The path no longer names the file that was locked (ESTALE).

    Somebody removed or replaced the lock file during the hold; another
    process may have held the lock at the same time.
    """

    def __init__(self, path: str) -> None:
        super().__init__(_errno.ESTALE, os.strerror(_errno.ESTALE), path)


class LockLost(OSError):
    """The lock is no longer this holder's (ENOLCK): a file server gave
    it to another process once this one was cut off, or another process
    took the file's kernel locks (pidlock_check(3)).  Raised by
    refresh() and release() of a handle that held; release() has then
    closed the descriptor and written and removed nothing.  An OSError
    with errno ENOLCK, as before 1.4.0, so that handlers of OSError
    still catch it; a release() of a lock that was never held raises a
    plain OSError(ENOLCK), not this.  check() returns False instead.
    """

    def __init__(self, path: str) -> None:
        super().__init__(
            _errno.ENOLCK,
            "the lock is no longer held here: another process has it, or "
            "the file server gave it away (see pidlock_check(3))", path)

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (type(self), (self.filename,))


# The most a lock file of any locker holds (PIDLOCK_CONTENT_MAX).
CONTENT_MAX = 4096


class NotALockFile(OSError):
    """The path names a file with other data than a lock (EBADMSG).

    Nothing was changed: the library never writes, truncates or removes
    such a file.  An OSError with errno EBADMSG, as before 1.4.0, so that
    handlers of OSError still catch it; its message says what to do.
    """

    def __init__(self, path: str) -> None:
        super().__init__(
            _errno.EBADMSG,
            "not a lock file: it holds other data (a lock file is empty "
            f"or holds a lock record of at most {CONTENT_MAX} bytes); "
            "nothing was changed.  Use a separate lock file for the "
            f"lock, such as {path + '.lock'!r}", path)

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (type(self), (self.filename,))


def raise_for(rc: int, path: str, held: bool = False) -> NoReturn:
    """Raise the exception for a negative errno return value; held:
    the handle held before the call, so that ENOLCK is a loss."""
    code = -rc
    if code == _errno.ENOLCK and held:
        raise LockLost(path)
    if code == _errno.ESTALE:
        raise BrokenLock(path)
    if code == _errno.EBADMSG:
        raise NotALockFile(path)
    # OSError picks its subclass from the code (FileNotFoundError, ...).
    raise OSError(code, os.strerror(code), path)
