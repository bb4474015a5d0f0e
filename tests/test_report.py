"""The report (scripts/report.py): golden output on small fixture results
folders (tests/fixtures/report/), statistics against values computed by
hand, and clear errors for bad input."""
import json
import math
import os
import shutil
import tempfile
import unittest

from kit_test import ROOT, SCRIPTS, run
import report

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "report")
REPORT_PY = os.path.join(SCRIPTS, "report.py")


def fixture(name, tmp):
    dst = os.path.join(tmp, name)
    shutil.copytree(os.path.join(FIXTURES, name), dst)
    for f in ("expected-report.md",):
        if os.path.exists(os.path.join(dst, f)):
            os.unlink(os.path.join(dst, f))
    return dst


def cells(folder):
    rows, meta, _ = report.load(folder)
    a = report.analyse(rows, meta)
    return {(c["config"], c["threads"]): c for c in a["cells"]}, a


class Golden(unittest.TestCase):
    def test_basic_report_md(self):
        """report.md of the basic fixture equals the golden file beside it
        (regenerate with: python3 scripts/report.py tests/fixtures/report/basic
        && mv tests/fixtures/report/basic/report.md .../expected-report.md)."""
        with tempfile.TemporaryDirectory() as tmp:
            d = fixture("basic", tmp)
            r = run(["python3", REPORT_PY, d])
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(d, "report.md")) as f:
                got = f.read().replace(os.path.basename(tmp), "TMP")
            with open(os.path.join(FIXTURES, "basic", "expected-report.md")) as f:
                self.assertEqual(got, f.read())
            with open(os.path.join(d, "report.json")) as f:
                j = json.load(f)
            self.assertEqual(j["environment"]["host"], "fixture")
            self.assertIn("samples_ns", j["cells"][0])
            self.assertIn("| config", r.stdout)  # the terminal table
            self.assertIn("[ns/event]", r.stdout)
            self.assertNotIn("Traceback", r.stderr)

    def test_plots_or_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = fixture("basic", tmp)
            for py in ("/usr/bin/python3", "python3"):
                r = run([py, REPORT_PY, d])
                self.assertEqual(r.returncode, 0, r.stderr)
                has = run([py, "-c", "import matplotlib"]).returncode == 0
                pngs = [f for f in os.listdir(d) if f.endswith(".png")]
                if has:
                    self.assertEqual(sorted(pngs), ["overhead_by_config.png",
                                                    "overhead_vs_threads.png",
                                                    "user_sys_split.png"])
                    with open(os.path.join(d, pngs[0]), "rb") as f:
                        self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
                else:
                    self.assertIn("no plots: matplotlib cannot be imported", r.stderr)
                for p in pngs:
                    os.unlink(os.path.join(d, p))


