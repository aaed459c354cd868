# SPDX-License-Identifier: LGPL-2.1-or-later
"""Threads of one process waiting for one path: they exclude each other
through the kernel, and wait there one at a time (the others wait on a
lock of the process), so that a hand-off between them costs what one
between processes costs."""

from __future__ import annotations

import os
import subprocess
import sys
import signal
import textwrap
import threading
import time

import pytest

import pidlock
from pidlock import _lock
from helpers import Holder
from test_interrupts import Interrupt, interrupt_at


def kernel_waiters(path: str) -> int:
    """Blocked requests (rows with "->") on path's inode, /proc/locks."""
    ino = os.stat(path).st_ino
    with open("/proc/locks") as f:
        return sum(1 for row in f
                   if "->" in row and row.split()[-3].endswith(f":{ino}"))


def where(thread: threading.Thread) -> set:
    """The functions on thread's stack now."""
    frame = sys._current_frames().get(thread.ident)
    names = set()
    while frame is not None:
        names.add(frame.f_code.co_name)
        frame = frame.f_back
    return names


def wait_until_waiting(threads: list) -> list:
    """Until each thread waits at the gate or in the library, and one at
    least in the library; their places then (a probe, not a timing: the
    places last until the holder lets go; the deadline only keeps a
    broken build from hanging the suite)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        places = []
        for t in threads:
            names = where(t)
            places.append("gate" if "_enter_gate" in names else
                          "kernel" if "retrying" in names else None)
        if None not in places and "kernel" in places:
            return places
        time.sleep(0.001)
    raise AssertionError(f"not waiting: {places}, alive "
                         f"{[t.is_alive() for t in threads]}")


@pytest.mark.parametrize("kind", ["Lock", "FileLock"])
def test_threads_wait_in_the_kernel_one_at_a_time(lockpath, kind):
    holder = Holder(lockpath)
    shared = pidlock.FileLock(lockpath)
    got = []

    def take():
        lock = pidlock.Lock(lockpath) if kind == "Lock" else shared
        with lock:
            got.append(threading.get_ident())

    threads = [threading.Thread(target=take) for _ in range(4)]
    try:
        for t in threads:
            t.start()
        places = wait_until_waiting(threads)
        assert sorted(places) == ["gate", "gate", "gate", "kernel"]
        while kernel_waiters(lockpath) == 0:    # into flock(2) by now
            time.sleep(0.001)
        assert kernel_waiters(lockpath) == 1
        holder.release()
        for t in threads:
            t.join()
    finally:
        holder.close()
    assert sorted(got) == sorted(t.ident for t in threads)


def test_gate_is_per_path_and_tries_pass_it(tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    holder = Holder(a)
    try:
        waiter = threading.Thread(target=lambda: pidlock.Lock(a).acquire(timeout=30))
        waiter.start()
        assert wait_until_waiting([waiter]) == ["kernel"]
        # Another path: no turn to wait for.
        with pidlock.Lock(b, timeout=5):
            pass
        # A try on the busy path does not queue behind the waiter.
        with pytest.raises(pidlock.Busy):
            pidlock.Lock(a).acquire(timeout=0)
        holder.release()
        waiter.join()
    finally:
        holder.close()


def test_shared_holds_take_no_turns(lockpath):
    holder = Holder(lockpath)   # exclusive: the readers wait
    readers = [threading.Thread(
        target=lambda: pidlock.Lock(lockpath, shared=True).acquire(timeout=30))
        for _ in range(2)]
    try:
        for t in readers:
            t.start()
        assert wait_until_waiting(readers) == ["kernel", "kernel"]
        holder.release()
        for t in readers:
            t.join()
    finally:
        holder.close()


def test_many_threads_exclude_each_other(lockpath):
    inside, most = [0], [0]
    lock = pidlock.FileLock(lockpath)

    def work():
        own = pidlock.Lock(lockpath)
        for i in range(40):
            with (lock if i % 2 else own):
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1 and not os.path.exists(lockpath)


def gate_free(path: str) -> bool:
    """Can another thread take path's turn?  (The gate is an RLock: the
    thread that holds it could take it again.)"""
    gate = _lock._gates.get(os.path.abspath(path))
    if gate is None:
        return True
    free = []

    def probe():
        if gate.acquire(blocking=False):
            gate.release()
            free.append(True)

    t = threading.Thread(target=probe)
    t.start()
    t.join()
    return free == [True]


def test_interrupt_at_each_call_of_a_contended_wait(lockpath):
    """A timed wait behind a holder, interrupted after each library call
    in turn: the turn to wait is never left taken."""
    holder = Holder(lockpath)
    try:
        lock = pidlock.Lock(lockpath)
        n = 0
        while True:
            n += 1
            outcome = None
            with interrupt_at({n}) as seen:
                try:
                    lock.acquire(timeout=0.05)
                except Interrupt:
                    outcome = "interrupted"
                except pidlock.Busy:
                    outcome = "busy"
            assert not lock.locked and gate_free(lockpath), (n, seen)
            # The turn is free for another thread, too.
            other = []

            def wait_in_other():
                try:
                    pidlock.Lock(lockpath).acquire(timeout=0.05)
                except pidlock.Busy:
                    other.append("busy")

            t = threading.Thread(target=wait_in_other)
            t.start()
            t.join()
            assert other == ["busy"], (n, seen)
            if outcome == "busy":
                break
        assert n > 2
    finally:
        holder.close()


def test_interrupted_wait_passes_the_turn_on(lockpath):
    """Ctrl-C in a wait whose turn another thread is queued for: the
    turn passes on, and the other thread waits in the kernel and gets
    the lock."""
    holder = Holder(lockpath)
    main = threading.current_thread()
    result = []

    def second():
        try:
            pidlock.Lock(lockpath).acquire(timeout=30)
            result.append("acquired")
        except pidlock.Busy:
            result.append("busy")

    other = threading.Thread(target=second)

    fired = threading.Event()

    def interrupt_when_queued():
        wait_until_waiting([main])
        other.start()
        while wait_until_waiting([main, other]) != ["kernel", "gate"]:
            time.sleep(0.001)
        # Again until it lands: one that comes between two system calls
        # of the library's wait is only seen when the wait returns.
        while not fired.is_set():
            signal.pthread_kill(main.ident, signal.SIGUSR2)
            fired.wait(0.01)

    def handler(signum, frame):
        if not fired.is_set():
            fired.set()
            raise Interrupt()

    old = signal.signal(signal.SIGUSR2, handler)
    helper = threading.Thread(target=interrupt_when_queued)
    try:
        helper.start()
        with pytest.raises(Interrupt):
            pidlock.Lock(lockpath).acquire(timeout=30)
        helper.join()
        # This thread let go of the turn that the second one queues for
        # (an RLock: its owner is known)...
        gate = _lock._gates.get(os.path.abspath(lockpath))
        assert gate is not None and not gate._is_owned()
        # ...which goes on into the kernel's wait, and gets the lock.
        while wait_until_waiting([other]) != ["kernel"]:
            time.sleep(0.001)
        holder.release()
        other.join()
        assert result == ["acquired"]
    finally:
        signal.signal(signal.SIGUSR2, old)
        holder.close()


FORK = textwrap.dedent("""
    import os, sys, threading, time
    import pidlock
    from pidlock import _lock
    path = sys.argv[1]
    done = threading.Event()

    def wait_then_hold():
        with pidlock.Lock(path):
            print("waiter holds", flush=True)
            done.wait()

    waiter = threading.Thread(target=wait_then_hold)
    waiter.start()
    # Until the waiter has the turn (a gate of its path, locked); a hang
    # guard only: the waiter gets there at once.
    deadline = time.monotonic() + 60
    while not repr(_lock._gates.get(os.path.abspath(path))).startswith("<locked"):
        if time.monotonic() > deadline:
            print("no turn taken", flush=True)
            sys.exit(1)
        time.sleep(0.001)
    # The waiter has the turn, and waits; a child forked now must not
    # inherit that turn, held by a thread it does not have.
    child = os.fork()
    if child == 0:
        me = threading.get_ident()

        def say_when_waiting():
            # Once the child's acquire waits (its turn, or the kernel).
            while True:
                frame, names = sys._current_frames().get(me), set()
                while frame is not None:
                    names.add(frame.f_code.co_name)
                    frame = frame.f_back
                if names & {"_enter_gate", "retrying"}:
                    print("child waits", flush=True)
                    return
                time.sleep(0.001)

        threading.Thread(target=say_when_waiting).start()
        with pidlock.Lock(path):
            pass
        os._exit(0)
    print("forked", flush=True)
    sys.stdin.readline()
    done.set()
    waiter.join()
    _, status = os.waitpid(child, 0)
    print("child", os.waitstatus_to_exitcode(status), flush=True)
    """)


def test_fork_while_a_thread_waits(lockpath):
    holder = Holder(lockpath)
    try:
        proc = subprocess.Popen([sys.executable, "-c", FORK, lockpath],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True, start_new_session=True)
        try:
            said = {proc.stdout.readline(), proc.stdout.readline()}
            assert said == {"forked\n", "child waits\n"}
            # The lock goes to the parent's waiter, then to the child,
            # which waits for it all along.
            holder.release()
            assert proc.stdout.readline() == "waiter holds\n"
            proc.stdin.write("go\n")
            proc.stdin.flush()
            # A child stuck on an inherited turn would never exit (the
            # timeout only keeps a broken build from hanging the suite).
            out, _ = proc.communicate(timeout=60)
            assert out == "child 0\n"
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    finally:
        holder.close()
