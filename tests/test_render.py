"""The report's wing (scripts/render/, scripts/report.py): golden output
on small fixture folders (tests/fixtures/report/) and docs/example, a lab
guest's 2011 column, paced and site tables, the terminal answers, and
clear errors for bad input."""
import csv
import glob
import json
import os
import shutil
import tempfile
import unittest

from kit_test import (EXAMPLE, EXPECTED, FIXTURES, REPORT_PY, ROOT, cells, fixture, golden,
                      report_text, run, unavailable)
import kernel
import record
from render import runs as report_runs
import stats
import tracers
from measure import paths
from render import formats, sites, summary
from render import lab as render_lab


def both(*args, **kw):
    """report.md and tables.md (report.markdown) as one text, for checks
    that do not care which of the two holds a line."""
    return "".join(doc for doc in report_runs.markdown(*args, **kw) if doc)


class Golden(unittest.TestCase):
    def same_as_golden(self, d, golden_report, golden_tables):
        """D's report.md and tables.md equal the golden files given (the
        line linking the plots aside)."""
        for got, want in (("report.md", golden_report), ("tables.md", golden_tables)):
            with open(os.path.join(d, got)) as f, open(want) as g:
                self.assertEqual(golden(f.read()), golden(g.read()), f"{got} against {want}")

    def test_basic_report_md(self):
        """report.md and tables.md of the basic fixture equal the golden
        files beside it (regenerate with: python3 scripts/report.py
        tests/fixtures/report/basic, then move its report.md and tables.md
        to expected-report.md and expected-tables.md)."""
        with tempfile.TemporaryDirectory() as tmp:
            d = fixture("basic", tmp)
            r = run(["python3", REPORT_PY, d])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.same_as_golden(d, *(os.path.join(FIXTURES, "basic", f"expected-{n}.md")
                                     for n in ("report", "tables")))
            with open(os.path.join(d, "report.json")) as f:
                j = json.load(f)
            self.assertEqual(j["environment"]["host"], "fixture")
            self.assertIn("samples_ns", j["cells"][0])
            self.assertIn("| configuration", r.stdout)  # the answers, not the tables
            self.assertIn("[ns/event]", r.stdout)
            self.assertNotIn("## Overhead per event", r.stdout)
            self.assertNotIn("Traceback", r.stderr)
            out = r.stdout.splitlines()
            self.assertLessEqual(len(out), summary.LINES + 3)
            self.assertLessEqual(max(map(len, out)), summary.WIDTH)

    def test_example_is_current(self):
        """docs/example, a real default run README quotes: the report and
        tables today's report.py writes from its runs.csv and meta.json are
        tests/expected/example-report.md and example-tables.md (after a
        change to the report: python3 scripts/report.py docs/example, and
        its report.md and tables.md copied there)."""
        with tempfile.TemporaryDirectory() as tmp:
            d = os.path.join(tmp, "example")
            os.mkdir(d)
            for f in ("runs.csv", "meta.json"):
                shutil.copy(os.path.join(EXAMPLE, f), d)
            r = run(["python3", REPORT_PY, d])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.same_as_golden(d, os.path.join(EXPECTED, "example-report.md"),
                                os.path.join(EXPECTED, "example-tables.md"))
        out = r.stdout.splitlines()
        self.assertLessEqual(len(out), summary.LINES + 3)
        self.assertLessEqual(max(map(len, out)), summary.WIDTH)

    def test_paced_report_md(self):
        """The paced fixture (hand-chosen rows at RATE=1000,10000; the
        figures are worked by hand in ByHand.test_paced) against its golden
        report and tables: no tight-loop sections, the paced table and the
        limits."""
        with tempfile.TemporaryDirectory() as tmp:
            d = fixture("paced", tmp)
            r = run(["python3", REPORT_PY, d])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.same_as_golden(d, *(os.path.join(FIXTURES, "paced", f"expected-{n}.md")
                                     for n in ("report", "tables")))
            with open(os.path.join(d, "report.md")) as f:
                got = f.read()
            with open(os.path.join(d, "tables.md")) as f:
                tables = f.read()
            self.assertNotIn("## Overhead per event", got + tables)
            self.assertIn("## Paced runs: CPU at a given event rate", tables)
            self.assertIn("- [Paced runs: CPU at a given event rate](tables.md#paced-runs-cpu-at"
                          "-a-given-event-rate): 11 table rows", got)
            self.assertIn("Paced runs: the highest rate each held without losing an event",
                          r.stdout)
            # A paced-only run's skips are said too (they once were not).
            self.assertIn("## Skipped and failed\n\n- skipped stap-mark-alibi", got)
            if "plots" in r.stdout:  # drawn where matplotlib is (test_plots_or_one_line)
                self.assertTrue(os.path.exists(os.path.join(d, "paced_cpu.png")))

    def test_plots_or_one_line(self):
        """Whichever interpreter the user types, the plots are drawn if any
        interpreter here has matplotlib (the report re-runs itself under
        it, and says so); only where none has it, one line says why."""
        any_has = any(run([py, "-c", "import matplotlib"]).returncode == 0
                      for py in ("/usr/bin/python3", "python3"))
        with tempfile.TemporaryDirectory() as tmp:
            d = fixture("basic", tmp)
            for py in ("/usr/bin/python3", "python3"):
                r = run([py, REPORT_PY, d])
                self.assertEqual(r.returncode, 0, r.stderr)
                has = run([py, "-c", "import matplotlib"]).returncode == 0
                pngs = [f for f in os.listdir(d) if f.endswith(".png")]
                if any_has:
                    self.assertEqual(sorted(pngs), ["overhead_by_config.png",
                                                    "overhead_vs_threads.png",
                                                    "user_sys_split.png"])
                    with open(os.path.join(d, pngs[0]), "rb") as f:
                        self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
                    self.assertIn("plots (drawn by ", r.stdout)
                    if not has:
                        self.assertIn("has no matplotlib; running it under", r.stderr)
                else:
                    self.assertIn("no plots: matplotlib cannot be imported", r.stderr)
                for p in pngs:
                    os.unlink(os.path.join(d, p))


