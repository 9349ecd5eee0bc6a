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
