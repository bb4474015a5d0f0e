#!/usr/bin/env python3
"""lab.py: `make lab`: every configuration in throwaway guests whose
kernels load modules (SystemTap's module runtime for real, beside every
other tracer), on one or several Debian kernels, with the rows brought
back into ordinary results folders.

    make lab                       # LAB=sid: Debian unstable's kernel, every configuration
    make lab LAB=sid,trixie,bookworm   # one table, configuration x kernel (summary.md)
    make lab QUICK=1               # what CI runs: sid, baseline, stap-mark, stap-mark-alibi
    make lab LAB_CONFIGS='site-*-ftrace'   # some configurations only
    make lab STAP_RUNTIME=bpf      # SystemTap's BPF runtime on the guest's kernel
    make lab-shell                 # a shell in the guest, the kit in /kit

Per suite, cached under build/lab/SUITE/ (`make clean` removes it):
1. a root file system made by mmdebstrap from the host's own Debian mirror
   (the kernel and its headers, every tracer back-end's tools, the builds'
   runtimes, gcc, make, python3: packages());
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
   image with a share of the configurations (shares());
5. in the guest, the kit's own runner over every configuration (each
   tool installed in the root file system as `make run` installs it on a
   host), SystemTap on the module runtime (STAP_RUNTIME=module, the
   default) loading the modules with `staprun -L` (flight recorder),
   counting from procfs, unloading with `staprun -d`; then the guest lists
   any module left and powers off;
6. the guests' results folders copied out of the images with debugfs into
   one, results/<stamp>-lab/SUITE/, with the lab's facts in meta.json "lab".

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
"""
import argparse
import csv
import dataclasses
import glob
import hashlib
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import configs  # noqa: E402
import host  # noqa: E402
from host import ROOT  # noqa: E402
import params  # noqa: E402
from measure import plan  # noqa: E402
import record  # noqa: E402
import stats  # noqa: E402
from render import tables  # noqa: E402
from tracers import BACKENDS, stap  # noqa: E402
from host import say  # noqa: E402

LAB_DIR = os.path.join(ROOT, "build", "lab")
# A suite's guest timings, one file a unit (the runner's --timings; kept
# in LAB_DIR/SUITE between labs, carried into and out of each guest).
TIMINGS = "timings-{}.json"
GUEST_KIT = "/kit"
# The guest's own: a kernel to boot and its headers (SystemTap's modules),
# what stap compiles with, what the runner and the init script use.
GUEST_BASE = ["linux-image-amd64", "linux-headers-amd64", "gcc", "make", "python3", "procps",
              "kmod", "mount"]


def packages():
    """What a guest's root file system holds: its own base, every tracer
    back-end's programs (each back-end's `needs`) and the runtime of every
    build the host made (`make packages`), so that every configuration
    that can run in a guest does, installed as `make run` installs it."""
    r = subprocess.run(["make", "-s", "-C", ROOT, "packages"], stdout=subprocess.PIPE,
                       text=True, check=True)
    tools = {p for b in BACKENDS.values() for p in b.needs.values()}
    return GUEST_BASE + sorted(tools | set(r.stdout.split()))

HOST_PACKAGES = {"mmdebstrap": "mmdebstrap", "qemu-system-x86_64": "qemu-system-x86",
                 "mkfs.ext4": "e2fsprogs", "debugfs": "e2fsprogs"}
# Suites and what each needs.  sid's Release file in the host's mirror is
# past its Valid-Until date (a snapshot), so apt must not check that date
# there; nothing else is weakened (signatures are still checked).
SUITES = {"sid": [], "trixie": [], "bookworm": []}
SID_APTOPT = ['--aptopt=Acquire::Check-Valid-Until "false"']
IMAGE_MB = 4096
MIN_FREE_MB = 3 * 1024  # per suite: the root file system and its image
GUEST_MB, GUEST_CPUS = 2048, 2
# Guests at once under -icount (LAB_GUESTS=auto): one per host CPU, at
# most AUTO_GUESTS, each with GUEST_MB and qemu's own GUEST_HOST_MB free.
AUTO_GUESTS, MAX_GUESTS, GUEST_HOST_MB = 4, 8, 512
# QEMU's instruction counting: 2^0 ns a guest instruction; the guest clock
# does not jump over idle time (sleep=off) nor follow the host's (align=off);
# one vCPU, so a thread's CPU time counts its own instructions alone.
ICOUNT = ["-icount", "shift=0,sleep=off,align=off"]
ICOUNT_CPUS = 1
LAB_RUNS = 3  # runs of each cell in a QUICK guest, of QUICK_ITER calls
QUICK_ITER = 20000
# The guest runner's sizing, where not QUICK (its own PARAMS, in the guest's
# clock, where 1 s is 1e9 instructions): a traced run cut to ~20M
# instructions, an untraced one 1M calls (its tick adds ~0.003 a call),
# and each cell run until its overhead's 95% interval is within 1% or
# 0.05 instruction, from 2 runs (two runs that agree within ~0.15% reach
# it: the unit is deterministic to a tick) to 5.  A run's cost is mostly
# the tracer's start under TCG (bpftrace's ~5-10 s), so fewer runs is
# what makes a lab short.
GUEST_SIZING = {"iter": 1000000, "max_run_s": 0.02, "min_run_s": 0.005, "precision": 0.01,
                "precision_ns": 0.05, "min_runs": 2, "max_runs": 5}
BOOT_S = 60  # for a KVM guest to reach userspace before TCG is used instead
KVM_VERDICT = os.path.join(LAB_DIR, "kvm.json")  # where it did not, on this host
USERSPACE = "KIT-LAB: userspace"
DONE = "KIT-LAB: done"
PROGRESS = ("[threads=", "[warm-up", "run: skipping", "KIT-LAB:")  # guest lines shown as they come
MMDEBSTRAP_S = 1800
LAB_THREADS = (1, 2)  # the thread counts a guest runs
GUEST_S = {"quick": 1800, "full": 5400}  # a guest's whole run, boot to power-off
QUICK_CONFIGS = ["baseline", "stap-mark", "stap-mark-alibi"]  # the baseline: overheads


class LabError(Exception):
    """A step failed; the message is the one line the user sees."""


def lab_configs(text):
    """LAB_CONFIGS: as CONFIGS, or '' for the default."""
    return params.parse_configs(text, "LAB_CONFIGS") if text.strip() else []


