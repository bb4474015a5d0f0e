"""stats/paced.py: paced runs (RATE other than max), by (config,
threads, rate), never pooled across rates; and the limits each cell
reached.

Nothing to run: `import stats` (stats/__init__.py names them all).
"""
import statistics

from configs import BASELINE
from record import LOSSLESS, MEASURED, num, paced_rate, split_ns as ints
from .cells import calls, config_rank


KEPT_PACE = 0.95  # a paced cell whose threads reached less of their rate fell behind


def paced(rows):
    """Paced rows (RATE other than max) by (config, threads, rate), never
    pooled across rates: per cell, the achieved rate per thread, the CPU
    of the target's threads, of the tracer's processes (over their whole
    life: start-up included) and of the whole machine (/proc/stat, over
    the threads' window), each per second of that window (% of one CPU),
    and against the baseline at the same threads and rate.  Then per
    (config, threads): the lossless limit and the rate at 1% of a CPU."""
    cells, order = {}, []
    for r in rows:
        rate = paced_rate(r)
        if rate is None or (r["rep"] or 0) < 1:
            continue
        if r["config"] not in order:
            order.append(r["config"])
        cells.setdefault((r["config"], r["threads"], rate), []).append(r)
    out = []
    for (config, threads, rate), rs in cells.items():
        measured = [r for r in rs if r["status"] in MEASURED and num(r.get("wall_ns"))]
        c = {"config": config, "threads": threads, "rate": rate, "tracer": rs[0].get("tracer"),
             "n_runs": len(rs), "statuses": sorted({r["status"] for r in rs}),
             "reasons": sorted({r["reason"] for r in rs if r.get("reason")}),
             "n_measured": len(measured)}
        if measured:
            def per_s(r, ns):  # ns of CPU per ns of the window, in % of one CPU
                return 100 * ns / num(r["wall_ns"])
            c["achieved"] = statistics.median(
                calls(r) / r["threads"] / (num(r["wall_ns"]) / 1e9) for r in measured)
            c["events_per_s"] = c["achieved"] * threads
            c["target_pct"] = statistics.fmean(per_s(r, sum(ints(r["thread_cpu_ns"])))
                                               for r in measured)
            busy = [per_s(r, num(r["machine_busy_ns"])) for r in measured
                    if num(r.get("machine_busy_ns")) is not None]
            c["machine_pct"] = statistics.fmean(busy) if busy else None
            tr = [per_s(r, num(r["tracer_user_ns"]) + num(r["tracer_sys_ns"])) for r in measured
                  if num(r.get("tracer_user_ns")) is not None]
            c["tracer_pct"] = statistics.fmean(tr) if tr else None
            c["expected"] = sum(num(r.get("events_expected")) or 0 for r in measured)
            c["seen"] = sum(num(r.get("events_seen")) or 0 for r in measured)
            c["dropped"] = sum(num(r.get("events_dropped")) or 0 for r in measured)
        c["lossless"] = (bool(measured) and len(measured) == len(rs)
                         and all(r["status"] in LOSSLESS for r in rs)
                         and c["achieved"] >= KEPT_PACE * rate)
        out.append(c)
    rank = config_rank(order)
    out.sort(key=lambda c: (rank[c["config"]], c["threads"], c["rate"]))
    base = {(c["threads"], c["rate"]): c for c in out
            if c["config"] == BASELINE and c.get("achieved")}
    for c in out:
        b = base.get((c["threads"], c["rate"]))
        c["over_target_pct"] = c["over_machine_pct"] = c["ns_per_event"] = None
        if b and c["config"] != BASELINE and c.get("achieved"):
            c["over_target_pct"] = c["target_pct"] - b["target_pct"]
            if c["machine_pct"] is not None and b["machine_pct"] is not None:
                c["over_machine_pct"] = c["machine_pct"] - b["machine_pct"]
                # % of one CPU = ns of CPU per 10^7 ns; per event: / events per s.
                c["ns_per_event"] = c["over_machine_pct"] * 1e7 / c["events_per_s"]
    return {"cells": out, "limits": limits(out), "has_baseline": bool(base)}


def limits(cells):
    """Per traced (config, threads): the lossless limit (the highest rate
    that it and every lower rate tested kept pace with no loss), the rate
    that broke it, and the events/s (all threads) at which the machine-wide
    overhead would reach 1% of one CPU, from ns/event at the highest
    lossless rate (where it is measured best)."""
    by = {}
    for c in cells:
        if c["tracer"] != "none":
            by.setdefault((c["config"], c["threads"]), []).append(c)
    out = []
    for (config, threads), cs in by.items():
        cs.sort(key=lambda c: c["rate"])
        held, broke = None, None
        for c in cs:
            if not c["lossless"]:
                broke = c
                break
            held = c
        ns = held and held["ns_per_event"]
        out.append({"config": config, "threads": threads, "tested": [c["rate"] for c in cs],
                    "limit": held and held["rate"], "broke_at": broke and broke["rate"],
                    "why": broke and why_not(broke),
                    "rate_at_1pct": 1e7 / ns if ns and ns > 0 else None})
    return out


def why_not(c):
    """Why a paced cell is not lossless, in a few words."""
    if not c.get("achieved"):
        return "; ".join(c["reasons"]) or "no run completed"
    bad = [s for s in c["statuses"] if s not in LOSSLESS]
    if bad:
        return f"{'/'.join(bad)}: " + "; ".join(c["reasons"])
    return f"fell behind: {c['achieved']:,.0f} of {c['rate']:,} calls/s per thread"
