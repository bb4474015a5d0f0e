"""The libbpf back-end (issue 68): the floor under every BPF tracer.

    python3 tests/run_tests.py --tier check test_libbpf   # the floor by hand
    python3 tests/run_tests.py --tier host test_libbpf    # the real loader (root)

The floor's arithmetic is checked by hand; the loader is run as the kit
runs it: every event counted at 1 and 2 threads, the argument read, the
guarded marker's semaphore raised by the kernel, the bodies' records and
losses adding up, a SIGKILLed loader leaving nothing attached and a
user's own BPF agent on the same marker left alone.
"""
import os
import re
import signal
import subprocess
import tempfile
import time
import unittest

from kit_test import (ROOT, StateTest, kill_during, kit, need, need_tracer, pids_of, rows_of,
                      wait_for)
import configs
import kin
import record
import stats
from render.bodies import floor_lines
from render.lab import lab_floor
from tracers import libbpf


def cell_rows(config, threads, per_call, it=1000):
    """A cell's runs: PER_CALL ns a call, one run a repetition, every event seen."""
    cfg = configs.BY_NAME[config]
    seen = None if cfg.tracer == "none" else threads * it
    return [{"config": config, "build": cfg.build, "tracer": cfg.tracer, "probe": cfg.probe,
             "threads": threads, "iterations": it, "rep": rep, "status": "ok", "reason": "",
             "thread_wall_ns": ";".join([str(round(ns * it))] * threads),
             "thread_cpu_ns": ";".join([str(round(ns * it))] * threads),
             "events_seen": seen, "events_expected": seen, "calls": threads * it, "note": "",
             "unit": "ns", "runtime": "bpf" if cfg.tracer == "stap" else ""}
            for rep, ns in enumerate(per_call, start=1)]


