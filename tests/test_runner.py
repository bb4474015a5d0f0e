"""The runner (scripts/run.py, `make run`): a small real matrix per tracer
with exact event counts, input checks, faults, signals, and the tracing
state left exactly as it was."""
import csv
import glob
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from kit_test import (ROOT, SCRIPTS, StateTest, build, need_root, need_tracer, run,
                      tracing_state, unavailable)
import configs
import elfinfo
import kernel
from measure import paths
import record
import stats
import tracers
import params
from measure import kit as kitmod, matrix, sizing

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


def kill_during(tc, args, res, victims, what):
    """Starts the kit with ARGS, waits until VICTIMS() names pids (WHAT
    says what is awaited), SIGKILLs them, and returns the rows once the
    kit has ended (which it must do with status 0) and the pids killed."""
    p = start_kit(args, res)
    killed = []

    def seen():  # the pids killed are the ones found, not a second look's
        killed[:] = victims() or []
        return bool(killed)
    try:
        tc.assertTrue(wait_for(seen, 120), f"{what} never appeared")
        for pid in killed:
            os.kill(int(pid), signal.SIGKILL)
        out, _ = p.communicate(timeout=300)
    finally:
        p.kill()
    tc.assertEqual(p.returncode, 0, out[-2000:])
    return rows_of(res)[0], {int(k) for k in killed}


class Matrix(StateTest):
    """ITER=100000, THREADS=1..2: every traced configuration sees exactly
    threads x iterations events (or the 0 it expects)."""

    def matrix(self, tracer):
        need_tracer(self, tracer)
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--quick", "1", "--threads", "1..2", "--iter", "100000",
                     "--configs", f"{tracer}*"], res)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            rows, _ = rows_of(res)
        # (the site-* configurations, whose rows may be `corrupted`, are Sites')
        names = [c.name for c in configs.CONFIGS if c.tracer == tracer
                 and c.name.startswith(tracer)]
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
            untraced = [c for c in configs.CONFIGS if not tracers.get(c.tracer).attaches]
            self.assertEqual(len(rows), 2 * len(untraced))
            for row in rows:
                self.assertEqual(row["status"], "ok", row)
                self.assertEqual(sum(1 for _ in row["thread_wall_ns"].split(";")),
                                 int(row["threads"]))
            self.assertTrue(os.path.exists(os.path.join(folder, "meta.json")))
            self.assertEqual(os.readlink(os.path.join(res, "latest")), os.path.basename(folder))


STAPBPF_ABORT = "stapbpf exited with signal: 6 (Aborted)"  # (test_stap says more)

# One configuration of each back-end and mode, with the threads it runs
# at in the checks below (stap's printf scripts on the bpf runtime abort
# more often at 2 threads, a finding of its own: Runs in test_stap).
EVERY_BACKEND = [("ftrace-sdt", 2), ("ftrace-function", 2), ("perf-stat-sdt", 2),
                 ("perf-record-sdt", 2), ("bpftrace-sdt-count", 2),
                 ("bpftrace-function-count", 2), ("lttng-flight", 2), ("lttng-disk", 2),
                 ("uftrace", 2), ("stap-mark-empty", 2), ("stap-mark", 1)]


