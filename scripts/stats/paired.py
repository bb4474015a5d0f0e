"""stats/paired.py: what markers cost a program while no one traces it,
from A and B alternated in ABBA rounds (make run AGAINST=, docs/dormant.md).

A round runs A, B, B, A (or B, A, A, B, the order random): a drift that
is linear over the round hits A and B alike and cancels in the round's
ratio r = (A1 + A2) / (B1 + B2), so the rounds' ratios are the paired
figures, in % of B: 100 (r - 1).  The stopping rule is Stein's two
stages, as the kit's cells: a pilot of rounds fixed before any is seen,
its spread deciding how many rounds reach the asked half-width (in
percentage points of B's time), a time cap the most.  The interval is
the t interval of every round's figure (mean_ci), not Stein's (the
pilot's sd alone): a round now and then holds an outlier run (a
neighbour, a steal), and a short pilot that happened to have none made
Stein's interval too narrow for the rounds after it (88% coverage
simulated with a 6-round pilot and 2% outlier runs, against 95-97% for
the t interval of all rounds: tests/test_dormant.py, drift and outliers
included).  The verdict: dearer where the interval lies above 0, cheaper
below, same (no difference detectable above the half-width reached)
where it holds 0.

Nothing to run: `from stats import paired`.
"""
import math
import statistics
import time

from record.dormant import CHEAPER, DEARER, MORE, PILOT, SAME
from stats.intervals import mean_ci, t95

MIN_PILOT = 6  # rounds: t(5) = 2.57; fewer would leave the interval to few degrees of freedom
MAX_PILOT = 30


def round_pct(a, b):
    """A round's figure: A's time over B's (each the round's two runs
    added), less 1, in % of B."""
    return 100.0 * (sum(a) / sum(b) - 1.0)


def pilot_rounds(round_s, budget_s):
    """How many rounds the pilot is: as many as fill a fifth of BUDGET_S
    by the first round's time ROUND_S, MIN_PILOT..MAX_PILOT."""
    fit = int(0.2 * budget_s / round_s) if round_s > 0 else MAX_PILOT
    return max(MIN_PILOT, min(MAX_PILOT, fit))


def rounds_needed(pilot, precision_pct):
    """Stein's second stage: the rounds in all that reach a 95% half-width
    of PRECISION_PCT points, from the PILOT's figures (at least the
    pilot)."""
    s0 = statistics.stdev(pilot)
    return max(len(pilot), math.ceil((t95(len(pilot) - 1) * s0 / precision_pct) ** 2))


def stopping(one_round, budget_s, precision_pct, now=time.monotonic):
    """The rule, whatever makes a round: ONE_ROUND(k, stage) times round K
    and returns its figure; a first round gives the round's time, then the
    pilot (pilot_rounds), then as many more as rounds_needed asks and
    BUDGET_S (from the start, by NOW) fits.  {figures, pilot, need, fit,
    round_s}: the run's figures and what decided their number."""
    t0 = now()
    figures = [one_round(0, PILOT)]
    round_s = now() - t0
    pilot = pilot_rounds(round_s, budget_s)
    while len(figures) < pilot:
        figures.append(one_round(len(figures), PILOT))
    need = rounds_needed(figures, precision_pct)
    fit = len(figures) + max(0, int((t0 + budget_s - now()) / round_s)) if round_s > 0 else need
    while len(figures) < min(need, fit):
        figures.append(one_round(len(figures), MORE))
    return {"figures": figures, "pilot": pilot, "need": need, "fit": fit, "round_s": round_s}


def verdict(lo, hi):
    if lo > 0:
        return DEARER
    if hi < 0:
        return CHEAPER
    return SAME


def answer(figures, pilot):
    """{mean_pct, lo_pct, hi_pct, half_pct, verdict, rounds, pilot} of a
    thread count's round FIGURES (in the order they ran), PILOT of them
    first (which decided how many ran)."""
    m, lo, hi = mean_ci(figures)
    return {"mean_pct": m, "lo_pct": lo, "hi_pct": hi, "half_pct": (hi - lo) / 2,
            "verdict": verdict(lo, hi), "rounds": len(figures), "pilot": pilot}