def lab_guests(text):
    """LAB_GUESTS: auto (0 here), or 1..MAX_GUESTS."""
    if text == "auto":
        return 0
    if not re.fullmatch(r"\d+", text) or not 1 <= int(text) <= MAX_GUESTS:
        raise argparse.ArgumentTypeError(f"LAB_GUESTS '{text}' is not allowed: want auto or a "
                                         f"whole number in 1..{MAX_GUESTS}")
    return int(text)


def suites(text):
    """LAB: Debian suites, comma-separated, each one of SUITES."""
    names = [s for s in text.split(",")]
    bad = [s for s in names if s not in SUITES]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"LAB '{text}' is not allowed: want a comma-separated list of {', '.join(SUITES)}")
    return list(dict.fromkeys(names))


Param = params.Param
# The lab's inputs, each in one place (params.Param), the runner's own
# where they mean the same (NO_INSTALL, MISS, STAP_TIMING).
PARAMS = [
    Param("LAB", suites, ["sid"], "Debian suites to boot, comma-separated", "sid"),
    Param("QUICK", params.flag01("QUICK"), False, "1: sid's " + ", ".join(QUICK_CONFIGS)
          + f", ITER={QUICK_ITER}, {LAB_RUNS} runs a cell", "0"),
    params.BY_NAME["NO_INSTALL"],
    Param("LAB_CONFIGS", lab_configs, [], "configurations to run in the guest, names or "
          "patterns (the SystemTap ones need modules, built beforehand; others, such as "
          "site-*-ftrace, run as on the host)", "every configuration (QUICK: "
          + ", ".join(QUICK_CONFIGS) + ")"),
    params.BY_NAME["MISS"],
    Param("ICOUNT", params.flag01("ICOUNT"), True,
          "1: under TCG the guest counts instructions (QEMU -icount shift=0, one vCPU), and "
          "the rows' unit is instructions; 0: plain TCG, counts and statuses only", "1"),
    next(p for p in stap.Stap().params() if p.name == "STAP_TIMING"),
    # the stap back-end's own row, but the lab is there for the module runtime
    dataclasses.replace(next(p for p in stap.Stap().params() if p.name == "STAP_RUNTIME"),
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
]


def parse_args(argv):
    p = params.Parser(prog="lab.py", description=__doc__.split("\n\n")[0])
    params.add(p, PARAMS)
    p.add_argument("--shell", action="store_true", help="a shell in the guest (make lab-shell)")
    p.add_argument("--results", default=os.path.join(ROOT, "results"), metavar="DIR")
    p.add_argument("--vars", action="store_true",
                   help="print the variables, one NAME=default a line, and exit (for make)")
    a = p.parse_args(argv)
    params.fill(a, PARAMS)
    return a


# -- the host ------------------------------------------------------------------
def mirror():
    """The host's Debian mirror (its apt sources), never a name of ours."""
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        with open(path) as f:
            text = f.read()
        for stanza in text.split("\n\n"):
            uris = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
            if uris and "security" not in uris.group(1) and re.search(
                    r"^Types:.*\bdeb\b", stanza, re.M):
                return uris.group(1)
    if os.path.exists("/etc/apt/sources.list"):
        with open("/etc/apt/sources.list") as f:
            for ln in f:
                m = re.match(r"\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)\s", ln)
                if m and "security" not in m.group(1):
                    return m.group(1)
    return None


def need_host_tools(no_install):
    """The lab's own tools (HOST_PACKAGES), and the packages the builds
    need (`make needs`): the guests run the builds made here, so a build
    make skips is a skipped configuration in every guest."""
    missing = sorted({p for c, p in HOST_PACKAGES.items() if not shutil.which(c)})
    builds = host.build_needs()
    if missing or builds:
        host.install("lab", sorted(set(missing) | builds), no_install)
        missing = sorted({p for c, p in HOST_PACKAGES.items() if not shutil.which(c)})
    if missing:
        raise LabError(f"missing Debian packages: {' '.join(missing)}"
                       + (" (NO_INSTALL=1)" if no_install else ""))


def sh(cmd, log, timeout=600, **kw):
    """Runs CMD (a list) in a process group of its own, its output appended
    to LOG; LabError with the line of its output that says what failed
    (stap.first_error) if it does.  Stopped early (its time limit, Ctrl-C,
    SIGTERM), the whole group gets SIGTERM, then SIGKILL after STOP_GRACE_S:
    mmdebstrap's children hold mounts that only its own clean-up removes."""
    try:
        code, out = host.run(cmd, timeout=timeout, log=log, group=True, **kw)
        why = None if code == 0 else f"failed (exit {code})"
    except host.Timeout as e:
        out, why = e.output, f"did not finish in {timeout} s"
    if why:
        raise LabError(f"{os.path.basename(cmd[0])} {why}: {stap.first_error(out)}")
    return out


def unmount_under(path):
    """Unmounts whatever is still mounted under PATH, deepest first (lazily
    where busy): what an interrupted mmdebstrap or chroot step left."""
    with open("/proc/mounts") as f:
        mounts = [ln.split()[1] for ln in f if ln.split()[1].startswith(path.rstrip("/") + "/")]
    for m in sorted(mounts, key=len, reverse=True):
        if subprocess.run(["umount", m], stderr=subprocess.DEVNULL).returncode != 0:
            subprocess.run(["umount", "-l", m], stderr=subprocess.DEVNULL)


class Mounts:
    """The chroot's /proc and /dev, mounted for a step and always undone."""

    def __init__(self, rootfs):
        self.rootfs, self.done = rootfs, []

    def __enter__(self):
        for src, dst, args in (("proc", "proc", ["-t", "proc"]), ("/dev", "dev", ["--bind"])):
            path = os.path.join(self.rootfs, dst)
            os.makedirs(path, exist_ok=True)
            subprocess.run(["mount", *args, src, path], check=True)
            self.done.append(path)
        return self

    def __exit__(self, *exc):
        for path in reversed(self.done):
            if subprocess.run(["umount", path]).returncode != 0:
                subprocess.run(["umount", "-l", path])
        self.done = []


# -- one suite ------------------------------------------------------------------
class Suite:
    def __init__(self, name, args, folder_root, log):
        self.name, self.args, self.log = name, args, log
        self.dir = os.path.join(LAB_DIR, name)
        self.rootfs = os.path.join(self.dir, "rootfs")
        self.out = os.path.join(folder_root, name)
        self.guests = []  # the guests booted, and those a TCG run boots (tcg)
        self.whole = self.tcg = self.vmlinuz = self.initrd = None
        self.unbuilt = {}  # configuration -> why its module did not build
        self.runtime = "module"  # SystemTap's in the guest (STAP_RUNTIME)

    def configs(self):
        if self.args.lab_configs:
            return self.args.lab_configs
        if self.args.quick:
            return [configs.BY_NAME[n] for n in QUICK_CONFIGS]
        return list(configs.CONFIGS)  # every one: what cannot run there says why

    # 1. the root file system
    def make_rootfs(self):
        ok = os.path.join(self.dir, "rootfs.ok")  # the package list it was made with
        want = packages()
        if os.path.exists(ok) and open(ok).read().split() == want:
            return
        m = mirror()
        if not m:
            raise LabError("no Debian mirror in the host's apt sources to build a guest from")
        free = shutil.disk_usage(os.path.dirname(self.dir) if os.path.isdir(
            os.path.dirname(self.dir)) else ROOT).free // 2 ** 20
        if free < MIN_FREE_MB:
            raise LabError(f"only {free} MB free for the guest, {MIN_FREE_MB} MB needed")
        tmp = self.rootfs + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(self.rootfs, ignore_errors=True)
        os.makedirs(self.dir, exist_ok=True)
        say(f"lab: {self.name}: building its root file system with mmdebstrap "
            "(a few minutes, once; cached in build/lab/)")
        t0 = time.monotonic()
        try:
            sh(["mmdebstrap", "--variant=apt", "--include=" + ",".join(want),
                *(SID_APTOPT if self.name == "sid" else []), self.name, tmp, m],
               self.log, timeout=MMDEBSTRAP_S)
        except BaseException:  # LabError, Ctrl-C: nothing half-made is left
            unmount_under(tmp)
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        os.rename(tmp, self.rootfs)
        with open(os.path.join(self.dir, "rootfs.ok"), "w") as f:
            f.write(f"{' '.join(want)}\n")
        say(f"lab: {self.name}: root file system in {time.monotonic() - t0:.0f} s")

    def kernel(self):
        """(release, vmlinuz, initrd) of the guest's kernel."""
        rel = sorted(os.listdir(os.path.join(self.rootfs, "lib", "modules")))
        if not rel:
            raise LabError("the guest has no kernel in /lib/modules")
        rel = rel[-1]
        return (rel, os.path.join(self.rootfs, "boot", f"vmlinuz-{rel}"),
                os.path.join(self.rootfs, "boot", f"initrd.img-{rel}"))

    def chroot_version(self):
        return stap.stap_version(["chroot", self.rootfs]) or "?"

    # 2 and 3. pre-flight and the modules, in the chroot
    def put_kit(self):
        """The repository, with its builds, at /kit in the root file system."""
        dst = os.path.join(self.rootfs, GUEST_KIT.lstrip("/"))
        shutil.rmtree(dst, ignore_errors=True)
        # Not the host's timings.json: a guest sizes its runs by its own
        # (one file per unit, kept in build/lab/SUITE/ between labs).
        skip = shutil.ignore_patterns("lab", "results", ".git", "kit-scratch-*",
                                      "stap-kernel", "perf-buildid", "*.pyc", "timings.json")
        shutil.copytree(ROOT, dst, ignore=skip, symlinks=True)
        os.makedirs(os.path.join(dst, "results"), exist_ok=True)
        for t in glob.glob(os.path.join(self.dir, TIMINGS.format("*"))):
            shutil.copy(t, os.path.join(dst, "results"))
        os.makedirs(os.path.join(dst, "build", "lab-modules"), exist_ok=True)  # maybe none
        return dst

    def preflight(self, rel):
        tree = f"/lib/modules/{rel}/build"
        work = tempfile.mkdtemp(prefix="preflight-", dir=os.path.join(self.rootfs, "tmp"))
        try:
            with Mounts(self.rootfs):
                return stap.preflight(tree, rel, ["chroot", self.rootfs],
                                      "/" + os.path.relpath(work, self.rootfs),
                                      f"{GUEST_KIT}/{stap.TARGET}", cache=False)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def build_modules(self, rel, kit):
        out = os.path.join(kit, "build", "lab-modules")
        os.makedirs(out, exist_ok=True)
        tree = f"/lib/modules/{rel}/build"
        be = stap.Stap()
        be.runtime, be.timing = "module", bool(self.args.stap_timing)
        version = self.chroot_version()
        with Mounts(self.rootfs):
            for cfg in [c for c in self.configs() if c.tracer == "stap"]:
                mod = stap.prebuilt_name(cfg)
                flags = be.cfg_flags(cfg)
                cached = self.module_cache(cfg, mod, flags, rel, version)
                if os.path.exists(cached):  # the same script, flags, target and kernel
                    shutil.copy(cached, os.path.join(out, mod + ".ko"))
                    continue
                t0 = time.monotonic()
                # From the kit's root: the scripts name the target relative to
                # it, as users run them; pass 4 leaves MOD.ko there.
                cmd = ["chroot", self.rootfs, "sh", "-c", 'cd "$1" && shift && exec "$@"',
                       "sh", GUEST_KIT, "stap", "-p4", "-r", tree, "-m", mod, *flags,
                       cfg.script]
                try:
                    if be.reports(cfg):  # its hit report is built only on a terminal
                        rc, text = stap.on_a_tty(cmd, self.log, 1200)
                        if rc != 0:
                            raise LabError(stap.first_error(text) if rc else "timed out")
                    else:
                        sh(cmd, self.log, timeout=1200)
                except LabError as e:  # that configuration's rows say why; the rest run
                    self.unbuilt[cfg.name] = f"its module did not build in the chroot: {e}"
                    say(f"lab: {self.name}: {cfg.name}: {self.unbuilt[cfg.name]}")
                    continue
                os.replace(os.path.join(kit, mod + ".ko"), os.path.join(out, mod + ".ko"))
                for old in glob.glob(os.path.join(os.path.dirname(cached), mod + "-*.ko")):
                    os.unlink(old)
                shutil.copy(os.path.join(out, mod + ".ko"), cached)
                say(f"lab: {self.name}: built {mod}.ko in {time.monotonic() - t0:.0f} s")
        return out

    def module_cache(self, cfg, mod, flags, rel, version):
        """Where CFG's module is kept between labs, named by what it is
        built from: the script, stap's flags, the target it probes (its
        bytes: the probes are file offsets), the kernel and SystemTap."""
        h = hashlib.sha256("\0".join([*flags, rel, version]).encode())
        for path in (cfg.script, stap.TARGET):
            with open(os.path.join(ROOT, path), "rb") as f:
                h.update(f.read())
        d = os.path.join(self.dir, "modules")
        os.makedirs(d, exist_ok=True)
        return os.path.join(d, f"{mod}-{h.hexdigest()[:16]}.ko")

    # 4. the guests' init scripts
    def init_script(self, guest):
        """GUEST's init (/kit-init.sh, or kit-init-K.sh for the Kth of
        several): mount what the kit needs, run the runner over the
        guest's configurations, list any module left, power off."""
        cfgs = ",".join(c.name for c in guest.cfgs)
        # QUICK: 3 runs a cell of ITER=20000.  Else each cell is sized by
        # the interval it reaches (GUEST_SIZING): under -icount the runs
        # differ only by the interrupts that land in them.
        size = (["--quick", "1", "--iter", str(QUICK_ITER), "--runs", str(LAB_RUNS)]
                if self.args.quick else
                [x for k, v in GUEST_SIZING.items() for x in (f"--{k.replace('_', '-')}", str(v))])
        run = " ".join(["python3", "scripts/run.py", "--configs", cfgs, "--threads",
                        ",".join(map(str, LAB_THREADS)), *size, "--no-install", "1", "--no-report",
                        *(["--miss", str(self.args.miss)] if self.args.miss else []),
                        *(["--stap-timing", "1"] if self.args.stap_timing else []),
                        "--timings", '"{}/results/{}"'.format(GUEST_KIT, TIMINGS.format("$UNIT")),
                        "--results", f"{GUEST_KIT}/results"])
        self.write_init(guest.init, f"""#!/bin/sh
# The guest's init (make lab): mount what the kit needs, run its runner on
# the module runtime with the modules built beforehand, list any module
# left, power off.
{GUEST_MOUNTS}
echo "{USERSPACE} $(uname -r)"
# what the target's clock counts here, from the kernel command line the lab set
UNIT=$(sed -n 's/.*kit_unit=\\([a-z]*\\).*/\\1/p' /proc/cmdline)
export UNIT="${{UNIT:-ns}}"
cd {GUEST_KIT}
STAP_RUNTIME={self.runtime} STAP_MODULES={GUEST_KIT}/build/lab-modules {run} 2>&1 | tee {GUEST_KIT}/results/lab-run.log
lsmod | grep '^kit_' > {GUEST_KIT}/results/modules-left.txt
echo "KIT-LAB: modules left: $(wc -l < {GUEST_KIT}/results/modules-left.txt)"
sync
echo "{DONE}"
echo o > /proc/sysrq-trigger
sleep 30
""")

    def shell_script(self):
        self.write_init(SHELL_INIT, f"""#!/bin/sh
# make lab-shell's init: what the kit needs mounted, then a shell in {GUEST_KIT};
# leaving the shell powers the guest off.
{GUEST_MOUNTS}
export TERM=vt100
echo "{USERSPACE} $(uname -r): the kit is in {GUEST_KIT}; try: stap -F stp/mark.stp"
grep -q kit_unit=instructions /proc/cmdline && echo "The guest's clock counts instructions (QEMU -icount shift=0): 1 ns = 1 instruction."
cd {GUEST_KIT}
/bin/bash -i
sync
echo o > /proc/sysrq-trigger
sleep 30
""")

    def write_init(self, name, body):
        path = os.path.join(self.rootfs, name.lstrip("/"))
        with open(path, "w") as f:
            f.write(body)
        os.chmod(path, 0o755)

    # 5. the guests' images, one each: the first made from the root file
    # system, the others copies of it (sparse)
    def images(self, guests):
        for g in guests:
            if os.path.exists(g.img):
                os.unlink(g.img)
        first = guests[0].img
        with open(first, "wb") as f:
            f.truncate(IMAGE_MB * 2 ** 20)
        sh(["mkfs.ext4", "-q", "-F", "-d", self.rootfs, first], self.log)
        for g in guests[1:]:
            sh(["cp", "--sparse=always", first, g.img], self.log)

    def fetch(self, img, replay=False):
        """The guest's results folder, out of the image (debugfs: no mount).
        REPLAY: the guest did not shut down, so its last rows may be in the
        file system's journal alone: e2fsck replays it first."""
        if replay:
            with open(self.log, "a") as f:  # exit 1: it replayed (changed) something
                subprocess.run(["e2fsck", "-E", "journal_only", "-y", img], stdout=f,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=600)
        dst = tempfile.mkdtemp(prefix="lab-fetch-", dir=self.dir)
        sh(["debugfs", "-R", f"rdump {GUEST_KIT}/results {dst}", img], self.log)
        return os.path.join(dst, "results")


SHELL_INIT = "/kit-shell.sh"
GUEST_MOUNTS = """export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t tmpfs tmp /tmp
mkdir -p /dev/shm; mount -t tmpfs shm /dev/shm  # LTTng-UST's and uftrace's shared memory
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null"""


class Guest:
    """One qemu of a suite: its share of the configurations (CFGS), its init
    script in the root file system, its own image and console, and how it
    ended.  K: its index among N guests (one alone keeps the plain names)."""

    def __init__(self, suite, cfgs, k=0, n=1):
        self.suite, self.cfgs = suite, cfgs
        sfx = "" if n == 1 else f"-{k + 1}"
        self.name = suite.name if n == 1 else f"{suite.name}/{k + 1}"
        self.init, self.img, self.sfx = f"/kit-init{sfx}.sh", os.path.join(
            suite.dir, f"disk{sfx}.img"), sfx
        self.qemu = self.qemu_rc = self.clog = None
        self.accel, self.icount, self.console, self.limit = None, False, [], 0
        self.reached = self.exited_early = self.timed_out = False

    def command(self, accel, init):
        """qemu's command line: the guest's kernel, its image, INIT."""
        cpu = {"kvm": ["-enable-kvm", "-cpu", "host"], "tcg": ["-accel", "tcg", "-cpu", "max"]}
        self.accel = accel
        icount = self.icount = bool(accel == "tcg" and self.suite.args.icount)
        # The guest's init passes kit_unit on to the runner (UNIT).
        unit = record.INSTRUCTIONS if icount else record.NS
        cmd = ["qemu-system-x86_64", *cpu[accel], *(ICOUNT if icount else []),
               "-m", str(GUEST_MB), "-smp", str(ICOUNT_CPUS if icount else GUEST_CPUS),
               "-kernel", self.suite.vmlinuz, "-initrd", self.suite.initrd, "-no-reboot",
               "-nographic", "-drive", f"file={self.img},format=raw,if=virtio",
               "-append", f"console=ttyS0 root=/dev/vda rw init={init} panic=-1 quiet "
                          f"kit_unit={unit}"]
        with open(self.suite.log, "a") as f:
            f.write("$ " + " ".join(cmd) + "\n")
        return cmd

    def start(self, accel, limit, first_s=None):
        """Starts qemu; watch() follows it.  It has FIRST_S seconds (else
        LIMIT) to reach userspace, LIMIT from its start to power off."""
        self.qemu = subprocess.Popen(self.command(accel, self.init), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        self.reached = self.exited_early = self.timed_out = False
        self.qemu_rc, self.console, self.buf = None, [], b""
        self.t0, self.limit = time.monotonic(), limit
        self.deadline = self.t0 + (first_s or limit)
        self.clog = open(self.console_path(), "wb")

    def console_path(self):
        return os.path.join(self.suite.dir, f"console-{self.accel}{self.sfx}.log")

    def take(self, chunk):
        """A chunk of the console: kept, and the guest runner's progress
        said as it comes, in host seconds (its ETA is in guest time: not
        shown)."""
        self.clog.write(chunk)
        self.buf += chunk
        self.console.append(chunk.decode(errors="replace"))
        if not self.reached and USERSPACE.encode() in self.buf:
            self.reached = True
            say(f"lab: {self.name}: the guest reached userspace ({self.accel}) in "
                f"{time.monotonic() - self.t0:.0f} s")
            self.deadline = self.t0 + self.limit
            self.buf = self.buf[self.buf.index(USERSPACE.encode()):]
        if self.reached:
            *done, self.buf = self.buf.split(b"\n")
            for ln in done:
                text = ln.decode(errors="replace").strip()
                if text.startswith(PROGRESS):
                    say(f"lab: {self.name}: {time.monotonic() - self.t0:4.0f} s: "
                        + re.sub(r",? +ETA [^]\s]+", "", text))

    def text(self):
        return "".join(self.console)

    def stop_qemu(self, grace=1):
        """Kills qemu if it still runs after GRACE seconds (its console
        closes as it exits, before it is reaped); qemu_rc is its exit
        status if it ended by itself, None if it was killed here."""
        q, self.qemu = self.qemu, None
        if q:
            try:
                self.qemu_rc = q.wait(timeout=0 if self.timed_out else grace)
            except subprocess.TimeoutExpired:
                os.killpg(q.pid, signal.SIGKILL)
                q.wait()
                self.qemu_rc = None
        if self.clog and not self.clog.closed:
            self.clog.close()

    def outcome(self):
        """Why the guest did not finish its runs (None: it did)."""
        accel, limit = self.accel, self.limit
        if not self.reached and self.exited_early:
            return (f"the guest ({accel}) stopped before userspace, twice: "
                    f"{stopped_why(self.text())}")
        if not self.reached:
            return f"the guest ({accel}) never reached userspace in {limit:g} s"
        if DONE in self.text():
            return None
        rc = self.qemu_rc
        if self.timed_out or rc is None:  # killed here, at the time limit
            return f"the guest ({accel}) did not finish in {limit:g} s"
        return (f"the guest ({accel}) stopped before it finished: qemu "
                + (f"was killed by signal {-rc}" if rc < 0 else f"exited with status {rc}"))


def watch(guests):
    """Follows the consoles of GUESTS (started) until each has stopped:
    powered off, died, or killed here past its deadline."""
    live = {g.qemu.stdout.fileno(): g for g in guests if g.qemu}
    while live:
        now = time.monotonic()
        for fd, g in list(live.items()):
            if now >= g.deadline:
                g.timed_out = True
                g.stop_qemu()
                del live[fd]
        if not live:
            break
        wait = max(0.0, min(1.0, min(g.deadline for g in live.values()) - now))
        ready, _, _ = select.select(list(live), [], [], wait)
        if not ready:
            for fd, g in list(live.items()):
                if g.qemu.poll() is not None:
                    g.exited_early = True
                    g.stop_qemu()
                    del live[fd]
            continue
        for fd in ready:
            g = live[fd]
            chunk = os.read(fd, 65536)
            if chunk:
                g.take(chunk)
                continue
            g.exited_early = not g.reached
            g.stop_qemu()
            del live[fd]


def shares(cfgs, n, cost=lambda c: 1.0):
    """CFGS split among at most N guests.  Each runs the baseline (its
    runner's yardstick for when a cell has run enough); the configurations
    that attach nothing all run in the first, with the baseline the
    folder keeps (an idle marker's one instruction is resolved against
    the baseline of its own boot); those that attach (hundreds of
    instructions, where two boots agree within 0.3%) go one at a time,
    costliest first, to the guest with the fewest of its tracer's (a
    tracer's start is most of a guest's time: bpftrace's 5-10 s), of those
    the one with the least COST so far (a configuration's seconds a run)."""
    base = [c for c in cfgs if c.name == stats.BASELINE]
    idle = [c for c in cfgs if c.name != stats.BASELINE and not BACKENDS[c.tracer].attaches]
    traced = [c for c in cfgs if BACKENDS[c.tracer].attaches]
    n = max(1, min(n, len(traced) + bool(idle)))
    parts = [list(base) for _ in range(n)]
    parts[0] += idle
    load = [sum(map(cost, idle))] + [0.0] * (n - 1)
    for c in sorted(traced, key=lambda c: -cost(c)):
        k = min(range(n), key=lambda i: (sum(x.tracer == c.tracer for x in parts[i]), load[i], i))
        parts[k].append(c)
        load[k] += cost(c)
    return [sorted(p, key=cfgs.index) for p in parts]


def guest_cost(suite, args):
    """A configuration's seconds per run in SUITE's guest, beyond its loop
    (its tracer's start: what a guest's time goes on), from the timings
    its last lab left (build/lab/SUITE/timings-UNIT.json), else the
    runner's guess."""
    cache = plan.load(os.path.join(suite.dir, TIMINGS.format(
        record.INSTRUCTIONS if args.icount else record.NS)))
    return lambda c: cache.get(c.name, {}).get("extra_s", plan.GUESS[BACKENDS[c.tracer].attaches][0])


def guests_here(args):
    """How many guests run a suite at once under TCG with ICOUNT=1
    (LAB_GUESTS; auto: the host's CPUs, at most AUTO_GUESTS), no more
    than the host's free memory holds; and 1 under KVM or ICOUNT=0, where
    times are times and guests side by side would share the host's CPUs."""
    if not args.icount:
        return 1
    want = args.lab_guests or min(os.cpu_count() or 1, AUTO_GUESTS)
    with open("/proc/meminfo") as f:
        avail = next((int(ln.split()[1]) // 1024 for ln in f
                      if ln.startswith("MemAvailable:")), GUEST_MB)
    return max(1, min(want, avail // (GUEST_MB + GUEST_HOST_MB)))


# -- the whole lab ---------------------------------------------------------------
def boot_guests(suite, limit, args, state):
    """Runs SUITE's configurations in guests: one with KVM if it reaches
    userspace here within BOOT_S, else under TCG in SUITE.tcg's guests at
    once; those guests.  A guest whose kernel died booting (seen once
    under TCG: a panic in sched_clock_cpu) is booted once more: a boot is
    not a measurement."""
    if args.accel == "auto" and state.get("kvm") is None and (why := kvm_known()):
        state["kvm"] = False
        say(f"lab: KVM is not usable here ({why}): using TCG")
    if args.accel in ("auto", "kvm") and state.get("kvm") is not False:
        if not os.access("/dev/kvm", os.R_OK | os.W_OK):
            state["kvm"] = False
            why = "no usable /dev/kvm"
        else:
            whole = suite.whole
            suite.guests = [whole]
            suite.images([whole])
            whole.start("kvm", limit, first_s=BOOT_S)
            watch([whole])
            if whole.reached:
                state["kvm"] = True
                if os.path.exists(KVM_VERDICT):
                    os.unlink(KVM_VERDICT)
                return [whole]
            state["kvm"] = False
            why = ("qemu exited before the guest reached userspace" if whole.exited_early
                   else f"the guest did not reach userspace in {BOOT_S} s")
            why += f" ({stopped_why(whole.text())})" if whole.text().strip() else ""
            host.write_json(KVM_VERDICT, {"host": kvm_host(), "why": why})
        if args.accel == "kvm":
            raise LabError(f"ACCEL=kvm: KVM does not work here: {why}")
        say(f"lab: KVM is not usable here ({why}): using TCG, "
            + ("where the guest's clock counts instructions (ICOUNT=1)" if args.icount
               else "where times are not measurements (ICOUNT=0)"))
    guests = suite.guests = suite.tcg
    if len(guests) > 1:
        say(f"lab: {suite.name}: {len(guests)} guests at once (LAB_GUESTS), each a share of the "
            "configurations: " + "; ".join(f"{g.name}: {len(g.cfgs)}" for g in guests))
    suite.images(guests)
    for g in guests:
        g.start("tcg", limit)
    watch(guests)
    again = [g for g in guests if not g.reached and g.exited_early]
    for g in again:
        say(f"lab: {g.name}: the guest stopped before userspace (tcg: "
            f"{stopped_why(g.text())}); booting it once more")
        g.start("tcg", limit)
    watch(again)
    return guests


def kvm_host():
    """What a KVM verdict holds for: the host's kernel, CPU and qemu."""
    with open("/proc/cpuinfo") as f:
        cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")
    qemu = "?"
    if shutil.which("qemu-system-x86_64"):
        r = subprocess.run(["qemu-system-x86_64", "--version"], stdout=subprocess.PIPE, text=True)
        qemu = (r.stdout.splitlines() or ["?"])[0]
    return [os.uname().release, cpu, qemu]


def kvm_known():
    """Why KVM did not work when a lab last tried it on this very host
    (kernel, CPU, qemu), said as a reason; None if never found or the
    host has changed since: its boot would cost BOOT_S again."""
    known = plan.load(KVM_VERDICT)
    if known.get("host") != kvm_host() or not known.get("why"):
        return None
    return (f"{known['why']}; found by a lab before on this host ({os.path.relpath(KVM_VERDICT)}, "
            "removed by make clean; ACCEL=kvm tries again)")


def stopped_why(console):
    """The console line that says why a guest stopped: a kernel panic's, else
    the last one."""
    console = re.sub(r"\x1b(\[[0-9;?]*[A-Za-z]|.)", "", console)  # the BIOS's terminal codes
    lines = [ln.strip() for ln in console.splitlines() if ln.strip()]
    panic = [ln for ln in lines if "Kernel panic" in ln or "qemu-system" in ln]
    return re.sub(r"^\[\s*[\d.]+\]\s*", "", (panic or lines or ["no console output"])[0])[:200]


def skipped_folder(suite, reason, extra):
    """A results folder of skipped rows for SUITE: REASON for every row."""
    folder = record.Folder(os.path.dirname(suite.out), name=suite.name)
    for c in suite.configs():
        folder.skipped(c, LAB_THREADS, reason)
    folder.meta["lab"] = dict(extra, suite=suite.name, preflight=reason)
    folder.close()
    return folder.dir


def run_suite(name, args, top, log, state):
    suite = Suite(name, args, top, log)
    extra = {"suite": name}
    try:
        suite.make_rootfs()
        rel, suite.vmlinuz, suite.initrd = suite.kernel()
        extra.update(kernel=rel, stap=suite.chroot_version())
        kit = suite.put_kit()
        why = suite.preflight(rel)
        say(f"lab: {name}: pre-flight: " + (why or f"SystemTap {extra['stap']} builds modules "
                                             f"for kernel {rel}"))
        extra["preflight"] = why
        # SystemTap's runtime in the guest (STAP_RUNTIME): module needs the
        # pre-flight; auto takes bpf where it fails; bpf compiles in the guest.
        suite.runtime = ("bpf" if args.stap_runtime == "bpf" or (why and args.stap_runtime == "auto")
                         else "module")
        extra["stap_runtime"] = suite.runtime
        stap_cfgs = [c for c in suite.configs() if c.tracer == "stap"]
        if suite.runtime == "module":
            if why and len(stap_cfgs) == len(suite.configs()) and not args.shell:
                return skipped_folder(suite, why, extra)
            if why:  # the other configurations still run in the guest
                suite.unbuilt.update((c.name, why) for c in stap_cfgs)
            elif not args.shell:  # in the shell, stap -F builds its own, as users run it
                suite.build_modules(rel, kit)
        if args.shell:
            suite.shell_script()
            shell = Guest(suite, [])
            suite.images([shell])
            say(f"lab: {name}: a shell in the guest (kernel {rel}); the kit is in {GUEST_KIT}; "
                "`exit` powers it off")
            subprocess.run(shell.command("kvm" if state.get("kvm") else "tcg", SHELL_INIT))
            return None
        run = [c for c in suite.configs() if c.name not in suite.unbuilt]
        suite.whole = Guest(suite, run)
        parts = shares(run, guests_here(args), guest_cost(suite, args))
        suite.tcg = ([suite.whole] if len(parts) == 1 else
                     [Guest(suite, p, k, len(parts)) for k, p in enumerate(parts)])
        for g in {id(g): g for g in [suite.whole, *suite.tcg]}.values():
            suite.init_script(g)
        limit = args.lab_time_limit or GUEST_S["quick" if args.quick else "full"]
        t0 = time.monotonic()
        guests = boot_guests(suite, limit, args, state)
        extra.update(accel=guests[0].accel, guest_s=round(time.monotonic() - t0),
                     icount=guests[0].icount)
        return bring_back(suite, [(g, g.outcome()) for g in guests], extra)
    except LabError as e:
        say(f"lab: {name}: {e}")
        return skipped_folder(suite, f"lab: {e}", extra) if not args.shell else None
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: keep what the guests wrote, then stop
        for g in suite.guests:
            g.stop_qemu(grace=0)
        if any(g.reached for g in suite.guests) and not args.shell:
            why = "the lab was interrupted (Ctrl-C or SIGTERM)"
            try:  # a guest that had powered off finished
                d = bring_back(suite, [(g, g.outcome() and why) for g in suite.guests], extra)
                say(f"lab: {name}: the rows the guest wrote are in {os.path.relpath(d)}/")
            except LabError:
                pass
        raise
    finally:
        for g in suite.guests:
            g.stop_qemu()
        for junk in glob.glob(os.path.join(suite.dir, "lab-fetch-*")):
            shutil.rmtree(junk, ignore_errors=True)
        for img in glob.glob(os.path.join(suite.dir, "disk*.img")):
            os.unlink(img)  # 4 GB each, sparse: made anew each time


def guest_folder(suite, g, why):
    """The results folder G's runner wrote, out of its image (WHY: it did
    not finish, so its file system's journal is replayed first, and it
    may have written none); LabError saying why there is none."""
    if why and not g.reached:
        raise LabError(why)
    if why:
        say(f"lab: {g.name}: {why}; keeping the rows it wrote")
    got = suite.fetch(g.img, replay=bool(why))
    inner = [d for d in glob.glob(os.path.join(got, "2*")) if os.path.isdir(d)]
    if len(inner) == 1:
        return got, inner[0]
    last = ""
    if os.path.exists(os.path.join(got, "lab-run.log")):
        with open(os.path.join(got, "lab-run.log"), errors="replace") as f:
            last = ([ln.strip() for ln in f if ln.strip()] or [""])[-1]
    raise LabError(why or f"the guest's runner wrote {len(inner)} results folders, "
                   "not 1" + (f": {last}" if last else ""))


def bring_back(suite, ended, extra):
    """The guests' results folders become one, results/<stamp>-lab/SUITE/,
    with the lab's facts in its meta.json.  ENDED: [(guest, why it did not
    finish, or None)].  The first guest's folder is taken whole; the
    others' rows are added but for their baselines (each guest's own
    yardstick, kept in logs/runs-K.csv), so every cell is measured against
    one baseline.  A cell a guest did not reach is a skipped row saying
    why; LabError if no guest wrote a folder."""
    got, failed = [], []
    for g, why in ended:
        try:
            got.append((g, why, *guest_folder(suite, g, why)))
        except LabError as e:
            failed.append((g, str(e)))
    if not got:
        raise LabError(failed[0][1])
    first = got[0][3]
    shutil.copytree(first, suite.out)
    folder = record.Folder.reopen(suite.out)
    keeper = got[0][0]  # whose baseline the folder has
    timings = {}
    left = None  # the kit_ modules lsmod listed in the guests at the end
    for g, why, res, inner in got:
        if inner != first:
            with open(os.path.join(inner, "runs.csv"), newline="") as f:
                for row in csv.DictReader(f):
                    if row["config"] != stats.BASELINE:
                        folder.row(**row)
            shutil.copy(os.path.join(inner, "runs.csv"), os.path.join(folder.logs,
                                                                      f"runs{g.sfx}.csv"))
            for log in glob.glob(os.path.join(inner, "logs", "*")):
                dst = os.path.join(folder.logs, os.path.basename(log))
                if not os.path.exists(dst) and os.path.isfile(log):
                    shutil.copy(log, dst)
            with open(os.path.join(inner, "meta.json")) as f:
                other = json.load(f)
            for key in ("skipped", "tracers"):
                folder.meta[key] = dict(other.get(key) or {}, **(folder.meta.get(key) or {}))
        for t in glob.glob(os.path.join(res, TIMINGS.format("*"))):  # each guest's own cells
            theirs = plan.load(t)
            mine = {c.name: theirs[c.name] for c in g.cfgs if c.name in theirs}
            timings.setdefault(os.path.basename(t), {}).update(mine)
        for name in ("lab-run.log", "modules-left.txt"):
            if os.path.exists(os.path.join(res, name)):
                base, ext = os.path.splitext(name)
                shutil.copy(os.path.join(res, name), os.path.join(folder.logs, base + g.sfx + ext))
        if os.path.exists(os.path.join(res, "modules-left.txt")):
            with open(os.path.join(res, "modules-left.txt")) as f:
                left = (left or []) + [ln.split()[0] for ln in f if ln.strip()]
    for g, *_ in got + failed:
        with open(os.path.join(folder.logs, f"console{g.sfx}.log"), "w") as f:
            f.write(g.text())
    for name, cells in timings.items():  # what sizes the next lab's runs
        path = os.path.join(suite.dir, name)
        host.write_json(path, dict(plan.load(path), **cells))
    ran = {(r["config"], r["threads"]) for r in record.load(suite.out)[0]}
    folder.meta["lab"] = dict(extra, modules_left=left)
    if len(ended) > 1:
        folder.meta["lab"]["guests"] = [{"guest": g.name, "configs": [c.name for c in g.cfgs],
                                         "unfinished": why} for g, why in ended]
    unfinished = [(g, why) for g, why, *_ in got if why] + failed
    if unfinished:
        folder.meta["lab"]["unfinished"] = unfinished[0][1]
    for g, why in unfinished:
        for c in g.cfgs:
            if c.name == stats.BASELINE and g is not keeper:
                continue  # the folder's baseline is another guest's
            folder.skipped(c, [n for n in LAB_THREADS if (c.name, n) not in ran],
                           f"lab: {why}: not run")
    if suite.unbuilt:  # skipped rows for what could not be built, as runs.csv's own
        for c in suite.configs():
            if c.name in suite.unbuilt:
                folder.skipped(c, LAB_THREADS, suite.unbuilt[c.name])
        folder.meta["skipped"] = dict(folder.meta.get("skipped") or {}, **suite.unbuilt)
    folder.close()
    return suite.out


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.vars:
        print("\n".join(params.defaults(PARAMS)))
        return 0
    if os.geteuid() != 0:
        say("lab: needs root (mmdebstrap, chroot, module loading in the guest)")
        return 2
    need_host_tools(args.no_install)
    if not host.make_all("lab"):
        return 1
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    top = os.path.join(args.results, f"{stamp}-lab")
    os.makedirs(LAB_DIR, exist_ok=True)
    log = os.path.join(LAB_DIR, f"lab-{stamp}.log")
    state = {}

    def on_term(_signum, _frame):
        raise KeyboardInterrupt  # the same clean-up as Ctrl-C
    old = signal.signal(signal.SIGTERM, on_term)
    folders = []
    try:
        for name in args.lab:
            d = run_suite(name, args, top, log, state)
            if d:
                folders.append(d)
    except KeyboardInterrupt:
        say("lab: interrupted; the guest is stopped and nothing is left mounted")
        return 130
    finally:
        signal.signal(signal.SIGTERM, old)
    if args.shell:
        return 0
    summary(top, folders)
    for d in folders:
        subprocess.run([sys.executable, os.path.join(HERE, "report.py"), d],
                       stdout=subprocess.DEVNULL)
    return 0


def kernels_table(folders):
    """Configuration x guest kernel, in instructions per event over each
    suite's own baseline (mean and 95% interval, per thread count), for
    the folders that counted instructions: one look at what a kernel
    changed.  A cell that did not count exactly gives its status, and a
    configuration that could not run there (SystemTap where its pre-flight
    fails) its reason, as a numbered note below."""
    got, cols, notes = {}, [], tables.Notes()
    for d in folders:
        rows, meta, _ = record.load(d)
        if meta.get("unit") != record.INSTRUCTIONS:
            continue
        lab = meta.get("lab", {})
        col = f"{lab.get('suite')} ({tables.short_kernel(lab)})"
        cols.append(col)
        cells = {(c["config"], c["threads"]): c for c in stats.analyse(rows, meta)["cells"]}
        why = {}  # (config, threads) -> {reason: runs} of its rows that did not count exactly
        for r in rows:
            if r["status"] != "ok" and r["reason"] and r["rep"]:  # not a warm-up
                k = why.setdefault((r["config"], int(r["threads"])), {})
                k[r["reason"]] = k.get(r["reason"], 0) + 1
        for r in rows:
            key = (r["config"], int(r["threads"]))
            c = cells.get(key)
            if col in got.get(key, {}):  # one cell, several rows
                continue
            if c:
                got.setdefault(key, {})[col] = kernel_cell(c, why.get(key, {}), notes)
            elif r["status"] == "skipped":
                got.setdefault(key, {})[col] = "skipped " + notes.ref(r["reason"])
    if not cols:
        return []
    order = {c.name: i for i, c in enumerate(configs.CONFIGS)}
    body = [[cfg, n] + [v.get(c, "-") for c in cols]
            for (cfg, n), v in sorted(got.items(), key=lambda kv: (order.get(kv[0][0], 0), kv[0]))
            if cfg != stats.BASELINE]
    return (["", "Overhead per event in guest **instructions** (QEMU -icount; mean [95% "
             "interval]) over each suite's own baseline; never compared with host ns:", "",
             tables.table(["config", "threads"] + cols, body)] + notes.lines())


def kernel_cell(c, reasons, notes):
    """One configuration at one thread count on one kernel."""
    st = sorted(set(c.get("statuses", [])))
    if st and st != ["ok"]:
        never = " (never fired)" if (c.get("path") or "").startswith("none") else ""
        # one reason for the cell (its runs' differ in their figures alone)
        return "/".join(st) + never + (
            f" {notes.ref(min(reasons), sum(reasons.values()))}" if reasons else "")
    o = c.get("overhead")
    if o and o["lo_ns"] is not None:
        return tables.f_interval(o["mean_ns"], o["lo_ns"], o["hi_ns"], tables.f_ins)
    return "no interval"


SUMMARY_HEAD = ["suite", "kernel", "SystemTap", "accel", "pre-flight", "rows"]


def summary(top, folders):
    """summary.md: a line per suite, the configuration x kernel table and
    the 2011 probes in instructions; printed too."""
    notes, body, guests = tables.Notes(), [], []
    for d in folders:
        rows, meta, _ = record.load(d)
        lab = meta.get("lab", {})
        counts = {}
        for r in rows:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        body.append([lab.get("suite"), lab.get("kernel", "?"),
                     f"{lab.get('stap', '?')}, {lab.get('stap_runtime', 'module')} runtime",
                     lab.get("accel", "-") + (f", {len(lab['guests'])} guests at once"
                                              if lab.get("guests") else ""),
                     notes.inline(lab.get("preflight") or "builds modules"),
                     ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
                     + (f"; stopped early: {notes.ref(lab['unfinished'])}"
                        if lab.get("unfinished") else "")])
        if meta.get("unit") == record.INSTRUCTIONS:
            guests.append({"a": dict(stats.analyse(rows, meta), **stats.outcomes(rows)), "lab": lab,
                           "folder": os.path.relpath(d, os.path.dirname(os.path.dirname(d)))})
    lines = [tables.table(SUMMARY_HEAD, body)] + notes.lines()
    lines += kernels_table(folders) + lab_2011(guests)
    text = "\n".join(lines) + "\n"
    os.makedirs(top, exist_ok=True)
    with open(os.path.join(top, "summary.md"), "w") as f:
        f.write(text)
    print(text)
    say(f"lab: results in {os.path.relpath(top, ROOT)}/ (one folder per suite, summary.md)")


def lab_2011(guests):
    """The 2011 post's probes (shared/seeds/003: seconds for 10M calls)
    beside each guest's SystemTap, in instructions per event: never the
    same unit, so side by side, never divided."""
    if not guests:
        return []
    y, vals = tables.Y2011, [tables.guest_2011(g) for g in guests]
    body = [["bare call (baseline)", f"{y['bare_s']:.2f} s"]]
    body += [[label, f"{y[key]:.2f} s" if key else "-"] for label, key, _ in tables.Y2011_ROWS]
    body.insert(3, ["gettimeofday_ns() share", f"{y['gettimeofday_s']:.1f} s"])
    for row in body:
        row += [v.get(row[0], "-") for v in vals]
    return ["", "SystemTap's 2011 probes (2011: seconds for 10M calls, Fedora 14, SystemTap 1.3, "
            "`stap -F`) beside each guest's, in instructions per event:", "",
            tables.table(["10M calls, 1 thread", "2011 [s]"]
                         + [tables.guest_head(g) for g in guests], body)]


if __name__ == "__main__":
    sys.exit(main())
