"""lab/suite.py: one Debian suite's guest, on the host's side: the
suite names and what each needs, the host's Debian mirror, its kernel
(from its root file system, lab/rootfs.py's, cached in build/lab/SUITE/),
its base image (mkfs.ext4 -d: no loop device, no mount; made once, every
guest boots it read-only), the kit copied into it and each guest's drive
of the kit made from that, and the results folder read back out of one
(debugfs).  Needs root, mmdebstrap, e2fsprogs, about 4 GB of disk per
suite (its root file system and base image) and the host's Debian
mirror (need_host_tools installs the tools).

Nothing to run: lab/steps.py drives a Suite.
"""
import fcntl
import glob
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import configs
import kin
import record
import workloads
from bodies import BODY_BUILD
import debpkgs
import host
import kitlock
import leftovers
import mountinfo
from measure import plan
import trusted
from .init import boot_script, write_init
from host import ROOT, say
from .common import (BOOT_INIT, GUEST_KIT, LAB_DIR, LAB_THREADS, ROOTFS_OK, TIMINGS,
                     WHERE_THREADS, LabError, sh)

HOST_PACKAGES = {"mmdebstrap": "mmdebstrap", "qemu-system-x86_64": "qemu-system-x86",
                 "mkfs.ext4": "e2fsprogs", "debugfs": "e2fsprogs"}
# Suites and what each needs (lab/rootfs.py builds their root file systems).
SUITES = {"sid": [], "trixie": [], "bookworm": []}
# The kernel axis: LAB=SUITE:KERNEL is SUITE's root file system and tools
# with KERNEL's kernel and headers (KERNEL_PACKAGES, pkg/KERNEL for apt),
# KERNEL any suite of the mirror's (the_kernels_there checks, before
# anything is built); these are the ones the kit knows to offer one.
KERNEL_SUITES = ("bookworm", "bookworm-backports", "trixie", "trixie-backports", "sid",
                 "experimental")
KERNEL_PACKAGES = ("linux-image-amd64", "linux-headers-amd64")
KERNEL_NAME = r"[a-z]+(-backports)?"  # a Debian suite's name, as LAB may give it
IMAGE_MB = 4096
BASE = "base.img"  # LAB_DIR/SUITE's: its root file system as every guest boots it (base_image)
QUICK_CONFIGS = ["baseline", "stap-mark", "stap-mark-alibi"]  # the baseline: overheads
# WHERE=1: where one event's instructions go, for a probe of each path: the
# emulated 1-byte nop under ftrace and bpftrace, the probe on the 10-byte
# nop (the call 7.2's uprobe syscall optimises it into; never hit before
# 7.2), SystemTap's module, a function-entry probe (single_trace's first
# instruction, single-stepped)
WHERE_CONFIGS = ["baseline", "ftrace-sdt", "bpftrace-sdt-count", "site-sdt-nop10-at1-ftrace",
                 "stap-mark-empty", "ftrace-function"]


def clear(path):
    """PATH gone, what is mounted below it unmounted first, never removed
    through a mount (mountinfo.clear); its refusal the lab's one line."""
    try:
        mountinfo.clear(path)
    except mountinfo.Refused as e:
        raise LabError(str(e)) from None


def put_kit(rootfs, suite_dir, timings=None):
    """The repository, with its builds, at /kit in the root file system
    ROOTFS (make lab's guests; scripts/lava's image), with TIMINGS (the
    files sizing the guest's runs; default: SUITE_DIR's own)."""
    dst = os.path.join(rootfs, GUEST_KIT.lstrip("/"))
    shutil.rmtree(dst, ignore_errors=True)
    # Not the host's timings.json: a guest sizes its runs by its own
    # (one file per unit, kept in build/lab/SUITE/ between labs).
    anywhere = shutil.ignore_patterns("results", ".git", leftovers.SCRATCH_GLOB, "stap-kernel",
                                      "perf-buildid", "*.pyc", "timings.json")
    build = os.path.join(ROOT, "build")

    def skip(d, names):  # build/'s root file systems, not the wing scripts/lab/
        return anywhere(d, names) | (set(host.ROOT_FILE_SYSTEMS) & set(names)
                                     if os.path.realpath(d) == os.path.realpath(build) else set())
    shutil.copytree(ROOT, dst, ignore=skip, symlinks=True)
    os.makedirs(os.path.join(dst, "results"), exist_ok=True)
    for t in glob.glob(os.path.join(suite_dir, TIMINGS.format("*"))) if timings is None else timings:
        shutil.copy(t, os.path.join(dst, "results", os.path.basename(t)))
    os.makedirs(os.path.join(dst, "build", "lab-modules"), exist_ok=True)  # maybe none
    compile_kit(rootfs)
    return dst


