"""make run WORKLOAD='A' AGAINST='B': what markers cost while no one traces
(scripts/measure/dormant.py, stats/paired.py, render/dormant.py).

- Interval: its coverage under the kit's own stopping rule, simulated with
  noise like this VM's (a drift that wanders from run to run, run noise,
  outliers), and the verdicts worked by hand;
- IdleRows: make run's idle-* rows stop by the same rule, a cap of runs
  in place of a time cap (stats.settle_idle), and their interval in ns a
  call (stats.overhead, idle) holds as often;
- Input: bad input is an error before any timing;
- Runs (host tier): the kit's loop with a marker computing its argument
  against the plain build is `dearer`; the plain build against itself
  (A/A) holds 0; the passages of the kit's marker are counted exactly and
  nothing is left attached.

    python3 tests/run_tests.py test_dormant
"""
import json
import math
import os
import random
import subprocess
import tempfile
import unittest

from kit_test import ROOT, StateTest, need_build, need_root
from record.dormant import CHEAPER, DEARER, DORMANT_CSV, SAME
import stats
from stats import paired

RUN_PY = os.path.join(ROOT, "scripts", "run.py")


def dormant(args, results, **kw):
    return subprocess.run(["python3", RUN_PY, "--no-install", "1", "--results", results, *args],
                          capture_output=True, text=True, timeout=kw.pop("timeout", 600), **kw)


class Noise:
    """Run times like this VM's: log time = a drift that wanders from run
    to run (AR(1), phi 0.98: neighbours, frequency, steal), plus each run's
    own noise, plus an outlier now and then (2% of runs, +30%); HEAVY: 5%
    more of runs 20-70% longer, as the PHP example's A/A runs had."""

    def __init__(self, rng, delta, heavy=False, run_s=0.05, phi=0.98, drift_sd=0.03,
                 run_sd=0.02):
        self.rng, self.delta, self.run_s, self.heavy = rng, delta, run_s, heavy
        self.phi, self.sd, self.run_sd = phi, drift_sd * math.sqrt(1 - phi ** 2), run_sd
        self.drift, self.clock = rng.gauss(0, drift_sd), 0.0

    def run(self, side):
        self.drift = self.phi * self.drift + self.rng.gauss(0, self.sd)
        t = self.run_s * math.exp(self.drift + self.rng.gauss(0, self.run_sd))
        t *= (1 + self.delta) if side == "A" else 1.0
        if self.rng.random() < 0.02:
            t *= 1.3
        if self.heavy and self.rng.random() < 0.05:
            t *= 1 + self.rng.uniform(0.2, 0.7)
        self.clock += t
        return t

    def abba(self, k, stage):
        order = self.rng.choice(("ABBA", "BAAB"))
        walls = {"A": [], "B": []}
        for side in order:
            walls[side].append(self.run(side))
        return paired.round_figure(walls["A"], walls["B"])


