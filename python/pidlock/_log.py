# SPDX-License-Identifier: LGPL-2.1-or-later
"""Debug records of acquire and release attempts.

Lock, Slots and AsyncLock report on the "pidlock" logger.  FileLock
reports on the "filelock" logger, where programs written for filelock
look for its records (and configure its level), with the messages that
filelock writes there; each of those records is also handed to the
handlers attached to the "pidlock" logger itself, but is not passed up
to the root logger twice.  Nothing is formatted unless a logger is
enabled for DEBUG: the acquire/release cycle stays as fast.
"""

from __future__ import annotations

import logging

DEBUG = logging.DEBUG
LOGGER = logging.getLogger("pidlock")
FILELOCK_LOGGER = logging.getLogger("filelock")

ATTEMPT_ACQUIRE = "Attempting to acquire lock %s on %s"
ACQUIRED = "Lock %s acquired on %s"
FAILED_AT_ONCE = "Failed to immediately acquire lock %s on %s"
TIMED_OUT = "Timeout on acquiring lock %s on %s"
ATTEMPT_RELEASE = "Attempting to release lock %s on %s"
RELEASED = "Lock %s released on %s"
WAITING = "Lock %s not acquired on %s, waiting for its release"
CANCELLED = "Cancellation requested for lock %s on %s"


def debug(msg: str, obj: object, path: str) -> None:
    """A record of ours about obj (named by its id(), as filelock does)."""
    if LOGGER.isEnabledFor(logging.DEBUG):
        LOGGER.debug(msg, id(obj), path)


def filelock_debugging() -> bool:
    """Whether debug_filelock() would write anything: a caller with
    several records to make asks once."""
    return (FILELOCK_LOGGER.isEnabledFor(DEBUG)
            or (LOGGER.handlers != [] and LOGGER.isEnabledFor(DEBUG)))


def debug_filelock(msg: str, obj: object, path: str) -> None:
    """A FileLock record: on filelock's logger, and to our own handlers."""
    if FILELOCK_LOGGER.isEnabledFor(logging.DEBUG):
        FILELOCK_LOGGER.debug(msg, id(obj), path)
    if not LOGGER.handlers or not LOGGER.isEnabledFor(logging.DEBUG):
        return
    # Only the handlers on our logger: the record went up to the root's
    # through filelock's logger already.
    record = LOGGER.makeRecord(LOGGER.name, logging.DEBUG, __file__, 0, msg,
                               (id(obj), path), None)
    if LOGGER.filter(record):
        for handler in LOGGER.handlers:
            if record.levelno >= handler.level:
                handler.handle(record)
