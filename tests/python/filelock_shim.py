# SPDX-License-Identifier: LGPL-2.1-or-later
"""A pytest plugin (-p filelock_shim) for tests/python/filelock-suite.sh:
makes filelock's public names pidlock's (in filelock's private modules
too, where a test imports them from there), so that a filelock test
suite runs against pidlock, and leaves out the cases of lock kinds
pidlock does not offer (soft, strict, lease, marker, Windows locks):
a test with such a lock among its parameters, with such a word in its
name (test_soft_errors, test_windows_...; not the option
fallback_to_soft), or whose own body makes such a lock
(SoftFileLock(...)).  A passed test that still made one of filelock's
own lock classes is listed at the end: it tested filelock.

A name that pidlock does not have becomes a stand-in that fails when
used: a test of it then fails, instead of passing against filelock's
own class.  Not part of make check (it needs filelock's sources)."""

from __future__ import annotations

import inspect
import os
import re

import pytest

import filelock
import filelock._api
import filelock._async_read_write
import filelock._descriptor
import filelock._error
import filelock._read_write
import filelock._unix
import filelock.asyncio
import pidlock

NAMES = (
    "FileLock", "UnixFileLock", "BaseFileLock", "AcquireReturnProxy",
    "AsyncFileLock", "AsyncUnixFileLock", "BaseAsyncFileLock",
    "AsyncAcquireReturnProxy", "Timeout", "ReadWriteLock",
    "AsyncReadWriteLock", "AsyncAcquireReadWriteReturnProxy",
    "lock_descriptor", "unlock_descriptor", "ContextErrorPolicy",
    "CloseErrorPolicy", "has_fcntl",
)
OTHER_KINDS = ("Soft", "Strict", "Lease", "Windows", "Marker")
#: Tests that built a pidlock lock (see pytest_runtest_call).
BUILT: "set[str]" = set()


def _missing(name: str) -> type:
    """What a name that pidlock lacks becomes: a class that cannot be
    made (nor called, for the functions)."""

    def refuse(*args: object, **kwargs: object) -> object:
        raise NotImplementedError(f"pidlock has no {name}")

    return type(name, (), {"__new__": refuse, "__init__": refuse})


#: filelock's own lock classes, kept before the names become ours: a
#: test that still makes one of them (through a name the shim does not
#: map, or a subclass of filelock's made at import) runs filelock's code,
#: and its pass says nothing of pidlock (see pytest_terminal_summary).
FILELOCK_OWN = (filelock._api.BaseFileLock, filelock._read_write.ReadWriteLock,
                filelock._async_read_write.AsyncReadWriteLock)
#: Tests that made one of FILELOCK_OWN.
RAN_FILELOCK: "set[str]" = set()

#: filelock's private modules that hold a public name under its own
#: name: a test that imports it from there (test_read_write_unit.py's
#: "from filelock._read_write import ReadWriteLock") gets pidlock's too.
PRIVATE_HOMES = (filelock._api, filelock._unix, filelock._read_write,
                 filelock._async_read_write, filelock._descriptor,
                 filelock._error, filelock.asyncio)


#: filelock's public names of the other lock kinds (SoftFileLock,
#: AsyncSoftFileLock, StrictSoftFileLock, SoftReadWriteLock,
#: WindowsFileLock, SoftFileLease, ...): a test whose own body calls one
#: or names it last in a list (a base class: "class X(SoftFileLock):",
#: isinstance(lock, SoftFileLock)) is a case of that kind, parametrized
#: or not.
OTHER_KIND_NAMES = re.compile(r"\b(%s)\s*[()]" % "|".join(sorted(
    n for n in dir(filelock) if not n.startswith("_")
    and any(k in n for k in OTHER_KINDS))))


def _patch() -> None:
    for name in NAMES:
        ours = getattr(pidlock, name, None)
        value = ours if ours is not None else _missing(name)
        for module in (filelock, filelock.asyncio):
            setattr(module, name, value)
        for module in PRIVATE_HOMES:
            if hasattr(module, name):
                setattr(module, name, value)
    filelock._unix.UnixFileLock = filelock.UnixFileLock


_patch()


#: Tests that no other implementation can pass, by name prefix: they fail
#: here with the reason, without being run (one of them would end the
#: run: it expects the patched os.close to turn its KeyboardInterrupt
#: into a group).
UNREACHABLE = {
    "test_async_filelock.py::test_context_group_base_exception_leaf_is_base_group":
        "patches os.close of filelock's _api module, which the C library never calls",
}


#: A test that patches a function of filelock's private modules (their
#: fcntl.flock, os.close and the like) tests filelock's own code: pidlock
#: never calls it.  Some of them wait for the patched call forever; then
#: pytest-timeout's SIGALRM lands in pytest's own code (its AST parse of
#: a traceback) and ends the run with an INTERNALERROR.
PRIVATE_PATCH = re.compile(r"""patch\(\s*["'](filelock\._\w+\.[\w.]+)["']""")


