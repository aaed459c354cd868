#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Who calls whom across files must be one-way (run by make check).

lib/: for each object of the core library, the symbols it defines and the
ones it uses (nm(1)) give the calls from file to file.  python/pidlock/:
the imports from module to module, those under TYPE_CHECKING included.
A circle in either graph fails, named with the calls that make it.
doc/hacking.md says how the files are layered, and why.
"""

import ast
import collections
import glob
import os
import subprocess
import sys


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


def py_graph(srcdir):
    files = glob.glob(os.path.join(srcdir, "python", "pidlock", "*.py"))
    graph = collections.defaultdict(set)
    why = collections.defaultdict(set)
    for path in files:
        name = os.path.basename(path)[:-3]
        graph[name]
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                targets = [node.module] if node.module else \
                    [a.name for a in node.names]
                for t in targets:
                    if t != name and t != "__init__":
                        graph[name].add(t)
                        why[(name, t)].add("import")
    return files, graph, why


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
    files, pg, pw = py_graph(srcdir)
    if not objs or not files:
        print("check-calls: FAIL: no objects or no modules found")
        return 1
    n = report("lib/", lg, lw) + report("python/pidlock/", pg, pw)
    edges = sum(len(v) for v in lg.values())
    print(f"check-calls: {len(objs)} objects, {edges} calls between files; "
          f"{len(files)} modules; {n} circles")
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main())
