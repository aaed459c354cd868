# SPDX-License-Identifier: LGPL-2.1-or-later
"""Threads of one process on one path: each thread's hold (a Lock of
its own, or FileLock's per-thread hold) excludes the others through the
kernel, as holds of separate processes do."""

from __future__ import annotations

import os
import threading

import pidlock
from helpers import assert_gone_after_contention


def test_many_threads_exclude_each_other(lockpath):
    inside, most = [0], [0]
    lock = pidlock.FileLock(lockpath)

    def work():
        own = pidlock.Lock(lockpath)
        for i in range(40):
            with (lock if i % 2 else own):
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1
    assert_gone_after_contention(lockpath)
