#!/usr/bin/env python3
"""lifecycle/__main__.py: `make lifecycle`: what a probe costs before, after and
beside the traced program, on this machine's kernel, in ns of its clock
(in make lab's guests, `make lab LIFECYCLE=1`: of the guest's clock under
QEMU's -icount, UNIT=instructions, never set beside the host's).

    make lifecycle                              # PROBES=1,10,100,1000 PROCS=1,10,100
    make lifecycle PROBES=1,10 PROCS=1 TRACERS=ftrace
    python3 scripts/report.py results/latest    # the report again

Attach and detach (the lifecycle runs): for each tracer, PROCS held
targets of a sites-N build (src/builds.tsv: N distinct markers) are
started, the tracer attaches to every site by the binary's path, and the
kit times, from the tracer's start, until every site in every process
holds the breakpoint (read from the process's own memory, /proc/PID/mem:
the kernel writes int3 there when a uprobe is live); a process started
then says whether a late one is covered; every process fires every site
once and the tracer's count is checked; then, from the stop, until every
site in every process is back to its own byte, the tracer has exited and
uprobe_events holds nothing of the kit's.  A detach past DETACH_LIMIT_S
is killed, and its row says so.  Against the number of sites (PROBES, one
process) and of processes (PROCS, the 1-site build).

The bystanders: build/libkit-bystander.so's marker, probed in one process
(the traced one) in each way a tracer filters by pid (lifecycle/bystanders.py's
WAYS), is timed in another process that maps the library untraced: its
cost per call against the same process with no tracer at all, with
Welch's interval, and its own user and system time per call (where the
trap's time goes).

Each cell's first cycle is a pilot, not counted: it fixes how many more
fit in CELL_S (at most REPEATS), so nothing it measured decides which
cycles count; a cell whose pilot took longer than CELL_S keeps the pilot
as its one cycle.  A cell of n >= 6 cycles gets the median's 95% interval
from order statistics (stats.median_ci); fewer, [min, max] with what it
holds (stats.median_ci says).  The folder, results/<stamp>-lifecycle/,
holds lifecycle.csv, bystander.csv, meta.json and logs/, and the report.
Needs root, tracefs, and the tracers (installed as make run does unless
NO_INSTALL=1; one that is missing is skipped, saying why).
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # scripts/
sys.path[0] = HERE  # (run as `python3 scripts/lifecycle`, the path began at the wing)

import door  # noqa: E402
import host  # noqa: E402
from lifecycle.bystanders import bystanders  # noqa: E402
from lifecycle.cells import lifecycle_cells, run_cell  # noqa: E402
from lifecycle.inputs import BYSTANDER_ONLY, PARAMS, available, parse_args, prepare  # noqa: E402
from lifecycle.kit import Kit  # noqa: E402
from host import ROOT, Interrupted, say  # noqa: E402
from tracers import ATTACHED, tracefs  # noqa: E402


def main(argv=None):
    args = door.inputs(parse_args, argv, __doc__.split("\n\n")[0], PARAMS)
    if args is None:
        return 0
    if os.geteuid() != 0:
        print("lifecycle: needs root (it defines uprobes and reads other processes' memory)",
              file=sys.stderr)
        return 2
    if os.uname().machine != "x86_64":  # a live site reads as int3, x86's breakpoint
        print(f"lifecycle: runs on x86_64 only (this is {os.uname().machine}): it reads a live "
              "probe as int3 in the process's memory", file=sys.stderr)
        return 2
    kit = None
    with host.stoppable():
        try:
            if not prepare(args):
                return 1
            kit = Kit(args, {p.name: getattr(args, p.dest) for p in PARAMS})
            kit.tracefs = tracefs.MOUNTS.ensure()
            if not kit.tracefs:
                say("lifecycle: no tracefs here (not mountable): nothing can attach")
                return 1
            tracers = []
            for name in args.tracers:
                why = available(name)
                if why:
                    say(f"lifecycle: {name}: skipped: {why}")
                    kit.meta["skipped"][name] = why
                else:
                    tracers.append(name)
                    kit.meta["tracers"][name] = ATTACHED[name].version()
            kit.write_meta()
            t0 = time.monotonic()
            for name in [t for t in tracers if t not in BYSTANDER_ONLY]:
                for cell in lifecycle_cells(args):
                    run_cell(kit, name, *cell)
            kit.meta["lifecycle_s"] = round(time.monotonic() - t0, 1)
            t0 = time.monotonic()
            if not args.no_bystanders:
                bystanders(kit, tracers)
            kit.meta["bystander_s"] = round(time.monotonic() - t0, 1)
        except Interrupted as e:
            say(f"lifecycle: stopped ({e.args[0] if e.args else 'SIGINT'}); undoing its probes")
            if kit:
                kit.meta["interrupted"] = e.args[0] if e.args else "SIGINT"
            return 130
        except Exception as e:  # the kit's own fault: said, in meta.json too, and undone
            say(f"lifecycle: failed: {type(e).__name__}: {e}; undoing its probes")
            if kit:
                kit.meta["failed"] = f"{type(e).__name__}: {e}"
            return 1
        finally:
            with host.deferred():
                if kit:
                    kit.cleanup()
                    kit.close()
                tracefs.MOUNTS.release()
    say(f"lifecycle: results in {os.path.relpath(kit.dir, ROOT)}")
    if not args.no_report:
        door.report(kit.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
