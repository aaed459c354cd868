# SPDX-License-Identifier: LGPL-2.1-or-later
"""A pytest plugin (-p filelock_shim) for tests/python/filelock-suite.sh,
which runs filelock's own test suite against pidlock.

filelock_map (loaded in every process by the suite's sitecustomize,
this one included) makes filelock's names pidlock's and counts the
pidlock locks each test builds.  This plugin:

* deselects the cases of lock kinds pidlock does not offer (soft,
  strict, lease, marker, Windows locks): a test with such a lock among
  its parameters, with such a word in its name (test_soft_errors,
  test_windows_...; not the option fallback_to_soft), or whose own body
  makes such a lock (SoftFileLock(...));
* skips, with the reason, the few tests of LEFT_OUT, which cannot be
  run to an end here; every other test runs;
* tells filelock_map which test runs (and, through FILELOCK_SHIM_TEST,
  the processes the test starts);
* at the end, reports what ran, passed, failed, was skipped or
  deselected (with the reasons), how many tests built a pidlock lock,
  and which passed without building one (their pass is no evidence
  about pidlock); with FILELOCK_SHIM_RESULTS=FILE, one line per test.

Not part of make check (it needs filelock's sources)."""

from __future__ import annotations

import inspect
import io
import os
import re
import signal
import sys
import tokenize
from collections import Counter

import pytest

if "filelock_map" not in sys.modules:
    raise ImportError("filelock_shim: filelock_map was not loaded at startup "
                      "(the suite's sitecustomize is not on PYTHONPATH): the "
                      "processes the tests start would run filelock's own code")
import filelock  # noqa: E402
import filelock_map  # noqa: E402

OTHER_KINDS = ("Soft", "Strict", "Lease", "Windows", "Marker")

#: filelock's public names of the other lock kinds (SoftFileLock,
#: AsyncSoftFileLock, StrictSoftFileLock, SoftReadWriteLock,
#: WindowsFileLock, SoftFileLease, ...): a test whose own body calls one
#: or names it last in a list (a base class: "class X(SoftFileLock):",
#: isinstance(lock, SoftFileLock)) is a case of that kind.
OTHER_KIND_NAMES = re.compile(r"\b(%s)\s*[()]" % "|".join(sorted(
    n for n in dir(filelock) if not n.startswith("_")
    and any(k in n for k in OTHER_KINDS))))

#: The words of a test's name (split at "_", "-", "[", "]") that name
#: another lock kind: test_soft_errors, test_windows_..._rejected;
#: not "release" (which contains "lease"), and not the option
#: fallback_to_soft, which FileLock takes (its tests stay).
OTHER_KIND_WORDS = {k.lower() for k in OTHER_KINDS} | {"leases", "markers"}
OPTION_NAMES = re.compile(r"fallback[_-]to[_-]soft")

#: Tests that are not run, by node id (below tests/) or its prefix, and
#: why: each is reported as skipped with this reason, never as a pass or
#: a failure.  Only tests that cannot be run to an end here belong here.
_HUGE_REPR = ("an exception group of 2**25 leaves (25 nested pairs): when it "
              "fails, pytest's report reprs the whole group, which took over "
              "5 minutes and 3.6 GB before it was stopped")
LEFT_OUT: "dict[str, str]" = {
    "test_filelock.py::test_context_group_detaches_equivalent_shared_exception_dag":
        _HUGE_REPR,
    "test_filelock.py::test_context_group_preserves_distinct_shared_exception_dag":
        _HUGE_REPR,
}


def _names_other_kind(name: str) -> bool:
    name = OPTION_NAMES.sub("option", name.lower())
    return any(w in OTHER_KIND_WORDS for w in re.split(r"[_\-\[\]]+", name))


def _code_only(source: str) -> str:
    """source without its strings and comments (a child's script in a
    string names the kinds of all its variants)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(inspect.cleandoc(
            "\n" + source) if source[:1].isspace() else source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source
    return " ".join(t.string for t in tokens
                    if t.type not in (tokenize.STRING, tokenize.COMMENT))


def _uses_other_kind(item: pytest.Item) -> "str | None":
    """The other kind the test's own body (not its decorators: a
    parametrized kind is left out by its parameter) makes, if any."""
    try:
        source = inspect.getsource(item.function)  # type: ignore[attr-defined]
    except (AttributeError, OSError, TypeError):
        return None
    body = source[re.search(r"^\s*(async\s+)?def ", source, re.M).start():]
    found = OTHER_KIND_NAMES.search(_code_only(body))
    return None if found is None else found.group(1)


def _other_kind(item: pytest.Item) -> "str | None":
    """Why the test is a case of another lock kind, if it is one."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    for value in params.values():
        name = getattr(value, "__name__", None) or repr(value)
        if any(kind in name for kind in OTHER_KINDS):
            return f"another lock kind: parameter {name}"
    if any(k in item.name for k in OTHER_KINDS) or _names_other_kind(item.name):
        return "another lock kind: named in the test's name"
    made = _uses_other_kind(item)
    if made is not None:
        return f"another lock kind: its body makes {made}"
    return None


