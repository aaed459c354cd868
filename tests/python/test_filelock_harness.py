# SPDX-License-Identifier: LGPL-2.1-or-later
"""The machinery of `make check-filelock' (tests/python/filelock-suite.sh),
checked without filelock's sources: a stand-in `filelock' package of a
few empty classes (written here; nothing of filelock's) takes the place
of the real one.  The sitecustomize that the suite installs must map
filelock's names to pidlock's in every Python process, a child whose
arguments contain "pytest" too (its first version skipped those, and
every child given a tmp_path has the word in its arguments: issue 37),
the child's builds must reach the builds file under its parent's test,
and a process that cannot map must end instead of running filelock's
own code."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

STAND_IN = {
    "__init__.py": (
        "from ._api import AcquireReturnProxy, BaseFileLock\n"
        "from ._unix import UnixFileLock, has_fcntl\n"
        "from ._read_write import ReadWriteLock\n"
        "from ._async_read_write import AsyncReadWriteLock\n"
        "from ._descriptor import lock_descriptor, unlock_descriptor\n"
        "from ._error import Timeout\n"
        "from ._soft import SoftFileLock\n"
        "FileLock = UnixFileLock\n"),
    "_api.py": (
        "class BaseFileLock:\n"
        "    def __init__(self, *args, **kwargs):\n"
        "        pass\n"
        "class AcquireReturnProxy:\n"
        "    pass\n"),
    "_unix.py": (
        "from ._api import BaseFileLock\n"
        "class UnixFileLock(BaseFileLock):\n"
        "    pass\n"
        "has_fcntl = True\n"),
    "_read_write.py": (
        "class ReadWriteLock:\n"
        "    def __init__(self, *args, **kwargs):\n"
        "        pass\n"),
    "_async_read_write.py": (
        "class AsyncReadWriteLock:\n"
        "    def __init__(self, *args, **kwargs):\n"
        "        pass\n"),
    "_descriptor.py": (
        "def lock_descriptor(fd):\n"
        "    return True\n"
        "def unlock_descriptor(fd):\n"
        "    pass\n"),
    "_error.py": "class Timeout(TimeoutError):\n    pass\n",
    "_soft.py": (
        "from ._api import BaseFileLock\n"
        "class SoftFileLock(BaseFileLock):\n"
        "    pass\n"),
    "asyncio.py": (
        "from ._api import BaseFileLock\n"
        "class AsyncFileLock(BaseFileLock):\n"
        "    pass\n"),
}

CHILD = """
import sys
import filelock, filelock._read_write, filelock._soft, pidlock
assert "filelock_map" in sys.modules, "sitecustomize did not load filelock_map"
assert filelock.FileLock is pidlock.FileLock, filelock.FileLock
assert filelock._read_write.ReadWriteLock is pidlock.ReadWriteLock
lock = filelock.FileLock(sys.argv[1])
with lock:
    assert lock.is_locked
filelock._soft.SoftFileLock()     # filelock's own class: noted as such
print("mapped")
"""


def _setup(tmp_path, drop=()):  # type: ignore[no-untyped-def]
    """The suite's scratch layout: sitecustomize.py and filelock_map.py,
    and the stand-in package (without the modules in drop)."""
    scratch = tmp_path / "scratch"
    (scratch / "filelock").mkdir(parents=True)
    for name, text in STAND_IN.items():
        if name not in drop:
            (scratch / "filelock" / name).write_text(text)
    shutil.copy(os.path.join(HERE, "filelock_sitecustomize.py"),
                scratch / "sitecustomize.py")
    shutil.copy(os.path.join(HERE, "filelock_map.py"), scratch / "filelock_map.py")
    builds = tmp_path / "builds"
    builds.write_text("")
    env = dict(os.environ,
               PYTHONPATH=os.pathsep.join(
                   [str(scratch)] + os.environ.get("PYTHONPATH", "").split(os.pathsep)),
               FILELOCK_SHIM_BUILDS=str(builds),
               FILELOCK_SHIM_TEST="tests/test_x.py::test_y[pytest]")
    return env, builds


def test_child_with_pytest_in_its_arguments_is_mapped(tmp_path) -> None:
    env, builds = _setup(tmp_path)
    path = tmp_path / "pytest-of-nobody" / "pytest-0" / "test_y0" / "a.lock"
    path.parent.mkdir(parents=True)
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), "--pytest"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "mapped\n", "")
    lines = builds.read_text().splitlines()
    kinds = {line.split(" ", 2)[0] for line in lines}
    assert kinds == {"O", "H", "F"}, lines
    assert all(line.split(" ", 2)[2] == "tests/test_x.py::test_y[pytest]"
               for line in lines), lines
    assert len(lines) == 3, lines       # the first of each kind only


def test_child_that_cannot_map_ends(tmp_path) -> None:
    env, _ = _setup(tmp_path, drop=("_read_write.py",))
    done = subprocess.run([sys.executable, "-c", "print('ran')"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 70
    assert done.stdout == ""
    assert "not pidlock's in this process" in done.stderr
