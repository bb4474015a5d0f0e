#!/usr/bin/env python3
"""lab/__main__.py: `make lab`: every configuration in throwaway guests whose
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

Per suite, cached under build/lab/SUITE/: a root file system made by
mmdebstrap from the host's Debian mirror, SystemTap's pre-flight and
modules built in its chroot, the kit's own initramfs; then guests booted
with qemu (KVM where it reaches userspace, else TCG, where by default
(ICOUNT=1) a guest's clock counts its instructions: a second unit beside
the host's ns, never mixed with it), each running the kit's runner over
its share of the configurations, their folders copied back into
results/<stamp>-lab/SUITE/.  docs/lab.md tells each step.  Needs root,
mmdebstrap, qemu, e2fsprogs (installed as `make run` installs, unless
NO_INSTALL=1), about 4 GB of disk per suite (its root file system and
base image), and the host's Debian mirror.  Nothing is left running or
mounted, whatever happens.

This file is the door: main(); the inputs are lab/inputs.py's, the
rooms scripts/lab/'s (lab/__init__.py names them), and the top
folder's summary.md is scripts/report.py's (render/lab.py; with
LIFECYCLE=1, render/lifecycle.py).
"""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # scripts/
sys.path[0] = HERE  # (run as `python3 scripts/lab`, the path began at the wing)

import door  # noqa: E402
import host  # noqa: E402
import record  # noqa: E402
from record import lab as lab_format  # noqa: E402
from host import ROOT, say  # noqa: E402
from lab.common import LAB_DIR, LAB_TOP, WHERE_TOP  # noqa: E402
from lab.inputs import PARAMS, parse_args  # noqa: E402
from lab.steps import run_suite  # noqa: E402
from record.where import WHERE_CSV  # noqa: E402
from lab.suite import host_ready, refused  # noqa: E402


def main(argv=None):
    args = door.inputs(parse_args, argv, __doc__, PARAMS)
    if args is None:
        return 0
    no = refused("lab", "LAB", ",".join(args.lab), args.lab,
                 "mmdebstrap, chroot, module loading in the guest")
    if no:
        return no
    # SIGINT, SIGTERM and SIGHUP alike (host.STOPS): host.Interrupted is a
    # KeyboardInterrupt, so every Ctrl-C path below takes it; only the
    # first stops the lab, and a deferred step (apt-get) ends first.
    folders, top = [], None
    with host.stoppable():
        try:
            # one kit at a time (make atlas's two labs of a kernel: under its lock)
            if not host_ready("lab", args):
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
        finally:  # the top folder's kind, whatever its suites wrote
            if top and os.path.isdir(top):
                record.stamp(top, lab_format.KIND)
    if args.shell:
        return 0
    # The report writes and prints the top folder's summary.md (it draws no
    # plots there, so it is not re-run under another interpreter: its
    # REEXEC), then each suite's report.md.
    door.report(top, env=dict(os.environ, KIT_REPORT_REEXEC="1"))
    say(f"lab: results in {os.path.relpath(top, ROOT)}/ (one folder per suite, summary.md)")
    for d in folders:
        door.report(d, stdout=subprocess.DEVNULL)
    if args.where and not all(os.path.exists(os.path.join(d, WHERE_CSV)) for d in folders):
        return 1  # its reason is in the folder's meta.json "lab" "where", said above
    return 0


if __name__ == "__main__":
    sys.exit(main())
