#!/usr/bin/env python3
"""atlas/__main__.py: `make atlas`: every configuration on every Debian kernel the
mirror offers, with one suite's tools held still, in guest instructions
per event, beside the host's own ns; kept in one folder (docs/atlas/ by
default, committed) whose README.md is the report's own output.

    make atlas                                 # the six kernels below, sid's tools, THREADS=1..2
    make atlas ATLAS_KERNELS=trixie,sid        # some kernels only (the others already there stay)
    make atlas ATLAS_KERNELS=+experimental     # one more kernel in an existing atlas
    make atlas ATLAS_FRESH=1                   # measure again what is already there
    python3 scripts/report.py docs/atlas       # the atlas's tables again, from its folders (docs/atlas.md)

Each kernel is `make lab LAB=TOOLS:KERNEL` (scripts/lab: sid's root
file system, tools and SystemTap, with the kernel and headers of the suite
KERNEL), its folder taken as ATLAS_DIR/TOOLS+KERNEL/ (ATLAS_DIR/sid/ for
sid's own; its logs stay in results/, named in the folder's FROM), with its
`make lab WHERE=1` beside it (the two take turns preparing the kernel's
root file system, the lab first; then the WHERE guest runs beside the
lab's two); a kernel whose folder is there is not measured again
unless ATLAS_FRESH=1, so adding one costs one lab.  The host's own figures
(make run over the same configurations, THREADS=1..2, in ns on the host's
kernel) are ATLAS_DIR/host/, measured where missing (ATLAS_HOST=0: never).
The stamped folders under results/ that the labs and the host run wrote
stay there: nothing measured is lost when the atlas's copy is replaced.

The report (render/atlas.py) writes ATLAS_DIR/README.md: the
configuration x kernel table in instructions with each step between
adjacent kernels named, the host's ns in a column of its own (never a
ratio), the run-to-run spread, the uprobe path and the safety verdict of
each probe site per kernel, and each guest's kernel facts.  Needs what
make lab needs (root, mmdebstrap, qemu, the host's Debian mirror).
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # scripts/
sys.path[0] = HERE  # (run as `python3 scripts/atlas`, the path began at the wing)

import door  # noqa: E402
import host  # noqa: E402
from lab.common import LAB_THREADS, LabError  # noqa: E402
from lab.suite import folder_name, host_ready, refused  # noqa: E402
from record.where import WHERE_CSV  # noqa: E402
from host import ROOT, say  # noqa: E402
from record.atlas import HOST_FOLDER  # noqa: E402
from atlas.folders import atlas_file, has_runs, where_dir, write_atlas_file  # noqa: E402
from atlas.inputs import PARAMS, parse_args  # noqa: E402
from atlas.kits import measure_host, measure_kernel  # noqa: E402


def main(argv=None):
    args = door.inputs(parse_args, argv, __doc__, PARAMS)
    if args is None:
        return 0
    had = atlas_file(args.atlas_dir)
    add, wanted = args.atlas_kernels
    if add:
        wanted = list(dict.fromkeys(had.get("kernels", []) + wanted))
    if had.get("tools") and had["tools"] != args.atlas_tools:
        say(f"atlas: ATLAS_TOOLS '{args.atlas_tools}' is not allowed for {args.atlas_dir}: its "
            f"kernels ran under {had['tools']}'s tools (another ATLAS_DIR for another suite)")
        return 2
    names = [args.atlas_tools if k == args.atlas_tools else f"{args.atlas_tools}:{k}"
             for k in wanted]
    no = refused("atlas", "ATLAS_KERNELS", ",".join(wanted), names,
                 "make lab: mmdebstrap, chroot, module loading in the guest")
    if no:
        return no
    todo = [n for n in names
            if args.atlas_fresh or not has_runs(os.path.join(args.atlas_dir, folder_name(n)))]
    todo_where = [n for n in names if args.atlas_where and (
        args.atlas_fresh or not os.path.exists(os.path.join(where_dir(args, n), WHERE_CSV)))]
    host_dir = os.path.join(args.atlas_dir, HOST_FOLDER)
    want_host = args.atlas_host and (args.atlas_fresh or not has_runs(host_dir))
    with host.stoppable():
        try:
            def plan():  # said under the lock, before the tools are made
                os.makedirs(args.results, exist_ok=True)
                write_atlas_file(args.atlas_dir, {"tools": args.atlas_tools, "kernels": wanted,
                                                  "threads": list(LAB_THREADS)})
                say(f"atlas: {len(names)} kernels under {args.atlas_tools}'s tools; to measure: "
                    + (", ".join(todo) or "none (their folders are there)")
                    + ("; and the host" if want_host else "")
                    + (f"; where the instructions go: {', '.join(todo_where)}" if todo_where
                       else ""))
            base = {"NO_INSTALL": "1" if args.no_install else "0"}
            # the lock (the labs and the runner below go on under it), the labs'
            # builds and tools once, before two labs at once would each make them
            if not host_ready("atlas", args, plan):
                return 1
            # the host first: its ns want a quiet machine, before hours of guests
            ok = [measure_host(args, base, host_dir)] if want_host else []
            for n in [n for n in names if n in todo or n in todo_where]:
                ok += measure_kernel(args, base, n, n in todo, n in todo_where)
            status = 0 if all(ok) else 1
        except LabError as e:
            say(f"atlas: {e}")
            return 1
        except KeyboardInterrupt:
            say("atlas: interrupted; what was measured stays in results/ "
                f"and the kernels already taken in {args.atlas_dir}")
            return 130
    rc = door.report(args.atlas_dir).returncode  # (its plot:
    # report.py runs itself again under a python3 with matplotlib where this one has none)
    say(f"atlas: {os.path.relpath(args.atlas_dir, ROOT)}/README.md, from its folders "
        f"({time.strftime('%H:%M:%S')})")
    return status or rc


if __name__ == "__main__":
    sys.exit(main())
