"""stats/stopping.py: the stopping rule: how many runs a cell gets
(Stein's two stages: a pilot, then as many as its spread asks, at most
MAX_RUNS), and the pilot a folder's cells stopped by.

Nothing to run: `import stats` (stats/__init__.py names them all).
"""
import math
import statistics

from record import DEFAULT_UNIT, FINDINGS, INSTRUCTIONS, MEASURED
from .intervals import stein_ci, t95
from .cells import cell_stats, overhead, paired_figures, per_rep
from . import paired


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
    asked = (f"the {min_runs} pilot runs asked for {want[1]}" if want[1] < math.inf
             else "a target of 0: no interval meets it")
    if len(values) >= want[0]:
        if want[1] > max_runs:
            return True, f"{cap}={max_runs} reached: {text} ({asked}; wider than {target})"
        return True, f"precise after {n} runs: {text} ({asked}; within {target})"
    if n >= max_runs:  # some failed, or the baseline's last is still to come
        return True, (f"{cap}={max_runs} reached: {text} ({asked}; {len(values)} paired with "
                      "the baseline's)")
    return False, f"{len(values)} of {want[0]} runs: {text} ({asked})"


def settle_idle(rows, base_rows, pilot, most, precision_pct, cap):
    """(stop?, why) for an idle-* cell (a build's markers in the kit's
    loop, nothing attached; ROWS its timed runs so far, BASE_ROWS the
    baseline's at its thread count): make run AGAINST='s rule
    (paired.replay) on the repetitions' figures 100 ln(cell / baseline)
    (paired_figures), the half-width asked PRECISION_PCT of the baseline's
    time (DORMANT_PRECISION), PILOT of them first, at most MOST runs (CAP
    its parameter's name).  A marker with nothing attached costs a few
    hundredths of a ns; a run here now and then takes 20-70% longer, and
    the signed-rank interval's width does not follow those outliers."""
    measured = [r for r in rows if r["status"] in MEASURED]
    base = [r for r in base_rows if r["status"] in MEASURED]
    n = len(rows)
    figures = paired_figures(per_rep(measured), per_rep(base))
    done, need = paired.replay(figures, pilot, precision_pct)
    target = f"DORMANT_PRECISION={precision_pct:g}% of the baseline's time"
    text = (f"+-{paired.answer(figures, pilot)['half_pct']:.3g}%" if len(figures) >= pilot
            else f"{len(figures)} of the {pilot} pilot runs paired")
    if done:
        return True, f"precise after {n} runs: {text} (signed-rank; within {target})"
    if n >= most:
        return True, f"{cap}={most} reached: {text} ({need} asked for {target})"
    return False, f"{len(figures)} of {need} runs: {text}"


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
    MAX_RUNS (infinity asked where the target is 0)."""
    m0, s0 = statistics.fmean(pilot), statistics.stdev(pilot)
    d = max(precision * abs(m0), precision_ns)
    # a target of 0 (PRECISION and PRECISION_NS 0): no interval meets it
    need = max(min_runs, math.ceil((t95(len(pilot) - 1) * s0 / d) ** 2)) if d > 0 else math.inf
    return min(max_runs, need), need


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