class Interval(unittest.TestCase):
    """The 95% interval of the rounds under the stopping rule (a pilot,
    Stein's second stage on its robust spread, a time cap) holds the true
    difference 95% of the time, a short pilot (a tight cap) and heavy
    outliers included; A/A comes out `same` as often."""

    SIMS = 3000  # (a coverage of 0.95 is then known to +-0.008)

    def coverage(self, delta, budget_s=20.0, heavy=False, precision=1.0):
        rng = random.Random(6601 + int(delta * 1000) + heavy)
        held = same = 0
        for _ in range(self.SIMS):
            noise = Noise(rng, delta, heavy)
            got = paired.stopping(noise.abba, budget_s, precision, now=lambda: noise.clock)
            ans = paired.answer(got["figures"], got["pilot"])
            held += ans["lo_pct"] <= 100 * delta <= ans["hi_pct"]
            same += ans["verdict"] == SAME
        return held / self.SIMS, same / self.SIMS

    def test_a_a(self):
        for budget, heavy in ((20.0, False), (5.0, True)):
            with self.subTest(budget=budget, heavy=heavy):
                held, same = self.coverage(0.0, budget, heavy)
                self.assertGreaterEqual(held, 0.94)
                self.assertGreaterEqual(same, 0.94)

    def test_a_known_difference(self):
        for delta, budget, heavy in ((0.02, 20.0, False), (0.14, 20.0, True),
                                     (0.10, 5.0, False)):  # (5 s: a pilot of 6 rounds)
            with self.subTest(delta=delta, budget=budget, heavy=heavy):
                held, same = self.coverage(delta, budget, heavy)
                self.assertGreaterEqual(held, 0.94)
                if delta >= 0.1:
                    self.assertLess(same, 0.03)  # (found by nearly every try)

    def test_the_rule_by_hand(self):
        """A round's figure, the pilot's size, the signed-rank cut (the
        published table: 8 for 10 rounds, 52 for 20, 137 for 30), Stein's
        second stage on the robust spread."""
        self.assertAlmostEqual(paired.round_figure([11, 13], [10, 10]), 18.2322, places=4)
        self.assertAlmostEqual(paired.pct(paired.round_figure([11, 13], [10, 10])), 20.0)
        self.assertEqual(paired.pilot_rounds(1.0, 20.0), 6)  # (a fifth of 20 s: 4 rounds, 6 least)
        self.assertEqual(paired.pilot_rounds(0.1, 20.0), 30)  # (40 fit: 30 most)
        self.assertEqual(paired.pilot_rounds(0.2, 20.0), 20)
        self.assertEqual([paired.rank_cut(n) for n in (5, 6, 7, 10, 20, 30)],
                         [-1, 0, 2, 8, 52, 137])
        # pilot 1..6: median 3.5, MAD 1.5, x 1.4826 = 2.2239; t(5) 2.571 x
        # 1.023 x 2.2239 / 1 = 5.849, squared 34.2: 35 rounds
        self.assertEqual(paired.rounds_needed([1, 2, 3, 4, 5, 6], 1.0), 35)
        self.assertEqual(paired.rounds_needed([1, 2, 3, 4, 5, 6], 10.0), 6)

    def test_verdicts_by_hand(self):
        """Figures 1..6: 21 Walsh averages, their median 3.5; 6 rounds cut
        0: the interval [1, 6] (the least and the most), in % of B
        [1.005, 6.184], dearer; the same less 3.5 holds 0 (same); less
        10, below it (cheaper).  0, 1, 10: Walsh averages 0, 0.5, 1, 5,
        5.5, 10, the estimate (1 + 5) / 2 = 3, no interval (3 rounds)."""
        ans = paired.answer([1, 2, 3, 4, 5, 6], 6)
        self.assertAlmostEqual(ans["mean_pct"], 100 * (math.exp(0.035) - 1))
        self.assertAlmostEqual(ans["lo_pct"], 1.0050, places=4)
        self.assertAlmostEqual(ans["hi_pct"], 6.1837, places=4)
        self.assertEqual(ans["verdict"], DEARER)
        self.assertEqual(paired.answer([x - 3.5 for x in range(1, 7)], 6)["verdict"], SAME)
        self.assertEqual(paired.answer([x - 10 for x in range(1, 7)], 6)["verdict"], CHEAPER)
        self.assertEqual(paired.signed_rank([0, 1, 10]), (3.0, None, None))


