#!/usr/bin/env python3
"""run.py: the kit's runner, what `make run` starts.

Measures every configuration (scripts/configs.py) that can run here, for
each thread count, repeated and interleaved, into a new folder
results/<UTC stamp>/ (runs.csv, meta.json, logs/), then writes the report.

    make run THREADS=1..8 ITER=10000000 RUNS=3 CONFIGS='baseline,bpftrace-*'
    python3 scripts/run.py --threads 1,2 --iter 100000 --configs 'ftrace-*'
    python3 scripts/run.py --list

Needs root for the tracers that use uprobes and tracefs (uftrace and
LTTng-UST run without it).  Input is checked before anything is installed, built or attached.
Human progress goes to stderr; the machine record is runs.csv.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import door  # noqa: E402
import params  # noqa: E402
import tracers  # noqa: E402
import host  # noqa: E402
import kitlock  # noqa: E402
import leftovers  # noqa: E402
import trusted  # noqa: E402
from configs import CONFIGS  # noqa: E402
from host import Interrupted, say  # noqa: E402
from measure import dormant, matrix  # noqa: E402
from measure.kit import Kit  # noqa: E402


def parse_args(argv):
    """params.parse_args with the back-ends' own variables."""
    return params.parse_args(argv, tracers.own_params() + dormant.PARAMS)


def table():
    """The configurations' table as --list prints it (make configs): a
    line a row, in the table's order, each saying whether the default run
    has it."""
    w, wb = max(len(c.name) for c in CONFIGS), max(len(c.build) for c in CONFIGS)
    rows = [f"{'name':<{w}}  {'build':<{wb}}  {'tracer':<8}  description"]
    for c in CONFIGS:
        rows.append(f"{c.name:<{w}}  {c.build:<{wb}}  {c.tracer:<8}  {c.description}"
                    + ("" if c.default else " (not in the default run: CONFIGS names it)"))
    return "\n".join(rows)


def main(argv=None):
    args = door.inputs(parse_args, argv)
    if args is None:
        return 0
    if args.list:
        print(table())
        return 0
    if not trusted.checked("run"):  # (before make is asked anything: the packages it needs)
        return 1
    if args.against:  # what markers cost while no one traces: WORKLOAD against AGAINST
        dormant.check(args, params.Parser(prog="run.py").error)
        return against(args)
    wanted = sorted({c.tracer for c in args.configs if tracers.get(c.tracer).attaches})
    kit = Kit(args)
    # SIGINT, SIGTERM and SIGHUP alike (host.STOPS): the rows so far kept,
    # everything attached undone, and the cleanup run to its end.
    with host.stoppable():
        try:
            kitlock.lock("run", args.lock_wait_s)  # one kit at a time; input was checked, nothing done yet
            leftovers.sweep("run")  # a killed kit's, before anything is attached
            skip = matrix.prepare(args, wanted)
            if isinstance(skip, int):
                return skip
            matrix.measure(kit, args, wanted, skip)
        except Interrupted as e:
            say(f"\nrun: interrupted by {e}; cleaning up (rows so far are kept)")
            if kit.folder:
                kit.folder.meta["interrupted"] = str(e)
            return 130
        except OSError as e:  # the results' disk filled, or the folder went away
            say(f"\nrun: {e.filename or 'a write'}: {e.strerror}; the rows written so far are "
                "kept, and everything attached is undone")
            return 1
        finally:
            with host.deferred():  # the cleanup runs to its end, whatever comes
                try:
                    kit.close()
                except OSError as e:  # meta.json on a full disk: runs.csv is whole
                    say(f"run: meta.json not written ({e.strerror})")
    if not args.no_report and os.path.exists(door.REPORT):
        door.report(kit.folder.dir)
    return 0


def against(args):
    """make run AGAINST=: measure/dormant.py's steps, stoppable as make
    run's, then its report."""
    with host.stoppable():
        try:
            status = dormant.main(args)
        except Interrupted as e:
            say(f"\nrun: interrupted by {e}; the rounds so far are kept")
            return 130
    if status == 0 and not args.no_report:
        door.report(args.folder)
    return status


if __name__ == "__main__":
    sys.exit(main())
