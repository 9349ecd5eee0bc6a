#!/usr/bin/env python3
"""funcs.py — C functions by length, longest first (`make layers`).

A definition is a signature at column 0 and its body from a '{' alone on a
line to the '}' at column 0 (the project's style); its length counts both
ends. With --max N, exit 1 naming each function over N lines, unless the
comment just above it begins "Kept in one piece" and says why.

usage: funcs.py [--max N] [--top K] DIR|FILE...
"""
import os
import re
import sys

SIG = re.compile(r'^[A-Za-z_][^;]*?\b([A-Za-z_]\w*)\s*\(')
KEEP = "Kept in one piece"


def comment_above(lines, j):
    """The comment block that ends right above line j (the signature)."""
    k = j - 1
    while k >= 0 and lines[k].strip() and not lines[k].startswith("/*"):
        if not lines[k].lstrip().startswith(("*", "/*")):
            return ""
        k -= 1
    return lines[k] if k >= 0 else ""


def funcs(path):
    lines = open(path, errors="replace").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        if lines[i] == "{" and i > 0:
            j = i - 1                      # back to the signature's first line
            while j > 0 and not SIG.match(lines[j]) and lines[j].startswith((" ", "\t")):
                j -= 1
            k = i + 1
            while k < len(lines) and not lines[k].startswith("}"):
                k += 1
            m = SIG.match(lines[j])
            if m and "=" not in lines[j].split("(")[0]:
                out.append((k - j + 1, m.group(1), path, j + 1,
                            comment_above(lines, j).find(KEEP) >= 0))
            i = k
        i += 1
    return out


def sources(args):
    for a in args:
        if os.path.isfile(a):
            yield a
        for d, _, fs in os.walk(a):
            for f in sorted(fs):
                if f.endswith((".c", ".h")):
                    yield os.path.join(d, f)


def main():
    args, limit, top = sys.argv[1:], None, None
    while args and args[0].startswith("--"):
        if args[0] == "--max" and len(args) > 1:
            limit = int(args[1])
        elif args[0] == "--top" and len(args) > 1:
            top = int(args[1])
        else:
            print(__doc__.strip().splitlines()[-1], file=sys.stderr)
            return 2
        args = args[2:]
    if not args:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    found = sorted((f for p in sources(args) for f in funcs(p)), key=lambda f: (-f[0], f[2]))
    if limit is None:
        for n, name, path, line, _ in found[:top]:
            print(f"{n:5d} {path}:{line} {name}")
        return 0
    over = [f for f in found if f[0] > limit and not f[4]]
    for n, name, path, line, _ in over:
        print(f"functions: {path}:{line}: {name} is {n} lines, over {limit} (split it, or say "
              f"why not in a comment above it that begins \"{KEEP}\")", file=sys.stderr)
    if not over:
        kept = sum(1 for f in found if f[0] > limit)
        print(f"functions: {len(found)} in {' '.join(args)}, none over {limit} lines"
              + (f" but {kept} kept in one piece" if kept else ""))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
