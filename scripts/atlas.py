#!/usr/bin/env python3
"""atlas.py: `make atlas`: every configuration on every Debian kernel the
mirror offers, with one suite's tools held still, in guest instructions
per event, beside the host's own ns; kept in one folder (docs/atlas/ by
default, committed) whose README.md is the report's own output.

    make atlas                                 # the six kernels below, sid's tools, THREADS=1..2
    make atlas ATLAS_KERNELS=trixie,sid        # some kernels only (the others already there stay)
    make atlas ATLAS_KERNELS=+experimental     # one more kernel in an existing atlas
    make atlas ATLAS_FRESH=1                   # measure again what is already there
    python3 scripts/report.py docs/atlas       # the atlas's tables again, from its folders

Each kernel is `make lab LAB=TOOLS:KERNEL` (scripts/lab.py: sid's root
file system, tools and SystemTap, with the kernel and headers of the suite
KERNEL), its folder taken as ATLAS_DIR/TOOLS+KERNEL/ (ATLAS_DIR/sid/ for
sid's own; its logs stay in results/, named in the folder's FROM), with its
`make lab WHERE=1` beside it (the two take turns preparing the kernel's
root file system, the lab first; then the WHERE guest runs beside the
lab's two); a kernel whose folder is there is not measured again
unless ATLAS_FRESH=1, so adding one costs one lab.  The host's own figures
(make run over the same configurations, THREADS=1..2, in ns on the host's
kernel) are ATLAS_DIR/host/, measured where missing (ATLAS_HOST=0: never).
The stamped folders under results/ that the labs and the host run wrote
stay there: nothing measured is lost when the atlas's copy is replaced.

The report (render/atlas.py) writes ATLAS_DIR/README.md: the
configuration x kernel table in instructions with each step between
adjacent kernels named, the host's ns in a column of its own (never a
ratio), the run-to-run spread, the uprobe path and the safety verdict of
each probe site per kernel, and each guest's kernel facts.  Needs what
make lab needs (root, mmdebstrap, qemu, the host's Debian mirror).
"""
import argparse
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import configs  # noqa: E402
import host  # noqa: E402
import kitlock  # noqa: E402
import params  # noqa: E402
import workloads  # noqa: E402
from guest.common import LAB_DIR, LAB_THREADS, LAB_TOP, WHERE_TOP, LabError  # noqa: E402
from guest.suite import (KERNEL_NAME, KERNEL_SUITES, SUITES, folder_name,  # noqa: E402
                         need_host_tools, the_kernels_there)
from host import ROOT, say  # noqa: E402
from render.atlas import ATLAS_FILE, HOST_FOLDER  # noqa: E402
from guest.where import WHERE_CSV  # noqa: E402
from render.where import WHERE_DIR  # noqa: E402

LAB = os.path.join(HERE, "lab.py")
RUN = os.path.join(HERE, "run.py")
REPORT = os.path.join(HERE, "report.py")


def kernels(text):
    """ATLAS_KERNELS: comma-separated Debian suites whose kernels the atlas
    holds; +K,... adds to those of the atlas's own ATLAS_FILE (main())."""
    add = text.startswith("+")
    names = [k for k in text.lstrip("+").split(",")]
    bad = [k for k in names if not re.fullmatch(KERNEL_NAME, k)]
    if not names or bad:
        raise argparse.ArgumentTypeError(
            f"ATLAS_KERNELS '{text}' is not allowed: want a comma-separated list of Debian "
            f"suites of the mirror's (such as {', '.join(KERNEL_SUITES)}), or +SUITE,... to "
            "add to the atlas's own")
    return ("+" if add else "", list(dict.fromkeys(names)))


def tools(text):
    if text not in SUITES:
        raise argparse.ArgumentTypeError(f"ATLAS_TOOLS '{text}' is not allowed: want one of "
                                         f"{', '.join(SUITES)}")
    return text


Param = params.Param
PARAMS = [
    Param("ATLAS_KERNELS", kernels, ("", list(KERNEL_SUITES)), "the Debian suites whose kernels "
          "the atlas holds, comma-separated, oldest first; +SUITE,... adds to the atlas's own",
          ",".join(KERNEL_SUITES)),
    Param("ATLAS_TOOLS", tools, "sid", "the suite whose root file system and tools every kernel "
          "runs under (held still)", "sid"),
    Param("ATLAS_DIR", str, os.path.join(ROOT, "docs", "atlas"), "the atlas's folder",
          "docs/atlas"),
    Param("ATLAS_FRESH", params.flag01("ATLAS_FRESH"), False,
          "1: measure again the kernels (and the host) already in the atlas", "0"),
    Param("ATLAS_WHERE", params.flag01("ATLAS_WHERE"), True,
          "1: where one event's instructions go on each kernel (make lab WHERE=1: QEMU's TCG "
          "plugin, a few configurations), where missing", "1"),
    Param("ATLAS_HOST", params.flag01("ATLAS_HOST"), True,
          "1: the host's own ns beside the kernels (make run THREADS=1..2), where missing", "1"),
    params.BY_NAME["NO_INSTALL"],
    params.BY_NAME["LOCK_WAIT_S"],
]


def parse_args(argv):
    p = params.entry_parser("atlas.py", __doc__, PARAMS, os.path.join(ROOT, "results"))
    a = p.parse_args(argv)
    params.fill(a, PARAMS)
    a.atlas_dir = os.path.abspath(a.atlas_dir)
    return a