class Misses(StateTest):
    """Every back-end, shown a run in which its tracer truly misses events:
    MISS=30000 sends the first 30000 of each thread's 100000 calls to
    kit_decoy(), which no probe covers.  Each row must be `mismatch`, with
    the tracer's own count (threads x 70000) beside the calls (threads x
    100000): a back-end that assumed its count instead of reading it
    would say `ok` here."""

    def misses(self, config, threads):
        cfg = configs.BY_NAME[config]
        need_tracer(self, cfg.tracer)
        for _ in range(5):  # stapbpf's own abort (a finding: README) is run again
            with tempfile.TemporaryDirectory() as res:
                r = kit(["--quick", "1", "--threads", str(threads), "--iter", "100000",
                         "--miss", "30000", "--configs", config], res)
                self.assertEqual(r.returncode, 0, r.stderr[-2000:])
                (row,), _ = rows_of(res)
            if not (row["status"] == "failed" and STAPBPF_ABORT in row["reason"]):
                break
        seen, want = threads * 70000, threads * 100000
        self.assertEqual(row["events_expected"], str(want), row["reason"])
        if row["status"] == "dropped" and int(row["events_dropped"] or 0) > 0:
            # The tracer said it lost events of its own (stapbpf's printf,
            # "lost N perf_events"; perf record's full buffer: findings,
            # README): `dropped` outranks `mismatch`, and the count is still
            # the tracer's own: the calls it probed, alone or with what it
            # says it lost (perf's samples never written).
            got, lost = int(row["events_seen"]), int(row["events_dropped"])
            self.assertIn(seen, (got, got + lost), row["reason"])
            self.assertIn(f"(saw {got} of {want})", row["reason"])
        else:
            self.assertEqual(row["status"], "mismatch", row["reason"])
            self.assertIn(f"saw {seen} events, expected {want}", row["reason"])
            self.assertEqual(row["events_seen"], str(seen), row["reason"])
        self.assertIn(f"MISS: {threads * 30000} of the calls went to kit_decoy()", row["note"])


# One test per back-end and mode: Misses.test_<config> (tests/mutants.py
# runs the one that guards the code it breaks).
for _config, _threads in EVERY_BACKEND:
    setattr(Misses, "test_" + _config.replace("-", "_"),
            lambda self, c=_config, n=_threads: self.misses(c, n))


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
        (["--rate", "0"], "RATE '0' is not allowed: want a comma-separated list of whole "
                          "numbers in 1..1000000000 or max"),
        (["--rate", "-5"], "RATE '-5' is not allowed"),
        (["--rate", "1e3x"], "RATE '1e3x' is not allowed"),
        (["--rate", "10,,20"], "RATE '10,,20' is not allowed"),
        (["--rate", "1000000001"], "RATE '1000000001' is not allowed"),
        (["--duration", "0"], "DURATION '0' is not allowed: want seconds in 0.01..3600"),
        (["--miss", "-1"], "MISS '-1' is not allowed: want a whole number in 0..1000000000000"),
        (["--miss", "1k"], "MISS '1k' is not allowed"),
        (["--min-runs", "1"], "MIN_RUNS '1' is not allowed: want a whole number in 2..1000"),
        (["--max-runs", "2"], "MAX_RUNS '2' is not allowed: want a whole number in 3..1000 "
                              "(at least MIN_RUNS)"),
        (["--min-runs", "5", "--max-runs", "4"], "MAX_RUNS '4' is not allowed: want a whole "
                                                 "number in 5..1000"),
        (["--precision", "0"], "PRECISION '0' is not allowed: want a fraction in 0.001..1"),
        (["--precision", "ten"], "PRECISION 'ten' is not allowed"),
        (["--precision-ns", "-1"], "PRECISION_NS '-1' is not allowed: want ns in 0.001..1000000"),
        (["--warm-up", "1"], "WARM_UP '1' is not allowed: want auto or all"),
        (["--timings", "/no/such/folder/t.json"], "TIMINGS '/no/such/folder/t.json' is not "
                                                  "allowed: want a file in an existing folder"),
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

    def test_variables_from_the_environment(self):
        """make hands the variables over in the environment: checked the
        same way, and a flag given to run.py wins over them."""
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--list"], res, env=dict(os.environ, ITER="-1"))
            self.assertEqual(r.returncode, 2)
            self.assertIn("ITER '-1' is not allowed: want a whole number in 1..", r.stderr)
            r = kit(["--iter", "5", "--list"], res, env=dict(os.environ, ITER="-1"))
            self.assertEqual(r.returncode, 0, r.stderr)
            r = kit(["--vars"], res, env=dict(os.environ, RUNS="7"))
            self.assertIn("RUNS=adaptive", r.stdout.splitlines(), "--vars prints defaults")
            self.assertEqual(os.listdir(res), [])

    def test_make_variables(self):
        """The same checks through `make run`, whose variables reach the
        runner without passing through a shell command line."""
        before = sorted(os.listdir(os.path.join(ROOT, "results")))
        for var, message in (("THREADS=1;touch x", "THREADS '1;touch x' is not allowed"),
                             ("ITER=-1", "ITER '-1' is not allowed"),
                             ("CONFIGS=nope*", "CONFIGS 'nope*' matches no configuration"),
                             ("THREADS=$(touch x)", "THREADS '$(touch x)' is not allowed"),
                             ("ITER=", "ITER '' is not allowed"),
                             ("RATE=10,,20", "RATE '10,,20' is not allowed")):
            with self.subTest(var=var):
                r = run(["make", "-s", "run", var, "NO_INSTALL=1"])
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(message, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(ROOT, "x")))
        self.assertEqual(sorted(os.listdir(os.path.join(ROOT, "results"))), before)

    def test_help(self):
        """--help lists every variable (argparse formats help text with %;
        a bare one in a variable's help broke it, and newer Pythons refuse
        it when the parser is built, as the lab's guest did)."""
        r = kit(["--help"], "/nonexistent")
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        for name in ("PRECISION", "PRECISION_NS", "MIN_RUNS", "MAX_RUNS", "STAP_RUNTIME"):
            self.assertIn(name, r.stdout)
        self.assertIn("95% interval", r.stdout)

    def test_list(self):
        r = kit(["--list"], "/nonexistent")
        self.assertEqual(r.returncode, 0)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[1].split()[0], "baseline", "baselines come first")
        self.assertEqual(len(lines), len(configs.CONFIGS) + 1)


