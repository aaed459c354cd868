# SPDX-License-Identifier: LGPL-2.1-or-later
"""File locks that never go stale: Python binding of libpidlock.

    import pidlock

    with pidlock.Lock("/run/lock/backup.lock", timeout=10, tag="nightly"):
        ...                      # one process at a time

    try:
        with pidlock.Lock(path, timeout=0):
            ...
    except pidlock.Busy as busy:
        print(f"held by pid {busy.pid} ({busy.tag}) for {busy.age:.0f} s")

A lock dies with its holder (kernel locks), so a crashed process never
leaves a stale lock; the file names the holder (pid, time, tag), and is
removed on release only by the process it names.

Contents: Lock (a context manager), AsyncLock (``async with``, waits in
the event loop on the library's descriptor), inspect() and LockInfo,
Flags, Kind and State, the exceptions Busy (a TimeoutError), BrokenLock
(ESTALE: the file was removed or replaced during the hold), LockLost
(ENOLCK: refresh() or release() found the lock another's, see check())
and Timeout; other failures raise OSError with the library's errno.
__version__ is the package's version (configure.ac's).

Signals: a handler that returns does not end a wait (PEP 475: Lock,
FileLock and Slots wait on with the time left).  A handler that raises
(Ctrl-C's KeyboardInterrupt) ends it; an acquire() or with-statement
that the exception comes out of leaves nothing held, even when the
library had just taken the lock, and an interrupted release() still
lets go.  CPython may run a handler at the first line of __exit__,
before it has let go: the lock is then held and locked says so.  Tasks
sharing one AsyncLock take their turns, as with asyncio.Lock.

Paths are checked as os.open() checks them, in every entry point: a
NUL raises ValueError (the C library would stop reading the path there
and lock another file), an empty path FileNotFoundError.  Acquire and
release attempts are logged at DEBUG on the "pidlock" logger.

filelock compatibility: ``from pidlock import FileLock, Timeout`` in
place of ``from filelock import ...``.  FileLock takes filelock's
constructor (lock_file, timeout=-1, mode=None, thread_local=True, *,
blocking=True, is_singleton=False), acquire(timeout=None,
poll_interval=0.05, *, blocking=None) returning a proxy for ``with``,
release(force=False), is_locked, lock_counter, the nesting count, the
per-thread holds of thread_local, and Timeout with lock_file (a
TimeoutError, with filelock's str() and repr()).  As filelock does, it
makes the missing directories of the path (with the umask), makes the
file 0o666 minus the umask when no mode is given, as filelock's
os.open() does (mode reads 0o644 then), and gives it exactly a ``mode``
given, whatever the umask, logs its attempts on the
"filelock" logger with filelock's messages (also handed to the
handlers of the "pidlock" logger), raises NotImplementedError where
the file system cannot take the kernel's locks (the library's ENOLCK),
and keeps each class's singletons apart.  What differs:

* the lock file is removed on release (filelock leaves it); on a path
  that filelock or flock(1) users still share, pass
  flags=Flags.KEEP_FILE (see doc/protocol.md, "Kept files"): filelock
  opens the path and then locks, and would be left holding a removed
  file.  (filelock also truncates the file at each try, so while its
  users wait the record reads empty; the kernel locks still exclude.);
* the file holds the holder's record (pid=, timestamp=, tag=), not
  nothing; a file with other content is refused (OSError EBADMSG), as
  are symbolic links (ELOOP);
* a thread that ends holding a thread-local hold lets go of it (its
  handle is freed); filelock keeps such a lock until the process ends;
* a wait wakes when the holder lets go; poll_interval only sets how
  often cancel_check is asked;
* lifetime is validated, then ignored with a warning, as filelock's
  native locks do;
* Timeout also carries the holder's pid, tag and age;
* AsyncFileLock (with AsyncUnixFileLock, BaseAsyncFileLock),
  BaseFileLock, ReadWriteLock and AsyncReadWriteLock are provided;
  SoftFileLock and WindowsFileLock are not (doc/migrate-filelock.md says
  what of filelock 3.32 is, and what is not yet).

The library is the package's own build (a wheel pip built where the
system had none carries it), else libpidlock.so.0 of the module's own
installation (the libdir make install put it in: ./configure
--prefix=/opt/x needs no LD_LIBRARY_PATH), else the system's; the
environment variable PIDLOCK_LIBRARY names another file, tried alone
(tests in the build tree use lib/.libs/libpidlock.so.0).  pidlock.LIBRARY
names the one loaded.  When none loads, the ImportError names each file
tried and why it failed.  Binding: ctypes, no compiled extension module,
no dependency outside the standard library.
"""

