# SPDX-License-Identifier: LGPL-2.1-or-later
"""Bad input: a clear exception, and nothing changed on disk."""

from __future__ import annotations

import asyncio
import errno
import os

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
    assert snapshot(path) == before and dir_listing(tmp_path) == listing


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


@pytest.mark.parametrize("take", TAKERS)
def test_missing_directory(tmp_path, take):
    path = str(tmp_path / "no" / "such" / "a.lock")
    with pytest.raises(FileNotFoundError) as exc:
        take(path)
    assert exc.value.errno == errno.ENOENT
    assert dir_listing(tmp_path) == []


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
