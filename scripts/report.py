#!/usr/bin/env python3
"""report.py: the kit's report, from the command line: the answers first
(summary.py), then the detail (tables.py) and the plots (plots.py); the
statistics are in stats.py.

    python3 scripts/report.py                       # results/latest
    python3 scripts/report.py results/A results/B   # side by side, B against A
    make report RESULTS='results/A results/B'

Reads each folder's runs.csv and meta.json (written by scripts/run.py)
and shows, per configuration and thread count, what stats.py computes:
runs and failures, per-event times, the overhead against the baseline
(its mean and 95% interval), the slowdown, user/system CPU, the tracer's
steady and fixed CPU, the event check and scaling.  Writes report.md
(the answers, then every table), report.json and PNG plots into the
folder (one folder), or into results/compare-<names>/ (several), and
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
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host  # noqa: E402
from render import plots as plotting  # noqa: E402
from render import summary  # noqa: E402
from record import BadInput, load  # noqa: E402
from record import DEFAULT_UNIT, INSTRUCTIONS, paced_rate  # noqa: E402
from configs import BASELINE  # noqa: E402
from stats import analyse, outcomes, paced  # noqa: E402
from render.tables import (Y2011_CONFIGS, environment, f_ns, lab_markdown, paced_markdown, skipped_failed,  # noqa
                    table, tight_markdown)

# Set in the environment of a report re-run under another interpreter, so
# it never re-runs twice.
REEXEC = "KIT_REPORT_REEXEC"


def guest_for(folder):
    """The newest lab guest beside FOLDER (its results/<stamp>-lab/SUITE/)
    whose SystemTap module runtime counted instructions at 1 thread beside
    its baseline, for the 2011 table: {"a", "lab", "folder"}
    (tables.guest_head), or None."""
    top = os.path.dirname(os.path.realpath(folder))
    for m in sorted(glob.glob(os.path.join(top, "*-lab", "*", "meta.json")), reverse=True):
        d = os.path.dirname(m)
        try:
            rows, meta, _ = load(d)
        except (BadInput, OSError, UnicodeDecodeError, csv.Error):
            continue
        one = [r for r in rows if r["status"] == "ok" and int(r["threads"]) == 1]
        if meta.get("unit") == INSTRUCTIONS and any(r["config"] == BASELINE for r in one) and any(
                r["config"] in Y2011_CONFIGS and r["runtime"] == "module" for r in one):
            return {"a": analyse(rows, meta), "lab": meta.get("lab") or {},
                    "folder": os.path.relpath(d, os.path.dirname(top))}
    return None


def markdown(a, meta, warnings, folder, p=None, rows=(), made=(), guest=None):
    """report.md: the answers, then the environment and every table; GUEST
    (guest_for) adds a lab guest's module runtime to the 2011 tables."""
    env = meta or {}
    lines = [f"# Tracing overhead: {os.path.basename(os.path.normpath(folder))}", ""]
    lab = env.get("lab")
    if not lab:
        lines += ["## Answers", ""] + summary.answers(a, p, list(rows), env, folder, made,
                                                      guest=guest) + [""]
    lines += environment(env)
    if warnings:
        lines += ["", "## Input warnings", ""] + [f"- {w}" for w in warnings]
    if lab:
        lines += lab_markdown(a, lab, env)
        if lab.get("accel") != "kvm":  # emulated times are not shown beside anything
            return "\n".join(lines) + "\n"
    if a["cells"] or not (p and p["cells"]):
        lines += tight_markdown(a, env, guest)
    if p and p["cells"]:
        lines += paced_markdown(p)
        if not a["cells"]:  # else tight_markdown said them
            lines += skipped_failed(a)
    return "\n".join(lines) + "\n"


def plots(a, folder, p=None):
    """(the plots' paths, how each cell was drawn in each: {png: {"config
    @threads": how}}), or one line saying why there are none."""
    made, drawn = plotting.plots(a, folder, p)
    if made is None:
        print(f"report: no plots: matplotlib cannot be imported by {sys.executable}, nor by "
              "/usr/bin/python3; install Debian's python3-matplotlib", file=sys.stderr)
        return [], {}
    return made, {png: {f"{c}@{t}": how for (c, t), how in cells.items()}
                  for png, cells in drawn.items()}


# -- several folders -----------------------------------------------------------
def half_width(c):
    """A cell's overhead interval's half-width as a fraction of its mean,
    or None."""
    o = c and c.get("overhead")
    if not o or o["lo_ns"] is None or not o["mean_ns"]:
        return None
    return (o["hi_ns"] - o["lo_ns"]) / 2 / abs(o["mean_ns"])


