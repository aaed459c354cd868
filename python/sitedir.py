# SPDX-License-Identifier: LGPL-2.1-or-later
"""configure's question to the target python3: where does it look for
the modules of PREFIX?  Prints that directory with PREFIX written as
${prefix} (so that DESTDIR and make distcheck's prefix still apply), or
nothing when none of its search path is under PREFIX/lib.

Why: Debian's python3 looks in /usr/local/lib/python3.X/dist-packages
and /usr/lib/python3/dist-packages, not in the site-packages that
AM_PATH_PYTHON names, so `import pidlock' failed after make install.
Usage: python3 sitedir.py PREFIX"""

import sys


def main() -> None:
    top = sys.argv[1].rstrip("/") + "/lib/"
    for d in sys.path:
        if d.startswith(top) and d.rsplit("/", 1)[-1] in ("dist-packages",
                                                           "site-packages"):
            print("${prefix}/lib/" + d[len(top):])
            return


main()
