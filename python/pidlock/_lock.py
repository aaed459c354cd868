# SPDX-License-Identifier: LGPL-2.1-or-later
"""pidlock.Lock: one handle of the C library, as a context manager."""

from __future__ import annotations

import ctypes
import dis
import errno
import functools
import math
import os
import sys
import threading
import time
from typing import Callable, Optional

from . import _lib, _log
from ._errors import Busy, raise_for
from ._holder import holder_pidfds
from ._types import Flags, LockInfo, PathArg, path_bytes

_INT_MAX = 2**31 - 1


class _Default:
    def __repr__(self) -> str:
        return "<the lock's timeout>"


DEFAULT = _Default()


def timeout_ms(timeout: Optional[float]) -> int:
    """Seconds (None or negative: no limit) as the library's milliseconds."""
    if timeout is None or timeout < 0:
        return -1
    if timeout == 0:
        return 0
    return min(_INT_MAX, max(1, math.ceil(timeout * 1000)))


class Lock(_lib.Owner):
    """An exclusive lock on a file path that never goes stale.

    Lock(path, *, timeout=None, tag=None, flags=Flags.NONE, shared=False,
    mode=None, stale_timeout=None, retry_interval=None, grace=None,
    lease=None)

    timeout is the default of acquire(), in seconds: None (or negative)
    waits without a limit, 0 tries once.  tag is written in the record
    for others to read; flags are Flags (PIDLOCK_* of pidlock_new(3));
    shared=True takes the lock shared (Flags.SHARED): shared holders hold
    it together, an exclusive one excludes them;
    mode is the new file's mode, exact whatever the umask (default: 0o644
    less the umask); stale_timeout, retry_interval and
    grace (seconds) are pidlock_set_stale_timeout(3) and its siblings;
    lease (seconds) is the holder's own lease of pidlock_set_lease(3),
    which check() keeps (see there).

    The handle is made at once and reused: acquire() and release() may
    be called again and again.  Use it from one thread at a time (calls
    on one Lock are serialised); give each thread its own Lock to have
    threads exclude each other.  After os.fork() a child that did not
    refresh() the lock does not own it: its release() only closes its
    descriptor, as does the Lock's finalizer; the file stays.

    A path with a NUL raises ValueError, an empty one FileNotFoundError,
    as os.open() does.  Acquire and release attempts are logged at DEBUG
    on the "pidlock" logger.
    """

    #: FileLock's handles report through FileLock, on filelock's logger.
    _quiet = False

    def __init__(self, path: PathArg, *, timeout: Optional[float] = None,
                 tag: Optional[str] = None, flags: Flags = Flags.NONE,
                 shared: bool = False, mode: Optional[int] = None,
                 stale_timeout: Optional[float] = None,
                 retry_interval: Optional[float] = None,
                 grace: Optional[float] = None,
                 lease: Optional[float] = None) -> None:
        raw = path_bytes(path)
        self._path = os.fsdecode(raw)
        self._handle: Optional[int] = None
        self._owner: Optional[int] = None
        self._guard = threading.RLock()
        # Where the with-statement that holds the lock is (with_site()),
        # and its frame, to tell whether its block is over (_site_over()).
        self._site: Optional[tuple] = None
        self._site_frame = None
        # A release under way: set first, cleared last, so that one that
        # interrupts cut short anywhere (a second one in its clean-up
        # too) is finished by the next take (_drop_orphan()).
        self._releasing = False
        self.timeout = timeout
        self.tag = tag
        if shared:
            flags |= Flags.SHARED
        handle = _lib.Handle()
        rc = _lib.lib.pidlock_new(ctypes.byref(handle), raw, int(flags))
        if rc < 0:
            raise_for(rc, self._path)
        self._handle = handle.value
        if tag is not None:
            self._set(_lib.lib.pidlock_set_tag, tag.encode("utf-8"))
        if mode is not None:
            self._set(_lib.lib.pidlock_set_mode, mode)
        if stale_timeout is not None:
            self._set(_lib.lib.pidlock_set_stale_timeout, math.ceil(stale_timeout))
        if retry_interval is not None:
            self._set(_lib.lib.pidlock_set_retry_interval,
                      math.ceil(retry_interval * 1000))
        if grace is not None:
            self._set(_lib.lib.pidlock_set_grace, math.ceil(grace * 1000))
        if lease is not None:
            self._set(_lib.lib.pidlock_set_lease, math.ceil(lease * 1000))

    def _set(self, setter, value) -> None:  # type: ignore[no-untyped-def]
        rc = setter(self._live(), value)
        if rc < 0:
            raise_for(rc, self._path)

    def _live(self) -> int:
        if self._handle is None:
            raise ValueError(f"lock {self._path!r} is closed")
        return self._handle

    @property
    def path(self) -> str:
        """The lock's path, as given."""
        return self._path

    @property
    def locked(self) -> bool:
        """Whether this process holds the lock through this handle.

        The C handle is the truth (pidlock_verify() says -ENOLCK while it holds nothing):
        a hold that an interrupt kept Python from recording still shows.
        A child made by os.fork() during the hold sees it unheld until
        it refresh()es."""
        handle = self._handle
        if handle is None or not _lib.held(handle):
            return False
        return self._owner is None or self._owner == os.getpid()

    def acquire(self, timeout: "Optional[float] | _Default" = DEFAULT) -> "Lock":
        """Take the lock; returns self.

        timeout in seconds (default: the Lock's): None or negative waits
        without a limit, 0 tries once.  Raises Busy (a TimeoutError)
        with the holder's pid, tag and age if the lock stays held, and
        OSError with the library's errno for anything else.  A signal
        whose handler returns does not end the wait (PEP 475); one whose
        handler raises (Ctrl-C) ends it with that exception, and the
        lock is not held then, even if the library had just taken it.
        """
        limit = self.timeout if isinstance(timeout, _Default) else timeout
        ms = timeout_ms(limit)
        mine = False
        try:
            with self._guard:
                handle = self._live()
                self._drop_orphan(handle)
                # Not held before: a hold found after an exception is
                # this call's, and nobody was told of it.
                mine = not _lib.held(handle)
                self._debug(_log.ATTEMPT_ACQUIRE)
                rc = retrying(_lib.lib.pidlock_acquire, handle, ms)
                if rc == 0:
                    self._owner = os.getpid()
                    self._debug(_log.ACQUIRED)
                    return self
        except BaseException:
            if mine:
                with self._guard:
                    _lib.settle(self._undo_acquire)
            raise
        if rc in (-errno.EWOULDBLOCK, -errno.ETIMEDOUT):
            # A wait that signals cut into pieces ends with a last try.
            code = errno.EWOULDBLOCK if ms == 0 else errno.ETIMEDOUT
            self._debug(_log.FAILED_AT_ONCE if ms == 0 else _log.TIMED_OUT)
            raise Busy(self._path, self.holder(), code)
        raise_for(rc, self._path)

    def _debug(self, msg: str) -> None:
        if not self._quiet:
            _log.debug(msg, self, self._path)

    def _drop_orphan(self, handle: int) -> None:
        """A hold that no call returned (an interrupt came after the
        library took it, and before or during its clean-up), or whose
        with-block is over without its __exit__ having let go (an
        interrupt at __exit__'s first line), is let go before the next
        take; the C library keeps a forked parent's file (only the
        child's descriptor is closed)."""
        if not _lib.held(handle):
            self._releasing = False
            return
        if self._owner is None:
            _lib.lib.pidlock_release(handle)
        elif self._releasing or self._site_over():
            _let_go(handle, self._owner)
            self._owner = None
            self._site = self._site_frame = None
            self._releasing = False

    def _site_over(self) -> bool:
        """Is the with-block that took the hold over?  Its frame is no
        longer on its thread's stack, or is past the block (Python 3.11's
        exception table gives the block's extent; without one, a frame
        still running counts as inside)."""
        site, frame = self._site, self._site_frame
        if site is None or frame is None:
            return False
        f = sys._current_frames().get(site[0])
        while f is not None and f is not frame:
            f = f.f_back
        if f is None:
            return True
        return not in_with_block(frame.f_code, site[2], frame.f_lasti)

    def _undo_acquire(self) -> None:
        # _lib.held() tells whether the handle holds: if so, the hold
        # is one that acquire() took but did not return.
        handle = self._handle
        if handle is not None and _lib.held(handle):
            _lib.lib.pidlock_release(handle)
        self._owner = None
        self._site = self._site_frame = None

    def release(self) -> None:
        """Let go of the lock, removing the file if the record is ours.

        Raises BrokenLock if the path no longer names the file that was
        held (nothing is removed then), LockLost if the lock was found
        another's (nothing is written or removed; check()), and
        OSError(ENOLCK) if nothing was held.  In
        a child made by os.fork() during the hold, which does not own
        the record, only the child's descriptor is closed.  A release
        that a signal handler's exception interrupts still lets go
        before the exception goes on.
        """
        try:
            with self._guard:
                handle = self._live()
                # A hold recorded, and no earlier release cut short after
                # it began (which may have let go already): an ENOLCK
                # then is a loss (LockLost).  (Not asked of the handle:
                # pidlock_verify() would cost 2 us, 6 % of a cycle; only
                # a caller of the C library behind the Lock's back makes
                # the two differ.)
                held = self._owner is not None and not self._releasing
                self._releasing = True
                self._debug(_log.ATTEMPT_RELEASE)
                rc = _let_go(handle, self._owner)
                if rc not in (-errno.EINVAL, -errno.ENOLCK):
                    self._owner = None
                self._site = self._site_frame = None
                self._releasing = False
                if rc == 0:
                    self._debug(_log.RELEASED)
        except BaseException:
            with self._guard:
                _lib.settle(self._finish_release)
            raise
        if rc < 0:
            raise_for(rc, self._path, held)

    def _finish_release(self) -> None:
        handle = self._handle
        if handle is not None and _lib.held(handle):
            _let_go(handle, self._owner)
        self._owner = None
        self._site = self._site_frame = None
        self._releasing = False

    def refresh(self) -> None:
        """Rewrite the record with this process's pid and the time now.

        After os.fork(), the child that refreshes owns the lock: its
        release removes the file.  Raises BrokenLock if the file at the
        path is no longer the one held, LockLost if the lock is
        another's now (check()), OSError(ENOLCK) if nothing is held.
        """
        with self._guard:
            rc = _lib.lib.pidlock_refresh(self._live())
            if rc < 0:
                raise_for(rc, self._path, self._owner is not None)
            self._owner = os.getpid()

    def verify(self) -> None:
        """Raise BrokenLock unless the path still names the held file.

        That is all it asks: on a shared file system a server that
        restarted or gave the lock to another host goes unseen here;
        check() asks the server (pidlock_check(3))."""
        with self._guard:
            rc = _lib.lib.pidlock_verify(self._live())
            if rc < 0:
                raise_for(rc, self._path)

    @property
    def token(self) -> Optional[int]:
        """The fencing token of the hold (Flags.TOKEN): greater than every
        earlier holder's of the path, to send with each write to a
        resource that refuses smaller ones.  None when nothing is held or
        the Lock was made without Flags.TOKEN."""
        value = ctypes.c_uint64(0)
        with self._guard:
            rc = _lib.lib.pidlock_token(self._live(), ctypes.byref(value))
        if rc in (-errno.ENOLCK, -errno.EINVAL):
            return None
        if rc < 0:
            raise_for(rc, self._path)
        return int(value.value)

    def check(self, timeout: Optional[float] = 1.0) -> bool:
        """Whether the lock is still this Lock's where it counts.

        On a shared file system the server may give the lock to another
        host once this one has been cut off (pidlock_check(3)): True
        while the lock is still ours; False once it is not, for good (a
        later release() then closes the descriptor, writes and removes
        nothing, and raises LockLost), or when nothing is held.
        Waits at most timeout seconds for the server (None: no limit),
        even one that never answers; TimeoutError if it did not answer,
        never before the timeout: a signal handler that returns lets the
        wait go on for what is left of it (PEP 475).
        With a lease (Lock(lease=...)), a server silent for longer than
        the lease makes it False.
        """
        ms = -1 if timeout is None else max(0, math.ceil(timeout * 1000))
        with self._guard:
            rc = retrying(_lib.lib.pidlock_check, self._live(), ms)
        if rc == 0:
            return True
        if rc == -errno.ENOLCK:
            return False
        raise_for(rc, self._path)

    def fileno(self) -> int:
        """The descriptor that holds the kernel locks (do not close it)."""
        with self._guard:
            rc = _lib.lib.pidlock_fd(self._live())
            if rc < 0:
                raise_for(rc, self._path)
            return int(rc)

    def holder(self) -> Optional[LockInfo]:
        """Who held the lock when the last acquire found it busy."""
        info = _lib.Info()
        rc = _lib.lib.pidlock_holder(self._live(), ctypes.byref(info))
        if rc == -errno.ENODATA:
            return None
        if rc < 0:
            raise_for(rc, self._path)
        return LockInfo.from_c(info)

    def close(self) -> None:
        """Release the lock if this process owns it, and free the handle."""
        with self._guard:
            if self._handle is None:
                return
            # Let go first, in a way that an interrupt cannot cut short;
            # an interrupt between the two lines below would leak a
            # handle that holds nothing.
            _lib.settle(self._finish_release)
            handle, self._handle = self._handle, None
            _lib.lib.pidlock_free(handle)

    def _free_handle(self, handle: int) -> None:
        _free(handle, self._owner)

    def __enter__(self) -> "Lock":
        # An interrupt can land here too, after acquire() returned and
        # before the with-block starts: no __exit__ would let go.
        frame = sys._getframe(1)
        site = with_site(frame)
        handle = self._handle
        if handle is not None and (site == self._site or self._releasing
                                   or self._site_over()):
            # This very with-statement is entered again, or the block of
            # the one that holds is over: it ended, and an interrupt kept
            # its __exit__ from letting go (it came before the first line
            # of __exit__ ran, or cut its release short).
            with self._guard:
                _lib.settle(self._finish_release)
        mine = handle is None or not _lib.held(handle) or self._owner is None
        try:
            if mine:
                # The site before the take: a hold that an interrupt
                # leaves after it (a second one in the clean-up below
                # too) is this with-statement's, which the next one
                # finds over and lets go.
                self._site, self._site_frame = site, frame
            self.acquire()
            return self
        except BaseException:
            if mine:
                with self._guard:
                    _lib.settle(self._undo_acquire)
            raise

    def holder_pidfds(self) -> "list[tuple[int, int]]":
        """(pid, pidfd) of the processes that hold this lock's path, as
        pidlock.holder_pidfds() gives them (the caller closes the
        pidfds)."""
        return holder_pidfds(self._path)

    def __repr__(self) -> str:
        state = "locked" if self.locked else "unlocked"
        return f"<pidlock.Lock {self._path!r} {state}>"


