"""make lab's guests and what comes back from them (scripts/lab/shares.py,
merge.py, scripts/render/lab.py): a suite's configurations shared among
its guests (LAB_GUESTS, worked by hand: `Shares`); a guest's torn
meta.json merged all the same, in its rows' unit (`TornMeta`);
summary.md's tables from two hand-made guest folders
(tests/fixtures/report/guest/), and report.py writing it given a lab's
top folder (`Tables`).

    make check TESTS=test_lab_merge

No root, no guest: folders made by hand.
"""
import csv
import glob
import json
import os
import shutil
import sys
import tempfile
import unittest

from kit_test import ROOT, SCRIPTS, run
import configs
import host
import kernel
import record
from lab import shares, suite
from render import formats, lab as render_lab


class Tables(unittest.TestCase):
    """summary.md's tables from two hand-made guest folders
    (tests/fixtures/report/guest/: sid, where each SystemTap configuration
    costs its baseline plus a constant in every run and ftrace-sdt
    miscounted in each of its 3, and trixie, where the pre-flight failed),
    worked by hand."""
    FOLDERS = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "report", "guest",
                                            "*-lab", "*")))

    def test_kernels_table(self):
        lines = "\n".join(render_lab.kernels_table(self.FOLDERS)).splitlines()
        rows = [[x.strip() for x in ln.strip("|").split("|")] for ln in lines
                if ln.startswith(("| stap", "| ftrace"))]
        self.assertEqual(rows, [
            ["ftrace-sdt", "1", "mismatch [1]", "-"],  # 3 runs, each its own count: one note
            ["stap-function-time", "1", "2,500 [2,500, 2,500]", "-"],
            ["stap-function", "1", "2,000 [2,000, 2,000]", "-"],
            ["stap-mark-time", "1", "1,910 [1,910, 1,910]", "-"],
            ["stap-mark", "1", "1,400 [1,400, 1,400]", "skipped [2]"]])  # configs.CONFIGS' order
        self.assertIn("| config             | threads | sid (7.2.13)         | trixie (6.12.117) |",
                      lines)
        self.assertIn("[1] the tracer saw 1 events, expected 1000 (3 runs)", lines)
        self.assertIn("[2] SystemTap 5.1 cannot build modules for kernel 6.12.117+deb13-amd64: "
                      "uprobes-inode.c:50:17: error: 'uprobe_unregister' undeclared (1 run)", lines)

    def test_kernel_facts(self):
        """The kernel facts, read from a config by hand: the preemption
        model (dynamic or not), HZ, the RCU tasks-trace barrier option, the
        mitigations (either option's name), uprobes; and the summary's table
        of them, a column a guest."""
        text = ("CONFIG_PREEMPT_BUILD=y\n# CONFIG_PREEMPT_NONE is not set\n"
                "CONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_HZ=1000\n"
                "CONFIG_TASKS_TRACE_RCU_NO_MB=y\nCONFIG_SPECULATION_MITIGATIONS=y\n"
                "CONFIG_UPROBES=y\n")
        got = kernel.config_facts(text)
        self.assertEqual(list(got.values()), ["preempt-voluntary, dynamic", "1000", "y", "y", "y"])
        got = kernel.config_facts("CONFIG_PREEMPT_LAZY=y\nCONFIG_CPU_MITIGATIONS=y\n")
        self.assertEqual(list(got.values()), ["preempt-lazy", "?", "not set", "y", "not set"])
        lines = formats.kernel_facts([{"kernel_config": kernel.config_facts(text)}, {}],
                                        ["a 6.1", "b 7.2"])
        self.assertIn("| preemption model ", "\n".join(lines))
        self.assertRegex("\n".join(lines), r"\| HZ [^|]*\| 1000 +\| - +\|")
        self.assertEqual(formats.kernel_facts([{}, {}], ["a", "b"]), [])

    def test_2011_in_instructions(self):
        with tempfile.TemporaryDirectory() as top:
            render_lab.summary(top, self.FOLDERS)
            with open(os.path.join(top, "summary.md")) as f:
                md = f.read()
        # the 2011 seconds beside the guests' instructions, one column each
        self.assertRegex(md, r"\| process.mark \+ gettimeofday_ns \+ \$arg1 +\| 27.60 s +\| "
                             r"1,910 \[1,910, 1,910\] +\| not measured +\|")
        self.assertRegex(md, r"\| process.mark \+ \$arg1, no gettimeofday_ns +\| - +\| "
                             r"1,400 \[1,400, 1,400\] +\| skipped +\|")
        self.assertRegex(md, r"\| gettimeofday_ns\(\) share +\| 8.4 s +\| 510 +\| - +\|")
        self.assertIn("module runtime, sid guest 7.2.13 [instructions/event]", md)
        self.assertRegex(md, r"\| trixie \| 6.12.117\+deb13-amd64 \| 5.1/0.193, module runtime \| "
                             r"tcg +\| \[1\] +\| 3 ok, 1 skipped")

    def test_report_writes_the_summary(self):
        """report.py, given a lab's top folder, writes its summary.md (the
        suites in the order the lab ran them: their meta.json "started")
        and prints it, as the lab has it do."""
        with tempfile.TemporaryDirectory() as d:
            top = os.path.join(d, "20261201T000000Z-lab")
            shutil.copytree(os.path.dirname(self.FOLDERS[0]), top)
            for name, started in (("sid", "2026-12-01T00:10:00+00:00"),
                                  ("trixie", "2026-12-01T00:00:00+00:00")):
                meta = os.path.join(top, name, "meta.json")
                with open(meta) as f:
                    m = json.load(f)
                host.write_json(meta, dict(m, started=started))
            folders = render_lab.lab_folders(top)
            self.assertEqual([os.path.basename(x) for x in folders], ["trixie", "sid"])
            self.assertEqual(render_lab.lab_folders(folders[0]), [])  # a suite's own folder
            r = run([sys.executable, os.path.join(SCRIPTS, "report.py"), top])
            with open(os.path.join(top, "summary.md")) as f:
                md = f.read()
            want = render_lab.summary(os.path.join(d, "again"), folders)
        self.assertEqual(md, want)
        self.assertIn(md, r.stdout)
        self.assertLess(md.index("| trixie "), md.index("| sid "))


