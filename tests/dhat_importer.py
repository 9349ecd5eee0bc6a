#!/usr/bin/env python3
"""dhat_importer.py FILE [FUNCTION:FILE ...] — does FILE give the Firefox
Profiler's DHAT importer (firefox-devtools/profiler,
src/profile-logic/import/dhat.ts, read at df31314e) everything it reads?

What that importer needs, as its source states it (facts, not its code):
- the JSON is an object no earlier importer claims: no 'meta' (a processed
  or Gecko profile), no 'traceEvents', not all of samples/timeDeltas/
  startTime/endTime (Chrome), and not an array;
- 'dhatFileVersion' a number, exactly 2 (anything else throws);
- 'cmd' a string (the product's name and the root function), 'pid' an
  integer (each of its four threads' pid);
- 'ftbl' an array of strings; each frame is split by the pattern
  0xADDR: FUNCTION (FILE[:LINE[:COLUMN]]) or (in MODULE), else the whole
  string is the function's name;
- 'pps' an array of objects, each with 'fs' an array of integers indexing
  'ftbl' (leaf first), and the numbers it weighs its four threads by: 'tb'
  (Total Bytes), 'mb' (Maximum Bytes), 'gb' (Bytes at Global Max), 'eb'
  (Bytes at End) — a missing one weighs NaN.
Each FUNCTION:FILE argument must be some frame's function and file once
split so (the importer shows it under that name, in that source file).
Prints every problem; exit 1 if any."""
import json
import re
import sys

# 0xADDR: FUNCTION (FILE[:LINE[:COLUMN]]) or 0xADDR: FUNCTION (in MODULE)
FRAME = re.compile(r"""0x [0-9a-fA-F]+ :\ (?P<fn>.+)\ \( (in\ )? (?P<src>.+?)
                       (:[0-9]+)? (:[0-9]+)? \) \Z""", re.X)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def check_top(d, bad):
    if not isinstance(d, dict):
        bad.append("the file is a JSON %s, not an object" % type(d).__name__)
        return False
    if "meta" in d:
        bad.append("'meta' makes it read as a Gecko or processed profile")
    if "traceEvents" in d or all(k in d for k in ("samples", "timeDeltas", "startTime", "endTime")):
        bad.append("it would be read as a Chrome profile")
    v = d.get("dhatFileVersion")
    if not isinstance(v, (int, float)) or isinstance(v, bool) or v != 2:
        bad.append("dhatFileVersion: want the number 2, got %r" % (v,))
    if not isinstance(d.get("cmd"), str):
        bad.append("cmd: want a string, got %r" % (d.get("cmd"),))
    if not is_int(d.get("pid")):
        bad.append("pid: want an integer, got %r" % (d.get("pid"),))
    ftbl, pps = d.get("ftbl"), d.get("pps")
    if not isinstance(ftbl, list) or not all(isinstance(f, str) for f in ftbl):
        bad.append("ftbl: want an array of strings")
        return False
    if not isinstance(pps, list):
        bad.append("pps: want an array")
        return False
    return True


def check_pps(d, bad):
    n = len(d["ftbl"])
    for i, pp in enumerate(d["pps"]):
        if not isinstance(pp, dict):
            bad.append("pps[%d]: not an object" % i)
            continue
        fs = pp.get("fs")
        if not isinstance(fs, list) or not all(is_int(f) and 0 <= f < n for f in fs):
            bad.append("pps[%d].fs: want integers indexing ftbl (0..%d), got %r" % (i, n - 1, fs))
        for k in ("tb", "mb", "gb", "eb"):
            if not is_int(pp.get(k)) or pp[k] < 0:
                bad.append("pps[%d].%s: want a byte count, got %r" % (i, k, pp.get(k)))
        if len(bad) > 20:
            return


def main():
    d = json.load(open(sys.argv[1]))
    bad = []
    if check_top(d, bad):
        check_pps(d, bad)
        split = {}
        for f in d["ftbl"]:
            m = FRAME.match(f)
            if m:
                split.setdefault(m.group("fn"), set()).add(m.group("src"))
        for want in sys.argv[2:]:
            fn, src = want.split(":", 1)
            if src not in split.get(fn, ()):
                bad.append("no frame the importer reads as %s in %s (it reads %s as %s)"
                           % (fn, src, fn, sorted(split.get(fn, ())) or "nothing"))
    for m in bad:
        print("%s: %s" % (sys.argv[1], m))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
