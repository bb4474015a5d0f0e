"""Faults: tracers killed, hung or crashing mid-run, signals, and the
tracing state left exactly as it was, including what a dead tracer left."""
import glob
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from kit_test import (ROOT, RUN_PY, SCRIPTS, StateTest, build, descendants, kill_during, kit,
                      need_root, need_tracer, pids_of, rows_of, run, start_kit, tracing_state, unavailable,
                      wait_for)
import cgroups
import configs
import elfinfo
import host
import procs
import kitlock
import leftovers
import pgcluster
import record
import tracers
from measure import kit as kitmod


class Faults(StateTest):
    def kill_mid_run(self, tracer, config, process, iters, reason, victims=None):
        """Kill the tracer's process during a run: a failed row, cleanup
        done, the other rows still run."""
        need_tracer(self, tracer)
        target = f"benchmark-{configs.BY_NAME[config].build}"[:15]
        with tempfile.TemporaryDirectory() as res:
            def running(kit):  # its pids while the traced target runs (a 2M-call
                # run can be over in half a second: a fixed wait missed it)
                return (pids_of(target, kit) and pids_of(process, kit)
                        and (time.sleep(0.1) or pids_of(target, kit) and pids_of(process, kit)))
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
        # under load), or `mismatch` where its loss did not add up, is the
        # tracer's own finding, not the kill's.
        self.assertEqual(sum(r["status"] in ("ok", "dropped") or (
            r["status"] == "mismatch" and int(r["events_dropped"] or 0) > 0) for r in rows), 3, st)

    def test_bpftrace_killed(self):
        self.kill_mid_run("bpftrace", "bpftrace-function-count", "bpftrace", 1000000,
                          "bpftrace was killed by signal 9")

    def kill_wrapper(self, config, process, iters):
        """The tracer process that started the target (perf, uftrace), not
        a helper of the same name run while attaching (perf probe)."""
        cfg = configs.BY_NAME[config]
        target = f"benchmark-{cfg.build}"[:15]

        def wrapper(kit):
            for pid in pids_of(target, kit):
                st = procs.proc_stat(pid)
                parent = st and procs.proc_stat(st[1][1])
                if parent and parent[0] == process:
                    time.sleep(0.3)  # let it run a while
                    return [st[1][1]]
            return []
        self.kill_mid_run(cfg.tracer, config, process, iters,
                          f"{process} was killed by signal 9", victims=wrapper)

    # Calls enough for the 0.3 s before the kill on bare metal too (a
    # traced call ~0.5 us there, ~5 us here: the run that is not killed
    # takes 10 s here, and perf record's file is read after it)
    def test_perf_stat_killed(self):
        self.kill_wrapper("perf-stat-sdt", "perf", 2000000)

    def test_perf_record_killed(self):
        self.kill_wrapper("perf-record-sdt", "perf", 2000000)

    def test_uftrace_killed(self):
        self.kill_wrapper("uftrace", "uftrace", 20000000)

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
                return found and pids_of("benchmark-sdt", p.pid) and (time.sleep(0.3) or found)
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
                self.assertTrue(wait_for(lambda: pids_of("benchmark-sdt", p.pid), 120))
                target = pids_of("benchmark-sdt", p.pid)[0]
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

    def interrupt(self, config, sig, ready, group=False):
        """SIG to the kit (GROUP: to its whole process group, as a
        terminal's hang-up or Ctrl-C reaches every process in it) once
        READY(the kit's pid): exit 130, the rows so far kept, nothing left
        behind."""
        need_root(self)
        with tempfile.TemporaryDirectory() as res:
            p = start_kit(["--quick", "1", "--threads", "1", "--iter", "2000000", "--runs", "3",
                           "--configs", f"baseline,{config}"], res, session=group)
            try:
                self.assertTrue(wait_for(lambda: ready(p.pid), 120), "the tracer never attached")
                if group:
                    os.killpg(p.pid, sig)
                else:
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
                       lambda kit: "kit" in tracing_state().get("uprobe_events", ""))

    def test_sigterm_lttng(self):
        need_tracer(self, "lttng")
        self.interrupt("lttng-disk", signal.SIGTERM,
                       lambda kit: "kit" in run(["lttng", "list"]).stdout)

    def test_sighup_to_the_group_lttng(self):
        need_tracer(self, "lttng")
        self.interrupt("lttng-disk", signal.SIGHUP,
                       lambda kit: "kit" in run(["lttng", "list"]).stdout, group=True)

    def test_sighup_to_the_group_bpftrace(self):
        need_tracer(self, "bpftrace")
        self.interrupt("bpftrace-sdt-count", signal.SIGHUP,
                       lambda kit: pids_of("bpftrace", kit), group=True)

    def test_sigint_perf(self):
        need_tracer(self, "perf")
        self.interrupt("perf-record-sdt", signal.SIGINT,
                       lambda kit: any(pid for pid in pids_of("perf", kit)
                                       if "record" in open(f"/proc/{pid}/cmdline").read()))

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
        check).  The runs after it count every event (record.LOSSLESS: the
        flight recorder's 20M events overwrite its buffers), or, on disk,
        say what the consumer lost and add up to every event (dropped: a
        fresh clone's disk, busy with the guests' root file systems, lost
        340,425 of 20M so); never failed."""
        need_tracer(self, "lttng")
        if tracers.lttng.sessiond_pids():
            unavailable(self, "an lttng-sessiond runs already; the kit would use it, not "
                        "start one")
        for config in ("lttng-disk", "lttng-flight"):
            with self.subTest(config=config), tempfile.TemporaryDirectory() as res:
                def daemon(_kit):  # the kit's daemon (none ran before), once a session of the kit's is there
                    in_session = "kit" in run(["lttng", "--no-sessiond", "list"]).stdout
                    return tracers.lttng.sessiond_pids() if in_session else set()
                rows, first = kill_during(self, ["--quick", "1", "--threads", "1", "--iter",
                                                 "20000000", "--runs", "3", "--configs",
                                                 config], res, daemon, "a session of the kit's")
                st = [(r["status"], r["reason"]) for r in rows]
                self.assertEqual(len(rows), 3, st)
                self.assertEqual(rows[0]["status"], "failed", st)
                self.assertIn("lttng", rows[0]["reason"], st)
                kept = record.LOSSLESS + (("dropped",) if config == "lttng-disk" else ())
                for r in rows[1:]:
                    self.assertIn(r["status"], kept, st)
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

    def test_someone_elses_perf_event_is_kept(self):
        """An sdt_benchmark:single_trace event the kit did not make (here
        the test's own, made with perf probe as a user would, perf's
        default name) is no obstacle and is kept: the kit's event is the
        run's own name at the same site with the same reference counter
        (a different one the kernel refuses, EINVAL), so its rows count
        every event, and the user's event is there after, alone (the test
        removes it)."""
        need_tracer(self, "perf")
        from tracers import tracefs
        target = build("sdt")
        mount = tracefs.Mount()  # the test's own, if none is mounted
        with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as res:
            perf = ["perf", "--buildid-dir", cache]
            try:
                self.assertTrue(mount.ensure(), "tracefs cannot be mounted")
                for cmd in (["buildid-cache", "--add", target],
                            ["probe", "-x", target, "-a", "sdt_benchmark:single_trace"]):
                    subprocess.run(perf + cmd, check=True, capture_output=True)
                r = kit(["--quick", "1", "--threads", "1", "--iter", "20000",
                         "--configs", "perf-stat-sdt"], res)
                self.assertEqual(r.returncode, 0, r.stderr[-2000:])
                rows, _ = rows_of(res)
                held = tracefs.uprobes_named("single_trace")
            finally:
                subprocess.run(perf + ["probe", "-d", "sdt_benchmark:single_trace"],
                               capture_output=True)
                mount.release()
        timed = [x for x in rows if x["config"] == "perf-stat-sdt"]
        self.assertTrue(timed)
        for row in timed:
            self.assertEqual(row["status"], "ok", row["reason"])
        self.assertEqual(len(held), 1, held)
        self.assertTrue(held[0].startswith(f"p:sdt_benchmark/single_trace {target}:"), held)

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


class DiskFull(StateTest):
    """The results' disk fills mid-run (a tmpfs of the test's own, filled
    once the first rows are written): the kit stops saying so, exit 1, the
    rows written so far are kept and read, and nothing is left attached
    (the state check)."""

    def test_rows_kept_when_the_disk_fills(self):
        need_tracer(self, "ftrace")
        with tempfile.TemporaryDirectory() as mnt:
            r = run(["mount", "-t", "tmpfs", "-o", "size=80m", "kit-test-full", mnt])
            self.assertEqual(r.returncode, 0, r.stderr)
            try:
                res = os.path.join(mnt, "results")
                p = start_kit(["--quick", "1", "--threads", "1", "--runs", "20",
                               "--configs", "baseline,ftrace-sdt"], res)
                try:
                    def rows():
                        runs = glob.glob(os.path.join(res, "2*", "runs.csv"))
                        return runs and open(runs[0]).read().count("\n") >= 3 and runs[0]
                    self.assertTrue(wait_for(rows, 120), "no rows were written")
                    with open(os.path.join(mnt, "filler"), "wb") as f:
                        try:
                            while True:
                                f.write(b"\0" * 2 ** 20)
                                f.flush()
                        except OSError:
                            pass
                    out, _ = p.communicate(timeout=300)
                finally:
                    p.kill()
                self.assertEqual(p.returncode, 1, out[-2000:])
                self.assertIn("No space left on device; the rows written so far are kept", out)
                kept, _, _ = record.load(os.path.dirname(rows()))
                self.assertGreaterEqual(len(kept), 2)
            finally:
                run(["umount", mnt])


class Signals(unittest.TestCase):
    """host.stoppable(), what run.py and lab.py stop by: a stop signal
    raises Interrupted at once; one that lands in a deferred step (a tool
    run whole, a detach, the cleanup) is kept for the next check; only the
    first stops the kit, so a second Ctrl-C cannot cut the cleanup the
    first started; and a tool gets the signals as the system has them,
    never an ignored SIGTERM handed down."""

    def tearDown(self):
        host.SIGNALLED.clear()

    def kill(self, sig):
        os.kill(os.getpid(), sig)
        time.sleep(0.05)  # the handler runs between bytecodes: here

    def test_first_stops_deferred_waits(self):
        host.SIGNALLED.clear()
        with host.stoppable():
            with self.assertRaises(host.Interrupted):
                self.kill(signal.SIGHUP)
            self.kill(signal.SIGTERM)  # the second: kept, not raised
            self.assertEqual(host.SIGNALLED, ["SIGHUP", "SIGTERM"])
            host.SIGNALLED.clear()
            with host.deferred():
                self.kill(signal.SIGINT)
            self.assertEqual(host.SIGNALLED, ["SIGINT"])
            with self.assertRaises(host.Interrupted):
                host.check_signalled()

    def test_tools_get_default_signals(self):
        old = signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            _, out = host.run(["sh", "-c", "trap"], whole=True)
        finally:
            signal.signal(signal.SIGTERM, old)
        self.assertNotIn("TERM", out)

    def test_a_timed_out_tool_is_not_waited_for(self):
        """Past its time limit a command is stopped and its output so far
        kept, even when a child it left holds the pipe."""
        t0 = time.monotonic()
        with self.assertRaises(host.Timeout) as e:
            host.run(["sh", "-c", "echo start; sleep 3 & sleep 3"], timeout=1)
        self.assertLess(time.monotonic() - t0, 2.5)
        self.assertEqual(e.exception.output, "start\n")


class OneAtATime(unittest.TestCase):
    """A second kit on the machine says who holds the lock and waits,
    before it installs, builds or attaches anything; once the first one
    ends it runs.  (A lock file of the test's own, KIT_LOCK: the suite
    holds the machine's.)"""

    def test_a_second_kit_waits(self):
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, KIT_LOCK=os.path.join(tmp, "kit.lock"), LOCK_WAIT_S="120")
            holder = subprocess.Popen(
                ["python3", "-c", "import sys, time; sys.path.insert(0, sys.argv[1]); "
                 "import kitlock; kitlock.lock('holder'); print('held', flush=True); time.sleep(120)",
                 SCRIPTS], env=env, stdout=subprocess.PIPE, text=True)
            res = os.path.join(tmp, "results")
            try:
                self.assertEqual(holder.stdout.readline(), "held\n")
                p = subprocess.Popen(["python3", RUN_PY, "--no-install", "1", "--no-report",
                                      "--results", res, "--quick", "1", "--threads", "1",
                                      "--configs", "baseline"], cwd=ROOT, env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                line = p.stderr.readline()
                self.assertRegex(line, rf"another kit holds {re.escape(env['KIT_LOCK'])} \(pid "
                                 rf"{holder.pid}, user \S+: python3 -c import sys.*\); waiting "
                                 r"for it to finish, 120 s at most \(LOCK_WAIT_S")
                time.sleep(1)
                self.assertIsNone(p.poll(), "it did not wait")
                self.assertFalse(os.path.exists(res), "it made its results folder while waiting")
                holder.kill()
                holder.wait()
                _, err = p.communicate(timeout=300)
                self.assertEqual(p.returncode, 0, err[-2000:])
                self.assertIn("is ours now", err)
                (row,), _ = rows_of(res)
                self.assertEqual(row["status"], "ok")
            finally:
                holder.kill()

    def quick_run(self, env, res):
        """make run's smallest (the baseline, one run) with ENV, in RES; a
        kit still waiting after 60 s fails the test."""
        try:
            return run(["python3", RUN_PY, "--no-install", "1", "--no-report", "--results", res,
                        "--quick", "1", "--threads", "1", "--configs", "baseline"], env=env,
                       timeout=60)
        except subprocess.TimeoutExpired:
            self.fail("the kit was still running after 60 s (waiting past LOCK_WAIT_S?)")

    def test_a_forged_pid_is_not_believed(self):
        """Another user's process holds the flock and writes into the file
        the pid of a process above the kit (here the test's own), as if
        the kit ran under it: the kit believes the kernel's list of
        holders, not the file, so it waits, names the real holder, and
        after LOCK_WAIT_S stops with nothing done (exit 1, no folder)."""
        with tempfile.TemporaryDirectory() as tmp:
            lock = os.path.join(tmp, "kit.lock")
            env = dict(os.environ, KIT_LOCK=lock, LOCK_WAIT_S="2")
            holder = subprocess.Popen(
                ["python3", "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a+'); "
                 "fcntl.flock(f, fcntl.LOCK_EX); f.write(sys.argv[2] + ' run\\n'); f.flush(); "
                 "print('held', flush=True); time.sleep(120)", lock, str(os.getpid())],
                stdout=subprocess.PIPE, text=True)
            res = os.path.join(tmp, "results")
            try:
                self.assertEqual(holder.stdout.readline(), "held\n")
                r = self.quick_run(env, res)
            finally:
                holder.kill()
                holder.wait()
        self.assertEqual(r.returncode, 1, r.stderr[-2000:])
        self.assertRegex(r.stderr, rf"run: {re.escape(lock)} is still held after 2 s \(pid "
                         rf"{holder.pid}, user \S+: python3 -c import fcntl.*\); stopping with "
                         r"nothing done \(LOCK_WAIT_S sets the wait\)")
        self.assertFalse(os.path.exists(res), "it made its results folder")

    def test_a_file_not_the_kits_is_refused(self):
        """A lock that is a symbolic link (to a file the kit could lock),
        or, as root, a file another user owns: refused in one line, exit
        1, nothing done, the file left as it was.  The kit's own file left
        writable by all (an older kit's 0666) is made 0644."""
        with tempfile.TemporaryDirectory() as tmp:
            real, link = os.path.join(tmp, "real.lock"), os.path.join(tmp, "kit.lock")
            open(real, "w").close()
            os.symlink(real, link)
            cases = [(link, "a link")]
            if os.geteuid() == 0:
                theirs = os.path.join(tmp, "theirs.lock")
                open(theirs, "w").close()
                os.chown(theirs, 65534, 65534)
                cases.append((theirs, "another user's"))
            for lock, what in cases:
                with self.subTest(what):
                    res = os.path.join(tmp, "results")
                    r = self.quick_run(dict(os.environ, KIT_LOCK=lock), res)
                    self.assertEqual(r.returncode, 1, r.stderr[-2000:])
                    self.assertRegex(r.stderr, rf"kit: the lock {re.escape(lock)} is not the "
                                     r"kit's \(.*\): it makes the file itself, root's and 0644")
                    self.assertFalse(os.path.exists(res), "it made its results folder")
                    self.assertTrue(os.path.lexists(lock))
            os.unlink(link)
            os.chmod(real, 0o666)
            r = run(["python3", "-c", "import os, sys; sys.path.insert(0, sys.argv[1]); "
                     "import kitlock; kitlock.lock('holder'); "
                     "print(oct(os.stat(kitlock.LOCK).st_mode & 0o777))", SCRIPTS],
                    env=dict(os.environ, KIT_LOCK=real), timeout=60)
            self.assertEqual((r.returncode, r.stdout), (0, "0o644\n"), r.stderr)
            self.assertFalse(os.path.exists(real), "its file was not removed at its end")

    def test_holders_are_those_with_it_open(self):
        """/proc/locks names the process that took a flock, even after it
        exited and left the lock to a child (and its pid to whoever gets
        it next): a holder is one that has the file open now."""
        with tempfile.TemporaryDirectory() as tmp:
            lock = os.path.join(tmp, "kit.lock")
            p = subprocess.Popen(
                ["python3", "-c", "import fcntl, os, sys, time; f = open(sys.argv[1], 'a+'); "
                 "fcntl.flock(f, fcntl.LOCK_EX); kid = os.fork()\n"
                 "if kid: print(kid, flush=True); os._exit(0)\n"
                 "time.sleep(60)", lock], stdout=subprocess.PIPE, text=True)
            child = int(p.stdout.readline())
            p.wait()
            try:
                with open(lock) as f:
                    self.assertEqual(kitlock.holders(f), [])  # p's pid, listed, is gone
            finally:
                os.kill(child, signal.SIGKILL)


class CleanupFailed(unittest.TestCase):
    """A kit whose own cleanup failed (a detach, a teardown) stays
    registered (kitstate.keep): unregister leaves its record, so the next
    kit, finding it dead, sweeps what it left, as it would a killed kit's;
    a kit whose cleanup did all it had to is forgotten as it ends (issue
    67).  kitstate's files mocked: no root, nothing written."""

    def cleanup_then_end(self, fails):
        import kitstate
        from types import SimpleNamespace
        from unittest import mock
        from measure.supervise import Supervisor

        class Stuck(tracers.Tracer):
            name = "stuck"

            def detach(self, run):
                if fails:
                    raise tracers.TracerError("uprobe_events: Device or resource busy")
        sup = Supervisor()
        sup.attached.append((Stuck(), SimpleNamespace(cfg=SimpleNamespace(name="ftrace-sdt"))))
        mine = {"id": "abc", "pid": os.getpid(), "start": "1", "pidns": "", "tracers": []}
        written = []  # (id, the record as it was written)
        with mock.patch.dict(kitstate._mine, mine, clear=True), \
                mock.patch.object(kitstate, "write", lambda kid, rec: written.append(
                    (kid, dict(rec)))), \
                mock.patch.object(kitstate, "forget") as forget, \
                mock.patch.object(Supervisor, "remove_leftovers"), \
                mock.patch.object(Supervisor, "sweep"), \
                mock.patch("measure.supervise.say"):
            sup.cleanup()
            kitstate.unregister()
        return written, forget

    def test_kept_for_the_next_kit(self):
        written, forget = self.cleanup_then_end(fails=True)
        forget.assert_not_called()
        self.assertEqual([(kid, rec.get("left")) for kid, rec in written],
                         [("abc", ["cleanup of ftrace-sdt: uprobe_events: Device or resource "
                                   "busy"])])

    def test_forgotten_when_all_was_undone(self):
        written, forget = self.cleanup_then_end(fails=False)
        forget.assert_called_once_with("abc")
        self.assertEqual(written, [])


class OneAtATimeAsRoot(unittest.TestCase):
    """Another user's hold on root's lock file (anyone may flock a file
    they can read) keeps no root kit waiting: it says who holds it and
    takes a new file."""
    tier = "host"

    def test_a_users_hold_keeps_no_root_kit_waiting(self):
        need_root(self)
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            lock = os.path.join(tmp, "kit.lock")
            with open(lock, "w"):
                pass
            os.chmod(lock, 0o644)
            holder = subprocess.Popen(
                ["python3", "-c", "import fcntl, sys, time; f = open(sys.argv[1]); "
                 "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(120)",
                 lock], stdout=subprocess.PIPE, text=True,
                preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))
            res = os.path.join(tmp, "results")
            try:
                self.assertEqual(holder.stdout.readline(), "held\n")
                r = OneAtATime.quick_run(self, dict(os.environ, KIT_LOCK=lock,
                                                    LOCK_WAIT_S="30"), res)
            finally:
                holder.kill()
                holder.wait()
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertRegex(r.stderr, rf"run: {re.escape(lock)} is held by no root kit \(pid "
                         rf"{holder.pid}, user \S+: python3 -c .*\); taking a new one")