def compare(results):
    """A table with a column per folder, the ratio of each to the first,
    and each one's interval half-width; and a line with the median
    half-width per folder over the traced cells all of them measured
    with every event seen (how precise each run was, on equal terms)."""
    names = [os.path.basename(os.path.normpath(f)) for f, _ in results]
    keys = []
    for _, a in results:
        for c in a["cells"]:
            if (c["config"], c["threads"]) not in keys:
                keys.append((c["config"], c["threads"]))
    rows, widths = [], [[] for _ in results]
    for k in keys:
        cs = [next((c for c in a["cells"] if (c["config"], c["threads"]) == k), None)
              for _, a in results]
        vals = [c["overhead"]["mean_ns"] if c and c.get("overhead") else
                c.get("median_ns") if c and k[0] == BASELINE else None for c in cs]
        row = [k[0], k[1]] + [f_ns(v) for v in vals]
        for v in vals[1:]:
            row.append(f"{v / vals[0]:.2f}" if v is not None and vals[0] else "-")
        hw = [half_width(c) for c in cs]
        row += ["-" if h is None else f"{h:.1%}" for h in hw]
        rows.append(row)
        if all(h is not None and c["tracer"] != "none" and summary.quotable(c)
               for h, c in zip(hw, cs)):
            for w, h in zip(widths, hw):
                w.append(h)
    head = ["config", "threads"] + [f"{n} [ns/event]" for n in names] + \
        [f"{n} / {names[0]}" for n in names[1:]] + [f"{n}: 95% half-width" for n in names]
    line = (f"Median 95% half-width of the overhead over the {len(widths[0])} traced cells every "
            "folder measured with every event seen: " + ", ".join(
                f"{n} +-{statistics.median(w):.1%}" for n, w in zip(names, widths))
            if widths[0] else "No traced cell was measured in every folder with every event seen.")
    return head, rows, line


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


def main(argv):
    if not os.environ.get(REEXEC) and not _can_import_matplotlib():
        py = plotting_python()
        if py:
            print(f"report: {sys.executable} has no matplotlib; running it under {py}, "
                  "which has matplotlib", file=sys.stderr, flush=True)
            os.execve(py, [py, os.path.abspath(__file__), *argv],
                      dict(os.environ, **{REEXEC: "1"}))
    folders = argv or [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "results", "latest")]
    results, units, status = [], {}, 0
    for folder in folders:
        try:
            rows, meta, warnings = load(folder)
        except BadInput as e:
            print(f"report: {e}", file=sys.stderr)
            status = 1
            continue
        except (OSError, UnicodeDecodeError, csv.Error) as e:
            print(f"report: {folder}: cannot read: {e}", file=sys.stderr)
            status = 1
            continue
        for w in warnings:
            print(f"report: warning: {w}", file=sys.stderr)
        p = paced([r for r in rows if paced_rate(r) is not None])
        a = analyse([r for r in rows if paced_rate(r) is None], meta)
        a.update(outcomes(rows))  # paced runs' failures and skips too
        emulated = (meta.get("lab") or {}).get("accel", "kvm") != "kvm"  # make lab under TCG
        if not a["has_baseline"] and a["cells"] and not emulated:
            print(f"report: {folder}: no baseline rows; overheads are not computed",
                  file=sys.stderr)
        results.append((folder, a))
        units[folder] = meta.get("unit") or DEFAULT_UNIT
        made, drawn = ([], {}) if emulated else plots(a, folder, p)
        guest = None if meta.get("lab") else guest_for(folder)
        md = markdown(a, meta, warnings, folder, p, rows, made, guest)
        with open(os.path.join(folder, "report.md"), "w") as f:
            f.write(md)
        with open(os.path.join(folder, "report.json"), "w") as f:
            json.dump(to_json(a, meta, warnings, p, drawn), f, indent=1, sort_keys=True)
            f.write("\n")
        print()
        if emulated:
            print("\n".join(lab_markdown(a, meta["lab"], meta)))
        else:
            print("\n".join(summary.answers(a, p, rows, meta, folder, made, terminal=True,
                                             guest=guest)))
        print(f"\nreport: wrote {summary.shown(os.path.join(folder, 'report.md'))}, report.json"
              + (f" and {len(made)} plots (drawn by {sys.executable})" if made else ""))
    if len(set(units.values())) > 1:  # host ns and guest instructions never meet
        print("report: the folders count in different units ("
              + ", ".join(f"{os.path.basename(os.path.normpath(f))}: {u}" for f, u in units.items())
              + "): each has its report, and none is compared with another", file=sys.stderr)
    elif len(results) > 1:
        head, rows, line = compare(results)
        out = os.path.join(os.path.dirname(os.path.normpath(results[0][0])), "compare-" + "-".join(
            os.path.basename(os.path.normpath(f)) for f, _ in results))
        os.makedirs(out, exist_ok=True)
        text = ("# Comparison: overhead per event [ns/event] (baseline: its median), "
                "and each folder against the first\n\n" + table(head, rows) + "\n\n" + line + "\n")
        with open(os.path.join(out, "report.md"), "w") as f:
            f.write(text)
        with open(os.path.join(out, "report.json"), "w") as f:
            json.dump({"folders": [f for f, _ in results], "head": head, "rows": rows}, f,
                      indent=1)
        print("\n" + text)
        print(f"report: wrote {out}/report.md")
    if not results:
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
