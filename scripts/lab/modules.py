"""lab/modules.py: SystemTap in the chroot of a suite's root file
system, at the host's speed: the pre-flight (can its SystemTap build
modules for its kernel?), its version, and each SystemTap configuration's
module built beforehand for the guest (tracers/stap_build.py does the
building; here the chroot's /proc and /dev are mounted around it and the
lab says what happened).  Modules are kept in build/lab/SUITE/modules/
until their script, flags, target or kernel change.  Needs root.

Nothing to run: lab/steps.py calls it.
"""
import hashlib
import os
import shutil
import tempfile

import host
from lifecycle.sites import LIB_MARKER, LIBRARY
from host import say
from measure import plan
from tracers import stap, stap_attached, stap_build, stap_preflight
from .common import GUEST_KIT, PREFLIGHT
from .mounts import Mounts


def version(suite):
    """The chroot's SystemTap version, or '?'."""
    return stap_build.version(suite.rootfs)


def preflight(suite, rel):
    """None if the chroot's SystemTap builds modules for its kernel REL, else
    why not; the answer kept in build/lab/SUITE/PREFLIGHT for this root file
    system (lab/rootfs.py removes it with the old one) by kernel, SystemTap
    and the target it probes, so a second lab of the suite (WHERE=1's)
    does not build the same module again."""
    try:
        with open(os.path.join(suite.kit, stap_preflight.TARGET),
                  "rb") as f:
            target = hashlib.sha256(f.read()).hexdigest()[:16]
    except OSError:
        target = "none"  # (not built: the pre-flight says so, each time)
    script = hashlib.sha256(stap_preflight.PREFLIGHT_SCRIPT.encode()).hexdigest()[:8]
    key = f"{rel} {version(suite)} {target} {script}"
    path = os.path.join(suite.dir, PREFLIGHT)
    known = plan.load(path)
    if key in known:
        return known[key]
    work = tempfile.mkdtemp(prefix="preflight-", dir=os.path.join(suite.rootfs, "tmp"))
    try:
        with Mounts(suite.rootfs):
            why = stap_build.preflight(suite.rootfs, rel, "/" + os.path.relpath(
                work, suite.rootfs), GUEST_KIT)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    # kept: a module built, or the compiler's own no (not a time-out, a
    # missing stap, a full disk: asked again next time)
    if target != "none" and (why is None or (stap_preflight.CANNOT in why
                                             and "error:" in why)):
        host.write_json(path, dict(known, **{key: why}), indent=1)
    return why


def build_modules(suite, rel, kit):
    """Each of SUITE's SystemTap configurations' module, into KIT's (the
    kit in the root file system) build/lab-modules/, where the guest's
    STAP_MODULES finds them; what did not build is in suite.unbuilt,
    saying why, and runs no more."""
    out = os.path.join(kit, "build", "lab-modules")

    def said(cfg, mod, why, seconds):
        if why:
            suite.unbuilt[cfg.name] = f"its module did not build in the chroot: {why}"
            say(f"lab: {suite.name}: {cfg.name}: {suite.unbuilt[cfg.name]}")
        else:
            say(f"lab: {suite.name}: built {mod} in {seconds:.0f} s")
    with Mounts(suite.rootfs):
        stap_build.build(suite.configs(), suite.rootfs, GUEST_KIT, rel, out,
                         os.path.join(suite.dir, "modules"), suite.log,
                         suite.args.stap_timing, said)
    return out


def build_bystander(suite, rel, kit, why):
    """make lab LIFECYCLE=1: the SystemTap bystander way's module
    (tracers/stap_attached.py's STAP_MODULE, of its stap_script) built in
    the chroot for the guest's kernel REL into KIT's build/lab-modules/,
    where the guest's lifecycle.py finds it (--lab-modules); where it
    cannot be built (WHY: the
    pre-flight's answer, else the build's), STAP_MODULE.why there says
    why, and the guest's row says it."""
    out = os.path.join(kit, "build", "lab-modules")
    os.makedirs(out, exist_ok=True)
    name = stap_attached.STAP_MODULE
    if not why:
        lib = f"{GUEST_KIT}/build/{os.path.basename(LIBRARY)}"
        with open(os.path.join(out, name + ".stp"), "w") as f:
            f.write(stap_attached.stap_script(lib, LIB_MARKER) + "\n")
        cmd = ["chroot", suite.rootfs, "sh", "-c", 'cd "$1" && shift && exec "$@"', "sh",
               f"{GUEST_KIT}/build/lab-modules", "stap", "-p4", "-r", f"/lib/modules/{rel}/build",
               "-m", name, *stap.MODULE_FLAGS, name + ".stp"]
        with Mounts(suite.rootfs):
            why = stap_build.failure(cmd, suite.log, stap_build.BUILD_S)
    if why:
        with open(os.path.join(out, name + ".why"), "w") as f:
            f.write(f"{why}\n")
    say(f"lab: {suite.name}: the stap bystander way's module: "
        + (f"not built: {why}" if why else f"built ({name}.ko)"))
