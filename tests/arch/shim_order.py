#!/usr/bin/env python3
"""shim_order.py — the shim's order, checked (`make layers`).

preload/'s objects form one stack, bottom first, in ORDER below (the same
list docs/hacking.md draws): an object may use a symbol (nm) only of an
object below it (UP, the calls up allowed with their reason, is empty). A
new object must be placed in ORDER; a call up that is not in UP fails, and
so does an entry of UP that is no longer used (the list stays true). The
shim's files include no analyzer header.

usage: shim_order.py SRC_DIR OBJ_DIR    exit 1 on any violation
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layers import includes, symbols  # noqa: E402  one reader of each

# Bottom first. Rows on one line share a tier (docs/hacking.md).
ORDER = [
    "log", "elfsym", "regions", "sample", "options", "state", "maps",
    "bootstrap", "threads", "clock", "signals",
    "handover", "capture",
    "mapped",
    "modules", "cfi", "unwind", "stacks",
    "reach_scan", "reach",
    "lifecycle",
    "owners",
    "api", "hooks_mmap", "hooks_cxx", "hooks",
]

# (from, to): why this call goes up. Empty: what a lower file drives above
# it, it reaches without naming it (preload/upcall.h's rows, a function
# handed down at init, the shim's own symbols by name in elfsym.c). An
# entry needs its reason, and the check fails once it is no longer used.
UP = {}

INCLUDE = re.compile(r'^\s*#\s*include\s+"analyze/')


def check_includes(src):
    return [f"{path}:{no}: the shim includes no analyzer header ({line.strip()})"
            for path, no, line, _ in includes(src, INCLUDE)]


def graph(src, objdir):
    names = sorted(f[:-2] for f in os.listdir(objdir) if f.endswith(".o")
                   and os.path.exists(os.path.join(src, f[:-2] + ".c")))
    owner, uses = {}, {}
    for n in names:
        d, u = symbols(os.path.join(objdir, n + ".o"))
        for s in d:
            owner.setdefault(s, n)
        uses[n] = u
    edges = {}
    for n, u in uses.items():
        for s in sorted(u):
            o = owner.get(s)
            if o and o != n:
                edges.setdefault((n, o), []).append(s)
    return names, edges


def check_order(names, edges):
    bad = [f"preload/{n}.c: not in the shim's order (add it to ORDER in "
           "tests/arch/shim_order.py and to docs/hacking.md)"
           for n in names if n not in ORDER]
    rank = {n: i for i, n in enumerate(ORDER)}
    for (a, b), syms in sorted(edges.items()):
        if a in rank and b in rank and rank[b] > rank[a] and (a, b) not in UP:
            bad.append(f"{a} uses {b}, which is above it in the shim's order "
                       f"({', '.join(syms[:6])})")
    for a, b in sorted(UP):
        if (a, b) not in edges and a in names and b in names:
            bad.append(f"UP lists {a} -> {b}, which no longer happens: remove it")
    return bad


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    src, objdir = sys.argv[1], sys.argv[2]
    names, edges = graph(src, objdir)
    bad = check_includes(src) + check_order(names, edges)
    for b in bad:
        print("shim order: " + b, file=sys.stderr)
    if not bad:
        print(f"shim order: {len(names)} objects in order, "
              f"{len(UP)} documented calls up")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
