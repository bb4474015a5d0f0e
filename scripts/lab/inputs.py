"""lab/inputs.py: make lab's inputs, each range-checked (params.Param),
the runner's own where they mean the same (NO_INSTALL, MISS, STAP_TIMING)
and make lifecycle's for LIFECYCLE=1 with the guests' own defaults; the
combinations WHERE=1 and LIFECYCLE=1 refuse.

Nothing to run: scripts/lab's wing.
"""
import argparse
import dataclasses
import os
import re

import params
import workloads
from lifecycle import inputs as lifecycle_inputs
from host import ROOT
from tracers import BACKENDS
from .init import LAB_RUNS, LC_OWN, QUICK_ITER, WHERE_ITER, WHERE_RUNS
from .qemu import GUEST_S
from .shares import AUTO_GUESTS, MAX_GUESTS
from .suite import KERNEL_NAME, KERNEL_SUITES, QUICK_CONFIGS, SUITES, WHERE_CONFIGS, split


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
             for p in lifecycle_inputs.PARAMS if p.name not in LC_OWN]
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


def parse_args(argv, doc):
    p = params.entry_parser("lab.py", doc, PARAMS, os.path.join(ROOT, "results"))
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