def _sources(item: pytest.Item) -> "list[str]":
    """The code of the test function and of the fixtures it uses."""
    funcs = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    for defs in getattr(info, "name2fixturedefs", {}).values():
        funcs += [getattr(d, "func", None) for d in defs]
    # The module's own patch helpers that the test calls.
    module = getattr(item, "module", None)
    try:
        body = inspect.getsource(item.function)  # type: ignore[attr-defined]
    except (AttributeError, OSError, TypeError):
        body = ""
    for name in set(re.findall(r"\b(_?patch_\w+)\(", body)):
        funcs.append(getattr(module, name, None))
    out = []
    for func in funcs:
        try:
            out.append(inspect.getsource(func))  # type: ignore[arg-type]
        except (OSError, TypeError):
            pass
    return out


def _patches_private(item: pytest.Item) -> "str | None":
    """Why the test cannot pass against pidlock, if it (or a fixture of
    it) patches filelock's private code.  (One group of them, the users
    of the close_failure fixture, also builds exception groups 2**25
    leaves wide that only a failure report would walk: for hours.)"""
    for source in _sources(item):
        if "sqlite3." in source:
            return ("tests filelock's SQLite database (its connection, "
                    "transactions or errors): pidlock's ReadWriteLock has none")
        found = PRIVATE_PATCH.search(source)
        if found is not None:
            return (f"patches {found.group(1)}, filelock's own code, which "
                    "pidlock never calls")
    return None


def _unreachable(reason: str):  # type: ignore[no-untyped-def]
    def runtest() -> None:
        pytest.fail(f"not reachable by another implementation: {reason}",
                    pytrace=False)
    return runtest


def _other_kind(value: object) -> bool:
    name = getattr(value, "__name__", None) or repr(value)
    return any(kind in name for kind in OTHER_KINDS)


#: The words of a test's name (split at "_", "-", "[", "]") that name
#: another lock kind: test_soft_errors, test_windows_..._rejected;
#: not "release" (which contains "lease"), and not the option
#: fallback_to_soft, which FileLock takes (its tests stay).
OTHER_KIND_WORDS = {k.lower() for k in OTHER_KINDS} | {"leases", "markers"}
OPTION_NAMES = re.compile(r"fallback[_-]to[_-]soft")


def _names_other_kind(name: str) -> bool:
    name = OPTION_NAMES.sub("option", name.lower())
    return any(w in OTHER_KIND_WORDS for w in re.split(r"[_\-\[\]]+", name))


def _uses_other_kind(item: pytest.Item) -> bool:
    """The test's own body (not its decorators: a parametrized kind is
    left out by its parameter) makes a lock of another kind."""
    try:
        source = inspect.getsource(item.function)  # type: ignore[attr-defined]
    except (AttributeError, OSError, TypeError):
        return False
    body = source[re.search(r"^\s*(async\s+)?def ", source, re.M).start():]
    return OTHER_KIND_NAMES.search(_code_only(body)) is not None


def _code_only(source: str) -> str:
    """source without its strings and comments (a child's script in a
    string names the kinds of all its variants)."""
    import io
    import tokenize
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(inspect.cleandoc(
            "\n" + source) if source[:1].isspace() else source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source
    return " ".join(t.string for t in tokens
                    if t.type not in (tokenize.STRING, tokenize.COMMENT))


def pytest_collection_modifyitems(config: pytest.Config,
                                  items: "list[pytest.Item]") -> None:
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if any(_other_kind(v) for v in params.values()) or \
                any(k in item.name for k in OTHER_KINDS) or \
                _names_other_kind(item.name) or _uses_other_kind(item):
            drop.append(item)
        else:
            for prefix, reason in UNREACHABLE.items():
                if item.nodeid.split("tests/", 1)[-1].startswith(prefix):
                    item.runtest = _unreachable(reason)
            private = _patches_private(item)
            if private is not None:
                item.runtest = _unreachable(private)
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):  # type: ignore[no-untyped-def]
    real = pidlock.Lock.__init__

    def counting(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        BUILT.add(item.nodeid)
        real(self, *args, **kwargs)

    theirs = {cls: cls.__dict__["__init__"] for cls in FILELOCK_OWN}

    def ran_filelock(init):  # type: ignore[no-untyped-def]
        def wrapper(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            RAN_FILELOCK.add(item.nodeid)
            init(self, *args, **kwargs)
        return wrapper

    pidlock.Lock.__init__ = counting
    for cls, init in theirs.items():
        cls.__init__ = ran_filelock(init)
    try:
        yield
    finally:
        pidlock.Lock.__init__ = real
        for cls, init in theirs.items():
            cls.__init__ = init


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    passed = {r.nodeid for r in terminalreporter.stats.get("passed", [])}
    terminalreporter.write_line(
        f"filelock_shim: {len(passed & BUILT)} of {len(passed)} passed tests "
        "built a pidlock.Lock")
    own = sorted(passed & RAN_FILELOCK)
    terminalreporter.write_line(
        f"filelock_shim: {len(own)} passed tests made one of filelock's own "
        "lock classes (they test filelock, not pidlock)")
    for nodeid in own:
        terminalreporter.write_line(f"filelock_shim:   {nodeid}")
    out = os.environ.get("FILELOCK_SHIM_RESULTS")
    if out:
        with open(out, "w", encoding="utf-8") as f:
            for kind in ("passed", "failed", "error", "skipped"):
                for r in terminalreporter.stats.get(kind, []):
                    if getattr(r, "when", "call") in ("call", "setup") or kind != "passed":
                        f.write(f"{kind} {r.nodeid}\n")