class Floor(unittest.TestCase):
    """bpftrace's and stapbpf's price above libbpf's count, by hand."""

    def analysis(self):
        return stats.analyse(self.rows(), {"stopping": {"rule": "fixed", "runs": 3}, "cpus": 2})

    @staticmethod
    def rows(floor=(802.0, 805.0, 799.0)):
        return (cell_rows("baseline", 1, [2.0, 2.1, 1.9])
                + cell_rows("libbpf-sdt-count", 1, floor)
                + cell_rows("bpftrace-sdt-count", 1, [900.0, 910.0, 893.0])
                + cell_rows("stap-mark-empty", 1, [1100.0, 1090.0, 1104.0])
                + cell_rows("baseline", 2, [2.0, 2.1, 1.9])
                + cell_rows("bpftrace-sdt-count", 2, [950.0, 960.0, 940.0]))

    def test_by_hand(self):
        got = {(f["tracer"], f["threads"]): f for f in self.analysis()["floor"]}
        # at 2 threads libbpf did not run: no floor there
        self.assertEqual(sorted(got), [("bpftrace", 1), ("stap", 1)])
        # bpftrace 900, 910, 893 above libbpf 802, 805, 799: 98, 105, 94,
        # mean 99, sd sqrt(((-1)^2 + 6^2 + (-5)^2) / 2) = sqrt(31) = 5.568,
        # half-width 4.303 x 5.568 / sqrt(3) = 13.832
        b = got[("bpftrace", 1)]["above"]
        self.assertAlmostEqual(b["mean_ns"], 99.0)
        self.assertAlmostEqual(b["lo_ns"], 99.0 - 13.832, places=2)
        self.assertAlmostEqual(b["hi_ns"], 99.0 + 13.832, places=2)
        # stap 1100, 1090, 1104: 298, 285, 305, mean 296, sd sqrt((4 + 121
        # + 81) / 2) = sqrt(103) = 10.149, half-width 4.303 x 10.149 /
        # sqrt(3) = 25.213
        s = got[("stap", 1)]
        self.assertEqual(s["runtime"], "bpf")
        self.assertAlmostEqual(s["above"]["mean_ns"], 296.0)
        self.assertAlmostEqual(s["above"]["hi_ns"], 296.0 + 25.213, places=2)
        # the floor itself against the baseline: 800, 802.9, 797.1, mean 800
        self.assertAlmostEqual(got[("bpftrace", 1)]["floor"]["mean_ns"], 800.0)

    def test_the_answers_lines(self):
        lines = [ln for ln in floor_lines(self.analysis()) if ln]
        self.assertEqual(len(lines), 3, lines)
        self.assertRegex(lines[0], r"^Above the BPF floor, libbpf's own count \(libbpf-sdt-count: "
                                   r"800 \[\d{3}, \d{3}\] ns/event at 1 thread\):$")
        self.assertRegex(lines[1], r"^- bpftrace: 99\.0 \[85\.\d, 113\] ns/event more \(paired t "
                                   r"over 3 repetitions, mean \[95% interval\]\)$")
        self.assertRegex(lines[2], r"^- stap \(bpf runtime\): 296 \[27\d, 32\d\] ns/event more")

    def test_a_guests_floor_in_instructions(self):
        """A lab guest's folder (instructions): its own unit, never ns, and
        no stap line where SystemTap ran its module (no BPF tracer)."""
        rows = [dict(r, unit="instructions", runtime="module" if r["runtime"] else "")
                for r in self.rows()]
        a = stats.analyse(rows, {"stopping": {"rule": "fixed", "runs": 3}, "cpus": 2})
        lines = [ln for ln in floor_lines(a) if ln]
        self.assertEqual(len(lines), 2, lines)
        self.assertIn("800 [", lines[0])
        self.assertIn("instructions/event at 1 thread", lines[0])
        self.assertTrue(lines[1].startswith("- bpftrace: 99.0 ["), lines[1])
        self.assertIn("instructions/event more (Welch t", lines[1])
        self.assertNotRegex(" ".join(lines), r" ns/event")
        # make lab's summary.md: the same lines, a kernel a paragraph, named
        got = [ln for ln in lab_floor([{"a": a, "lab": {"suite": "sid", "kernel": "7.2.13-amd64"}}])
               if ln]
        self.assertEqual(got[0], "In the sid guest (7.2.13), a" + lines[0][1:])
        self.assertEqual(got[1:], lines[1:])
        self.assertEqual(lab_floor([{"a": stats.analyse(rows[:3], {"cpus": 2}), "lab": {}}]), [])

    def test_each_hosts_floor_in_the_fleet(self):
        """make fleet's summary.md: each host's floor, its lines the
        answers', opened with the host and its kernel; none for a host
        without libbpf's row."""
        import json
        import record
        from render import fleet as render_fleet
        with tempfile.TemporaryDirectory() as top:
            for name, rows in (("a", self.rows()), ("b", self.rows()[:3])):
                folder = record.Folder(top, name=name)
                for r in rows:
                    folder.write(r)
                folder.close()
            with open(os.path.join(top, render_fleet.FLEET_JSON), "w") as f:
                json.dump({"inventory": "x.yml", "make_vars": [], "seconds": 1,
                           "hosts": {h: {"status": "ok", "reason": "", "bytes": 1}
                                     for h in ("a", "b")}}, f)
            md = render_fleet.summary(top)
        lines = [ln for ln in floor_lines(self.analysis()) if ln]
        self.assertRegex(md, r"\nOn a \([^)]*\), a" + re.escape(lines[0][1:]) + "\n\n"
                         + re.escape("\n".join(lines[1:])) + "\n$")
        self.assertNotIn("On b (", md)

    def test_no_floor_where_an_event_was_missed(self):
        rows = (cell_rows("baseline", 1, [2.0, 2.1, 1.9])
                + cell_rows("libbpf-sdt-count", 1, [802.0, 805.0, 799.0])
                + cell_rows("bpftrace-sdt-count", 1, [900.0, 910.0, 893.0]))
        for r in rows:
            if r["config"] == "libbpf-sdt-count" and r["rep"] == 2:
                r.update(events_seen=r["events_seen"] - 1, status="mismatch")
        a = stats.analyse(rows, {"stopping": {"rule": "fixed", "runs": 3}, "cpus": 2})
        self.assertEqual(a["floor"], [])
        self.assertEqual(floor_lines(a), [])

    def test_the_rows(self):
        """The floor and its twins are rows of the one table, on one build."""
        floor = configs.BY_NAME[kin.BPF_FLOOR]
        self.assertEqual((floor.tracer, floor.build), ("libbpf", "sdt"))
        for name in kin.ABOVE_FLOOR.values():
            self.assertEqual(configs.BY_NAME[name].build, floor.build)
        self.assertIn("user-libbpf", kin.user_rows())
        self.assertEqual(libbpf.Libbpf.program(configs.BY_NAME["libbpf-uprobe-nop"]),
                         libbpf.UPROBE_NOP)
        self.assertEqual(libbpf.Libbpf.program(configs.BY_NAME["libbpf-body-ringbuf"]),
                         "sdt_ringbuf")


