# SPDX-License-Identifier: LGPL-2.1-or-later
"""The PEP 517 build backend of the Python package `pidlock'
(python/pyproject.toml names it, with backend-path and no requirements).

Why one of our own: pip builds a package in an isolated environment into
which it first installs the backend the package asks for; setuptools or
any other backend would come from PyPI, so `pip install ./python' would
fail offline.  The package is pure Python (ctypes over libpidlock.so.0),
so a wheel is a zip of python/pidlock and a .dist-info directory
(METADATA, WHEEL, RECORD with sha256); this file writes those with the
standard library alone, and pip needs nothing else.

The version comes from AC_INIT in configure.ac (the one place it is
written), beside python/ in the source and release trees; an sdist
built here carries it in PKG-INFO instead.

_paths.py is written from _paths.py.in, as make does, but with the
libdir of the config setting `libdir' (pip install --config-settings
libdir=DIR), or none: such a wheel loads $PIDLOCK_LIBRARY if set, else
DIR/libpidlock.so.0, else the system's libpidlock.so.0 (_lib.py).

Hooks: build_wheel, build_sdist, build_editable (a .pth naming this
directory), prepare_metadata_for_build_wheel/editable and
get_requires_for_build_* (nothing).  Python 3.7 and later.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

# The distribution is named for the project: "pidlock" on PyPI may be
# somebody else's, which a `pip install -U` would then fetch in its place.
# The module is imported as pidlock all the same.
NAME = "libpidlock"
SUMMARY = ("File locks that never go stale, naming their holder: "
           "the Python binding of libpidlock (ctypes)")
HERE = os.path.dirname(os.path.abspath(__file__))
# The zip and tar entries' time: SOURCE_DATE_EPOCH when set (reproducible
# builds), else 1980-01-01, the earliest a zip can hold.
EPOCH = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))


def _version():
    """AC_INIT's version in ../configure.ac, or PKG-INFO's in an sdist."""
    pkg_info = os.path.join(HERE, "PKG-INFO")
    if os.path.exists(pkg_info):
        with open(pkg_info, encoding="utf-8") as f:
            m = re.search(r"^Version: *(\S+)", f.read(), re.M)
    else:
        ac = os.path.join(os.path.dirname(HERE), "configure.ac")
        try:
            with open(ac, encoding="utf-8") as f:
                m = re.search(r"^AC_INIT\(\[[^]]*\], *\[([^]]+)\]", f.read(), re.M)
        except OSError as e:
            raise RuntimeError(
                "pidlock: no version: %s is not readable (%s); build from "
                "python/ of a libpidlock source tree, or from an sdist"
                % (ac, e.strerror)) from e
    if not m:
        raise RuntimeError("pidlock: no version in %s" % HERE)
    return m.group(1)


def _metadata(version):
    return ("Metadata-Version: 2.1\n"
            "Name: %s\n"
            "Version: %s\n"
            "Summary: %s\n"
            "License: LGPL-2.1-or-later\n"
            "Requires-Python: >=3.7\n"
            "Classifier: License :: OSI Approved :: GNU Lesser General "
            "Public License v2 or later (LGPLv2+)\n"
            "Classifier: Operating System :: POSIX :: Linux\n"
            "Classifier: Programming Language :: Python :: 3\n"
            "\n"
            "The Python module of libpidlock; it loads libpidlock.so.0, "
            "which is installed on its own (the library of the system, "
            "or the one that $PIDLOCK_LIBRARY names).\n"
            % (NAME, version, SUMMARY))


def _wheel_file():
    return ("Wheel-Version: 1.0\n"
            "Generator: _pidlock_build\n"
            "Root-Is-Purelib: true\n"
            "Tag: py3-none-any\n")


def _libdir(config_settings):
    """The config setting libdir; "" when not given.  An absolute path:
    pip runs the backend in python/ (or an unpacked sdist), so that a
    relative one would not name what the shell that ran pip meant."""
    libdir = (config_settings or {}).get("libdir") or ""
    if isinstance(libdir, list):  # given more than once: the last
        libdir = libdir[-1]
    libdir = os.path.expanduser(libdir)
    if libdir and not os.path.isabs(libdir):
        raise ValueError("pidlock: --config-settings libdir=%s: give an "
                         "absolute path" % libdir)
    return os.path.normpath(libdir) if libdir else ""


def _paths_py(libdir, version):
    with open(os.path.join(HERE, "pidlock", "_paths.py.in"), encoding="utf-8") as f:
        text = f.read()
    for word in ("@libdir@", "@VERSION@"):
        if word not in text:
            raise RuntimeError("pidlock: _paths.py.in has no %s" % word)
    text = text.replace("@VERSION@", version)
    return text.replace("@libdir@", libdir.replace("\\", "\\\\").replace('"', '\\"'))


def _module_files():
    """The package's files: (name in the archive, path).  Not _paths.py,
    which make writes into a tree built in place (the wheel gets its
    own), nor __pycache__."""
    pkg = os.path.join(HERE, "pidlock")
    names = sorted(n for n in os.listdir(pkg)
                   if (n.endswith(".py") and n != "_paths.py") or n == "py.typed")
    if "__init__.py" not in names:
        raise RuntimeError("pidlock: no pidlock/__init__.py in %s" % HERE)
    return [("pidlock/" + n, os.path.join(pkg, n)) for n in names]


def _copying():
    """COPYING: beside this file in an sdist, one level up in the tree."""
    for d in (HERE, os.path.dirname(HERE)):
        p = os.path.join(d, "COPYING")
        if os.path.exists(p):
            return p
    return None


def _dist_info(version):
    return "%s-%s.dist-info" % (NAME, version)


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "%s,sha256=%s,%d\n" % (name, digest.decode("ascii"), len(data))


def _write_wheel(wheel_directory, entries, version):
    """entries: (name, bytes) of the package; adds the .dist-info."""
    info = _dist_info(version)
    entries = list(entries)
    copying = _copying()
    if copying:
        with open(copying, "rb") as f:
            entries.append((info + "/COPYING", f.read()))
    entries.append((info + "/METADATA", _metadata(version).encode("utf-8")))
    entries.append((info + "/WHEEL", _wheel_file().encode("utf-8")))
    record = "".join(_record_line(n, d) for n, d in entries)
    record += info + "/RECORD,,\n"
    entries.append((info + "/RECORD", record.encode("utf-8")))
    wheel = "%s-%s-py3-none-any.whl" % (NAME, version)
    path = os.path.join(wheel_directory, wheel)
    stamp = time.gmtime(max(EPOCH, 315532800))[:6]
    with zipfile.ZipFile(path + ".tmp", "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            zi = zipfile.ZipInfo(name, stamp)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    os.replace(path + ".tmp", path)
    return wheel


# ---- PEP 517 / PEP 660 hooks -------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    version = _version()
    info = _dist_info(version)
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    for name, text in (("METADATA", _metadata(version)), ("WHEEL", _wheel_file())):
        with open(os.path.join(metadata_directory, info, name), "w",
                  encoding="utf-8") as f:
            f.write(text)
    return info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    entries = []
    for name, path in _module_files():
        with open(path, "rb") as f:
            entries.append((name, f.read()))
    entries.append(("pidlock/_paths.py",
                    _paths_py(_libdir(config_settings), version).encode("utf-8")))
    return _write_wheel(wheel_directory, entries, version)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel whose .pth puts this directory on sys.path: the venv runs
    the sources as they are edited, with their _paths.py, if make wrote
    one (a tree configured and built in place), else none."""
    version = _version()
    entries = [("_pidlock_editable.pth", (HERE + "\n").encode("utf-8"))]
    return _write_wheel(wheel_directory, entries, version)


def build_sdist(sdist_directory, config_settings=None):
    version = _version()
    base = "%s-%s" % (NAME, version)
    files = [("pyproject.toml", os.path.join(HERE, "pyproject.toml")),
             ("_pidlock_build.py", os.path.join(HERE, "_pidlock_build.py")),
             ("pidlock/_paths.py.in", os.path.join(HERE, "pidlock", "_paths.py.in"))]
    files += [(n, p) for n, p in _module_files()]
    copying = _copying()
    if copying:
        files.append(("COPYING", copying))
    name = base + ".tar.gz"
    path = os.path.join(sdist_directory, name)

    def add(tar, arcname, data):
        ti = tarfile.TarInfo(base + "/" + arcname)
        ti.size = len(data)
        ti.mtime = EPOCH
        ti.mode = 0o644
        tar.addfile(ti, io.BytesIO(data))

    with tarfile.open(path + ".tmp", "w:gz", format=tarfile.PAX_FORMAT) as tar:
        add(tar, "PKG-INFO", _metadata(version).encode("utf-8"))
        for arcname, p in sorted(files):
            with open(p, "rb") as f:
                add(tar, arcname, f.read())
    os.replace(path + ".tmp", path)
    return name
