#!/usr/bin/env python3
"""report.py: the kit's report, from the command line: the door of the
render/ wing, one module there a kind of folder; a folder's kind is its
meta.json's stamp (record.kind_of).

    python3 scripts/report.py                       # results/latest
    python3 scripts/report.py results/A results/B   # side by side, B against A
    python3 scripts/report.py results/A --guest results/B-lab/sid  # a guest's 2011 column
    python3 scripts/report.py results/B-lab         # a lab: each suite, and summary.md
    python3 scripts/report.py results/C-fleet       # a fleet: every host, one table (summary.md)
    python3 scripts/report.py docs/atlas            # the atlas: its README.md from its folders (docs/atlas.md: where they are)
    python3 scripts/report.py results/C-fleet --reference HOST   # the others against HOST
    python3 scripts/report.py results/D-lifecycle   # make lifecycle's attach, detach, bystanders
    make report RESULTS='results/A results/B'

A results folder (make run's, a lab suite's): render/runs.py writes its
report.md, tables.md, report.json and plots and prints the answers;
several are set side by side (render/compare.py), never across units.
Plots need matplotlib (Debian's python3-matplotlib): an interpreter
without it re-runs the report under one that has it (/usr/bin/python3 on
Debian), and says so; with none, the tables are complete and one line
says how to get the plots.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host  # noqa: E402
import params  # noqa: E402
import record  # noqa: E402
from render import atlas, compare, dormant, fleet, lab, lifecycle, runs  # noqa: E402


# A folder's kind (record.kind_of) -> its render/ module's report (an exit
# status); a runs folder, or one of no kind (its report says why it cannot
# be read), is render/runs.py's, and several are compared.
KINDS = {m.KIND: m.report for m in (atlas, dormant, fleet, lab, lifecycle)}


def parse_args(argv):
    p = params.Parser(prog="report.py", description=__doc__.split("\n\n")[0])
    p.add_argument("folders", nargs="*", metavar="FOLDER",
                   default=[os.path.join(host.ROOT, "results", "latest")])
    p.add_argument("--guest", metavar="SUITE", help="a folder of make lab "
                   "(results/<stamp>-lab/SUITE) whose module runtime joins the 2011 table")
    p.add_argument("--reference", metavar="HOST",
                   help="make fleet's folder: the host the others are set against")
    args = p.parse_intermixed_args(argv)
    if args.guest is not None and not os.path.isdir(args.guest):
        p.error("--guest wants a folder of make lab (results/<stamp>-lab/SUITE)")
    if args.reference and not any(record.kind_of(f) == record.fleet.KIND for f in args.folders):
        p.error("--reference names a host of a fleet folder (make fleet's), and none was given")
    return args


def main(argv):
    runs.reexec_for_plots(os.path.abspath(__file__), argv)
    args = parse_args(argv)
    guest = runs.guest_for(args.guest) if args.guest else None
    if args.guest and not guest:
        print(f"report: {args.guest}: no lab guest there counted SystemTap's module runtime in "
              "instructions at 1 thread beside its baseline; no guest column", file=sys.stderr)
    results, units, status = [], {}, 0
    for folder in args.folders:
        kind = KINDS.get(record.kind_of(folder))
        if kind:
            status = kind(folder, args) or status
            continue
        got = runs.one(folder, guest)
        if got is None:
            status = 1
            continue
        results.append((folder, got[0]))
        units[folder] = got[1]
    if len(set(units.values())) > 1:  # host ns and guest instructions never meet
        print("report: the folders count in different units ("
              + ", ".join(f"{os.path.basename(os.path.normpath(f))}: {u}" for f, u in units.items())
              + "): each has its report, and none is compared with another", file=sys.stderr)
    elif len(results) > 1:
        compare.write(results)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
