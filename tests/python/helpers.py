# SPDX-License-Identifier: LGPL-2.1-or-later
"""Real peer processes and snapshots for the Python suite."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Optional


def holder_script(make: str, after_hold: str = "") -> str:
    """A holder program: `make` sets `lock` up from argv[1], the holder
    takes it, says "held" (then what after_hold prints), and on
    "release" lets go and says "released"; on EOF it exits holding (the
    kernel drops its locks)."""
    return textwrap.dedent("""
        import sys
        {make}
        lock.acquire()
        print("held", flush=True)
        {after_hold}
        for line in sys.stdin:
            if line.strip() == "release":
                lock.release()
                print("released", flush=True)
        """).format(make=make, after_hold=after_hold)


# The library's own holder of argv[1], tagged argv[2].
HOLDER = holder_script("import pidlock; "
                       "lock = pidlock.Lock(sys.argv[1], tag=sys.argv[2] or None)")


class Holder:
    """A child process that holds a lock until told to let go."""

    def __init__(self, path: str, tag: str = "", script: str = HOLDER) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", script, path, tag],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.expect("held")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def expect(self, word: str) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        assert line == word, f"holder said {line!r}, not {word!r}"

    def tell(self, word: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(word + "\n")
        self.proc.stdin.flush()

    def release(self) -> None:
        self.tell("release")
        self.expect("released")

    def close(self) -> int:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        return self.proc.wait(timeout=10)


# make check-notmpfile refuses RENAME_NOREPLACE and O_TMPFILE, so the
# library publishes in place; there a contended create may leave an
# empty file that the winner keeps for good (doc/protocol.md, sections
# 3 and 7), released but present.  Same test as tu_in_place() in C.
IN_PLACE = (os.environ.get("FAULT_NORENAME") == "1"
            and os.environ.get("FAULT_NOTMPFILE") == "1")


def assert_gone_after_contention(path: str) -> None:
    """After contended acquires: no file, or, in place, a kept free one."""
    if not IN_PLACE or not os.path.exists(path):
        assert not os.path.exists(path)
        return
    import pidlock
    info = pidlock.inspect(path)
    assert info.state == pidlock.State.FREE, info


def snapshot(path: str) -> Optional[tuple]:
    """(inode, mode, bytes) of what is at path, not following links."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if os.path.islink(path):
        return (st.st_ino, st.st_mode, os.readlink(path))
    with open(path, "rb") as f:
        return (st.st_ino, st.st_mode, f.read())


def dir_listing(path: str) -> list:
    return sorted(os.listdir(path))