def _short(nodeid: str) -> str:
    return nodeid.split("tests/", 1)[-1]


#: {nodeid: reason} of the deselected tests, and of those left out.
DESELECTED: "dict[str, str]" = {}
#: {nodeid: "passed" | "failed" | "error" | "skipped"}, and the reasons
#: of the skipped.
OUTCOME: "dict[str, str]" = {}
SKIP_REASON: "dict[str, str]" = {}
#: {nodeid: the last line of the first failure's report}: the exception.
CAUSE: "dict[str, str]" = {}


def pytest_collection_modifyitems(config: pytest.Config,
                                  items: "list[pytest.Item]") -> None:
    keep, drop = [], []
    for item in items:
        why = _other_kind(item)
        if why is not None:
            DESELECTED[item.nodeid] = why
            drop.append(item)
            continue
        for prefix, reason in LEFT_OUT.items():
            if _short(item.nodeid).startswith(prefix):
                item.add_marker(pytest.mark.skip(reason=f"left out: {reason}"))
        keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem):  # type: ignore[no-untyped-def]
    filelock_map.CURRENT[0] = item.nodeid
    os.environ["FILELOCK_SHIM_TEST"] = item.nodeid
    try:
        yield
    finally:
        filelock_map.CURRENT[0] = ""
        os.environ.pop("FILELOCK_SHIM_TEST", None)


#: Whether SIGINT came: a KeyboardInterrupt that a test's own code
#: raises is that test's failure, not the end of the run.
_SIGINT = [False]


def pytest_sessionstart(session: pytest.Session) -> None:
    previous = signal.getsignal(signal.SIGINT)

    def on_sigint(signum, frame):  # type: ignore[no-untyped-def]
        _SIGINT[0] = True
        if callable(previous):
            previous(signum, frame)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function):  # type: ignore[no-untyped-def]
    # Inside pytest-asyncio's wrapper (which is tryfirst): obj is then
    # the function that runs the test, a coroutine's too.
    run = pyfuncitem.obj

    def guarded(*args, **kwargs):  # type: ignore[no-untyped-def]
        try:
            return run(*args, **kwargs)
        except KeyboardInterrupt as exc:
            if _SIGINT[0]:
                raise
            # test_context_group_base_exception_leaf_is_base_group
            # expects filelock's patched os.close to turn it into a group.
            raise pytest.fail.Exception(
                "KeyboardInterrupt raised by the test's own code, not by "
                f"SIGINT: {exc!r}", pytrace=True) from exc

    pyfuncitem.obj = guarded
    try:
        yield
    finally:
        pyfuncitem.obj = run


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    nodeid, was = report.nodeid, OUTCOME.get(report.nodeid)
    if report.failed:
        now = "failed" if report.when == "call" else "error"
        if nodeid not in CAUSE:
            text = [line for line in report.longreprtext.splitlines()
                    if line.strip() and not line.startswith(" ")]
            CAUSE[nodeid] = (f"{report.when}: " + (text[-1] if text else "?"))[:300]
        if was in (None, "passed", "skipped") or (was == "error" and now == "failed"):
            OUTCOME[nodeid] = now
    elif report.skipped:
        if was is None:
            OUTCOME[nodeid] = "skipped"
            longrepr = report.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
            SKIP_REASON[nodeid] = reason.replace("Skipped: ", "", 1)
    elif report.when == "call" and was is None:
        OUTCOME[nodeid] = "passed"


