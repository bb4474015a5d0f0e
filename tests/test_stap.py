"""SystemTap (stp/, scripts/tracers/stap.py): the scripts elaborate, the
configurations run and count exactly on the runtime this machine has,
the runtime choice is said and forcing an impossible one is refused."""
import glob
import json
import os
import platform
import re
import tempfile
import time
import types
import unittest

from bodies import BODY_BUILD

from kit_test import (ROOT, STAPBPF_ABORT, StateTest, kit, need, need_build, need_root,
                      need_tracer, rows_of, run, unavailable)
import configs
import tracers
import workloads
from tracers.base import TracerError
from tracers.stap import STUB
from tracers.stap_counts import STAPBPF_PRINTF_EVENTS

STAP = tracers.get("stap")


class Scripts(StateTest):
    def test_p2(self):
        """Every stp/*.stp passes `stap -p2` against the built target, on
        each runtime this machine can describe, but the return probe on
        the bpf runtime (or against the kit's stub tree), which stap
        refuses as the kit's skip reason says."""
        need(self, "stap")
        need_build(self, "sdt")
        need_build(self, BODY_BUILD)
        scripts = sorted(glob.glob(os.path.join(ROOT, "stp", "*.stp")))
        self.assertEqual(len(scripts), len({c.script for c in configs.CONFIGS if c.script}))
        tree = f"/lib/modules/{platform.release()}/build"
        STAP.make_stub()
        # bpf: the kit's stub tree; module: the real tree where there is
        # one (pass 2 needs only the kernel's release and .config).
        runtimes = {"bpf": ["--runtime=bpf", "-r", STUB],
                    "module": ["-r", tree if os.path.exists(tree) else STUB]}
        for s in scripts:
            # a real program's script takes the program (@1) and its live line (@2)
            users = [c for c in configs.CONFIGS if c.script == os.path.relpath(s, ROOT)]
            real = next((c for c in users if c.workload and workloads.get(c.workload).program),
                        None)
            program = workloads.get(real.workload).program if real else ""
            # a probe by path (stp/mark-by-path.stp) takes the marker (@2) and
            # the live line (@3), and no -x
            args = ([] if not real else [program, real.marker, "probes live"]
                    if real.script == configs.STAP_BY_PATH else
                    [program, "probes live", "-x", str(os.getpid())])
            for name, flags in runtimes.items():
                with self.subTest(script=os.path.basename(s), runtime=name):
                    if program and not os.path.exists(program):
                        unavailable(self, f"{program} not found (the script's program)")
                    r = run(["stap", "-p2", *flags, os.path.relpath(s, ROOT), *args])
                    # stap needs the kernel's own build tree to know return
                    # probes are there; the bpf runtime never has them.
                    if s.endswith("function-return.stp") and (
                            name == "bpf" or not os.path.exists(tree)):
                        self.assertNotEqual(r.returncode, 0)
                        self.assertIn("process return probes not available", r.stderr)
                        continue
                    # (stap 4.8 and 5.1's bpf runtime have no print_ubacktrace:
                    # the body's row fails with these words, docs/bodies.md)
                    if s.endswith("body-ubacktrace.stp") and name == "bpf" and r.returncode:
                        self.assertIn("unresolved function print_ubacktrace", r.stderr)
                        continue
                    self.assertEqual(r.returncode, 0, r.stderr[-1500:])
                    self.assertIn(program or f"/build/benchmark-{users[0].build}", r.stdout)


# stapbpf 4.8 loses printf records under load and then sometimes aborts,
# at 2 threads and at 1 (docs/systemtap.md); such a run must be a failed
# row saying so, and the kit must clean up after it (the state check).