class IdleRows(unittest.TestCase):
    """An idle-* cell against the baseline as make run's matrix runs them:
    each round one run of each, in a random order, the cell deciding after
    each of its runs (settle_idle: a pilot, Stein's second stage on the
    robust spread, the later stages, IDLE_RUNS the most), then its
    interval in ns a call, the report's (overhead, idle)."""

    SIMS = 1000  # (a coverage of 0.95 is then known to +-0.014)
    CALL_NS = 1.2  # the bare call here

    @staticmethod
    def row(rep, ns):
        return {"status": "ok", "iterations": 1000, "threads": 1, "rep": rep, "unit": "ns",
                "thread_wall_ns": str(round(ns * 1000))}

    def one(self, noise, pilot=12, most=60):
        cell, base = [], []
        while True:
            rep = len(cell) + 1
            for side in noise.rng.sample(("A", "B"), 2):
                (cell if side == "A" else base).append(
                    self.row(rep, self.CALL_NS * noise.run(side) / noise.run_s))
            done, why = stats.settle_idle(cell, base, pilot, most, 1.0, "IDLE_RUNS")
            if done:
                return stats.overhead(stats.cell_stats(cell), stats.cell_stats(base), pilot,
                                      idle=True), why

    def test_coverage(self):
        for delta, heavy in ((0.0, False), (0.0, True), (0.02, True)):
            with self.subTest(delta=delta, heavy=heavy):
                rng = random.Random(6604 + int(delta * 1000) + heavy)
                held = 0
                for _ in range(self.SIMS):
                    o, _ = self.one(Noise(rng, delta, heavy, run_sd=0.01))
                    # the truth in ns a call: the baseline's median call
                    # times delta (its drift's mean is 0 in the logarithm)
                    held += o["lo_ns"] <= self.CALL_NS * delta <= o["hi_ns"]
                self.assertGreaterEqual(held / self.SIMS, 0.935)

    def test_by_hand(self):
        """Six repetitions whose cell took 1..6% longer than the baseline's
        1 ns: figures 100 ln(1.0k); the cut for 6 is 0, so the interval is
        the least and the most figure, in ns a call 0.01 and 0.06 (the
        baseline's mean 1 ns), the estimate the Walsh averages' median,
        the 11th of 21: (ln 1.02 + ln 1.05) / 2 (ln's bend puts it between
        (ln 1.01 + ln 1.06) / 2 and (ln 1.03 + ln 1.04) / 2), turned back."""
        base = [self.row(k, 1.0) for k in range(1, 7)]
        cell = [self.row(k, 1.0 + k / 100) for k in range(1, 7)]
        o = stats.overhead(stats.cell_stats(cell), stats.cell_stats(base), 6, idle=True)
        self.assertAlmostEqual(o["lo_ns"], 0.01, places=6)
        self.assertAlmostEqual(o["hi_ns"], 0.06, places=6)
        self.assertAlmostEqual(o["mean_ns"], math.sqrt(1.02 * 1.05) - 1, places=6)
        self.assertIn("signed-rank", o["method"])
        # five pilot runs of six: not done; six: the figures 0.995, 1.980,
        # 2.956, 3.922, 4.879, 5.827, median 3.439, MAD 1.449 x 1.4826 =
        # 2.149; t(5) 2.571 x 1.023 x 2.149 / 1% = 5.651, squared 31.9: 32
        # runs; the interval [1%, 6%] half 2.5%
        self.assertEqual(stats.settle_idle(cell[:5], base[:5], 6, 60, 1.0, "IDLE_RUNS")[0],
                         False)
        self.assertEqual(stats.settle_idle(cell, base, 6, 60, 1.0, "IDLE_RUNS"),
                         (False, "6 of 32 runs: +-2.5%"))
        self.assertTrue(stats.settle_idle(cell, base, 6, 6, 1.0, "IDLE_RUNS")[1].startswith(
            "IDLE_RUNS=6 reached"))