def compile_kit(rootfs):
    """The kit's Python in ROOTFS compiled by the guest's own python3, here
    at the host's speed (each guest's runner compiled it at its start, some
    3 s under TCG): as root alone (chroot), in a clean environment under
    umask 022, as the guest's init would have.  Where it cannot (no root,
    a root without python3), the guest compiles it itself."""
    if os.geteuid() != 0:
        return
    try:
        subprocess.run(["chroot", rootfs, "/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "sh", "-c",
                        f"umask 022 && exec python3 -I -m compileall -q {GUEST_KIT}/scripts"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       stdin=subprocess.DEVNULL, timeout=120)
    except (OSError, subprocess.SubprocessError):
        pass


def make_image(rootfs, img, log, mb=IMAGE_MB):
    """An ext4 image IMG of ROOTFS, MB large (mkfs.ext4 -d: no loop
    device, no mount)."""
    with open(img, "wb") as f:
        f.truncate(mb * 2 ** 20)
    sh(["mkfs.ext4", "-q", "-F", "-d", rootfs, img], log)


def mirror():
    """The host's Debian mirror (its apt sources), never a name of ours
    (debpkgs.mirror: one home, the source downloads' too)."""
    return debpkgs.mirror()


def need_host_tools(no_install):
    """The lab's own tools (HOST_PACKAGES), and the packages the builds
    need (`make needs`): the guests run the builds made here, so a build
    make skips is a skipped configuration in every guest."""
    missing = sorted({p for c, p in HOST_PACKAGES.items() if not shutil.which(c)})
    builds = host.build_needs()
    if missing or builds:
        debpkgs.install("lab", sorted(set(missing) | builds), no_install)
        missing = sorted({p for c, p in HOST_PACKAGES.items() if not shutil.which(c)})
    if missing:
        raise LabError(f"missing Debian packages: {' '.join(missing)}"
                       + (" (NO_INSTALL=1)" if no_install else ""))


def refused(who, variable, shown, names, root_for):
    """2, said, where WHO (make lab, make atlas) cannot start: a kernel of
    NAMES the mirror does not have (VARIABLE 'SHOWN' not allowed, before
    anything is built), or no root (needed for ROOT_FOR); else None."""
    try:
        why = the_kernels_there(names)
    except LabError as e:
        why = str(e)
    if why:
        say(f"{who}: {variable} '{shown}' is not allowed: {why}")
        return 2
    if os.geteuid() != 0:
        say(f"{who}: needs root ({root_for})")
        return 2
    return None


def host_ready(who, args, locked=lambda: None):
    """The kit's lock taken for WHO (held until it exits), LOCKED() said
    under it, then the lab's tools and builds made once, before a guest
    would each make them; False where a build another user could have put
    there was refused (trusted.py)."""
    kitlock.lock(who, args.lock_wait_s)
    locked()
    need_host_tools(args.no_install)
    return trusted.make_all(who)


def split(name):
    """(userland suite, kernel suite) of a LAB entry SUITE or SUITE:KERNEL."""
    userland, _, kernel = name.partition(":")
    return userland, kernel or userland


def folder_name(name):
    """A LAB entry as a folder's name: sid:trixie-backports is sid+trixie-backports."""
    return name.replace(":", "+")


def release_there(m, suite, timeout=30):
    """Whether the mirror M has SUITE (its dists/SUITE/Release); LabError
    where the mirror cannot be asked."""
    try:
        with urllib.request.urlopen(f"{m}/dists/{suite}/Release", timeout=timeout):
            return True
    except urllib.error.HTTPError as e:
        if e.code in (403, 404, 410):
            return False
        raise LabError(f"the mirror answered {e.code} for dists/{suite}/Release") from e
    except (urllib.error.URLError, OSError) as e:
        raise LabError(f"cannot reach the host's Debian mirror to check dists/{suite}: "
                       f"{getattr(e, 'reason', e)}") from e


def the_kernels_there(names):
    """None, or why a LAB entry's kernel suite is not in the host's mirror,
    naming those of KERNEL_SUITES it has: asked before anything is built."""
    wanted = sorted({k for n in names for u, k in [split(n)] if k != u})
    if not wanted:
        return None
    m = mirror()
    if not m:
        return "no Debian mirror in the host's apt sources to take a kernel from"
    missing = [k for k in wanted if not release_there(m, k)]
    if not missing:
        return None
    why = f"the host's Debian mirror has no {', '.join(missing)} (dists/SUITE/Release)"
    try:
        have = [k for k in KERNEL_SUITES if release_there(m, k)]
    except LabError as e:  # what it has cannot be listed: what it lacks still stands
        return f"{why}; what it has could not be listed ({e})"
    return (f"{why}; the kernels' suites it has: "
            f"{', '.join(have) or 'none of ' + ', '.join(KERNEL_SUITES)}")


class Suite:
    """One suite's lab: its cache folder (build/lab/SUITE/), root file
    system, results folder (OUT), the guests that run it and what could
    not be built for it."""

    def __init__(self, name, args, folder_root, log):
        self.name, self.args, self.log = name, args, log
        self.userland, self.kernel_suite = split(name)
        self.slug = folder_name(name)
        self.dir = os.path.join(LAB_DIR, self.slug)
        self.rootfs = os.path.join(self.dir, "rootfs")
        self.base = os.path.join(self.dir, BASE)
        self.kit = os.path.join(self.rootfs, GUEST_KIT.lstrip("/"))  # put_kit's, in the rootfs
        self.out = os.path.join(folder_root, self.slug)
        self.guests = []  # the guests booted, and those a TCG run boots (tcg)
        self.whole = self.tcg = self.vmlinuz = self.initrd = None
        self.debian_initrd = None  # the kernel's own (initrd is the kit's where it was made)
        self.unbuilt = {}  # configuration -> why its module did not build
        self.runtime = "module"  # SystemTap's in the guest (STAP_RUNTIME)
        self.threads = WHERE_THREADS if getattr(args, "where", False) else LAB_THREADS
        self.plugin = None  # WHERE=1: (the plugin's .so, where it writes), lab/plugin.py
        self.held = None  # the root file system's lock, while this lab holds it (hold)
        self.fetched = []  # the folders fetch made (removed at the end: this lab's own)

    # 0. the root file system's lock: two labs of one suite at once (make
    # atlas: a kernel's lab and its WHERE=1 lab) take turns from building
    # or checking the root file system to their kit's drives made from it
    # (the kit, its modules and the init scripts are put in it meanwhile);
    # their guests then run side by side, the base image shared read-only
    def hold(self):
        if self.held:
            return
        os.makedirs(LAB_DIR, exist_ok=True)
        f = open(os.path.join(LAB_DIR, f"{self.slug}.lock"), "a+")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"lab: {self.name}: another lab is preparing this suite's root file system; "
                "waiting for it (its guests and this one's then run at once)")
            try:
                fcntl.flock(f, fcntl.LOCK_EX)
            except BaseException:
                f.close()
                raise
        self.held = f

    def release(self):
        if self.held:
            self.held.close()  # (the file stays: removing it would race the next one's open)
            self.held = None

    def configs(self):
        """The suite's configurations: LAB_CONFIGS, QUICK's, or every one
        (what cannot run there says why) but those of a real program the
        guests do not hold (workloads.py's in_lab: PostgreSQL, a user's),
        a user's script's (make run SCRIPT=, never in a guest) and, unless
        LAB_CONFIGS names them, the probe bodies' (docs/bodies.md: 30 rows
        that would double a make lab's time)."""
        def here(c):
            return (not c.workload or workloads.get(c.workload).in_lab) \
                and c.mode != configs.SCRIPT_MODE
        if self.args.lab_configs:  # WHERE=1: with their baselines, its windows' yardstick
            got = [c for c in self.args.lab_configs if here(c)]
            if self.args.where:
                base = {kin.against(c.name) for c in got}
                got = [c for c in configs.CONFIGS if c in got or c.name in base]
            return got
        if self.args.where:
            return [configs.BY_NAME[n] for n in WHERE_CONFIGS]
        if self.args.quick:
            return [configs.BY_NAME[n] for n in QUICK_CONFIGS]
        return [c for c in configs.CONFIGS if here(c) and c.build != BODY_BUILD]

    # 1. the root file system (lab/rootfs.py's) and its kernel
    def kernel(self):
        """(release, vmlinuz, initrd) of the guest's kernel."""
        rel = sorted(os.listdir(os.path.join(self.rootfs, "lib", "modules")))
        if not rel:
            raise LabError("the guest has no kernel in /lib/modules")
        rel = rel[-1]
        return (rel, os.path.join(self.rootfs, "boot", f"vmlinuz-{rel}"),
                os.path.join(self.rootfs, "boot", f"initrd.img-{rel}"))

    def timings(self, unit):
        """(the file sizing the guest's runs in UNIT, the suite it is from):
        its own (LAB_DIR/SUITE/TIMINGS), else, on a kernel's first lab, that
        of a guest with the same tools on another kernel (its own suite's
        first, then the newest): the same programs and tracers, whose runs
        it sizes to about MAX_RUN_S and whose configurations it shares
        between the guests, so no cell needs a warm-up to size it; what it
        measures is its own ((None, None): no such file, each cell warms up)."""
        name = TIMINGS.format(unit)
        own = os.path.join(self.dir, name)
        if os.path.exists(own):
            return own, self.name
        if getattr(self.args, "where", False):  # WHERE=1: its runs' size is fixed (WHERE_ITER)
            return None, None
        kin = sorted(glob.glob(os.path.join(LAB_DIR, folder_name(self.userland) + "+*", name)),
                     key=os.path.getmtime, reverse=True)
        for t in [os.path.join(LAB_DIR, folder_name(self.userland), name), *kin]:
            if os.path.exists(t):
                return t, os.path.basename(os.path.dirname(t)).replace("+", ":")
        return None, None

    # 2. the base image: the root file system, without the kit, as every
    # guest boots it (read-only: qemu's snapshot=on), made once for each
    # root file system and first init (BOOT_INIT, lab/init-boot.sh), where
    # a lab made an image of some 2 GB for each guest before (mkfs.ext4 -d:
    # some 10 s of CPU a lab); the kit comes on a drive of its own (images)
    def base_image(self):
        ok, made = os.path.join(self.dir, ROOTFS_OK), self.base + ".ok"
        key = f"{os.stat(ok).st_mtime_ns} {hashlib.sha256(boot_script().encode()).hexdigest()}"
        if os.path.exists(self.base) and plan.load(made) == {"made_from": key, "mtime_ns": os.stat(
                self.base).st_mtime_ns}:  # (and not written since: else made anew)
            return
        shutil.rmtree(self.kit, ignore_errors=True)  # put_kit's copy, made anew for each lab
        os.makedirs(self.kit)  # where BOOT_INIT mounts the kit's drive
        for old in glob.glob(os.path.join(self.rootfs, "kit-*.sh")):  # inits of labs before it
            os.unlink(old)
        write_init(self, BOOT_INIT, boot_script())
        say(f"lab: {self.name}: making its base image (once for this root file system)")
        t0, tmp = time.monotonic(), self.base + ".tmp"
        try:
            make_image(self.rootfs, tmp, self.log)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        os.replace(tmp, self.base)  # a guest booted from the old one keeps its own (open) file
        host.write_json(made, {"made_from": key, "mtime_ns": os.stat(self.base).st_mtime_ns})
        say(f"lab: {self.name}: base image in {time.monotonic() - t0:.0f} s")

    def put_kit(self):
        """The kit in the root file system, with the timings that size its
        runs in each unit (timings); {unit: the suite they are from} where
        they are another kernel's."""
        got = {u: self.timings(u) for u in record.UNITS}
        borrowed = {u: src for u, (_, src) in got.items() if src and src != self.name}
        for u, src in borrowed.items():
            say(f"lab: {self.name}: its runs in {u} sized from {src}'s guest timings "
                "(this kernel's first lab here: no warm-up needed to size them)")
        return put_kit(self.rootfs, self.dir, [p for p, _ in got.values() if p]), borrowed

    # the guests' drives of the kit, one each: the first made from the kit
    # in the root file system (put_kit's, the init scripts in it), the
    # others copies of it (sparse)
    def images(self, guests):
        for g in guests:
            if os.path.exists(g.img):
                os.unlink(g.img)
        make_image(self.kit, guests[0].img, self.log)
        for g in guests[1:]:
            sh(["cp", "--sparse=always", guests[0].img, g.img], self.log)

    def fetch(self, img, replay=False):
        """The guest's results folder, out of its drive of the kit (IMG;
        debugfs: no mount).
        REPLAY: the guest did not shut down, so its last rows may be in the
        file system's journal alone: e2fsck replays it first."""
        if replay:
            with open(self.log, "a") as f:  # exit 1: it replayed (changed) something
                subprocess.run(["e2fsck", "-E", "journal_only", "-y", img], stdout=f,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=600)
        dst = tempfile.mkdtemp(prefix="lab-fetch-", dir=self.dir)
        self.fetched.append(dst)
        sh(["debugfs", "-R", f"rdump /results {dst}", img], self.log)
        return os.path.join(dst, "results")