@functools.lru_cache(maxsize=256)
def _with_blocks(code) -> "tuple[tuple[int, int, int], ...]":  # type: ignore[no-untyped-def]
    """(start, end, target) of code's exception table (Python 3.11)."""
    parse = getattr(dis, "_parse_exception_table", None)
    if parse is None:
        return ()
    return tuple((e.start, e.end, e.target) for e in parse(code))


def in_with_block(code, enter_lasti: int, lasti: int) -> bool:  # type: ignore[no-untyped-def]
    """Is instruction lasti of code inside the with-block whose
    BEFORE_WITH is at enter_lasti?  The block's body is what the handler
    of the first exception-table entry after that instruction covers,
    from its first entry to its last: blocks nested in it have entries
    of their own in between.  Where that cannot be told, yes: the hold
    is kept, as before."""
    entries = _with_blocks(code)
    after = [e for e in entries if e[0] > enter_lasti]
    if not after:
        return True
    target = min(after)[2]
    spans = [(start, end) for start, end, t in entries if t == target]
    return min(spans)[0] <= lasti < max(end for _, end in spans)


def site_over(site: tuple) -> bool:
    """Is the with-statement at site (with_site()) over?  No frame of its
    id is on its thread's stack, or that frame is past the block.  By id:
    a frame freed and another made at its address is taken for it, and
    then, unless it runs the same code inside the same block, over."""
    f = sys._current_frames().get(site[0])
    while f is not None and id(f) != site[1]:
        f = f.f_back
    # A frame object made at the freed one's address for other code (this
    # very walk makes frame objects) is not the statement's.
    if f is None or id(f.f_code) != site[3]:
        return True
    return not in_with_block(f.f_code, site[2], f.f_lasti)


