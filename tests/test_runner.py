"""The runner (scripts/run.py, `make run`): a small real matrix per tracer
with exact event counts, input checks, faults, signals, and the tracing
state left exactly as it was."""
import csv
import glob
import os
import signal
import subprocess
import tempfile
import time
import unittest

from kit_test import ROOT, SCRIPTS, StateTest, build, need_root, run, tracing_state
import configs
import tracers

RUN_PY = os.path.join(SCRIPTS, "run.py")


def kit(args, results, **kw):
    return run(["python3", RUN_PY, "--no-install", "1", "--no-report", "--results", results,
                *args], **kw)


def rows_of(results):
    folders = [d for d in glob.glob(os.path.join(results, "2*")) if os.path.isdir(d)]
    assert len(folders) == 1, folders
    with open(os.path.join(folders[0], "runs.csv"), newline="") as f:
        return list(csv.DictReader(f)), folders[0]


def start_kit(args, results):
    return subprocess.Popen(["python3", RUN_PY, "--no-install", "1", "--no-report",
                             "--results", results, *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for(pred, timeout=60):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def pids_of(name):
    return run(["pgrep", "-x", name]).stdout.split()


class Matrix(StateTest):
    """ITER=100000, THREADS=1..2: every traced configuration sees exactly
    threads x iterations events (or the 0 it expects)."""

    def matrix(self, tracer):
        need_root(self)
        why = tracers.get(tracer).available()
        if why:
            self.skipTest(f"{tracer}: {why}")
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--quick", "1", "--threads", "1..2", "--iter", "100000",
                     "--configs", f"{tracer}*"], res)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            rows, _ = rows_of(res)
        names = [c.name for c in configs.CONFIGS if c.tracer == tracer]
        self.assertEqual(sorted({r["config"] for r in rows}), sorted(names))
        for row in rows:
            with self.subTest(config=row["config"], threads=row["threads"]):
                if row["status"] == "skipped":
                    self.assertTrue(row["reason"])
                    continue
                self.assertEqual(row["status"], "ok", row["reason"])
                cfg = configs.BY_NAME[row["config"]]
                want = 0 if cfg.expect == "none" else int(row["threads"]) * 100000
                self.assertEqual(int(row["events_expected"]), want)
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
            self.assertEqual(len(rows), 12)
            for row in rows:
                self.assertEqual(row["status"], "ok", row)
                self.assertEqual(sum(1 for _ in row["thread_wall_ns"].split(";")),
                                 int(row["threads"]))
            self.assertTrue(os.path.exists(os.path.join(folder, "meta.json")))
            self.assertEqual(os.readlink(os.path.join(res, "latest")), os.path.basename(folder))


class BadInput(StateTest):
    CASES = [
        (["--threads", "0"], "THREADS '0' is not allowed"),
        (["--threads", "8..1"], "THREADS '8..1' is not allowed"),
        (["--threads", "a"], "THREADS 'a' is not allowed"),
        (["--threads", "1;touch x"], "THREADS '1;touch x' is not allowed"),
        (["--threads", "2000"], "THREADS '2000' is not allowed"),
        (["--iter", "-1"], "ITER '-1' is not allowed: want a whole number in 1..1000000000000"),
        (["--iter", "10k"], "ITER '10k' is not allowed"),
        (["--runs", "0"], "RUNS '0' is not allowed"),
        (["--configs", "nope"], "CONFIGS 'nope' matches no configuration; allowed: baseline"),
        (["--quick", "yes"], "QUICK 'yes' is not allowed: want 0 or 1"),
        (["--stap-runtime", "kernel"], "STAP_RUNTIME 'kernel' is not allowed"),
    ]

    def test_refused_before_anything(self):
        with tempfile.TemporaryDirectory() as res:
            for args, message in self.CASES:
                with self.subTest(args=args):
                    r = kit(args, res)
                    self.assertEqual(r.returncode, 2)
                    self.assertIn(message, r.stderr)
                    self.assertEqual(os.listdir(res), [], "a results folder was left")
            self.assertFalse(os.path.exists(os.path.join(ROOT, "x")))

    def test_make_variables(self):
        """The same checks through `make run`, whose variables reach the
        runner without passing through a shell command line."""
        before = sorted(os.listdir(os.path.join(ROOT, "results")))
        for var, message in (("THREADS=1;touch x", "THREADS '1;touch x' is not allowed"),
                             ("ITER=-1", "ITER '-1' is not allowed"),
                             ("CONFIGS=nope*", "CONFIGS 'nope*' matches no configuration"),
                             ("THREADS=$(touch x)", "THREADS '$(touch x)' is not allowed"),
                             ("ITER=", "ITER '' is not allowed")):
            with self.subTest(var=var):
                r = run(["make", "-s", "run", var, "NO_INSTALL=1"])
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(message, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(ROOT, "x")))
        self.assertEqual(sorted(os.listdir(os.path.join(ROOT, "results"))), before)

    def test_list(self):
        r = kit(["--list"], "/nonexistent")
        self.assertEqual(r.returncode, 0)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[1].split()[0], "baseline", "baselines come first")
        self.assertEqual(len(lines), len(configs.CONFIGS) + 1)