class Runs(StateTest):
    def test_every_configuration_counts_exactly(self):
        """ITER=100000, THREADS=1..2, two repetitions.  Every run that
        completed counted exactly threads x iterations events: `ok`, or
        `dropped` where stapbpf said it lost printf records (its count is
        still exact); a printf configuration on the bpf runtime may fail
        only with stapbpf's known abort; the count-only configuration
        never fails; alibi, on the module runtime, is counted exactly from
        the module's hit report (no handler runs to count it); what a
        runtime cannot do (alibi and return probes on bpf) is skipped,
        saying why."""
        need_tracer(self, "stap")
        # (the probe bodies, some of which a runtime cannot run, are test_bodies';
        # a user's script's row runs only with SCRIPT)
        names = [c.name for c in configs.CONFIGS if c.tracer == "stap" and not c.workload
                 and c.build != BODY_BUILD and c.mode != configs.SCRIPT_MODE]
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--quick", "1", "--threads", "1..2", "--iter", "100000", "--runs", "2",
                     "--configs", ",".join(names)], res)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            self.assertIn(f"SystemTap runs on the {STAP.runtime} runtime", r.stderr)
            rows, _ = rows_of(res)
        self.assertEqual(sorted({x["config"] for x in rows}), sorted(names))
        completed = {}
        for row in rows:
            with self.subTest(config=row["config"], threads=row["threads"], rep=row["rep"]):
                cfg = configs.BY_NAME[row["config"]]
                if STAP.skip_reason(cfg):
                    self.assertEqual(row["status"], "skipped")
                    self.assertEqual(row["reason"], STAP.skip_reason(cfg))
                    continue
                if cfg.mode == "alibi":  # the module runtime's hit report
                    self.assertTrue(STAP.reports(cfg), row)
                    self.assertEqual(row["status"], "ok", row["reason"])
                    self.assertEqual(int(row["events_seen"]), int(row["threads"]) * 100000)
                    completed[row["config"]] = completed.get(row["config"], 0) + 1
                    continue
                # QUICK's 100,000 a thread is past what stapbpf keeps up with
                # when every call prints: such a row is sized down to its limit
                # (tracers/stap.py max_iter), and says so
                if STAP.runtime == "bpf" and cfg.action == "record":
                    cap = STAPBPF_PRINTF_EVENTS // int(row["threads"])
                    self.assertEqual(int(row["iterations"]), cap, row["sized_by"])
                    self.assertIn(f"at most {STAPBPF_PRINTF_EVENTS:,} printed events a run",
                                  row["sized_by"])
                else:
                    self.assertEqual(int(row["iterations"]), 100000)
                # stapbpf's abort is a finding (docs/findings/), seen at 1 thread as
                # at 2: such a row must say so; any other failure is red.
                if (row["status"] == "failed" and STAP.runtime == "bpf"
                        and cfg.action == "record"):
                    self.assertIn(STAPBPF_ABORT, row["reason"])
                    continue
                self.assertEqual(row["runtime"], STAP.runtime)
                self.assertEqual(int(row["events_seen"]) + int(row["events_dropped"] or 0),
                                 int(row["threads"]) * int(row["iterations"]))
                if row["status"] == "dropped":
                    self.assertEqual(STAP.runtime, "bpf", row["reason"])
                    self.assertGreater(int(row["events_dropped"]), 0)
                    self.assertIn("printf records lost on the way to stapbpf", row["note"])
                else:
                    self.assertEqual(row["status"], "ok", row["reason"])
                completed[row["config"]] = completed.get(row["config"], 0) + 1
        self.assertEqual(completed.get("stap-mark-empty"), 4)
        # A printf pipeline that never completes is no finding but a broken
        # back-end: of the 16 printf runs some must have counted exactly,
        # unless stapbpf aborted in every one (each row said so, above: its
        # finding, seen under load), which leaves nothing to check: a skip.
        printf = [c.name for c in configs.CONFIGS if c.tracer == "stap" and c.action == "record"]
        if not sum(completed.get(n, 0) for n in printf) and STAP.runtime == "bpf":
            self.skipTest(f"stapbpf aborted in every printf run ({STAPBPF_ABORT}): nothing "
                          "counted to check")
        self.assertGreater(sum(completed.get(n, 0) for n in printf), 0, completed)


