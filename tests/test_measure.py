"""make run's wing (scripts/measure/): a small real matrix per tracer with
exact event counts, how runs are sized, cells that settle, paced runs and
the wait loop."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from kit_test import ROOT, StateTest, build, kit, need_tracer, rows_of, run
import configs
import params
import record
import stats
from bodies import BODY_BUILD
import tracers
from measure import kit as kitmod, matrix, sizing


class Matrix(StateTest):
    """ITER=100000, THREADS=1..2: every traced configuration sees exactly
    threads x iterations events (or the 0 it expects)."""

    def matrix(self, tracer):
        need_tracer(self, tracer)
        # (the site-* configurations, whose rows may be `corrupted`, are
        # Sites'; the probe bodies, some of which a tool cannot run, are
        # test_bodies')
        names = [c.name for c in configs.CONFIGS if c.tracer == tracer
                 and c.name.startswith(tracer) and c.build != BODY_BUILD]
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--quick", "1", "--threads", "1..2", "--iter", "100000",
                     "--configs", ",".join(names)], res)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            rows, _ = rows_of(res)
        self.assertEqual(sorted({r["config"] for r in rows}), sorted(names))
        for row in rows:
            with self.subTest(config=row["config"], threads=row["threads"]):
                cfg = configs.BY_NAME[row["config"]]
                if row["status"] == "skipped":
                    # Only a configuration its back-end cannot run here, for that reason.
                    self.assertEqual(row["reason"], tracers.get(tracer).skip_reason(cfg))
                    continue
                want = 0 if cfg.expect == "none" else int(row["threads"]) * 100000
                self.assertEqual(int(row["events_expected"]), want)
                if row["status"] == "dropped":
                    # The tracer said it lost events (perf record's buffer
                    # full, on some machines at 2 threads: a finding):
                    # what it saw and what it says it lost are every call.
                    got, lost = int(row["events_seen"]), int(row["events_dropped"])
                    self.assertGreater(lost, 0)
                    self.assertEqual(got + lost, want, row["reason"])
                    continue
                if row["status"] == "mismatch" and int(row["events_dropped"] or 0) > 0:
                    # ... and where they do not add up (perf record's count
                    # of its lost samples off: a finding), it says both.
                    got, lost = int(row["events_seen"]), int(row["events_dropped"])
                    self.assertIn(f"saw {got} events and said it lost {lost}: {got + lost} of "
                                  f"{want}", row["reason"])
                    continue
                self.assertEqual(row["status"], "ok", row["reason"])
                self.assertEqual(int(row["events_seen"]), want)
        self.assertTrue(any(r["status"] == "ok" for r in rows))

    def test_ftrace(self):
        self.matrix("ftrace")

    def test_perf(self):
        self.matrix("perf")

    def test_bpftrace(self):
        self.matrix("bpftrace")

    def test_lttng(self):
        self.matrix("lttng")

    def test_uftrace(self):
        self.matrix("uftrace")

    def test_untraced(self):
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--quick", "1", "--threads", "1,2", "--configs", "baseline,idle-*"], res)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            rows, folder = rows_of(res)
            untraced = [c for c in configs.CONFIGS if not tracers.get(c.tracer).attaches
                        and (c.name == "baseline" or c.name.startswith("idle-"))]
            self.assertEqual(len(rows), 2 * len(untraced))
            for row in rows:
                self.assertEqual(row["status"], "ok", row)
                self.assertEqual(sum(1 for _ in row["thread_wall_ns"].split(";")),
                                 int(row["threads"]))
            self.assertTrue(os.path.exists(os.path.join(folder, "meta.json")))
            self.assertEqual(os.readlink(os.path.join(res, "latest")), os.path.basename(folder))


class Sizing(StateTest):
    """How the runner sizes cells from their warm-up (not QUICK)."""

    def args(self, *extra):
        import run as runner
        return runner.parse_args(["--iter", "1000000", "--max-run-s", "2", "--min-run-s", "1",
                                  *extra])

    def test_round2(self):
        for n, up, want in ((1, False, 1), (19999, False, 19000), (20000, False, 20000),
                            (83333.3, False, 83000), (0.4, True, 1), (7, True, 7),
                            (100, True, 100), (101, True, 110), (833333333.3, True, 840000000)):
            with self.subTest(n=n, up=up):
                self.assertEqual(sizing.round2(n, up), want)

    def test_size_iterations(self):
        a = self.args()
        # Traced, 5 us a call: 2 s / 5 us = 400000; 6 us: 333333, down to 330000.
        self.assertEqual(sizing.size_iterations(a, 5000, True)[0], 400000)
        self.assertEqual(sizing.size_iterations(a, 6000, True)[0], 330000)
        # Traced, 10 ms a call: 200 calls, raised to the floor (2000).
        self.assertEqual(sizing.size_iterations(a, 1e7, True)[0], sizing.FLOOR_ITER)
        # Traced but fast: ITER.
        self.assertEqual(sizing.size_iterations(a, 10, True), (1000000, "ITER"))
        # Untraced, 1.2 ns a call: 1 s / 1.2 ns = 833333333, rounded up to 840000000.
        it, how = sizing.size_iterations(a, 1.2, False)
        self.assertEqual(it, 840000000)
        self.assertIn("MIN_RUN_S=1", how)
        self.assertEqual(sizing.size_iterations(self.args("--min-run-s", "0"), 1.2, False)[0],
                         1000000)

    def test_time_sliced_warm_up(self):
        """A warm-up's threads above the CPUs each fit in one time slice, so
        its wall time per call is that of one CPU; a timed run's threads
        share the CPUs: its CPU time per call times THREADS/CPUs."""
        ncpu = params.cpus()
        row, t = {"thread_cpu_ns": "21000;23000"}, record.Timing(0.1, 22000)
        # 20000 calls, 1.1 ns of wall and 1.1 ns of CPU a call on average.
        self.assertAlmostEqual(sizing.wall_per_call(row, t, 1, 20000), 1.1)
        self.assertAlmostEqual(sizing.wall_per_call(row, t, 4 * ncpu, 20000), 1.1 * 4)
        # A traced warm-up long enough to be sliced: its own wall time wins.
        row, t = {"thread_cpu_ns": "100000000"}, record.Timing(0.1, 20000 * 5000 * 4)
        self.assertAlmostEqual(sizing.wall_per_call(row, t, 4 * ncpu, 20000), 20000.0)

    def test_sized_from_earlier_runs(self):
        """WARM_UP=auto: a cell whose configuration an earlier run here
        timed (TIMINGS) runs no warm-up, and is sized from that run's time
        per call at its thread count or the nearest; WARM_UP=all warms it
        up all the same.  Thread counts run one after
        the other, each in its own rounds."""
        need_tracer(self, "ftrace")
        from measure import plan
        import run as runner
        with tempfile.TemporaryDirectory() as res:
            timings = os.path.join(res, "timings.json")
            argv = ["--iter", "200000", "--runs", "2", "--max-run-s", "0.05", "--min-run-s",
                    "0.05", "--configs", "baseline,ftrace-sdt", "--timings", timings]
            first = kit(["--threads", "1", *argv], res)
            self.assertEqual(first.returncode, 0, first.stderr[-2000:])
            self.assertIn("2 warm-ups", first.stderr)
            cache = plan.load(timings)
            shutil.rmtree(rows_of(res)[1])
            second = kit(["--threads", "1,2", *argv], res)
            self.assertEqual(second.returncode, 0, second.stderr[-2000:])
            self.assertRegex(second.stderr, r"run: plan: 4 cells .*, 0 warm-ups, 2 runs each")
            rows, folder = rows_of(res)
            shutil.rmtree(folder)
            third = kit(["--threads", "1,2", "--warm-up", "all", *argv], res)
            self.assertIn("4 warm-ups", third.stderr)
            # Never timed here: a configuration is warmed up at its first
            # thread count only, the next ones scaled from its runs there.
            shutil.rmtree(rows_of(res)[1])
            os.remove(timings)
            fourth = kit(["--threads", "1,2", *argv], res)
            self.assertIn("2 warm-ups", fourth.stderr)
            cold = rows_of(res)[0]
            a = runner.parse_args(argv)
        self.assertEqual([r for r in rows if r["rep"] == "0"], [])
        # 2 threads were never timed: 1 thread's time (the median of this
        # run's, which ran first), scaled by how many threads share a CPU (1
        # below the CPUs).
        share = {n: max(1, n / params.cpus()) for n in (1, 2)}
        for r in rows:
            n, traced = int(r["threads"]), r["config"] != "baseline"
            src = ("earlier runs here (TIMINGS)" if n == 1 else
                   "earlier runs here at 1 thread, scaled (TIMINGS)")
            ns = cache[r["config"]]["ns_per_call"]["1"]
            if n == 2:
                one = sorted(max(record.split_ns(x["thread_wall_ns"])) / int(x["iterations"])
                             for x in rows if x["config"] == r["config"] and x["threads"] == "1")
                ns = round(one[len(one) // 2], 4) * share[n] / share[1]
            want = sizing.size_iterations(a, ns, traced, src)
            self.assertEqual((int(r["iterations"]), r["sized_by"]), want, r)
        order = [r["threads"] for r in rows if r["rep"] != "0"]
        self.assertEqual(order, sorted(order), "a thread count's runs before the next's")
        self.assertEqual({r["threads"] for r in cold if r["rep"] == "0"}, {"1"})
        self.assertEqual({r["sized_by"] for r in cold if r["threads"] == "2"} - {
            "ITER", "cut to ~MAX_RUN_S=0.05 s by earlier runs here at 1 thread, scaled (TIMINGS)",
            "raised to MIN_RUN_S=0.05 s by earlier runs here at 1 thread, scaled (TIMINGS)"}, set())

    def test_time_limit_from_the_warm_up(self):
        k = kitmod.Kit(self.args())
        k.calib_iter = 20000
        cfg = configs.BY_NAME["ftrace-sdt"]
        k.estimate[("ftrace-sdt", 1)] = 0.5  # s for 20000 calls
        r = kitmod.Run.__new__(kitmod.Run)
        r.cfg, r.threads, r.iterations, r.rate = cfg, 1, 200000, kitmod.TIGHT
        # 120 s + 10 x 0.5 s x 200000 / 20000.
        self.assertAlmostEqual(k.time_limit(r), 120 + 50)
        r.threads = 2
        self.assertEqual(k.time_limit(r), kitmod.DEFAULT_TIME_LIMIT)
        # A paced run: 10x DURATION (3 s) plus the margin.
        r.rate = 1000
        self.assertAlmostEqual(k.time_limit(r), 120 + 10 * 3)

    def test_failed_warm_up_is_retried_then_falls_back(self):

        class Kit:
            calib_iter = sizing.WARMUP_ITER
            estimate = {}

            def __init__(self, results):
                self.results = list(results)
                self.calls = []

            def run_one(self, c, n, it, rep, sized_by=""):
                self.calls.append((it, rep, sized_by))
                status = self.results.pop(0)
                return ({"status": status, "reason": "killed by signal 6"},
                        record.Timing(0.1, 5000 * it))
        a = self.args()
        traced, untraced = configs.BY_NAME["ftrace-sdt"], configs.BY_NAME["baseline"]
        k = Kit(["failed", "ok"])
        it, how, _ = matrix.warm_up(k, a, traced, 1, "1/1")
        self.assertEqual((it, k.calls[1][2]), (400000, "warm-up retry"))
        self.assertIn("retried", how)
        k = Kit(["failed", "failed"])
        it, how, _ = matrix.warm_up(k, a, traced, 1, "1/1")
        self.assertEqual(it, sizing.FLOOR_ITER)
        self.assertIn("fallback: both warm-ups failed (killed by signal 6)", how)
        k = Kit(["failed", "failed"])
        self.assertEqual(matrix.warm_up(k, a, untraced, 1, "1/1")[0], 1000000)

    def test_a_sized_matrix(self):
        """A real run with warm-ups: every timed run made the calls its
        warm-up sized it to, and says how."""
        need_tracer(self, "ftrace")
        import run as runner
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--threads", "1", "--iter", "200000", "--runs", "1", "--max-run-s", "0.05",
                     "--min-run-s", "0.05", "--configs", "baseline,ftrace-sdt", "--warm-up",
                     "all"], res)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            rows, folder = rows_of(res)
            with open(os.path.join(folder, "meta.json")) as f:
                meta = json.load(f)
        self.assertEqual(meta["format_version"], record.FORMAT_VERSION)
        self.assertIsInstance(meta["inputs"]["seed"], int)
        warm = {r["config"]: r for r in rows if r["rep"] == "0"}
        timed = {r["config"]: r for r in rows if r["rep"] == "1"}
        self.assertEqual(sorted(warm), ["baseline", "ftrace-sdt"])
        a = runner.parse_args(["--iter", "200000", "--max-run-s", "0.05", "--min-run-s", "0.05"])
        for name, traced in (("baseline", False), ("ftrace-sdt", True)):
            w = warm[name]
            self.assertEqual((w["status"], w["iterations"]), ("ok", str(sizing.WARMUP_ITER)))
            per_call = max(record.split_ns(w["thread_wall_ns"])) / sizing.WARMUP_ITER
            want, how = sizing.size_iterations(a, per_call, traced)
            self.assertEqual(int(timed[name]["iterations"]), want)
            self.assertEqual(timed[name]["sized_by"], how)
            self.assertEqual(timed[name]["status"], "ok", timed[name]["reason"])
        self.assertGreater(int(timed["baseline"]["iterations"]), 200000)
        self.assertLess(int(timed["ftrace-sdt"]["iterations"]), 200000)


class Adaptive(StateTest):
    """Without RUNS each cell runs as many times as its first MIN_RUNS
    (the pilot) ask for (stats.settle, Stein's two stages), between
    MIN_RUNS and MAX_RUNS times, in interleaved rounds, and the folder
    says so (meta.json "stopping": the report's interval follows it);
    with RUNS, exactly RUNS times.  A plan is said first and the time it
    took at the end."""

    def test_cells_stop_when_settled(self):
        need_tracer(self, "ftrace")
        import run as runner
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--threads", "1", "--iter", "200000", "--max-run-s", "0.05",
                     "--min-run-s", "0.05", "--min-runs", "2", "--max-runs", "5",
                     "--idle-runs", "8",
                     "--configs", "baseline,idle-sdt,ftrace-sdt", "--warm-up", "all"], res)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            _, folder = rows_of(res)
            rows, meta, _ = record.load(folder)
        pilots = meta["stopping"].pop("pilots")
        self.assertEqual(meta["stopping"], {"rule": "stein", "pilot": 2, "max_runs": 5,
                                            "sliced_runs": params.BY_NAME["SLICED_RUNS"].default,
                                            "pilot_s": 0.6, "idle_runs": 8,
                                            "dormant_precision_pct":
                                                runner.parse_args([]).dormant_precision})
        # PILOT_S=0.6: a cell's pilot fills 0.6 s of its runs (the plan's
        # estimate), 2..5 of them; the untraced ones' (~0.07 s) fill all 5;
        # an idle-* row's is paired.MIN_PILOT..IDLE_RUNS
        self.assertEqual(sorted(pilots), ["baseline/1", "ftrace-sdt/1", "idle-sdt/1"])
        self.assertGreater(pilots["idle-sdt/1"], 2, pilots)  # a run ~0.07 s: 5 unless > 0.15 s
        self.assertGreaterEqual(pilots["idle-sdt/1"], pilots["ftrace-sdt/1"], pilots)
        traced = [c for c in stats.analyse([x for x in rows if x["rep"] >= 1], meta)["cells"]
                  if c["config"] == "ftrace-sdt"]
        self.assertIn("Stein's two-stage paired t", traced[0]["overhead"]["method"])
        self.assertRegex(r.stderr, r"run: plan: 3 cells \(3 configurations x THREADS=1\), "
                                   r"3 warm-ups, 2\.\.5 runs \(until PRECISION\)"
                                   r"(, \d cheap cells? piloting \d(\.\.\d)? runs \(PILOT_S\))? each: about "
                                   r"\d+s \(at least \d+s, at most \d+s\)")
        self.assertRegex(r.stderr, r"\[warm-up 1/3, ETA \d+s(\.\.\d+s)?\]")
        self.assertRegex(r.stderr, r"run: \d+ runs and 3 warm-ups in \d+s; the plan said about")
        # Each decision replayed from runs.csv, whose rows are in the order
        # they ran: settle() on a traced cell's runs so far, settle_idle()
        # on the idle row's (IDLE_RUNS its cap), against the baseline's so
        # far, says stop exactly where the row says so.
        a = runner.parse_args(["--min-runs", "2", "--max-runs", "5", "--idle-runs", "8"])
        so_far = {}
        for row in (x for x in rows if x["rep"] >= 1):
            mine = so_far.setdefault(row["config"], [])
            mine.append(row)
            pilot, base = pilots.get(f"{row['config']}/1"), so_far.get("baseline", [])
            if row["config"] == "idle-sdt":
                done, why = stats.settle_idle(mine, base, pilot, a.idle_runs,
                                              a.dormant_precision, "IDLE_RUNS")
            elif row["config"] != "baseline":
                done, why = stats.settle(mine, base, pilot, a.max_runs, a.precision,
                                         a.precision_ns)
            else:
                continue
            self.assertEqual(row["stopped"], why if done else "", row)
        for name, mine in so_far.items():
            with self.subTest(config=name):
                self.assertEqual([x["rep"] for x in mine], list(range(1, len(mine) + 1)))
                most = 8 if name != "ftrace-sdt" else 5  # IDLE_RUNS, MAX_RUNS
                self.assertTrue(pilots[f"{name}/1"] <= len(mine) <= most, len(mine))
                self.assertEqual([bool(x["stopped"]) for x in mine],
                                 [False] * (len(mine) - 1) + [True])
                # The baseline ran for as long as any cell it is measured against.
                self.assertGreaterEqual(len(so_far["baseline"]), len(mine))

    def test_time_sliced_cells_stop_at_sliced_runs(self):
        """THREADS above the CPUs: each cell stops at SLICED_RUNS however
        wide its interval (PRECISION_NS and PRECISION 0: none settles),
        and the plan says so; at 1 thread MAX_RUNS holds, IDLE_RUNS for
        the idle row (and the baseline, which runs as long)."""
        from params import cpus
        over = cpus() + 1
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--threads", f"1,{over}", "--iter", "20000", "--max-run-s", "0.02",
                     "--min-run-s", "0.02",
                     "--min-runs", "2", "--max-runs", "4", "--sliced-runs", "2",
                     "--precision", "0", "--precision-ns", "0", "--idle-runs", "7",
                     "--dormant-precision", "0.01",
                     "--configs", "baseline,idle-sdt"], res)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            rows, _ = rows_of(res)
        self.assertIn(f"THREADS {over} exceed the {cpus()} CPUs: time-sliced, another experiment "
                      "(flagged in the report), at most SLICED_RUNS=2 runs a cell there", r.stderr)
        for name in ("baseline", "idle-sdt"):
            with self.subTest(config=name):
                mine = [x for x in rows if x["config"] == name and x["threads"] == str(over)
                        and x["rep"] != "0"]
                self.assertEqual(len(mine), 2)
                if name != "baseline":  # which stops once every other cell there has
                    self.assertTrue(mine[-1]["stopped"].startswith("SLICED_RUNS=2 reached"),
                                    mine[-1]["stopped"])
                one = [x for x in rows if x["config"] == name and x["threads"] == "1"
                       and x["rep"] != "0"]
                # (DORMANT_PRECISION 0.01%: the idle row runs to IDLE_RUNS)
                self.assertEqual(len(one), 7)
                if name != "baseline":
                    self.assertTrue(one[-1]["stopped"].startswith("IDLE_RUNS=7 reached"),
                                    one[-1]["stopped"])

    def test_runs_means_exactly(self):
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--quick", "1", "--threads", "1", "--iter", "1000", "--runs", "2",
                     "--configs", "baseline,idle-sdt"], res)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            rows, _ = rows_of(res)
        self.assertIn("2 runs each", r.stderr)
        for name in ("baseline", "idle-sdt"):
            self.assertEqual([(x["rep"], x["stopped"]) for x in rows if x["config"] == name],
                             [("1", ""), ("2", "RUNS=2")])


class Pilot(unittest.TestCase):
    """sizing.pilot_runs: a cell's pilot fills PILOT_S by the plan's
    estimate of one run, MIN_RUNS..its most, by hand: at PILOT_S=0.6,
    MIN_RUNS=3, MAX_RUNS=10, a run of 0.07 s -> ceil(8.57) = 9; 0.2 s ->
    3; 0.25 s -> ceil(2.4) = 3 (MIN_RUNS); 0.01 s -> 60, so MAX_RUNS=10;
    THREADS above the CPUs -> SLICED_RUNS=4 at most; PILOT_S=0 -> 3."""

    def test_by_hand(self):
        a = params.parse_args(["--pilot-s", "0.6", "--min-runs", "3", "--max-runs", "10",
                               "--sliced-runs", "4"])
        over = params.cpus() + 1
        for threads, run_s, want in ((1, 0.07, 9), (1, 0.2, 3), (1, 0.25, 3), (1, 0.01, 10),
                                     (over, 0.07, 4)):
            with self.subTest(threads=threads, run_s=run_s):
                self.assertEqual(sizing.pilot_runs(a, threads, run_s), want)
        a.pilot_s = 0
        self.assertEqual(sizing.pilot_runs(a, 1, 0.01), 3)


class UserTimings(unittest.TestCase):
    """TIMINGS keeps a user's rows under their command's key: build/throw
    0's 3 ms a run never sizes build/throw 100000's (0.7 s traced: sized
    by the first, each run took 20 s); the kit's own rows keep their names."""

    def test_each_command_its_own(self):
        import workloads
        from measure import plan
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "timings.json")
            a = params.parse_args(["--timings", path])
            lib = "/lib/x86_64-linux-gnu/libstdc++.so.6"
            a.user = workloads.user(lib, "libstdcxx", "throw", ["build/throw", "0"])
            zero = plan.keyed("user-ftrace", a)
            self.assertTrue(zero.startswith("user-ftrace "), zero)
            self.assertEqual(plan.keyed("ftrace-sdt", a), "ftrace-sdt")
            with open(path, "w") as f:
                json.dump({zero: {"ns_per_call": {"1": 3e6}}, "ftrace-sdt":
                           {"ns_per_call": {"1": 5000.0}}}, f)
            cells = [("user-ftrace", 1, params.TIGHT), ("ftrace-sdt", 1, params.TIGHT)]
            args = (lambda n: True, lambda n, t, ns: 0.1, lambda n: 1)
            self.assertEqual(plan.Plan(a, cells, *args).cached("user-ftrace", 1), 3e6)
            a.user = workloads.user(lib, "libstdcxx", "throw", ["build/throw", "100000"])
            self.assertNotEqual(plan.keyed("user-ftrace", a), zero)
            p = plan.Plan(a, cells, *args)
            self.assertIsNone(p.cached("user-ftrace", 1))
            self.assertEqual(p.cached("ftrace-sdt", 1), 5000.0)

    def test_held_on_the_runs_inputs(self):
        """TARGET, PROBE and WORKLOAD make the run's own user workload, on
        its inputs (args.user); the registry's names no program still."""
        import workloads
        sdt = build("sdt")
        a = params.parse_args(["--target", sdt, "--probe", "benchmark:single_trace",
                               "--workload", f"{sdt} --threads 1 --iterations 10 --quiet"])
        self.assertEqual((a.user.program, a.user.marker), (sdt, "single_trace"))
        self.assertIs(workloads.get("user", a), a.user)
        self.assertEqual(workloads.get("user").program, "")
        self.assertIsNone(params.parse_args([]).user)


class Paced(StateTest):
    """RATE: the target paced to a rate per thread, and what it costs."""

    def paced(self, rate, threads=2, ms=1000, busy=None):
        cmd = [build("plain"), "--threads", str(threads), "--rate", str(rate), "--duration-ms",
               str(ms), "--quiet"]
        spinner = busy and subprocess.Popen(["sh", "-c", "while :; do :; done"])
        try:
            r = run(cmd)
        finally:
            if spinner:
                spinner.kill()
                spinner.wait()
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def test_achieved_rate(self):
        """Untraced, 2 threads, 1 s: each thread makes its calls at the
        requested rate within 3% (absolute deadlines; sleeping at 1000/s,
        batches of 100 at 100000/s)."""
        for rate in (1000, 100000):
            with self.subTest(rate=rate):
                rec = self.paced(rate)
                self.assertEqual(rec["rate"], rate)
                self.assertEqual(rec["pacing"], {"method": "sleep", "batch": max(1, rate // 1000)})
                for t in rec["per_thread"]:
                    # A thread the VM held up past its window's end makes
                    # its last call or two no more (seen: 999 of 1000).
                    self.assertLessEqual(t["calls"], rate)
                    self.assertGreaterEqual(t["calls"], rate * 0.99)
                    achieved = t["calls"] / (t["wall_ns"] / 1e9)
                    self.assertLess(abs(achieved / rate - 1), 0.03, (achieved, rate))

    def test_machine_cpu_sees_a_busy_process(self):
        """The machine-wide CPU the target reads around its window counts a
        process that is none of the kit's: with a shell spinning beside a
        1-thread run at 1000/s, the machine's busy CPU beyond the threads'
        own holds most of a CPU second (a count of the kit's own CPU alone
        would hold none of it).  Not against a run without the shell: the
        guests tier beside (run_tests.py) may fill the idle CPU then, and
        only the shell's share is the test's own."""
        quiet = self.paced(1000, threads=1)
        busy = self.paced(1000, threads=1, busy=True)
        self.assertIn(busy["machine_source"], ("schedstat", "proc_stat"))
        own = sum(t["cpu_ns"] for t in quiet["per_thread"])
        self.assertGreaterEqual(quiet["machine_busy_ns"], own)
        theirs = busy["machine_busy_ns"] - sum(t["cpu_ns"] for t in busy["per_thread"])
        self.assertGreater(theirs, 0.5e9)

    def test_paced_matrix(self):
        """A paced run of ftrace and perf record beside the baseline at the
        same rates: every traced run counts exactly the calls made, the
        rows carry rate, calls and pacing, and perf's own process shows
        CPU of its own (the tracer column)."""
        need_tracer(self, "ftrace")
        need_tracer(self, "perf")
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--threads", "1,2", "--rate", "1000,20000", "--duration", "0.5",
                     "--runs", "1", "--configs", "baseline,ftrace-sdt,perf-record-sdt"], res)
            self.assertEqual(r.returncode, 0, r.stderr)
            rows, _ = rows_of(res)
        self.assertEqual(len(rows), 3 * 2 * 2, [(x["config"], x["rate"]) for x in rows])
        for x in rows:
            with self.subTest(config=x["config"], threads=x["threads"], rate=x["rate"]):
                self.assertEqual(x["status"], "ok", x["reason"])
                rate, n = int(x["rate"]), int(x["threads"])
                # 0.5 s of calls; a thread that fell behind stops at the cut-off
                # short of them (seen: 999 of 1,000 under perf record on 2
                # CPUs), and then its row says it ran late
                want = rate * n // 2
                if int(x["calls"]) != want:
                    self.assertLess(int(x["calls"]), want)
                    self.assertGreater(int(x["late"]), 0, x)
                self.assertEqual(x["pacing"], f"sleep, batches of {max(1, rate // 1000)}")
                if x["tracer"] != "none":
                    self.assertEqual(int(x["events_seen"]), int(x["calls"]))
                if x["tracer"] == "perf":
                    self.assertGreater(int(x["tracer_user_ns"]) + int(x["tracer_sys_ns"]), 0)


class WaitLoop(unittest.TestCase):
    """The runner's wait for a run: it sleeps while a back-end watches,
    and the time limit holds in that state too."""

    def test_sleeps_and_limits_while_watching(self):
        import run as runner

        class NeverFound(tracers.Tracer):
            name = "never-found"

            def watch(self, run, pgid):
                return False  # keeps looking for a tracer pid it never finds
        with tempfile.TemporaryDirectory() as res:
            k = kitmod.Kit(runner.parse_args(["--quick", "1", "--results", res,
                                              "--time-limit", "2"]))
            try:
                k.open()
                tracer = NeverFound()
                r = kitmod.Run(k, configs.BY_NAME["baseline"], tracer, 1, 1, 1)
                cpu0 = time.process_time()
                rec, _, why = k.sup.execute(tracer, r, ["sleep", "30"], k.time_limit(r),
                                            ROOT)
                cpu = time.process_time() - cpu0
            finally:
                k.close()
        self.assertIsNone(rec)
        self.assertEqual(why, "sleep hung: killed after 2 s")
        # A spinning loop would use ~2 s of CPU in those 2 s.
        self.assertLess(cpu, 0.5)

    def waited(self, cmd, limit, dephase=False, hold=False):
        """CMD run under the runner's wait (a tracer with nothing to
        watch; HOLD: CMD holds for a release, as a target attached while it
        runs), with a time limit of LIMIT s: (its reason, what the wait
        did in order: ("start",), ("release",), ("pause", descriptor or
        None, seconds))."""
        import run as runner
        from unittest import mock
        from measure import supervise
        did = []
        real_pause, real_popen = supervise.pause, supervise.subprocess.Popen

        def pause(fd, seconds):
            did.append(("pause", fd, seconds))
            real_pause(fd, seconds)

        def popen(*a, **kw):
            did.append(("start",))
            return real_popen(*a, **kw)
        with tempfile.TemporaryDirectory() as res:
            k = kitmod.Kit(runner.parse_args(["--quick", "1", "--results", res,
                                              "--time-limit", str(limit)]))
            try:
                k.open()
                tracer = tracers.Tracer()
                r = kitmod.Run(k, configs.BY_NAME["baseline"], tracer, 1, 1, 1)
                with mock.patch.object(supervise, "pause", pause), \
                        mock.patch.object(supervise.subprocess, "Popen", popen), \
                        mock.patch.object(supervise.random, "uniform", lambda a, b: (a + b) / 4):
                    _, _, why = k.sup.execute(
                        tracer, r, cmd, k.time_limit(r), ROOT, dephase=dephase,
                        release=(lambda: did.append(("release",))) if hold else None)
            finally:
                k.close()
        return why, did

    def test_a_run_with_nothing_to_watch_is_not_woken(self):
        """With no tracer process of its own to look at and no pid to
        learn, the wait sleeps until the command ends (its pidfd), not a
        turn every POLL_S (a 0.5 s command: 50 turns), whose wake-ups land
        in short runs' windows; and its time limit holds there too.  (A
        kernel without pidfds, before 5.3, polls as before: skipped.)"""
        from measure import supervise
        fd = supervise.exit_fd(os.getpid())
        if fd is None:
            self.skipTest("no pidfd_open here (Linux 5.3): the wait polls")
        os.close(fd)
        why, did = self.waited(["sleep", "0.5"], 60)
        self.assertIn("printed 0 records", why)  # it ended, and was read (not the target)
        self.assertEqual([x[0] for x in did], ["start", "pause"], did)
        self.assertIsNotNone(did[1][1])  # the command's pidfd
        t0 = time.monotonic()
        why, did = self.waited(["sleep", "30"], 1)
        self.assertEqual(why, "sleep hung: killed after 1 s")
        self.assertLess(time.monotonic() - t0, 10)
        self.assertLessEqual(len(did), 3, did)

    def test_a_guest_runs_at_a_random_phase_of_the_tick(self):
        """DEPHASE (the kit passes it where the clock counts instructions):
        a pause of a random part of TICKS_S before the command starts, or,
        for a target that holds, after its release and before the byte that
        lets it go; none without it."""
        from measure import supervise
        phase = ("pause", None, supervise.TICKS_S / 4)
        why, did = self.waited(["true"], 60, dephase=True)
        self.assertIn("printed 0 records", why)
        self.assertEqual(did[:2], [phase, ("start",)])
        why, did = self.waited(["cat"], 60, dephase=True, hold=True)  # the byte: cat ends
        self.assertEqual(did[:3], [("start",), ("release",), phase])
        for hold in (False, True):
            why, did = self.waited(["cat"], 60, hold=hold)
            self.assertEqual([x for x in did if x[:2] == ("pause", None)], [])
        import run as runner
        for unit, dephase in (("instructions", True), ("ns", False)):
            asked = []

            def execute(*a, **kw):
                asked.append(kw["dephase"])
                raise tracers.TracerError("not run here")
            with tempfile.TemporaryDirectory() as res:
                k = kitmod.Kit(runner.parse_args(["--quick", "1", "--results", res,
                                                  "--unit", unit]))
                try:
                    k.open()
                    k.sup.execute = execute
                    row, _ = k.run_one(configs.BY_NAME["baseline"], 1, 1000, 1)
                finally:
                    k.close()
            self.assertEqual((asked, row["reason"]), ([dephase], "not run here"))


if __name__ == "__main__":
    unittest.main()


class Explain(unittest.TestCase):
    def test_a_failed_runs_reason_quotes_the_tool_not_its_noise(self):
        """bpftrace's log at the nop10-at1 site from a long checkout path
        (tests/fixtures/bpftrace/at1-long-path.log, from docs/example):
        the reason quotes bcc's own line (its tracefs fallback refused) and
        bpftrace's attach error, not the RLIMIT_MEMLOCK line bpftrace
        prints on every run."""
        from measure import supervise
        log = os.path.join(ROOT, "tests", "fixtures", "bpftrace", "at1-long-path.log")
        self.assertEqual(
            supervise.explain(log, tracers.get("bpftrace").log_noise),
            ": cannot attach uprobe, Invalid argument / ERROR: Error attaching probe: "
            "usdt:/tmp/ex2/build/benchmark-sdt-nop10-at1-canary:benchmark:single_trace, "
            "to PID: 14228")