class Shares(unittest.TestCase):
    """How a suite's configurations are shared among guests (LAB_GUESTS),
    worked by hand."""
    def names(self, parts):
        return [[c.name for c in p] for p in parts]

    def test_idle_with_the_baseline_tracers_spread(self):
        cfgs = [configs.BY_NAME[n] for n in (
            "baseline", "idle-sdt", "ftrace-sdt", "ftrace-function", "bpftrace-function-count",
            "bpftrace-function-store", "stap-mark")]
        cost = {"ftrace-sdt": 1, "ftrace-function": 1, "bpftrace-function-count": 8,
                "bpftrace-function-store": 9, "stap-mark": 2, "idle-sdt": 0.5}
        # costliest first, each to the guest with the fewest of its tracer's,
        # then the least cost: store -> 2 (0.5 vs 0), count -> 1 (0.5 vs 9),
        # stap-mark -> 1 (8.5 vs 9), ftrace-sdt -> 2 (10.5 vs 9),
        # ftrace-function -> 1 (no ftrace there yet)
        self.assertEqual(self.names(shares.shares(cfgs, 2, lambda c: cost.get(c.name, 0))), [
            ["baseline", "idle-sdt", "ftrace-function", "bpftrace-function-count", "stap-mark"],
            ["baseline", "ftrace-sdt", "bpftrace-function-store"]])
        # one guest: all of them, in their order
        self.assertEqual(self.names(shares.shares(cfgs, 1)), [[c.name for c in cfgs]])

    def test_no_more_guests_than_shares(self):
        """The idle configurations are one share, each traced one another."""
        quick = [configs.BY_NAME[n] for n in suite.QUICK_CONFIGS]
        self.assertEqual(self.names(shares.shares(quick, 8)),
                         [["baseline", "stap-mark"], ["baseline", "stap-mark-alibi"]])
        idle = [configs.BY_NAME[n] for n in ("baseline", "idle-sdt", "stap-mark-empty")]
        self.assertEqual(self.names(shares.shares(idle, 4)),
                         [["baseline", "idle-sdt"], ["baseline", "stap-mark-empty"]])
        self.assertEqual(self.names(shares.shares(idle[:2], 4)), [["baseline", "idle-sdt"]])


class TornMeta(unittest.TestCase):
    """A guest killed within its file system's writeback delay can leave
    meta.json named but empty (CI saw it once under Ctrl-C): its rows are
    merged all the same, in their own unit, and the lab says why."""
    def guest_folder(self, top, name, cfg, meta_text):
        d = os.path.join(top, name)
        os.makedirs(os.path.join(d, "logs"))
        rows = [dict(config=c, threads=1, iterations=100, rep=1, status="ok", thread_wall_ns=9,
                     unit=record.INSTRUCTIONS) for c in (configs.BASELINE, cfg)]
        with open(os.path.join(d, "runs.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, record.COLUMNS)
            w.writeheader()
            w.writerows(rows)
        with open(os.path.join(d, "meta.json"), "w") as f:
            f.write(meta_text)
        return d

    def test_reopen_and_add_rows(self):
        from lab import merge
        with tempfile.TemporaryDirectory() as top:
            first = self.guest_folder(top, "first", "stap-mark", "")
            other = self.guest_folder(top, "other", "stap-mark-alibi", '{"skipped": {')
            try:
                folder = record.Folder.reopen(first)
            except ValueError as e:  # json's own error: the lab died so in CI
                self.fail(f"a torn meta.json stopped the merge: {e!r}")
            self.assertEqual(folder.unit, record.INSTRUCTIONS)  # its rows', not ns
            g = type("G", (), {"name": "sid/2", "sfx": "-2"})()
            merge.add_rows(folder, g, other, {("baseline", "1")})
            folder.skipped(configs.BY_NAME["stap-mark-empty"], [1], "not reached")
            folder.close()
            rows, meta, warnings = record.load(first)
        self.assertEqual([r["config"] for r in rows],
                         ["baseline", "stap-mark", "stap-mark-alibi", "stap-mark-empty"])
        self.assertEqual({r["unit"] for r in rows}, {record.INSTRUCTIONS})
        self.assertEqual(meta["unit"], record.INSTRUCTIONS)
        self.assertEqual(len(warnings), 1)  # the folder says its meta was torn
        self.assertRegex(warnings[0], r"meta\.json was torn when the lab merged it \(.*not "
                         r"valid JSON")


if __name__ == "__main__":
    unittest.main()