def _builds() -> "dict[str, dict[str, set[int]]]":
    """{test: {kind: pids}} from the builds file of every process."""
    out: "dict[str, dict[str, set[int]]]" = {}
    path = os.environ.get("FILELOCK_SHIM_BUILDS")
    if not path:
        return out
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            kind, pid, test = (line.rstrip("\n").split(" ", 2) + ["", ""])[:3]
            out.setdefault(test, {}).setdefault(kind, set()).add(int(pid))
    return out


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    write = terminalreporter.write_line
    me = os.getpid()
    builds = _builds()
    counts = filelock_map.COUNTS
    O, H, F = filelock_map.OBJECT, filelock_map.HANDLE, filelock_map.FILELOCK

    def built(test: str, kind: str) -> bool:
        return bool(builds.get(test, {}).get(kind))

    def children(test: str) -> int:
        return len({p for k in (O, H) for p in builds.get(test, {}).get(k, ())} - {me})

    by = Counter(OUTCOME.values())
    ran = [t for t, o in OUTCOME.items() if o != "skipped"]
    passed = [t for t in ran if OUTCOME[t] == "passed"]
    write("")
    write("filelock_shim: " + ", ".join(
        f"{n} {what}" for n, what in (
            (len(ran), "ran"), (by["passed"], "passed"),
            (by["failed"] + by["error"], "failed"
             + (f" ({by['error']} of them in setup or teardown)" if by["error"] else "")),
            (by["skipped"], "skipped"),
            (len(DESELECTED), "deselected as cases of other lock kinds"))))
    collect = [r for r in terminalreporter.stats.get("error", [])
               if not isinstance(r, pytest.TestReport)]
    if collect:
        write(f"filelock_shim: {len(collect)} collection errors (their tests "
              "are counted nowhere above): "
              + " ".join(getattr(r, "nodeid", "?") for r in collect))
    files = os.environ.get("FILELOCK_SHIM_FILES_LEFT_OUT", "").split()
    if files:
        write(f"filelock_shim: {len(files)} files not collected (other lock "
              f"kinds, filelock's internals): {' '.join(files)}")
    for reason, n in sorted(Counter(DESELECTED.values()).items()):
        write(f"filelock_shim: deselected {n}: {reason}")
    for reason, tests in sorted(_group(SKIP_REASON).items()):
        write(f"filelock_shim: skipped {len(tests)}: {reason}")
        for test in tests:
            write(f"filelock_shim:   {_short(test)}")
    b = [t for t in ran if built(t, O)]
    only_child = [t for t in b if not counts.get(t, {}).get(O)]
    h = [t for t in ran if built(t, H)]
    write(f"filelock_shim: {len(b)} of the {len(ran)} tests that ran built at "
          f"least one pidlock lock ({len(only_child)} of them only in a child "
          f"process); {len(h)} had the C library make a handle")
    pb = [t for t in passed if built(t, O)]
    pn = [t for t in passed if not built(t, O)]
    write(f"filelock_shim: of the {len(passed)} passed, {len(pb)} built a "
          f"pidlock lock; {len(pn)} built none (their pass is no evidence "
          "about pidlock's locks):")
    for test in pn:
        write(f"filelock_shim:   {_short(test)}")
    own = sorted(t for t in builds if built(t, F) and t)
    write(f"filelock_shim: {len(own)} tests made one of filelock's own lock "
          "classes (they ran filelock's code)" + (":" if own else ""))
    for test in own:
        write(f"filelock_shim:   {_short(test)} ({OUTCOME.get(test, '?')})")
    stray = builds.get("", {})
    if stray:
        write("filelock_shim: built outside any test: " + ", ".join(
            f"{k} in {len(p)} process(es)" for k, p in sorted(stray.items())))
    out = os.environ.get("FILELOCK_SHIM_RESULTS")
    if out:
        with open(out, "w", encoding="utf-8") as f:
            for test, outcome in OUTCOME.items():
                c = counts.get(test, {})
                extra = (f"\treason={SKIP_REASON.get(test, '')}"
                         if outcome == "skipped" else
                         f"\tcause={CAUSE.get(test, '')}" if test in CAUSE else "")
                f.write(f"{outcome}\t{test}\tbuilt={c.get(O, 0)}"
                        f"\thandles={c.get(H, 0)}\tchild_processes={children(test)}"
                        f"\tpidlock={'yes' if built(test, O) else 'no'}"
                        f"\tfilelock_own={'yes' if built(test, F) else 'no'}{extra}\n")
            for test, reason in DESELECTED.items():
                f.write(f"deselected\t{test}\treason={reason}\n")


def _group(reasons: "dict[str, str]") -> "dict[str, list[str]]":
    out: "dict[str, list[str]]" = {}
    for test, reason in reasons.items():
        out.setdefault(reason, []).append(test)
    return out
