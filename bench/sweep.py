#!/usr/bin/env python3
"""sweep.py — `make sweep` (and `make realworld`): every ELF program in
/usr/bin and /usr/sbin run with --version, bare and under libvheap.so, its
exit status, stdout and stderr compared. The shim must never change a
program's fate (issue 25: 53 of Debian's programs hung under it on start).

Each run: stdin from /dev/null, no controlling terminal (a new session), a
fresh empty directory as cwd, HOME and TMPDIR (so that a program creating
~/.something on its first run does so in both runs alike), a timeout, and
its whole process group killed afterwards. Under the shim the capture goes
into that directory and is deleted with it.

What legitimately differs from run to run is masked before comparing:
  - the run's own directory (HOME, TMPDIR, cwd)          -> <RUN>
  - the program's pid, as a whole number                  -> <PID>
  - clock times hh:mm:ss[.frac]                           -> <TIME>
  - names under /tmp (mkstemp's random suffixes)          -> /tmp/<TMP>
A program whose masked output still differs is run bare up to four more
times: if a bare run gives what the shim's did, or the bare runs differ
among themselves, its output varies by itself (groff --version: troff's
and grops' lines race for stdout, one bare run in three the other way)
and is listed as such, not counted against the shim. So is one whose
lines are the same in another order (several processes writing to one
stdout), with its diff shown.

Exit status 0: no hang and no difference the shim caused; 1 otherwise;
2 on a usage error. Environment: B (build dir, default build),
SWEEP_JOBS (2), SWEEP_TIMEOUT (seconds a run, 20), SWEEP_DIRS
(default "/usr/bin /usr/sbin"), SWEEP_ONLY (names, for a look at a few).
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

# Programs never run, and why. Everything else in the directories runs.
DENY = {
    # They stop or restart the machine, or switch runlevels, whatever
    # their arguments when not understood (systemd's and sysvinit's alike).
    "reboot": "reboots the machine", "shutdown": "shuts the machine down",
    "halt": "halts the machine", "poweroff": "powers the machine off",
    "init": "is (or re-executes) the init process",
    "telinit": "changes the runlevel", "runlevel": "belongs to init",
    # They signal other processes: killall5 ignores its arguments and
    # signals every process on the machine; the others are left out rather
    # than trust every implementation not to take --version for a name.
    "killall5": "signals every process, whatever its arguments",
    "kill": "signals processes", "killall": "signals processes by name",
    "pkill": "signals processes by name", "skill": "signals processes",
    "snice": "renices processes",
    # They never exit on --version, with or without the shim (20 s and more
    # bare): jconsole waits for a display it cannot open; llvm's
    # PerfectShuffle ignores its arguments and computes its table for minutes.
    "jconsole": "never exits (waits for a display)",
    "llvm-PerfectShuffle": "ignores its arguments, computes for minutes",
    "llvm-PerfectShuffle-14": "ignores its arguments, computes for minutes",
}
# Prefixes: they write file systems or swap onto the devices they are given.
DENY_PREFIX = {"mkfs": "writes a file system", "mke2fs": "writes a file system",
               "mkswap": "writes swap space", "mkdosfs": "writes a file system"}


def denied(name):
    if name in DENY:
        return DENY[name]
    for p, why in DENY_PREFIX.items():
        if name.startswith(p):
            return why
    return None


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def programs(dirs):
    """(name, path) of every executable ELF file (symlinks followed), sorted."""
    out = []
    for d in dirs:
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            if os.path.isfile(path) and os.access(path, os.X_OK) and is_elf(path):
                out.append((name, path))
    return out


TIME_RE = re.compile(rb"\b\d{1,2}:\d{2}:\d{2}(\.\d+)?\b")
TMP_RE = re.compile(rb"/tmp/[^\s'\"`:,;)]+")


def mask(data, run_dir, pid):
    data = data.replace(run_dir.encode(), b"<RUN>")
    data = re.sub(rb"\b%d\b" % pid, b"<PID>", data)
    data = TIME_RE.sub(b"<TIME>", data)
    return TMP_RE.sub(b"/tmp/<TMP>", data)


def run(path, lib, limit, base_env):
    """One run: (status or 'hang', stdout, stderr, captured) with masks;
    captured: whether the shim wrote a capture (it did not load in a static
    program)."""
    run_dir = tempfile.mkdtemp(prefix="vheap-sweep.")
    env = dict(base_env, HOME=run_dir, TMPDIR=run_dir)
    if lib:
        env.update(LD_PRELOAD=lib, VHEAP_OUT=os.path.join(run_dir, "cap.vhcap"),
                   VHEAP_QUIET="1")
    try:
        p = subprocess.Popen([path, "--version"], cwd=run_dir, env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = p.communicate(timeout=limit)
            status = p.returncode
        except subprocess.TimeoutExpired:
            status = "hang"
        # Whatever the program left running (daemons, a hung child) goes too.
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if status == "hang":
            try:               # a setsid'd descendant may hold the pipes still
                out, err = p.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = b"", b""
        captured = any(n.startswith("cap.vhcap") for n in os.listdir(run_dir))
        return (status, mask(out, run_dir, p.pid), mask(err, run_dir, p.pid), captured)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def show(status):
    return "hung" if status == "hang" else "exit %s" % status


def diff_text(name, bare, shim):
    """The difference, said briefly: the exit statuses, then a unified diff
    of each stream that differs (at most 20 lines each)."""
    import difflib
    lines = ["%s: bare %s, under the shim %s" % (name, show(bare[0]), show(shim[0]))]
    for i, what in ((1, "stdout"), (2, "stderr")):
        if bare[i] != shim[i]:
            d = list(difflib.unified_diff(
                bare[i].decode(errors="replace").splitlines(),
                shim[i].decode(errors="replace").splitlines(),
                "bare " + what, "shim " + what, lineterm="", n=1))
            lines += ["    " + l for l in d[:20]]
            if len(d) > 20:
                lines.append("    ... %d more lines" % (len(d) - 20))
    return "\n".join(lines)


BARE_RERUNS = 4


def same_lines(a, b):
    """The same status and the same lines, in another order: what two
    processes writing to one stdout give when their timing changes (groff
    runs troff and grops at once). The shim cannot reorder one process's
    writes, so this is listed, with its diff, but not counted."""
    return a[0] == b[0] and all(sorted(x.splitlines()) == sorted(y.splitlines())
                                for x, y in ((a[1], b[1]), (a[2], b[2])))


def check(prog, lib, limit, env):
    name, path = prog
    bare = run(path, None, limit, env)
    if bare[0] == "hang":
        return ("bare_hang", name, None)
    shim = run(path, lib, limit, env)
    if shim[:3] == bare[:3]:
        return ("same" if shim[3] else "static", name, None)
    if shim[0] == "hang":
        return ("hang", name, None)
    for _ in range(BARE_RERUNS):
        again = run(path, None, limit, env)
        if again[:3] != bare[:3]:
            return ("varies", name, None)
    if same_lines(bare, shim):
        return ("reordered", name, diff_text(name, bare, shim))
    return ("differs", name, diff_text(name, bare, shim))


def main():
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    b = os.environ.get("B", "build")
    lib = os.path.join(top, b) if not os.path.isabs(b) else b
    lib = os.path.join(lib, "libvheap.so")
    if not os.path.isfile(lib):
        print("sweep: build first (make all): no %s" % lib, file=sys.stderr)
        return 2
    try:
        jobs = int(os.environ.get("SWEEP_JOBS", "2"))
        limit = float(os.environ.get("SWEEP_TIMEOUT", "20"))
    except ValueError:
        print("sweep: SWEEP_JOBS and SWEEP_TIMEOUT are numbers", file=sys.stderr)
        return 2
    dirs = os.environ.get("SWEEP_DIRS", "/usr/bin /usr/sbin").split()
    only = set(os.environ.get("SWEEP_ONLY", "").split())
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("VHEAP_") and k not in ("LD_PRELOAD", "DISPLAY", "WAYLAND_DISPLAY")}

    found = programs(dirs)
    todo, skipped = [], []
    for name, path in found:
        if only and name not in only:
            continue
        why = denied(name)
        if why:
            skipped.append((name, why))
        else:
            todo.append((name, path))
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(lambda p: check(p, lib, limit, env), todo))
    by = {}
    for kind, name, text in results:
        by.setdefault(kind, []).append((name, text))

    print("sweep: %d ELF programs in %s, %d deny-listed, %d run bare and under the shim "
          "with --version (%.0f s, timeout %g s, %d at once)"
          % (len(found), " ".join(dirs), len(skipped), len(todo),
             time.monotonic() - start, limit, jobs))
    for name, why in skipped:
        print("  not run: %s (%s)" % (name, why))
    labels = [("same", "identical"),
              ("static", "identical, but the shim did not load (static, setuid/setgid, or ld.so itself)"),
              ("varies", "differ from run to run without the shim too (not counted)"),
              ("reordered", "the same lines in another order: processes racing for one "
                            "stdout (not counted)"),
              ("bare_hang", "hang without the shim too (not counted)"),
              ("hang", "HANG under the shim only"),
              ("differs", "DIFFER under the shim")]
    for kind, label in labels:
        names = [n for n, _ in by.get(kind, [])]
        print("%5d %s" % (len(names), label))
        if names and kind not in ("same",):
            print("        " + " ".join(names))
    for _, text in by.get("differs", []) + by.get("reordered", []):
        print(text)
    bad = len(by.get("hang", [])) + len(by.get("differs", []))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
