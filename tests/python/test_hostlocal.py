# SPDX-License-Identifier: LGPL-2.1-or-later
"""Never silently local: a file system whose locks exclude only this host
is refused (OSError ENOLCK) unless the lock says Flags.HOST_LOCAL.  The
file system is bindfs mounted as fuse.sshfs; skipped without it.  And
the record names its host: another kernel's pid is not judged here."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import time

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


# --- the record names its host ----------------------------------------------
OTHER_BOOT = "00000000-1111-4222-8333-444444444444"


def boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        pytest.skip("no boot id here")


def test_foreign_record_names_its_host(tmp_path):
    """A record written under another kernel: inspect() names its host,
    and does not judge its pid by this host's processes (our own pid
    runs here, and is not called alive)."""
    ours = boot_id()
    path = tmp_path / "far.lock"
    path.write_text(f"pid={os.getpid()}\ntimestamp={int(time.time())}\n"
                    f"lock=flock,ofd\nhost=node7.example\nboot={OTHER_BOOT}\n")
    info = pidlock.inspect(path)
    assert info.foreign and info.host == "node7.example"
    assert info.pid == os.getpid() and info.pid_alive is None
    path.write_text(path.read_text().replace(OTHER_BOOT, ours))
    info = pidlock.inspect(path)
    assert not info.foreign and info.host is None and info.pid_alive is True


def test_own_record_names_this_host(tmp_path):
    path = tmp_path / "own.lock"
    with pidlock.Lock(path):
        lines = path.read_text().splitlines()
    assert f"host={os.uname().nodename}" in lines
    assert f"boot={boot_id()}" in lines
