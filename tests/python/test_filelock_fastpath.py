# SPDX-License-Identifier: LGPL-2.1-or-later
"""FileLock's acquire and release take shortcuts in the common case
(issue 36): the deadlock rule resolves paths only when the thread holds
another FileLock, the constructor's settings are read without the
properties, and a hold this process recorded is not asked of the
library at release.  What each shortcut stands in for still holds."""

from __future__ import annotations

import ctypes
import os
import threading

import pytest

import pidlock
from pidlock import _lib


def test_deadlock_rule_sees_through_a_linked_directory(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    first = pidlock.FileLock(str(real / "x.lock"))
    second = pidlock.FileLock(str(tmp_path / "link" / "x.lock"))
    other = pidlock.FileLock(str(real / "y.lock"))
    with first:
        with other:     # another path: no deadlock
            assert other.is_locked
        with pytest.raises(RuntimeError, match="Deadlock"):
            second.acquire()
        assert not second.is_locked and second.lock_counter == 0
    with second:
        assert second.is_locked


def test_deadlock_rule_with_a_relative_path_follows_the_directory(tmp_path):
    """A relative path is resolved against the directory of the moment,
    as the library opens it."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    here = os.getcwd()
    try:
        os.chdir(tmp_path / "a")
        rel = pidlock.FileLock("x.lock")
        with rel:
            pass
        os.chdir(tmp_path / "b")
        with rel:
            assert os.path.exists(tmp_path / "b" / "x.lock")
            with pytest.raises(RuntimeError, match="Deadlock"):
                pidlock.FileLock(str(tmp_path / "b" / "x.lock")).acquire()
            with pidlock.FileLock(str(tmp_path / "a" / "x.lock")):
                pass
    finally:
        os.chdir(here)


def test_subclass_properties_are_still_asked(lockpath):
    asked = []

    class Quick(pidlock.FileLock):
        @property
        def timeout(self) -> float:
            asked.append("timeout")
            return 0.0

        @property
        def is_locked(self) -> bool:
            asked.append("is_locked")
            return pidlock.FileLock.is_locked.fget(self)

    holder = pidlock.FileLock(lockpath)
    seen = []

    def hold():
        with holder:
            seen.append("held")
            go.wait(5)

    go = threading.Event()
    t = threading.Thread(target=hold)
    t.start()
    try:
        while not seen:
            threading.Event().wait(0.01)
        with pytest.raises(pidlock.Timeout):
            Quick(lockpath).acquire()   # timeout 0 from the property
    finally:
        go.set()
        t.join()
    assert "timeout" in asked and "is_locked" in asked
    lock = Quick(lockpath)
    with lock:
        assert lock.is_locked
    assert not lock.is_locked


def test_settings_changed_after_the_constructor_count(lockpath):
    lock = pidlock.FileLock(lockpath)
    lock.blocking = False
    holder = pidlock.Lock(lockpath)
    holder.acquire()
    try:
        with pytest.raises(pidlock.Timeout):
            lock.acquire()
    finally:
        holder.release()
    lock.acquire()
    assert lock.is_locked
    lock.release()


def test_release_after_the_hold_was_let_go_elsewhere_changes_nothing(lockpath):
    """is_locked is the library's answer: a release when it holds
    nothing counts nothing down, whether the Lock let go (its record
    forgotten) or the library did behind it (the record kept)."""
    lock = pidlock.FileLock(lockpath)
    lock.acquire()
    lock.pidlock.release()
    assert not lock.is_locked and lock.lock_counter == 1
    lock.release()
    assert lock.lock_counter == 1

    # In a thread of its own: the thread's table of holds goes with it.
    errors = []

    def behind_its_back():
        try:
            other = pidlock.FileLock(lockpath + ".2")
            with other:
                with other:
                    handle = other.pidlock._handle
                    assert _lib.lib.pidlock_release(ctypes.c_void_p(handle)) == 0
                    assert not other.is_locked and other.lock_counter == 2
                    other.release()
                    assert other.lock_counter == 2
                    other.release(force=True)
                    assert other.lock_counter == 2
                assert other.lock_counter == 2
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    t = threading.Thread(target=behind_its_back)
    t.start()
    t.join()
    if errors:
        raise errors[0]