class BadInput(unittest.TestCase):
    """AGAINST's bad input: an error naming the value and what is allowed,
    exit 2, before any timing (no row)."""

    CASES = [
        (["--against", "true"], "AGAINST needs WORKLOAD"),
        (["--workload", "true", "--against", "true", "--target",
          os.path.join(ROOT, "build", "benchmark-sdt")],
         "with AGAINST, TARGET and PROBE go together: PROBE missing"),
        (["--workload", "true", "--against", "'unclosed"], "AGAINST ''unclosed' is not allowed"),
        (["--workload", "true", "--against", "true", "--dormant-precision", "0"],
         "DORMANT_PRECISION '0' is not allowed"),
        (["--workload", "true", "--against", "true", "--dormant-method", "x"],
         "DORMANT_METHOD 'x' is not allowed"),
    ]

    def test_refused(self):
        with tempfile.TemporaryDirectory() as res:
            for args, want in self.CASES:
                with self.subTest(args=args):
                    r = dormant(args, res)
                    self.assertEqual(r.returncode, 2, r.stderr[-2000:])
                    self.assertIn(want, r.stderr)
            self.assertEqual(os.listdir(res), [])

    def test_probe_not_of_target(self):
        need_build(self, "sdt")
        target = os.path.join(ROOT, "build", "benchmark-sdt")
        with tempfile.TemporaryDirectory() as res:
            r = dormant(["--workload", "true", "--against", "true", "--target", target,
                         "--probe", "nope:*"], res)
            self.assertEqual(r.returncode, 2, r.stderr[-2000:])
            self.assertIn("PROBE 'nope:*' is not allowed", r.stderr)
            self.assertIn("it has benchmark:", r.stderr)

    def test_a_command_that_fails_or_does_other_work(self):
        """Each command runs once first: a failing one, or two whose outputs
        differ in size, end the run before any timing, the reason in meta."""
        cases = [(["false"], ["true"], "WORKLOAD 'false' failed: exit status 1"),
                 (["true"], ["sh", "-c", "exit 3"], "AGAINST 'sh -c 'exit 3'' failed: exit "
                  "status 3"),
                 (["echo", "a"], ["seq", "1000"], "WORKLOAD and AGAINST do other work: their "
                  "outputs are 2 and 3,893 bytes"),
                 (["/nonexistent/prog"], ["true"], "cannot start")]
        with tempfile.TemporaryDirectory() as res:
            for a, b, want in cases:
                with self.subTest(a=a, b=b):
                    r = dormant(["--workload", " ".join(a), "--against",
                                 subprocess.list2cmdline(b) if b[0] != "sh" else
                                 "sh -c 'exit 3'", "--threads", "1"], res)
                    self.assertEqual(r.returncode, 2, r.stderr[-2000:])
                    self.assertIn(want, r.stderr)
                    self.assertIn("nothing was timed", r.stderr)
                    folder = os.path.realpath(os.path.join(res, "latest"))
                    self.assertFalse(os.path.exists(os.path.join(folder, DORMANT_CSV)))
                    with open(os.path.join(folder, "meta.json")) as f:
                        self.assertIn(want, json.load(f)["error"])


def loop(build, n):
    return f"build/benchmark-{build} --threads 1 --iterations {n} --quiet"


class Runs(StateTest):
    """The kit's own loop as two commands: the marker that computes its
    argument (sdt-expensive) against the plain build is dearer; the plain
    build against itself holds 0 (A/A, at a 99.9% width: a 95% one fails
    one try in twenty by design); each method names itself."""

    def answer(self, a, b, *more, seconds="8"):
        with tempfile.TemporaryDirectory() as res:
            r = dormant(["--workload", a, "--against", b, "--threads", "1",
                         "--dormant-s", seconds, *more], res)
            self.assertEqual(r.returncode, 0, r.stderr[-3000:])
            with open(os.path.join(res, "latest", "report.json")) as f:
                got = json.load(f)
            self.assertTrue(os.path.exists(os.path.join(res, "latest", "report.md")))
            return got["answers"]["1"], r.stdout, got

    def test_planted_difference(self):
        need_build(self, "sdt-expensive")
        for method in ("abba", "duet"):
            with self.subTest(method=method):
                ans, out, _ = self.answer(loop("sdt-expensive", 1000000), loop("plain", 1000000),
                                          "--dormant-method", method)
                self.assertEqual(ans["verdict"], DEARER, out)
                self.assertGreater(ans["lo_pct"], 50)
                self.assertEqual(ans["method"], method)
                self.assertIn(f"{method} rounds", out)

    def test_a_a(self):
        need_build(self, "plain")
        ans, out, _ = self.answer(loop("plain", 5000000), loop("plain", 5000000))
        wide = ans["half_pct"] * 3.29 / 1.96  # (~99.9%, the t tail aside)
        self.assertLessEqual(abs(ans["mean_pct"]), wide, out)

    def test_passages(self):
        """TARGET and PROBE='benchmark:*': one run of A with a uprobe on the
        marker counts its passages, exactly; nothing left attached (the
        test's state check)."""
        need_root(self)
        need_build(self, "sdt")
        _, out, got = self.answer(loop("sdt", 200000), loop("plain", 200000), "--target",
                                  os.path.join(ROOT, "build", "benchmark-sdt"), "--probe",
                                  "benchmark:*")
        self.assertEqual(got["passages"], {"benchmark:single_trace": 200000}, out)
        self.assertIn("a passage", out)


if __name__ == "__main__":
    unittest.main()
