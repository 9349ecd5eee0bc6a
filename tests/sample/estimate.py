#!/usr/bin/env python3
"""estimate.py DUMP PROGRAM RATE — per-function estimates from a sampled
capture's dump: each recorded allocation of s bytes stands for 1/p of them,
p = 1 - exp(-s / RATE) (docs/capture-format.md). A stack belongs to the
first function of PROGRAM (by its symbol table, `nm`) among its frames.
Prints "stack NAME bytes=B calls=C sd_bytes=X sd_calls=Y" lines like
tests/programs/growd.c's, with the standard deviation each estimate has
(estimated from the sample: the variance of a sum of independently kept
values y each weighed 1/p is the sum of (1 - p) / p^2 * y^2 over those kept),
and "frees_unknown=N" (frees of blocks never recorded allocated)."""
import math, subprocess, sys

dump, prog, rate = sys.argv[1], sys.argv[2], float(sys.argv[3])
syms = []
for line in subprocess.run(["nm", "--defined-only", prog], capture_output=True,
                           text=True, check=True).stdout.splitlines():
    w = line.split()
    if len(w) == 3 and w[1] in "tT":
        syms.append((int(w[0], 16), w[2]))
syms.sort()
bias, stacks, est, live = None, {}, {}, set()
unknown = 0
for line in open(dump):
    w = line.split()
    if len(w) < 3:
        continue
    f = dict(x.split("=", 1) for x in w[3:] if "=" in x)
    if w[2] == "module" and f.get("path") == prog:
        bias = int(f["bias"], 16)
    elif w[2] == "stack":
        stacks[f["id"]] = [int(x, 16) for x in f["frames"].split(",") if x]
    elif w[2] == "alloc" and f.get("heap") == "0" and f["addr"] != "0x0":
        s = int(f["size"])
        p = 1.0 - math.exp(-s / rate) if rate else 1.0
        name = "?"
        for a in stacks.get(f["stack"], []):
            off = a - bias - 1
            i = max((k for k in range(len(syms)) if syms[k][0] <= off), default=None)
            if i is not None and i + 1 < len(syms) and off < syms[i + 1][0]:
                n = syms[i][1]
                if n.startswith(("cache_", "churn_", "leak_", "new_")):
                    name = n
                    break
        b = est.setdefault(name, [0.0, 0.0, 0.0, 0.0])
        b[0] += s / p
        b[1] += 1.0 / p
        b[2] += (1.0 - p) / (p * p) * s * s
        b[3] += (1.0 - p) / (p * p)
        live.add(f["addr"])
    elif w[2] == "free" and f.get("heap") == "0":
        if f["addr"] in live:
            live.discard(f["addr"])
        else:
            unknown += 1
for name, (b, c, vb, vc) in sorted(est.items()):
    print("stack %s bytes=%d calls=%d sd_bytes=%.1f sd_calls=%.1f" %
          (name, round(b), round(c), math.sqrt(vb), math.sqrt(vc)))
print("frees_unknown=%d" % unknown)
