#!/usr/bin/env python3
"""report.py: the kit's report, from the command line, the door of the
render/ wing: the answers first (render/summary.py), then the detail
(render/tight.py, sites.py, paced.py, y2011.py, guest.py) and the plots
(render/plots.py); the statistics are in stats/.

    python3 scripts/report.py                       # results/latest
    python3 scripts/report.py results/A results/B   # side by side, B against A
    python3 scripts/report.py results/A --guest results/B-lab/sid  # a guest's 2011 column
    python3 scripts/report.py results/B-lab         # a lab: each suite, and summary.md
    python3 scripts/report.py results/C-fleet       # a fleet: every host, one table (summary.md)
    python3 scripts/report.py docs/atlas            # the atlas: its README.md from its folders
    python3 scripts/report.py results/C-fleet --reference HOST   # the others against HOST
    python3 scripts/report.py results/D-lifecycle   # make lifecycle's attach, detach, bystanders
    make report RESULTS='results/A results/B'

Reads each folder's runs.csv and meta.json (written by scripts/run.py)
and shows, per configuration and thread count, what stats/ computes:
runs and failures, per-event times, the overhead against the baseline
(its mean and 95% interval), the slowdown, user/system CPU, the tracer's
steady and fixed CPU, the event check and scaling.  Writes report.md
(the answers, short at any THREADS), tables.md beside it (every table, a
row per configuration and thread count), report.json and PNG plots into
the folder (one folder), or into results/compare-<names>/ (several), and
prints the answers: at most 60 lines of at most 120 characters.  Plots need matplotlib (Debian's python3-matplotlib): an
interpreter without it re-runs the report under one that has it
(/usr/bin/python3 on Debian), and says so; with none, the tables are
complete and one line says how to get the plots.
Warm-up rows (rep 0) are kept in runs.csv but not counted here.
"""
import csv
import glob
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host  # noqa: E402
from render import plots as plotting  # noqa: E402
from render import compare, real, summary  # noqa: E402
from record import BadInput, load, timed_for_real  # noqa: E402
from record import DEFAULT_UNIT, INSTRUCTIONS, paced_rate  # noqa: E402
from configs import BASELINE  # noqa: E402
from stats import analyse, outcomes, paced  # noqa: E402
from render.environment import environment  # noqa: E402
from render.formats import skipped_failed  # noqa: E402
from render.lab import lab_markdown  # noqa: E402
from render import atlas, fleet, lifecycle  # noqa: E402
from render.paced import paced_markdown  # noqa: E402
from render.tight import tight_closing, tight_tables  # noqa: E402
from render.y2011 import Y2011_CONFIGS  # noqa: E402

# Set in the environment of a report re-run under another interpreter, so
# it never re-runs twice.
REEXEC = "KIT_REPORT_REEXEC"


def guest_for(lab):
    """The lab guest named by LAB (a suite's folder of make lab, or a lab's
    top folder: its first suite that qualifies) whose SystemTap module
    runtime counted instructions at 1 thread beside its baseline, for the
    2011 table: {"a", "lab", "folder"} (render.lab.guest_head), or None.
    Only the folder named: a host's report never depends on what else
    lies in results/."""
    lab = os.path.realpath(lab)
    named = ([lab] if os.path.exists(os.path.join(lab, "meta.json")) else
             sorted(os.path.dirname(m) for m in glob.glob(os.path.join(lab, "*", "meta.json"))))
    for d in named:
        try:
            rows, meta, _ = load(d)
        except (BadInput, OSError, UnicodeDecodeError, csv.Error):
            continue
        one = [r for r in rows if r["status"] == "ok" and int(r["threads"]) == 1]
        if meta.get("unit") == INSTRUCTIONS and any(r["config"] == BASELINE for r in one) and any(
                r["config"] in Y2011_CONFIGS and r["runtime"] == "module" for r in one):
            return {"a": analyse(rows, meta), "lab": meta.get("lab") or {},
                    "folder": os.path.relpath(d, os.path.dirname(os.path.dirname(d)))}
    return None


def lab_top(folder):
    """If FOLDER is a make lab's top folder (results/<stamp>-lab/, a folder
    per suite), its summary.md written and printed (render/lab.py): True."""
    from render import lab
    suites = lab.lab_folders(folder)
    if suites:
        print(lab.summary(folder, suites))
    return bool(suites)


TABLES = "tables.md"  # beside report.md: every table a row per configuration and thread count


