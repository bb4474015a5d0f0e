"""fleet.py: a fleet folder's summary.md (make fleet: results/<stamp>-fleet/,
a results folder per host and fleet.json): a line per host (its status and
why, CPU, kernel, unit, bytes back), then one table, per configuration and
thread count, of each host's cost per event (a call's, said so, where
nothing counted a real program's events) with its 95% interval against
its own baseline, the uprobe path its kernel took, and the ratio to the
reference host (the first that ran, or REFERENCE) where both count in the
same unit and both intervals lie above 0: host ns and guest instructions are never in one column;
and each host's BPF floor (libbpf's count, each BPF front end above it), a
paragraph a host in its own unit.

Nothing to run: scripts/report.py writes it for a fleet folder.
"""
import json
import os
import sys

import configs
import kin
import workloads
import record
from record import BadInput, DEFAULT_UNIT, load
from record.fleet import FLEET_JSON, KIND
from render.bodies import floor_paragraphs
from render.formats import f_overhead, f_x, table
from render.layout import save
from render import summary as answers
from predict import per_event
from stats import analyse



def is_fleet(folder):
    return record.kind_of(folder) == KIND


def hosts(folder):
    """[(host, its fleet.json entry, (analysis, meta) or None)] in the
    inventory's order."""
    with open(os.path.join(folder, FLEET_JSON)) as f:
        fleet = json.load(f)
    out = []
    for name, g in (fleet.get("hosts") or {}).items():
        got = None
        d = os.path.join(folder, name)
        if g.get("status") == "ok" and os.path.isdir(d):  # a failed host's rows: its folder
            try:
                rows, meta, _ = load(d)
                got = (analyse([r for r in rows if (r["rep"] or 0) >= 1], meta), meta)
            except (BadInput, OSError, ValueError):
                got = None
        out.append((name, g, got))
    return fleet, out


def cost(c):
    """A cell's overhead per event (a real program's: over its events; one
    whose events nothing counted: a call's, its "per" saying so)."""
    cfg = configs.BY_NAME.get(c["config"])
    if not c.get("overhead"):
        return None
    return (per_event(c, workloads.get(cfg.workload)) if cfg and cfg.workload
            else {**c["overhead"], "per": "event"})


def above_zero(o):
    """A cost whose 95% interval lies above 0: one a ratio means something
    of (an idle marker's 0.01 ns against -0.5 ns is noise over noise)."""
    return bool(o and o.get("lo_ns") is not None and o["lo_ns"] > 0)


