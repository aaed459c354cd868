# SPDX-License-Identifier: LGPL-2.1-or-later
"""filelock's public names made pidlock's, in every Python process that
tests/python/filelock-suite.sh starts, and a count of the pidlock locks
each test builds.  Imported by the sitecustomize that the suite script
writes into its scratch directory: so in pytest's own process (before
pytest starts; filelock_shim, the plugin, then finds it loaded), in
multiprocessing's spawned children and in the scripts a test runs with
sys.executable, whatever their arguments.  It imports no pytest.

The names: filelock's and those of its private modules that hold them
(a test that imports ReadWriteLock from filelock._read_write gets
pidlock's too).  A name that pidlock does not have becomes a stand-in
that fails when used: a test of it then fails, instead of passing
against filelock's own class.

The count: each construction of one of pidlock's locks (Lock, AsyncLock,
Slots, FileLock and its subclasses, ReadWriteLock, AsyncReadWriteLock,
a lock_descriptor() or unlock_descriptor() call), each handle the C
library makes (pidlock_new), and each construction of one of
filelock's own lock classes (which would mean the test ran filelock's
code).  The test is CURRENT[0], which the plugin sets in pytest's
process, and which a child takes from FILELOCK_SHIM_TEST in its
environment (its parent's current test).  The first of each kind in
each process for each test is written at once (one line, O_APPEND, with
the write captured before any test could patch os.write) to the file
FILELOCK_SHIM_BUILDS names: a child that ends with os._exit() has
already said so.  Not part of make check's run of filelock's suite (it
needs filelock's sources); tests/python/test_filelock_harness.py checks
it with a stand-in package."""

from __future__ import annotations

import functools
import os
import threading

import filelock
import filelock._api
import filelock._async_read_write
import filelock._descriptor
import filelock._error
import filelock._read_write
import filelock._unix
import filelock.asyncio
import pidlock
from pidlock import _lib

NAMES = (
    "FileLock", "UnixFileLock", "BaseFileLock", "AcquireReturnProxy",
    "AsyncFileLock", "AsyncUnixFileLock", "BaseAsyncFileLock",
    "AsyncAcquireReturnProxy", "Timeout", "ReadWriteLock",
    "AsyncReadWriteLock", "AsyncAcquireReadWriteReturnProxy",
    "lock_descriptor", "unlock_descriptor", "ContextErrorPolicy",
    "CloseErrorPolicy", "has_fcntl",
)

#: filelock's private modules that hold a public name under its own name.
PRIVATE_HOMES = (filelock._api, filelock._unix, filelock._read_write,
                 filelock._async_read_write, filelock._descriptor,
                 filelock._error, filelock.asyncio)

#: filelock's own lock classes, kept before the names become ours: a
#: test that still makes one of them runs filelock's code.
FILELOCK_OWN = (filelock._api.BaseFileLock, filelock._read_write.ReadWriteLock,
                filelock._async_read_write.AsyncReadWriteLock)

#: What is counted: a pidlock lock object, a handle of the C library,
#: an object of one of filelock's own lock classes.
OBJECT, HANDLE, FILELOCK = "O", "H", "F"

#: The test that builds count for: "" outside any test.
CURRENT = [os.environ.get("FILELOCK_SHIM_TEST", "")]
#: This process's counts: {test: {kind: n}}.
COUNTS: "dict[str, dict[str, int]]" = {}
_seen: "set[tuple[int, str, str]]" = set()
_write = os.write
_depth = threading.local()


def _open_builds() -> "int | None":
    path = os.environ.get("FILELOCK_SHIM_BUILDS")
    if not path:
        return None
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)


_fd = _open_builds()


def note(kind: str) -> None:
    """Count one build of kind for the current test."""
    test = CURRENT[0]
    per = COUNTS.setdefault(test, {})
    per[kind] = per.get(kind, 0) + 1
    key = (os.getpid(), test, kind)
    if key in _seen:
        return
    _seen.add(key)
    if _fd is not None:
        _write(_fd, f"{kind} {os.getpid()} {test}\n".encode("utf-8", "replace"))


def _counting(kind: str, func):  # type: ignore[no-untyped-def]
    """func, counting its outermost calls (a subclass's __new__ that
    calls ours, a lock built inside another's construction: once)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
        depth = getattr(_depth, "n", 0)
        if depth == 0:
            note(kind)
        _depth.n = depth + 1
        try:
            return func(*args, **kwargs)
        finally:
            _depth.n = depth

    return wrapper


def _count_builds() -> None:
    for cls in (pidlock.Lock, pidlock.AsyncLock, pidlock.Slots,
                pidlock.AsyncReadWriteLock):
        cls.__init__ = _counting(OBJECT, cls.__dict__["__init__"])
    for cls in (pidlock.FileLock, pidlock.BaseAsyncFileLock,
                pidlock.ReadWriteLock):
        cls.__new__ = staticmethod(_counting(OBJECT, cls.__dict__["__new__"]))
    for name in ("lock_descriptor", "unlock_descriptor"):
        setattr(pidlock, name, _counting(OBJECT, getattr(pidlock, name)))
    new = _lib.lib.pidlock_new

    def pidlock_new(*args):  # type: ignore[no-untyped-def]
        note(HANDLE)
        return new(*args)

    _lib.lib.pidlock_new = pidlock_new
    for cls in FILELOCK_OWN:
        cls.__init__ = _counting(FILELOCK, cls.__dict__["__init__"])


def _missing(name: str) -> type:
    """What a name that pidlock lacks becomes: a class that cannot be
    made (nor called, for the functions)."""

    def refuse(*args: object, **kwargs: object) -> object:
        raise NotImplementedError(f"pidlock has no {name}")

    return type(name, (), {"__new__": refuse, "__init__": refuse})


def _map_names() -> None:
    for name in NAMES:
        ours = getattr(pidlock, name, None)
        value = ours if ours is not None else _missing(name)
        for module in (filelock, filelock.asyncio):
            setattr(module, name, value)
        for module in PRIVATE_HOMES:
            if hasattr(module, name):
                setattr(module, name, value)
    filelock._unix.UnixFileLock = filelock.UnixFileLock


# Once per process: a second run (the module imported again under
# another name) would wrap the wrappers and count twice.
if getattr(filelock, "_pidlock_harness", False):
    raise ImportError("filelock_map: filelock's names are already mapped "
                      "in this process (loaded twice?)")
_count_builds()
_map_names()
filelock._pidlock_harness = True
