#!/usr/bin/env python3
"""lab.py: `make lab`: every configuration in throwaway guests whose
kernels load modules (SystemTap's module runtime for real, beside every
other tracer), on one or several Debian kernels, with the rows brought
back into ordinary results folders.

    make lab                       # LAB=sid: Debian unstable's kernel, every configuration
    make lab LAB=sid,trixie,bookworm   # one table, configuration x kernel (summary.md)
    make lab LAB=sid:trixie-backports  # sid's tools on trixie-backports' kernel
    make lab QUICK=1               # what CI runs: sid, baseline, stap-mark, stap-mark-alibi
    make lab LAB_CONFIGS='site-*-ftrace'   # some configurations only
    make lab STAP_RUNTIME=bpf      # SystemTap's BPF runtime on the guest's kernel
    make lab LIFECYCLE=1 LAB=sid,trixie,bookworm   # make lifecycle in each guest
    make lab-shell                 # a shell in the guest, the kit in /kit

Per suite, cached under build/lab/SUITE/ (`make clean` removes it):
1. a root file system made by mmdebstrap from the host's own Debian mirror
   (the kernel and its headers, every tracer back-end's tools, the builds'
   runtimes, gcc, make, python3: guest/suite.py's packages());
2. the pre-flight in a chroot of it: `stap -p4` of a trivial script with a
   process.mark probe against the guest kernel's headers.  Where that
   fails the suite's rows are skipped with the compiler's first error;
3. each SystemTap configuration's module, built in the chroot at the
   host's speed (`stap -p4 -m kit_CONFIG`, with the kit's flags), kept in
   build/lab/SUITE/modules/ until its script, flags, target or kernel change;
4. an ext4 image of it (mkfs.ext4 -d: no loop device, no mount), booted
   with qemu: KVM where it reaches userspace within BOOT_S, else TCG
   (detected, not assumed, and remembered in build/lab/kvm.json: on this
   kind of machine the guest never gets past the BIOS), where under
   -icount LAB_GUESTS guests run at once, each on its own copy of the
   image with a share of the configurations (guest/shares.py);
5. in the guest, the kit's own runner over every configuration (each
   tool installed in the root file system as `make run` installs it on a
   host), SystemTap on the module runtime (STAP_RUNTIME=module, the
   default) loading the modules with `staprun -L` (flight recorder),
   counting from procfs, unloading with `staprun -d`; then the guest lists
   any module left and powers off;
6. the guests' results folders copied out of the images with debugfs into
   one, results/<stamp>-lab/SUITE/ (WHERE=1: <stamp>-where-lab/), with the
   lab's facts in meta.json "lab".

Two labs of one suite may run at once (make atlas: a kernel's lab and its
WHERE=1 lab): they take turns with the suite's root file system until
their images are made (Suite.hold), then their guests run side by side.

Under TCG wall time means nothing, so by default (ICOUNT=1) the guest
runs with QEMU's `-icount shift=0,sleep=off,align=off` on one vCPU: its
clock then advances exactly 1 ns per guest instruction, the target's own
timing counts instructions, and the rows say so (unit `instructions`): a
second unit beside the host's ns, deterministic, never mixed with it.
ICOUNT=0 is plain TCG, whose folder shows counts and statuses only; under
KVM the guest's times are real ns.  Needs root, mmdebstrap, qemu,
e2fsprogs (installed as `make run` installs, unless NO_INSTALL=1), about
2 GB of disk per suite, and the host's Debian mirror.  Nothing is left
running or mounted, whatever happens.

This file is the door: the lab's inputs (PARAMS) and main(); the rooms
are in scripts/guest/ (suite.py: a suite's root file system and images;
modules.py: SystemTap in its chroot, through tracers/stap_build.py;
init.py: the guests' init scripts, from the templates init.sh and
init-shell.sh; qemu.py: booting and watching the guests, the KVM verdict;
shares.py: configurations dealt to guests; merge.py: their folders made
one; steps.py: one suite, step by step), and the top folder's summary.md
is written by scripts/report.py (render/guest.py; with LIFECYCLE=1, where
each guest runs scripts/lifecycle.py instead of the runner, one guest a
suite, render/lifecycle.py).
"""
import argparse
import dataclasses
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import host  # noqa: E402
import kitlock  # noqa: E402
import lifecycle  # noqa: E402
import params  # noqa: E402
import workloads  # noqa: E402
from host import ROOT, say  # noqa: E402
from guest.common import LAB_DIR, LAB_TOP, WHERE_TOP, LabError  # noqa: E402
from guest.init import LAB_RUNS, LC_OWN, QUICK_ITER, WHERE_ITER, WHERE_RUNS  # noqa: E402
from guest.qemu import GUEST_S  # noqa: E402
from guest.shares import AUTO_GUESTS, MAX_GUESTS  # noqa: E402
from guest.steps import run_suite  # noqa: E402
from guest.where import WHERE_CSV  # noqa: E402
from guest.suite import (KERNEL_NAME, KERNEL_SUITES, QUICK_CONFIGS, SUITES,  # noqa: E402
                         WHERE_CONFIGS, need_host_tools, split, the_kernels_there)