class Witnessed(unittest.TestCase):
    """A witness run's verdict from the loader's counts and the traps of
    the kit's own uprobe event on the site, by hand (record.verdict)."""

    @staticmethod
    def verdict(events, runs, traps, skipped=0, dropped=0, others=None, window=None):
        """WINDOW: the ring's events before the loader, once it was live,
        before its SIGINT, after it ended (by default all TRAPS inside)."""
        got = {"events": events, "others": others or 0, "runs": runs,
               "recursion_misses": skipped}
        live = type("Live", (), {"cpu_ns": None})
        ev = libbpf.Libbpf.witnessed(got, others, "libbpf", live, (traps, dropped, None),
                                     window or [0, 0, traps, traps])
        return record.verdict(True, None, ev, real=True)

    def test_the_traps_are_the_witness(self):
        self.assertEqual(self.verdict(1000, 1000, 1000),
                         ("agreed", f"agreed with {record.SAME_RUN} ({libbpf.SITE_TRAPS}): "
                                    "1000 events"))
        st, why = self.verdict(1000, 1000, 1001)  # a trap libbpf's probe never ran for
        self.assertEqual(st, "mismatch")
        self.assertIn(f"1000 events recorded, 1001 {libbpf.SITE_TRAPS}", why)

    def test_traps_outside_the_loaders_window_witness_nothing(self):
        # 3 traps before the loader was live, 2 after its SIGINT: 1,005 in
        # the ring, 1,000 in the loader's window; no witness, not a mismatch
        st, why = self.verdict(1000, 1000, 1005, window=[0, 3, 1003, 1005])
        self.assertEqual(st, "unverified")
        self.assertIn("5 of the traps fell while the loader was not attached", why)
        # a ring that held 7 before the loader started: those are not counted
        self.assertEqual(self.verdict(1000, 1000, 1007, window=[7, 7, 1007, 1007])[0], "agreed")

    def test_runs_the_kernel_skipped_are_lost(self):
        # 990 runs, 10 skipped (recursion): 1000 traps, 10 lost
        self.assertEqual(self.verdict(990, 990, 1000, skipped=10)[0], "dropped")

    def test_a_count_the_kernels_runs_deny_is_a_mismatch(self):
        st, why = self.verdict(1000, 999, 1000)
        self.assertEqual(st, "mismatch")
        self.assertIn(f"999 {libbpf.KERNEL_RUNS}", why)

    def test_zero_is_never_fires_and_a_dropping_witness_no_witness(self):
        self.assertEqual(self.verdict(0, 0, 0)[0], "never-fires")
        with self.assertRaises(libbpf.TracerError):
            self.verdict(1000, 1000, 1000, dropped=3)


