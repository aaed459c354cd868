# SPDX-License-Identifier: LGPL-2.1-or-later
"""Never silently local: a file system whose locks exclude only this host
is refused (OSError ENOLCK) unless the lock says Flags.HOST_LOCAL.  The
file system is bindfs mounted as fuse.sshfs; skipped without it."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess

import pytest

import pidlock


@pytest.fixture
def sshfs_like(tmp_path):
    src, mnt = tmp_path / "src", tmp_path / "mnt"
    src.mkdir()
    mnt.mkdir()
    if not shutil.which("bindfs") or subprocess.run(
            ["bindfs", "-o", "subtype=sshfs", str(src), str(mnt)],
            stderr=subprocess.DEVNULL).returncode != 0:
        pytest.skip("bindfs or FUSE not available")
    try:
        yield mnt
    finally:
        subprocess.run(["fusermount3", "-u", str(mnt)], check=False)


def test_refused_without_host_local(sshfs_like):
    path = sshfs_like / "job.lock"
    with pytest.raises(OSError) as e:
        with pidlock.Lock(path, timeout=0):
            pass
    assert e.value.errno == errno.ENOLCK
    assert not os.path.exists(path)


def test_host_local_locks(sshfs_like):
    path = sshfs_like / "job.lock"
    with pidlock.Lock(path, timeout=0, flags=pidlock.Flags.HOST_LOCAL):
        assert os.path.exists(path)
    assert not os.path.exists(path)
