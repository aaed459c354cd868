#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A resource that refuses a stale holder's write by its fencing token.

    fenced_store.py STORE TOKEN TEXT

appends TEXT to the file STORE unless a write with a greater token has
been taken already (exit 1, "stale token", nothing written).  The
greatest token seen is kept beside the data, in STORE.token, and both
are changed under an flock of STORE.token, so that two writers that
reach the store at once are ordered too.  A holder of a pidlock lock
taken with --token (pidlock(1)) or Flags.TOKEN (Python) sends its token
with each write:

    pidlock --token /shared/locks/job.lock \\
        sh -c 'fenced_store.py /srv/data/log "$PIDLOCK_TOKEN" "$(date)"'

A holder that lost the lock across a partition and writes late carries
a smaller token than the next holder's, and is refused once the next
holder has written.  doc/protocol.md, section 5c, says why no check in
the holder can do this.
"""

import fcntl
import os
import sys


def store(path: str, token: int, text: str) -> bool:
    fd = os.open(path + ".token", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        seen = os.pread(fd, 32, 0).strip()
        if seen and token < int(seen):
            return False
        with open(path, "a") as data:
            data.write(text + "\n")
            data.flush()
            os.fsync(data.fileno())
        stamp = b"%d\n" % token
        os.pwrite(fd, stamp.ljust(21), 0)
        return True
    finally:
        os.close(fd)


def main() -> int:
    if len(sys.argv) != 4 or not sys.argv[2].isdigit():
        print("usage: fenced_store.py STORE TOKEN TEXT", file=sys.stderr)
        return 64
    if not store(sys.argv[1], int(sys.argv[2]), sys.argv[3]):
        print("fenced_store.py: stale token %s" % sys.argv[2], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
