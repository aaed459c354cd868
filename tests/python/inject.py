# SPDX-License-Identifier: LGPL-2.1-or-later
"""Interrupts at every point of the package (issue 45, item 2).

A copy of python/pidlock is rewritten so that each statement in a
function first calls a hook, which raises KeyboardInterrupt (or cancels
the running task) when its count is one of the chosen points.  A run is
one `with lock:` (or `async with`) with interrupts at some points; after
it, what the object says must be what the kernel says, and the next
with-statement, with no interrupt, must hold and then let go of
everything.  A run that breaks this is "stuck".

    python3 inject.py KIND MODE PATH [TRIPLES [SEED [PAIRS]]]

KIND: Lock, FileLock, AsyncLock, AsyncFileLock.  MODE: interrupt
(KeyboardInterrupt) or cancel (task.cancel(), async kinds).  PAIRS:
how many pairs, drawn at random (default: every pair).  Prints one
JSON line: the points of a run, the runs of each size, and the stuck
ones (at most 20, with what failed).  Run by test_inject.py.
"""

from __future__ import annotations

import ast
import asyncio
import builtins
import itertools
import json
import os
import random
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Set

import kernel   # no pidlock import: the copy under test is rewritten

HERE = os.path.dirname(os.path.abspath(__file__))



def _package() -> str:
    """The package under test: $PIDLOCK_INJECT_PACKAGE, else the one
    `import pidlock' finds here (PYTHONPATH: the tree's, or a mutated
    copy's), else the tree's."""
    named = os.environ.get("PIDLOCK_INJECT_PACKAGE")
    if named:
        return named
    import importlib.util
    spec = importlib.util.find_spec("pidlock")
    if spec is not None and spec.submodule_search_locations:
        return list(spec.submodule_search_locations)[0]
    return os.path.join(os.path.dirname(os.path.dirname(HERE)), "python", "pidlock")