from tracers import BACKENDS  # noqa: E402

REPORT = os.path.join(HERE, "report.py")


def lab_configs(text):
    """LAB_CONFIGS: as CONFIGS, or '' for the default; a real program the
    guests do not hold (workloads.py's in_lab) is refused, named."""
    got = params.parse_configs(text, "LAB_CONFIGS") if text.strip() else []
    out = [c.name for c in got if c.workload and not workloads.get(c.workload).in_lab]
    if out:
        raise argparse.ArgumentTypeError(
            f"LAB_CONFIGS '{text}' is not allowed: {', '.join(out)} run a program the "
            "guests' root file system does not hold (make run runs them on the host)")
    return got


def lab_guests(text):
    """LAB_GUESTS: auto (0 here), or 1..MAX_GUESTS."""
    if text == "auto":
        return 0
    if not re.fullmatch(r"\d+", text) or not 1 <= int(text) <= MAX_GUESTS:
        raise argparse.ArgumentTypeError(f"LAB_GUESTS '{text}' is not allowed: want auto or a "
                                         f"whole number in 1..{MAX_GUESTS}")
    return int(text)


def suites(text):
    """LAB: comma-separated, each SUITE (one of SUITES: its root file system,
    tools and kernel) or SUITE:KERNEL (that suite's with the kernel of the
    Debian suite KERNEL, whose presence in the mirror main() checks)."""
    names = []
    for item in text.split(","):
        userland, kernel = split(item)
        if userland not in SUITES or not re.fullmatch(KERNEL_NAME, kernel):
            raise argparse.ArgumentTypeError(
                f"LAB '{text}' is not allowed: want a comma-separated list of SUITE or "
                f"SUITE:KERNEL, SUITE one of {', '.join(SUITES)}, KERNEL a Debian suite of the "
                f"mirror's (such as {', '.join(KERNEL_SUITES)})")
        names.append(userland if kernel == userland else f"{userland}:{kernel}")
    return list(dict.fromkeys(names))


def stap_param(name):
    """The SystemTap back-end's own input NAME (its params())."""
    return next(p for p in BACKENDS["stap"].params() if p.name == name)


Param = params.Param
# make lab LIFECYCLE=1: make lifecycle's own inputs, but for the guests' own
# defaults.  Under TCG a guest's clock runs some 5-10 times slower than the
# host's (bpftrace's start: ~2.7 guest s, ~18 s here), so its sweep stops at
# 100 sites and 10 processes, and a cell has at most 3 counted cycles in
# 10 s of the guest's clock ([min, max] then, its coverage said).
LC_GUEST = {"PROBES": ([1, 10, 100], "1,10,100"), "PROCS": ([1, 10], "1,10"),
            "REPEATS": (3, "3"), "CELL_S": (10.0, "10"), "BY_CALLS": (20000, "20000")}
