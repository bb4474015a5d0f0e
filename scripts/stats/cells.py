"""stats/cells.py: one (configuration, thread count) cell: its per-event
times' figures, a real program's own figures, the overhead against the
baseline with its interval and the slowdown, the tracer's steady CPU.

Nothing to run: `import stats` (stats/__init__.py names them all).
"""
import json
import math
import statistics

import configs
from record import DEFAULT_UNIT, INSTRUCTIONS, num, split_ns as ints
from .intervals import mean_ci, stein_ci, welch_ci
from . import paired


NOISY_CV = 0.10  # a cell whose per-event times vary more than this is flagged


def per_thread_column(row):
    """Which per-thread figure a row's per-event time comes from: its wall
    time, but under QEMU's -icount (unit `instructions`) its CPU time: the
    guest's one vCPU runs the threads in turn, and its clock, counting
    instructions, runs for all of them, so a thread's wall time holds the
    other threads' instructions too, while its CPU time (the guest
    scheduler's clock while that thread runs) holds its own, user and
    kernel, the traps it takes included."""
    return "thread_cpu_ns" if row.get("unit") == INSTRUCTIONS else "thread_wall_ns"


def thread_ns(row):
    """ROW's per-event time of each thread."""
    return [w / row["iterations"] for w in ints(row[per_thread_column(row)])]


def per_rep(rows):
    """{repetition: its runs' mean per-event time} of measured ROWS."""
    out = {}
    for r in rows:
        out.setdefault(r["rep"], []).append(statistics.fmean(thread_ns(r)))
    return {k: statistics.fmean(v) for k, v in out.items()}


def cell_stats(rows):
    """Statistics of one (config, threads) cell from its measured rows."""
    samples, user, sys_, tracer, walls = [], [], [], [], []
    for r in rows:
        it, n = r["iterations"], r["threads"]
        samples += thread_ns(r)
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
    own = {}  # a real program's own figures (the workload column), by repetition
    for r in rows:
        for name, v in workload_figures(r).items():
            own.setdefault(name, {})[r["rep"]] = v
    sd = statistics.stdev(samples) if len(samples) > 1 else 0.0
    mean = statistics.fmean(samples)
    return {
        "n_runs": len(rows), "n_samples": len(samples), "samples_ns": samples,
        "per_rep_ns": per_rep(rows), "median_ns": statistics.median(samples), "mean_ns": mean,
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


def overhead(cell, base, pilot=None, idle=False):
    """Overhead per event of cell against base, and the slowdown.  Both
    come from one test: paired t over the repetitions both cells ran,
    else Welch's t; the slowdown is exp of the same interval taken on
    the logarithms of the per-repetition times (a ratio of geometric
    means), so the baseline's own variance is in both.  PILOT: the cell
    ran as many times as its first PILOT repetitions asked for (settle),
    and the paired interval is Stein's (stein_ci).  IDLE (an idle-* row,
    in ns, at least paired.MIN_PILOT repetitions paired): the signed-rank
    interval of the repetitions' log ratios (paired_figures), the rule
    its runs stopped by (settle_idle).  In instructions (a lab guest)
    always Welch's: under -icount nothing drifts between runs for pairing
    to cancel, and a cell may come from another boot than its baseline
    (make lab's guests share a suite's configurations)."""
    common = sorted(set(cell["per_rep_ns"]) & set(base["per_rep_ns"]))
    c, b = cell["per_rep_ns"], base["per_rep_ns"]
    ns = INSTRUCTIONS not in (cell.get("unit"), base.get("unit"))
    if idle and ns and len(common) >= paired.MIN_PILOT:
        x, xlo, xhi = (v / 100 for v in paired.signed_rank(paired_figures(c, b)))
        per = statistics.fmean(b[k] for k in common)  # the baseline's time a call
        m, lo, hi = (math.expm1(v) * per for v in (x, xlo, xhi))
        method = (f"Hodges-Lehmann, Wilcoxon signed-rank interval over {len(common)} "
                  "repetitions' log ratios (stats/paired.py)")
    elif len(common) >= 2 and ns:
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


def paired_figures(c, b):
    """100 ln(C / B) at each repetition both ran, in the order they ran
    (C, B: {repetition: time}, a cell's per_rep_ns or per_rep()): an
    idle-* row's figures (stats/paired.py's, a repetition a round: the two
    ran once each, in a random order)."""
    return [100 * math.log(c[k] / b[k]) for k in sorted(set(c) & set(b))]


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


def common(values):
    """The most frequent non-empty value ('' if none)."""
    vals = [v for v in values if v]
    return max(set(vals), key=vals.count) if vals else ""


def config_rank(seen):
    """Configurations in the table's order (baselines first, each tracer's
    rows together); names the table does not know follow, as first seen."""
    known = [c.name for c in configs.CONFIGS]
    return {n: i for i, n in enumerate(known + [n for n in seen if n not in known])}


def calls(row):
    """The calls the target made (a paced thread that fell behind made
    fewer than planned); threads x iterations where not recorded."""
    return num(row.get("calls")) or row["threads"] * row["iterations"]