def with_site(frame) -> tuple:  # type: ignore[no-untyped-def]
    """Where a with-statement is: its thread, frame, instruction and
    code (by id: a function's code lives as long as the function).  A
    frame at the instruction that enters a with-statement is not inside
    that with-block (a recursive call has a frame of its own; a frame's
    id is reused only once it is gone, and its with-blocks with it)."""
    return (threading.get_ident(), id(frame), frame.f_lasti, id(frame.f_code))


def retrying(call: Callable[[int, int], int], handle: int, ms: int) -> int:
    """call(handle, ms), an acquire that waits ms, called again with what
    is left of the time after a signal handler returned (-EINTR), as
    PEP 475 asks of blocking calls."""
    deadline = None if ms <= 0 else time.monotonic() + ms / 1000
    while True:
        rc = call(handle, ms)
        if rc != -errno.EINTR:
            return int(rc)
        # A signal handler ran (and raised, if it meant to):
        # wait on for what is left of the time.
        if deadline is not None:
            ms = max(0, math.ceil((deadline - time.monotonic()) * 1000))


def _let_go(handle: int, owner: Optional[int]) -> int:
    # A forked child that did not refresh() only closes its descriptor.
    if owner is not None and owner != os.getpid():
        return int(_lib.lib.pidlock_close(handle))
    return int(_lib.lib.pidlock_release(handle))


def _free(handle: int, owner: Optional[int]) -> None:
    # A process that does not own the record (a forked child) only
    # closes: the C library would not remove the file either, and
    # closing first spares it the look at the path.
    if owner is not None and owner != os.getpid():
        _lib.lib.pidlock_close(handle)
    _lib.lib.pidlock_free(handle)