class Faults(StateTest):
    def kill_mid_run(self, tracer, config, process, iters, reason):
        """Kill the tracer's process during a run: a failed row, cleanup
        done, the other rows still run."""
        need_root(self)
        why = tracers.get(tracer).available()
        if why:
            self.skipTest(f"{tracer}: {why}")
        with tempfile.TemporaryDirectory() as res:
            p = start_kit(["--quick", "1", "--threads", "1", "--iter", str(iters), "--runs", "2",
                           "--configs", f"baseline,{config}"], res)
            try:
                self.assertTrue(wait_for(lambda: pids_of(process), 120),
                                f"{process} never started")
                time.sleep(0.5)
                for pid in pids_of(process):
                    os.kill(int(pid), signal.SIGKILL)
                out, _ = p.communicate(timeout=300)
            finally:
                p.kill()
            self.assertEqual(p.returncode, 0, out[-2000:])
            rows, _ = rows_of(res)
        st = [(r["config"], r["status"]) for r in rows]
        self.assertEqual(len(rows), 4, st)
        failed = [r for r in rows if r["status"] == "failed"]
        self.assertEqual(len(failed), 1, st)
        self.assertEqual(failed[0]["config"], config)
        self.assertIn(reason, failed[0]["reason"])
        self.assertEqual(sum(r["status"] == "ok" for r in rows), 3, st)

    def test_bpftrace_killed(self):
        self.kill_mid_run("bpftrace", "bpftrace-function-count", "bpftrace", 1000000,
                          "bpftrace was killed by signal 9")

    def test_stap_killed(self):
        module = tracers.get("stap").module_reason() is None
        # On bpf, stap is the parent of the stapbpf killed, and says so.
        self.kill_mid_run("stap", "stap-mark-empty", "stapio" if module else "stapbpf", 2000000,
                          "signal 9" if module else "stap exited with status")

    def test_hung_tracer(self):
        """A tracer that stops answering (SIGSTOP): killed at TIME_LIMIT,
        a failed row saying so, cleanup done, the other rows still run."""
        need_root(self)
        why = tracers.get("bpftrace").available()
        if why:
            self.skipTest(f"bpftrace: {why}")
        with tempfile.TemporaryDirectory() as res:
            p = start_kit(["--quick", "1", "--threads", "1", "--iter", "100000", "--runs", "2",
                           "--time-limit", "8", "--configs", "baseline,bpftrace-sdt-count"], res)
            try:
                # Stop bpftrace once its target runs: the target ends, and
                # bpftrace never reaps it nor exits.
                self.assertTrue(wait_for(lambda: pids_of("benchmark-sdt"), 120))
                target = pids_of("benchmark-sdt")[0]
                with open(f"/proc/{target}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{parent}/comm") as f:
                    self.assertEqual(f.read().strip(), "bpftrace")
                os.kill(parent, signal.SIGSTOP)
                out, _ = p.communicate(timeout=300)
            finally:
                p.kill()
            self.assertEqual(p.returncode, 0, out[-2000:])
            rows, _ = rows_of(res)
        st = [(r["config"], r["status"], r["reason"]) for r in rows]
        self.assertEqual(len(rows), 4, st)
        failed = [r for r in rows if r["status"] == "failed"]
        self.assertEqual([r["reason"] for r in failed], ["bpftrace hung: killed after 8 s"], st)
        self.assertEqual(sum(r["status"] == "ok" for r in rows), 3, st)

    def interrupt(self, config, sig, ready):
        need_root(self)
        with tempfile.TemporaryDirectory() as res:
            p = start_kit(["--quick", "1", "--threads", "1", "--iter", "2000000", "--runs", "3",
                           "--configs", f"baseline,{config}"], res)
            try:
                self.assertTrue(wait_for(ready, 120), "the tracer never attached")
                p.send_signal(sig)
                out, _ = p.communicate(timeout=120)
            finally:
                p.kill()
            self.assertEqual(p.returncode, 130, out[-2000:])
            self.assertIn("interrupted by", out)
            rows, folder = rows_of(res)
            with open(os.path.join(folder, "meta.json")) as f:
                self.assertIn('"interrupted"', f.read())
        for r in rows:
            self.assertIn(r["status"], ("ok", "failed"))

    def test_sigint_ftrace(self):
        if tracers.get("ftrace").available():
            self.skipTest(tracers.get("ftrace").available())
        self.interrupt("ftrace-function", signal.SIGINT,
                       lambda: "kit" in tracing_state().get("uprobe_events", ""))

    def test_sigterm_lttng(self):
        if tracers.get("lttng").available():
            self.skipTest(tracers.get("lttng").available())
        self.interrupt("lttng-disk", signal.SIGTERM,
                       lambda: "kit" in run(["lttng", "list"]).stdout)

    def test_sigint_perf(self):
        if tracers.get("perf").available():
            self.skipTest(tracers.get("perf").available())
        self.interrupt("perf-record-sdt", signal.SIGINT,
                       lambda: run(["pgrep", "-f", "^perf record"]).returncode == 0)

    def test_others_probes_left_alone(self):
        """A uprobe someone else defined (even on the kit's own target)
        survives a run."""
        need_root(self)
        from tracers import tracefs
        if tracers.get("ftrace").available():
            self.skipTest(tracers.get("ftrace").available())
        tracefs.MOUNTS.ensure()
        try:
            tracefs.add_uprobe("someone", "else", build("sdt"), 0x100)
            with tempfile.TemporaryDirectory() as res:
                r = kit(["--quick", "1", "--threads", "1", "--configs", "ftrace-sdt,perf-stat-sdt"],
                        res)
                self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            self.assertTrue(tracefs.uprobe_defined("someone", "else"))
        finally:
            tracefs.remove_uprobe("someone", "else")
            tracefs.MOUNTS.release()

    def test_guard_off_is_noticed(self):
        """A guarded marker probed without its reference counter sees 0
        events; where all were expected, the row says mismatch."""
        need_root(self)
        if tracers.get("ftrace").available():
            self.skipTest(tracers.get("ftrace").available())
        import run as runner
        cfg = configs.Config("guard-off", "sdt-guarded", "ftrace", "marker-noref", "record")
        with tempfile.TemporaryDirectory() as res:
            args = runner.parse_args(["--quick", "1", "--results", res])
            k = runner.Kit(args)
            try:
                k.make_dir()
                tracers.get("ftrace").setup(k)
                row = k.run_one(cfg, 1, 1000, 1)
            finally:
                k.cleanup()
                k.csv_file.close()
        self.assertEqual(row["status"], "mismatch")
        self.assertEqual(row["events_seen"], 0)
        self.assertIn("saw 0 events, expected 1000", row["reason"])


if __name__ == "__main__":
    unittest.main()
