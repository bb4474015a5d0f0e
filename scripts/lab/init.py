"""lab/init.py: the guests' init scripts, written into the kit before
its drive's image is made: a guest's (/kit/kit-init.sh, or
kit-init-K.sh for the Kth of several: mount what the kit needs, run the
kit's runner over the guest's configurations, list any module left,
power off) and make lab-shell's (/kit/kit-shell.sh); and the first init
of a suite's base image (/kit-boot.sh: the kit's drive mounted, then
the init the lab names).  Each is a template beside this file (init.sh,
init-shell.sh, both with init-mounts.sh's lines; init-boot.sh), filled
with string.Template's substitution under the delimiter @ (the shell
keeps its own $).

Nothing to run: lab/steps.py calls it.
"""
import os
import string

from lifecycle import inputs as lifecycle_inputs
from record import where
from .common import BOOT_SAYS, GUEST_KIT, INIT_ARG, KIT_DRIVE, TIMINGS
from .qemu import DONE, USERSPACE

HERE = os.path.dirname(os.path.abspath(__file__))
SHELL_INIT = f"{GUEST_KIT}/kit-shell.sh"
LAB_RUNS = 3  # runs of each cell in a QUICK guest, of QUICK_ITER calls
QUICK_ITER = 20000
# WHERE=1: a window of WHERE_ITER calls (some 30M instructions traced, a few
# timer ticks), WHERE_RUNS of them a cell, at WHERE_THREADS
WHERE_ITER, WHERE_RUNS = 20000, 2
# what a WHERE=1 guest keeps for lab/where.py: its kernel's symbols, read
# before the runs (the same boot: the same KASLR offsets; a guest stopped
# at its time limit keeps them with the windows it finished)
WHERE_BEFORE = f"cat /proc/kallsyms > {GUEST_KIT}/results/{where.KALLSYMS}"
# The guest runner's sizing, where not QUICK (its own PARAMS, in the guest's
# clock, where 1 s is 1e9 instructions): a traced run cut to ~20M
# instructions, an untraced one 1M calls (its tick adds ~0.003 a call),
# and each cell run until its overhead's 95% interval is within 1% or
# 0.05 instruction, from 2 runs (two runs that agree within ~0.15% reach
# it: the unit is deterministic to a tick) to 5.  A run's cost is mostly
# the tracer's start under TCG (bpftrace's ~5-10 s), so fewer runs is
# what makes a lab short (so no PILOT_S: a guest's cell stops on Welch's
# width, stats.on_width, not on a pilot).
GUEST_SIZING = {"iter": 1000000, "max_run_s": 0.02, "min_run_s": 0.005, "precision": 0.01,
                "precision_ns": 0.05, "min_runs": 2, "max_runs": 5, "pilot_s": 0}


# make lifecycle's inputs the guest sets itself (with --unit, its clock; alone in it, no
# other kit to wait for), not the lab's variables
LC_OWN = ("NO_INSTALL", "LOCK_WAIT_S")


class Template(string.Template):
    delimiter = "@"  # $ is the shell's


def template(name):
    """The template NAME beside this file, its own notes (## lines) dropped."""
    with open(os.path.join(HERE, name)) as f:
        return "".join(ln for ln in f if not ln.startswith("##"))


def fill(name, **names):
    """Template NAME with NAMES, the guest's mounts and the lab's markers."""
    mounts = template("init-mounts.sh").rstrip("\n")
    return Template(template(name)).substitute(mounts=mounts, userspace=USERSPACE, done=DONE,
                                               kit=GUEST_KIT, **names)


def runner(suite, guest):
    """The guest's runner: run.py over GUEST's configurations, sized as the
    lab sizes them, its timings the suite's own for the guest's UNIT."""
    cfgs = ",".join(c.name for c in guest.cfgs)
    # QUICK: 3 runs a cell of ITER=20000.  Else each cell is sized by
    # the interval it reaches (GUEST_SIZING): under -icount the runs
    # differ only by the interrupts that land in them.
    size = (["--quick", "1", "--iter", str(WHERE_ITER), "--runs", str(WHERE_RUNS)]
            if suite.args.where else
            ["--quick", "1", "--iter", str(QUICK_ITER), "--runs", str(LAB_RUNS)]
            if suite.args.quick else
            [x for k, v in GUEST_SIZING.items() for x in (f"--{k.replace('_', '-')}", str(v))])
    return " ".join(["python3", "scripts/run.py", "--configs", cfgs, "--threads",
                     ",".join(map(str, suite.threads)), *size, "--no-install", "1", "--no-report",
                     *(["--miss", str(suite.args.miss)] if suite.args.miss else []),
                     *(["--stap-timing", "1"] if suite.args.stap_timing else []),
                     "--timings", '"{}/results/{}"'.format(GUEST_KIT, TIMINGS.format("$UNIT")),
                     "--results", f"{GUEST_KIT}/results"])


def lifecycle_runner(suite):
    """The guest's make lifecycle (LIFECYCLE=1): scripts/lifecycle with
    the lab's values of its inputs, the guest's clock as its UNIT."""
    def text(v):
        return ",".join(map(str, v)) if isinstance(v, list) else str(v)
    flags = [x for p in lifecycle_inputs.PARAMS if p.name not in LC_OWN
             for x in (p.flag, text(getattr(suite.args, p.dest)))]
    return " ".join(["python3", "scripts/lifecycle", *flags, "--no-install", "1",
                     "--unit", '"$UNIT"', "--no-report", "--results", f"{GUEST_KIT}/results",
                     "--lab-modules", f"{GUEST_KIT}/build/lab-modules"])


def init_script(suite, guest):
    """GUEST's init (/kit/kit-init.sh, or kit-init-K.sh for the Kth of
    several): mount what the kit needs, run the runner over the guest's
    configurations, list any module left, power off."""
    run = lifecycle_runner(suite) if suite.args.lifecycle else runner(suite, guest)
    before = WHERE_BEFORE if suite.args.where else ":"
    write_init(suite, guest.init, fill("init.sh", runtime=suite.runtime, run=run, before=before))


def shell_script(suite):
    write_init(suite, SHELL_INIT, fill("init-shell.sh"))


def boot_script():
    """The base image's first init (BOOT_INIT's text): the kit's drive
    mounted, then the init named on the kernel's command line."""
    return fill("init-boot.sh", drive=KIT_DRIVE, init_arg=INIT_ARG, says=BOOT_SAYS)


def write_init(suite, name, body):
    path = os.path.join(suite.rootfs, name.lstrip("/"))
    with open(path, "w") as f:
        f.write(body)
    os.chmod(path, 0o755)
