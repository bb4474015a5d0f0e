"""lab/rootfs.py: a suite's root file system, on the host's side: the
packages it holds, and its build with mmdebstrap from the host's Debian
mirror, cached in build/lab/SUITE/ with the package list it was made
with (rootfs.ok).  A new one is built beside the old and takes its place
only once whole, so a build that fails leaves the cache as it was.
Debian's own initramfs is made once in it, at the end (ONE_INITRD says
why).  Needs root, mmdebstrap and the host's Debian mirror.

Nothing to run: lab/steps.py calls make(suite).
"""
import os
import shutil
import subprocess
import time

import host
from host import ROOT, say
from tracers import BACKENDS
from .common import PREFLIGHT, ROOTFS_OK, LabError, sh
from .suite import KERNEL_PACKAGES, clear, mirror

# The guest's own: a kernel to boot and its headers (SystemTap's modules),
# what stap compiles with, what the runner and the init script use.
GUEST_BASE = ["linux-image-amd64", "linux-headers-amd64", "gcc", "make", "python3", "procps",
              "kmod", "mount"]
# sid's Release file in the host's mirror is past its Valid-Until date (a
# snapshot), so apt must not check that date there; nothing else is
# weakened (signatures are still checked).
SID_APTOPT = ['--aptopt=Acquire::Check-Valid-Until "false"']
MIN_FREE_MB = 4 * 1024  # per suite: the root file system and its base image
MMDEBSTRAP_S = 1800
# Debian's initramfs, made once.  Left to themselves, the kernel's hook
# makes it and the generator's trigger (initramfs-tools' or dracut's, each
# activated by its own install) makes it again: 57 s and 60 s of a 224 s
# bookworm build here (docs/findings/2026-12-07-one-initramfs.md).  With
# INITRD=No in the build's environment the kernel's hook (both
# generators') makes none, so the trigger finds none to update; this
# hook then makes it once for each kernel (INITRD unset again; no kernel
# listed fails the build), with the /initrd.img link (linux-update-symlinks)
# a stock install has.  The guests boot the kit's
# own initramfs (lab/initrd.py); Debian's is the fallback and LAVA's.
ONE_INITRD_ENV = {"INITRD": "No"}
ONE_INITRD = ('chroot "$1" env -u INITRD sh -ec \'vs=$(linux-version list); [ -n "$vs" ]; '
              'for v in $vs; do update-initramfs -c -k "$v"; '
              'linux-update-symlinks install "$v" "/boot/vmlinuz-$v"; done\'')


def packages():
    """What a guest's root file system holds: its own base, every tracer
    back-end's programs (each back-end's `needs`) and the runtime of every
    build the host made (`make packages`), so that every configuration
    that can run in a guest does, installed as `make run` installs it."""
    r = subprocess.run([*host.MAKE, "packages"], stdout=subprocess.PIPE,
                       text=True, check=True)
    tools = {p for b in BACKENDS.values() for p in b.needs.values()}
    return GUEST_BASE + sorted(tools | set(r.stdout.split()))


def make(suite):
    """SUITE's root file system (lab/suite.py's Suite), built unless the
    cache holds one made with today's package list."""
    ok = os.path.join(suite.dir, ROOTFS_OK)
    want = packages()
    if suite.kernel_suite != suite.userland:  # the kernel and its headers from there
        want = [f"{p}/{suite.kernel_suite}" if p in KERNEL_PACKAGES else p for p in want]
    if (os.path.exists(ok) and open(ok).read().split() == want
            and os.path.isdir(os.path.join(suite.rootfs, "lib", "modules"))):
        return
    m = mirror()
    if not m:
        raise LabError("no Debian mirror in the host's apt sources to build a guest from")
    free = shutil.disk_usage(os.path.dirname(suite.dir) if os.path.isdir(
        os.path.dirname(suite.dir)) else ROOT).free // 2 ** 20
    if free < MIN_FREE_MB:
        raise LabError(f"only {free} MB free for the guest, {MIN_FREE_MB} MB needed")
    tmp = suite.rootfs + ".tmp"
    clear(tmp)  # (what a killed build left, its mounts too)
    os.makedirs(suite.dir, exist_ok=True)
    say(f"lab: {suite.name}: building its root file system with mmdebstrap "
        "(a few minutes, once; cached in build/lab/)")
    t0 = time.monotonic()
    try:
        sh(["mmdebstrap", "--variant=apt", "--include=" + ",".join(want),
            f"--customize-hook={ONE_INITRD}", *aptopts(suite), suite.userland, tmp,
            *sources(suite, m)],
           suite.log, timeout=MMDEBSTRAP_S, env={**os.environ, **ONE_INITRD_ENV})
    except BaseException:  # LabError, Ctrl-C: nothing half-made is left
        clear(tmp)
        if not os.listdir(suite.dir):  # (a SUITE:KERNEL apt could not install)
            os.rmdir(suite.dir)
        raise
    for old in (ok, os.path.join(suite.dir, PREFLIGHT)):
        if os.path.exists(old):  # the list: from here until the rename, none names the
            os.remove(old)       # folder; the pre-flight's answers: the old one's
    clear(suite.rootfs)
    os.rename(tmp, suite.rootfs)
    with open(ok, "w") as f:
        f.write(f"{' '.join(want)}\n")
    say(f"lab: {suite.name}: root file system in {time.monotonic() - t0:.0f} s")


def sources(suite, m):
    """mmdebstrap's mirror lines: the suite's own; with another kernel's
    suite, that one too (and a -backports suite's base, which its
    packages assume)."""
    if suite.kernel_suite == suite.userland:
        return [m]
    base = suite.kernel_suite.removesuffix("-backports")
    return [f"deb {m} {x} main" for x in dict.fromkeys([suite.userland, suite.kernel_suite,
                                                        base])]


def aptopts(suite):
    """sid's (and a mixed guest's) Valid-Until waived; a mixed guest's
    packages from its own suite wherever it has them (Default-Release),
    the kernel's only as asked (pkg/KERNEL) and what that needs."""
    if suite.kernel_suite == suite.userland:
        return SID_APTOPT if suite.name == "sid" else []
    return [*SID_APTOPT, f'--aptopt=APT::Default-Release "{suite.userland}"']
