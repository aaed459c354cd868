# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/python/filelock-suite.sh copies this file into its scratch
# directory as sitecustomize.py (on PYTHONPATH): so every Python process
# of the run, pytest's own, multiprocessing's spawned children and the
# scripts a test runs with sys.executable, whatever their arguments,
# loads filelock_map at startup, which makes filelock's names pidlock's
# and counts the locks built.  pytest's process loads it here, once;
# the plugin (filelock_shim) then finds it loaded.  A process that
# cannot load it ends at once (status 70) rather than run filelock's
# own code in pidlock's place.
import os
import sys

try:
    import filelock_map  # noqa: F401
except BaseException as exc:  # noqa: BLE001
    sys.stderr.write(f"filelock-suite sitecustomize: filelock's names are "
                     f"not pidlock's in this process: {exc!r}\n")
    sys.stderr.flush()
    os._exit(70)
