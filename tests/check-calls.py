#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Who calls whom across files follows doc/layout.md (run by make check).

lib/: for each object of the core library, the symbols it defines and the
ones it uses (nm(1)) give the calls from file to file; a file that
includes a header of lib/ (#include "x.h") depends on it too.  (A header's
inline functions are compiled into the objects that include it, so their
calls are those objects'.)  python/pidlock/: the imports from module to
module, those under TYPE_CHECKING included; _paths.py.in is the module
_paths.

Fails on a circle in either graph, named with the calls that make it; on
a file of lib/ (.c, .h) or a module of python/pidlock/ missing from
doc/layout.md's lists, or listed twice, or listed but not there; and on a
call that goes up a list (from a file to one listed before it), named with
its symbols.  doc/layout.md says how the files are layered, and why.
"""

import ast
import collections
import glob
import os
import re
import subprocess
import sys

# doc/layout.md: the headings of the two lists, and a list's line.
LIB_HEADING = "## lib/, top to bottom"
PY_HEADING = "## python/pidlock/, top to bottom"
ITEM = re.compile(r"^- `([^`]+)`")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+\.h)"', re.M)


def circles(graph):
    """The strongly connected components of more than one node."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def lib_graph(builddir):
    objs = glob.glob(os.path.join(builddir, "lib", ".libs",
                                  "libpidlock_core_la-*.o"))
    if not objs:
        objs = glob.glob(os.path.join(builddir, "lib",
                                      "libpidlock_core_la-*.o"))
    defs, uses = {}, collections.defaultdict(set)
    for obj in objs:
        name = os.path.basename(obj)[len("libpidlock_core_la-"):-2] + ".c"
        out = subprocess.run(["nm", obj], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "TDBR":
                defs[f[2]] = name
            elif len(f) == 2 and f[0] == "U":
                uses[name].add(f[1])
    graph = collections.defaultdict(set)
    why = collections.defaultdict(set)
    for name in list(uses):
        graph[name]
        for sym in uses[name]:
            to = defs.get(sym)
            if to and to != name:
                graph[name].add(to)
                why[(name, to)].add(sym)
    return objs, graph, why


def lib_files(srcdir):
    return sorted(os.path.basename(p) for pat in ("*.c", "*.h")
                  for p in glob.glob(os.path.join(srcdir, "lib", pat)))


def include_edges(srcdir, files, graph, why):
    """A file of lib/ depends on each header of lib/ that it includes."""
    headers = {f for f in files if f.endswith(".h")}
    for name in files:
        with open(os.path.join(srcdir, "lib", name), encoding="utf-8") as f:
            text = f.read()
        graph[name]
        for h in INCLUDE.findall(text):
            if h in headers and h != name:
                graph[name].add(h)
                why[(name, h)].add("#include")


def py_modules(srcdir):
    """Module name => its source: NAME.py, else NAME.py.in (_paths.py is
    made from _paths.py.in, in the build tree)."""
    mods = {}
    for pat in ("*.py.in", "*.py"):
        for path in glob.glob(os.path.join(srcdir, "python", "pidlock", pat)):
            base = os.path.basename(path)
            mods[base[:-len(pat) + 1]] = path
    return mods


def py_graph(srcdir):
    mods = py_modules(srcdir)
    files = sorted(mods.values())
    graph = collections.defaultdict(set)
    why = collections.defaultdict(set)
    for name, path in sorted(mods.items()):
        graph[name]
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                targets = [node.module] if node.module else \
                    [a.name for a in node.names]
                for t in targets:
                    # from . import NAME: NAME is a module, or a name
                    # of __init__.py.
                    t = t.split(".")[0]
                    if t not in mods:
                        t = "__init__"
                    if t != name:
                        graph[name].add(t)
                        why[(name, t)].add("import")
    return files, graph, why


def listed(layout, heading):
    """The files of doc/layout.md's list under heading, in order (a list
    runs to the next "## " heading; "### " headings group it)."""
    out, inside = [], False
    for line in layout.splitlines():
        if line.startswith("## "):
            inside = line.strip() == heading
        elif inside:
            m = ITEM.match(line)
            if m:
                out.append(m.group(1))
    return out


def check_order(kind, heading, order, present, graph, why):
    """Fails (the count) on a file not listed, listed twice or listed
    but absent, and on each call that goes up the list."""
    bad = 0
    if not order:
        print(f"check-calls: FAIL: doc/layout.md has no list under "
              f"'{heading}'")
        return 1
    seen = set()
    for f in order:
        if f in seen:
            print(f"check-calls: FAIL: {f} is listed twice in doc/layout.md "
                  f"({kind})")
            bad += 1
        seen.add(f)
    for f in sorted(set(present) - seen):
        print(f"check-calls: FAIL: {kind}{f} is missing from doc/layout.md's "
              f"list '{heading}': add it where its calls go down")
        bad += 1
    for f in sorted(seen - set(present)):
        print(f"check-calls: FAIL: doc/layout.md lists {kind}{f}, "
              f"which is not there")
        bad += 1
    pos = {f: i for i, f in enumerate(order)}
    for a in sorted(graph):
        for b in sorted(graph[a]):
            if a in pos and b in pos and pos[b] < pos[a]:
                print(f"check-calls: FAIL: a call goes up doc/layout.md's "
                      f"list: {a} -> {b}: {' '.join(sorted(why[(a, b)]))}")
                bad += 1
    return bad


def report(kind, graph, why):
    bad = circles(graph)
    for comp in bad:
        print(f"check-calls: FAIL: a circle in {kind}: {' '.join(comp)}")
        for a in comp:
            for b in sorted(graph[a]):
                if b in comp:
                    print(f"    {a} -> {b}: {' '.join(sorted(why[(a, b)]))}")
    return len(bad)


def main():
    srcdir = os.environ.get("srcdir", ".")
    builddir = os.environ.get("builddir", ".")
    objs, lg, lw = lib_graph(builddir)
    lfiles = lib_files(srcdir)
    include_edges(srcdir, lfiles, lg, lw)
    files, pg, pw = py_graph(srcdir)
    if not objs or not files:
        print("check-calls: FAIL: no objects or no modules found")
        return 1
    n = report("lib/", lg, lw) + report("python/pidlock/", pg, pw)
    with open(os.path.join(srcdir, "doc", "layout.md"),
              encoding="utf-8") as f:
        layout = f.read()
    pyfiles = [m + ".py" for m in py_modules(srcdir)]
    pgf = {a + ".py": {b + ".py" for b in v} for a, v in pg.items()}
    pwf = {(a + ".py", b + ".py"): v for (a, b), v in pw.items()}
    m = check_order("lib/", LIB_HEADING, listed(layout, LIB_HEADING),
                    lfiles, lg, lw)
    m += check_order("python/pidlock/", PY_HEADING,
                     listed(layout, PY_HEADING), pyfiles, pgf, pwf)
    edges = sum(len(v) for v in lg.values())
    print(f"check-calls: {len(objs)} objects and {len(lfiles)} files of "
          f"lib/, {edges} calls and includes between files; {len(files)} "
          f"modules; {n} circles; {m} faults against doc/layout.md")
    return 1 if n or m else 0


if __name__ == "__main__":
    sys.exit(main())
