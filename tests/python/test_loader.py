# SPDX-License-Identifier: LGPL-2.1-or-later
"""Which libpidlock.so.0 `import pidlock' loads: $PIDLOCK_LIBRARY if
set, else the one of the module's own installation (the libdir that
make substituted into _paths.py), then the system's; and, when none
loads, an ImportError that names each path tried and why it failed.

Each case imports a copy of the module in a child python3 with a clean
environment (no LD_LIBRARY_PATH, no PIDLOCK_LIBRARY), as a user of a
./configure --prefix install runs it.  tests/python/prefix-install.sh
does the real configure --prefix and make install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

import pidlock

BUILT = os.environ["PIDLOCK_LIBRARY"]
SONAME = "libpidlock.so.0"


def installed_copy(tmp_path, libdir):
    """A copy of the module whose _paths.py names libdir, as make
    install writes it; the directory to put on PYTHONPATH."""
    site = tmp_path / "site"
    src = os.path.dirname(pidlock.__file__)
    shutil.copytree(src, str(site / "pidlock"),
                    ignore=shutil.ignore_patterns("__pycache__", "_paths.py*"))
    (site / "pidlock" / "_paths.py").write_text('LIBDIR = "%s"\n' % libdir)
    return str(site)


def clean_import(site, code, **env):
    """python3 -c code with nothing in the environment but PATH,
    PYTHONPATH=site and env; and a sanitizer build's preloaded runtimes
    (tests/python/run.sh), without which its library cannot load."""
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": site}
    for name in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS"):
        if name in os.environ:
            base[name] = os.environ[name]
    base.update(env)
    return subprocess.run([sys.executable, "-c", code], env=base,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=30)


def system_has_library():
    """Does the dynamic linker find libpidlock.so.0 without help?"""
    r = subprocess.run([sys.executable, "-c",
                        "import ctypes; ctypes.CDLL(%r)" % SONAME],
                       env={"PATH": os.environ.get("PATH", "")},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return r.returncode == 0


def test_own_libdir_first(tmp_path):
    """The library of the module's own prefix loads, with no
    LD_LIBRARY_PATH: the case of ./configure --prefix=/opt/x."""
    libdir = tmp_path / "prefix" / "lib"
    libdir.mkdir(parents=True)
    os.symlink(BUILT, str(libdir / SONAME))
    site = installed_copy(tmp_path, str(libdir))
    r = clean_import(site, "import pidlock, pidlock._lib as l; "
                           "print(l.lib._name)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(libdir / SONAME)


def test_missing_library_names_each_path(tmp_path):
    """Nothing loads: an ImportError naming the prefix's path, the
    system's soname, and the error of each."""
    if system_has_library():
        pytest.skip("a libpidlock.so.0 is installed system-wide")
    libdir = str(tmp_path / "nowhere" / "lib")
    site = installed_copy(tmp_path, libdir)
    r = clean_import(site, "import pidlock")
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: pidlock: cannot load"), r.stderr
    assert os.path.join(libdir, SONAME) + " (" in last, last
    assert "; %s (" % SONAME in last, last
    assert "No such file or directory" in last, last
    assert "PIDLOCK_LIBRARY" in last, last


def test_named_library_alone(tmp_path):
    """$PIDLOCK_LIBRARY is tried alone: a wrong one is not papered over
    by another library that happens to load."""
    libdir = tmp_path / "prefix" / "lib"
    libdir.mkdir(parents=True)
    os.symlink(BUILT, str(libdir / SONAME))
    site = installed_copy(tmp_path, str(libdir))
    missing = str(tmp_path / "missing.so")
    r = clean_import(site, "import pidlock", PIDLOCK_LIBRARY=missing)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert "tried: %s (" % missing in last, last
    assert str(libdir) not in last, last


def test_source_tree_has_no_libdir(tmp_path):
    """A template left unsubstituted (the source tree's) names no
    directory: only the system's soname is tried."""
    site = installed_copy(tmp_path, "@libdir@")
    r = clean_import(site, "import pidlock._lib")
    if r.returncode == 0:
        return  # a system-wide library loaded
    last = r.stderr.strip().splitlines()[-1]
    assert "tried: %s (" % SONAME in last, last
    assert "@libdir@" not in last, last