class Guest2011(unittest.TestCase):
    """The 2011 table's module-runtime column from a lab guest beside the
    host's folder (fixtures/report/guest: per call 6.0/6.1/6.2 instructions
    untraced in runs 1..3, and each stap configuration the same plus a
    constant, so its overhead is that constant with a zero-width interval)."""
    GUEST = os.path.join(FIXTURES, "guest", "20261201T000000Z-lab")

    def host_beside_guest(self, tmp, unit="instructions", baseline=True):
        host = fixture("basic", tmp)
        shutil.copytree(self.GUEST, os.path.join(tmp, os.path.basename(self.GUEST)))
        meta = os.path.join(tmp, os.path.basename(self.GUEST), "sid", "meta.json")
        if not baseline:  # as make lab QUICK=1 was before it ran one
            runs = os.path.join(os.path.dirname(meta), "runs.csv")
            with open(runs) as f:
                kept = [ln for ln in f if ",baseline," not in ln]
            with open(runs, "w") as f:
                f.writelines(kept)
        with open(meta) as f:
            m = json.load(f)
        m["unit"] = unit
        with open(meta, "w") as f:
            json.dump(m, f)
        return host

    def test_guest_column(self):
        with tempfile.TemporaryDirectory() as tmp:
            host = self.host_beside_guest(tmp)
            lab = os.path.join(tmp, os.path.basename(self.GUEST))
            # a host's report depends on no other folder in results/ ...
            r = run(["python3", REPORT_PY, host])
            self.assertNotIn("[instructions/event]", report_text(host))
            # ... and takes the guest it is given (the lab's top folder or its suite's)
            self.assertEqual(report_runs.guest_for(lab), report_runs.guest_for(os.path.join(lab, "sid")))
            g = report_runs.guest_for(lab)
            # named as `<stamp>-lab/sid`
            self.assertEqual(g["folder"], os.path.join("20261201T000000Z-lab", "sid"))
            got = render_lab.guest_2011(g)
            self.assertEqual(got, {
                "bare call (baseline)": "6.10 a call",  # the median of 6.0, 6.1, 6.2
                "process.function + gettimeofday_ns + $v": "2,500 [2,500, 2,500]",
                "process.mark + gettimeofday_ns + $arg1": "1,910 [1,910, 1,910]",
                "process.function + $v, no gettimeofday_ns": "2,000 [2,000, 2,000]",
                "process.mark + $arg1, no gettimeofday_ns": "1,400 [1,400, 1,400]",
                "gettimeofday_ns() share": "510"})  # 1910 - 1400
            r = run(["python3", REPORT_PY, host, "--guest", lab])
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(host, "report.md")) as f:
                md = f.read()
        self.assertIn("module runtime, sid guest 7.2.13 [instructions/event]", md)
        self.assertRegex(md, r"\| 1,910 \[1,910, 1,910\] +\|")
        self.assertIn("-lab/sid (Debian sid, kernel 7.2.13+deb14-amd64, SystemTap 5.6/0.196, "
                      "`staprun -L`, flight recorder), in guest **instructions** per event", md)

    def test_only_instructions(self):
        """A guest folder in ns (KVM, or ICOUNT=0) is not the 2011 table's
        instructions column, nor one without a baseline (no overhead)."""
        with tempfile.TemporaryDirectory() as tmp:
            self.host_beside_guest(tmp, unit="ns")
            self.assertIsNone(report_runs.guest_for(os.path.join(tmp, os.path.basename(self.GUEST))))
        with tempfile.TemporaryDirectory() as tmp:
            self.host_beside_guest(tmp, baseline=False)
            self.assertIsNone(report_runs.guest_for(os.path.join(tmp, os.path.basename(self.GUEST))))


