"""stats/paired.py: what markers cost a program while no one traces it,
from A and B paired in rounds (make run AGAINST=, docs/dormant.md).

A round runs A, B, B, A (or B, A, A, B, the order random; or a duet's A
beside B, then swapped): a drift that is linear over the round hits A and
B alike and cancels in the round's ratio r = (A1 + A2) / (B1 + B2).  A
round's figure is 100 ln r (log-percent): multiplicative noise, which a
run's time has, then makes each figure the true ln(1 + d) plus the
difference of two like draws, so the figures are symmetric about it.

The estimate and its 95% interval are the Hodges-Lehmann estimate (the
median of the figures' pairwise means, Walsh averages) and the Wilcoxon
signed-rank interval, exact to 50 rounds, by the normal approximation
above; both turned back into % of B's time, 100 (exp(x / 100) - 1).  Not
the t interval: a run here now and then takes 20-70% longer (a
neighbour, a steal), and a t interval's width follows those outliers (on
the PHP example's 279 A/A rounds: +-0.79% against +-0.29% for the median,
the same data); the signed-rank interval holds for any symmetric spread.

The stopping rule is Stein's second stage on a robust spread: a pilot of
rounds fixed before any is seen, whose MAD (x 1.4826) says how many
rounds in all reach the asked half-width (t of the pilot x 1.023, the
signed-rank interval's width against the t interval's under normal
noise), a time cap the most; then, where the interval of all those
rounds is still wider than asked (a pilot that held none of the
outliers: most A/A tries of the heavy simulation), as many more as its
own width says, 10% over, up to LATER_STAGES times as the time allows
(the simulated runs whose half-width reached the one asked went from 19%
to 99% there, their coverage 95-96% as before).  Coverage under it, drift and outliers
included, is simulated in tests/test_dormant.py.  The verdict: dearer
where the interval lies above 0, cheaper below, same (no difference
detectable above the half-width reached) where it holds 0.

Nothing to run: `from stats import paired`.
"""
import functools
import math
import statistics
import time

from record.dormant import CHEAPER, DEARER, MORE, PILOT, SAME
from stats.intervals import t95

MIN_PILOT = 6  # rounds: the fewest whose signed-rank interval reaches 95% (1 - 2/64)
MAX_PILOT = 30
EXACT_UP_TO = 50  # rounds: the signed-rank's null distribution counted exactly
HL_OVER_T = 1.023  # sqrt(pi / 3): the signed-rank interval's width over the t's, normal noise
MAD_SD = 1.4826  # a normal spread's sd over its MAD
LATER_STAGES = 5  # the most times the rounds' own width asks for more


def round_figure(a, b):
    """A round's figure: 100 ln(A's time / B's), each the round's runs added."""
    return 100.0 * math.log(sum(a) / sum(b))


def pct(x):
    """A figure (log-percent) as % of B's time."""
    return 100.0 * math.expm1(x / 100.0)


def pilot_rounds(round_s, budget_s):
    """How many rounds the pilot is: as many as fill a fifth of BUDGET_S
    by the first round's time ROUND_S, MIN_PILOT..MAX_PILOT."""
    fit = int(0.2 * budget_s / round_s) if round_s > 0 else MAX_PILOT
    return max(MIN_PILOT, min(MAX_PILOT, fit))


def spread(xs):
    """A robust sd: the MAD about the median, x 1.4826."""
    med = statistics.median(xs)
    return MAD_SD * statistics.median(abs(x - med) for x in xs)


def rounds_needed(pilot, precision_pct):
    """Stein's second stage on the PILOT's robust spread: the rounds in all
    that reach a 95% half-width of PRECISION_PCT (points of B's time,
    taken as log-percent: the same to a few hundredths at a few %), at
    least the pilot."""
    s0 = spread(pilot)
    return max(len(pilot), math.ceil((t95(len(pilot) - 1) * HL_OVER_T * s0 / precision_pct) ** 2))