def markdown(a, meta, warnings, folder, p=None, rows=(), made=(), guest=None):
    """(report.md, tables.md or None).  report.md: the answers, the
    environment, a link to each of tables.md's sections, and the closing
    sections (the 2011 figures, what was skipped or failed), so that it
    stays short at any THREADS; tables.md: every table with a row per
    configuration and thread count.  GUEST (guest_for) adds a lab guest's
    module runtime to the 2011 tables."""
    env = meta or {}
    name = os.path.basename(os.path.normpath(folder))
    lines = [f"# Tracing overhead: {name}", ""]
    lab = env.get("lab")
    if not lab:
        lines += ["## Answers", ""] + summary.answers(a, p, list(rows), env, folder, made,
                                                      guest=guest) + [""]
    lines += environment(env)
    if warnings:
        lines += ["", "## Input warnings", ""] + [f"- {w}" for w in warnings]
    if lab:
        lines += lab_markdown(a, lab, env)
        if not timed_for_real(env):  # emulated times are not shown beside anything
            return "\n".join(lines) + "\n", None
    detail, closing = [], []
    if a["cells"] or not (p and p["cells"]):
        detail += tight_tables(a, env) + real.real_markdown(a)
        closing += tight_closing(a, guest)
    if p and p["cells"]:
        detail += paced_markdown(p)
        if not a["cells"]:  # else tight_closing said them
            closing += skipped_failed(a)
    lines += contents(detail) + closing
    tables = [f"# Tracing overhead: {name}, every table", "",
              f"A row per configuration and thread count; the answers are in "
              f"[report.md](report.md)."] + detail
    return "\n".join(lines) + "\n", "\n".join(tables) + "\n" if detail else None


def contents(detail):
    """report.md's link to each section of tables.md, with its rows."""
    sections = []  # [title, rows]
    for ln in detail:
        if ln.startswith("## "):
            sections.append([ln[3:], 0])
        elif sections and ln.startswith("|"):  # a table (one string): its rows, less head and rule
            sections[-1][1] += sum(1 for x in ln.splitlines() if x.startswith("|")) - 2
    out = ["", "## Every table", "",
           f"A row per configuration and thread count, in [{TABLES}]({TABLES}) beside this file:",
           ""]
    for title, n in sections:
        slug = "".join(ch for ch in title.lower() if ch.isalnum() or ch in " -_")
        out.append(f"- [{title}]({TABLES}#{slug.replace(' ', '-')}): {n:,} table rows")
    return out if sections else []


def plots(a, folder, p=None):
    """(the plots' paths, how each cell was drawn in each: {png: {"config
    @threads": how}}), or one line saying why there are none."""
    made, drawn = plotting.plots(a, folder, p)
    if made is None:
        print(f"report: no plots: matplotlib cannot be imported by {sys.executable}, nor by "
              f"/usr/bin/python3; install Debian's {host.MATPLOTLIB_PACKAGE}", file=sys.stderr)
        return [], {}
    return made, {png: {f"{c}@{t}": how for (c, t), how in cells.items()}
                  for png, cells in drawn.items()}


def to_json(a, meta, warnings, p=None, drawn=None):
    return {"environment": meta, "warnings": warnings, **a, "paced": p or {"cells": []},
            "plots": drawn or {}}


def plotting_python():
    """An interpreter that can draw the plots: this one, else Debian's
    /usr/bin/python3 or the python3 on PATH; None if none can."""
    if _can_import_matplotlib():
        return sys.executable
    for py in ("/usr/bin/python3", shutil.which("python3")):
        if py and os.path.realpath(py) != os.path.realpath(sys.executable) and host.has_matplotlib(py):
            return py
    return None


def _can_import_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        return False