class Paced(unittest.TestCase):
    """The paced fixture's figures, worked by hand (tests/fixtures/report/paced)."""

    @classmethod
    def setUpClass(cls):
        rows, _, _ = record.load(os.path.join(FIXTURES, "paced"))
        cls.p = stats.paced(rows)
        cls.c = {(c["config"], c["rate"]): c for c in cls.p["cells"]}
        cls.lim = {m["config"]: m for m in cls.p["limits"]}

    def test_cpu_per_second_against_the_same_rate(self):
        # ftrace at 1000/s: threads 30 ms, machine 45 ms in 1 s: 3% and 4.5%;
        # baseline at 1000/s 2% and 3%: over by 1% and 1.5% of a CPU, and
        # 1.5% = 15 ms/s over 1000 events/s = 15000 ns/event.
        c = self.c[("ftrace-sdt", 1000)]
        self.assertAlmostEqual(c["target_pct"], 3.0)
        self.assertAlmostEqual(c["machine_pct"], 4.5)
        self.assertAlmostEqual(c["over_target_pct"], 1.0)
        self.assertAlmostEqual(c["over_machine_pct"], 1.5)
        self.assertAlmostEqual(c["ns_per_event"], 15000)
        # At 10000/s against that rate's baseline (3.5%): 2% -> 2000 ns/event.
        self.assertAlmostEqual(self.c[("ftrace-sdt", 10000)]["ns_per_event"], 2000)
        # bpftrace's process: 10 + 10 ms in 1 s = 2%.
        self.assertAlmostEqual(self.c[("bpftrace-sdt-count", 1000)]["tracer_pct"], 2.0)

    def test_fell_behind_uses_the_calls_made(self):
        # stap-mark at 10000/s made 5000 calls in 1 s: achieved 5000/s, and
        # 130 - 3.5 = 126.5% of a CPU over 5000 events/s = 253000 ns/event.
        c = self.c[("stap-mark", 10000)]
        self.assertAlmostEqual(c["achieved"], 5000)
        self.assertAlmostEqual(c["ns_per_event"], (130 - 3.5) * 1e7 / 5000)
        self.assertFalse(c["lossless"])

    def test_lossless_limits(self):
        self.assertEqual((self.lim["ftrace-sdt"]["limit"], self.lim["ftrace-sdt"]["broke_at"]),
                         (10000, None))
        # 1% of a CPU = 10^7 ns/s; at 2000 ns/event: 5000 events/s.
        self.assertAlmostEqual(self.lim["ftrace-sdt"]["rate_at_1pct"], 5000)
        b = self.lim["bpftrace-sdt-count"]
        self.assertEqual((b["limit"], b["broke_at"]), (1000, 10000))
        self.assertIn("dropped", b["why"])
        self.assertAlmostEqual(b["rate_at_1pct"], 1e7 / 30000)
        s = self.lim["stap-mark"]
        self.assertEqual((s["limit"], s["broke_at"]), (1000, 10000))
        self.assertIn("fell behind", s["why"])

    def test_rates_never_pooled(self):
        """The baseline's two rates are two cells, each of its own 2 runs:
        by hand, 20 and 25 ms of thread CPU a second (2% and 2.5%), 30 and
        35 ms for the machine; pooled, both would read 2.25% and 3.25%."""
        for rate, target, machine in ((1000, 2.0, 3.0), (10000, 2.5, 3.5)):
            c = self.c[("baseline", rate)]
            self.assertEqual(c["n_runs"], 2)
            self.assertAlmostEqual(c["target_pct"], target)
            self.assertAlmostEqual(c["machine_pct"], machine)
            self.assertAlmostEqual(c["achieved"], rate)


