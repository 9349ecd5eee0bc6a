#!/usr/bin/env python3
"""grab_owners.py — `urbit grab`'s own per-owner numbers against vheap's.

    grab_owners.py GRAB_LOG OWNERS_JSON

GRAB_LOG is what `urbit grab` printed: its memory report, a tree of
"name: UNIT/1.234.567" leaves and "name:" entries closed by "--UNIT/total"
at the entry's indentation (u3a_print_quac), then "total marked: ...".
OWNERS_JSON is `vheap-analyze owners CAPTURE --limit 0 --format json --bytes`
of the same run. Every owner grab printed must be in vheap's list with the
same bytes (vheap's walk_bytes: the same walk counted them), every owner
vheap lists with bytes must be one grab printed (grab leaves out zeros),
and the top-level owners must sum to grab's "total marked". Prints one
line a mismatch and a summary; exits 1 on any mismatch."""
import json
import re
import sys

LINE = re.compile(r"^( *)(--)?([^:]*?):? ?(?:[KMG]?B/([0-9.]+))?$")
NOT_OWNERS = {"total marked", "free lists", "sweep", "loom"}


def grab_tree(path):
    """{owner path: bytes} from grab's report, and its "total marked"."""
    owners, stack, total = {}, [], None
    for raw in open(path, errors="replace"):
        line = raw.rstrip("\r\n").replace("\r", "")
        m = re.match(r"^( *)--[KMG]?B/([0-9.]+)$", line)
        if m:                      # an entry's total closes it
            name = stack.pop()
            owners["/".join(stack + [name])] = int(m.group(2).replace(".", ""))
            continue
        m = re.match(r"^( *)([^ :][^:]*): (?:[KMG]?B/([0-9.]+))?$", line)
        if not m or len(m.group(1)) != 2 * len(stack):
            continue               # boot chatter, not the report
        name, size = m.group(2), m.group(3)
        if not stack and name in NOT_OWNERS:
            if name == "total marked":
                total = int(size.replace(".", ""))
            continue
        if size is None:
            stack.append(name)     # an entry: children follow
        else:
            owners["/".join(stack + [name])] = int(size.replace(".", ""))
    return owners, total


def main():
    grab, total = grab_tree(sys.argv[1])
    d = json.load(open(sys.argv[2]))
    vheap = {o["owner"]: o["walk_bytes"] for o in d["owners"] if o["walk_bytes"]}
    bad = 0
    for path in sorted(set(grab) | set(vheap)):
        if grab.get(path) != vheap.get(path):
            print(f"owner {path}: grab {grab.get(path)}, vheap {vheap.get(path)}")
            bad += 1
    tops = sum(b for p, b in vheap.items() if "/" not in p)
    if total is None or tops != total:
        print(f"top-level owners sum to {tops}, grab's total marked is {total}")
        bad += 1
    print(f"grab owners: {len(grab)} owners compared, {bad} mismatches; "
          f"total marked {total}, vheap's top-level sum {tops}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
