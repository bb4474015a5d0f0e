"""stats.py: the kit's statistics, apart from how render/ shows them (one
file of some 560 lines on purpose: every statistic, the stopping rule
included, is read in one place).
Per (configuration, thread count) cell: the per-event times of each
thread's loop, their median/mean/min, sd and cv; the overhead against the
baseline with a 95% interval (paired t over interleaved repetitions in
ns, else Welch's t: always in instructions) and the slowdown from the
same test on the logarithms; the tracer's steady-state CPU per event; the
event check; scaling with threads.  Worked by hand in tests/test_stats.py.

Nothing to run: `import stats`.
"""
import json
import math
import os
import statistics

import configs
import workloads
import kernel
from record import DEFAULT_UNIT, FINDINGS, INSTRUCTIONS, LOSSLESS, MEASURED, num, paced_rate, split_ns as ints

from configs import BASELINE

NOISY_CV = 0.10  # a cell whose per-event times vary more than this is flagged
KEPT_PACE = 0.95  # a paced cell whose threads reached less of their rate fell behind

# Two-sided 95% critical values of Student's t, by degrees of freedom.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042,
       40: 2.021, 60: 2.000, 120: 1.980}


def t95(df):
    if df < 1:
        return float("nan")
    best = max(k for k in T95 if k <= df) if df < 1000 else None
    return T95[best] if best else 1.960


