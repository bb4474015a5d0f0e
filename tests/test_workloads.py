"""Real programs (scripts/workloads.py): Debian's CPython 3.11 as the kit's
target, its markers probed where the program put them.

    cd tests && python3 -m unittest test_workloads

Real runs, no mocks: the interpreter, its semaphores written through
/proc/PID/mem, and ftrace's uprobe at python:function__entry.  Needs root
(ftrace, /proc/PID/mem of the held target) and /usr/bin/python3.11 with its
markers (Debian's python3.11).  What a run must show, by construction of
src/workloads/calls.py: each thread makes exactly ITER calls of a one-line
function past its gate, so a probe at function__entry sees THREADS x ITER
events and no other.
"""
import os
import subprocess
import sys
import tempfile
import time
import unittest

from kit_test import ROOT, StateTest, kit, need_root, need_tracer, rows_of, unavailable
import configs
import record
import stats
import workloads
from render import summary

PY = workloads.get("python")


def need_python(tc):
    why = workloads.unavailable(PY, "function__entry")
    if why:
        unavailable(tc, f"python: {why}")


class Semaphores(unittest.TestCase):
    """raise_semaphores() adds 1 to a marker's 2-byte counter in the held
    target, read back through /proc/PID/mem: 0 before, 1 after (the line
    marker's, which nothing else raises)."""

    def test_line_raised_in_the_held_target(self):
        need_root(self)
        need_python(self)
        p = subprocess.Popen([*PY.argv, "--threads", "2", "--iterations", "10", "--hold"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            self.assertTrue(workloads.wait_held(p.pid, lambda: p.poll() is None),
                            "the target never reached its gate")
            self.assertEqual(len(os.listdir(f"/proc/{p.pid}/task")), 3)  # main + 2 at the gate
            self.assertEqual(workloads.raise_semaphores(p.pid, PY.program, ["line"]),
                             {"line": 0})
            self.assertEqual(workloads.raise_semaphores(p.pid, PY.program, ["line"]),
                             {"line": 1})
            out, _ = p.communicate("x", timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        rec, why = record.target_record(out)
        self.assertIsNone(why)
        self.assertEqual([t["calls"] for t in rec["per_thread"]], [10, 10])

    def test_a_target_that_ends_is_not_waited_for(self):
        """A workload that exits before its gate (a flag it refuses):
        wait_held says so at once, not after its 30 s."""
        need_python(self)
        p = subprocess.Popen([*PY.argv, "--rate", "5"], stdin=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
        t0 = time.monotonic()
        self.assertFalse(workloads.wait_held(p.pid, lambda: p.poll() is None))
        self.assertLess(time.monotonic() - t0, 10)
        p.wait()

    def test_a_marker_the_program_lacks_is_named(self):
        why = workloads.unavailable(PY, "no__such__marker")
        if why and "not found" in why:
            unavailable(self, why)
        self.assertIn("has no python:no__such__marker marker (it has: audit, function__entry,",
                      why)


class Python(StateTest):
    """make run CONFIGS='python-*' THREADS=1..2 (ITER=20000, RUNS=2): the
    untraced interpreter, its entry and line semaphores raised with no probe,
    and ftrace at function__entry, which sees every call (the kernel raising
    the entry semaphore, the runner the line's: 3.11 fires the marker only
    with both); the answers say each against the untraced row."""

    def test_ftrace_counts_every_call(self):
        need_tracer(self, "ftrace")
        need_python(self)
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--threads", "1..2", "--iter", "20000", "--runs", "2",
                     "--configs", "python-*"], res)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            rows, folder = rows_of(res)
            typed, meta, _ = record.load(folder)
            logs = {f: open(os.path.join(folder, "logs", f)).read()
                    for f in os.listdir(os.path.join(folder, "logs"))}
        timed = [x for x in rows if x["rep"] not in ("", "0")]
        self.assertEqual(sorted({(x["config"], x["threads"]) for x in timed}),
                         sorted((c.name, str(n)) for c in configs.CONFIGS if c.workload
                                for n in (1, 2)))
        for row in timed:
            with self.subTest(config=row["config"], threads=row["threads"], rep=row["rep"]):
                self.assertEqual(row["status"], "ok", row["reason"])
                calls = int(row["threads"]) * int(row["iterations"])
                self.assertEqual(int(row["calls"]), calls)
                if row["config"] == "python-ftrace-entry":
                    self.assertEqual(int(row["events_seen"]), calls)
                    self.assertIn("filtered on the target's threads",
                                  logs[f"python-ftrace-entry-t{row['threads']}-r{row['rep']}.log"])
                if configs.BY_NAME[row["config"]].semaphores:
                    self.assertIn("raised through /proc/PID/mem before the calls", row["note"])
        a = stats.analyse([x for x in typed if (x["rep"] or 0) >= 1], meta)
        lines = summary.real_lines(a)
        self.assertEqual([ln.split(",")[0] for ln in lines if ln.startswith("- ")],
                         ["- python at 1 thread", "- python at 2 threads"])
        self.assertTrue(any("python-semaphores, no probe: +" in ln for ln in lines), lines)
        self.assertTrue(any("tracer, python-ftrace-entry: +" in ln for ln in lines), lines)


class Family(StateTest):
    """Adaptive stopping within a family: python-untraced, the python
    rows' baseline, runs for as long as a row measured against it does
    (and the kit's baseline, in the same matrix, not for them)."""

    def test_the_familys_baseline_runs_while_its_rows_do(self):
        need_root(self)
        need_python(self)
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--threads", "1", "--min-runs", "2", "--max-runs", "4", "--pilot-s", "0",
                     "--precision", "0.001", "--precision-ns", "0.001",
                     "--configs", "baseline,python-untraced,python-semaphores"], res)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            rows, _ = rows_of(res)
        runs = {}
        for x in rows:
            if x["rep"] not in ("", "0"):
                runs.setdefault(x["config"], []).append(x)
        # PRECISION so tight that nothing settles: the semaphores row runs to
        # MAX_RUNS=4, its baseline with it; the kit's baseline, alone against
        # nothing, stops at MIN_RUNS=2
        self.assertEqual(len(runs["python-semaphores"]), 4)
        self.assertEqual(len(runs["python-untraced"]), 4)
        self.assertIn(runs["python-untraced"][-1]["stopped"],  # as the round's order fell
                      ("after 4 runs: every other cell at 1 thread had stopped",
                       "MAX_RUNS=4 reached"))
        self.assertEqual(len(runs["baseline"]), 2)


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    unittest.main()
