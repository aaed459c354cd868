# SPDX-License-Identifier: LGPL-2.1-or-later
"""pidlock.FileLock: the constructor, acquire and release of filelock's
FileLock, over pidlock locks (see the module's docstring for what
differs)."""

from __future__ import annotations

import contextlib
import errno
import functools
import inspect
import math
import os
import stat
import sys
import threading
import time
import warnings
import weakref
from types import TracebackType
from typing import Any, Callable, NoReturn, Optional, Type

from . import _lib, _log
from ._errors import Busy, LockLost, Timeout
from ._lock import Lock, site_over, with_site
from ._types import Flags, PathArg


#: The policies filelock names (typing.Literal there: strings here).
ContextErrorPolicy = str
CloseErrorPolicy = str
_CONTEXT_ERROR_POLICIES = ("chain", "group")
_CLOSE_ERROR_POLICIES = ("default", "raise", "suppress")


def _check_lifetime(value: Any, cls: type, stacklevel: int) -> None:
    """lifetime is validated as filelock does, then ignored with a
    warning: a kernel lock cannot be revoked by the file's age, and a
    lock of ours never goes stale (its holder's death ends it)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("lifetime must be a finite non-negative number or "
                        f"None, not {type(value).__name__}")
    if value < 0 or (isinstance(value, float) and not math.isfinite(value)):
        raise ValueError(f"lifetime must be finite and non-negative, not {value!r}")
    warnings.warn(f"lifetime is ignored for {cls.__name__}: a pidlock lock is "
                  "a kernel lock, which ends with its holder and cannot be "
                  "broken by age", stacklevel=stacklevel + 1)
    return None


def _check_options(context_error_policy: str, close_error_policy: str) -> None:
    if context_error_policy not in _CONTEXT_ERROR_POLICIES:
        raise ValueError("context_error_policy must be 'chain' or 'group', "
                         f"got {context_error_policy!r}")
    if close_error_policy not in _CLOSE_ERROR_POLICIES:
        raise ValueError("close_error_policy must be 'default', 'raise', or "
                         f"'suppress', got {close_error_policy!r}")


def _raise_both(body: BaseException, release: BaseException) -> None:
    """context_error_policy="group": the body's error and the release's,
    side by side, neither hiding the other."""
    raise BaseExceptionGroup("the with-block and the release both failed",
                             [body, release]) from None


class AcquireReturnProxy:
    """What acquire() returns: ``with lock.acquire():`` releases once."""

    def __init__(self, lock: "FileLock") -> None:
        self.lock = lock

    def __enter__(self) -> "FileLock":
        return self.lock

    def __exit__(self, exc_type: Optional[Type[BaseException]],
                 exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.lock.release()


class _Context:
    """A FileLock's hold: its pidlock handle and the nesting count."""

    __slots__ = ("lock", "counter", "sites", "held", "mutex", "settings",
                 "entering")

    def __init__(self) -> None:
        self.lock: Optional[Lock] = None
        self.counter = 0
        # The with-statements that counted in, innermost last (with_site()).
        self.sites: list = []
        # An __enter__ under way: (thread, site, its counted list), set
        # before it counts in and cleared once its site is recorded, so
        # that one that interrupts cut short (a second one in its
        # clean-up too) is undone by the next (_undo_entering()).
        self.entering: Optional[tuple] = None
        # (the thread's table, key) of the deadlock rule, while held.
        self.held: Optional[tuple] = None
        # An RLock for its _is_owned(): after an interrupt, whether this
        # thread got it (no thread takes it twice).
        self.mutex = threading.RLock()
        # timeout, blocking, poll_interval set after the constructor: per
        # thread with thread_local (each thread starts from the
        # constructor's values), for all threads without.
        self.settings: "dict[str, Any]" = {}


class _ThreadContexts(threading.local):
    """One _Context per thread (thread_local=True), as .ctx: the
    thread-local object is looked into once per call, and the _Context's
    own fields are plain attributes."""

    def __init__(self) -> None:
        self.ctx = _Context()


class _SharedContext:
    """The one _Context of all threads (thread_local=False), as .ctx."""

    __slots__ = ("ctx",)

    def __init__(self) -> None:
        self.ctx = _Context()