from . import _lib as _lib_module
from ._errors import BrokenLock, Busy, LockLost, NotALockFile, Timeout
from ._types import Flags, Kind, LockInfo, State, inspect
from ._lock import Lock
from ._slots import Slots
from ._async import AsyncLock
from ._filelock import (AcquireReturnProxy, BaseFileLock, CloseErrorPolicy,
                        ContextErrorPolicy, FileLock, UnixFileLock)
from ._asyncfilelock import (AsyncAcquireReturnProxy, AsyncFileLock,
                             AsyncUnixFileLock, BaseAsyncFileLock)
from ._holder import holder_pidfds, wait_free
from ._descriptor import lock_descriptor, unlock_descriptor
from ._readwrite import (AsyncReadWriteLock, AsyncReadWriteReturnProxy,
                         ReadWriteLock)

def _version() -> str:
    """configure.ac's version: from _paths.py, which make install and
    the wheel write; in a source tree run as it is, from AC_INIT."""
    import os
    import re
    try:
        from ._paths import VERSION   # type: ignore[attr-defined]
    except ImportError:
        VERSION = "@"
    if not VERSION.startswith("@"):
        return str(VERSION)
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        with open(os.path.join(top, "configure.ac"), encoding="utf-8") as f:
            m = re.search(r"^AC_INIT\(\[[^]]*\], *\[([^]]+)\]", f.read(), re.M)
    except OSError:
        m = None
    return m.group(1) if m else "0+unknown"


#: The version of this module, configure.ac's (AC_INIT).
__version__ = _version()
del _version

#: The library file loaded, as it was named to the dynamic linker
#: ("libpidlock.so.0": the system's; a path: $PIDLOCK_LIBRARY, the
#: package's own build, or that of its installation's libdir).
LIBRARY: str = str(_lib_module.lib._name)

#: filelock's name for what AsyncReadWriteLock's acquires return.
AsyncAcquireReadWriteReturnProxy = AsyncReadWriteReturnProxy

__all__ = [
    "AcquireReturnProxy",
    "AsyncAcquireReturnProxy",
    "AsyncFileLock",
    "AsyncLock",
    "AsyncReadWriteLock",
    "AsyncAcquireReadWriteReturnProxy",
    "AsyncUnixFileLock",
    "BaseAsyncFileLock",
    "BaseFileLock",
    "CloseErrorPolicy",
    "ContextErrorPolicy",
    "BrokenLock",
    "Busy",
    "FileLock",
    "Flags",
    "Kind",
    "Lock",
    "LockInfo",
    "LockLost",
    "NotALockFile",
    "ReadWriteLock",
    "State",
    "Timeout",
    "UnixFileLock",
    "inspect",
    "holder_pidfds",
    "lock_descriptor",
    "unlock_descriptor",
    "Slots",
    "wait_free",
]

# filelock's classes that this module does not provide, and why: an
# ImportError that says what to use, not a bare "cannot import name".
_NOT_PROVIDED = {
    "SoftFileLock": "its lock is the file's existence, which a crash "
                    "leaves behind; pidlock.FileLock holds kernel locks "
                    "(never stale) and still writes the record that "
                    "file-existence lockers honour",
    "AsyncSoftFileLock": "use pidlock.AsyncFileLock, for the reason "
                         "SoftFileLock gives",
    "WindowsFileLock": "pidlock is for Linux; use pidlock.FileLock",
    "AsyncWindowsFileLock": "pidlock is for Linux; use "
                            "pidlock.AsyncFileLock",
}


def __getattr__(name: str):  # type: ignore[no-untyped-def]
    if name in _NOT_PROVIDED:
        raise ImportError(f"pidlock provides no {name}: "
                          f"{_NOT_PROVIDED[name]} (doc/migrate-filelock.md)",
                          name=name)
    raise AttributeError(f"module 'pidlock' has no attribute {name!r}")
