#!/usr/bin/env python3
"""docs.py — docs/hacking.md and the option table kept true (`make check`).

Two checks, exit 1 with the offending name on any:
 - every file or folder docs/hacking.md names (in backquotes or as a link)
   exists: a name with a slash from the top (or from analyze/, or docs/ for
   links), a bare file name in the folder its table row or section is about,
   else anywhere in the tree;
 - every option in preload/options.c's table has its row in README.md's
   option table and is named in docs/usage.md.

usage: docs.py TOP
"""
import glob
import os
import re
import sys

PATHLIKE = re.compile(r"^[\w.*/-]+(\.(c|h|sh|py|md|sql|spec|json|in)|/)$")
PLACEHOLDER = re.compile(r"\b[A-Z]{3,}\b")      # NAME.c, FORMAT.c: examples


def exists(top, rel):
    return bool(glob.glob(os.path.join(top, rel)))


def candidates(name, folder):
    """Where a name written in hacking.md may live, in order."""
    if "/" in name:
        return [name, "analyze/" + name, "docs/" + name]
    return ([folder + "/" + name] if folder else []) + ["**/" + name]


def check_hacking(top):
    bad = []
    folder = None
    path = os.path.join(top, "docs", "hacking.md")
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            m = re.match(r"^\| `(\w+)/` \|", line)          # an analyzer row
            if m:
                folder = "analyze/" + m.group(1)
            elif line.startswith("#"):
                s = re.search(r"\((\w+)/\)", line)          # "## The shim (preload/)"
                folder = s.group(1) if s else None
            names = re.findall(r"`([^`\s]+)`", line) + re.findall(r"\]\(([^)#]+)\)", line)
            for name in names:
                name = name.split(":")[0]
                if (not PATHLIKE.match(name) or PLACEHOLDER.search(name) or
                        name.startswith(("build/", "$"))):
                    continue
                if not any(glob.glob(os.path.join(top, c), recursive=True)
                           for c in candidates(name, folder)):
                    bad.append(f"docs/hacking.md:{no}: names {name}, which is not there")
    return bad


def check_options(top):
    with open(os.path.join(top, "preload", "options.c"), encoding="utf-8") as f:
        src = f.read()
    table = src[src.index("static const struct option table[]"):]
    table = table[:table.index("};")]
    names = re.findall(r'\{ "(VHEAP_\w+)"', table)
    with open(os.path.join(top, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    with open(os.path.join(top, "docs", "usage.md"), encoding="utf-8") as f:
        usage = f.read()
    bad = [] if names else ["preload/options.c: no option table found"]
    for n in names:
        if not re.search(r"^\| `" + n + r"` \|", readme, re.M):
            bad.append(f"README.md: option {n} (preload/options.c) has no row in the option table")
        if "`" + n not in usage:
            bad.append(f"docs/usage.md: option {n} (preload/options.c) is not named")
    return bad, len(names)


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    top = sys.argv[1]
    bad = check_hacking(top)
    obad, nopt = check_options(top)
    bad += obad
    for b in bad:
        print("docs: " + b, file=sys.stderr)
    if not bad:
        print(f"docs: every path docs/hacking.md names exists; {nopt} options, "
              "each in README.md and docs/usage.md")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
