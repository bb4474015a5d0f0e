"""atlas/kits.py: the kit's own commands the atlas starts under its
lock: the host's make run and each kernel's make lab (and its WHERE=1 lab
beside it, the two taking turns with the root file system), each told of
a stop and waited for, so their own stop paths clean up.

Nothing to run: scripts/atlas's wing.
"""
import functools
import os
import signal
import subprocess
import sys
import time

import host
from lab.common import LAB_DIR, LAB_THREADS, LAB_TOP, WHERE_TOP
from lab.suite import folder_name
from record.where import WHERE_CSV
from host import ROOT, say
from .folders import has_runs, lab_configs, newest, take, where_dir

LAB = os.path.join(ROOT, "scripts", "lab")
RUN = os.path.join(ROOT, "scripts", "run.py")


def start_kit(cmd, env):
    return subprocess.Popen([sys.executable, *cmd], env=dict(os.environ, **env))


def wait_kits(procs, between=None):
    """The exit statuses of the kit's children PROCS (lab.py, run.py: a
    list of functions, each starting one), under this one's lock;
    BETWEEN(proc) waits after each started but the last.
    Stopped (Ctrl-C, SIGTERM, SIGHUP), each child is told as well and
    waited for: its own stop paths unmount, power off and remove what it
    started (subprocess.run would SIGKILL it, leaving mmdebstrap's mounts)."""
    started = []
    try:
        for k, p in enumerate(procs):
            started.append(p())
            if between and k < len(procs) - 1:
                between(started[-1])
        return [p.wait() for p in started]
    except BaseException:  # Ctrl-C, or anything else: no lab is left unwatched
        with host.deferred():
            for p in started:
                if p.poll() is None:
                    p.send_signal(signal.SIGINT)  # a second one a group's Ctrl-C sent is ignored
            for p in started:
                p.wait()
        raise


def held_by(slug, proc, timeout=120):
    """Waits until a lab of suite SLUG holds its root file system's lock
    (guest/suite.Suite.hold), PROC has ended, or TIMEOUT s have passed:
    so the lab started first prepares first."""
    path = os.path.join(LAB_DIR, f"{slug}.lock")
    t0 = time.monotonic()
    while proc.poll() is None and time.monotonic() - t0 < timeout and not locked(path):
        time.sleep(0.5)


def locked(path):
    """Someone holds a flock on PATH, read from /proc/locks (asking by
    taking one would make the lab that wants it wait)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    # "1: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF" (a waiter's line has
    # "->" in w[1]); by inode alone: btrfs and overlayfs show stat another device
    with open("/proc/locks") as f:
        return any(len(w) > 5 and w[1] == "FLOCK" and w[5].rsplit(":", 1)[-1] == str(st.st_ino)
                   for w in (ln.split() for ln in f))


def measure_host(args, base, host_dir):
    """The host's make run over the lab's configurations, THREADS=1..2, in
    ns, taken as HOST_DIR; False if it wrote no folder."""
    before = set(os.listdir(args.results))
    rc, = wait_kits([functools.partial(start_kit, [RUN, "--results", args.results, "--no-report"],
                                       dict(base, THREADS=",".join(map(str, LAB_THREADS)),
                                            CONFIGS=",".join(lab_configs())))])
    d = newest(args.results, "", before)
    if d and has_runs(d):
        take(d, host_dir)
        return True
    say(f"atlas: the host's make run wrote no folder (it exited {rc})")
    return False


def measure_kernel(args, base, name, main=True, where=False):
    """One kernel: make lab LAB=NAME (MAIN), its folder taken into the
    atlas (one lab a kernel, so a stop keeps the kernels done), and WHERE:
    make lab WHERE=1's, taken as ATLAS_DIR/where/NAME/, at the same time
    (they take turns preparing, the lab first, whose guests are the most
    of the time; then the WHERE guest runs beside its two: a guest's
    instructions do not depend on the host's load); False for each that
    wrote no folder."""
    before = set(os.listdir(args.results))
    jobs = ([("", LAB_TOP, os.path.join(args.atlas_dir, folder_name(name)), {})] if main
            else []) + ([("WHERE=1", WHERE_TOP, where_dir(args, name), dict(WHERE="1"))]
                        if where else [])
    rcs = wait_kits([functools.partial(start_kit, [LAB, "--results", args.results],
                                       dict(base, LAB=name, **env)) for *_, env in jobs],
                    between=lambda p: held_by(folder_name(name), p))
    ok = []
    for (what, end, dst, _), rc in zip(jobs, rcs):
        top = newest(args.results, end, before, WHERE_TOP if end != WHERE_TOP else None)
        d = top and os.path.join(top, folder_name(name))
        if d and has_runs(d) and (not what or os.path.exists(os.path.join(d, WHERE_CSV))):
            take(d, dst)
            ok.append(True)
            continue
        say(f"atlas: {name}: the lab{f' ({what})' if what else ''} wrote no folder"
            f"{' with where.csv' if what else ''} (make lab exited {rc})")
        ok.append(False)
    return ok