LC_PARAMS = [dataclasses.replace(p, help=p.help + " (LIFECYCLE=1)",
                                 **(dict(zip(("default", "shown"), LC_GUEST[p.name]))
                                    if p.name in LC_GUEST else {}))
             for p in lifecycle.PARAMS if p.name not in LC_OWN]
# The lab's inputs, each in one place (params.Param), the runner's own
# where they mean the same (NO_INSTALL, MISS, STAP_TIMING).
PARAMS = [
    Param("LAB", suites, ["sid"], "Debian suites to boot, comma-separated; SUITE:KERNEL is "
          "SUITE's tools on the kernel of the suite KERNEL (sid:trixie-backports)", "sid"),
    Param("QUICK", params.flag01("QUICK"), False, "1: sid's " + ", ".join(QUICK_CONFIGS)
          + f", ITER={QUICK_ITER}, {LAB_RUNS} runs a cell", "0"),
    params.BY_NAME["NO_INSTALL"],
    params.BY_NAME["LOCK_WAIT_S"],
    Param("LAB_CONFIGS", lab_configs, [], "configurations to run in the guest, names or "
          "patterns (the SystemTap ones need modules, built beforehand; others, such as "
          "site-*-ftrace, run as on the host)", "every configuration (QUICK: "
          + ", ".join(QUICK_CONFIGS) + ")"),
    params.BY_NAME["MISS"],
    Param("ICOUNT", params.flag01("ICOUNT"), True,
          "1: under TCG the guest counts instructions (QEMU -icount shift=0, one vCPU), and "
          "the rows' unit is instructions; 0: plain TCG, counts and statuses only", "1"),
    stap_param("STAP_TIMING"),
    # the stap back-end's own row, but the lab is there for the module runtime
    dataclasses.replace(stap_param("STAP_RUNTIME"),
                        default="module", help="SystemTap's runtime in the guest: module (its "
                        "modules built beforehand in the chroot, where the pre-flight passes), "
                        "bpf (compiled in the guest at each run, as on the host), or auto: "
                        "module where the pre-flight passes, else bpf"),
    Param("LAB_GUESTS", lab_guests, 0, "guests that share a suite's configurations and run "
          "at once under TCG with ICOUNT=1, one host CPU each (the count does not depend on "
          "the host's load); auto: the host's CPUs, at most "
          f"{AUTO_GUESTS}, as many as its free memory holds; one under KVM or ICOUNT=0, whose "
          "times need the host to themselves", "auto"),
    Param("ACCEL", params.one_of("ACCEL", "auto", "kvm", "tcg"), "auto",
          "auto: KVM if the guest reaches userspace with it, else TCG"),
    Param("LAB_TIME_LIMIT", params.seconds_in("LAB_TIME_LIMIT", 0, 86400), 0,
          f"seconds a guest may run, boot to power-off, before it is killed (0: "
          f"{GUEST_S['quick']} with QUICK, else {GUEST_S['full']})", "0"),
    Param("WHERE", params.flag01("WHERE"), False,
          "1: where one event's instructions go: QEMU's TCG plugin (src/plugin/where.c, built "
          "against Debian's qemu source package's header) counts the guest kernel's "
          "instructions by function inside the target's timed loop, for "
          + ", ".join(WHERE_CONFIGS) + f" (or LAB_CONFIGS and their baselines), one thread, "
          f"{WHERE_RUNS} runs of ITER={WHERE_ITER}, one guest a suite (where.csv)", "0"),
    Param("LIFECYCLE", params.flag01("LIFECYCLE"), False,
          "1: make lifecycle in each suite's guest instead of the configurations (attach, "
          "detach and the bystanders, in the guest's clock), with the variables below", "0"),
    *LC_PARAMS,
]