class _Hooks(ast.NodeTransformer):
    """A hook call before each statement of each function body (also in
    except, else and finally clauses); module and class level alone."""

    def __init__(self) -> None:
        self.depth = 0

    def _hooked(self, body: List[ast.stmt]) -> List[ast.stmt]:
        out: List[ast.stmt] = []
        for stmt in body:
            out.append(ast.Expr(ast.Call(ast.Name("__pidlock_inject__", ast.Load()),
                                         [], [])))
            out.append(stmt)
        return out

    def visit_FunctionDef(self, node: Any) -> Any:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def generic_visit(self, node: Any) -> Any:
        super().generic_visit(node)
        if self.depth == 0 and not isinstance(node, (ast.FunctionDef,
                                                     ast.AsyncFunctionDef)):
            return node
        for field in ("body", "orelse", "finalbody"):
            value = getattr(node, field, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                setattr(node, field, self._hooked(value))
        return node


def rewritten_package() -> str:
    """A directory holding the rewritten copy of the package."""
    top = tempfile.mkdtemp(prefix="pidlock-inject.")
    os.mkdir(os.path.join(top, "pidlock"))
    package = _package()
    for name in os.listdir(package):
        if not name.endswith(".py") or name == "_paths.py":
            continue
        with open(os.path.join(package, name), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        tree = ast.fix_missing_locations(_Hooks().visit(tree))
        with open(os.path.join(top, "pidlock", name), "w", encoding="utf-8") as f:
            f.write(ast.unparse(tree))
    return top


MAIN = threading.main_thread()


class Injector:
    def __init__(self) -> None:
        self.on = False
        self.count = 0
        self.points: Set[int] = set()
        self.cancel = False

    def __call__(self) -> None:
        # Python runs signal handlers in the main thread only: an
        # executor's thread is never interrupted (and would make the
        # points depend on timing).
        if not self.on or threading.current_thread() is not MAIN:
            return
        self.count += 1
        if self.count in self.points:
            if self.cancel:
                task = asyncio.current_task() if _in_loop() else None
                if task is not None:
                    task.cancel()
                    return
            raise KeyboardInterrupt


def _in_loop() -> bool:
    try:
        asyncio.get_running_loop()
        return True
    except RuntimeError:
        return False


def main() -> None:
    kind, mode, path = sys.argv[1], sys.argv[2], sys.argv[3]
    triples = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
    seed = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    # All pairs unless PAIRS says how many, drawn at random.
    pair_limit = int(sys.argv[6]) if len(sys.argv) > 6 else -1
    inject = Injector()
    inject.cancel = mode == "cancel"
    builtins.__pidlock_inject__ = inject   # type: ignore[attr-defined]
    sys.path.insert(0, rewritten_package())
    import pidlock   # the rewritten copy
    assert pidlock.__file__ and "pidlock-inject." in pidlock.__file__

    def kernel_free() -> bool:
        return kernel.kernel_free(pidlock, path)

    is_async = kind.startswith("Async")
    loop = asyncio.new_event_loop() if is_async else None
    if loop is not None:
        # One thread: a call made after the others ends after them.
        loop.set_default_executor(ThreadPoolExecutor(max_workers=1))
    objs: List[Any] = [getattr(pidlock, kind)(path)]

    def says_held() -> bool:
        obj = objs[0]
        return bool(obj.locked if kind in ("Lock", "AsyncLock") else obj.is_locked)

    async def async_with() -> None:
        async with objs[0]:
            await asyncio.sleep(0)

    def sync_with() -> None:
        with objs[0]:
            pass

    def one_with(points: Set[int]) -> None:
        inject.count, inject.points, inject.on = 0, points, True
        try:
            if loop is not None:
                task = loop.create_task(async_with())
                try:
                    loop.run_until_complete(task)
                except (KeyboardInterrupt, asyncio.CancelledError):
                    # The loop stops with a KeyboardInterrupt while the
                    # task may still be running: let it end, as a
                    # program that catches the interrupt and goes on.
                    inject.on = False
                    while not task.done():
                        try:
                            loop.run_until_complete(task)
                        except BaseException:
                            pass
            else:
                sync_with()
        except KeyboardInterrupt:
            pass
        finally:
            inject.on = False
        if loop is not None:
            # A try that an interrupt left running in the executor ends
            # before the kernel is asked (a program's next acquire waits
            # for it too).
            loop.run_until_complete(loop.run_in_executor(None, lambda: None))

    one_with(set())
    total = inject.count
    stuck: List[Dict[str, Any]] = []
    runs = {"single": 0, "pair": 0, "triple": 0}

    def run(points: Set[int], size: str) -> None:
        runs[size] += 1
        began = time.monotonic()
        try:
            one_with(points)
            failure: Optional[str] = None
            free = kernel_free()
            if says_held() == free:
                failure = f"says held {says_held()}, kernel free {free}"
            else:
                inject.on = False
                if loop is not None:
                    loop.run_until_complete(async_with())
                else:
                    sync_with()
                if not kernel_free() or says_held():
                    failure = "the next with-statement left a hold"
        except BaseException as exc:   # noqa: BLE001 - report it
            failure = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            # Start afresh, as a program would with a new object.
            old = objs[0]
            for _ in range(3):
                try:
                    if hasattr(old, "close"):
                        old.close()
                    elif loop is not None:
                        loop.run_until_complete(old.release(force=True))
                    else:
                        old.release(force=True)
                    break
                except BaseException:   # noqa: BLE001
                    pass
            objs[0] = getattr(pidlock, kind)(path)
        took = time.monotonic() - began
        if os.environ.get("PIDLOCK_INJECT_TRACE") and took > 0.05:
            print(sorted(points), round(took, 3), file=sys.stderr, flush=True)
        if failure is not None:
            if len(stuck) < 20:
                stuck.append({"points": sorted(points), "failure": failure})
            else:
                stuck.append({})

    only = os.environ.get("PIDLOCK_INJECT_ONLY")
    if only:        # runs to look into: a,b;c;...
        for one in only.split(";"):
            run({int(p) for p in one.split(",")}, "single")
            print(one, objs[0].lock_counter if hasattr(objs[0], "lock_counter")
                  else "", getattr(getattr(objs[0], "_context", None), "sites", ""),
                  file=sys.stderr)
        total = 0
    for i in range(1, total + 1):
        run({i}, "single")
    rng = random.Random(seed)
    pairs = list(itertools.combinations(range(1, total + 1), 2))
    if pair_limit >= 0 and len(pairs) > pair_limit:
        pairs = rng.sample(pairs, pair_limit)
    for i, j in pairs:
        run({i, j}, "pair")
    for _ in range(triples):
        run(set(rng.sample(range(1, total + 1), 3)), "triple")
    print(json.dumps({"kind": kind, "mode": mode, "points": total,
                      "runs": runs, "stuck": len(stuck),
                      "examples": [s for s in stuck if s][:20]}), flush=True)


if __name__ == "__main__":
    main()