class ByHand(unittest.TestCase):
    """The basic fixture's numbers, worked out by hand."""

    @classmethod
    def setUpClass(cls):
        cls.c, cls.a = cells(os.path.join(FIXTURES, "basic"))

    def test_warmups_ignored(self):
        self.assertEqual(self.c[("baseline", 1)]["n_runs"], 3)
        self.assertEqual(self.c[("baseline", 1)]["samples_ns"], [1.0, 1.1, 1.2])

    def test_median_mean_min_sd(self):
        b = self.c[("baseline", 1)]
        self.assertAlmostEqual(b["median_ns"], 1.1)
        self.assertAlmostEqual(b["mean_ns"], 1.1)
        self.assertAlmostEqual(b["min_ns"], 1.0)
        self.assertAlmostEqual(b["sd_ns"], 0.1)
        self.assertAlmostEqual(b["cv"], 0.1 / 1.1)

    def test_paired_overhead(self):
        # ftrace 5.0 5.2 5.6 against 1.0 1.1 1.2: differences 4.0 4.1 4.4,
        # mean 4.1667, sd 0.20817, t(2) 4.303: half-width 0.51716.
        o = self.c[("ftrace-sdt", 1)]["overhead"]
        self.assertAlmostEqual(o["mean_ns"], 12.5 / 3)
        self.assertAlmostEqual(o["hi_ns"] - o["mean_ns"], 4.303 * 0.2081666 / math.sqrt(3),
                               places=5)
        self.assertFalse(o["bounded"])
        self.assertAlmostEqual(o["median_ns"], 5.2 - 1.1)
        self.assertAlmostEqual(o["min_ns"], 5.0 - 1.0)
        # Slowdown: 5/1, 5.2/1.1, 5.6/1.2.
        self.assertAlmostEqual(o["slowdown_x"], (5 + 5.2 / 1.1 + 5.6 / 1.2) / 3)
        self.assertIn("paired", o["method"])

    def test_interval_holding_zero_is_a_bound(self):
        # idle 1.05 1.05 1.25 against 1.0 1.1 1.2: differences .05 -.05 .05.
        o = self.c[("idle-sdt", 1)]["overhead"]
        self.assertTrue(o["bounded"])
        self.assertAlmostEqual(o["mean_ns"], 0.05 / 3)
        self.assertTrue(report.f_overhead(o).startswith("< "))

    def test_user_sys_and_tracer_cpu(self):
        b = self.c[("bpftrace-sdt-count", 1)]
        # user = wall // 2: 1500 1550 1600 ns over 1000 events.
        self.assertAlmostEqual(b["user_ns"], 1.55)
        self.assertAlmostEqual(b["tracer_cpu_ns"], 2.0)

    def test_event_check(self):
        self.assertEqual(self.c[("ftrace-sdt", 1)]["check"],
                         {"expected": 3000, "seen": 3000, "dropped": 0, "verdict": "ok"})
        m = self.c[("bpftrace-sdt-count", 1)]
        self.assertEqual(m["check"]["verdict"], "MISMATCH")
        self.assertIn("EVENT MISMATCH: overhead not trustworthy", m["flags"])
        self.assertEqual(self.c[("lttng-flight", 1)]["check"]["verdict"], "overwritten")

    def test_scaling(self):
        # 2 threads of 1000 calls in 1.01..1.03 us vs 1000 calls in 1.0..1.2 us.
        s = self.c[("baseline", 2)]["scaling"]
        one = self.c[("baseline", 1)]["scaling"]["events_per_s"]
        self.assertAlmostEqual(one, (1e12 / 1000 + 1e12 / 1100 + 1e12 / 1200) / 3)
        self.assertAlmostEqual(s["efficiency"], s["events_per_s"] / one / 2)
        self.assertFalse(s["time_sliced"])
        self.assertTrue(self.c[("baseline", 3)]["scaling"]["time_sliced"])
        self.assertIn("time-sliced (3 threads > 2 CPUs)", self.c[("ftrace-sdt", 3)]["flags"])

    def test_skipped_and_failed(self):
        self.assertEqual(self.a["skipped"], [{
            "config": "stap-mark-alibi",
            "reason": "-DSTP_ALIBI is an option of the module runtime, which cannot run here"}])
        self.assertEqual([(f["config"], f["rep"]) for f in self.a["failed"]], [("ftrace-sdt", 4)])

    def test_2011_rows(self):
        rows = report.y2011(self.a)
        self.assertEqual(rows[0][:3], ["bare call (baseline)", "0.27 s", "1.0x"])
        self.assertEqual(rows[1][2:4], ["191.9x", "5155"])  # 51.82/0.27; (51.82-0.27)/10M s
        self.assertEqual(rows[2][2:4], ["102.2x", "2733"])  # 27.60/0.27; (27.60-0.27)/10M s
        # mark-time median 10.4 ns / baseline 1.1 ns; 10M calls = 0.104 s.
        self.assertEqual(rows[2][4:7], ["0.104 s", "9.5x", "9"])
        self.assertEqual(rows[3][3], "840")  # 8.4 s / 10M
        self.assertEqual(rows[3][6], "1")  # 10.4 - 9.6: the time call's share


class Errors(unittest.TestCase):
    def report(self, *folders):
        r = run(["python3", REPORT_PY, *folders])
        self.assertNotIn("Traceback", r.stderr)
        return r

    def test_missing_folder(self):
        r = self.report("/nonexistent/results")
        self.assertEqual(r.returncode, 1)
        self.assertIn("report: /nonexistent/results: no such results folder", r.stderr)

    def test_empty_csv(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = self.report(fixture("empty", tmp))
            self.assertEqual(r.returncode, 1)
            self.assertIn("runs.csv: empty (not even a header line)", r.stderr)

    def test_missing_columns(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = self.report(fixture("nocolumns", tmp))
            self.assertEqual(r.returncode, 1)
            self.assertIn("missing columns iterations, rep, status, thread_wall_ns", r.stderr)

    def test_partial_is_still_reported(self):
        """No baseline, an unknown column, a truncated line, no meta.json:
        each is said, and what is usable is reported."""
        with tempfile.TemporaryDirectory() as tmp:
            d = fixture("partial", tmp)
            r = self.report(d)
            self.assertEqual(r.returncode, 0)
            for msg in ("unknown columns ignored: extra", "truncated?); ignored",
                        "meta.json: missing", "no baseline rows; overheads are not computed"):
                self.assertIn(msg, r.stderr)
            with open(os.path.join(d, "report.md")) as f:
                md = f.read()
            self.assertIn("No baseline rows", md)
            self.assertIn("| idle-sdt", md)

    def test_several_folders_side_by_side(self):
        with tempfile.TemporaryDirectory() as tmp:
            a = fixture("basic", tmp)
            b = os.path.join(tmp, "basic2")
            shutil.copytree(a, b)
            r = self.report(a, b)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("| basic [ns/event] | basic2 [ns/event] | basic2 / basic |", r.stdout)
            self.assertIn("| ftrace-sdt ", r.stdout)
            self.assertTrue(os.path.exists(os.path.join(tmp, "compare-basic-basic2",
                                                        "report.md")))
            # Same data: every ratio is 1.00.
            table = r.stdout[r.stdout.index("# Comparison"):]
            ratios = [ln.split("|")[-2].strip() for ln in table.splitlines()
                      if ln.startswith("| ftrace-sdt")]
            self.assertEqual(set(ratios), {"1.00"})


if __name__ == "__main__":
    unittest.main()