class Faults(StateTest):
    def kill_mid_run(self, tracer, config, process, iters, reason, victims=None):
        """Kill the tracer's process during a run: a failed row, cleanup
        done, the other rows still run."""
        need_tracer(self, tracer)
        target = f"benchmark-{configs.BY_NAME[config].build}"[:15]
        with tempfile.TemporaryDirectory() as res:
            def running():  # its pids while the traced target runs (a 2M-call
                # run can be over in half a second: a fixed wait missed it)
                return (pids_of(target) and pids_of(process)
                        and (time.sleep(0.1) or pids_of(target) and pids_of(process)))
            rows, _ = kill_during(self, ["--quick", "1", "--threads", "1", "--iter", str(iters),
                                         "--runs", "2", "--configs", f"baseline,{config}"],
                                  res, victims or running, process)
        st = [(r["config"], r["status"]) for r in rows]
        self.assertEqual(len(rows), 4, st)
        failed = [r for r in rows if r["status"] == "failed"]
        self.assertEqual(len(failed), 1, st)
        self.assertEqual(failed[0]["config"], config)
        self.assertIn(reason, failed[0]["reason"])
        # The other runs ran and measured: `dropped` (perf losing samples
        # under load) is the tracer's own finding, not the kill's.
        self.assertEqual(sum(r["status"] in ("ok", "dropped") for r in rows), 3, st)

    def test_bpftrace_killed(self):
        self.kill_mid_run("bpftrace", "bpftrace-function-count", "bpftrace", 1000000,
                          "bpftrace was killed by signal 9")

    def kill_wrapper(self, config, process, iters):
        """The tracer process that started the target (perf, uftrace), not
        a helper of the same name run while attaching (perf probe)."""
        cfg = configs.BY_NAME[config]
        target = f"benchmark-{cfg.build}"[:15]

        def wrapper():
            for pid in pids_of(target):
                st = tracers.base.proc_stat(pid)
                parent = st and tracers.base.proc_stat(st[1][1])
                if parent and parent[0] == process:
                    time.sleep(0.3)  # let it run a while
                    return [st[1][1]]
            return []
        self.kill_mid_run(cfg.tracer, config, process, iters,
                          f"{process} was killed by signal 9", victims=wrapper)

    def test_perf_stat_killed(self):
        self.kill_wrapper("perf-stat-sdt", "perf", 5000000)

    def test_perf_record_killed(self):
        self.kill_wrapper("perf-record-sdt", "perf", 5000000)

    def test_uftrace_killed(self):
        self.kill_wrapper("uftrace", "uftrace", 50000000)

    def test_ftrace_event_disabled(self):
        """ftrace has no process to kill: its tracer is the kernel.  The
        nearest fault is someone turning the kit's event off mid-run; the
        run completes, both of ftrace's counts stop, and the row must be
        a `mismatch` with fewer events than calls."""
        need_tracer(self, "ftrace")
        from tracers import tracefs
        with tempfile.TemporaryDirectory() as res:
            def enables():
                t = tracefs.find()
                found = glob.glob(os.path.join(t, "instances", "kit*", "events", "kit*", "*",
                                               "enable")) if t else []
                return found and pids_of("benchmark-sdt") and (time.sleep(0.3) or found)
            p = start_kit(["--quick", "1", "--threads", "1", "--iter", "5000000",
                           "--configs", "ftrace-sdt"], res)
            try:
                self.assertTrue(wait_for(enables, 120), "the kit's event never appeared")
                for en in enables():
                    tracefs.write(en, "0")
                out, _ = p.communicate(timeout=300)
            finally:
                p.kill()
            self.assertEqual(p.returncode, 0, out[-2000:])
            (row,), _ = rows_of(res)
        self.assertEqual(row["status"], "mismatch", row["reason"])
        self.assertLess(int(row["events_seen"]), 5000000)
        self.assertIn("expected 5000000", row["reason"])

    def test_instance_held_open(self):
        """Seen in CI: the test above disabled the event, the kernel's
        unregister kept its `enable` open while the target finished, and
        the kit's rmdir of the instance got EBUSY and left it.  An
        instance another process holds open for a moment is removed once
        it lets go."""
        need_tracer(self, "ftrace")
        import threading
        from tracers import tracefs
        tracefs.MOUNTS.ensure()
        inst = os.path.join(tracefs.find(), "instances", f"kit-held-{os.getpid()}")
        os.mkdir(inst)
        try:
            fd = os.open(os.path.join(inst, "buffer_size_kb"), os.O_RDONLY)
            with self.assertRaises(OSError, msg="an instance held open is busy") as busy:
                os.rmdir(inst)
            self.assertEqual(busy.exception.errno, 16)  # EBUSY
            threading.Timer(0.5, os.close, (fd,)).start()
            tracefs.remove_instance(inst, "sched/sched_switch")
            self.assertFalse(os.path.isdir(inst))
        finally:
            if os.path.isdir(inst):
                time.sleep(1)
                os.rmdir(inst)
            tracefs.MOUNTS.release()

    def test_stap_killed(self):
        module = tracers.get("stap").module_reason() is None
        # On bpf, stap is the parent of the stapbpf killed, and says so.
        self.kill_mid_run("stap", "stap-mark-empty", "stapio" if module else "stapbpf", 2000000,
                          "signal 9" if module else "stap exited with status")

    def test_hung_tracer(self):
        """A tracer that stops answering (SIGSTOP): killed at TIME_LIMIT,
        a failed row saying so, cleanup done, the other rows still run."""
        need_tracer(self, "bpftrace")
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
        need_tracer(self, "ftrace")
        self.interrupt("ftrace-function", signal.SIGINT,
                       lambda: "kit" in tracing_state().get("uprobe_events", ""))

    def test_sigterm_lttng(self):
        need_tracer(self, "lttng")
        self.interrupt("lttng-disk", signal.SIGTERM,
                       lambda: "kit" in run(["lttng", "list"]).stdout)

    def test_sigint_perf(self):
        need_tracer(self, "perf")
        self.interrupt("perf-record-sdt", signal.SIGINT,
                       lambda: run(["pgrep", "-f", "^perf record"]).returncode == 0)

    def others_probe(self, event, configs_, offset):
        """Runs CONFIGS_ while someone else's uprobe EVENT, enabled, sits
        on the kit's own target at OFFSET: it must survive, and every row
        must be ok with the kit's own exact count."""
        from tracers import tracefs
        tracefs.MOUNTS.ensure()
        enable = os.path.join(tracefs.find(), "events", "someone", event, "enable")
        try:
            tracefs.add_uprobe("someone", event, build("sdt"), offset)
            tracefs.write(enable, "1")
            with tempfile.TemporaryDirectory() as res:
                r = kit(["--quick", "1", "--threads", "1", "--configs", configs_], res)
                self.assertEqual(r.returncode, 0, r.stderr[-2000:])
                rows, _ = rows_of(res)
            self.assertTrue(tracefs.uprobe_defined("someone", event))
            for row in rows:
                self.assertEqual((row["status"], row["events_seen"]), ("ok", "100000"), row)
        finally:
            if os.path.exists(enable):
                tracefs.write(enable, "0")
            tracefs.remove_uprobe("someone", event)
            tracefs.MOUNTS.release()

    def test_others_probes_left_alone(self):
        """A uprobe someone else defined on the kit's own target survives
        the kit's runs and is not counted as theirs."""
        need_tracer(self, "ftrace")
        need_tracer(self, "perf")
        elf = elfinfo.Elf(build("sdt"))
        self.others_probe("else", "ftrace-sdt,perf-stat-sdt", elf.file_offset(elf.symbol("main")))

    def test_others_probe_of_the_same_name(self):
        """Someone's probe named single_trace (as the kit's ftrace event
        once was), enabled on main: it fires once a run, so reading hits
        by that name would give 1, and on a kernel that rejects a
        second event of one name in any group, adding the kit's own would
        fail.  The kit's own uniquely named event counts exactly.  (perf
        probe's `sdt_benchmark:single_trace` cannot be added beside it on
        such a kernel: that is perf's limit, not tested here.)"""
        need_tracer(self, "ftrace")
        elf = elfinfo.Elf(build("sdt"))
        self.others_probe("single_trace", "ftrace-sdt", elf.file_offset(elf.symbol("main")))

    def test_guard_off_is_noticed(self):
        """A guarded marker probed without its reference counter sees 0
        events; where all were expected, the row says mismatch."""
        need_tracer(self, "ftrace")
        import run as runner
        cfg = configs.Config("guard-off", "sdt-guarded", "ftrace", "marker-noref", "record")
        with tempfile.TemporaryDirectory() as res:
            args = runner.parse_args(["--quick", "1", "--results", res])
            k = kitmod.Kit(args)
            try:
                k.open()
                k.sup.setup(tracers.get("ftrace"), k.log)
                row, _ = k.run_one(cfg, 1, 1000, 1)
            finally:
                k.close()
        self.assertEqual(row["status"], "mismatch")
        self.assertEqual(row["events_seen"], 0)
        self.assertIn("saw 0 events, expected 1000", row["reason"])

    def test_lttng_sessiond_killed(self):
        """kill -9 of the session daemon the kit started, mid-run, in each
        of LTTng's modes: that run fails saying so, the kit starts a new
        daemon for the runs after it (the client never starts one behind
        its back), and stops it at the end: no daemon is left (the state
        check).  The runs after it are lossless (record.LOSSLESS: the
        flight recorder's 20M events overwrite its buffers)."""
        need_tracer(self, "lttng")
        if tracers.lttng.sessiond_pids():
            unavailable(self, "an lttng-sessiond runs already; the kit would use it, not "
                        "start one")
        for config in ("lttng-disk", "lttng-flight"):
            with self.subTest(config=config), tempfile.TemporaryDirectory() as res:
                def daemon():  # the kit's daemon, once a session of the kit's is there
                    in_session = "kit" in run(["lttng", "--no-sessiond", "list"]).stdout
                    return tracers.lttng.sessiond_pids() if in_session else set()
                rows, first = kill_during(self, ["--quick", "1", "--threads", "1", "--iter",
                                                 "20000000", "--runs", "3", "--configs",
                                                 config], res, daemon, "a session of the kit's")
                st = [(r["status"], r["reason"]) for r in rows]
                self.assertEqual(len(rows), 3, st)
                self.assertEqual(rows[0]["status"], "failed", st)
                self.assertIn("lttng", rows[0]["reason"], st)
                for r in rows[1:]:
                    self.assertIn(r["status"], record.LOSSLESS, st)
                self.assertFalse(tracers.lttng.sessiond_pids() & first)

    def test_lttng_flight_wraps(self):
        """A flight recorder that overflows: `overwritten`, with the
        newest events kept and the full stream named; one that does not
        overflow (the matrix test) must match exactly."""
        need_tracer(self, "lttng")
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--quick", "1", "--threads", "1", "--iter", "5000000",
                     "--configs", "lttng-flight"], res)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            rows, _ = rows_of(res)
        (row,) = rows
        self.assertEqual(row["status"], "overwritten", row["reason"])
        self.assertLess(0, int(row["events_seen"]))
        self.assertLess(int(row["events_seen"]), 5000000)
        self.assertRegex(row["note"], r"[12] of \d+ per-CPU streams full")


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
    """Without RUNS each cell runs until its interval is precise enough
    (stats.settle), between MIN_RUNS and MAX_RUNS times, in interleaved
    rounds; with RUNS, exactly RUNS times.  A plan is said first and the
    time it took at the end."""

    def test_cells_stop_when_settled(self):
        need_tracer(self, "ftrace")
        import run as runner
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--threads", "1", "--iter", "200000", "--max-run-s", "0.05",
                     "--min-run-s", "0.05", "--min-runs", "2", "--max-runs", "5",
                     "--configs", "baseline,idle-sdt,ftrace-sdt", "--warm-up", "all"], res)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            _, folder = rows_of(res)
            rows, _, _ = record.load(folder)
        self.assertRegex(r.stderr, r"run: plan: 3 cells \(3 configurations x THREADS=1\), "
                                   r"3 warm-ups, 2\.\.5 runs \(until PRECISION\) each: about "
                                   r"\d+s \(at least \d+s, at most \d+s\)")
        self.assertRegex(r.stderr, r"\[warm-up 1/3, ETA \d+s(\.\.\d+s)?\]")
        self.assertRegex(r.stderr, r"run: \d+ runs and 3 warm-ups in \d+s; the plan said about")
        # Each decision replayed from runs.csv, whose rows are in the order
        # they ran: settle() on a cell's runs so far, against the
        # baseline's so far, says stop exactly where the row says so.
        a = runner.parse_args(["--min-runs", "2", "--max-runs", "5"])
        so_far = {}
        for row in (x for x in rows if x["rep"] >= 1):
            mine = so_far.setdefault(row["config"], [])
            mine.append(row)
            if row["config"] != "baseline":
                done, why = stats.settle(mine, so_far.get("baseline", []), a.min_runs,
                                         a.max_runs, a.precision, a.precision_ns)
                self.assertEqual(row["stopped"], why if done else "", row)
        for name, mine in so_far.items():
            with self.subTest(config=name):
                self.assertEqual([x["rep"] for x in mine], list(range(1, len(mine) + 1)))
                self.assertTrue(2 <= len(mine) <= 5, len(mine))
                self.assertEqual([bool(x["stopped"]) for x in mine],
                                 [False] * (len(mine) - 1) + [True])
                # The baseline ran for as long as any cell it is measured against.
                self.assertGreaterEqual(len(so_far["baseline"]), len(mine))

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
        process that is none of the kit's: a shell spinning beside a
        1-thread run at 1000/s adds most of a CPU second; without it the
        machine is far from that busy.  (The threads' own CPU is in it too.)"""
        quiet = self.paced(1000, threads=1)
        busy = self.paced(1000, threads=1, busy=True)
        self.assertIn(busy["machine_source"], ("schedstat", "proc_stat"))
        own = sum(t["cpu_ns"] for t in quiet["per_thread"])
        self.assertGreaterEqual(quiet["machine_busy_ns"], own)
        self.assertGreater(busy["machine_busy_ns"] - quiet["machine_busy_ns"], 0.5e9)

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
                self.assertEqual(int(x["calls"]), rate * n // 2)  # 0.5 s of calls
                self.assertEqual(x["pacing"], f"sleep, batches of {max(1, rate // 1000)}")
                if x["tracer"] != "none":
                    self.assertEqual(int(x["events_seen"]), int(x["calls"]))
                if x["tracer"] == "perf":
                    self.assertGreater(int(x["tracer_user_ns"]) + int(x["tracer_sys_ns"]), 0)


class Sites(StateTest):
    """Probe sites: the canary's verdict and the path each row took."""

    def test_sites_and_paths(self):
        """ftrace on the 1-byte nop, the 5-byte nop and the 10-byte nop of
        `nop; nop10` (+1), inside the red-zone canary, and a return probe:
        every row says which path fired; a row is `corrupted` exactly when
        the canary counted overwritten calls; the 1-byte nop (a trap, the
        instruction emulated) never corrupts; a probe that never fires is
        a mismatch that says so; the return probe's path is the uretprobe
        syscall or a trap, counted, and its watch is removed after (the
        state check)."""
        need_tracer(self, "ftrace")
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--quick", "1", "--threads", "1", "--iter", "20000", "--configs",
                     "site-sdt-ftrace,site-sdt-nop5-ftrace,site-sdt-nop10-at1-ftrace,"
                     "ftrace-function-return"], res)
            self.assertEqual(r.returncode, 0, r.stderr)
            rows, _ = rows_of(res)
        by = {x["config"]: x for x in rows}
        for x in rows:
            with self.subTest(config=x["config"]):
                self.assertIn(x["status"], ("ok", "corrupted", "mismatch"), x["reason"])
                self.assertEqual(x["status"] == "corrupted", int(x["corrupted"]) > 0)
                self.assertRegex(x["path"], r"^(optimised|trap|none|uretprobe syscall)")
        one = by["site-sdt-ftrace"]
        self.assertEqual((one["status"], one["corrupted"]), ("ok", "0"))
        self.assertTrue(one["path"].startswith("trap"), one["path"])
        # What the kernel says of itself (the uprobe syscall) decides what
        # the 5-byte nop must do: on the nop5 kernels (6.18 to 7.1) the probe
        # is optimised and its call writes the red zone on every call but
        # the first (the trap that optimises it); elsewhere it traps, safe.
        nop5 = by["site-sdt-nop5-ftrace"]
        answer, site, meaning = paths.uprobe_optimisation()
        if answer == "unknown":
            unavailable(self, f"the kernel's uprobe optimisation is unknown: {meaning}")
        if site == "nop5":
            self.assertEqual((nop5["status"], nop5["corrupted"]), ("corrupted", str(20000 - 1)))
            self.assertTrue(nop5["path"].startswith("optimised"), nop5["path"])
        else:
            self.assertEqual((nop5["status"], nop5["corrupted"]), ("ok", "0"), nop5["reason"])
            self.assertTrue(nop5["path"].startswith("trap"), nop5["path"])
        at1 = by["site-sdt-nop10-at1-ftrace"]
        if at1["events_seen"] == "0":
            self.assertEqual(at1["status"], "mismatch")
            self.assertTrue(at1["path"].startswith("none: the probe never fired"))
        ret = by["ftrace-function-return"]
        self.assertEqual(ret["status"], "ok", ret["reason"])
        self.assertRegex(ret["path"], r"^(uretprobe syscall \(20000 calls seen\)|trap)")


    def test_orders_as_the_kernel_says(self):
        """The other orders of probe and target, with real ftrace: each
        site's verdict is what kernel.py expects from this kernel's own
        answer to the uprobe syscall (on 6.18 the nop10 probe is REFUSED
        attached while running, and the forked child of an optimised nop5
        CRASHES; on 7.2 both are safe); the 1-byte nop is safe in both
        orders and its probe saw the target's calls, plus the parent's
        FORK_CALLS before the fork; nothing is left behind (the state
        check), the held target included."""
        need_tracer(self, "ftrace")
        names = ["site-sdt-ftrace-running", "site-sdt-ftrace-fork",
                 "site-sdt-nop10-at1-ftrace-running", "site-sdt-nop5-ftrace-fork"]
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--quick", "1", "--threads", "1", "--iter", "20000", "--configs",
                     ",".join(names)], res)
            self.assertEqual(r.returncode, 0, r.stderr)
            rows, folder = rows_of(res)
            typed, meta, _ = record.load(folder)
        a = stats.analyse(typed, meta)
        if kernel.answer(meta) == "unknown":
            unavailable(self, "the kernel's uprobe optimisation is unknown: nothing to expect")
        sites = {s["config"]: s for s in a["sites"]}
        self.assertEqual(sorted(sites), sorted(names))
        for name, s in sites.items():
            with self.subTest(config=name):
                self.assertEqual(kernel.check(meta, s), "", s)
                self.assertEqual(s["attach"], configs.BY_NAME[name].attach)
        by = {x["config"]: x for x in rows}
        self.assertEqual(by["site-sdt-ftrace-running"]["events_seen"], "20000")
        fork = by["site-sdt-ftrace-fork"]
        self.assertEqual((fork["status"], fork["events_seen"], fork["fork_calls"]),
                         ("ok", str(20000 + configs.FORK_CALLS), str(configs.FORK_CALLS)))


