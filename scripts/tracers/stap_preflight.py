"""stap_preflight.py: what SystemTap's module runtime can do on a kernel,
asked before anything is attached: stap's version, a pass-4 build of a
one-probe module for the kernel's build tree (the pre-flight, cached in
build/stap-preflight.json by SystemTap version and kernel), the compiler's
first error said in one line with the fix upstream has for it, and stap
run on a pseudo-terminal (a module with a hit report: stap_counts.py
says why).
The host's back-end (stap.py) and the lab's module builds
(stap_build.py) both ask it.

Nothing to run: `from tracers import stap_preflight`.
"""
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time

import host
from .base import LOG_TAIL, LONG_TIMEOUT_S, TOOL_TIMEOUT_S

ROOT = host.ROOT
PREFLIGHT_CACHE = os.path.join(ROOT, "build", "stap-preflight.json")
TARGET = "build/benchmark-sdt"  # what the scripts in stp/ probe
# The mark probe's handler must do something: an empty probe is elided,
# and with it the uprobes runtime whose compilation fails on some kernels.
CANNOT = "cannot build modules for kernel"  # the pre-flight's answer when the compiler said no
PREFLIGHT_SCRIPT = ('global kit_n probe begin { exit() } '
                    'probe process("%s").mark("single_trace") { kit_n <<< 1 }')


def stap_version(prefix=()):
    """`stap --version`'s version, e.g. '4.8/0.188', or None."""
    try:
        out = host.run([*prefix, "stap", "--version"], timeout=TOOL_TIMEOUT_S)[1]
    except (OSError, host.Timeout):
        return None
    m = re.search(r"version ([\w.]+/[\w.]+)", out)
    return m.group(1) if m else None


def first_error(out):
    """The first line that says what failed in stap -p4's output: the
    compiler's first `error:`, else make's `***`, else stap's `Pass N:
    ... failed`, else its last line that is not a tip or a warning."""
    # ("while resolving probe point" only says where; the next error says why)
    lines = [ln.strip() for ln in out.splitlines()
             if ln.strip() and "while resolving probe point" not in ln]
    for pattern in (r"\b(fatal )?error: ", r"^make(\[\d+\])?: \*\*\*", r"^Pass \d+: .*failed"):
        for ln in lines:
            if re.search(pattern, ln):
                return re.sub(r"^/tmp/\S+?/", "", ln)  # a temporary folder's path says nothing
    rest = [ln for ln in lines if not ln.startswith(("Tip:", "WARNING:"))]
    return (rest or lines or ["no output"])[-1]


# The pre-flight errors known here, each with the SystemTap release whose
# runtime builds there (make lab measured both: bookworm's 6.1 with
# SystemTap 4.8, trixie's 6.12 with 5.1; sid's 5.6 builds for 7.2).
KNOWN_ERRORS = (
    ("kallsyms_task_work_cancel", "5.2",
     "a64dc4e2e: the kernel's task_work_cancel_func rename, which Debian's 6.1 has through "
     "the stable backport 861f20039d64"),
    ("uprobe_unregister' undeclared", "5.2", "b1d109410, PR32194: Linux 6.12's uprobe API"),
)


def on_a_tty(cmd, log, timeout, cwd=None):
    """Runs CMD with stdout and stderr on a pseudo-terminal, its output
    appended to LOG: stap builds a module's hit report only where its
    stdout is a terminal.  Returns (exit status, output); a command still
    running at TIMEOUT seconds is killed (status None).  Stopped while it
    waits (Ctrl-C, a signal): SIGTERM to CMD's process group, SIGKILL
    after TOOL_GRACE_S, and the stop goes on (CMD is in a session of its
    own, which no terminal's signal reaches)."""
    master, slave = pty.openpty()
    try:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                             cwd=cwd, start_new_session=True)
    finally:
        os.close(slave)
    with host.tracked(p):
        return _read(p, cmd, master, log, timeout)


def _read(p, cmd, master, log, timeout):
    """on_a_tty's wait for P, reading its terminal MASTER."""
    out, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 1)[0]:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: every writer has closed the terminal
                    data = b""
                if not data:
                    break
                out.append(data)
        else:  # its process group: chroot, sh, stap and its compilers
            os.killpg(p.pid, signal.SIGKILL)
    except BaseException:  # stopped: its process group too
        host.stop(p, True, host.TOOL_GRACE_S)
        raise
    finally:
        os.close(master)
        rc = p.wait()
    text = b"".join(out).decode(errors="replace").replace("\r\n", "\n")
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + " (on a terminal)\n" + text[-LOG_TAIL:])
    return (None if time.monotonic() >= deadline else rc), text


def known_fix(error):
    """' (fixed in SystemTap R: why)' where the pre-flight's ERROR is one
    KNOWN_ERRORS names, else ''."""
    for text, release, why in KNOWN_ERRORS:
        if text in (error or ""):
            return f" (fixed in SystemTap {release}, {why})"
    return ""


def preflight(tree, release, prefix=(), workdir=None, target=None, cache=True):
    """None if SystemTap builds a module for kernel RELEASE from build
    tree TREE, else the line saying why not.  PREFIX runs stap elsewhere
    (["chroot", ROOTFS] in `make lab`; TREE, WORKDIR and TARGET are then
    paths inside it, and WORKDIR, where pass 4 writes its module, is the
    caller's to remove).  Cached per (release, SystemTap version, tree).
    A known error names the release that fixes it (known_fix)."""
    ver = stap_version(prefix) or "?"
    key = f"{release} {ver} {tree} {' '.join(prefix)}"
    known = {}
    if cache and os.path.exists(PREFLIGHT_CACHE):
        with open(PREFLIGHT_CACHE) as f:
            known = json.load(f)
        if key in known:
            return known[key] and known[key] + known_fix(known[key])
    own = workdir is None
    if own:
        os.makedirs(os.path.join(ROOT, "build"), exist_ok=True)
        workdir = tempfile.mkdtemp(prefix="stap-preflight-", dir=os.path.join(ROOT, "build"))
    script = PREFLIGHT_SCRIPT % (target or os.path.join(ROOT, TARGET))
    cmd = [*prefix, "sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", workdir,
           "stap", "-p4", "-r", tree, "-m", "kit_preflight", "-e", script]
    try:
        code, out = host.run(cmd, timeout=LONG_TIMEOUT_S)
        why = None if code == 0 else (
            f"SystemTap {ver} {CANNOT} {release}: {first_error(out)}")
    except host.Timeout:
        why = f"SystemTap {ver} did not build a module for kernel {release} in {LONG_TIMEOUT_S} s"
    finally:
        if own:
            shutil.rmtree(workdir, ignore_errors=True)
    if cache:
        known[key] = why
        host.write_json(PREFLIGHT_CACHE, known, indent=1)
    return why and why + known_fix(why)