class Sites(unittest.TestCase):
    """The probe-site table from rows written out here: a site whose canary
    changed is UNSAFE (in bold in report.md), one that saw nothing NEVER
    FIRES, a clean canary site is safe, and each says its path; a site
    with no canary shows no corrupted count."""

    @staticmethod
    def row(config, build, tracer, seen, corrupted, path, ns, rep=1):
        return {"config": config, "build": build, "tracer": tracer, "probe": "marker",
                "threads": 1, "iterations": 1000, "rep": rep, "status":
                "corrupted" if corrupted else "ok" if seen == 1000 or tracer == "none"
                else "mismatch", "reason": "", "thread_wall_ns": str(ns * 1000),
                "events_expected": "" if tracer == "none" else "1000",
                "events_seen": "" if tracer == "none" else str(seen),
                "corrupted": str(corrupted), "path": path, "calls": "1000"}

    @classmethod
    def setUpClass(cls):
        rows = [cls.row("baseline", "plain", "none", None, 0, "", 1, rep) for rep in (1, 2)]
        rows += [cls.row("site-a", "sdt-canary", "ftrace", 1000, 0, "trap: int3", 800, rep)
                 for rep in (1, 2)]
        rows += [cls.row("site-b", "sdt-nop5-canary", "ftrace", 1000, 999, "optimised: x",
                         700, rep) for rep in (1, 2)]
        rows += [cls.row("site-c", "sdt-nop10-at1-canary", "ftrace", 0, 0,
                         "none: the probe never fired", 2, rep) for rep in (1, 2)]
        rows += [cls.row("site-d", "sdt-nop5", "ftrace", 1000, 0, "optimised: x", 600, rep)
                 for rep in (1, 2)]
        rows += [cls.row("site-e", "sdt", "bpftrace", 990, 0, "trap: int3", 900, rep)
                 for rep in (1, 2)]
        cls.rows, cls.a = rows, stats.analyse(rows, {"cpus": 2})

    def test_site_verdicts(self):
        v = {s["config"]: s for s in self.a["sites"]}
        self.assertEqual(set(v), {"site-a", "site-b", "site-c", "site-d", "site-e"})
        self.assertEqual(v["site-a"]["verdict"], "safe")
        self.assertEqual((v["site-b"]["verdict"], v["site-b"]["corrupted"],
                          v["site-b"]["calls"]), ("UNSAFE", 1998, 2000))
        self.assertAlmostEqual(v["site-b"]["ns_per_event"], 699)
        self.assertEqual(v["site-c"]["verdict"], "NEVER FIRES")
        md = both(self.a, {}, [], "/x", rows=self.rows)
        self.assertNotIn("<span", md)
        got = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[1:-1]]
               for ln in md.splitlines() if ln.startswith("| site-") and "marker" in ln}
        self.assertEqual(got["site-b"], ["site-b", "sdt-nop5-canary", "marker", "ftrace", "1",
                                         "699", "1,998/2,000", "optimised: x", "**UNSAFE**",
                                         "-"])  # no meta here: no expectation
        # No canary in sdt-nop5: its 0 corrupted would say "checked, clean".
        self.assertEqual(got["site-d"][6], "-")
        # The answers name both verdicts, with the corrupted count.
        self.assertIn("- **UNSAFE**: the sdt-nop5 site under ftrace (1,998 of 2,000 calls "
                      "corrupted)", md)
        self.assertIn("- **NEVER FIRES**: the sdt-nop10-at1 site under ftrace", md)

    def test_kernel_expectation(self):
        """Before the site table, what this kernel is expected to do at each
        site (from its uprobe-syscall answer, kernel.py); each measured
        site then says whether it did.  These rows are what 6.18 (ENXIO)
        does: all as expected there; on a 7.2 kernel (EPROTO) the nop5
        site's optimised UNSAFE call and the nop10 probe that never fired
        would both be findings; an answer no known kernel gives has no
        expectation."""
        def marks(errno):
            meta = {"uprobe_optimisation": {"errno": errno, "meaning": "m"}}
            md = both(self.a, meta, [], "/x", rows=self.rows)
            return md, {ln.split("|")[1].strip(): ln.split("|")[-2].strip()
                        for ln in md.splitlines() if ln.startswith("| site-")
                        and "marker" in ln}
        md, got = marks("ENXIO")
        self.assertIn("This kernel answered the uprobe syscall with ENXIO: m.", md)
        self.assertIn("| sdt-nop5           | before  | optimised     | UNSAFE           |", md)
        self.assertIn("| sdt-nop10-at1      | running | none          | REFUSED          |", md)
        self.assertIn("| sdt-nop5           | fork    | none          | CRASHES          |", md)
        self.assertEqual(got, {"site-a": "yes", "site-b": "yes", "site-c": "yes",
                               "site-d": "yes", "site-e": "yes"})
        self.assertNotIn("NOT AS EXPECTED", md)
        md, got = marks("EPROTO")
        self.assertEqual(got["site-b"], "**NO**: path optimised, expected trap; UNSAFE, "
                                        "expected safe")
        self.assertEqual(got["site-c"], "**NO**: path none, expected optimised; NEVER FIRES, "
                                        "expected safe")
        self.assertEqual(got["site-d"], "**NO**: path optimised, expected trap")
        self.assertEqual((got["site-a"], got["site-e"]), ("yes", "yes"))
        self.assertIn("- **NOT AS EXPECTED** on this kernel (EPROTO): site-b at 1 thread(s): "
                      "path optimised, expected trap; UNSAFE, expected safe", md)
        md, got = marks("EFAULT")
        self.assertEqual(set(got.values()), {"-"})
        self.assertIn("No expectation is known for that answer", md)

    def test_other_orders(self):
        """A site whose every run failed with the kernel's error 524 is
        REFUSED, one whose target (or forked child) was killed by a signal
        CRASHES; each row says its order, and on 6.18 (ENXIO) both are
        what kernel.py expects for the nop10-at1 site attached while
        running and the nop5 site in a forked child; a failure for another
        reason is no verdict at all."""
        def failed(config, build, attach, reason):
            return [dict(self.row(config, build, "ftrace", 0, 0, "", 0, rep), status="failed",
                         reason=reason, attach=attach, thread_wall_ns="", calls="")
                    for rep in (1, 2)]
        rows = self.rows + failed("site-r", "sdt-nop10-at1-canary", "running",
                                  "ftrace: the kernel refused the probe: error 524 (ENOTSUPP)")
        rows += failed("site-f", "sdt-nop5-canary", "fork", "benchmark-sdt-nop5-canary exited "
                       "with status 139: the child (pid 7) was killed by signal 11 (SIGSEGV)")
        rows += failed("site-o", "sdt-canary", "running", "ftrace: Device or resource busy")
        a = stats.analyse(rows, {"cpus": 2})
        v = {s["config"]: s for s in a["sites"]}
        self.assertEqual([v[c]["verdict"] for c in ("site-r", "site-f", "site-o")],
                         ["REFUSED", "CRASHES", ""])
        meta = {"uprobe_optimisation": {"errno": "ENXIO", "meaning": "m"}}
        md = both(a, meta, [], "/x", rows=rows)
        got = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[1:-1]]
               for ln in md.splitlines() if ln.startswith("| site-") and "marker" in ln}
        self.assertEqual(got["site-r"][5:], ["running", "-", "-", "-", "**REFUSED**", "yes"])
        self.assertEqual(got["site-f"][5:], ["fork", "-", "-", "-", "**CRASHES**", "yes"])
        self.assertEqual(got["site-a"][5], "before")
        self.assertIn("- **REFUSED**: the sdt-nop10-at1 site under ftrace (attached while it "
                      "ran)", md)
        self.assertIn("- **CRASHES**: the sdt-nop5 site under ftrace (in a child forked after "
                      "it fired)", md)
        # On 7.2 (EPROTO) the same rows contradict what is expected there.
        md = both(a, {"uprobe_optimisation": {"errno": "EPROTO"}}, [], "/x",
                             rows=rows)
        self.assertIn("site-r at 1 thread(s): REFUSED, expected safe", md)
        self.assertIn("site-f at 1 thread(s): CRASHES, expected safe", md)

    def test_bpftrace_meets_the_binary_mapped(self):
        """bpftrace -c attaches its usdt probe after its child's execve
        (ptrace), so on 6.18 (ENXIO) its "before" row at the nop10-at1
        site is expected REFUSED, as attached while running, where
        ftrace's before row (site-c) is expected NEVER FIRES; the report
        says why beside the table.  A bpftrace row that never fired there
        would be the finding."""
        reason = ("bpftrace exited with status 255: perf_event_open(...): Unknown error 524 / "
                  "ERROR: Error attaching probe: usdt:x:benchmark:single_trace, to PID: 7")
        rows = self.rows + [dict(self.row("site-bt", "sdt-nop10-at1-canary", "bpftrace", 0, 0,
                                          "", 0, rep), status="failed", reason=reason,
                                 thread_wall_ns="", calls="") for rep in (1, 2)]
        a = stats.analyse(rows, {"cpus": 2})
        meta = {"uprobe_optimisation": {"errno": "ENXIO", "meaning": "m"}}
        s = {x["config"]: x for x in a["sites"]}
        self.assertEqual(s["site-bt"]["verdict"], "REFUSED")
        orders = tracers.marker_orders()  # bpftrace's "running"
        self.assertEqual(orders["bpftrace"][0], "running")
        self.assertEqual(kernel.check(meta, s["site-bt"], orders), "")
        self.assertEqual(kernel.check(meta, s["site-c"], orders), "")
        never = dict(s["site-bt"], verdict="NEVER FIRES", path="none: the probe never fired")
        self.assertEqual(kernel.check(meta, never, orders), "NEVER FIRES, expected REFUSED")
        md = both(a, meta, [], "/x", rows=rows)
        self.assertIn('bpftrace\'s marker probes on "before" rows are expected as in '
                      '"running": bpftrace -c holds its child under ptrace', md)

    def test_return_path_expected(self):
        """A return probe's path against the kernel's uretprobe syscall
        (meta.json's uretprobe_syscall, read from its symbol table by
        paths.uretprobe_syscall): as expected, contradicted, or no
        expectation where it is unknown."""
        s = {"probe": "return", "build": "plain", "path": "uretprobe syscall (1000 calls seen)"}
        yes, no = ({"uretprobe_syscall": {"answer": a}} for a in ("yes", "no"))
        self.assertEqual(kernel.check(yes, s, {}), "")
        self.assertEqual(kernel.check(no, s, {}), "path uretprobe syscall (1000 calls seen), "
                                              "expected trap")
        self.assertEqual(kernel.check(no, dict(s, path="trap: no uretprobe syscall was made"), {}),
                         "")
        self.assertIsNone(kernel.check({}, s, {}))
        with tempfile.TemporaryDirectory() as tmp:
            syms = os.path.join(tmp, "kallsyms")
            with open(syms, "w") as f:
                f.write("0000000000000000 T __x64_sys_uprobe\n")
            self.assertEqual(paths.uretprobe_syscall(syms)[0], "no")
            with open(syms, "a") as f:
                f.write("0000000000000000 T __x64_sys_uretprobe\n")
            self.assertEqual(paths.uretprobe_syscall(syms)[0], "yes")
            self.assertEqual(paths.uretprobe_syscall(os.path.join(tmp, "none"))[0], "unknown")

    def test_lab_sites(self):
        """A lab guest's report says what its kernel is expected to do at
        each site and marks each site, in guest instructions under
        -icount (never ns), without a cost column under plain TCG."""
        meta = {"uprobe_optimisation": {"errno": "EPROTO", "meaning": "m"},
                "lab": {"suite": "sid", "accel": "tcg", "icount": True}}
        md = both(self.a, meta, [], "/x", rows=self.rows)
        sites = md[md.index("### Probe sites on this guest's kernel"):]
        self.assertIn("This kernel answered the uprobe syscall with EPROTO: m.", sites)
        self.assertIn("| overhead [instructions/event] |", sites.replace("  ", ""))
        self.assertNotIn("[ns/event]", sites)
        self.assertIn("**NO**: path optimised, expected trap", sites)
        meta["lab"]["icount"] = False
        sites = both(self.a, meta, [], "/x", rows=self.rows)
        sites = sites[sites.index("### Probe sites"):]
        self.assertNotIn("overhead [", sites)
        self.assertIn("| **UNSAFE**", sites)

    def test_site_table_without_canary(self):
        """Where no canary ran at all, the column is not there."""
        a = dict(self.a, sites=[s for s in self.a["sites"] if s["config"] == "site-d"])
        head = sites.sites_table(a).splitlines()[0]
        self.assertNotIn("corrupted", head)

    def test_verdicts_not_drawn_as_costs(self):
        """In the plots a corrupted cell is a red hatch labelled UNSAFE, a
        never-firing one words, a miscounted one a hollow bar labelled
        MISMATCH: never an ordinary bar (the nop5 site, which corrupted
        2,999,997 of 3,000,000 calls, once looked like the cheapest
        probe).  Read from report.json's "plots", which the drawing code
        fills where it draws each cell."""
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "runs.csv"), "w", newline="") as f:
                w = csv.DictWriter(f, record.COLUMNS)
                w.writeheader()
                w.writerows(self.rows)
            r = run(["python3", REPORT_PY, tmp])
            self.assertEqual(r.returncode, 0, r.stderr)
            if "no plots: matplotlib cannot be imported" in r.stderr:
                unavailable(self, "no interpreter here has matplotlib")
            with open(os.path.join(tmp, "report.json")) as f:
                drawn = json.load(f)["plots"]
        self.assertEqual(sorted(drawn), ["overhead_by_config.png", "probe_sites.png"])
        by = drawn["overhead_by_config.png"]
        self.assertEqual(by["site-a@1"], "bar")
        self.assertEqual(by["site-d@1"], "bar")
        self.assertEqual(by["site-b@1"], "red hatch: 1 thr: UNSAFE, 1,998/2,000 calls corrupted")
        self.assertEqual(by["site-c@1"], "words: 1 thr: NEVER FIRES (0 of 2,000 events)")
        self.assertEqual(by["site-e@1"], "hollow: 1 thr: MISMATCH 1,980/2,000 events, "
                         "cost not quoted")
        sites = drawn["probe_sites.png"]
        self.assertEqual(sites["site-a@1"], "bar")
        self.assertEqual(sites["site-b@1"], "red hatch: UNSAFE")
        self.assertEqual(sites["site-c@1"], "words: NEVER FIRES")