class Leftovers(StateTest):
    """What a tracer leaves in uprobe_events on the kit's own target is
    removed, and nothing else."""

    def test_a_refused_attach_leaves_nothing(self):
        """bpftrace on the 10-byte nop of `nop; nop10`.  Where the kernel
        refuses that probe (Linux before 7.2: errno 524), bcc (under
        bpftrace) falls back to writing its own p:uprobes/p_<path>_<offset>
        _1_bcc_<pid> into uprobe_events, and leaves it there when the
        attach fails (where tracefs is mounted: the ftrace row beside it
        mounts it); the kit must remove it, and the state check (which
        sees through an unmounted tracefs) must find nothing.  bcc's event
        name holds the target's path, and the kernel refuses names of 64
        characters or more, so from a long checkout path bcc fails earlier
        and leaves nothing: the kit runs here from a symbolic link with a
        short name at /, removed again at the end.  Where the kernel takes
        the probe (7.2), the run counts and nothing is left either."""
        need_tracer(self, "bpftrace")
        for n in range(100):
            short = f"/k{os.getpid() % 1000 + n}"
            try:
                os.symlink(ROOT, short)
                break
            except FileExistsError:
                continue
        try:
            with tempfile.TemporaryDirectory() as res:
                r = run(["python3", os.path.join(short, "scripts", "run.py"), "--no-install", "1",
                         "--no-report", "--results", res, "--quick", "1", "--threads", "1",
                         "--iter", "20000", "--configs",
                         "site-sdt-nop10-at1-bpftrace,site-sdt-nop10-at1-ftrace"])
                self.assertEqual(r.returncode, 0, r.stderr[-2000:])
                rows, folder = rows_of(res)
                with open(glob.glob(os.path.join(folder, "logs", "site-*bpftrace*.log"))[0]) as f:
                    log = f.read()
        finally:
            os.unlink(short)
        (row,) = [x for x in rows if x["tracer"] == "bpftrace"]
        if "Unknown error 524" in log:  # the kernel refused it after bcc made its event
            self.assertEqual(row["status"], "failed")
            self.assertIn("bpftrace exited with status", row["reason"])
            self.assertRegex(log, r"removed 1 uprobe events the tracer left behind: "
                                  r"uprobes/p_\S+_bcc_\d+")
        else:
            self.assertIn(row["status"], ("ok", "corrupted"), row["reason"])

    def test_only_dead_tracers_probes_on_the_target(self):
        """The rule (tracefs.leftovers) on uprobe_events text: bcc's and
        stapbpf's events of the run's dead tracer pids on its target go;
        the same names for another pid, another binary, or anyone else's
        probe stay."""
        from tracers import tracefs
        target, other = build("sdt"), build("plain")
        text = "\n".join([
            f"p:uprobes/p_{target.replace('/', '_')}_0x1234_1_bcc_4242 {target}:0x1234",
            f"p:uprobes/p_{target.replace('/', '_')}_0x1234_1_bcc_4243 {target}:0x1234",
            f"p:uprobes/stapprobe_4242_0 {target}:0x0000000000001234",
            f"p:uprobes/p_x_0x1234_1_bcc_4242 {other}:0x1234",
            f"p:someone/bcc_4242 {target}:0x1234",
            f"p:kit1_1/kit1_1_single_trace {target}:0x1234 v=%di:u32", ""])
        self.assertEqual(tracefs.leftovers(text, target, {4242}),
                         [("uprobes", f"p_{target.replace('/', '_')}_0x1234_1_bcc_4242"),
                          ("uprobes", "stapprobe_4242_0")])


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


if __name__ == "__main__":
    unittest.main()
