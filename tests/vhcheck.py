"""vhcheck.py — what the integration tests' Python checks share (tests/lib.sh
puts tests/ on PYTHONPATH): a check() that prints each comparison and
collects the failures, so a test reports every wrong number at once."""


def checker(prefix=""):
    """(check, errors): check(what, got, want) prints "ok"/"BAD" and, when
    got != want, appends "PREFIXwhat: got G, want W" to errors."""
    errors = []

    def check(what, got, want):
        ok = got == want
        print(f"  {'ok ' if ok else 'BAD'} {what}: {got} (want {want})")
        if not ok:
            errors.append(f"{prefix}{what}: got {got!r}, want {want!r}")
        return ok

    return check, errors


def ht_print_value(text, label, who):
    """The value after "LABEL: " in heaptrack_print's summary text; exits
    naming `who` when heaptrack_print printed no such line."""
    import re
    import sys
    mo = re.search(r"^" + re.escape(label) + r": (\S+)", text, re.M)
    if not mo:
        sys.exit(f"{who}: heaptrack_print printed no '{label}' line")
    return mo.group(1)


def ht_size_bounds(t):
    """heaptrack_print's size text ("123B", "2.20K") -> (low, high) of the
    exact value: two decimals of a 1000-based unit, and one byte of slack
    since printf rounds the binary double (1.005 may print as 1.00)."""
    import re
    mo = re.fullmatch(r"([0-9.]+)([BKMGT])", t)
    v, unit = float(mo.group(1)), mo.group(2)
    if unit == "B":
        return v, v
    scale = 1000 ** "BKMGT".index(unit)
    return (v - 0.005) * scale - 1, (v + 0.005) * scale + 1