class Runtime(StateTest):
    def test_choice_is_said(self):
        need_root(self)
        need(self, "stap")
        mod = STAP.module_reason()
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--quick", "1", "--threads", "1", "--iter", "1000",
                     "--configs", "stap-mark-empty"], res)
        line = [ln for ln in r.stderr.splitlines() if "SystemTap runs on" in ln]
        self.assertEqual(len(line), 1, r.stderr)
        if mod:
            self.assertIn(f"bpf runtime: module runtime unavailable: {mod}", line[0])
        else:
            self.assertIn("module runtime", line[0])

    def test_forced_module(self):
        """STAP_RUNTIME=module: refused before anything runs where the module
        runtime cannot run, naming why; taken where it can."""
        need(self, "stap")
        mod = STAP.module_reason()
        with tempfile.TemporaryDirectory() as res:
            if mod:
                r = kit(["--configs", "stap-mark", "--stap-runtime", "module"], res)
                self.assertEqual(r.returncode, 2)
                self.assertIn(f"STAP_RUNTIME=module cannot run here: {mod}", r.stderr)
                self.assertEqual(os.listdir(res), [], "a results folder was left")
            else:
                need_root(self)
                r = kit(["--quick", "1", "--threads", "1", "--iter", "1000", "--configs",
                         "stap-mark-empty", "--stap-runtime", "module"], res)
                self.assertEqual(r.returncode, 0, r.stderr[-2000:])
                self.assertIn("SystemTap runs on the module runtime: forced", r.stderr)


class Wrapper(StateTest):
    def test_stap_bpf_runs_a_script_by_name(self):
        """scripts/stap-bpf stp/mark-empty.stp -c TARGET, as docs/systemtap.md shows:
        the script counts every call on the BPF runtime, and whatever the
        wrapper mounted is unmounted again (the state check)."""
        need_tracer(self, "stap")
        if STAP.bpf_reason():
            unavailable(self, f"the bpf runtime cannot run here: {STAP.bpf_reason()}")
        r = run([os.path.join(ROOT, "scripts", "stap-bpf"), "stp/mark-empty.stp", "-c",
                 "build/benchmark-sdt --threads 2 --iterations 20000 --quiet"])
        self.assertEqual(r.returncode, 0, r.stderr[-1500:])
        self.assertIn("events: 40000", r.stdout)