def stopping(one_round, budget_s, precision_pct, now=time.monotonic):
    """The rule, whatever makes a round: ONE_ROUND(k, stage) times round K
    and returns its figure; a first round gives the round's time, then the
    pilot (pilot_rounds), then as many more as replay() asks and BUDGET_S
    (from the start, by NOW) fits.  {figures, pilot, need, fit, round_s}:
    the run's figures and what decided their number."""
    t0 = now()
    figures = [one_round(0, PILOT)]
    round_s = now() - t0
    pilot = pilot_rounds(round_s, budget_s)

    def fit():
        return len(figures) + max(0, int((t0 + budget_s - now()) / round_s)) if round_s > 0 \
            else math.inf
    while True:
        done, need = replay(figures, pilot, precision_pct)
        if done or len(figures) >= fit():
            break
        while len(figures) < min(need, fit()):
            figures.append(one_round(len(figures), PILOT if len(figures) < pilot else MORE))
    return {"figures": figures, "pilot": pilot, "need": need, "fit": fit(), "round_s": round_s}


def replay(figures, pilot, precision_pct):
    """Where the rule stands after FIGURES (in the order they ran), PILOT
    of them the pilot: (done, the rounds asked for so far).  Stein's second
    stage on the pilot (rounds_needed); then, where the interval of the
    rounds asked for came out wider than PRECISION_PCT (a pilot that missed
    the outliers), as many as that width says would reach it, 10% over, at
    most LATER_STAGES times.  Each decision is a function of the rounds
    before it alone, so the same figures replay to the same point: make
    run AGAINST='s rounds (stopping(), a time cap) and make run's idle-*
    rows (stats.settle_idle, a cap of runs) stop by this one rule."""
    if len(figures) < pilot:
        return False, pilot
    need = rounds_needed(figures[:pilot], precision_pct)
    for _ in range(LATER_STAGES):
        if len(figures) < need:
            return False, need
        half = answer(figures[:need], pilot)["half_pct"]
        if half <= precision_pct:
            return True, need
        need = max(need + 1, math.ceil(need * (half / precision_pct) ** 2 * 1.1))
    return len(figures) >= need, need


def walsh(xs):
    """The pairwise means (x_i + x_j) / 2, i <= j, sorted."""
    return sorted((xs[i] + xs[j]) / 2 for i in range(len(xs)) for j in range(i, len(xs)))


@functools.lru_cache(maxsize=None)
def rank_cut(n):
    """The signed-rank statistic's lower critical value w for N figures:
    the largest w with P(T+ <= w) <= 2.5% when the figures are symmetric
    about the truth (exactly counted to EXACT_UP_TO, else the normal
    approximation, continuity corrected); -1 where none is (N < 6).  Kept
    once counted: a stopping rule asks it again at every round, and the
    count was 70% of the check tier's coverage simulations' time."""
    m = n * (n + 1) // 2
    if n <= EXACT_UP_TO:
        ways = [1] + [0] * m  # ways[t]: the subsets of ranks 1..n that add up to t
        for r in range(1, n + 1):
            for t in range(m, r - 1, -1):
                ways[t] += ways[t - r]
        total, below, w = 2 ** n, 0, -1
        for t in range(m + 1):
            below += ways[t]
            if below / total > 0.025:
                break
            w = t
        return w
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    return math.floor(m / 2 - 1.959964 * sd - 0.5)


def signed_rank(xs):
    """(Hodges-Lehmann estimate, lo, hi): the median of the Walsh averages
    and the Wilcoxon signed-rank 95% interval [W(w + 1), W(M - w)]; lo and
    hi None where no interval reaches 95% (fewer than 6 figures)."""
    w = walsh(xs)
    est = statistics.median(w)
    cut = rank_cut(len(xs))
    if cut < 0:
        return est, None, None
    return est, w[cut], w[len(w) - 1 - cut]


def verdict(lo, hi):
    if lo > 0:
        return DEARER
    if hi < 0:
        return CHEAPER
    return SAME


def answer(figures, pilot):
    """{mean_pct, lo_pct, hi_pct, half_pct, verdict, rounds, pilot} of a
    thread count's round FIGURES (in the order they ran), PILOT of them
    first (which decided how many ran): the Hodges-Lehmann estimate
    (mean_pct, its name kept for the readers) and the signed-rank
    interval, in % of B's time."""
    est, lo, hi = signed_rank(figures)
    m, lo, hi = pct(est), pct(lo), pct(hi)
    return {"mean_pct": m, "lo_pct": lo, "hi_pct": hi, "half_pct": (hi - lo) / 2,
            "verdict": verdict(lo, hi), "rounds": len(figures), "pilot": pilot}
