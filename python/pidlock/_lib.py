# SPDX-License-Identifier: LGPL-2.1-or-later
"""The C library through ctypes: loading, prototypes, struct layout.

ctypes rather than a C extension: nothing is compiled per Python version
(one package serves every python3 of the system), and the versioned
soname libpidlock.so.0 is loaded, so the module follows the library's
ABI promise.  The price is that the layouts below must match
include/pidlock.h exactly; tests/python/test_layout.py compares them
with the C compiler's offsets.
"""

from __future__ import annotations

import ctypes
import os
from types import TracebackType
from typing import Callable, Optional, Type

#: Environment variable naming the library file to load instead of
#: libpidlock.so.0 (tests in the build tree, private installs).
LIBRARY_ENV = "PIDLOCK_LIBRARY"
SONAME = "libpidlock.so.0"

TAG_MAX = 255
HOST_MAX = 64


class Info(ctypes.Structure):
    """struct pidlock_info of <pidlock.h>, field for field."""

    _fields_ = [
        ("state", ctypes.c_int),
        ("pid", ctypes.c_int32),
        ("pid_alive", ctypes.c_int),
        ("has_timestamp", ctypes.c_int),
        ("timestamp", ctypes.c_int64),
        ("kernel_locks", ctypes.c_uint),
        ("marker", ctypes.c_uint),
        ("kernel_pid", ctypes.c_int32),
        ("mtime", ctypes.c_int64),
        ("error", ctypes.c_int),
        ("tag", ctypes.c_char * (TAG_MAX + 1)),
        # Two words that were reserved (zero) before libpidlock's shared
        # locks and are the shared flag and the holder count since: read
        # as zero from a library without them.
        ("shared", ctypes.c_uint32),
        ("holders", ctypes.c_uint32),
        # Reserved before 1.3.0 (zero from an older library).
        ("holder_hidden", ctypes.c_uint32),
        # Reserved before 1.3.0 (zero from an older library).
        ("foreign", ctypes.c_uint32),
        # Reserved words: later versions may give them a meaning without
        # changing the size; kept so that the size always matches.
        ("reserved", ctypes.c_uint32 * 4),
    ]


_Handle = ctypes.c_void_p


def _load() -> ctypes.CDLL:
    name = os.environ.get(LIBRARY_ENV) or SONAME
    return ctypes.CDLL(name)


def _declare(lib: ctypes.CDLL) -> None:
    int_p = ctypes.POINTER(ctypes.c_int)
    protos = {
        "pidlock_new": (ctypes.c_int,
                        [ctypes.POINTER(_Handle), ctypes.c_char_p, ctypes.c_uint]),
        "pidlock_free": (None, [_Handle]),
        "pidlock_set_tag": (ctypes.c_int, [_Handle, ctypes.c_char_p]),
        "pidlock_set_mode": (ctypes.c_int, [_Handle, ctypes.c_uint]),
        "pidlock_set_stale_timeout": (ctypes.c_int, [_Handle, ctypes.c_uint]),
        "pidlock_set_retry_interval": (ctypes.c_int, [_Handle, ctypes.c_uint]),
        "pidlock_set_grace": (ctypes.c_int, [_Handle, ctypes.c_uint]),
        "pidlock_acquire": (ctypes.c_int, [_Handle, ctypes.c_int]),
        "pidlock_acquire_async": (ctypes.c_int, [_Handle, int_p, int_p]),
        "pidlock_release": (ctypes.c_int, [_Handle]),
        "pidlock_close": (ctypes.c_int, [_Handle]),
        "pidlock_refresh": (ctypes.c_int, [_Handle]),
        "pidlock_verify": (ctypes.c_int, [_Handle]),
        "pidlock_fd": (ctypes.c_int, [_Handle]),
        "pidlock_path": (ctypes.c_char_p, [_Handle]),
        "pidlock_holder": (ctypes.c_int, [_Handle, ctypes.POINTER(Info)]),
        "pidlock_inspect": (ctypes.c_int,
                            [ctypes.c_char_p, ctypes.POINTER(Info), ctypes.c_uint]),
        "pidlock_state_name": (ctypes.c_char_p, [ctypes.c_int]),
        "pidlock_record_host": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p,
                                               ctypes.c_size_t]),
        "pidlock_holder_pidfds": (ctypes.c_int, [ctypes.c_char_p,
                                                 ctypes.POINTER(ctypes.c_int),
                                                 ctypes.POINTER(ctypes.c_int),
                                                 ctypes.c_uint]),
        "pidlock_wait_free": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int]),
        "pidlock_slots_new": (ctypes.c_int, [ctypes.POINTER(_Handle),
                                             ctypes.c_char_p, ctypes.c_uint,
                                             ctypes.c_uint]),
        "pidlock_slots_free": (None, [_Handle]),
        "pidlock_slots_acquire": (ctypes.c_int, [_Handle, ctypes.c_int]),
        "pidlock_slots_release": (ctypes.c_int, [_Handle]),
        "pidlock_slots_slot": (ctypes.c_int, [_Handle]),
        "pidlock_slots_lock": (_Handle, [_Handle, ctypes.c_uint]),
    }
    for name, (restype, argtypes) in protos.items():
        func = getattr(lib, name)
        func.restype = restype
        func.argtypes = argtypes


lib = _load()
_declare(lib)
Handle = _Handle


def settle(step: Callable[[], None], tries: int = 10) -> None:
    """Run step, an idempotent clean-up, to its end, even if signal
    handlers raise during it.

    A handler's exception (Ctrl-C's KeyboardInterrupt) is raised at the
    interpreter's next check, in whatever Python code runs then: after a
    C call returned, before the line that records what it did.  The
    clean-ups of an interrupted acquire or release ask the C handle what
    it holds and act on that, so running one again after such an
    exception is safe.  A step that keeps failing (an error of its own,
    not a handler's) is given up after `tries` runs.  The last exception
    caught is raised at the end (its __context__ is the one being
    handled, if any).
    """
    late: Optional[BaseException] = None
    for _ in range(tries):
        try:
            step()
            break
        except BaseException as exc:  # noqa: BLE001 - a handler raised
            late = exc
    if late is not None:
        raise late


class Owner:
    """An object that owns one C handle (self._handle): a with-block
    releases what it took, and the finalizer frees the handle, which
    lets go of what is still held.  Subclasses say how to free."""

    _handle: Optional[int] = None

    def _free_handle(self, handle: int) -> None:
        raise NotImplementedError

    def release(self) -> None:
        raise NotImplementedError

    def __exit__(self, exc_type: Optional[Type[BaseException]],
                 exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.release()

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle is None:
            return
        self._handle = None
        try:
            self._free_handle(handle)
        except Exception:  # noqa: BLE001 - late in interpreter shutdown
            pass
