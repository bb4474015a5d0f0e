"""lab/steps.py: one suite of make lab, step by step: its root file
system (rootfs.py), kernel and the kit in it (suite.py), SystemTap's
pre-flight and modules in its chroot (modules.py), then either make lab-shell's guest
(shell) or its configurations dealt out to guests (shares.py) with their
init scripts (init.py), booted and watched (qemu.py), and their folders
brought back as one (merge.py).  Whatever happens, no qemu is left
running and the guests' drives of the kit are removed; Ctrl-C and SIGTERM keep the
rows the guests wrote.

Nothing to run: scripts/lab calls run_suite for each suite.
"""
import os
import shutil
import subprocess
import time

import kernel
from host import ROOT, say
from record import where

from . import init, initrd, modules, plugin, rootfs
from .common import GUEST_KIT, LabError
from .merge import bring_back, bring_back_lifecycle, lifecycle_folder, skipped_folder
from .qemu import GUEST_S, Guest, boot_guests
from .shares import guest_cost, guests_here, shares
from .suite import Suite


def run_suite(name, args, top, log, state):
    """Suite NAME's results folder, under TOP (None for the shell); LOG
    gets the commands' output, STATE what was found of KVM on this host."""
    suite = Suite(name, args, top, log)
    extra = {"suite": name}
    try:
        suite.hold()  # until its images are made (boot_guests), or the end
        rel, kit, why = prepare(suite, extra)
        if args.lifecycle and not args.shell:
            if "stap" in args.tracers:
                modules.build_bystander(suite, rel, kit, why)
            return run_lifecycle(suite, args, state, extra)
        stap_cfgs = [c for c in suite.configs() if c.tracer == "stap"]
        if suite.runtime == "module":
            if why and len(stap_cfgs) == len(suite.configs()) and not args.shell:
                return skipped_folder(suite, why, extra)
            if why:  # the other configurations still run in the guest
                suite.unbuilt.update((c.name, why) for c in stap_cfgs)
            elif not args.shell:  # in the shell, stap -F builds its own, as users run it
                modules.build_modules(suite, rel, kit)
        if args.shell:
            return shell(suite, rel, state)
        return run_guests(suite, args, state, extra)
    except LabError as e:
        say(f"lab: {name}: {e}")
        if args.shell:
            return None
        return (lifecycle_folder if args.lifecycle else skipped_folder)(suite, f"lab: {e}", extra)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: keep what the guests wrote, then stop
        for g in suite.guests:
            g.stop_qemu(grace=0)
        if suite.guests:  # (run_lifecycle says these once its guest is back)
            extra.setdefault("accel", suite.guests[0].accel)
            extra.setdefault("icount", suite.guests[0].icount)
        if any(g.reached for g in suite.guests) and not args.shell:
            why = "the lab was interrupted (Ctrl-C or SIGTERM)"
            try:  # a guest that had powered off finished
                ended = [(g, g.outcome() and why) for g in suite.guests]
                d = (bring_back_lifecycle(suite, *ended[0], extra) if args.lifecycle
                     else bring_back(suite, ended, extra))
                say(f"lab: {name}: the rows the guest wrote are in {os.path.relpath(d)}/")
            except LabError:
                pass
        raise
    finally:
        for g in suite.guests:
            g.stop_qemu()
        remove_own(suite)
        suite.release()


def remove_own(suite):
    """What SUITE's lab made in build/lab/SUITE/ for this run: its guests'
    drives of the kit (4 GB each, sparse: made anew each time; the base
    image is the suite's, kept) and the folders its
    results were fetched into; never another lab's of the suite beside it
    (make atlas: a kernel's lab and its WHERE=1 lab)."""
    for junk in suite.fetched:
        shutil.rmtree(junk, ignore_errors=True)
    for g in {id(g): g for g in [suite.whole, *(suite.tcg or []), *suite.guests] if g}.values():
        if os.path.exists(g.img):
            os.unlink(g.img)


