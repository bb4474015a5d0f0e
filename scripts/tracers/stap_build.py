"""stap_build.py: SystemTap's modules built ahead of time, for a kernel
other than the running one, in a chroot of the system that runs it
(make lab: its guests load them with `staprun -L`, STAP_MODULES=DIR,
instead of compiling at a tenth of the host's speed under emulation).

Each configuration's module is `stap -p4 -r TREE -m kit_CONFIG` with the
flags its run in the guest will have (Stap.for_guest: the module runtime,
STAP_TIMING), from the kit's root inside the chroot (the scripts name the
target relative to it, as users run them); a module with a hit report is
built on a terminal (stap_preflight.on_a_tty).  Built modules are kept in
a folder of the caller's, named by what they are built from (cache_path),
until the script, the flags, the target, the kernel or SystemTap change.
The pre-flight (stap_preflight.preflight) and stap's version are asked of
the chroot too.  Needs root (chroot), the chroot's SystemTap and kernel headers, and
its /proc and /dev mounted by the caller.

Nothing to run: lab/modules.py calls it.
"""
import concurrent.futures
import glob
import hashlib
import os
import shutil
import time

import host
from . import stap, stap_preflight

BUILD_S = 1200  # for one module's pass 4 in the chroot


def failure(cmd, log, timeout, **kw):
    """Runs CMD (a list) in a process group of its own (host.run), its
    output appended to LOG: None if it succeeded, else the line saying
    why, with the line of its output that says what failed
    (stap_preflight.first_error): 'PROG failed (exit N): ...' or 'PROG did not
    finish in T s: ...'."""
    try:
        code, out = host.run(cmd, timeout=timeout, log=log, group=True, **kw)
        why = None if code == 0 else f"failed (exit {code})"
    except host.Timeout as e:
        out, why = e.output, f"did not finish in {timeout} s"
    return why and f"{os.path.basename(cmd[0])} {why}: {stap_preflight.first_error(out)}"


def version(rootfs):
    """SystemTap's version in the chroot ROOTFS, or '?'."""
    return stap_preflight.stap_version(["chroot", rootfs]) or "?"


def preflight(rootfs, rel, work, kit):
    """stap_preflight.preflight in the chroot ROOTFS for its kernel REL:
    None, or why SystemTap builds no module there.  WORK (a folder under ROOTFS, the
    caller's to remove) and KIT (the kit's root) are paths inside it."""
    return stap_preflight.preflight(f"/lib/modules/{rel}/build", rel, ["chroot", rootfs],
                                    work, f"{kit}/{stap_preflight.TARGET}", cache=False)


def cache_path(folder, cfg, flags, rel, ver):
    """Where CFG's module is kept between builds, in FOLDER, named by what
    it is built from: the script, stap's FLAGS, the target it probes (its
    bytes: the probes are file offsets), the kernel REL and SystemTap VER."""
    h = hashlib.sha256("\0".join([*flags, rel, ver]).encode())
    for path in (cfg.script, stap_preflight.TARGET):
        with open(os.path.join(host.ROOT, path), "rb") as f:
            h.update(f.read())
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, f"{stap.prebuilt_name(cfg)}-{h.hexdigest()[:16]}.ko")


def build_one(be, cfg, rootfs, kit, rel, log):
    """Pass 4 of CFG's module in the chroot ROOTFS, from KIT (the kit's root
    inside it, where it leaves kit_CONFIG.ko), with BE's flags: None, or
    the line saying why it did not build."""
    # From the kit's root: the scripts name the target relative to it, as
    # users run them; pass 4 leaves MOD.ko there.
    cmd = ["chroot", rootfs, "sh", "-c", 'cd "$1" && shift && exec "$@"',
           "sh", kit, "stap", "-p4", "-r", f"/lib/modules/{rel}/build", "-m",
           stap.prebuilt_name(cfg), *be.cfg_flags(cfg), cfg.script]
    if be.reports(cfg):  # its hit report is built only on a terminal
        rc, text = stap_preflight.on_a_tty(cmd, log, BUILD_S)
        return None if rc == 0 else (stap_preflight.first_error(text) if rc else "timed out")
    return failure(cmd, log, BUILD_S)


def build(cfgs, rootfs, kit, rel, out, cache, log, timing, said):
    """The modules of CFGS (the SystemTap ones among them) for the chroot
    ROOTFS's kernel REL, into OUT (KIT: the kit's root inside the chroot;
    OUT: a folder of it, seen from here); each one kept in CACHE and taken
    from there while what it is built from is unchanged.  TIMING:
    STAP_TIMING in the guest.  SAID(cfg, module, why, seconds) hears of
    each module built (WHY None) or not (WHY: the line saying why; that
    configuration is the caller's to skip)."""
    be = stap.Stap.for_guest(timing)
    ver = version(rootfs)
    os.makedirs(out, exist_ok=True)
    here = os.path.join(rootfs, kit.lstrip("/"))  # where pass 4 leaves it, seen from here
    todo = []
    for cfg in [c for c in cfgs if c.tracer == "stap" and not be.skip_reason(c)]:
        mod = stap.prebuilt_name(cfg) + ".ko"
        cached = cache_path(cache, cfg, be.cfg_flags(cfg), rel, ver)
        if os.path.exists(cached):  # the same script, flags, target and kernel
            shutil.copy(cached, os.path.join(out, mod))
        else:
            todo.append((cfg, mod, cached))

    running = host.Started()  # the builds' commands, while they run

    def one(cfg):
        t0 = time.monotonic()
        with host.started(running):
            return build_one(be, cfg, rootfs, kit, rel, log), time.monotonic() - t0
    # One build at a time is one compiler on one CPU: as many at once as
    # the host has CPUs (each its own module, its own stap temporary folder).
    pool = concurrent.futures.ThreadPoolExecutor(max(1, min(len(todo), os.cpu_count() or 1)))
    try:
        done = [(cfg, mod, cached, pool.submit(one, cfg)) for cfg, mod, cached in todo]
        for cfg, mod, cached, fut in done:
            why, seconds = fut.result()
            if why:  # that configuration's rows say why; the rest run
                said(cfg, mod, why, seconds)
                continue
            os.replace(os.path.join(here, mod), os.path.join(out, mod))
            for old in glob.glob(os.path.join(cache, stap.prebuilt_name(cfg) + "-*.ko")):
                os.unlink(old)
            shutil.copy(os.path.join(out, mod), cached)
            said(cfg, mod, None, seconds)
    except BaseException:  # stopped: no new build starts, and the running ones (each in a
        # process group of its own, which the terminal's Ctrl-C does not reach, started by a
        # thread that no signal reaches) are stopped here, before the caller unmounts
        pool.shutdown(wait=False, cancel_futures=True)
        if len(running):
            host.say(f"stopping the {len(running)} module build(s) running")
        running.stop()
        raise
    finally:
        pool.shutdown(wait=True)