class Answers(unittest.TestCase):
    """The answers at the top of report.md and in the terminal: each
    failure reason once, whatever pid or temporary path it carried, and a
    terminal summary that stays within its bounds however large the run."""

    # Three bpftrace failures that differ only in what differs between runs
    # (seen in a default run: "all failed" repeated them, 1,663-character rows).
    REASONS = [
        "bpftrace exited with status 1: ERROR: Unable to attach probe: "
        f"usdt:{ROOT}/build/benchmark-sdt-nop10-at1-canary:benchmark:single_trace. "
        f"Attaching to uprobe p_{pid}_bcc_{pid} failed (error 524), pid {pid}; "
        f"log /tmp/kit-scratch-{tag}/kit{tag}_{n}-x/run.log"
        for pid, tag, n in ((3680, "ab12", 7), (4711, "cd34", 19), (52, "ef56", 203))]

    def test_reasons_normalised(self):
        once = {formats.normalise(r) for r in self.REASONS}
        self.assertEqual(len(once), 1, once)
        text = once.pop()
        self.assertNotIn(ROOT, text)
        for leaked in ("3680", "4711", "ab12", "/tmp/kit-scratch"):
            self.assertNotIn(leaked, text)
        self.assertIn("build/benchmark-sdt-nop10-at1-canary", text)
        self.assertIn("error 524", text)

    def test_each_reason_once(self):
        a = {"cells": [], "skipped": [], "failed": [
            {"config": "site-sdt-nop10-at1-bpftrace", "threads": t, "rep": rep, "reason": r}
            for t, rep, r in ((1, 1, self.REASONS[0]), (1, 2, self.REASONS[1]),
                              (2, 1, self.REASONS[2]))]}
        lines = [ln for ln in formats.skipped_failed(a) if ln.startswith("- FAILED")]
        self.assertEqual(len(lines), 1, lines)
        self.assertTrue(lines[0].startswith("- FAILED, 3 runs (site-sdt-nop10-at1-bpftrace at "
                                            "1-2 threads): bpftrace exited"), lines[0])
        self.assertTrue(summary.failure_lines(a)[0].startswith(
            "- 3 run(s), site-sdt-nop10-at1-bpftrace at 1-2 threads: bpftrace exited"))

    def test_terminal_bounds(self):
        """A run of 300 configurations at 8 thread counts with 43 distinct
        failures and long names: still at most LINES lines of WIDTH
        characters, ending with where the rest is."""
        rows = []
        for i in range(300):
            for t in range(1, 9):
                for rep in (1, 2):
                    ok = i % 7
                    rows.append({"config": f"bpftrace-a-very-long-configuration-name-{i:03}",
                                 "build": "sdt", "tracer": f"tracer{i % 9}", "probe": "marker",
                                 "threads": t, "iterations": 1000, "rep": rep,
                                 "status": "ok" if ok else "failed",
                                 "reason": "" if ok else f"tool {i} crashed " + "x" * 150,
                                 "thread_wall_ns": ";".join([str(1000 * (i + rep))] * t),
                                 "events_expected": str(1000 * t),
                                 "events_seen": str(1000 * t), "calls": str(1000 * t)})
        rows += [dict(r, config="baseline", tracer="none", events_expected="",
                      events_seen="", status="ok", reason="")
                 for r in rows if r["config"].endswith("-001")]
        a = stats.analyse(rows, {"cpus": 2})
        self.assertGreater(len(formats.failure_groups(a)), summary.MAX_REASONS)
        out = summary.answers(a, None, rows, {"cpu_model": "X" * 200}, "/r/x",
                              ["/r/x/p.png"], terminal=True)
        self.assertLessEqual(len(out), summary.LINES)
        self.assertLessEqual(max(map(len, out)), summary.WIDTH)
        self.assertEqual(out[-2:], ["Full report: /r/x/report.md", "Plots beside it: p.png"])


