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

The library itself: when no libdir is given and the system has no
libpidlock.so.0 that exports every symbol of lib/libpidlock.sym, the
wheel carries its own build of it (pidlock/libpidlock.so.0, compiled
here with $CC or cc from the C sources beside python/, or in an
sdist's c/), and is then tagged for this platform.  The config setting
bundle=yes builds it always, bundle=no never.

Hooks: build_wheel, build_sdist, build_editable (a .pth naming this
directory), prepare_metadata_for_build_wheel/editable and
get_requires_for_build_* (nothing).  Python 3.7 and later.
"""

import base64
import ctypes
import hashlib
import io
import os
import re
import shutil
import subprocess
import sysconfig
import tarfile
import tempfile
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
            "The Python module of libpidlock; it loads libpidlock.so.0: "
            "the one that $PIDLOCK_LIBRARY names, else its own build "
            "(a wheel built where the system had none), else the "
            "system's.\n"
            % (NAME, version, SUMMARY))


def _platform_tag():
    return re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())


def _wheel_file(tag="py3-none-any"):
    return ("Wheel-Version: 1.0\n"
            "Generator: _pidlock_build\n"
            "Root-Is-Purelib: %s\n"
            "Tag: %s\n" % ("true" if tag.endswith("-any") else "false", tag))


def _c_tree():
    """The top of the C sources: python/'s parent in a checkout or a
    release tree, c/ in an sdist; None if neither has them."""
    for top in (os.path.dirname(HERE), os.path.join(HERE, "c")):
        if (os.path.exists(os.path.join(top, "lib", "libpidlock.sym"))
                and os.path.exists(os.path.join(top, "include", "pidlock.h"))):
            return top
    return None


def _exported(top):
    """Every symbol the version script exports."""
    with open(os.path.join(top, "lib", "libpidlock.sym"), encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"^\s*(pidlock_\w+);", text, re.M)


def _system_library_ok(top):
    """Does the system's libpidlock.so.0 export every symbol of ours?"""
    try:
        lib = ctypes.CDLL("libpidlock.so.0")
    except OSError:
        return False
    return all(hasattr(lib, name) for name in _exported(top))


def _lib_sources(top):
    """lib/Makemodule.am's list of the library's C files."""
    with open(os.path.join(top, "lib", "Makemodule.am"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"lib_libpidlock_core_la_SOURCES = (.*?)\n\S", text, re.S)
    if not m:
        raise RuntimeError("pidlock: no library sources in lib/Makemodule.am")
    return [os.path.join(top, n) for n in re.findall(r"lib/[\w.-]+\.c", m.group(1))]


def _compiles(cc, tmp, code):
    src = os.path.join(tmp, "probe.c")
    with open(src, "w", encoding="utf-8") as f:
        f.write("#define _GNU_SOURCE 1\n" + code)
    return subprocess.run([cc, src, "-o", os.path.join(tmp, "probe")],
                          stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def _build_library(top, version, tmp):
    """Compile the library as make would (the same sources, version
    script and soname; configure's two tests made here); its path."""
    cc = os.environ.get("CC") or "cc"
    if shutil.which(cc.split()[0]) is None:
        raise RuntimeError("pidlock: no libpidlock.so.0 on this system and no C "
                           "compiler (%s) to build one: install libpidlock0, or "
                           "a compiler (apt-get install gcc)" % cc)
    config = ["#define _GNU_SOURCE 1",
              '#define PACKAGE_VERSION "%s"' % version,
              '#define VERSION "%s"' % version,
              '#define PACKAGE_STRING "libpidlock %s"' % version]
    if _compiles(cc, tmp, "#include <sys/uio.h>\nint main(void) "
                 "{ return pwritev2(0, 0, 0, 0, 0); }\n"):
        config.append("#define HAVE_PWRITEV2 1")
    if _compiles(cc, tmp, "#include <stdio.h>\nint main(void) "
                 "{ return renameat2(0, \"a\", 0, \"b\", 0); }\n"):
        config.append("#define HAVE_RENAMEAT2 1")
    with open(os.path.join(tmp, "config.h"), "w", encoding="utf-8") as f:
        f.write("\n".join(config) + "\n")
    out = os.path.join(tmp, "libpidlock.so.0")
    cmd = [*cc.split(), "-std=gnu11", "-O2", "-g0", "-fPIC", "-fvisibility=hidden",
           "-I" + tmp, "-I" + os.path.join(top, "include"),
           "-I" + os.path.join(top, "lib"), *_lib_sources(top),
           "-shared", "-Wl,-soname,libpidlock.so.0",
           "-Wl,--version-script=" + os.path.join(top, "lib", "libpidlock.sym"),
           "-Wl,--no-undefined", "-o", out]
    run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    if run.returncode != 0:
        raise RuntimeError("pidlock: building libpidlock.so.0 failed:\n%s\n%s"
                           % (" ".join(cmd), run.stdout[-4000:]))
    return out


def _bundle(config_settings, libdir):
    """Whether the wheel carries its own library (the config setting
    bundle: auto, yes or no)."""
    bundle = (config_settings or {}).get("bundle") or "auto"
    if isinstance(bundle, list):
        bundle = bundle[-1]
    if bundle not in ("auto", "yes", "no"):
        raise ValueError("pidlock: --config-settings bundle=%s: auto, yes or no"
                         % bundle)
    if bundle != "auto":
        return bundle == "yes"
    top = _c_tree()
    return not libdir and top is not None and not _system_library_ok(top)


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


def _write_wheel(wheel_directory, entries, version, tag="py3-none-any"):
    """entries: (name, bytes) of the package; adds the .dist-info."""
    info = _dist_info(version)
    entries = list(entries)
    copying = _copying()
    if copying:
        with open(copying, "rb") as f:
            entries.append((info + "/COPYING", f.read()))
    entries.append((info + "/METADATA", _metadata(version).encode("utf-8")))
    entries.append((info + "/WHEEL", _wheel_file(tag).encode("utf-8")))
    record = "".join(_record_line(n, d) for n, d in entries)
    record += info + "/RECORD,,\n"
    entries.append((info + "/RECORD", record.encode("utf-8")))
    wheel = "%s-%s-%s.whl" % (NAME, version, tag)
    path = os.path.join(wheel_directory, wheel)
    stamp = time.gmtime(max(EPOCH, 315532800))[:6]
    with zipfile.ZipFile(path + ".tmp", "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            zi = zipfile.ZipInfo(name, stamp)
            zi.external_attr = (0o755 if name.endswith(".so.0") else 0o644) << 16
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
    libdir = _libdir(config_settings)
    entries = []
    for name, path in _module_files():
        with open(path, "rb") as f:
            entries.append((name, f.read()))
    entries.append(("pidlock/_paths.py",
                    _paths_py(libdir, version).encode("utf-8")))
    tag = "py3-none-any"
    if _bundle(config_settings, libdir):
        top = _c_tree()
        if top is None:
            raise RuntimeError("pidlock: bundle=yes, but no C sources beside %s"
                               % HERE)
        with tempfile.TemporaryDirectory(prefix="pidlock-build.") as tmp:
            with open(_build_library(top, version, tmp), "rb") as f:
                entries.append(("pidlock/libpidlock.so.0", f.read()))
        tag = "py3-none-" + _platform_tag()
    return _write_wheel(wheel_directory, entries, version, tag)


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
    top = _c_tree()
    if top is not None and top != os.path.join(HERE, "c"):
        # The C sources, for a wheel built from the sdist on a machine
        # without the library (build_wheel, _c_tree()).
        c_files = ["include/pidlock.h", "include/pidlock-pidfile.h",
                   "lib/libpidlock.sym", "lib/Makemodule.am"]
        c_files += [os.path.relpath(p, top) for p in _lib_sources(top)]
        c_files += ["lib/" + n for n in sorted(os.listdir(os.path.join(top, "lib")))
                    if n.endswith(".h")]
        files += [("c/" + n, os.path.join(top, n)) for n in c_files]
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
