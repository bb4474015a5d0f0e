"""real.py: report.md's "Real programs" section: per real program
(workloads.py) and thread count, each configuration against the
program's own untraced row: its slowdown and cost per event with their
95% intervals, the events a call by the tracer's count, the rate the
marker fires at untraced, and whether the count was checked.  The
terminal's lines are render/summary.py's real_lines.

Nothing to run: `from render import real`.
"""
import configs
import workloads
from configs import real
from render.formats import f_ns, f_overhead, f_slower, table
from render.summary import per_event


def real_markdown(a):
    """The section's lines, or [] where no real program ran."""
    cells = [c for c in a["cells"] if real(c["config"]) and c["n_runs"]]
    if not cells:
        return []
    lines = ["", "## Real programs", "",
             "Each configuration against its program's own untraced row at the same "
             "thread count ([docs/real-programs.md](../../docs/real-programs.md)).  Per event: "
             "the extra time a call over the events a call by the tracer's count (and over "
             "the threads where they take turns).  Untraced rate: the events a call times "
             "the untraced calls a second.  Checked: `ok` where the count equals the "
             "program's own, `unverified` where it keeps none.", ""]
    for fam in dict.fromkeys(configs.BY_NAME[c["config"]].workload for c in cells):
        w = workloads.get(fam)
        base = {c["threads"]: c for c in cells if configs.BY_NAME[c["config"]].workload == fam
                and configs.is_baseline(c["config"])}
        rows = []
        for c in cells:
            if configs.BY_NAME[c["config"]].workload != fam or configs.is_baseline(c["config"]):
                continue
            b, o = base.get(c["threads"]), c.get("overhead")
            seen = (c.get("check") or {}).get("seen")
            k = seen / c["calls"] if seen and c.get("calls") else None
            rate = (k * c["threads"] * 1e9 / b["mean_ns"] if k and b and b.get("mean_ns")
                    else None)
            rows.append([c["config"], str(c["threads"]),
                         f_ns(b["mean_ns"]) if b else "-", f_slower(o),
                         f_overhead(per_event(c, w)) if o and k else "-",
                         f_ns(k) if k is not None else "-",
                         f"{rate:,.0f}" if rate else "-",
                         (c.get("check") or {}).get("verdict", "-")])
        lines += [f"### {fam}: {w.description}", ""]
        lines += [table(["configuration", "threads", f"untraced [ns a {w.call}]",
                         "slowdown [95%]", "per event [ns, 95%]", f"events a {w.call}",
                         "untraced rate [events/s]", "checked"], rows), ""]
        lines += own_table(w, [c for c in cells if configs.BY_NAME[c["config"]].workload == fam])
    return lines


def own_table(w, cells):
    """Workload W's own figures (its figures: pgbench's tps and latency),
    untraced and traced, each its mean over the cell's runs (a rate's: the
    runs' work over their time) with the interval the cell's overhead has."""
    if not w.figures or not any(c.get("own") for c in cells):
        return []

    def f(v):  # three figures at least: 4,088, 12.3, 0.245
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"

    def cell(x):
        if not x:
            return "-"
        m, lo, hi = x
        return f(m) + (f" [{f(lo)}, {f(hi) if hi is not None else 'unbounded'}]"
                       if lo is not None else "")
    rows = [[c["config"], str(c["threads"]),
             *(cell((c.get("own") or {}).get(k)) for k, _, _ in w.figures)] for c in cells]
    return [f"{w.name}'s own figures, over the runs (a rate: their work over their time), "
            "with 95% intervals:", "",
            table(["configuration", "threads", *(h for _, h, _ in w.figures)], rows), ""]