def mean_ci(values):
    """(mean, lo, hi) with a 95% t interval; lo/hi None below 2 values."""
    m = statistics.fmean(values)
    if len(values) < 2:
        return m, None, None
    h = t95(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return m, m - h, m + h


def median_ci(values):
    """(median, lo, hi, held) of VALUES: the order-statistic interval
    [x(k), x(n+1-k)] with the largest k whose chance of holding the true
    median is at least 95% for any continuous distribution, which is
    1 - 2 P(Bin(n, 1/2) < k) (HELD, a fraction).  Below 6 values none
    reaches 95%: then [min, max], HELD saying what it holds (1 - 2^(1-n));
    one value: no interval (lo, hi, held None)."""
    xs, n = sorted(values), len(values)
    med = statistics.median(xs)
    if n < 2:
        return med, None, None, None

    def held(k):  # 1 - 2 P(B <= k - 1), B ~ Bin(n, 1/2)
        return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n
    k = 1
    while k + 1 <= n // 2 and held(k + 1) >= 0.95:
        k += 1
    return med, xs[k - 1], xs[n - k], held(k)


def welch_ci(a, b):
    """Mean of a - b with Welch's 95% interval."""
    d = statistics.fmean(a) - statistics.fmean(b)
    if len(a) < 2 or len(b) < 2:
        return d, None, None
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return d, d, d
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    h = t95(int(df)) * se
    return d, d - h, d + h


def per_thread_column(row):
    """Which per-thread figure a row's per-event time comes from: its wall
    time, but under QEMU's -icount (unit `instructions`) its CPU time: the
    guest's one vCPU runs the threads in turn, and its clock, counting
    instructions, runs for all of them, so a thread's wall time holds the
    other threads' instructions too, while its CPU time (the guest
    scheduler's clock while that thread runs) holds its own, user and
    kernel, the traps it takes included."""
    return "thread_cpu_ns" if row.get("unit") == INSTRUCTIONS else "thread_wall_ns"


def cell_stats(rows):
    """Statistics of one (config, threads) cell from its measured rows."""
    samples, per_rep, user, sys_, tracer, walls = [], {}, [], [], [], []
    for r in rows:
        it, n = r["iterations"], r["threads"]
        thread_ns = [w / it for w in ints(r[per_thread_column(r)])]
        samples += thread_ns
        per_rep.setdefault(r["rep"], []).append(statistics.fmean(thread_ns))
        ev = it * n
        if r.get("thread_user_ns"):
            user.append(sum(ints(r["thread_user_ns"])) / ev)
            sys_.append(sum(ints(r["thread_sys_ns"])) / ev)
        tu, ts = num(r.get("tracer_user_ns")), num(r.get("tracer_sys_ns"))
        if tu is not None and ts is not None:
            tracer.append((tu + ts) / ev)
        w = num(r.get("wall_ns"))
        if w:
            walls.append(ev / (w / 1e9))
    per_rep = {k: statistics.fmean(v) for k, v in per_rep.items()}
    own = {}  # a real program's own figures (the workload column), by repetition
    for r in rows:
        for name, v in workload_figures(r).items():
            own.setdefault(name, {})[r["rep"]] = v
    sd = statistics.stdev(samples) if len(samples) > 1 else 0.0
    mean = statistics.fmean(samples)
    return {
        "n_runs": len(rows), "n_samples": len(samples), "samples_ns": samples,
        "per_rep_ns": per_rep, "median_ns": statistics.median(samples), "mean_ns": mean,
        "min_ns": min(samples), "sd_ns": sd, "cv": sd / mean if mean else 0.0,
        "user_ns": statistics.fmean(user) if user else None,
        "sys_ns": statistics.fmean(sys_) if sys_ else None,
        "tracer_cpu_ns": statistics.fmean(tracer) if tracer else None,
        "events_per_s": statistics.fmean(walls) if walls else None,
        "unit": rows[0].get("unit") or DEFAULT_UNIT, "own_per_rep": own,
    }


def workload_figures(row):
    """ROW's workload column (a real program's own figures) as {name: number}."""
    try:
        got = json.loads(row.get("workload") or "{}")
    except ValueError:
        return {}
    return {k: float(v) for k, v in got.items() if isinstance(v, (int, float))} \
        if isinstance(got, dict) else {}


def own_figures(cell, pilot=None, rates=()):
    """{name: (mean, lo, hi)} of a real program's own figures over CELL's
    repetitions, with the interval its overhead has: Stein's where the
    cell stopped on its first PILOT runs, else the plain t.  A figure named
    in RATES (pgbench's tps: work over time) is averaged as its inverse, a
    time, and turned back: the runs' whole work over their whole time (the
    harmonic mean), whose interval holds 95% under the kit's stopping rule
    where the rate's own did not (92.6% at 20% CV: 1/x is skewed); both
    simulated in tests/test_stats.py, OwnFigures."""
    out = {}
    for name, by_rep in (cell.get("own_per_rep") or {}).items():
        values = [by_rep[k] for k in sorted(by_rep)]
        inv = name in rates and all(v > 0 for v in values)
        if inv:
            values = [1 / v for v in values]
        m, lo, hi = stein_ci(values, pilot) if pilot else mean_ci(values)
        if inv:  # a time's interval, turned back (hi None: unbounded above)
            m, lo, hi = 1 / m, (1 / hi if hi and hi > 0 else None), (
                1 / lo if lo and lo > 0 else None)
        out[name] = (m, lo, hi)
    return out


def stein_ci(values, pilot):
    """(mean, lo, hi) of VALUES (in the order they ran) with Stein's
    two-stage 95% interval: the mean of all of them, the spread of the
    first PILOT alone, t with PILOT - 1 degrees of freedom and sqrt(n):
    how many ran was decided from those first PILOT (stats.settle), so
    for normal noise the interval does not depend on that decision, but
    through the pilot's mean in its target (PRECISION is relative), which
    is why its coverage is shown by simulation (tests/test_stats.py) (C. Stein, "A two-sample test for a linear hypothesis whose power is
    independent of the variance", Ann. Math. Statist. 16 (1945) 243-258).
    lo/hi None below 2 pilot values."""
    m = statistics.fmean(values)
    first = values[:pilot]
    if len(first) < 2:
        return m, None, None
    h = t95(len(first) - 1) * statistics.stdev(first) / math.sqrt(len(values))
    return m, m - h, m + h


def overhead(cell, base, pilot=None):
    """Overhead per event of cell against base, and the slowdown.  Both
    come from one test: paired t over the repetitions both cells ran,
    else Welch's t; the slowdown is exp of the same interval taken on
    the logarithms of the per-repetition times (a ratio of geometric
    means), so the baseline's own variance is in both.  PILOT: the cell
    ran as many times as its first PILOT repetitions asked for (settle),
    and the paired interval is Stein's (stein_ci).  In instructions (a
    lab guest) always Welch's: under -icount nothing drifts between runs
    for pairing to cancel, and a cell may come from another boot than its
    baseline (make lab's guests share a suite's configurations)."""
    common = sorted(set(cell["per_rep_ns"]) & set(base["per_rep_ns"]))
    c, b = cell["per_rep_ns"], base["per_rep_ns"]
    if len(common) >= 2 and INSTRUCTIONS not in (cell.get("unit"), base.get("unit")):
        diffs = [c[k] - b[k] for k in common]
        logs = [math.log(c[k] / b[k]) for k in common]
        if pilot:
            m, lo, hi = stein_ci(diffs, pilot)
            x, xlo, xhi = stein_ci(logs, pilot)
            method = (f"Stein's two-stage paired t over {len(common)} repetitions "
                      f"(spread of the first {min(pilot, len(common))})")
        else:
            m, lo, hi = mean_ci(diffs)
            x, xlo, xhi = mean_ci(logs)
            method = f"paired t over {len(common)} repetitions"
    else:
        a_, b_ = list(c.values()), list(b.values())
        m, lo, hi = welch_ci(a_, b_)
        x, xlo, xhi = welch_ci([math.log(v) for v in a_], [math.log(v) for v in b_])
        method = "Welch t (unpaired)" if lo is not None else "one run: no interval"
    ex = lambda v: None if v is None else math.exp(v)  # noqa: E731
    return {
        "mean_ns": m, "lo_ns": lo, "hi_ns": hi, "method": method,
        "bounded": lo is not None and lo <= 0 <= hi,
        "median_ns": cell["median_ns"] - base["median_ns"],
        "min_ns": cell["min_ns"] - base["min_ns"],
        "slowdown_x": ex(x), "slowdown_lo": ex(xlo), "slowdown_hi": ex(xhi),
    }


def settle(rows, base_rows, min_runs, max_runs, precision, precision_ns, cap="MAX_RUNS"):
    """(stop?, why) for a cell whose timed runs so far are ROWS, its
    baseline's at the same thread count BASE_ROWS, by Stein's two stages
    (stein_ci): its first MIN_RUNS measured repetitions (the pilot: the
    runner passes MIN_RUNS, or for a cheap cell as many as fill PILOT_S;
    the differences to the baseline's, or without a baseline its own
    per-event times) fix how many it needs, N = (t x sd / target)^2 where
    the target is PRECISION of the pilot's mean or PRECISION_NS, whichever
    is wider (so a cost near 0, an idle marker or a probe that never
    fires, can settle too), between the pilot's runs and MAX_RUNS; the cell stops
    once it has N, or at MAX_RUNS runs.  (A lab guest's cell in
    instructions, whose interval is Welch's, stops on that interval's
    width instead: on_width.)  Nothing after the pilot changes
    the decision, so the interval keeps its 95% (tests/test_stats.py's
    Coverage shows it by simulation; stopping on the interval's own width
    held the true value 91% of the time in noisy cells).  A cell whose
    every run was a verdict (mismatch, corrupted) stops at MIN_RUNS: more
    runs would not make its cost one to quote; one none of whose runs
    measured anything stops at MIN_RUNS."""
    n = len(rows)
    measured = [r for r in rows if r["status"] in MEASURED]
    base = [r for r in base_rows if r["status"] in MEASURED]
    if n < min_runs:
        return False, f"{n} of the {min_runs} pilot runs"
    if not measured:
        return True, f"none of {n} runs measured anything"
    verdicts = {r["status"] for r in measured}
    if verdicts <= set(FINDINGS) and len(measured) == n:
        return True, f"{'/'.join(sorted(verdicts))} in all {n} runs: a verdict, not a cost"
    unit = measured[0].get("unit") or DEFAULT_UNIT
    target = f"PRECISION={precision:g} of the mean or PRECISION_NS={precision_ns:g}"
    if unit == INSTRUCTIONS and base and rows is not base_rows:
        return on_width(cell_stats(measured), cell_stats(base), n, max_runs, precision,
                        precision_ns, unit, target, cap)
    values = pilot_values(cell_stats(measured), cell_stats(base) if base and rows is not base_rows
                          else None)
    if len(values) < min_runs:
        why = f"{len(values)} of the {min_runs} pilot runs measured"
        return (True, f"{cap}={max_runs} reached: {why}") if n >= max_runs else (False, why)
    want = runs_needed(values[:min_runs], min_runs, max_runs, precision, precision_ns)
    m, lo, hi = stein_ci(values, min_runs)
    half = (hi - lo) / 2
    text = f"+-{half:.3g} {unit}" + (f", {half / abs(m):.1%} of the mean" if m else "")
    asked = f"the {min_runs} pilot runs asked for {want[1]}"
    if len(values) >= want[0]:
        if want[1] > max_runs:
            return True, f"{cap}={max_runs} reached: {text} ({asked}; wider than {target})"
        return True, f"precise after {n} runs: {text} ({asked}; within {target})"
    if n >= max_runs:  # some failed, or the baseline's last is still to come
        return True, (f"{cap}={max_runs} reached: {text} ({asked}; {len(values)} paired with "
                      "the baseline's)")
    return False, f"{len(values)} of {want[0]} runs: {text} ({asked})"


def on_width(cell, base, n, max_runs, precision, precision_ns, unit, target, cap="MAX_RUNS"):
    """A lab guest's cell, in instructions, against its baseline: the
    report's interval there is Welch's (overhead(): under -icount nothing
    drifts for pairing to cancel, and a cell may come from another boot),
    so the cell stops once that interval is within the target, or at
    MAX_RUNS.  (Instructions under -icount vary by a few in thousands,
    so the choice of runs has next to nothing to pick from.)"""
    o = overhead(cell, base)
    m, lo, hi = o["mean_ns"], o["lo_ns"], o["hi_ns"]
    if lo is None:
        text, ok = "no interval yet", False
    else:
        half = (hi - lo) / 2
        text = f"+-{half:.3g} {unit}" + (f", {half / abs(m):.1%} of the mean" if m else "")
        ok = half <= max(precision * abs(m), precision_ns)
    if ok:
        return True, f"precise after {n} runs: {text} (within {target})"
    if n >= max_runs:
        return True, f"{cap}={max_runs} reached: {text}" + (
            f" (wider than {target})" if lo is not None else "")
    return False, text


def pilot_values(cell, base=None):
    """What settle and the report's interval are computed from, in the
    order the repetitions ran: the cell's differences to BASE at the
    repetitions both measured, or without a baseline its own per-event
    times."""
    c = cell["per_rep_ns"]
    if base is None:
        return [c[k] for k in sorted(c)]
    b = base["per_rep_ns"]
    return [c[k] - b[k] for k in sorted(set(c) & set(b))]


def runs_needed(pilot, min_runs, max_runs, precision, precision_ns):
    """(runs to make, runs the PILOT asked for): Stein's second stage,
    N = (t(pilot - 1) x the pilot's sd / target)^2, the target being
    PRECISION of its mean or PRECISION_NS, at least MIN_RUNS, at most
    MAX_RUNS."""
    m0, s0 = statistics.fmean(pilot), statistics.stdev(pilot)
    d = max(precision * abs(m0), precision_ns)
    need = max(min_runs, math.ceil((t95(len(pilot) - 1) * s0 / d) ** 2)) if d > 0 else max_runs
    return min(max_runs, need), need


def tracer_steady(warmups, runs):
    """The tracer's CPU per event in steady state and its fixed cost:
    the slope and intercept of tracer CPU against events between the
    warm-up (fewer calls) and the timed runs of one cell.  (None, None)
    where they made the same number of calls or have no tracer CPU."""
    def points(rows):
        return [((num(r.get("tracer_user_ns")) or 0) + (num(r.get("tracer_sys_ns")) or 0),
                 r["iterations"] * r["threads"]) for r in rows
                if num(r.get("tracer_user_ns")) is not None]
    w, t = points(warmups), points(runs)
    if not w or not t:
        return None, None
    cw, ew = statistics.fmean(p[0] for p in w), statistics.fmean(p[1] for p in w)
    ct, et = statistics.fmean(p[0] for p in t), statistics.fmean(p[1] for p in t)
    if et == ew:
        return None, None
    slope = (ct - cw) / (et - ew)
    return slope, cw - slope * ew


def analyse(rows, meta):
    """(A cell's every field is set here, so a reader sees the cell whole.)
    The analysis of one folder's tight-loop ROWS: {"cells": [...], the
    outcomes, "has_baseline", "cpus", "sites"}."""
    ncpu = (meta or {}).get("cpus") or os.cpu_count() or 1
    cells, order = {}, []
    for r in rows:
        key = (r["config"], r["threads"])
        if r["config"] not in order:
            order.append(r["config"])
        cells.setdefault(key, []).append(r)
    out = []
    for (config, threads), rs in cells.items():
        timed = [r for r in rs if (r["rep"] or 0) >= 1]
        measured = [r for r in timed if r["status"] in MEASURED]
        n_failed = sum(r["status"] == "failed" for r in timed)
        if not timed:
            continue
        c = {"config": config, "threads": threads, "tracer": rs[0].get("tracer", ""),
             "build": rs[0].get("build", ""), "probe": rs[0].get("probe", ""),
             "path": common(r.get("path") for r in measured),
             "attach": common(r.get("attach") or "before" for r in timed),
             "corrupted": sum(num(r.get("corrupted")) or 0 for r in measured),
             "calls": sum(calls(r) for r in measured),
             "runtime": next((r.get("runtime") for r in measured if r.get("runtime")), ""),
             "iterations": sorted({r["iterations"] for r in measured}),
             "n_timed": len(timed), "n_failed": n_failed,
             "statuses": sorted({r["status"] for r in timed}),
             "stopped": next((r["stopped"] for r in reversed(timed) if r.get("stopped")), ""),
             "failed_reasons": sorted({r["reason"] for r in timed if r["status"] == "failed"}),
             # a real program's runs' notes (its semaphores, bystanders: predict.causes)
             "notes": sorted({r["note"] for r in measured if r.get("note")})
             if configs.real(config) else []}
        c["flags"] = []
        if n_failed:
            c["flags"].append(f"{n_failed}/{len(timed)} runs failed"
                              + (": no figure" if not measured else ""))
        if not measured:
            c.update(n_runs=0, overhead=None, check=None, scaling=None)
            out.append(c)
            continue
        c.update(cell_stats(measured))
        c["tracer_steady_ns"], fixed = tracer_steady(
            [r for r in rs if r["rep"] == 0 and r["status"] in MEASURED], measured)
        c["tracer_fixed_ms"] = None if fixed is None else fixed / 1e6
        c["check"] = event_check(measured)
        if c["corrupted"]:
            c["flags"].append(f"UNSAFE: {c['corrupted']:,}/{c['calls']:,} calls corrupted")
        if c["check"]["verdict"] == "MISMATCH":
            c["flags"].append("EVENT MISMATCH: overhead not trustworthy")
        if c["check"]["verdict"] == "DROPPED":
            c["flags"].append("EVENTS DROPPED: the tracer did not keep up")
        if c["cv"] > NOISY_CV and c["n_samples"] > 1:
            c["flags"].append(f"noisy (cv {c['cv']:.0%})")
        if threads > ncpu:
            c["flags"].append(f"time-sliced ({threads} threads > {ncpu} CPUs)")
        out.append(c)
    rank = config_rank(order)
    out.sort(key=lambda c: (rank[c["config"]], c["threads"]))
    # Each cell against its own baseline (configs' against: BASELINE, or a
    # real program's untraced row) at its thread count.
    against = {c["config"]: configs.against(c["config"]) for c in out}
    base = {(c["config"], c["threads"]): c for c in out
            if against[c["config"]] == c["config"] and c["n_runs"]}
    for c in out:
        b = base.get((against[c["config"]], c["threads"]))
        if c["n_runs"]:
            p = pilot(meta, c["config"], c["threads"])
            c["overhead"] = overhead(c, b, p) if b and c is not b else None
            cfg = configs.BY_NAME.get(c["config"])
            w = workloads.get(cfg.workload) if cfg and cfg.workload else None
            c["own"] = own_figures(c, p, [k for k, _, rate in (w.figures if w else ()) if rate])
    scaling([c for c in out if c["n_runs"]], ncpu)
    return {"cells": out, **outcomes(rows), "cpus": ncpu,
            "has_baseline": any(k[0] == BASELINE for k in base),  # the kit's own
            "sites": sites(out)}


def pilot(meta, config=None, threads=None):
    """The runs of CONFIG's pilot at THREADS where the folder's cells
    stopped by Stein's two stages (meta.json "stopping", format 8: its
    "pilots", format 9, else "pilot", MIN_RUNS), else None: an older
    folder's cells stopped on their interval's width, and a RUNS=N one's
    ran N times, both read with the plain t interval."""
    s = (meta or {}).get("stopping") or {}
    if s.get("rule") != "stein":
        return None
    return (s.get("pilots") or {}).get(f"{config}/{threads}", s.get("pilot"))


def config_rank(seen):
    """Configurations in the table's order (baselines first, each tracer's
    rows together); names the table does not know follow, as first seen."""
    known = [c.name for c in configs.CONFIGS]
    return {n: i for i, n in enumerate(known + [n for n in seen if n not in known])}


def outcomes(rows):
    """{"skipped": each skipped configuration once with its reason,
    "failed": every failed run (warm-ups included)}, in the rows' order."""
    skipped = [{"config": r["config"], "reason": r["reason"]} for r in rows
               if r["status"] == "skipped"]
    failed = [{"config": r["config"], "threads": r["threads"], "rep": r["rep"],
               "reason": r["reason"]} for r in rows if r["status"] == "failed"]
    return {"skipped": dedup_skips(skipped), "failed": failed}


def dedup_skips(skipped):
    seen, out = set(), []
    for s in skipped:
        if s["config"] not in seen:
            seen.add(s["config"])
            out.append({"config": s["config"], "reason": s["reason"]})
    return out


def event_check(rows):
    exp = [num(r.get("events_expected")) for r in rows]
    seen = [num(r.get("events_seen")) for r in rows]
    dropped = sum(num(r.get("events_dropped")) or 0 for r in rows)
    statuses = {r["status"] for r in rows}
    if "corrupted" in statuses:
        verdict = "CORRUPTED"
    elif "mismatch" in statuses:
        verdict = "MISMATCH"
    elif all(e is None for e in exp):
        verdict = "unverified" if "unverified" in statuses else "n/a"
    elif "dropped" in statuses:
        verdict = "DROPPED"
    elif "overwritten" in statuses:
        verdict = "overwritten"
    elif "unverified" in statuses:  # some runs had a witness (agreed), some none
        verdict = "unverified"
    elif "agreed" in statuses:  # a witness's count, not the program's (record.STATUSES)
        verdict = "agreed"
    else:
        verdict = "ok"
    return {"expected": sum(e for e in exp if e is not None) if any(e is not None for e in exp)
            else None,
            "seen": sum(s for s in seen if s is not None) if any(s is not None for s in seen)
            else None,
            "dropped": dropped, "verdict": verdict}


def common(values):
    """The most frequent non-empty value ('' if none)."""
    vals = [v for v in values if v]
    return max(set(vals), key=vals.count) if vals else ""


def sites(cells):
    """The probe-site table: every cell of a uprobe-based probe whose row
    says which path it took, or that was judged by the canary; per cell
    its order of attach (configs.ATTACH), cost, corrupted/total calls, path
    and verdict (kernel.VERDICTS: UNSAFE where the canary caught the probe
    writing the program's data, NEVER FIRES where it saw nothing, REFUSED
    where the kernel refused the probe, CRASHES where the target died)."""
    out = []
    for c in cells:
        if (not c.get("path") and not c.get("build", "").endswith("-canary")) \
                or configs.real(c["config"]):  # a real program's: not one of the kit's sites
            continue
        o = c.get("overhead")
        seen = (c.get("check") or {}).get("seen")
        failed = c["failed_reasons"] if not c.get("n_runs") else []
        verdict = ("UNSAFE" if c["corrupted"] else
                   "REFUSED" if failed and all(map(kernel.refused, failed)) else
                   "CRASHES" if failed and all(map(kernel.crashed, failed)) else
                   "" if not c.get("n_runs") else
                   "NEVER FIRES" if seen == 0 and c["probe"] != "marker-noref" else
                   "safe" if c["build"].endswith("-canary") else "")
        out.append({"config": c["config"], "build": c["build"], "probe": c["probe"],
                    "tracer": c["tracer"], "threads": c["threads"], "attach": c["attach"],
                    "ns_per_event": o["mean_ns"] if o else None, "corrupted": c["corrupted"],
                    "calls": c["calls"], "path": c["path"], "verdict": verdict})
    return out


def scaling(cells, ncpu):
    by_cfg = {}
    for c in cells:
        by_cfg.setdefault(c["config"], {})[c["threads"]] = c
    for cfg, byt in by_cfg.items():
        one = byt.get(1)
        for t, c in byt.items():
            eff = None
            if one and one["events_per_s"] and c["events_per_s"]:
                eff = c["events_per_s"] / one["events_per_s"] / min(t, ncpu)
            c["scaling"] = {"events_per_s": c["events_per_s"], "efficiency": eff,
                            "time_sliced": t > ncpu}




# -- paced runs ---------------------------------------------------------------
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


def calls(row):
    """The calls the target made (a paced thread that fell behind made
    fewer than planned); threads x iterations where not recorded."""
    return num(row.get("calls")) or row["threads"] * row["iterations"]


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
