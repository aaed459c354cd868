# SPDX-License-Identifier: LGPL-2.1-or-later
"""What a new user looks at first (issue 45, item 5): the module's
version, the name of a lost lock's exception, and help(pidlock) saying
what the code does."""

from __future__ import annotations

import errno
import inspect
import os
import re
import stat

import pidlock

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def configure_version() -> str:
    with open(os.path.join(TOP, "configure.ac"), encoding="utf-8") as f:
        m = re.search(r"^AC_INIT\(\[[^]]*\], *\[([^]]+)\]", f.read(), re.M)
    assert m
    return m.group(1)


def test_version_is_configures():
    assert pidlock.__version__ == configure_version()


def test_lock_lost_is_an_oserror_of_its_own():
    assert "LockLost" in pidlock.__all__
    lost = pidlock.LockLost("/run/lock/x")
    assert isinstance(lost, OSError) and not isinstance(lost, TimeoutError)
    assert lost.errno == errno.ENOLCK and lost.filename == "/run/lock/x"


def test_help_names_filelocks_defaults_as_they_are(lockpath):
    # help(pidlock) gives FileLock's constructor with its defaults: each
    # one must be the signature's, and what it says of an unset mode
    # must be what the file gets.
    doc = pidlock.__doc__ or ""
    m = re.search(r"constructor \(lock_file, ([^)]*)\)", doc)
    assert m, "help(pidlock) names no FileLock constructor"
    params = inspect.signature(pidlock.FileLock.__init__).parameters
    for item in re.split(r",\s*", " ".join(m.group(1).split())):
        if "=" not in item:
            continue
        name, value = item.split("=")
        assert repr(params[name].default) == value, name
    assert "0o666 minus the umask" in doc
    old = os.umask(0o077)
    try:
        with pidlock.FileLock(lockpath):
            assert stat.S_IMODE(os.stat(lockpath).st_mode) == 0o600
    finally:
        os.umask(old)


def test_library_names_the_file_loaded():
    # run.sh names the build tree's library: that is the one loaded.
    named = os.environ.get("PIDLOCK_LIBRARY")
    if named:
        assert pidlock.LIBRARY == named
    assert pidlock.LIBRARY.endswith("libpidlock.so.0")


def test_an_unset_mode_is_the_same_for_filelock_and_asyncfilelock(lockpath):
    # One home for the handle (FileLock._handle_of()): both make the file
    # 0o666 less the umask, as filelock does (FileLock made it 0o644
    # less the umask, AsyncFileLock exactly 0o666 whatever the umask).
    import asyncio

    async def in_loop() -> int:
        async with pidlock.AsyncFileLock(lockpath):
            return stat.S_IMODE(os.stat(lockpath).st_mode)

    for mask in (0, 0o027):
        old = os.umask(mask)
        try:
            with pidlock.FileLock(lockpath):
                plain = stat.S_IMODE(os.stat(lockpath).st_mode)
            assert plain == asyncio.run(in_loop()) == 0o666 & ~mask
        finally:
            os.umask(old)