def parse_args(argv):
    p = params.entry_parser("lab.py", __doc__, PARAMS, os.path.join(ROOT, "results"))
    p.add_argument("--shell", action="store_true", help="a shell in the guest (make lab-shell)")
    a = p.parse_args(argv)
    lc_given = [x.name for x in LC_PARAMS if getattr(a, x.dest) is not None]
    params.fill(a, PARAMS)
    if lc_given and not a.lifecycle:
        p.error(f"{lc_given[0]} is make lifecycle's: it is allowed with LIFECYCLE=1 only")
    if a.where:  # the plugin counts one guest's one window at a time, in instructions
        clash = [name for name, given in (
            ("QUICK=1", a.quick), ("LIFECYCLE=1", a.lifecycle), ("ICOUNT=0", not a.icount),
            ("ACCEL=kvm", a.accel == "kvm"), ("MISS", a.miss),
            (f"LAB_GUESTS={a.lab_guests}", a.lab_guests not in (0, 1)),
            ("LAB_CONFIGS naming a real program", any(c.workload for c in a.lab_configs)))
            if given]
        if clash:
            p.error(f"WHERE=1 is not allowed with {clash[0]}: the plugin counts instructions "
                    "(TCG, -icount) in one guest a suite, the kit's own target (whose marks open "
                    "its windows) at one thread")
        a.lab_guests, a.accel = 1, "tcg"  # never KVM, which loads no plugin
    if a.lifecycle:  # what LIFECYCLE=1 has no use for is refused, not ignored
        clash = [name for name, given in (
            ("QUICK=1", a.quick), ("LAB_CONFIGS", a.lab_configs), ("MISS", a.miss),
            ("STAP_TIMING=1", a.stap_timing), ("LAB_GUESTS", a.lab_guests),
            ("ICOUNT=0", not a.icount), (f"STAP_RUNTIME={a.stap_runtime}",
                                         a.stap_runtime != "module")) if given]
        if clash:
            p.error(f"LIFECYCLE=1 is not allowed with {clash[0]}: make lifecycle runs its own "
                    "sweep (PROBES, PROCS, TRACERS) in one guest a suite, its SystemTap way "
                    "on the module built beforehand")
    return a


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.vars:
        print("\n".join(params.defaults(PARAMS)))
        return 0
    try:  # a kernel the mirror does not have: refused before anything is built
        why = the_kernels_there(args.lab)
    except LabError as e:
        why = str(e)
    if why:
        say(f"lab: LAB '{','.join(args.lab)}' is not allowed: {why}")
        return 2
    if os.geteuid() != 0:
        say("lab: needs root (mmdebstrap, chroot, module loading in the guest)")
        return 2
    # SIGINT, SIGTERM and SIGHUP alike (host.STOPS): host.Interrupted is a
    # KeyboardInterrupt, so every Ctrl-C path below takes it; only the
    # first stops the lab, and a deferred step (apt-get) ends first.
    folders = []
    with host.stoppable():
        try:
            kitlock.lock("lab", args.lock_wait_s)  # one kit at a time (make atlas's two labs of a kernel: under its lock)
            need_host_tools(args.no_install)
            if not host.make_all("lab"):
                return 1
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            end = WHERE_TOP if args.where else LAB_TOP
            top = os.path.join(args.results, stamp + end)
            os.makedirs(LAB_DIR, exist_ok=True)
            log = os.path.join(LAB_DIR, f"lab-{stamp}{end.removesuffix(LAB_TOP)}.log")
            state = {}
            for name in args.lab:
                d = run_suite(name, args, top, log, state)
                if d:
                    folders.append(d)
        except KeyboardInterrupt:
            say("lab: interrupted; the guest is stopped and nothing is left mounted")
            return 130
    if args.shell:
        return 0
    # The report writes and prints the top folder's summary.md (it draws no
    # plots there, so it is not re-run under another interpreter: its
    # REEXEC), then each suite's report.md.
    subprocess.run([sys.executable, REPORT, top], env=dict(os.environ, KIT_REPORT_REEXEC="1"))
    say(f"lab: results in {os.path.relpath(top, ROOT)}/ (one folder per suite, summary.md)")
    for d in folders:
        subprocess.run([sys.executable, REPORT, d], stdout=subprocess.DEVNULL)
    if args.where and not all(os.path.exists(os.path.join(d, WHERE_CSV)) for d in folders):
        return 1  # its reason is in the folder's meta.json "lab" "where", said above
    return 0


if __name__ == "__main__":
    sys.exit(main())