class KilledKit(StateTest):
    """What a kit killed by SIGKILL left (its uprobe events and tracing
    instances, make lifecycle's group, a PostgreSQL cluster's folder with
    a server still running in it, its scratch folder, a tracer it started
    by path) is removed by the next kit at its start, which says so in one
    line.  A dead kit is one that registered itself in root's state
    (kitstate.py) and whose process (pid and start time) is gone: the same
    names of a kit still alive, of a kit that never registered (a user's
    `kitface_1`), a name the kit does not make whole, and a link or a
    folder another user planted under a dead kit's name (with a process
    in what it leads to) are not touched."""

    OTHER = 65534  # nobody

    def test_the_next_kit_sweeps_them(self):
        need_root(self)
        import kitstate
        from tracers import tracefs
        from elfinfo import Elf
        dead = subprocess.Popen(["true"])
        dead.wait()
        self.assertFalse(os.path.exists(f"/proc/{dead.pid}"))
        live, kid = os.getpid(), leftovers.kit_id(dead.pid)
        # the dead kit as it registered itself (its start time no longer
        # any process's), and a live one: this test's own process
        kitstate.write(kid, {"pid": dead.pid, "start": "1", "pidns": kitstate.pid_ns(),
                             "tracers": []})
        kitstate.write(leftovers.kit_id(live), {"pid": live, "start": kitstate.start_time(live),
                                                "pidns": kitstate.pid_ns(), "tracers": []})
        target = build("sdt")
        elf = Elf(target)
        off = elf.file_offset(elf.symbol("single_trace"))
        mount = tracefs.Mount()
        self.assertTrue(mount.ensure(), "tracefs cannot be mounted")
        t = tracefs.find()
        groups = {"dead": leftovers.run_tag(kid, 1),
                  "dead lifecycle": leftovers.lifecycle_group(dead.pid),
                  "live": leftovers.run_tag(leftovers.kit_id(live), 1),
                  "not the kit's": f"user{kid}_1", "not whole": f"kit{kid}_1x",
                  "a user's kitface": "kitface_1",
                  # a kit in another pid namespace (a container) with the
                  # dead kit's pid: its id holds that namespace's inode
                  "another namespace's":
                      f"kit{dead.pid:x}n{os.stat('/proc/self/ns/pid').st_ino + 1:x}_1"}
        shm = pgcluster.cluster_root()
        owner = pgcluster.cluster_owner_uid()
        folders = {"dead": os.path.join(shm, f"{groups['dead']}-abcd_123-pg"),
                   "live": os.path.join(shm, f"{groups['live']}-abcd_123-pg"),
                   "scratch": os.path.join(host.BUILD, leftovers.scratch_prefix(kid) + "x")}
        planted = os.path.join(shm, f"{leftovers.run_tag(kid, 2)}-abcd_123-pg")
        theirs_folder = os.path.join(shm, f"{leftovers.run_tag(kid, 3)}-abcd_123-pg")
        theirs = tempfile.mkdtemp()
        os.chown(theirs, self.OTHER, self.OTHER)
        procs, cgs = {}, {}
        try:
            for g in groups.values():
                tracefs.add_uprobe(g, f"{g}_single_trace", target, off)
                os.mkdir(os.path.join(t, "instances", g))
                tracefs.write(os.path.join(t, "instances", g, "events", g, "enable"), "1")
            for d in folders.values():
                os.mkdir(d, 0o711)  # as the kit makes them
            data = os.path.join(folders["dead"], pgcluster.PG_DIR, "data")
            os.makedirs(data)
            os.chown(os.path.dirname(data), owner, owner)
            os.chown(data, owner, owner)
            os.symlink(theirs, planted)
            os.mkdir(theirs_folder, 0o700)
            os.chown(theirs_folder, self.OTHER, self.OTHER)
            # the dead kit's cluster's server, running on in its folder, as
            # its owner; a process in the folder another user's link points
            # at, and one in another user's folder under a dead kit's name;
            # the dead kit's tracer (its registered pid and start time)
            for k, cwd, uid in (("server", data, owner), ("theirs", theirs, self.OTHER),
                                ("their folder's", theirs_folder, self.OTHER),
                                ("tracer", "/", 0)):
                procs[k] = subprocess.Popen(["sleep", "300"], cwd=cwd, start_new_session=True,
                                            user=uid)
            kitstate.write(kid, {"pid": dead.pid, "start": "1", "pidns": kitstate.pid_ns(),
                                 "tracers": [[procs["tracer"].pid,
                                              kitstate.start_time(procs["tracer"].pid)]]})
            # a by-path workload's cgroups (cgroups.py): the dead kit's with
            # its command's process still in it, and the live kit's
            top = cgroups.mount()
            for k in ("dead", "live") if top else ():
                cgs[k] = os.path.join(top, groups[k])
                os.mkdir(cgs[k])
            if top:
                procs["command"] = subprocess.Popen(["sleep", "300"], start_new_session=True)
                with open(os.path.join(cgs["dead"], "cgroup.procs"), "w") as f:
                    f.write(str(procs["command"].pid))
            with tempfile.TemporaryDirectory() as res:
                r = kit(["--quick", "1", "--threads", "1", "--configs", "baseline"], res)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            self.assertTrue(wait_for(lambda: procs["server"].poll() is not None, 30),
                            "the dead kit's cluster server runs on")
            self.assertEqual(procs["server"].returncode, -signal.SIGKILL)
            self.assertTrue(wait_for(lambda: procs["tracer"].poll() is not None, 30),
                            "the dead kit's tracer runs on")
            self.assertEqual(procs["tracer"].returncode, -signal.SIGTERM)
            said = [ln for ln in r.stderr.splitlines() if f"(pid {dead.pid})" in ln]
            self.assertEqual(len(said), 1, r.stderr[-2000:])
            self.assertIn(f"run: removed what a kit that is gone (pid {dead.pid}) left: ", said[0])
            self.assertIn(f"its tracers still running (pids {procs['tracer'].pid})", said[0])
            for k in ("dead", "dead lifecycle"):
                self.assertIn(f"uprobe {groups[k]}/{groups[k]}_single_trace", said[0])
                self.assertIn(f"tracing instance {groups[k]}", said[0])
                self.assertFalse(tracefs.uprobe_defined(groups[k], f"{groups[k]}_single_trace"))
                self.assertFalse(os.path.exists(os.path.join(t, "instances", groups[k])))
            self.assertIn(folders["dead"], said[0])
            self.assertFalse(os.path.exists(folders["dead"]))
            if cgs:
                self.assertIn(f"cgroup {cgs['dead']}", said[0])
                self.assertFalse(os.path.exists(cgs["dead"]))
                self.assertTrue(os.path.isdir(cgs["live"]))
                self.assertIsNone(procs["command"].poll(), "the kit killed what was in it")
            self.assertIn(f"build/{os.path.basename(folders['scratch'])}", said[0])
            self.assertFalse(os.path.exists(folders["scratch"]))
            for k in ("live", "not the kit's", "not whole", "a user's kitface",
                      "another namespace's"):
                self.assertTrue(tracefs.uprobe_defined(groups[k], f"{groups[k]}_single_trace"))
                self.assertTrue(os.path.isdir(os.path.join(t, "instances", groups[k])))
                self.assertNotIn(f" {groups[k]}", said[0])
            self.assertTrue(os.path.isdir(folders["live"]))
            self.assertTrue(os.path.islink(planted))
            self.assertTrue(os.path.isdir(theirs_folder))
            for k in ("theirs", "their folder's"):
                self.assertIsNone(procs[k].poll(), f"a process in {k} folder was killed")
            self.assertNotIn(kid, os.listdir(kitstate.STATE), "the dead kit is not forgotten")
        finally:
            kitstate.forget(kid)
            kitstate.forget(leftovers.kit_id(live))
            self.clean(procs, groups, t, [*folders.values(), planted, theirs_folder, theirs],
                       mount, cgs)

    def test_a_killed_kits_bpftrace_is_stopped_by_the_next(self):
        """A kit SIGKILLed while its bpftrace on a path (a user-* row) runs:
        that bpftrace would trace every later run of the file unseen.  The
        next kit stops it at its start (SIGTERM: it detaches as on Ctrl-C)
        and says so."""
        need_tracer(self, "bpftrace")
        target = build("sdt")
        with tempfile.TemporaryDirectory() as res, tempfile.TemporaryDirectory() as res2:
            p = start_kit(["--threads", "1", "--iter", "1", "--runs", "1", "--max-run-s", "0",
                           "--target", target, "--probe", "benchmark:single_trace",
                           "--workload", f"{target} --threads 1 --iterations 3000000000 --quiet",
                           "--configs", "user-bpftrace"], res, session=True)
            left = {}
            try:
                import json
                import kitstate
                state = os.path.join(kitstate.STATE, leftovers.kit_id(p.pid))

                def live_tracers():  # as the kit registered them (not a version check's)
                    try:
                        with open(state) as f:
                            return [t for t, _ in json.load(f)["tracers"]
                                    if descendants(p.pid).get(t) == "bpftrace"]
                    except (OSError, ValueError):
                        return []
                # the tracer attaches first, then the workload starts: both
                # live, or the workload, started after the look, outlives the test
                name = os.path.basename(target)[:15]  # (a process's name: 15 bytes)
                self.assertTrue(wait_for(lambda: live_tracers() and name in
                                         descendants(p.pid).values(), 120),
                                "bpftrace or its workload never started")
                bt = live_tracers()[0]
                left = descendants(p.pid)
                os.kill(p.pid, signal.SIGKILL)
                p.communicate()
                for pid, c in left.items():  # the held workload: the test's to end
                    if c != "bpftrace":
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                self.assertTrue(os.path.exists(f"/proc/{bt}"), "bpftrace died with its kit")
                r = kit(["--quick", "1", "--threads", "1", "--configs", "baseline"], res2)
                self.assertEqual(r.returncode, 0, r.stderr[-2000:])
                self.assertTrue(wait_for(lambda: not os.path.exists(f"/proc/{bt}")
                                         or open(f"/proc/{bt}/stat").read().split()[2] == "Z",
                                         30), "the killed kit's bpftrace runs on")
                said = [ln for ln in r.stderr.splitlines() if f"(pid {p.pid})" in ln]
                self.assertEqual(len(said), 1, r.stderr[-2000:])
                self.assertIn(f"its tracers still running (pids {bt})", said[0])
            finally:
                if p.poll() is None:
                    os.kill(p.pid, signal.SIGKILL)
                    p.communicate()
                for pid in left:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass

    @staticmethod
    def clean(procs, groups, t, paths, mount, cgs=None):
        """Whatever the test made and the kit left, each step on its own."""
        from tracers import tracefs
        steps = [lambda p=p: (p.kill(), p.wait()) for p in procs.values()]
        steps += [lambda d=d: cgroups.remove(d, cgroups.mount()) for d in (cgs or {}).values()]
        for g in groups.values():
            steps += [lambda g=g: tracefs.remove_instance(os.path.join(t, "instances", g),
                                                          f"{g}/{g}_single_trace"),
                      lambda g=g: tracefs.remove_uprobe(g, f"{g}_single_trace")]
        steps += [lambda d=d: os.unlink(d) if os.path.islink(d) else
                  os.path.isdir(d) and shutil.rmtree(d) for d in paths]
        steps.append(mount.release)
        for step in steps:
            try:
                step()
            except OSError:
                pass


if __name__ == "__main__":
    unittest.main()
