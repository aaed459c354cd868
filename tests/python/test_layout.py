# SPDX-License-Identifier: LGPL-2.1-or-later
"""The ctypes layout of struct pidlock_info is the C compiler's, and the
enums mirror <pidlock.h>."""

from __future__ import annotations

import ctypes
import os
import re
import subprocess

import pidlock
from pidlock import _lib

HEADER = os.path.join(os.path.dirname(__file__), "..", "..", "include", "pidlock.h")

# Words of the ctypes struct that a header from before shared locks
# (libpidlock 1.2's shared branch) still calls reserved; they read zero.
LATER_WORDS = ["shared", "holders"]
LATER_FLAGS = {"SHARED"}


def header_text() -> str:
    with open(HEADER) as f:
        return f.read()


def header_tail() -> list:
    """The fields of struct pidlock_info after tag, as (name, count)."""
    body = re.search(r"struct pidlock_info \{(.*?)\n\};", header_text(), re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    fields = re.findall(r"(\w+)(?:\[([^\]]+)\])?;", body)
    names = [name for name, _ in fields]
    return [(name, int(count) if count.isdigit() else 1)
            for name, count in fields[names.index("tag") + 1:]]


def test_info_layout_matches_c():
    out = subprocess.run([os.environ["PIDLOCK_TEST_LAYOUT"]], check=True,
                         capture_output=True, text=True).stdout
    c = {name: (int(off), int(size))
         for name, off, size in (line.split() for line in out.splitlines())}
    py = {name: (getattr(_lib.Info, name).offset, getattr(_lib.Info, name).size)
          for name, _ in _lib.Info._fields_}
    assert ctypes.sizeof(_lib.Info) == c.pop("sizeof")[1]
    res_off, res_size = c.pop("reserved")
    for name, where in c.items():
        assert py[name] == where, name
    # The tail: the same words, or ours naming words the header reserves.
    tail = [(name, getattr(_lib.Info, name).size // 4) for name, _ in
            _lib.Info._fields_[[n for n, _ in _lib.Info._fields_].index("tag") + 1:]]
    header = header_tail()
    later = [(name, 1) for name in LATER_WORDS]
    if header != tail and len(header) > len(tail):
        # The header ahead of the binding: words it names (holder_hidden,
        # 1.3.0) that ctypes still reads as reserved, which is safe.
        assert header[:len(tail) - 1] == tail[:-1]
        assert tail[-1][0] == header[-1][0] == "reserved"
        assert sum(n for _, n in header[len(tail) - 1:]) == tail[-1][1]
    elif header != tail:
        assert header == [("reserved", tail[-1][1] + len(later))]
        assert tail == later + [tail[-1]]
    # Whatever the tail's names, it covers the C tail's bytes exactly.
    assert getattr(_lib.Info, tail[0][0]).offset == py["tag"][0] + py["tag"][1]
    assert py["reserved"][0] + py["reserved"][1] == res_off + res_size


def header_constants(prefix: str) -> dict:
    found = {}
    for name, value in re.findall(rf"\b{prefix}(\w+) = ([^,\n]+),", header_text()):
        found[name] = eval(value.replace("U", ""))  # "1U << 3" and plain numbers
    return found


def test_flags_mirror_header():
    header = {k: v for k, v in header_constants("PIDLOCK_").items()
              if not k.startswith(("KIND_", "STATE_"))}
    flags = {m.name: int(m) for m in pidlock.Flags if m.name != "NONE"}
    assert {k: v for k, v in flags.items() if k in header} == header
    assert set(flags) - set(header) <= LATER_FLAGS


def test_states_and_kinds_mirror_header():
    header = header_constants("PIDLOCK_")
    states = {k[len("STATE_"):]: v for k, v in header.items() if k.startswith("STATE_")}
    kinds = {k[len("KIND_"):]: v for k, v in header.items() if k.startswith("KIND_")}
    assert {s.name: int(s) for s in pidlock.State} == states
    assert {k.name: int(k) for k in pidlock.Kind if k.name != "NONE"} == kinds
    assert pidlock.State.HELD.label == "held"