class Preflight(unittest.TestCase):
    """Before the module runtime is chosen, `stap -p4` must build a module
    for the kernel; here against a build tree that cannot compile (the
    kit's bpf stub tree: a .config and an empty Makefile)."""
    tier = "host"

    def test_a_tree_that_fails_to_compile(self):
        need(self, "stap")
        need_build(self, "sdt")
        STAP.make_stub()
        with tempfile.TemporaryDirectory() as tmp:
            cache = os.path.join(tmp, "preflight.json")
            pre = tracers.stap_preflight
            old, pre.PREFLIGHT_CACHE = pre.PREFLIGHT_CACHE, cache
            try:
                ver = tracers.stap_preflight.stap_version()
                why = tracers.stap_preflight.preflight(STUB, "9.9.9-test")
                # (make says make[1] where it runs under another make, as in make test)
                self.assertRegex(
                    why, re.escape(f"SystemTap {ver} cannot build modules for kernel 9.9.9-test: ")
                    + r"make(\[\d+\])?: \*\*\* No rule to make target 'modules'\.  Stop\.$")
                # Cached per release and version: the answer, not a second compile.
                with open(cache) as f:
                    self.assertIn(why, json.load(f).values())
                t0 = time.monotonic()
                self.assertEqual(tracers.stap_preflight.preflight(STUB, "9.9.9-test"), why)
                self.assertLess(time.monotonic() - t0, 0.2)
            finally:
                tracers.stap_preflight.PREFLIGHT_CACHE = old

    def test_known_errors_name_their_fix(self):
        """The two compiler errors make lab met (bookworm's 6.1 with
        SystemTap 4.8, trixie's 6.12 with 5.1), as the pre-flight quotes
        them, name SystemTap 5.2 and the upstream commit; any other error
        names nothing."""
        for error, commit in (
                ("stp_task_work.c:107:40: error: passing argument 2 of "
                 "'kallsyms_task_work_cancel' from incompatible pointer type", "a64dc4e2e"),
                ("uprobes-inode.c:50:17: error: 'uprobe_unregister' undeclared", "b1d109410")):
            with self.subTest(commit=commit):
                fix = tracers.stap_preflight.known_fix(error)
                self.assertTrue(fix.startswith(" (fixed in SystemTap 5.2, " + commit), fix)
        self.assertEqual(tracers.stap_preflight.known_fix("make: *** No rule to make target 'modules'"), "")

    def test_hit_report(self):
        """A hit report as SystemTap 5.6's module printed it in make lab's
        guest (the marker's probe resolved to a statement, its mark in the
        derivation) gives the hits; with -t, the handler's cycles too; a
        report without the probe's line is 0 events (an alibi probe that
        never fired); no report at all is an error, never a count."""
        alibi = ('process("/kit/build/benchmark-sdt").statement(0x3ec0), (stp/mark-empty.stp:'
                 '9:1), hits: 40000, from: process("/kit/build/benchmark-sdt").statement(0x3ec0)'
                 ' from: process("build/benchmark-sdt").mark("single_trace"), index: 0')
        timed = alibi.replace("hits: 40000,", "hits: 40000, cycles: 560min/850avg/21000max, "
                              "variance: 5,")
        end = "end, (stp/mark-empty.stp:17:1), hits: 1, from: end, index: 2"
        be = tracers.stap.Stap()
        with tempfile.TemporaryDirectory() as tmp:
            run = types.SimpleNamespace(log=os.path.join(tmp, "log"),
                                        cfg=configs.BY_NAME["stap-mark-alibi"],
                                        state=tracers.stap.State(flags="-DSTP_ALIBI"))
            for body, seen, note in ((alibi, 40000, "(-DSTP_ALIBI: no handler ran)"),
                                     (timed, 40000, "cycles a hit (stap -t): 560 min, 850 avg"),
                                     ("", 0, "no line for single_trace's probe")):
                with open(run.log, "w") as f:
                    f.write(f'{{"build":"sdt"}}\n{tracers.stap_counts.HIT_REPORT} \n'
                            f'{body}\n{end}\n')
                ev = tracers.stap_counts.hit_report(be, run)
                self.assertEqual(ev.seen, seen)
                self.assertIn(note, ev.note)
            with open(run.log, "w") as f:
                f.write("events: 40000\n")
            with self.assertRaisesRegex(TracerError, "no probe hit report"):
                tracers.stap_counts.hit_report(be, run)

    def test_the_runtime_choice_follows_it(self):
        """Where modules load but the pre-flight fails: auto falls back to
        bpf saying why in one line; STAP_RUNTIME=module is refused with
        the same line (the runner exits 2 on it, before anything is
        attached).  The pre-flight is the real one, on the stub tree."""
        need(self, "stap")
        need_root(self)
        STAP.make_stub()

        class NoModules(type(STAP)):
            def module_reason(self):
                return tracers.stap_preflight.preflight(STUB, "9.9.9-test", cache=False)
        why = NoModules().module_reason()
        b = NoModules()
        if b.bpf_reason():
            unavailable(self, f"the bpf runtime cannot run here: {b.bpf_reason()}")
        self.assertIsNone(b.pick(None))
        self.assertEqual((b.runtime, b.why), ("bpf", f"module runtime unavailable: {why}"))
        with self.assertRaises(tracers.TracerError) as e:
            NoModules().pick("module")
        self.assertEqual(str(e.exception), f"STAP_RUNTIME=module cannot run here: {why}")


if __name__ == "__main__":
    unittest.main()
