# SPDX-License-Identifier: LGPL-2.1-or-later
"""pidlock.Lock in one process: the record, release, errors, inspect."""

from __future__ import annotations

import errno
import gc
import os

import pytest

import pidlock
from pidlock import State


def record(path: str) -> dict:
    with open(path) as f:
        return dict(line.split("=", 1) for line in f.read().split())


def test_context_manager_writes_record_and_removes_file(lockpath):
    with pidlock.Lock(lockpath, tag="backup") as lock:
        assert lock.locked and lock.path == lockpath
        rec = record(lockpath)
        assert rec["pid"] == str(os.getpid()) and rec["tag"] == "backup"
        assert os.fstat(lock.fileno()).st_ino == os.stat(lockpath).st_ino
    assert not lock.locked
    assert not os.path.exists(lockpath)


def test_handle_is_reused(lockpath):
    lock = pidlock.Lock(lockpath)
    for _ in range(3):
        lock.acquire()
        assert os.path.exists(lockpath)
        lock.release()
        assert not os.path.exists(lockpath)


def test_errors_carry_errno(lockpath):
    lock = pidlock.Lock(lockpath)
    with pytest.raises(OSError) as exc:
        lock.release()
    assert exc.value.errno == errno.ENOLCK
    with pytest.raises(OSError) as exc:
        lock.fileno()
    assert exc.value.errno == errno.ENOLCK
    lock.acquire()
    with pytest.raises(OSError) as exc:
        lock.acquire()
    assert exc.value.errno == errno.EALREADY
    lock.release()
    with pytest.raises(IsADirectoryError):
        pidlock.Lock(lockpath + "/")


def test_second_handle_in_process_is_busy(lockpath):
    with pidlock.Lock(lockpath, tag="first"):
        other = pidlock.Lock(lockpath)
        with pytest.raises(pidlock.Busy) as exc:
            other.acquire(timeout=0)
        busy = exc.value
        assert isinstance(busy, TimeoutError)
        assert busy.errno == errno.EWOULDBLOCK
        assert busy.pid == os.getpid() and busy.tag == "first"
        assert 0 <= busy.age < 60
        with pytest.raises(pidlock.Busy) as exc:
            other.acquire(timeout=0.1)
        assert exc.value.errno == errno.ETIMEDOUT
    other.acquire(timeout=0)
    other.release()


def test_refresh_and_verify(lockpath):
    with pidlock.Lock(lockpath) as lock:
        lock.verify()
        os.utime(lockpath, (0, 0))
        lock.refresh()
        assert record(lockpath)["pid"] == str(os.getpid())
        assert os.stat(lockpath).st_mtime > 0


def test_replaced_file_is_broken_lock_and_left_alone(lockpath):
    lock = pidlock.Lock(lockpath)
    lock.acquire()
    os.unlink(lockpath)
    with open(lockpath, "w") as f:
        f.write("someone else's\n")
    with pytest.raises(pidlock.BrokenLock) as exc:
        lock.verify()
    assert exc.value.errno == errno.ESTALE
    with pytest.raises(pidlock.BrokenLock):
        lock.refresh()
    with pytest.raises(pidlock.BrokenLock):
        lock.release()
    assert not lock.locked
    with open(lockpath) as f:
        assert f.read() == "someone else's\n"


def test_keep_file_flag(lockpath):
    with pidlock.Lock(lockpath, flags=pidlock.Flags.KEEP_FILE):
        ino = os.stat(lockpath).st_ino
    assert os.stat(lockpath).st_ino == ino
    assert pidlock.inspect(lockpath).state == State.FREE


def test_inspect_states(lockpath):
    info = pidlock.inspect(lockpath)
    assert info.state == State.FREE and info.pid is None
    with pidlock.Lock(lockpath, tag="x"):
        info = pidlock.inspect(lockpath)
        assert info.state == State.HELD
        assert info.pid == os.getpid() and info.pid_alive is True
        assert info.tag == "x" and info.kernel_locks == pidlock.Kind.FLOCK | pidlock.Kind.OFD
        assert info.age is not None and info.age < 60
        # An exclusive hold: not shared; one holder, or 0 from a library
        # that does not count holders yet.
        assert info.shared is False and info.holders in (0, 1)
    with open(lockpath, "w") as f:
        f.write("#!/bin/sh\necho hello\n")
    assert pidlock.inspect(lockpath).state == State.NOT_LOCK_FILE


def test_finalizer_releases_in_owner(lockpath):
    lock = pidlock.Lock(lockpath)
    lock.acquire()
    del lock
    gc.collect()
    assert not os.path.exists(lockpath)


def test_close_frees_handle(lockpath):
    lock = pidlock.Lock(lockpath)
    lock.acquire()
    lock.close()
    assert not os.path.exists(lockpath)
    with pytest.raises(ValueError):
        lock.acquire()


def test_sync_flag(lockpath):
    """Flags.SYNC is accepted and holds as the default does; with
    NO_SYNC it is a contradiction (EINVAL)."""
    with pidlock.Lock(lockpath, flags=pidlock.Flags.SYNC):
        assert record(lockpath)["pid"] == str(os.getpid())
    assert not os.path.exists(lockpath)
    with pytest.raises(OSError) as err:
        pidlock.Lock(lockpath, flags=pidlock.Flags.SYNC | pidlock.Flags.NO_SYNC)
    assert err.value.errno == errno.EINVAL


def test_busy_repr_names_the_lock(lockpath):
    """repr(Busy) names the path and the holder, not an errno's text."""
    holder = pidlock.Lock(lockpath)
    holder.acquire()
    try:
        with pytest.raises(pidlock.Busy) as err:
            pidlock.Lock(lockpath).acquire(0)
        assert repr(err.value) == f"Busy({lockpath!r}, pid={os.getpid()})"
        assert "timed out" not in repr(err.value)
    finally:
        holder.release()


def test_module_help_names_what_is_provided():
    """help(pidlock) does not say that a provided class is not."""
    doc = pidlock.__doc__
    assert "ReadWriteLock are not" not in doc
    for name in ("ReadWriteLock", "AsyncReadWriteLock"):
        assert hasattr(pidlock, name) and name in doc


def test_soft_file_lock_import_names_what_to_use():
    """filelock's SoftFileLock: an ImportError that says what to use."""
    with pytest.raises(ImportError, match="pidlock provides no SoftFileLock: "
                       ".*pidlock.FileLock"):
        from pidlock import SoftFileLock  # noqa: F401
    with pytest.raises(ImportError, match="AsyncFileLock"):
        from pidlock import AsyncSoftFileLock  # noqa: F401
    with pytest.raises(AttributeError):
        pidlock.NoSuchThing  # noqa: B018
