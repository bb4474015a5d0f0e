"""compare.py: several results folders of one unit side by side: per
cell each folder's overhead per event, its ratio to the first folder's
and its interval's half-width, and how precise each folder was over the
cells all of them measured with every event seen.

Nothing to run: `python3 scripts/report.py A B` writes compare-A-B/.
"""
import json
import os
import statistics

import kin
from render import summary
from render.formats import f_ns, table


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
                c.get("median_ns") if c and kin.is_baseline(k[0]) else None for c in cs]
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


def write(results):
    """The comparison of RESULTS ([(folder, analysis)], one unit) in a
    folder beside the first, compare-A-B/ (report.md, report.json), and
    printed."""
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