class FileLock(contextlib.ContextDecorator):
    """filelock.FileLock's interface, stale-free.

    FileLock(lock_file, timeout=-1, mode=0o644, thread_local=True, *,
    blocking=True, is_singleton=False, poll_interval=0.05, tag=None,
    flags=Flags.NONE)

    timeout in seconds: negative waits without a limit, 0 tries once.
    With thread_local (the default), each thread has its own hold and
    count, and threads exclude each other; without it, the threads
    share one hold (a second thread's acquire only counts).  tag and
    flags are pidlock's (Flags.KEEP_FILE keeps the file at the path,
    for paths still shared with filelock or flock(1) users).

    As filelock does: missing directories of the path are made at
    acquire (with the process's umask); the file gets exactly `mode`,
    whatever the umask, as with pidlock.Lock (which makes no
    directories), and without one 0o644 less the umask; attempts are logged at DEBUG on the "filelock" logger
    (and handed to the "pidlock" logger's handlers); a file system
    whose kernel locks cannot be taken raises NotImplementedError; a
    NUL in the path raises ValueError and an empty path
    FileNotFoundError, at acquire.  Each subclass has its own table of
    singletons.
    """

    _instances: "weakref.WeakValueDictionary[str, FileLock]" = weakref.WeakValueDictionary()
    _instances_guard = threading.Lock()
    #: Whether timeout, blocking, poll_interval and is_locked are
    #: FileLock's own properties: acquire and release then read the
    #: values behind them directly (a subclass that overrides one is
    #: asked through it, as before).
    _plain = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A subclass's singletons are its own: FileLock(p) and MyLock(p)
        # are two objects (and two holds).
        cls._instances = weakref.WeakValueDictionary()
        cls._plain = all(getattr(cls, name) is FileLock.__dict__[name]
                         for name in _PLAIN_PROPERTIES)
        init = cls.__dict__.get("__init__")
        if init is not None:
            cls.__init__ = _narrowed(init)  # type: ignore[method-assign]

    def __new__(cls, lock_file: PathArg, timeout: float = -1,
                mode: Optional[int] = None, thread_local: bool = True, *,
                blocking: bool = True, is_singleton: bool = False,
                lifetime: Optional[float] = None,
                context_error_policy: str = "chain",
                close_error_policy: str = "default",
                **kwargs: Any) -> "FileLock":
        # Checked before the object exists: no half-made lock to finalize.
        _check_options(context_error_policy, close_error_policy)
        _catch_up_after_fork()   # a singleton of the parent is not ours
        if lifetime is not None:
            _check_lifetime(lifetime, cls, 2)
        if not is_singleton:
            return super().__new__(cls)
        key = _canonical(lock_file)
        with cls._instances_guard:
            found = cls._instances.get(key)
            if found is None:
                found = super().__new__(cls)
                cls._instances[key] = found
                return found
        wanted = {"timeout": float(timeout), "mode": _given_mode(mode),
                  "thread_local": thread_local, "blocking": blocking,
                  "context_error_policy": context_error_policy,
                  "close_error_policy": close_error_policy,
                  "poll_interval": kwargs.get("poll_interval", 0.05),
                  "fallback_to_soft": kwargs.get("fallback_to_soft", True),
                  "preserve_lock_file": kwargs.get("preserve_lock_file", False),
                  "on_acquired": kwargs.get("on_acquired"),
                  "tag": kwargs.get("tag"),
                  "flags": kwargs.get("flags", Flags.NONE)}
        have = found._singleton_options()
        differing = [f"{name} {have[name]!r} (asked: {wanted[name]!r})"
                     for name in wanted if wanted[name] != have[name]]
        if differing:
            # The first sentence is filelock's, which programs may match;
            # then each differing option by its name.
            raise ValueError("Singleton lock instances cannot be initialized "
                             f"with differing arguments: {key!r} has "
                             + ", ".join(differing))
        return found

    def __init__(self, lock_file: PathArg, timeout: float = -1,
                 mode: Optional[int] = None, thread_local: bool = True, *,
                 blocking: bool = True, is_singleton: bool = False,
                 poll_interval: float = 0.05, lifetime: Optional[float] = None,
                 context_error_policy: str = "chain",
                 close_error_policy: str = "default",
                 fallback_to_soft: bool = True,
                 preserve_lock_file: bool = False,
                 on_acquired: Optional[Callable[[int], None]] = None,
                 tag: Optional[str] = None, flags: Flags = Flags.NONE) -> None:
        if getattr(self, "_ready", False):  # a singleton made before
            return
        self._lock_file = os.fsdecode(lock_file)
        self._context_error_policy = context_error_policy
        self._close_error_policy = close_error_policy
        self._fallback_to_soft = fallback_to_soft
        self._preserve_lock_file = bool(preserve_lock_file)
        if preserve_lock_file:
            flags |= Flags.KEEP_FILE
        self._on_acquired = on_acquired
        self._timeout = float(timeout)
        self._mode = _given_mode(mode)
        self._blocking = blocking
        self._is_singleton = is_singleton
        self._thread_local = thread_local
        self._poll_interval = poll_interval
        self._tag = tag
        self._flags = flags
        self._contexts = _ThreadContexts() if thread_local else _SharedContext()
        self._creator_pid = os.getpid()
        _LIVE.add(self)
        self._ready = True

    def _singleton_options(self) -> "dict[str, Any]":
        """The options that a second FileLock(..., is_singleton=True) on
        the same path must repeat, by their parameter names."""
        return {"timeout": self.timeout, "mode": self._mode,
                "thread_local": self.is_thread_local(),
                "blocking": self.blocking,
                "context_error_policy": self.context_error_policy,
                "close_error_policy": self.close_error_policy,
                "poll_interval": self.poll_interval,
                "fallback_to_soft": self.fallback_to_soft,
                "preserve_lock_file": self.preserve_lock_file,
                "on_acquired": self.on_acquired, "tag": self._tag,
                "flags": self._flags}

    @property
    def _context(self) -> _Context:
        """This thread's hold (thread_local), or the one of all threads."""
        return self._contexts.ctx

    # --- filelock's properties ---------------------------------------------
    @property
    def lock_file(self) -> str:
        return self._lock_file

    @property
    def timeout(self) -> float:
        return self._context.settings.get("timeout", self._timeout)

    @timeout.setter
    def timeout(self, value: "float | str") -> None:
        self._context.settings["timeout"] = float(value)

    @property
    def blocking(self) -> bool:
        return self._context.settings.get("blocking", self._blocking)

    @blocking.setter
    def blocking(self, value: bool) -> None:
        self._context.settings["blocking"] = value

    @property
    def poll_interval(self) -> float:
        """Accepted and not used by a wait, which wakes when the holder
        lets go; only cancel_check is asked this often."""
        return self._context.settings.get("poll_interval", self._poll_interval)

    @poll_interval.setter
    def poll_interval(self, value: float) -> None:
        self._context.settings["poll_interval"] = value

    @property
    def mode(self) -> int:
        """The file's mode: as given, or 0o644 (filelock's answer) when
        none was given, less the umask then."""
        return 0o644 if self._mode is None else self._mode

    @property
    def has_explicit_mode(self) -> bool:
        return self._mode is not None

    @property
    def lifetime(self) -> None:
        """Always None: see _check_lifetime()."""
        return None

    @lifetime.setter
    def lifetime(self, value: Optional[float]) -> None:
        _check_lifetime(value, type(self), 2)

    @property
    def context_error_policy(self) -> str:
        return self._context_error_policy

    @property
    def close_error_policy(self) -> str:
        return self._close_error_policy

    @property
    def fallback_to_soft(self) -> bool:
        return self._fallback_to_soft

    @property
    def preserve_lock_file(self) -> bool:
        return self._preserve_lock_file

    @property
    def on_acquired(self) -> Optional[Callable[[int], None]]:
        return self._on_acquired

    @property
    def is_singleton(self) -> bool:
        return self._is_singleton

    def is_thread_local(self) -> bool:
        return self._thread_local

    @property
    def is_locked(self) -> bool:
        """Whether this thread's (or the shared) hold has the lock."""
        lock = self._context.lock
        return lock is not None and lock.locked

    @property
    def lock_counter(self) -> int:
        """How many acquires the next releases must match."""
        _catch_up_after_fork()   # a count of the parent's is not ours
        return self._context.counter

    @property
    def pidlock(self) -> Optional[Lock]:
        """The pidlock.Lock of this thread's hold (None before one)."""
        return self._context.lock

    # --- acquire and release ----------------------------------------------
    def acquire(self, timeout: Optional[float] = None,
                poll_interval: Optional[float] = None, *,
                poll_intervall: Optional[float] = None,
                blocking: Optional[bool] = None,
                cancel_check: Optional[Callable[[], bool]] = None) -> AcquireReturnProxy:
        """Take the lock, or count one more nesting level if held.

        timeout None uses the lock's; negative waits without a limit; 0
        (or blocking=False) tries once.  poll_interval is accepted and
        not used: the wait wakes on the holder's release.  cancel_check,
        a callable, is asked every poll_interval (or 0.05 s) during the
        wait; when it answers True the wait ends with Timeout.  Raises
        Timeout (with lock_file and the holder's pid, tag and age).
        """
        if poll_intervall is not None:
            warnings.warn("use poll_interval instead of poll_intervall",
                          DeprecationWarning, stacklevel=2)
        ctx = self._contexts.ctx
        timeout, poll_interval = self._call_settings(ctx, timeout,
                                                     poll_interval, blocking)
        # Made before the lock is taken: after the hold, nothing but
        # bookkeeping that an interrupt cannot leave half done.
        proxy = AcquireReturnProxy(self)
        counted = [False]
        try:
            if not self._count_in(ctx, timeout, counted, cancel_check,
                                  poll_interval):
                raise Timeout(self._lock_file)
        except BaseException:
            # A signal handler's exception (Ctrl-C), or Timeout: no count
            # and no hold of this call stays behind.
            _lib.settle(lambda: self._undo_count(ctx, counted))
            raise
        return proxy

    def _count_in(self, ctx: _Context, timeout: float, counted: list,
                  cancel_check: Optional[Callable[[], bool]] = None,
                  poll_interval: float = 0.05) -> bool:
        if self._creator_pid != _pid:
            self._refuse_inherited()
        mutex = ctx.mutex
        if not (mutex.acquire() if timeout < 0 else mutex.acquire(True, timeout)):
            return False
        try:
            if self._plain:
                lock = ctx.lock
                first = lock is None or not lock.locked
            else:
                first = not self.is_locked
            debugging = _log.filelock_debugging()
            if first:
                held = _HELD.files
                me = id(self)
                if timeout < 0 and held and (len(held) > 1 or me not in held):
                    self._refuse_deadlock_in(held)
                if debugging:
                    _log.debug_filelock(_log.ATTEMPT_ACQUIRE, self, self._lock_file)
                if cancel_check is None:
                    self._take(ctx, timeout)
                else:
                    self._take_checking(ctx, timeout, cancel_check,
                                        poll_interval)
            # The count and its flag in one statement: a signal handler
            # runs between statements, never between the two stores.
            ctx.counter, counted[0] = ctx.counter + 1, True
            if first:
                held[me] = self._lock_file
                ctx.held = (held, me)
            if debugging:
                _log.debug_filelock(_log.ACQUIRED, self, self._lock_file)
            if first and self._on_acquired is not None:
                self._call_on_acquired(ctx, counted)
        except BaseException:
            # Still under the mutex: an interrupt that came after the
            # Lock was taken leaves a hold that no count knows of.
            _lib.settle(lambda: _let_go_uncounted(ctx))
            raise
        finally:
            ctx.mutex.release()
        return True

    def _refuse_inherited(self) -> None:
        if self._creator_pid != os.getpid():
            # "inherited across fork" is filelock's wording, which
            # programs may match.
            raise RuntimeError(f"{type(self).__name__} on {self._lock_file} was "
                               "inherited across fork (made before os.fork()): "
                               "make a new one in the child")

    def _refuse_deadlock_in(self, held: "dict[int, str]") -> None:
        """A first acquire that would wait without a limit for a hold of
        another FileLock of this thread on the same path would wait
        forever: RuntimeError (filelock's rule; the first sentence is
        filelock's).  held is this thread's table of holds, id of the
        FileLock -> its path as given: the paths are made canonical
        (_canonical()) only here, when the thread holds another lock,
        and not at every acquire."""
        mine = _canonical(self._lock_file)
        me = id(self)
        for other, path in list(held.items()):
            if other != me and _canonical(path) == mine:
                raise RuntimeError(f"Deadlock: lock '{self._lock_file}' is already "
                                   f"held by a different {self._holder_kind}.  Use is_singleton=True to share one "
                                   "instance, or a timeout")

    def _refuse_deadlock(self, ctx: _Context, timeout: float) -> str:
        """The same rule by _deadlock_key(), over the table of keys
        (_HELD.paths) that AsyncFileLock keeps (its key is per task, made
        at each first acquire).  Returns the key."""
        key = self._deadlock_key()
        other = _HELD.paths.get(key)
        if timeout < 0 and other is not None and other != id(self):
            raise RuntimeError(f"Deadlock: lock '{self._lock_file}' is already "
                               f"held by a different {self._holder_kind}.  Use is_singleton=True to share one "
                               "instance, or a timeout")
        return key

    #: How the deadlock message names the other holder.
    _holder_kind = "FileLock instance in this thread"

    def _deadlock_key(self) -> Any:
        """Whose holds would make a wait a deadlock (_refuse_deadlock()):
        this thread's (the table is per thread) on the same path."""
        return _canonical(self._lock_file)

    def _after_fork_in_child(self) -> None:
        """The child's view: nothing held.  The parent's handle is closed
        (its descriptor only: the parent's lock and file stay, as the C
        library does for a handle whose record another process wrote)."""
        ctx = self._context
        old, ctx.lock = ctx.lock, None
        ctx.counter = 0
        ctx.sites = []
        ctx.held = None
        ctx.mutex = threading.RLock()
        if old is not None:
            old._guard = threading.RLock()
            old.close()

    def _take_checking(self, ctx: _Context, timeout: float,
                       cancel_check: Callable[[], bool],
                       poll_interval: float) -> None:
        """_take() in slices of poll_interval, asking cancel_check between
        them; True from it ends the wait with Timeout.  The first slice
        is a single try: a free lock is taken without asking."""
        step = max(0.001, poll_interval)
        deadline = None if timeout < 0 else time.monotonic() + timeout
        left = 0.0
        while True:
            try:
                self._take(ctx, max(0.0, left))
                return
            except Timeout:
                if deadline is not None and time.monotonic() >= deadline:
                    raise
            if cancel_check():
                _log.debug_filelock(_log.CANCELLED, self, self._lock_file)
                raise Timeout(self._lock_file)
            left = step if deadline is None else min(step, deadline - time.monotonic())

    def _call_settings(self, ctx: _Context, timeout: Optional[float],
                       poll_interval: Optional[float],
                       blocking: Optional[bool]) -> "tuple[float, float]":
        """An acquire's timeout (0 when not blocking) and poll_interval,
        from its arguments or else the lock's (FileLock and
        AsyncFileLock alike)."""
        if self._plain and not ctx.settings:
            # Nothing set after the constructor: its values, without
            # the properties' look-ups.
            settings = (self._timeout, self._blocking, self._poll_interval)
        else:
            settings = (self.timeout, self.blocking, self.poll_interval)
        if timeout is None:
            timeout = settings[0]
        if blocking is None:
            blocking = settings[1]
        if poll_interval is None:
            poll_interval = settings[2]
        return (timeout if blocking else 0), poll_interval

    def _handle_of(self, ctx: _Context) -> Lock:
        """ctx's pidlock.Lock, made at the first acquire.  No mode
        given: 0o666 less the umask, as filelock's os.open() makes it
        (self.mode reads 0o644 then, as filelock's does); a mode given
        is exact (pidlock_set_mode(3))."""
        if ctx.lock is None:
            mode = self._mode if self._mode is not None else 0o666 & ~_umask()
            lock = Lock(self._lock_file, tag=self._tag, flags=self._flags,
                        mode=mode)
            lock._quiet = True   # this FileLock logs, on filelock's logger
            ctx.lock = lock
        return ctx.lock

    def _exit_error(self, exc: Optional[BaseException],
                    release_error: BaseException) -> NoReturn:
        """__exit__'s release failed: its error, alone or with the
        block's, as context_error_policy says."""
        if exc is None or self._context_error_policy == "chain":
            raise release_error
        _raise_both(exc, release_error)

    def _call_on_acquired(self, ctx: _Context, counted: list) -> None:
        """on_acquired(fd) after the first hold; if it raises, the hold is
        let go and its error goes on (with the release's, if that fails
        too)."""
        try:
            self._on_acquired(_lib.lib.pidlock_fd(ctx.lock._live()))
        except BaseException as hook_error:
            ctx.counter, counted[0] = ctx.counter - 1, False
            try:
                _let_go_uncounted(ctx)
            except BaseException as release_error:
                _raise_both(hook_error, release_error)
            raise

    def _undo_count(self, ctx: _Context, counted: list) -> None:
        if not counted[0] and not ctx.mutex._is_owned():
            # No count, and the mutex was not left taken: a hold that the
            # call took was let go under it, in _count_in().
            return
        with ctx.mutex:
            if counted[0]:
                # One statement (see _count_in()): run again, it counts
                # down once.
                ctx.counter, counted[0] = ctx.counter - 1, False
            _let_go_uncounted(ctx)
        if ctx.mutex._is_owned():
            # The interrupt came as the mutex was got, before the try
            # that lets go of it.
            ctx.mutex.release()

    def _take(self, ctx: _Context, timeout: float) -> None:
        lock = self._handle_of(ctx)
        try:
            try:
                # _acquire_reporting(), its first try without a call.
                start = time.monotonic() if timeout > 0 else None
                try:
                    lock.acquire(0)
                except Busy:
                    if timeout == 0:
                        raise
                    self._wait_reporting(lock, timeout, start)
            except FileNotFoundError:
                if not self._make_parents():
                    raise
                self._acquire_reporting(lock, timeout)
        except Busy as busy:
            _log.debug_filelock(_log.FAILED_AT_ONCE if timeout == 0
                                else _log.TIMED_OUT, self, self._lock_file)
            raise Timeout(self._lock_file, busy.holder, busy.errno) from None
        except OSError as exc:
            if exc.errno != errno.ENOLCK:
                raise
            # The library's "the kernel could not take a lock" (no
            # flock(2) on this file system, or locks that exclude
            # nobody): filelock reports a file system without flock(2)
            # so.
            raise NotImplementedError(
                f"{self._lock_file}: the file system does not take the "
                "kernel locks that pidlock needs (ENOLCK)") from exc
        if self._mode is not None:
            self._apply_mode(lock)

    def _acquire_reporting(self, lock: Lock, timeout: float) -> None:
        """lock.acquire(timeout), with a record on the filelock logger
        when the lock is found held and a wait begins (one record per
        wait: the wait wakes on the release, not by polling)."""
        if timeout == 0:
            lock.acquire(0)
            return
        start = None if timeout < 0 else time.monotonic()
        try:
            lock.acquire(0)
            return
        except Busy:
            self._wait_reporting(lock, timeout, start)

    def _wait_reporting(self, lock: Lock, timeout: float,
                        start: Optional[float]) -> None:
        """The wait after a first try found the lock held: recorded, and
        as long as what is left of timeout since start (None: no
        limit)."""
        _log.debug_filelock(_log.WAITING, self, self._lock_file)
        lock.acquire(None if start is None
                     else max(0.0, timeout - (time.monotonic() - start)))

    def _make_parents(self) -> bool:
        """Make the missing directories of the path, with the process's
        umask, as filelock does; False if none was missing."""
        parent = os.path.dirname(self._lock_file)
        if not parent or os.path.isdir(parent):
            return False
        os.makedirs(parent, exist_ok=True)
        return True

    def _apply_mode(self, lock: Lock) -> None:
        """Give the held file exactly self.mode, as filelock does whatever
        the umask; a file of another user keeps its owner's mode."""
        if self._mode is None:
            return
        # Looked at first, by path (we hold it: the path names our file),
        # and a file we made has the mode already (pidlock_set_mode(3)
        # is exact): pidlock_fd() hands the descriptor out, which costs
        # a rewrite of the record, only where a chmod is due.  A chmod
        # is an inotify event (IN_ATTRIB) that wakes every waiter.
        with contextlib.suppress(OSError):
            if stat.S_IMODE(os.lstat(self._lock_file).st_mode) == \
                    self._mode & 0o7777:
                return
        fd = _lib.lib.pidlock_fd(lock._live())   # held: a descriptor
        if stat.S_IMODE(os.fstat(fd).st_mode) == self._mode & 0o7777:
            return
        with contextlib.suppress(PermissionError):
            os.fchmod(fd, self._mode)

    def release(self, force: bool = False) -> None:
        """Count one nesting level down; let go at 0 (at once if force).

        An interrupted release still does its part before the exception
        goes on."""
        self._release_level(force, [True])

    def _release_level(self, force: bool, todo: list) -> None:
        """release(), with todo[0] saying whether the count is still to
        be taken down (set False in the statement that takes it down):
        an async-with's own flag, so that its level is counted down once
        whatever cuts its __aexit__ short (AsyncFileLock)."""
        ctx = self._contexts.ctx
        # _lib.settle(), with its first run called directly.
        try:
            self._release_step(ctx, force, todo)
            return
        except BaseException as exc:  # noqa: BLE001 - a handler raised
            late = exc
        for _ in range(9):
            try:
                self._release_step(ctx, force, todo)
                break
            except BaseException as exc:  # noqa: BLE001 - a handler raised
                late = exc
        raise late

    def _release_step(self, ctx: _Context, force: bool, todo: list) -> None:
        """release()'s part, run again until done if a signal handler
        raises during it: todo[0] says whether the count is still to be
        taken down."""
        with ctx.mutex:
            lock = ctx.lock
            recorded = False
            if not self._plain:
                if not self.is_locked:
                    return
            elif lock is None:
                return
            elif (lock._owner is not None and lock._handle is not None
                  and (force or ctx.counter <= 1 or not todo[0])):
                # A hold that this process recorded (Lock.acquire() sets
                # _owner once the library took it; whatever lets go
                # through the Lock clears it), and a step that ends in
                # the let-go: held, without the stat(2) of
                # pidlock_verify().  If the library says otherwise at
                # the let-go, nothing changes (below), as when is_locked
                # is False.
                if lock._owner != _pid:
                    return   # a forked child's: not locked (Lock.locked)
                recorded = True
            elif not lock.locked:
                return
            sites = ctx.sites
            counted = todo[0]
            if counted:
                before = ctx.counter
                # One statement: a signal handler runs between
                # statements, never between the two stores.
                ctx.counter, todo[0] = (0 if force else before - 1), False
                popped = sites.pop() if sites else None
            if ctx.counter <= 0:
                ctx.counter = 0
                kept = None
                if sites:
                    kept = sites[:]
                    sites.clear()
                if _log.filelock_debugging():
                    _log.debug_filelock(_log.ATTEMPT_RELEASE, self, self._lock_file)
                    # The record's handlers ran: the hold is asked again.
                    _let_go_uncounted(ctx)
                    _log.debug_filelock(_log.RELEASED, self, self._lock_file)
                    return
                try:
                    lock.release()
                except OSError as exc:
                    # (LockLost too: the library's ENOLCK either way.)
                    if not (recorded and exc.errno == errno.ENOLCK
                            and type(exc) in (OSError, LockLost)):
                        raise
                    # The library held nothing (only an interrupt within
                    # a Lock's own clean-up leaves such a record): not
                    # locked, and release() changes nothing.
                    if counted:
                        if kept:
                            sites[:] = kept
                        if popped is not None:
                            sites.append(popped)
                        ctx.counter, todo[0] = before, True
                    return
                held = ctx.held   # _forget_held()
                if held is not None:
                    ctx.held = None
                    held[0].pop(held[1], None)

    def __enter__(self) -> "FileLock":
        # acquire()'s body, not a call of it: the call's return would be
        # one more place where an interrupt could land after the count.
        ctx = self._contexts.ctx
        site = with_site(sys._getframe(1))
        if ctx.entering is not None:
            _lib.settle(lambda: self._undo_entering(ctx))
        if site in ctx.sites:
            _lib.settle(lambda: self._forget_exits(ctx, site))
        else:
            # Another with-statement's block that is over (an interrupt
            # kept its __exit__ from running): it, and those it
            # enclosed, no longer count.
            over = next((s for s in ctx.sites if site_over(s)), None)
            if over is not None:
                _lib.settle(lambda: self._forget_exits(ctx, over))
        if self._plain and not ctx.settings:
            timeout = self._timeout if self._blocking else 0
        else:
            timeout = self.timeout if self.blocking else 0
        counted = [False]
        ctx.entering = (threading.get_ident(), site, counted)
        try:
            if not self._count_in(ctx, timeout, counted):
                raise Timeout(self._lock_file)
            ctx.sites.append(site)
            ctx.entering = None
        except BaseException:
            _lib.settle(lambda: self._undo_entering(ctx))
            raise
        return self

    def _undo_entering(self, ctx: _Context) -> None:
        """An __enter__ of this thread that did not return: what it
        counted no longer counts (its block never ran), and a hold that
        nobody counts is let go.  Run again until done (idempotent)."""
        entering = ctx.entering
        if entering is None or entering[0] != threading.get_ident():
            return
        _, site, counted = entering
        if ctx.sites and ctx.sites[-1] is site:
            ctx.entering = None     # it returned all but the last line
            return
        self._undo_count(ctx, counted)
        ctx.entering = None

    def _forget_exits(self, ctx: _Context, site: tuple) -> None:
        """This very with-statement is entered again while it still
        counts: it ended, and so did those it encloses, but an interrupt
        kept their __exit__ from counting down (it came before the first
        line of __exit__ ran).  Count them out, and let go at 0."""
        with ctx.mutex:
            if site not in ctx.sites:
                return
            at = ctx.sites.index(site)
            ctx.counter = max(0, ctx.counter - (len(ctx.sites) - at))
            del ctx.sites[at:]
            if ctx.counter == 0:
                ctx.sites.clear()
            _let_go_uncounted(ctx)

    def __exit__(self, exc_type: Optional[Type[BaseException]],
                 exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        try:
            self.release()
        except BaseException as release_error:
            self._exit_error(exc, release_error)

    def __del__(self) -> None:
        # The handles' own finalizers let go of other threads' holds.
        # FileLock's release, not a subclass's (AsyncFileLock's is a
        # coroutine).
        try:
            FileLock.release(self, force=True)
        except Exception:  # noqa: BLE001 - a finalizer must not raise
            pass

    def __repr__(self) -> str:
        state = "locked" if self.is_locked else "unlocked"
        return f"<pidlock.FileLock {self._lock_file!r} {state}>"


#: The properties that FileLock._plain is about.
_PLAIN_PROPERTIES = ("timeout", "blocking", "poll_interval", "is_locked")


def _option_defaults(cls: type) -> "dict[str, Any]":
    """The defaults of the options that pidlock's own classes among
    cls's bases take (the nearest class's default first)."""
    found: "dict[str, Any]" = {}
    for base in cls.__mro__:
        init = base.__dict__.get("__init__")
        if init is None or not base.__module__.startswith("pidlock."):
            continue
        init = getattr(init, "__wrapped__", init)
        for name, param in inspect.signature(init).parameters.items():
            if param.default is not param.empty:
                found.setdefault(name, param.default)
    return found


def _is_default(name: str, value: Any, default: Any) -> bool:
    if name == "mode":
        return _given_mode(value) is None
    return value is default or (type(value) is type(default) and value == default)


def _narrowed(init: Callable[..., None]) -> Callable[..., None]:
    """A subclass's __init__, run once per object (not again for a
    singleton handed out again).  If it does not take every option (no
    **kwargs), FileLock's options passed at their defaults are dropped
    before it is called (a caller that spells out the defaults, or a
    factory forwarding them, can make it); any other value still reaches
    it, and its TypeError names the option."""
    params = inspect.signature(init).parameters
    narrow = not any(p.kind is p.VAR_KEYWORD for p in params.values())

    @functools.wraps(init)
    def narrowed(self: Any, *args: Any, **kwargs: Any) -> None:
        if self.__dict__.get("_ready", False):
            # A singleton handed out again: made once, and not again
            # (nor is the subclass's own code run twice).
            return
        if narrow:
            defaults = _option_defaults(type(self))
            for name in [n for n in kwargs if n not in params and n in defaults]:
                if _is_default(name, kwargs[name], defaults[name]):
                    del kwargs[name]
        init(self, *args, **kwargs)

    return narrowed


def _given_mode(mode: Optional[int]) -> Optional[int]:
    """None when no mode was given: None, or filelock's -1 for "unset"
    (its default, which callers forwarding the defaults pass on)."""
    return None if mode is None or mode == -1 else mode


def _canonical(lock_file: PathArg) -> str:
    """The singleton key: the path through its parent's real directory
    (a symbolic link to the directory names the same lock)."""
    path = os.path.abspath(os.fsdecode(lock_file))
    parent, name = os.path.split(path)
    return os.path.join(os.path.realpath(parent), name)


def _umask() -> int:
    """The process's umask, read without changing it (os.umask() would,
    for a moment, under every thread): /proc/self/status's Umask (Linux
    4.7 and later); else filelock's default's share, 0o022."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def _let_go_uncounted(ctx: _Context) -> None:
    """Under ctx.mutex: a hold with a count of 0 is nobody's; let go."""
    if ctx.counter == 0 and ctx.lock is not None and ctx.lock.locked:
        ctx.lock.release()
    if ctx.counter == 0:
        _forget_held(ctx)


def _forget_held(ctx: _Context) -> None:
    """Under ctx.mutex, the count at 0: out of the deadlock rule's table."""
    if ctx.held is not None:
        table, key = ctx.held
        ctx.held = None
        table.pop(key, None)


class _Held(threading.local):
    """The holds of this thread, for the deadlock rule: files, id of a
    FileLock -> its path as given (_refuse_deadlock_in()); paths, an
    AsyncFileLock's key -> its id (_refuse_deadlock())."""

    def __init__(self) -> None:
        self.files: "dict[int, str]" = {}
        self.paths: "dict[Any, int]" = {}


_HELD = _Held()
#: Every FileLock, for the child's reset after os.fork().
_LIVE: "weakref.WeakSet[FileLock]" = weakref.WeakSet()


#: os.getpid(), kept by _reset_in_child(): acquire and release compare
#: pids without a getpid(2) each (a child that Python's fork hooks do
#: not run in, one of os.fork() bypassed, runs no Python code safely).
_pid = os.getpid()


def _reset_in_child() -> None:
    """After os.fork(), in the child: every FileLock is unheld there, its
    singletons and the deadlock table start empty.  Once per child:
    _catch_up_after_fork() may have run it already."""
    global _HELD, _pid
    if _pid == os.getpid():
        return
    _pid = os.getpid()
    _HELD = _Held()
    for lock in list(_LIVE):
        if lock._creator_pid != os.getpid():
            lock._after_fork_in_child()
    classes = [FileLock]
    while classes:
        cls = classes.pop()
        cls._instances, cls._instances_guard = (weakref.WeakValueDictionary(),
                                                threading.Lock())
        classes.extend(cls.__subclasses__())


os.register_at_fork(after_in_child=_reset_in_child)


def _catch_up_after_fork() -> None:
    """The child's reset, if it is still to come: at-fork callbacks
    registered before pidlock was imported run before ours, and one of
    them may ask for a singleton or read a count (the parent's, else).
    Called where a getpid(2) costs little next to the call's own work."""
    if os.getpid() != _pid:
        _reset_in_child()


#: filelock's names for the base and the platform's lock class.
BaseFileLock = FileLock
UnixFileLock = FileLock
# filelock's FileLock is its UnixFileLock on Linux, and its messages and
# type(lock).__name__ say so: ours say the same (pickle finds the class
# under either name).
FileLock.__name__ = FileLock.__qualname__ = "UnixFileLock"