def atlas_file(d):
    """The atlas's own facts (ATLAS_FILE): its tools' suite and kernels, {} if none."""
    try:
        with open(os.path.join(d, ATLAS_FILE)) as f:
            got = json.load(f)
        return got if isinstance(got, dict) else {}
    except (OSError, ValueError):
        return {}


def write_atlas_file(d, facts):
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, ATLAS_FILE + ".tmp")
    with open(tmp, "w") as f:
        json.dump(facts, f, indent=1)
        f.write("\n")
    os.replace(tmp, os.path.join(d, ATLAS_FILE))


def lab_configs():
    """The configurations a lab runs by default: every one but those of a
    real program the guests do not hold (workloads.py's in_lab)."""
    return [c.name for c in configs.CONFIGS
            if not c.workload or workloads.get(c.workload).in_lab]


def has_runs(d):
    return os.path.isfile(os.path.join(d, "runs.csv")) and os.path.isfile(
        os.path.join(d, "meta.json"))


def newest(parent, suffix, before, but=None):
    """The folder PARENT/<stamp>SUFFIX made since BEFORE (a set of names),
    not one ending BUT, or None."""
    got = sorted(n for n in os.listdir(parent) if n.endswith(suffix) and n not in before
                 and not (but and n.endswith(but))
                 and not os.path.islink(os.path.join(parent, n))
                 and os.path.isdir(os.path.join(parent, n)))
    return os.path.join(parent, got[-1]) if got else None


def take(src, dst):
    """SRC's folder copied as DST, replacing it only once the copy is whole;
    its logs/ stay in SRC (results/<stamp>...), where the rows' notes point:
    the atlas holds what its report reads, small enough to commit."""
    tmp = dst + ".new"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp, symlinks=True,  # the folder's own report stays with its logs
                    ignore=shutil.ignore_patterns("logs", "report.*", "*.png"))
    with open(os.path.join(tmp, "FROM"), "w") as f:
        f.write(os.path.relpath(src, ROOT) + "\n")  # where the logs are
    if os.path.isdir(dst):
        shutil.rmtree(dst)
    os.replace(tmp, dst)


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


def where_dir(args, name):
    return os.path.join(args.atlas_dir, WHERE_DIR, folder_name(name))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.vars:
        print("\n".join(params.defaults(PARAMS)))
        return 0
    had = atlas_file(args.atlas_dir)
    add, wanted = args.atlas_kernels
    if add:
        wanted = list(dict.fromkeys(had.get("kernels", []) + wanted))
    if had.get("tools") and had["tools"] != args.atlas_tools:
        say(f"atlas: ATLAS_TOOLS '{args.atlas_tools}' is not allowed for {args.atlas_dir}: its "
            f"kernels ran under {had['tools']}'s tools (another ATLAS_DIR for another suite)")
        return 2
    names = [args.atlas_tools if k == args.atlas_tools else f"{args.atlas_tools}:{k}"
             for k in wanted]
    try:  # a kernel the mirror does not have: refused before anything is built
        why = the_kernels_there(names)
    except LabError as e:
        why = str(e)
    if why:
        say(f"atlas: ATLAS_KERNELS '{','.join(wanted)}' is not allowed: {why}")
        return 2
    if os.geteuid() != 0:
        say("atlas: needs root (make lab: mmdebstrap, chroot, module loading in the guest)")
        return 2
    todo = [n for n in names
            if args.atlas_fresh or not has_runs(os.path.join(args.atlas_dir, folder_name(n)))]
    todo_where = [n for n in names if args.atlas_where and (
        args.atlas_fresh or not os.path.exists(os.path.join(where_dir(args, n), WHERE_CSV)))]
    host_dir = os.path.join(args.atlas_dir, HOST_FOLDER)
    want_host = args.atlas_host and (args.atlas_fresh or not has_runs(host_dir))
    with host.stoppable():
        try:
            kitlock.lock("atlas", args.lock_wait_s)  # the lab and the runner below go on under it
            os.makedirs(args.results, exist_ok=True)
            write_atlas_file(args.atlas_dir, {"tools": args.atlas_tools, "kernels": wanted,
                                              "threads": list(LAB_THREADS)})
            say(f"atlas: {len(names)} kernels under {args.atlas_tools}'s tools; to measure: "
                + (", ".join(todo) or "none (their folders are there)")
                + ("; and the host" if want_host else "")
                + (f"; where the instructions go: {', '.join(todo_where)}" if todo_where else ""))
            base = {"NO_INSTALL": "1" if args.no_install else "0"}
            # the labs' builds and tools once, before two labs at once would each
            need_host_tools(args.no_install)  # make them (and apt-get's lock)
            if not host.make_all("atlas"):
                return 1
            # the host first: its ns want a quiet machine, before hours of guests
            ok = [measure_host(args, base, host_dir)] if want_host else []
            for n in [n for n in names if n in todo or n in todo_where]:
                ok += measure_kernel(args, base, n, n in todo, n in todo_where)
            status = 0 if all(ok) else 1
        except LabError as e:
            say(f"atlas: {e}")
            return 1
        except KeyboardInterrupt:
            say("atlas: interrupted; what was measured stays in results/ "
                f"and the kernels already taken in {args.atlas_dir}")
            return 130
    rc = subprocess.run([sys.executable, REPORT, args.atlas_dir]).returncode  # (its plot:
    # report.py runs itself again under a python3 with matplotlib where this one has none)
    say(f"atlas: {os.path.relpath(args.atlas_dir, ROOT)}/README.md, from its folders "
        f"({time.strftime('%H:%M:%S')})")
    return status or rc


if __name__ == "__main__":
    sys.exit(main())
