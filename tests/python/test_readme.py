# SPDX-License-Identifier: LGPL-2.1-or-later
"""The README's Python example does what the README says."""

from __future__ import annotations

import contextlib
import io
import os
import re

import pidlock
from helpers import Holder

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def example() -> str:
    with open(README) as f:
        text = f.read()
    section = text.split("## From Python", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def run_example(path: str) -> tuple:
    code = example().replace('"/run/lock/backup.lock"', repr(path))
    ran = []
    out = io.StringIO()

    def run_backup():
        ran.append(pidlock.inspect(path))

    with contextlib.redirect_stdout(out):
        exec(code, {"run_backup": run_backup})
    return ran, out.getvalue()


def test_readme_example(lockpath):
    ran, out = run_example(lockpath)
    assert out == "" and len(ran) == 1
    assert ran[0].state == pidlock.State.HELD and ran[0].tag == "nightly"
    assert not os.path.exists(lockpath)
    holder = Holder(lockpath, tag="manual run")
    try:
        ran, out = run_example(lockpath)
        assert ran == []
        assert out.startswith(f"backup already running: pid {holder.pid} (manual run), for ")
    finally:
        holder.close()