class Errors(unittest.TestCase):
    def report(self, *folders):
        r = run(["python3", REPORT_PY, *folders])
        self.assertNotIn("Traceback", r.stderr)
        return r

    def test_units_never_compared(self):
        """A host folder (ns) and a guest folder counting instructions: each
        gets its report, and no comparison is made of the two; in the
        guest's, each thread's figure is its CPU time (not its wall time,
        which counts the other threads' instructions too)."""
        with tempfile.TemporaryDirectory() as tmp:
            host, guest = fixture("basic", tmp), os.path.join(tmp, "guest")
            shutil.copytree(host, guest)
            with open(os.path.join(guest, "meta.json")) as f:
                meta = json.load(f)
            meta.update(unit="instructions", lab={"suite": "sid", "accel": "tcg", "icount": True})
            with open(os.path.join(guest, "meta.json"), "w") as f:
                json.dump(meta, f)
            with open(os.path.join(guest, "runs.csv"), newline="") as f:
                rows = list(csv.DictReader(f))
            for r in rows:  # CPU time = half the wall time, so the two differ
                r["unit"] = "instructions"
                r["thread_cpu_ns"] = ";".join(str(int(x) // 2)
                                              for x in r["thread_wall_ns"].split(";") if x)
            with open(os.path.join(guest, "runs.csv"), "w", newline="") as f:
                w = csv.DictWriter(f, list(rows[0]))
                w.writeheader()
                w.writerows(rows)
            r = self.report(host, guest)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("count in different units (basic: ns, guest: instructions)", r.stderr)
            self.assertEqual(glob.glob(os.path.join(tmp, "compare-*")), [])
            with open(os.path.join(guest, "report.md")) as f:
                md = f.read()
            self.assertIn("[instructions/call]", md)
            self.assertNotIn("[ns/event]", md)
            c, _ = cells(guest)
            h, _ = cells(host)
            self.assertAlmostEqual(c[("ftrace-sdt", 1)]["median_ns"],
                                   h[("ftrace-sdt", 1)]["median_ns"] / 2, delta=1)

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
            md = report_text(d)
            self.assertIn("No baseline rows", md)
            self.assertIn("| idle-sdt", md)

    def test_several_folders_side_by_side(self):
        """Two different folders: `faster` is basic with ftrace-sdt at 1
        thread 2 ns/event quicker (5.0 5.2 5.6 -> 3.0 3.2 3.6 against
        1.0 1.1 1.2), so its overhead is 6.5/3 against 12.5/3 ns: faster /
        basic = 0.52, and the other way round 1.92."""
        with tempfile.TemporaryDirectory() as tmp:
            a = fixture("basic", tmp)
            b = os.path.join(tmp, "faster")
            shutil.copytree(a, b)
            with open(os.path.join(b, "runs.csv"), newline="") as f:
                rows = list(csv.DictReader(f))
            for row in rows:
                if (row["config"], row["threads"]) == ("ftrace-sdt", "1") and row["rep"] != "0":
                    row["thread_wall_ns"] = str(int(row["thread_wall_ns"]) - 2000)
            with open(os.path.join(b, "runs.csv"), "w", newline="") as f:
                w = csv.DictWriter(f, list(rows[0]))
                w.writeheader()
                w.writerows(rows)
            for first, second, want in ((a, b, "0.52"), (b, a, "1.92")):
                r = self.report(first, second)
                self.assertEqual(r.returncode, 0, r.stderr)
                n1, n2 = os.path.basename(first), os.path.basename(second)
                self.assertIn(f"| {n1} [ns/event] | {n2} [ns/event] | {n2} / {n1} |", r.stdout)
                self.assertTrue(os.path.exists(os.path.join(tmp, f"compare-{n1}-{n2}",
                                                            "report.md")))
                table = r.stdout[r.stdout.index("# Comparison"):]
                ratio = {ln.split("|")[2].strip(): ln.split("|")[5].strip()
                         for ln in table.splitlines() if ln.startswith("| ftrace-sdt ")}
                self.assertEqual(ratio, {"1": want, "2": "1.00", "3": "1.00"})
                # Interval half-widths: ftrace-sdt at 2 threads, the same in
                # both: per-repetition differences 8.05-1.005, 8.1-1.01,
                # 8.15-1.015 = 7.045, 7.09, 7.135 ns; sd 0.045, half-width
                # 4.303 x 0.045 / sqrt(3) = 0.1118 ns, 1.6% of 7.09.
                width = {ln.split("|")[2].strip(): ln.split("|")[-2].strip()
                         for ln in table.splitlines() if ln.startswith("| ftrace-sdt ")}
                self.assertEqual(width["2"], "1.6%")
                self.assertIn("Median 95% half-width of the overhead over the", table)


class GuestTools(unittest.TestCase):
    """A lab's summary.md names each guest's tool versions, what changed
    since the same suite's last lab in the same results folder (sid's
    bpftrace 0.23 -> 0.27 broke every bpftrace row, and nothing said the
    tool had changed: issue 57), and each tracer whose runs in a guest
    failed with none measured, with why.  The lab folders are the 12-02
    finding's three suites (tests/fixtures/guest-tools/), copied twice, the
    earlier one's bpftrace set to 0.23.2 by hand."""
    SRC = os.path.join(ROOT, "tests", "fixtures", "guest-tools", "lab")

    def summary(self, lab, **tools):
        """The later lab's summary.md, the two labs the fixture's, sid's
        TOOLS in LAB's meta.json set by hand."""
        from render import lab as render_lab
        with tempfile.TemporaryDirectory() as d:
            for name in ("20261201T000000Z-lab", "20261205T000000Z-lab"):
                shutil.copytree(self.SRC, os.path.join(d, name))
            m = os.path.join(d, lab, "sid", "meta.json")
            with open(m) as f:
                meta = json.load(f)
            meta["tools"].update(tools)
            with open(m, "w") as f:
                json.dump(meta, f)
            top = os.path.join(d, "20261205T000000Z-lab")
            return render_lab.summary(top, render_lab.lab_folders(top))

    def test_versions_changes_and_tracers_with_nothing(self):
        from render import guesttools
        text = self.summary("20261201T000000Z-lab", bpftrace="bpftrace v0.23.2")
        self.assertIn("| sid      | 0.27.1   | 7.2.13   | 5.6       | 2.16.0  | 0.19    | 3.14.10 |",
                      text)
        self.assertIn("- sid: since 20261201T000000Z-lab, bpftrace 0.23.2 -> 0.27.1:", text)
        self.assertEqual(text.count(" -> "), 1)  # bookworm's and trixie's tools did not move
        # a version the later runner could not read is no change
        text = self.summary("20261205T000000Z-lab", bpftrace=None, perf=None)
        self.assertNotIn(" -> ", text)
        self.assertIn("- sid: its runner read no version of bpftrace, perf (the --version call "
                      "failed or timed out), so whether they changed since "
                      "20261201T000000Z-lab is not known", text)
        self.assertEqual(guesttools.version("Systemtap translator/driver (version 5.6/0.196, "
                                            "Debian version 5.6-1)"), "5.6")
        # 52 runs failed, none measured: said, with the first reason; a
        # tracer that only skipped (it cannot attach here, saying so) is not
        failed = [{"tracer": "bpftrace", "status": "failed", "rep": "1",
                   "reason": "unable to open output file '/dev/fd/7'"}] * 52
        skipped = [{"tracer": "lttng", "status": "skipped", "rep": "", "reason": "no SDT"}]
        ok = [{"tracer": "perf", "status": "failed", "rep": "1", "reason": "x"},
              {"tracer": "perf", "status": "agreed", "rep": "2", "reason": ""}]
        self.assertEqual(guesttools.unmeasured(failed + skipped + ok),
                         {"bpftrace": (52, "unable to open output file '/dev/fd/7'")})


if __name__ == "__main__":
    unittest.main()
