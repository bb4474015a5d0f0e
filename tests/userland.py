"""userland.py: today's Debian as the userland the kit runs in, on this
machine's kernel (issue 57): a root file system of RELEASE made once with
mmdebstrap (the apt variant, with only what .ci/run gives a bare machine:
gcc, make, binutils, python3, and git to clone), cached in
build/userland/RELEASE/base with the list it was made from; each use works
on a fresh copy of it (so the kit's own installs are tried every time),
with /proc, /sys and /dev (and /dev/shm) mounted, the host's resolver,
apt's downloads kept between uses in build/userland/RELEASE/archives, and
a clone of this checkout's HEAD at /kit.  Everything mounted is unmounted
and the copy removed on leaving, whatever happened: the paths it mounted,
exactly (ChrootMounts); then, by scripts/mountinfo.py's clear, whatever
is still mounted at or below the copy, read from /proc/self/mountinfo
with its octal escapes decoded (a checkout under a path with a space);
then the copy removed only where nothing is mounted there any more, and
never through a mount point (a folder on another file system stops the
removal, named): the host's /dev and /sys are bound in there.

Nothing to run: tests/test_userland.py uses it (make test-userland).
"""
import contextlib
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from lab.mounts import Mounts  # noqa: E402
from lab.suite import mirror  # noqa: E402
from mountinfo import clear  # noqa: E402

BASE = ["gcc", "make", "binutils", "python3", "git", "ca-certificates"]  # .ci/run's, and git
MMDEBSTRAP_S = 1800
TOP = os.path.join(ROOT, "build", "userland")


class Unavailable(Exception):
    """The userland cannot be had here (no mirror, no mmdebstrap): a skip."""


def sh(cmd, log, timeout=None, **kw):
    """CMD to its end, its output appended to LOG; its exit status."""
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              timeout=timeout, **kw).returncode


class ChrootMounts(Mounts):
    """The userland's mounts (BINDS: [(mount's arguments, the path in ROOTFS)]),
    each undone exactly on leaving, also where a later one failed
    (lab.mounts.Mounts'), the mount commands in LOG.  Each --rbind's mounts
    below are made slaves (the host's: an unmount there is not shared
    back), again on leaving (a Ctrl-C between)."""

    def __init__(self, rootfs, binds, log):
        super().__init__(rootfs, binds)
        self.log = log

    def mount(self, args, path):
        if sh(["mount", *args, path], self.log) != 0:
            raise RuntimeError(f"could not mount {os.path.relpath(path, self.rootfs)} in "
                               f"{self.rootfs}: see {self.log}")
        if args[0] == "--rbind":
            sh(["mount", "--make-rslave", path], self.log)

    def __exit__(self, *exc):
        for path in self.done:
            sh(["mount", "--make-rslave", path], self.log)
        super().__exit__(*exc)


def binds(archives):
    """The chroot's mounts: /proc, the host's /sys and /dev (and their mounts
    below: /dev/shm, /dev/pts), apt's downloads kept in ARCHIVES."""
    return [(["-t", "proc", "proc"], "proc"), (["--rbind", "/sys"], "sys"),
            (["--rbind", "/dev"], "dev"), (["--bind", archives], "var/cache/apt/archives")]


def base(release, log):
    """RELEASE's root file system, made once (seconds it took, or 0 where
    the cache served)."""
    top = os.path.join(TOP, release)
    root, ok = os.path.join(top, "base"), os.path.join(top, "base.ok")
    if os.path.exists(ok) and open(ok).read().split() == BASE and os.path.isdir(root):
        return 0
    m = mirror()
    if not m:
        raise Unavailable("no Debian mirror in the host's apt sources")
    if not shutil.which("mmdebstrap"):
        raise Unavailable("mmdebstrap not found (Debian package mmdebstrap)")
    os.makedirs(top, exist_ok=True)
    tmp = root + ".tmp"
    clear(tmp)
    t0 = time.monotonic()
    try:
        code = sh(["mmdebstrap", "--variant=apt", "--include=" + ",".join(BASE), release, tmp, m],
                  log, timeout=MMDEBSTRAP_S)
        if code != 0:
            raise RuntimeError(f"mmdebstrap {release} failed (exit {code}): see {log}")
    except BaseException:
        clear(tmp)
        raise
    if os.path.exists(ok):
        os.remove(ok)
    clear(root)
    os.rename(tmp, root)
    with open(ok, "w") as f:
        f.write(" ".join(BASE) + "\n")
    return time.monotonic() - t0


@contextlib.contextmanager
def chroot(release, log):
    """A fresh copy of RELEASE's base with its mounts and the kit at /kit;
    yields its path; all of it undone on leaving."""
    top = os.path.join(TOP, release)
    work, archives = os.path.join(top, "work"), os.path.join(top, "archives")
    clear(work)  # (a run that was killed)
    os.makedirs(os.path.join(archives, "partial"), exist_ok=True)
    try:
        if sh(["cp", "-a", "--reflink=auto", os.path.join(top, "base"), work], log) != 0:
            raise RuntimeError(f"could not copy the {release} base: see {log}")
        shutil.copy("/etc/resolv.conf", os.path.join(work, "etc", "resolv.conf"))
        with ChrootMounts(work, binds(archives), log):
            if sh(["git", "clone", "-q", ROOT, os.path.join(work, "kit")], log) != 0:
                raise RuntimeError(f"could not clone the checkout into the {release} userland")
            yield work
    finally:
        clear(work)  # (what the run in it mounted there, too)


def run(work, script, log, timeout):
    """SCRIPT (a fixed sh line of the test's, never input) in the chroot at
    /kit, as root, as a newcomer runs it: not as CI (CI=true would make
    make check's skips for what it never installs, gdb and valgrind,
    failures); (exit status, its output)."""
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8",
           "DEBIAN_FRONTEND": "noninteractive"}
    p = subprocess.run(["chroot", work, "/bin/sh", "-c", f"cd /kit && {script}"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       errors="replace", env=env, stdin=subprocess.DEVNULL, timeout=timeout)
    with open(log, "a") as f:
        f.write(f"$ chroot {work} sh -c 'cd /kit && {script}'\n{p.stdout}")
    return p.returncode, p.stdout