def one(folder, guest):
    """FOLDER's report written (report.md, report.json, the plots) and its
    answers printed; GUEST (guest_for) for its 2011 table.  (folder's
    analysis, its unit), or None (said why) where it cannot be read."""
    try:
        rows, meta, warnings = load(folder)
    except BadInput as e:
        print(f"report: {e}", file=sys.stderr)
        return None
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        print(f"report: {folder}: cannot read: {e}", file=sys.stderr)
        return None
    for w in warnings:
        print(f"report: warning: {w}", file=sys.stderr)
    p = paced([r for r in rows if paced_rate(r) is not None])
    a = analyse([r for r in rows if paced_rate(r) is None], meta)
    a.update(outcomes(rows))  # paced runs' failures and skips too
    emulated = not timed_for_real(meta)  # make lab under TCG
    if not a["has_baseline"] and a["cells"] and not emulated:
        print(f"report: {folder}: no baseline rows; overheads are not computed",
              file=sys.stderr)
    made, drawn = ([], {}) if emulated else plots(a, folder, p)
    beside = None if meta.get("lab") else guest
    md, tables = markdown(a, meta, warnings, folder, p, rows, made, beside)
    with open(os.path.join(folder, "report.md"), "w") as f:
        f.write(md)
    if tables:
        with open(os.path.join(folder, TABLES), "w") as f:
            f.write(tables)
    elif os.path.exists(os.path.join(folder, TABLES)):  # an earlier report's, not this one's
        os.unlink(os.path.join(folder, TABLES))
    with open(os.path.join(folder, "report.json"), "w") as f:
        json.dump(to_json(a, meta, warnings, p, drawn), f, indent=1, sort_keys=True)
        f.write("\n")
    print()
    if emulated:
        print("\n".join(lab_markdown(a, meta["lab"], meta)))
    else:
        print("\n".join(summary.answers(a, p, rows, meta, folder, made, terminal=True,
                                         guest=beside)))
    print(f"\nreport: wrote {summary.shown(os.path.join(folder, 'report.md'))}"
          + (f", {TABLES}" if tables else "") + ", report.json"
          + (f" and {len(made)} plots (drawn by {sys.executable})" if made else ""))
    return a, meta.get("unit") or DEFAULT_UNIT


def main(argv):
    if not os.environ.get(REEXEC) and not _can_import_matplotlib():
        py = plotting_python()
        if py:
            print(f"report: {sys.executable} has no matplotlib; running it under {py}, "
                  "which has matplotlib", file=sys.stderr, flush=True)
            os.execve(py, [py, os.path.abspath(__file__), *argv],
                      dict(os.environ, **{REEXEC: "1"}))
    folders, lab = list(argv), None
    if "--guest" in folders:
        i = folders.index("--guest")
        if i + 1 == len(folders) or not os.path.isdir(folders[i + 1]):
            print("report: --guest wants a folder of make lab (results/<stamp>-lab/SUITE)",
                  file=sys.stderr)
            return 2
        lab = folders.pop(i + 1)
        folders.pop(i)
    reference = None  # make fleet's folders: the host the others are set against
    if "--reference" in folders:
        i = folders.index("--reference")
        if i + 1 == len(folders):
            print("report: --reference wants a host of the fleet folder", file=sys.stderr)
            return 2
        reference = folders.pop(i + 1)
        folders.pop(i)
    folders = folders or [os.path.join(host.ROOT, "results", "latest")]
    guest = guest_for(lab) if lab else None
    if lab and not guest:
        print(f"report: {lab}: no lab guest there counted SystemTap's module runtime in "
              "instructions at 1 thread beside its baseline; no guest column", file=sys.stderr)
    results, units, status, labs = [], {}, 0, 0
    for folder in folders:
        if atlas.is_atlas(folder):  # make atlas's: its README.md from its folders
            print(atlas.write(folder))
            labs += 1
            continue
        if lab_top(folder):
            labs += 1
            continue
        if lifecycle.is_lifecycle(folder):  # make lifecycle's: its own tables
            print("\n".join(lifecycle.write(folder)))
            labs += 1
            continue
        if fleet.is_fleet(folder):  # make fleet's: a folder per host, one table
            try:
                print(fleet.write(folder, reference))
            except ValueError as e:
                print(f"report: {e}", file=sys.stderr)
                status = 2
            labs += 1
            continue
        got = one(folder, guest)
        if got is None:
            status = 1
            continue
        results.append((folder, got[0]))
        units[folder] = got[1]
    if reference and not any(fleet.is_fleet(f) for f in folders):
        print("report: --reference names a host of a fleet folder (make fleet's), and none "
              "was given", file=sys.stderr)
        return 2
    if len(set(units.values())) > 1:  # host ns and guest instructions never meet
        print("report: the folders count in different units ("
              + ", ".join(f"{os.path.basename(os.path.normpath(f))}: {u}" for f, u in units.items())
              + "): each has its report, and none is compared with another", file=sys.stderr)
    elif len(results) > 1:
        compare.write(results)
    if not results and not labs:
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
