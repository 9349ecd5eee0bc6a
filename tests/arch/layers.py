#!/usr/bin/env python3
"""layers.py — the analyzer's architecture, checked (`make check`).

analyze/ has one folder a layer. A file may include headers of its own
folder and of the layers below it, never above or beside it; nothing but
cmd/ includes cmd/. The second check reads the built objects' symbols
(nm): an object that uses a symbol another defines depends on it, and no
two objects may depend on each other, directly or around a loop.
The table is the one docs/hacking.md draws.

usage: layers.py SRC_DIR [OBJ_DIR]    exit 1 on any violation
"""
import os
import re
import subprocess
import sys

# What each layer may include besides itself.
ALLOWED = {
    "util":    set(),
    "render":  {"util"},
    "capture": {"util"},
    "store":   {"util"},
    "symbols": {"util"},
    "load":    {"capture", "store", "symbols", "util"},
    "query":   {"capture", "store", "symbols", "render", "util"},
    "export":  {"query", "capture", "store", "symbols", "render", "util"},
    "report":  {"query", "capture", "store", "symbols", "render", "util"},
    "cmd":     {"export", "report", "query", "load", "capture", "store",
                "symbols", "render", "util"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"analyze/([a-z_]+)/[^"]+"')


def includes(folder, pattern):
    """(path, line number, line, match) of each line of the folder's .c and
    .h files that the pattern matches."""
    for name in sorted(os.listdir(folder)):
        if not name.endswith((".c", ".h")):
            continue
        path = os.path.join(folder, name)
        with open(path, encoding="utf-8", errors="replace") as f:
            for no, line in enumerate(f, 1):
                m = pattern.match(line)
                if m:
                    yield path, no, line, m


def check_includes(src):
    bad = []
    for layer in sorted(os.listdir(src)):
        d = os.path.join(src, layer)
        if not os.path.isdir(d):
            continue
        if layer not in ALLOWED:
            if any(f.endswith((".c", ".h")) for f in os.listdir(d)):
                bad.append(f"{d}: a folder that is not a layer (add it to ALLOWED "
                           "and to docs/hacking.md)")
            continue
        for path, no, line, m in includes(d, INCLUDE):
            if m.group(1) != layer and m.group(1) not in ALLOWED[layer]:
                bad.append(f"{path}:{no}: {layer}/ may not include "
                           f"{m.group(1)}/ ({line.strip()})")
    for name in sorted(os.listdir(src)):
        if name.endswith((".c", ".h")):
            bad.append(f"{os.path.join(src, name)}: outside every layer folder")
    return bad


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "TDBRVWG":
            defined.add(p[2])
        elif len(p) == 2 and p[0] == "U":
            used.add(p[1])
    return defined, used


def check_cycles(src, objdir):
    objs = []
    for root, _, files in os.walk(objdir):
        objs += [os.path.join(root, f) for f in files if f.endswith(".o")]
    # an object left behind by a source since moved or removed is not code
    objs = [o for o in objs
            if os.path.exists(os.path.join(src, os.path.relpath(o, objdir)[:-2] + ".c"))]
    owner, uses = {}, {}
    for o in sorted(objs):
        name = os.path.relpath(o, objdir)[:-2]
        d, u = symbols(o)
        for s in d:
            owner.setdefault(s, name)
        uses[name] = u
    graph = {n: sorted({owner[s] for s in u if s in owner and owner[s] != n})
             for n, u in uses.items()}
    # Tarjan's strongly connected components, iteratively.
    index, low, onstack, stack, comps, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter[0]
                counter[0] += 1
                stack.append(v)
                onstack.add(v)
            for j in range(i, len(graph[v])):
                w = graph[v][j]
                if w not in index:
                    work.append((v, j + 1))
                    work.append((w, 0))
                    break
                if w in onstack:
                    low[v] = min(low[v], index[w])
            else:
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        onstack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        comps.append(sorted(comp))
                if work:
                    u = work[-1][0]
                    low[u] = min(low[u], low[v])
    bad = []
    for comp in comps:
        edges = [f"{a} -> {b}" for a in comp for b in graph[a] if b in comp]
        bad.append("objects that depend on each other: " + ", ".join(comp) +
                   " (" + "; ".join(edges) + ")")
    return bad, len(graph)


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    bad = check_includes(sys.argv[1])
    nobj = 0
    if len(sys.argv) == 3:
        cyc, nobj = check_cycles(sys.argv[1], sys.argv[2])
        bad += cyc
    for b in bad:
        print("layers: " + b, file=sys.stderr)
    if not bad:
        print(f"layers: includes follow the layer rule; "
              f"{nobj} objects, no dependency cycle" if nobj else
              "layers: includes follow the layer rule")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