class Run(StateTest):
    """The real loader, as make run starts it."""

    def setUp(self):
        need_tracer(self, "libbpf")
        super().setUp()

    def test_every_event_at_1_and_2_threads(self):
        it = 20000
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--threads", "1,2", "--iter", str(it), "--runs", "2", "--configs",
                     "baseline,libbpf-sdt-*,libbpf-uprobe-nop"], res)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            rows, _ = rows_of(res)
        timed = [x for x in rows if x["tracer"] == "libbpf" and x["rep"] not in ("", "0")]
        self.assertEqual({x["config"] for x in timed},
                         {"libbpf-sdt-count", "libbpf-uprobe-nop", "libbpf-sdt-arg",
                          "libbpf-sdt-guarded"})
        for x in timed:
            n = int(x["threads"]) * int(x["iterations"])
            with self.subTest(config=x["config"], threads=x["threads"], rep=x["rep"]):
                self.assertEqual(x["status"], "ok", x["reason"])
                self.assertEqual(int(x["events_seen"]), n)
                self.assertIn("libbpf, ", x["note"])
                if x["config"] == "libbpf-sdt-arg":
                    # each thread's loop passes 0..N-1: T x N(N-1)/2
                    k = int(x["iterations"])
                    self.assertIn(f"its arguments summed to {int(x['threads']) * k * (k - 1) // 2}",
                                  x["note"])

    def test_a_users_marker_witnessed_by_a_witness_run(self):
        """make run CONFIGS=user-libbpf,user-untraced: no ftrace or perf row
        to witness libbpf's count, so a witness run at each thread count
        (untimed: the traps of a uprobe event of the kit's own on the site,
        and the kernel's count of the program's runs), by which every timed
        row is agreed: the command's 1,000 calls a run.  Nothing of the
        witness's is left in tracefs (StateTest)."""
        target = os.path.join(ROOT, "build", "benchmark-sdt")
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--threads", "1,2", "--iter", "2", "--runs", "2", "--target", target,
                     "--probe", "benchmark:single_trace", "--workload",
                     f"{target} --threads 1 --iterations 1000 --quiet", "--configs",
                     "user-libbpf,user-untraced"], res)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            rows, _ = rows_of(res)
        mine = [x for x in rows if x["config"] == "user-libbpf"]
        witnesses = [x for x in mine if record.is_witness_run(x)]
        self.assertEqual(sorted(x["threads"] for x in witnesses), ["1", "2"])
        for x in witnesses:
            with self.subTest(witness_run=x["threads"]):
                n = 1000 * int(x["calls"])
                self.assertEqual((x["status"], x["events_seen"]), ("agreed", str(n)),
                                 x["reason"])
                self.assertEqual(x["reason"], f"agreed with {record.SAME_RUN} "
                                 f"({libbpf.SITE_TRAPS}): {n} events")
                self.assertIn(f"the kernel ran its program {n} times (BPF_ENABLE_STATS); the "
                              f"kit's own uprobe event on the site counted {n} traps in its ring",
                              x["note"])
        timed = [x for x in mine if x["rep"] not in ("", "0")]
        self.assertEqual(len(timed), 4)
        for x in timed:
            with self.subTest(threads=x["threads"], rep=x["rep"]):
                self.assertEqual(x["status"], "agreed", x["reason"])
                self.assertEqual(int(x["events_seen"]), 1000 * int(x["calls"]))
                self.assertTrue(x["reason"].startswith(
                    "agreed with libbpf's witness run (1000 events a run in its one run"),
                    x["reason"])

    def test_bodies_add_up(self):
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--threads", "2", "--iter", "20000", "--runs", "2", "--configs",
                     "baseline,libbpf-body-*"], res)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            rows, _ = rows_of(res)
        timed = [x for x in rows if x["tracer"] == "libbpf" and x["rep"] not in ("", "0")]
        self.assertEqual(len({x["config"] for x in timed}), 4)
        for x in timed:
            with self.subTest(config=x["config"], rep=x["rep"]):
                self.assertIn(x["status"], ("ok", "dropped"), x["reason"])
                seen, lost = int(x["events_seen"]), int(x["events_dropped"] or 0)
                self.assertEqual(seen + lost, 2 * int(x["iterations"]))
                if x["config"] in ("libbpf-body-ringbuf", "libbpf-body-perfbuf"):
                    self.assertIn(f"{seen} records reached the loader, {lost} had no room",
                                  x["note"])

    def test_the_loader_killed(self):
        """A SIGKILLed loader: its row failed, the next run counts, and
        nothing is attached after (the state check: uprobe_events; and
        bpftool's link list as it was); a user's own agent on the same
        marker, started before, is still there and counted the kit's calls."""
        need("bpftool")
        build = os.path.join(ROOT, "build", "benchmark-sdt")
        before = links()
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "theirs.out")
            with open(out, "w") as o:
                theirs = subprocess.Popen([libbpf.LOADER, "sdt_count", build,
                                           "benchmark:single_trace"], stdout=o,
                                          stderr=subprocess.STDOUT, start_new_session=True)
            try:
                self.assertTrue(wait_for(lambda: "probes live" in open(out).read(), 30))
                with_theirs = links()

                def loader(kit):  # the kit's loader while the target runs
                    return [p for p in pids_of("kit-libbpf", kit)
                            if pids_of("benchmark-sdt", kit) and not time.sleep(0.2)]
                with tempfile.TemporaryDirectory() as res:
                    rows, killed = kill_during(
                        self, ["--quick", "1", "--threads", "1", "--iter", "400000", "--runs",
                               "2", "--configs", "baseline,libbpf-sdt-count"], res, loader,
                        "the kit's loader")
                self.assertNotIn(theirs.pid, killed)
                failed = [x for x in rows if x["status"] == "failed"]
                self.assertEqual([x["config"] for x in failed], ["libbpf-sdt-count"])
                self.assertIn("kit-libbpf ended while the target still ran (status -9)",
                              failed[0]["reason"])
                self.assertEqual(links(), with_theirs)  # the kit's link gone, theirs kept
                self.assertIsNone(theirs.poll())
                theirs.send_signal(signal.SIGINT)
                theirs.wait(30)
            finally:
                if theirs.poll() is None:
                    theirs.kill()
                    theirs.wait()
            with open(out) as f:
                said = f.read()
        counted = int(re.search(r"^events: (\d+)$", said, re.M).group(1))
        ran = sum(int(x["calls"] or 0) for x in rows if x["config"] == "libbpf-sdt-count"
                  and x["status"] == "ok")
        self.assertGreaterEqual(counted, ran)  # theirs saw the kit's calls, and went on
        self.assertEqual(links(), before)


def links():
    """bpftool's BPF links, as (type, program id) pairs sorted."""
    r = subprocess.run(["bpftool", "-j", "link", "list"], capture_output=True, text=True,
                       check=True)
    import json
    return sorted((x.get("type"), x.get("prog_id")) for x in json.loads(r.stdout or "[]"))


if __name__ == "__main__":
    unittest.main()