def summary(folder, reference=None):
    """summary.md's text for the fleet FOLDER."""
    fleet, got = hosts(folder)
    ran = [(n, a, m) for n, g, x in got if x for a, m in [x]]
    if reference and reference not in [n for n, _, _ in ran]:
        raise ValueError(f"--reference '{reference}' is not a host that ran here (those that "
                         f"did: {', '.join(n for n, _, _ in ran) or 'none'})")
    ref = reference or (ran[0][0] if ran else None)
    lines = [f"# Fleet: {os.path.basename(os.path.normpath(folder))}", "",
             f"`make run {' '.join(fleet.get('make_vars') or [])}` on "
             f"{len(got)} hosts of {os.path.basename(fleet.get('inventory') or '?')}, "
             f"{fleet.get('seconds', 0):.0f} s in all; each figure against its own host's "
             "baseline.", ""]
    rows = []
    for name, g, x in got:
        meta = x[1] if x else {}
        rows.append([name, g.get("status", "?"), meta.get("cpu_model", "-"),
                     meta.get("kernel", "-"), meta.get("unit", "-") if x else "-",
                     f"{g['bytes']:,}" if g.get("bytes") else "-", g.get("reason") or ""])
    lines += [table(["host", "status", "CPU", "kernel", "unit", "bytes back", "why"], rows), ""]
    if not ran:
        return "\n".join(lines + ["No host ran.", ""])
    by = {n: {(c["config"], c["threads"]): c for c in a["cells"]} for n, a, _ in ran}
    unit = {n: m.get("unit") or DEFAULT_UNIT for n, _, m in ran}
    keys = []
    for n, a, _ in ran:
        keys += [k for k in by[n] if k not in keys and not kin.is_baseline(k[0])]
    rank = {c.name: i for i, c in enumerate(configs.CONFIGS)}
    keys.sort(key=lambda k: (rank.get(k[0], len(rank)), k[1]))
    table_rows = []
    for config, threads in keys:
        r = by.get(ref, {}).get((config, threads))
        for n, _, _ in ran:
            c = by[n].get((config, threads))
            if not c:
                continue
            o, ro = cost(c), cost(r) if r else None
            ratio = (o["mean_ns"] / ro["mean_ns"] if n != ref and above_zero(o)
                     and above_zero(ro) and unit[n] == unit[ref] and o["per"] == ro["per"]
                     else None)
            per = f"{unit[n]}/{o['per']}" if o and o["per"] != "event" else unit[n]
            table_rows.append([config, str(threads), n, f_overhead(o), per,
                               c.get("path") or "-", (f_x(ratio) + "x") if ratio else
                               ("reference" if n == ref and o else "-")])
    made = plot_fleet(folder, by, unit, answers.cheapest(
        next(a for n, a, _ in ran if n == ref))[0])
    lines += [f"Plots: {', '.join(os.path.basename(m) for m in made)} (each tracer's "
              f"cheapest configuration on {ref}, at 1 thread, every host beside it)."
              if made else "", ""] if made else []
    lines += [f"Per event over each host's own baseline (mean [95% interval]); a real "
              "program's row whose events nothing counted: per call, its unit saying so "
              f"(ns/call); x {ref}: the ratio of means to the reference host, {ref}, where both "
              "count in one unit and both intervals lie above 0.", "",
              table(["configuration", "threads", "host", "cost [95%]", "unit",
                     "uprobe path", f"x {ref}"], table_rows), ""]
    # each host's BPF floor, in its own unit (issue 68)
    floor = floor_paragraphs([(f"On {n} ({m.get('kernel', '?')})", a) for n, a, m in ran])
    return "\n".join(lines + floor[1:] + ([""] if floor else []))


def write(folder, reference=None):
    """Writes FOLDER's summary.md and returns its text."""
    text = summary(folder, reference)
    with open(os.path.join(folder, "summary.md"), "w") as f:
        f.write(text)
    return text


def plot_fleet(folder, by_host, units, cheapest):
    """fleet_cost_<unit>.png: each tracer's cheapest configuration at 1
    thread (CHEAPEST: [(tracer, config)]), a bar per host with its 95%
    interval (BY_HOST: {host: {(config, threads): cell}}), one plot per
    unit (UNITS: {host: unit}): ns and instructions never share axes.  The
    paths drawn ([] without matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    made = []
    for unit in sorted(set(units.values())):
        hosts = [h for h in by_host if units[h] == unit]
        rows = [(t, c) for t, c in cheapest if any(by_host[h].get((c, 1)) for h in hosts)]
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(rows) * len(hosts) / 2 + 3), 4.5))
        width = 0.8 / len(hosts)
        for k, h in enumerate(hosts):
            xs, ys, err = [], [], [[], []]
            for i, (_, c) in enumerate(rows):
                o = (by_host[h].get((c, 1)) or {}).get("overhead")
                if not o:
                    continue
                xs.append(i + (k - (len(hosts) - 1) / 2) * width)
                ys.append(o["mean_ns"])
                lo, hi = o.get("lo_ns"), o.get("hi_ns")
                err[0].append(o["mean_ns"] - lo if lo is not None else 0)
                err[1].append(hi - o["mean_ns"] if hi is not None else 0)
            ax.bar(xs, ys, width, yerr=err, capsize=3, label=h)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([f"{t}\n{c}" for t, c in rows], fontsize=8)
        ax.set_ylabel(f"overhead per event [{unit}], 1 thread")
        ax.set_title("each tracer's cheapest configuration, by host (95% intervals where a "
                     "cell has one)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        made.append(save(fig, folder, f"fleet_cost_{unit}.png"))
    return made


def report(folder, args):
    """scripts/report.py's for a fleet folder: summary.md written and
    printed (ARGS.reference: the host the others are set against); an
    exit status."""
    try:
        print(write(folder, args.reference))
        return 0
    except ValueError as e:
        print(f"report: {e}", file=sys.stderr)
        return 2
