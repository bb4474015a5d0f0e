"""stats/intervals.py: the 95% intervals: a mean's (Student's t), a
median's (order statistics), a difference of two means (Welch's t) and
Stein's two-stage interval for a cell whose run count its pilot decided.

Nothing to run: `import stats` (stats/__init__.py names them all).
"""
import math
import statistics


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
