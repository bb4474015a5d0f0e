"""render/runs.py: the report of one results folder (a run of make run, a
suite of make lab): report.md (the answers first, render/summary.py; then
a link to each table), tables.md (every table: render/tight.py, sites.py,
paced.py, y2011.py, lab.py), report.json and the plots (render/plots.py);
the statistics are stats/'s.  Its door is scripts/report.py:

    python3 scripts/report.py results/A
    python3 scripts/report.py results/A --guest results/B-lab/sid  # a guest's 2011 column

Nothing to run here.
"""
import csv
import glob
import json
import os
import shutil
import sys

import host
import record
from configs import BASELINE
from record import BadInput, DEFAULT_UNIT, INSTRUCTIONS, load, paced_rate, timed_for_real
from render import plots as plotting
from render import real, summary
from render.environment import environment
from render.formats import skipped_failed
from render.lab import lab_markdown
from render.paced import paced_markdown
from render.tight import tight_closing, tight_tables
from render.y2011 import Y2011_CONFIGS
from stats import analyse, outcomes, paced

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
    named = ([lab] if record.kind_of(lab) == record.runs.KIND else
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


def reexec_for_plots(door, argv):
    """The report (DOOR, ARGV) run again, once (REEXEC), under an
    interpreter that can draw the plots where this one cannot."""
    if os.environ.get(REEXEC) or _can_import_matplotlib():
        return
    py = plotting_python()
    if py:
        print(f"report: {sys.executable} has no matplotlib; running it under {py}, "
              "which has matplotlib", file=sys.stderr, flush=True)
        os.execve(py, [py, door, *argv], dict(os.environ, **{REEXEC: "1"}))


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
