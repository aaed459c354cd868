# SPDX-License-Identifier: LGPL-2.1-or-later
"""The holder, from outside: pidlock.holder_pidfds() names proven holders
only, and pidlock.wait_free() sleeps until nobody holds the lock."""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import threading
import time

import pytest

import pidlock
from helpers import Holder


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def test_holder_pidfd_reaches_the_holder(tmp_path):
    path = str(tmp_path / "a.lock")
    holder = Holder(path)
    try:
        found = pidlock.holder_pidfds(path)
        assert [pid for pid, _ in found] == [holder.pid]
        pidfd = found[0][1]
        try:
            signal.pidfd_send_signal(pidfd, 0)
            assert os.get_inheritable(pidfd) is False
        finally:
            os.close(pidfd)
        with pidlock.Lock(tmp_path / "other.lock") as other:
            assert other.holder_pidfds()[0][0] == os.getpid()
            os.close(other.holder_pidfds()[0][1])
    finally:
        holder.release()
        holder.close()
    with pytest.raises(ProcessLookupError):
        pidlock.holder_pidfds(path)


def test_bare_pid_is_never_a_holder(tmp_path):
    """A hand-written pidfile naming a live process: held, but nothing
    proves its process holds it, so no pidfd is given."""
    innocent = subprocess.Popen(["sleep", "300"])
    try:
        time.sleep(0.05)
        path = tmp_path / "daemon.pid"
        path.write_text(f"{innocent.pid}\n")
        with pytest.raises(OSError) as err:
            pidlock.holder_pidfds(path)
        assert err.value.errno == errno.ENOLCK
    finally:
        innocent.kill()
        innocent.wait()


def test_wait_free(tmp_path):
    path = str(tmp_path / "a.lock")
    assert pidlock.wait_free(path, 0) is True
    holder = Holder(path)
    try:
        assert pidlock.wait_free(path, 0) is False
        cpu = cpu_seconds()
        assert pidlock.wait_free(path, 0.5) is False
        # Asleep in the kernel: the half second cost next to no CPU.
        assert cpu_seconds() - cpu < 0.1
        threading.Timer(0.3, holder.release).start()
        assert pidlock.wait_free(path, 30) is True
        # It took nothing: the holder removed the file on release.
        assert not os.path.exists(path)
    finally:
        holder.close()


def test_wait_free_survives_a_handler(tmp_path):
    """A signal handler that returns does not end the wait (PEP 475)."""
    path = str(tmp_path / "a.lock")
    holder = Holder(path)
    runs = []
    old = signal.signal(signal.SIGUSR1, lambda s, f: runs.append(s))
    try:
        timer = threading.Timer(
            0.1, signal.pthread_kill, (threading.get_ident(), signal.SIGUSR1))
        timer.start()
        assert pidlock.wait_free(path, 0.6) is False
        timer.join()
        assert runs == [signal.SIGUSR1]
    finally:
        signal.signal(signal.SIGUSR1, old)
        holder.release()
        holder.close()
