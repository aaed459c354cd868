# SPDX-License-Identifier: LGPL-2.1-or-later
"""pidlock.FileLock against filelock's documented behaviour, and beside
real filelock users on one path."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import pickle
import stat
import subprocess
import sys
import textwrap
import threading

import filelock
import pytest

import pidlock
from pidlock import FileLock, Timeout
from helpers import Holder, holder_script


def test_timeout_is_filelock_shaped(lockpath):
    assert issubclass(Timeout, TimeoutError)
    exc = Timeout(lockpath)
    assert exc.lock_file == lockpath
    assert str(exc) == f"The file lock '{lockpath}' could not be acquired."


def test_nesting_counts(lockpath):
    lock = FileLock(lockpath)
    assert not lock.is_locked and lock.lock_counter == 0
    with lock:
        with lock.acquire() as inner:
            assert inner is lock
            assert lock.lock_counter == 2
        assert lock.is_locked and lock.lock_counter == 1
        assert os.path.exists(lockpath)
    assert not lock.is_locked and lock.lock_counter == 0
    assert not os.path.exists(lockpath)


def test_force_release(lockpath):
    lock = FileLock(lockpath)
    lock.acquire()
    lock.acquire()
    lock.release(force=True)
    assert not lock.is_locked and lock.lock_counter == 0
    lock.release()                      # not held: a no-op, as in filelock


def test_timeouts_and_blocking(lockpath):
    holder = Holder(lockpath, tag="holder")
    try:
        lock = FileLock(lockpath, timeout=0.1)
        with pytest.raises(Timeout) as exc:
            lock.acquire()
        assert exc.value.lock_file == lockpath and exc.value.pid == holder.pid
        with pytest.raises(Timeout):
            lock.acquire(timeout=0)
        with pytest.raises(Timeout):
            lock.acquire(timeout=10, blocking=False)
        with pytest.raises(Timeout):
            FileLock(lockpath, blocking=False).acquire()
        assert lock.lock_counter == 0 and not lock.is_locked
        lock.timeout = "-1"              # filelock's setter takes strings
        assert lock.timeout == -1.0
        threading.Timer(0.2, holder.tell, ("release",)).start()
        with lock.acquire(poll_interval=0.01):
            assert lock.is_locked
        holder.expect("released")
    finally:
        holder.close()


def test_decorator(lockpath):
    lock = FileLock(lockpath)

    @lock
    def work():
        return lock.is_locked

    assert work() is True and not lock.is_locked


def test_thread_local_holds_exclude(lockpath):
    lock = FileLock(lockpath)
    got = []
    with lock:
        t = threading.Thread(target=lambda: got.append(_try(lock)))
        t.start()
        t.join()
    assert got == ["timeout"]
    t = threading.Thread(target=lambda: got.append(_try(lock)))
    t.start()
    t.join()
    assert got == ["timeout", "acquired"]


def test_shared_hold_counts_across_threads(lockpath):
    lock = FileLock(lockpath, thread_local=False)
    got = []
    with lock:
        t = threading.Thread(target=lambda: got.append((lock.acquire(timeout=0), lock.lock_counter)))
        t.start()
        t.join()
        assert got[0][1] == 2
        lock.release()
    assert not lock.is_locked


def _try(lock: FileLock) -> str:
    try:
        with lock.acquire(timeout=0):
            return "acquired"
    except Timeout:
        return "timeout"


def test_singleton(lockpath):
    a = FileLock(lockpath, is_singleton=True)
    assert FileLock(lockpath, is_singleton=True) is a
    assert FileLock(lockpath) is not a
    with pytest.raises(ValueError):
        FileLock(lockpath, timeout=5, is_singleton=True)


# A program written for filelock; run once with each module.
PROGRAM = textwrap.dedent("""
    import sys
    from MODULE import FileLock, Timeout
    lock = FileLock(sys.argv[1], timeout=0.1)
    with lock:
        with lock:
            print("nested", lock.is_locked)
        other = FileLock(sys.argv[1])
        try:
            other.acquire(timeout=0.05)
            print("not excluded")
        except Timeout as exc:
            print("timeout", exc.lock_file == sys.argv[1])
    print("released", lock.is_locked)
    """)


def test_filelock_program_runs_unchanged(lockpath):
    outputs = []
    # pidlock first: filelock leaves an empty file behind, which rule C's
    # grace keeps busy for a moment after its creation.
    for module in ("pidlock", "filelock"):
        out = subprocess.run(
            [sys.executable, "-c", PROGRAM.replace("MODULE", module), lockpath],
            check=True, capture_output=True, text=True).stdout
        outputs.append(out)
    assert outputs[0] == outputs[1] == "nested True\ntimeout True\nreleased False\n"


FILELOCK_HOLDER = holder_script("import filelock; "
                                "lock = filelock.FileLock(sys.argv[1])")


def test_excludes_real_filelock_holder(lockpath):
    holder = Holder(lockpath, script=FILELOCK_HOLDER)
    try:
        with pytest.raises(Timeout):
            FileLock(lockpath).acquire(timeout=0.1)
        holder.release()
        with FileLock(lockpath, flags=pidlock.Flags.KEEP_FILE):
            with pytest.raises(filelock.Timeout):
                filelock.FileLock(lockpath).acquire(timeout=0)
    finally:
        holder.close()


METADATA_HOLDER = holder_script(
    "import os, pidlock; "
    "lock = pidlock.FileLock(sys.argv[1], on_acquired="
    "lambda fd: os.write(fd, b'holder-metadata'))")


def test_on_acquired_writes_survive_sigkill(lockpath):
    """What on_acquired writes lands after the record (doc/protocol.md,
    3a, "The holder's bytes"): a losing contender leaves it, and after
    the holder's SIGKILL the next acquire takes the file over.  Before,
    the write landed on the record and every later acquire raised
    NotALockFile until somebody removed the file."""
    holder = Holder(lockpath, script=METADATA_HOLDER)
    try:
        with open(lockpath, "rb") as f:
            held = f.read()
        assert held.startswith(b"pid=%d\n" % holder.pid), \
            f"on_acquired wrote over the record: {held!r}"
        assert held.endswith(b"holder-metadata"), held
        with pytest.raises(Timeout):
            FileLock(lockpath).acquire(timeout=0.1)
        with open(lockpath, "rb") as f:
            assert f.read() == held, "a losing contender changed the file"
        info = pidlock.inspect(lockpath)
        assert info.state == pidlock.State.HELD and info.pid == holder.pid, info
    finally:
        holder.proc.kill()
        holder.proc.wait(timeout=10)
    lock = FileLock(lockpath)
    lock.acquire(timeout=0)   # NotALockFile before
    try:
        with open(lockpath, "rb") as f:
            now = f.read()
        assert now.startswith(b"pid=%d\n" % os.getpid()), now
        assert b"holder-metadata" not in now, now
    finally:
        lock.release()
    assert not os.path.exists(lockpath)


def test_thread_ending_with_a_hold_lets_go(lockpath):
    lock = FileLock(lockpath)
    t = threading.Thread(target=lock.acquire)
    t.start()
    t.join()
    gc.collect()
    assert not os.path.exists(lockpath)
    with lock.acquire(timeout=0):
        assert lock.lock_counter == 1


# --- filelock's behaviours that a drop-in must have ---------------------
@contextlib.contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def test_makes_missing_directories_with_the_umask(tmp_path):
    path = tmp_path / "new" / "deeper" / "a.lock"
    with umask(0o027):
        with FileLock(path) as lock:
            assert lock.is_locked
            assert pidlock.inspect(path).state == pidlock.State.HELD
    for d in (tmp_path / "new", tmp_path / "new" / "deeper"):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o750
    assert os.listdir(path.parent) == []


def test_lock_makes_no_directories(tmp_path):
    with pytest.raises(FileNotFoundError):
        pidlock.Lock(tmp_path / "new" / "a.lock").acquire()
    assert os.listdir(tmp_path) == []


def file_mode_while_held(make, path) -> int:
    with make(path):
        return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o666), (0o077, 0o644),
                                            (0o022, 0o600), (0, 0o640)])
def test_mode_whatever_the_umask(lockpath, mask, mode):
    with umask(mask):
        assert file_mode_while_held(lambda p: FileLock(p, mode=mode), lockpath) == mode
        # So does pidlock.Lock (pidlock_set_mode(3) is exact).
        got = file_mode_while_held(lambda p: pidlock.Lock(p, mode=mode), lockpath)
        assert got == mode
        # Without a mode, 0o666 less the umask, as filelock's os.open().
        got = file_mode_while_held(lambda p: FileLock(p), lockpath)
        assert got == 0o666 & ~mask
        assert os.umask(mask) == mask    # left as it was


def test_mode_of_a_file_of_another_user_stays(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give the file away")
    path = tmp_path / "theirs.lock"
    path.write_text("")
    os.chown(path, 65534, 65534)
    os.chmod(path, 0o664)
    with FileLock(path, mode=0o600, flags=pidlock.Flags.KEEP_FILE):
        # root may chmod anything: filelock's fchmod would too.
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_timeout_repr_and_pickle(lockpath):
    exc = Timeout(lockpath)
    assert repr(exc) == f"Timeout({lockpath!r})"
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is Timeout and repr(back) == repr(exc)
    assert str(back) == str(exc) and back.lock_file == lockpath
    # With a holder too: filelock's repr, not Busy's (which names the pid).
    import types
    held = Timeout(lockpath, types.SimpleNamespace(pid=123, tag="t", age=1.0))
    assert repr(held) == f"Timeout({lockpath!r})"


def test_singleton_mismatch_message(lockpath):
    keep = FileLock(lockpath, is_singleton=True)
    for kwargs in ({"timeout": 3}, {"mode": 0o600}):
        with pytest.raises(ValueError, match="^Singleton lock instances cannot "
                           "be initialized with differing arguments"):
            FileLock(lockpath, is_singleton=True, **kwargs)
    assert FileLock(lockpath, is_singleton=True) is keep


def test_each_subclass_has_its_own_singletons(lockpath):
    class Mine(FileLock):
        pass

    class Theirs(FileLock):
        pass

    a, b = Mine(lockpath, is_singleton=True), Theirs(lockpath, is_singleton=True)
    base = FileLock(lockpath, is_singleton=True)
    assert len({id(a), id(b), id(base)}) == 3
    assert Mine._instances is not Theirs._instances
    assert Mine._instances is not FileLock._instances
    assert dict(Mine._instances) == {os.path.abspath(lockpath): a}
    del a
    gc.collect()
    assert dict(Mine._instances) == {}
    assert Mine(lockpath, is_singleton=True) is not b


# --- logging --------------------------------------------------------------
def records(caplog, name):
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == name]


def test_filelock_logs_on_filelocks_logger(lockpath, caplog):
    caplog.set_level(logging.DEBUG)
    lock = FileLock(lockpath)
    with lock:
        with lock:
            pass
    me = id(lock)
    assert records(caplog, "filelock") == [
        (logging.DEBUG, f"Attempting to acquire lock {me} on {lockpath}"),
        (logging.DEBUG, f"Lock {me} acquired on {lockpath}"),
        (logging.DEBUG, f"Lock {me} acquired on {lockpath}"),
        (logging.DEBUG, f"Attempting to release lock {me} on {lockpath}"),
        (logging.DEBUG, f"Lock {me} released on {lockpath}"),
    ]
    # Each record once: FileLock's handle says nothing of its own.
    assert [r.name for r in caplog.records] == ["filelock"] * 5


def test_filelock_logs_busy_tries_and_timeouts(lockpath, caplog):
    caplog.set_level(logging.DEBUG, logger="filelock")
    holder = pidlock.Lock(lockpath)
    holder.acquire()
    try:
        lock = FileLock(lockpath)
        for timeout, says in ((0, "Failed to immediately acquire"),
                              (0.05, "Timeout on acquiring")):
            caplog.clear()
            with pytest.raises(Timeout):
                lock.acquire(timeout=timeout)
            assert records(caplog, "filelock")[-1] == (
                logging.DEBUG, f"{says} lock {id(lock)} on {lockpath}")
    finally:
        holder.release()


def test_pidlock_handlers_see_filelock_records_once(lockpath, caplog):
    caplog.set_level(logging.DEBUG)
    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append((record.name, record.getMessage()))

    ours = logging.getLogger("pidlock")
    handler = Keep()
    ours.addHandler(handler)
    try:
        with FileLock(lockpath) as lock:
            pass
    finally:
        ours.removeHandler(handler)
    assert [m for _, m in seen] == [
        f"Attempting to acquire lock {id(lock)} on {lockpath}",
        f"Lock {id(lock)} acquired on {lockpath}",
        f"Attempting to release lock {id(lock)} on {lockpath}",
        f"Lock {id(lock)} released on {lockpath}",
    ]
    # The root's handlers (caplog's) got each record once.
    assert len(caplog.records) == 4


def test_filelock_logger_level_silences_filelock(lockpath, caplog):
    # A program that quiets filelock's logger quiets FileLock.
    caplog.set_level(logging.DEBUG)
    logging.getLogger("filelock").setLevel(logging.WARNING)
    try:
        with FileLock(lockpath):
            pass
    finally:
        logging.getLogger("filelock").setLevel(logging.NOTSET)
    assert caplog.records == []


def test_lock_slots_and_asynclock_log_on_ours(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    path = str(tmp_path / "a.lock")
    lock = pidlock.Lock(path)
    with lock:
        pass
    slots = pidlock.Slots(path, 2)
    with slots as n:
        pass

    async def take():
        async with pidlock.AsyncLock(path) as alock:
            return alock

    alock = asyncio.run(take())
    assert records(caplog, "filelock") == []
    assert [m for _, m in records(caplog, "pidlock")] == [
        f"Attempting to acquire lock {id(lock)} on {path}",
        f"Lock {id(lock)} acquired on {path}",
        f"Attempting to release lock {id(lock)} on {path}",
        f"Lock {id(lock)} released on {path}",
        f"Attempting to acquire lock {id(slots)} on {path}",
        f"Lock {id(slots)} acquired on {path}.{n}",
        f"Attempting to release lock {id(slots)} on {path}",
        f"Lock {id(slots)} released on {path}.{n}",
        f"Attempting to acquire lock {id(alock)} on {path}",
        f"Lock {id(alock)} acquired on {path}",
        f"Attempting to release lock {id(alock)} on {path}",
        f"Lock {id(alock)} released on {path}",
    ]


# --- a file system without the kernel's locks ----------------------------
NO_FLOCK = textwrap.dedent("""
    import errno, sys
    import pidlock
    try:
        pidlock.FileLock(sys.argv[1]).acquire()
    except NotImplementedError as exc:
        print("FileLock", type(exc.__cause__).__name__, exc.__cause__.errno == errno.ENOLCK)
    try:
        pidlock.Lock(sys.argv[1]).acquire()
    except OSError as exc:
        print("Lock", errno.errorcode[exc.errno])
    """)


def test_no_flock_is_not_implemented(lockpath):
    """flock(2) refused with ENOSYS, as on a file system without it (the
    fault shim, preloaded): FileLock raises NotImplementedError, as
    filelock does; Lock the library's OSError(ENOLCK)."""
    shim = os.environ.get("PIDLOCK_TEST_FAULTSHIM", "")
    if not os.path.exists(shim):
        pytest.skip("no fault shim (tests/python/run.sh names it)")
    env = dict(os.environ, FAULT_NOFLOCK="1",
               LD_PRELOAD=" ".join(filter(None, [os.environ.get("LD_PRELOAD"), shim])))
    out = subprocess.run([sys.executable, "-c", NO_FLOCK, lockpath], env=env,
                         check=True, capture_output=True, text=True).stdout
    assert out == "FileLock OSError True\nLock ENOLCK\n"
    assert os.listdir(os.path.dirname(lockpath)) == []