def prepare(suite, extra):
    """SUITE's root file system, its kernel, the kit in it, the pre-flight
    and SystemTap's runtime in the guest, each said in EXTRA (the lab's
    facts); (kernel release, the kit's folder in the root file system,
    why SystemTap builds no module there or None)."""
    rootfs.make(suite)
    suite.base_image()
    rel, suite.vmlinuz, suite.debian_initrd = suite.kernel()
    suite.initrd = suite.debian_initrd
    try:  # the kit's own initramfs (lab/initrd.py says why)
        suite.initrd = initrd.lean(suite, rel)
    except LabError as e:
        say(f"lab: {suite.name}: booting Debian's own initramfs (the kit's could not be made: "
            f"{e})")
    extra.update(kernel=rel, stap=modules.version(suite))
    config = os.path.join(suite.rootfs, "boot", f"config-{rel}")
    if os.path.exists(config):  # what changes the figures, from the guest's own config
        with open(config) as f:
            extra["kernel_config"] = kernel.config_facts(f.read())
    kit, borrowed = suite.put_kit()
    if borrowed:  # the runs' sizes only: what they measure is this kernel's
        extra["timings_from"] = borrowed
    why = modules.preflight(suite, rel)
    say(f"lab: {suite.name}: pre-flight: " + (why or f"SystemTap {extra['stap']} builds modules "
                                              f"for kernel {rel}"))
    extra["preflight"] = why
    # SystemTap's runtime in the guest (STAP_RUNTIME): module needs the
    # pre-flight; auto takes bpf where it fails; bpf compiles in the guest.
    runtime = suite.args.stap_runtime
    suite.runtime = "bpf" if runtime == "bpf" or (why and runtime == "auto") else "module"
    extra["stap_runtime"] = suite.runtime
    return rel, kit, why


def shell(suite, rel, state):
    """make lab-shell: a guest of SUITE whose init is a shell in the kit,
    on the console until it is left."""
    init.shell_script(suite)
    g = suite.whole = Guest(suite, [])
    suite.images([g])
    say(f"lab: {suite.name}: a shell in the guest (kernel {rel}); the kit is in {GUEST_KIT}; "
        "`exit` powers it off")
    subprocess.run(g.command("kvm" if state.get("kvm") else "tcg", init.SHELL_INIT), env=g.env())
    return None


def run_guests(suite, args, state, extra):
    """SUITE's configurations (but those that could not be built) in its
    guests, one or several at once (shares), each with its init; the
    folder they bring back."""
    run = [c for c in suite.configs() if c.name not in suite.unbuilt]
    if args.where:  # the plugin counts the guest's instructions by address (one guest)
        so, version = plugin.plugin(suite.log, args.no_install)
        suite.plugin = (so, os.path.join(suite.dir, where.RAW))
        if os.path.exists(suite.plugin[1]):  # an earlier lab's, never mixed with this one's
            os.unlink(suite.plugin[1])
        extra["where"] = {"qemu": version, "plugin": os.path.relpath(plugin.SOURCE, ROOT)}
    suite.whole = Guest(suite, run)
    parts = shares(run, guests_here(args), guest_cost(suite, args))
    suite.tcg = ([suite.whole] if len(parts) == 1 else
                 [Guest(suite, p, k, len(parts)) for k, p in enumerate(parts)])
    for g in {id(g): g for g in [suite.whole, *suite.tcg]}.values():
        init.init_script(suite, g)
    limit = args.lab_time_limit or GUEST_S["quick" if args.quick else "full"]
    t0 = time.monotonic()
    guests = boot_guests(suite, limit, args, state)
    extra.update(accel=guests[0].accel, guest_s=round(time.monotonic() - t0),
                 icount=guests[0].icount, initramfs=os.path.basename(suite.initrd))
    return bring_back(suite, [(g, g.outcome()) for g in guests], extra)


def run_lifecycle(suite, args, state, extra):
    """make lab LIFECYCLE=1: one guest of SUITE runs make lifecycle
    (scripts/lifecycle, init.lifecycle_runner) in its own clock; the
    folder it brings back."""
    g = suite.whole = Guest(suite, [])
    suite.tcg = [g]
    init.init_script(suite, g)
    t0 = time.monotonic()
    boot_guests(suite, args.lab_time_limit or GUEST_S["full"], args, state)
    extra.update(accel=g.accel, guest_s=round(time.monotonic() - t0), icount=g.icount,
                 initramfs=os.path.basename(suite.initrd))
    return bring_back_lifecycle(suite, g, g.outcome(), extra)
