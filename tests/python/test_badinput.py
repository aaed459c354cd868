# SPDX-License-Identifier: LGPL-2.1-or-later
"""Bad input: a clear exception, and nothing changed on disk."""

from __future__ import annotations

import asyncio
import errno
import os
import pathlib

import pytest

import pidlock
from helpers import dir_listing, snapshot


def take_lock(path: str) -> None:
    pidlock.Lock(path, timeout=0).acquire()


def take_filelock(path: str) -> None:
    pidlock.FileLock(path, timeout=0).acquire()


def take_async(path: str) -> None:
    asyncio.run(pidlock.AsyncLock(path, timeout=0).acquire())


TAKERS = [take_lock, take_filelock, take_async]


@pytest.mark.parametrize("take", TAKERS)
def test_non_lock_file_is_refused(tmp_path, take):
    path = str(tmp_path / "script.sh")
    with open(path, "w") as f:
        f.write("#!/bin/sh\nrm -rf /tmp/nothing\n")
    os.chmod(path, 0o755)
    before, listing = snapshot(path), dir_listing(tmp_path)
    with pytest.raises(OSError) as exc:
        take(path)
    assert exc.value.errno == errno.EBADMSG and exc.value.filename == path
    # Our own class, still an OSError, with the CLI's explanation and advice.
    assert isinstance(exc.value, pidlock.NotALockFile)
    assert "not a lock file" in str(exc.value)
    assert "nothing was changed" in str(exc.value)
    assert repr(path + ".lock") in str(exc.value)
    assert snapshot(path) == before and dir_listing(tmp_path) == listing


def test_not_a_lock_file_pickles():
    e = pidlock.NotALockFile("/x/data")
    import pickle
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is pidlock.NotALockFile and back.filename == "/x/data"
    assert back.errno == errno.EBADMSG


@pytest.mark.parametrize("take", TAKERS)
def test_symlink_is_refused(tmp_path, take):
    target = str(tmp_path / "target")
    with open(target, "w") as f:
        f.write("")
    link = str(tmp_path / "link.lock")
    os.symlink(target, link)
    before = (snapshot(link), snapshot(target), dir_listing(tmp_path))
    with pytest.raises(OSError) as exc:
        take(link)
    assert exc.value.errno == errno.ELOOP
    assert (snapshot(link), snapshot(target), dir_listing(tmp_path)) == before


# FileLock makes missing directories, as filelock does (test_filelock.py).
@pytest.mark.parametrize("take", [take_lock, take_async])
def test_missing_directory(tmp_path, take):
    path = str(tmp_path / "no" / "such" / "a.lock")
    with pytest.raises(FileNotFoundError) as exc:
        take(path)
    assert exc.value.errno == errno.ENOENT
    assert dir_listing(tmp_path) == []


def take_slots(path) -> None:
    pidlock.Slots(path, 2, timeout=0).acquire()


def look(path) -> None:
    pidlock.inspect(path)


# Every entry point that takes a path.  The C library is given a C
# string: a NUL would cut the path short, and the part before it names
# another file, which would be locked (or inspected) in its place.
ENTRY_POINTS = [take_lock, take_filelock, take_async, take_slots, look]


@pytest.mark.parametrize("form", [str, bytes, pathlib.Path])
@pytest.mark.parametrize("use", ENTRY_POINTS)
def test_nul_in_path_is_refused(tmp_path, use, form):
    real = tmp_path / "real"
    held = tmp_path / "held"
    holder = pidlock.Lock(held, tag="the other file")
    holder.acquire()
    try:
        before = dir_listing(tmp_path), snapshot(str(held))
        for cut in (str(real) + "\0suffix", str(held) + "\0suffix"):
            arg = os.fsencode(cut) if form is bytes else form(cut)
            with pytest.raises(ValueError, match="embedded null byte"):
                use(arg)
        # Nothing made at the path before the NUL, nothing changed at
        # the held one's.
        assert (dir_listing(tmp_path), snapshot(str(held))) == before
        assert holder.locked
    finally:
        holder.release()


@pytest.mark.parametrize("use", ENTRY_POINTS)
def test_empty_path_is_not_found(tmp_path, monkeypatch, use):
    # As os.open(""): FileNotFoundError, not the library's EINVAL.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as exc:
        use("")
    assert exc.value.errno == errno.ENOENT and exc.value.filename == ""
    assert dir_listing(tmp_path) == []


def test_filelock_refuses_bad_paths_at_acquire_only(tmp_path):
    # filelock's constructor takes any path; its acquire refuses it.
    for path, error in (("", FileNotFoundError), ("x\0y", ValueError)):
        lock = pidlock.FileLock(path)
        assert not lock.is_locked
        with pytest.raises(error):
            lock.acquire()
        assert not lock.is_locked and lock.lock_counter == 0


@pytest.mark.parametrize("take", TAKERS)
def test_directory(tmp_path, take):
    os.mkdir(tmp_path / "d")
    with pytest.raises(IsADirectoryError):
        take(str(tmp_path / "d"))
    assert dir_listing(tmp_path) == ["d"] and dir_listing(tmp_path / "d") == []


def test_inspect_bad_input(tmp_path):
    os.symlink("x", tmp_path / "l")
    with pytest.raises(OSError) as exc:
        pidlock.inspect(tmp_path / "l")
    assert exc.value.errno == errno.ELOOP
    with pytest.raises(FileNotFoundError):
        pidlock.inspect(tmp_path / "none" / "x")
    assert os.listdir(tmp_path) == ["l"]
