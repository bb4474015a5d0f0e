"""Counts that check themselves where the program keeps none (record.verdict,
measure/witness.py), and the parts of "any program" that need no tracer:
a tool's error line for a row's reason (tracers/base.tool_error), what
each tracer's grammar cannot name (path_problem), and perf's event named
after the run whatever perf probe printed.

    cd tests && python3 -m unittest test_witness

No root, no tracer: rows and tool outputs made by hand (the perf outputs
are perf 6.1's, copied from a run on libstdc++), the figures worked out
in the comments.
"""
import csv
import os
import subprocess
import tempfile
import time
import unittest
from unittest import mock

import kit_test  # noqa: F401  (puts scripts/ on the path)
from kit_test import unavailable
import record
import semaphores
import workloads
from elfinfo import Elf
from measure import witness
from record import Events
from tracers import base, bpftrace, ftrace, perf, stap, tracefs


def row(config, tracer, status, seen, calls, reason="", dropped=0, threads=1, rep=1):
    """A runs.csv row as read back (strings), with what the witness reads."""
    return {"config": config, "tracer": tracer, "status": status, "reason": reason,
            "events_seen": str(seen), "events_dropped": str(dropped), "calls": str(calls),
            "events_expected": "", "threads": str(threads), "rep": str(rep)}


def kernel(config, tracer, seen, calls, threads=1, rep=1):
    """A row that its kernel's hit counter witnessed in its run."""
    return row(config, tracer, "agreed", seen, calls,
               f"agreed with {record.SAME_RUN} (hits in uprobe_profile): {seen} events",
               threads=threads, rep=rep)


UNVERIFIED = "user keeps no count of throw, and no witness counted this run"


class SameRun(unittest.TestCase):
    """record.verdict where the program keeps no count (expected None) and
    the tracer's kernel counted the same traps (Events.also)."""

    def test_equal_to_the_kernels_hits_is_agreed(self):
        st, why = record.verdict(True, None, Events(200000, 0, also=("hits", 200000)))
        self.assertEqual(st, "agreed")
        self.assertEqual(why, f"agreed with {record.SAME_RUN} (hits): 200000 events")

    def test_one_short_of_the_hits_is_a_mismatch(self):
        st, why = record.verdict(True, None, Events(199999, 0, also=("hits", 200000)))
        self.assertEqual(st, "mismatch")
        self.assertIn("199999 events recorded, 200000 hits", why)

    def test_a_loss_that_adds_up_is_dropped(self):
        # 199,990 seen + 10 lost = the kernel's 200,000
        st, why = record.verdict(True, None, Events(199990, 10, also=("hits", 200000)))
        self.assertEqual(st, "dropped")
        self.assertIn("lost 10 events (saw 199990 of the 200000", why)

    def test_no_witness_stays_unverified(self):
        st, _ = record.verdict(True, None, Events(200000, 0))
        self.assertEqual(st, "unverified")

    def test_agreed_is_lossless_and_measured(self):
        self.assertIn("agreed", record.LOSSLESS)
        self.assertIn("agreed", record.MEASURED)


class AcrossRuns(unittest.TestCase):
    """witness.judge: bpftrace's and stap's counts (no kernel counter of
    theirs) against the runs the kernel witnessed, of other tracers."""

    def test_a_fixed_workload_witnesses_the_others(self):
        # ftrace and perf: 100,000 throws a run of the command in each of
        # their runs (2 runs of 2 copies: 4 calls, 400,000 events; 1 call,
        # 100,000); bpftrace saw 300,000 in 3 calls: 100,000 x 3, agreed;
        # stap saw 299,999 in 3: one short, a mismatch.
        rows = [kernel("user-ftrace", "ftrace", 400000, 4),
                kernel("user-perf", "perf", 100000, 1),
                row("user-bpftrace", "bpftrace", "unverified", 300000, 3, UNVERIFIED),
                row("user-stap", "stap", "unverified", 299999, 3, UNVERIFIED),
                row("user-untraced", "none", "ok", "", 3)]
        got = witness.judge(rows)
        self.assertEqual(sorted(got), [2, 3])
        st, why, expected = got[2]
        self.assertEqual((st, expected), ("agreed", 300000))
        self.assertEqual(why, "agreed with ftrace, perf (100000 events a run in each of their 2 "
                              "runs, each equal to the kernel's hit counter): 300000 events")
        st, why, expected = got[3]
        self.assertEqual((st, expected), ("mismatch", 300000))
        self.assertTrue(why.startswith("the tracer saw 299999 events, where ftrace, perf"), why)
        self.assertTrue(why.endswith("says 300000"), why)

    def test_a_workload_that_varies_witnesses_nothing(self):
        # lwlock__acquire: 131 and 128.5 a transaction in the kernel's runs
        rows = [kernel("postgres-ftrace-lwlock", "ftrace", 131000, 1000),
                kernel("postgres-perf-lwlock", "perf", 257000, 2000),
                row("postgres-bpftrace-lwlock", "bpftrace", "unverified", 131000, 1000,
                    "postgres keeps no count")]
        got = witness.judge(rows)
        st, why, expected = got[2]
        self.assertEqual((st, expected), ("unverified", None))
        self.assertIn("the workload's count varies from run to run (128.5 to 131 events a "
                      "transaction in the 2 runs of ftrace, perf", why)

    def test_a_tracer_is_not_its_own_witness(self):
        # ftrace at 2 threads before 6.12 has no kernel witness; ftrace's
        # other runs are the same tracer, not an independent count
        rows = [kernel("user-ftrace", "ftrace", 1000, 1),
                row("user-ftrace", "ftrace", "unverified", 2000, 2, UNVERIFIED)]
        self.assertEqual(witness.judge(rows), {})

    def test_a_warm_up_witnesses_nothing_and_threads_stay_apart(self):
        # a warm-up (rep 0) saw 100,000 a run, the 2-thread run 110 a
        # call: neither witnesses bpftrace's 1-thread row
        rows = [kernel("user-perf", "perf", 100000, 1, rep=0),
                kernel("user-perf", "perf", 220, 2, threads=2),
                row("user-bpftrace", "bpftrace", "unverified", 300000, 3, UNVERIFIED)]
        self.assertEqual(witness.judge(rows), {})
        rows.append(kernel("user-ftrace", "ftrace", 200000, 2))
        self.assertEqual(witness.judge(rows)[2][0], "agreed")

    def test_no_kernel_witness_changes_nothing(self):
        rows = [row("user-bpftrace", "bpftrace", "unverified", 300000, 3, UNVERIFIED),
                row("user-stap", "stap", "unverified", 300000, 3, UNVERIFIED)]
        self.assertEqual(witness.judge(rows), {})

    def test_a_count_that_is_no_whole_multiple_is_a_mismatch(self):
        # 3 events in 2 calls is 1.5 a call; 5 calls would be 7.5 events
        rows = [kernel("user-perf", "perf", 3, 2),
                row("user-bpftrace", "bpftrace", "unverified", 7, 5, UNVERIFIED)]
        st, why, _ = witness.judge(rows)[1]
        self.assertEqual(st, "mismatch")
        self.assertIn("says 7.5", why)

    def test_a_judge_that_fails_leaves_the_folder_whole_and_open(self):
        def broken(_rows):
            raise ValueError("a bug")
        with tempfile.TemporaryDirectory() as res:
            f = record.Folder(res, name="x")
            f.write(row("user-bpftrace", "bpftrace", "unverified", 200, 2, UNVERIFIED))
            with self.assertRaises(ValueError):
                f.rejudge(broken)
            f.write(row("user-stap", "stap", "failed", "", "", "stap failed"))  # still open
            f.close()
            with open(os.path.join(f.dir, "runs.csv"), newline="") as fh:
                back = list(csv.DictReader(fh))
            left = sorted(os.listdir(f.dir))
        self.assertEqual([r["status"] for r in back], ["unverified", "failed"])
        self.assertEqual(left, ["logs", "meta.json", "runs.csv"])

    def test_the_folder_is_rewritten_whole(self):
        with tempfile.TemporaryDirectory() as res:
            f = record.Folder(res, name="x")
            for r in (kernel("user-perf", "perf", 100, 1),
                      row("user-bpftrace", "bpftrace", "unverified", 200, 2, UNVERIFIED)):
                f.write(r)
            self.assertEqual(f.rejudge(witness.judge), 1)
            f.write(row("user-stap", "stap", "failed", "", "", "stap failed"))  # still appends
            f.close()
            with open(os.path.join(f.dir, "runs.csv"), newline="") as fh:
                back = list(csv.DictReader(fh))
            left = sorted(os.listdir(f.dir))
        self.assertEqual(left, ["logs", "meta.json", "runs.csv"])  # no temporary copy
        self.assertEqual([r["status"] for r in back], ["agreed", "agreed", "failed"])
        self.assertEqual(back[1]["events_expected"], "200")


def witness_run(config, tracer, seen, calls, threads=1, others=0):
    """A tracer's witness run (record.WITNESS_RUN: rep 0): its count equal
    to the kernel's in its run (libbpf's: its program's runs), or, where
    OTHERS of other processes' hits were among them, not witnessed."""
    r = row(config, tracer, "agreed", seen, calls, f"agreed with {record.SAME_RUN} (traps of "
            f"the kit's own uprobe event on the same site): {seen} events", threads=threads,
            rep=0)
    if others:
        r.update(status="unverified", reason=f"{seen + others} runs hold {others} others too")
    return dict(r, sized_by=f"{record.WITNESS_RUN} (ITER)", events_others=str(others))


class WitnessRun(unittest.TestCase):
    """witness.judge with a tracer's witness run (libbpf --witness): the
    only witness of user-libbpf's rows where no ftrace or perf row ran
    (make run CONFIGS=user-libbpf,user-untraced)."""

    def timed(self, *seen, calls=1):
        return [dict(row("user-libbpf", "libbpf", "unverified", s, calls, UNVERIFIED, rep=k),
                     sized_by="ITER", events_others="0") for k, s in enumerate(seen, start=1)]

    def test_its_count_witnesses_its_own_configurations_timed_runs(self):
        # the witness run: 100,000 throws in 1 run of the command, the
        # kernel's count; the timed runs 100,000 each: agreed, 100,000
        rows = [*self.timed(100000, 100000, 100000),
                witness_run("user-libbpf", "libbpf", 100000, 1)]
        got = witness.judge(rows)
        self.assertEqual(sorted(got), [0, 1, 2])
        for st, why, expected in got.values():
            self.assertEqual((st, expected), ("agreed", 100000))
            self.assertEqual(why, "agreed with libbpf's witness run (100000 events a run in its "
                                  "one run, equal to the kernel's hit counter): 100000 events")

    def test_counts_that_vary_among_the_timed_runs_stay_unverified(self):
        # one witness run cannot say the workload holds: 99,999 in one
        # timed run leaves all three unverified, saying from what to what
        rows = [*self.timed(100000, 99999, 100000),
                witness_run("user-libbpf", "libbpf", 100000, 1)]
        got = witness.judge(rows)
        for st, why, expected in got.values():
            self.assertEqual((st, expected), ("unverified", None))
            self.assertIn("user-libbpf's own count varies from run to run (99999 to 100000 "
                          "events a run in its 3 timed runs), so no witness run can witness "
                          "them", why)

    def test_one_timed_run_beside_a_witness_run_stays_unverified(self):
        rows = [*self.timed(100000), witness_run("user-libbpf", "libbpf", 100000, 1)]
        st, why, expected = witness.judge(rows)[0]
        self.assertEqual((st, expected), ("unverified", None))
        self.assertIn("user-libbpf ran 1 timed run here, and a witness run beside one run cannot "
                      "say that the workload's count holds from run to run", why)
        # beside another tracer's kernel-witnessed runs, the rule is theirs
        rows.append(kernel("user-ftrace", "ftrace", 100000, 1))
        self.assertEqual(witness.judge(rows)[0][0], "agreed")

    def test_timed_runs_that_agree_but_not_with_it_are_mismatches(self):
        rows = [*self.timed(99999, 99999), witness_run("user-libbpf", "libbpf", 100000, 1)]
        got = witness.judge(rows)
        self.assertEqual([got[i][0] for i in (0, 1)], ["mismatch", "mismatch"])
        self.assertIn("the tracer saw 99999 events, where libbpf's witness run", got[0][1])

    def test_a_witness_run_with_others_hits_witnesses_nothing(self):
        rows = [*self.timed(100000), witness_run("user-libbpf", "libbpf", 100000, 1, others=5)]
        self.assertEqual(witness.judge(rows), {})

    def test_a_warm_up_is_no_witness_run_and_threads_stay_apart(self):
        warm_up = dict(witness_run("user-libbpf", "libbpf", 100000, 1), sized_by="warm-up")
        self.assertEqual(witness.judge([*self.timed(100000), warm_up]), {})
        two = witness_run("user-libbpf", "libbpf", 200000, 2, threads=2)
        self.assertEqual(witness.judge([*self.timed(100000), two]), {})

    def test_it_witnesses_another_tracers_runs_too(self):
        rows = [row("user-bpftrace", "bpftrace", "unverified", 300000, 3, UNVERIFIED),
                row("user-bpftrace", "bpftrace", "unverified", 200000, 2, UNVERIFIED, rep=2),
                witness_run("user-libbpf", "libbpf", 100000, 1)]
        st, why, expected = witness.judge(rows)[0]
        self.assertEqual((st, expected), ("agreed", 300000))
        self.assertIn("agreed with libbpf's witness run (100000 events a run in its one run", why)

    def test_it_is_not_a_warm_up_to_the_report(self):
        self.assertTrue(record.is_witness_run(witness_run("user-libbpf", "libbpf", 1, 1)))
        self.assertTrue(record.is_witness_run(
            {"rep": 0, "sized_by": f"{record.WITNESS_RUN} (ITER)"}))  # (as record.load reads it)
        self.assertFalse(record.is_witness_run({"rep": 1, "sized_by": record.WITNESS_RUN}))
        self.assertFalse(record.is_witness_run({"rep": "0", "sized_by": "warm-up"}))


class NeverFires(unittest.TestCase):
    """Zero is not agreement: a real program's marker that its tracer and
    its witness both counted 0 times is `never-fires` (a finding), never
    `ok` or `agreed`, and never priced per event (the Ruby 3.1 run of
    issue 58: every row `agreed` at 0 events, -2,557,377 ns/event)."""

    def test_zero_hits_and_zero_events_is_never_fires(self):
        st, why = record.verdict(True, None, Events(0, 0, also=("hits", 0)), real=True)
        self.assertEqual(st, "never-fires")
        self.assertEqual(why, "0 events: the marker never fired (nor did "
                              f"{record.SAME_RUN} (hits) count any)")
        self.assertIn(st, record.FINDINGS)
        self.assertNotIn(st, record.LOSSLESS)
        # the program's own count of 0 is no agreement either
        self.assertEqual(record.verdict(True, 0, Events(0), real=True)[0], "never-fires")
        # the kit's loop with expect 'none' (no real program): 0 is right
        self.assertEqual(record.verdict(True, 0, Events(0))[0], "ok")
        # one event is agreement; 0 against 1 hit is a mismatch
        self.assertEqual(record.verdict(True, None, Events(1, 0, also=("hits", 1)),
                                        real=True)[0], "agreed")
        self.assertEqual(record.verdict(True, None, Events(0, 0, also=("hits", 1)),
                                        real=True)[0], "mismatch")

    def test_across_runs_zero_is_never_fires_and_one_is_a_mismatch(self):
        zero = f"0 events: the marker never fired (nor did {record.SAME_RUN} (hits) count any)"
        rows = [row("user-ftrace", "ftrace", "never-fires", 0, 3, zero),
                row("user-bpftrace", "bpftrace", "unverified", 0, 3, UNVERIFIED),
                row("user-stap", "stap", "unverified", 1, 3, UNVERIFIED)]
        with mock.patch.object(witness.workloads.get("user"), "why_silent", lambda: ""):
            got = witness.judge(rows)
        self.assertEqual(got[1][0], "never-fires")
        self.assertIn("nor did ftrace (0 events a run in its one run, equal to the kernel's hit "
                      "counter", got[1][1])
        self.assertEqual(got[2][0], "mismatch")

    def test_no_price_per_event(self):
        import predict
        from render import summary
        o = {"mean_ns": -2557377.0, "lo_ns": None, "hi_ns": None, "pct": -3.2}
        x = {"overhead": o, "check": {"seen": 0, "verdict": "NEVER FIRES"}, "calls": 1000,
             "threads": 1}
        got = predict.per_event(x, witness.workloads.get("user"))
        self.assertIsNone(got["mean_ns"])
        self.assertEqual(summary.f_overhead(got), "-")

    def test_the_cells_verdict(self):
        from stats.analysis import event_check
        r = dict(row("user-perf", "perf", "never-fires", 0, 3, "0 events: why"),
                 events_expected="0")
        self.assertEqual(event_check([r, r])["verdict"], "NEVER FIRES")
        self.assertEqual(event_check([r, r])["why"], "0 events: why")
        fired = dict(r, status="agreed", events_seen="3")
        self.assertEqual(event_check([r, fired])["verdict"], "unverified")


class OtherProcesses(unittest.TestCase):
    """Issue 58, part 4: a probe by path traps in every process that maps
    the file; the workload's events are counted apart from other
    processes' (cgroups.py), only the workload's are judged and priced, and
    the kernel's hit counter, which counts both, witnesses nothing where
    others fired.  The tool outputs are perf 6.1's and bpftrace 0.17's
    from a run here (build/throw 300 in the cgroup, 500 throws outside)."""

    def test_others_make_the_hit_counter_no_witness(self):
        # 2,000 of the workload's, 530 of others', 2,600 hits (70 others'
        # before perf's enable): the counter bounds the count, no more
        st, why = record.verdict(True, None, Events(2000, 0, also=("hits", 2600), others=530,
                                                    apart=True), real=True)
        self.assertEqual(st, "unverified")
        self.assertEqual(why, "2600 hits hold 530 hits from other processes too, so the "
                              "kernel's counter cannot witness the workload's 2000 events")
        # more than the counter saw: 2,000 + 700 > 2,600
        st, why = record.verdict(True, None, Events(2000, 0, also=("hits", 2600), others=700))
        self.assertEqual(st, "mismatch")
        self.assertIn("2000 of the workload's events and 700 hits from other processes: more "
                      "than the 2600 hits", why)
        # none of others': the counter witnesses as before
        st, why = record.verdict(True, None, Events(2000, 0, also=("hits", 2000), others=0,
                                                    apart=True))
        self.assertEqual((st, why), ("agreed", f"agreed with {record.SAME_RUN} (hits): 2000 "
                                               "events"))
        # the workload's marker silent while others' fired: no never-fires
        st, _ = record.verdict(True, None, Events(0, 0, also=("hits", 40), others=40), real=True)
        self.assertEqual(st, "unverified")

    def test_perf_stat_by_cgroup(self):
        text = ("# started on Sat Dec  5 20:35:09 2026\n\n"
                "300,,kittestg:kittest,kittest,6195768,100.00,,\n"
                "800,,kittestg:kittest,,5002753095,100.00,,\n")
        self.assertEqual(perf.stat_counts(text, "kittestg:kittest", True),
                         {"kittest": 300, None: 800})
        # without -G the fourth field is the running time, not a cgroup
        self.assertEqual(perf.stat_counts("800,,g:e,5002753095,100.00,,\n", "g:e"), {None: 800})
        self.assertEqual(perf.stat_counts(text, "kittestg:other", True), {})

    def test_bpftrace_by_cgroup(self):
        self.assertEqual(bpftrace.BY_CGROUP, "@events[cgroup] = count();")
        prog = bpftrace.Bpftrace.program(mock.Mock(
            build="/lib/libstdc++.so.6", cfg=mock.Mock(marker="throw", action="count"),
            workload=mock.Mock(provider="libstdcxx"), group=mock.Mock(id=25)))
        self.assertIn('usdt:"/lib/libstdc++.so.6":libstdcxx:throw { @events[cgroup] = count(); }',
                      prog)

    def test_a_count_that_holds_others_is_not_agreed(self):
        # ftrace and bpftrace counted 1,000 a run apart (others: 400 at
        # most); stap counts every process: 4,800 in 2 runs, 2,800 more
        rows = [dict(row("user-ftrace", "ftrace", "unverified", 2000, 2, "hits hold ..."),
                     events_others="400"),
                dict(row("user-bpftrace", "bpftrace", "unverified", 2000, 2, UNVERIFIED),
                     events_others="200"),
                dict(row("user-stap", "stap", "unverified", 4800, 2, UNVERIFIED),
                     events_others="")]
        got = witness.judge(rows)
        self.assertEqual(list(got), [2])
        st, why, expected = got[2]
        self.assertEqual((st, expected), ("unverified", 2000))
        self.assertIn("stap counts every process mapping it, and other processes fired the "
                      "marker during this family's runs (up to 400 hits from other processes in "
                      "a run that counted them apart): 4800 events, 2800 more than the "
                      "workload's own 2000 by bpftrace, ftrace", why)
        # fewer than the workload's own: the tracer's miscount
        rows[2]["events_seen"] = "1999"
        self.assertEqual(witness.judge(rows)[2][0], "mismatch")
        # priced on the workload's own, not on the 4,800
        import predict
        from render import summary
        from stats.analysis import event_check
        st, why, expected = got[2]
        rows[2].update(status=st, reason=why, events_expected=str(expected), events_seen="4800")
        check = event_check(rows[2:])
        self.assertEqual((check["seen"], check.get("workload")), (4800, 2000))
        o = {"mean_ns": 4800.0, "lo_ns": 2400.0, "hi_ns": 7200.0}
        x = {"overhead": o, "check": check, "calls": 2, "threads": 1}
        self.assertEqual(predict.per_event(x, witness.workloads.get("user"))["mean_ns"], 4.8)
        # run by run: an agreed run (expected = seen) beside an unwitnessed
        # one (no expected) is not taken for one that held others'
        a = dict(rows[0], status="agreed", events_expected="2000")
        self.assertNotIn("workload", event_check([a, rows[1]]))
        # a cell's others, summed over its runs (the terminal's words)
        self.assertEqual(event_check(rows[:2])["others"], 600)
        self.assertNotIn("others", event_check(rows[2:]))
        self.assertEqual(summary.others({"check": {"others": 600}}),
                         "; 600 hits from other processes in its runs, not the workload's "
                         "(not priced)")


class Bystander(unittest.TestCase):
    """Issue 67: a bystander fires the workload's marker through the same
    library; three tracers that each counted the workload's events apart
    (ftrace by task, bpftrace and perf by cgroup) and agree exactly witness
    one another, so each is `agreed` and priced; SystemTap, which counts
    every process, is bounded by them; all of them 0 while others fire is
    `never fires`, said so; and a count not told apart (no cgroup here)
    is never agreed with the hit counter, which holds the others' too."""

    def rows(self, per_run=100000, others=("2000", "1800", "2181")):
        return [dict(row(f"user-{t}", t, "unverified", per_run * 2, 2, UNVERIFIED),
                     events_others=o) for t, o in zip(("ftrace", "bpftrace", "perf"), others)] + [
            dict(row("user-stap", "stap", "unverified", per_run * 2 + 4181, 2, UNVERIFIED),
                 events_others="")]

    def test_three_apart_witness_one_another(self):
        got = witness.judge(self.rows())
        for i, others in ((0, "bpftrace, perf"), (1, "ftrace, perf"), (2, "bpftrace, ftrace")):
            st, why, expected = got.get(i, ("not judged", "", None))
            self.assertEqual((st, expected), ("agreed", 200000), why)
            self.assertEqual(why, f"agreed with {others} (100000 events a run in each of their "
                             "2 runs, each counting the workload's apart from other processes', "
                             "which fired the marker too (up to 2181 hits from other processes "
                             "in a run)): 200000 events")
        self.assertEqual(got[3][:1], ("unverified",))  # (SystemTap: bounded, not agreed)
        self.assertEqual(got[3][2], 200000)

    def test_two_apart_are_not_enough(self):
        rows = self.rows()[:2] + self.rows()[3:]
        got = witness.judge(rows)
        self.assertNotIn(0, got)
        self.assertNotIn(1, got)

    def test_one_that_disagrees_is_a_mismatch(self):
        rows = self.rows()
        rows[1]["events_seen"] = "199999"
        got = witness.judge(rows)
        self.assertEqual(got[1][0], "mismatch")
        self.assertIn("unverified", got[0][0])  # (its witnesses disagree: nothing known)

    def test_never_fires_with_others_firing(self):
        got = witness.judge(self.rows(per_run=0))
        for i in range(3):
            st, why, _ = got.get(i, ("not judged", "", None))
            self.assertEqual(st, "never-fires")
            self.assertTrue(why.startswith(record.NEVER_HEAD), why)
            self.assertIn("which fired the marker too", why)

    def test_no_cgroup_no_hit_counter_witness(self):
        """Kit.judge_run: by path, a count not told apart (no cgroup could
        be made) is unverified, the reason saying why, even where the hit
        counter equals it."""
        from measure.kit import Kit
        cfg = mock.Mock(marker="throw", expect="events", overwrite=False)
        w = mock.Mock(by_path=True, counted="nothing")
        w.name = "user"
        run = mock.Mock(cfg=cfg, workload=w, bystanders=[], audit=None, raised={},
                        group_why="no cgroup2 mounted here", rate="max", threads=1,
                        iterations=2, build="/lib/libstdc++.so.6")
        tracer = mock.Mock(attaches=True)
        tracer.name = "ftrace"
        for apart, want in ((False, "unverified"), (True, "agreed")):
            with self.subTest(apart=apart):
                r = {"calls": 2, "corrupted": 0, "events_expected": None}
                ev = Events(2000, 0, also=("hits", 2000), others=0 if apart else None,
                            apart=apart)
                Kit.judge_run(r, tracer, run, {"per_thread": []}, ev)
                self.assertEqual(r["status"], want, r["reason"])
                if not apart:
                    self.assertIn("may hold other processes' events: no cgroup2 mounted here",
                                  r["reason"])


class SemaphoreAudit(unittest.TestCase):
    """The loader's module that raises a user's marker's semaphore for
    SystemTap's row (src/semaphore_audit.c, workloads.Command.exec_env)
    reads its list strictly: an empty or zero address, a word that is no
    number, or a list past its 16 raises nothing, and the program runs as
    ever (an empty field once became address 0: a write to the ELF header,
    and every process of the command died of SIGSEGV)."""

    def test_a_bad_list_raises_nothing(self):
        prog = os.path.join(kit_test.ROOT, "build", "benchmark-sdt-guarded")
        if not os.path.exists(semaphores.SEMAPHORE_AUDIT) or not os.path.exists(prog):
            unavailable(self, "the build is not made (make)")
        st = os.stat(prog)
        me = f"{st.st_dev}:{st.st_ino}"
        for bad in (f"{me}:", f"{me}::10", f"{me}:0", f"{me}:zz", f"{me}:10:", "x", "",
                    ":".join([me, *["10"] * 17])):
            with self.subTest(KIT_SEMAPHORES=bad):
                r = subprocess.run([prog, "--threads", "1", "--iterations", "10", "--quiet"],
                                   env=dict(os.environ, LD_AUDIT=semaphores.SEMAPHORE_AUDIT,
                                            KIT_SEMAPHORES=bad), capture_output=True)
                self.assertEqual(r.returncode, 0, r.stderr[-500:])

    def test_only_a_writable_segment_is_written(self):
        """An address in the code (single_trace's own) or in read-only
        data is not written (it would be SIGSEGV in every process of the
        command); the semaphore beside it still is (the marker fires)."""
        prog = os.path.join(kit_test.ROOT, "build", "benchmark-sdt-guarded")
        if not os.path.exists(semaphores.SEMAPHORE_AUDIT) or not os.path.exists(prog):
            unavailable(self, "the build is not made (make)")
        elf = Elf(prog)
        st = os.stat(prog)
        sem, = [n.semaphore for n in elf.sdt_notes() if n.name == "single_trace"]
        code = elf.symbol("single_trace")
        for addrs in ([code], [code, sem]):
            with self.subTest(addrs=[hex(a) for a in addrs]):
                r = subprocess.run([prog, "--threads", "1", "--iterations", "10", "--quiet"],
                                   env=dict(os.environ, LD_AUDIT=semaphores.SEMAPHORE_AUDIT,
                                            KIT_SEMAPHORES=":".join(
                                                [str(st.st_dev), str(st.st_ino),
                                                 *(f"{a:x}" for a in addrs)])),
                                   capture_output=True)
                self.assertEqual(r.returncode, 0, r.stderr[-500:])

    def test_the_list_the_kit_gives(self):
        w = workloads.WORKLOADS["user"]
        prog = os.path.join(kit_test.ROOT, "build", "benchmark-sdt-guarded")
        if not os.path.exists(semaphores.SEMAPHORE_AUDIT) or not os.path.exists(prog):
            unavailable(self, "the build is not made (make)")
        sem, = [n.semaphore for n in Elf(prog).sdt_notes() if n.name == "single_trace"]
        st = os.stat(prog)
        import dataclasses
        w = dataclasses.replace(w, program=prog, provider="benchmark")
        env = w.exec_env(["single_trace"], True)
        self.assertEqual(env, {"LD_AUDIT": semaphores.SEMAPHORE_AUDIT,
                               "KIT_SEMAPHORES": f"{st.st_dev}:{st.st_ino}:{sem:x}"})
        # a row that raises nothing loads it alike: TARGET named, no address
        self.assertEqual(w.exec_env(["single_trace"], False)["KIT_SEMAPHORES"],
                         f"{st.st_dev}:{st.st_ino}")
        # another provider's marker of that name is not this one
        self.assertEqual(dataclasses.replace(w, provider="other").exec_env(["single_trace"],
                                                                           True), {})


class Silence(unittest.TestCase):
    """silence.py: why a marker never fired, from one more run of
    the command whose processes' maps the kit looks at, by device and
    inode: TARGET mapped (the code never ran), another copy mapped (named),
    neither."""
    def setUp(self):
        import silence
        self.silence = silence
        silence._SAID.clear()

    def test_mapped_other_copy_and_neither(self):
        s = self.silence
        libc = next(ln.split()[-1] for ln in open("/proc/self/maps") if "/libc.so" in ln
                    or "/libc-" in ln)
        # a command of a millisecond: looked at after its exec (run again
        # where a look caught only this kit's copy before it: CI's busy run)
        self.assertRegex(s.why(libc, ["true"], "/"), r"\(\d+ runs?\): 1 of its 1 processes "
                         r"mapped .*libc.* \(true\), yet")
        got = s.why(libc, ["sh", "-c", "sleep 0.2"], "/")
        self.assertRegex(got, r"processes mapped .*libc.* \((sh|sleep).*\), yet the marker's "
                              r"code never ran")
        with tempfile.TemporaryDirectory() as d:
            copy = os.path.join(d, os.path.basename(libc))
            with open(libc, "rb") as a, open(copy, "wb") as b:
                b.write(a.read())
            got = s.why(copy, ["sh", "-c", "sleep 0.2"], "/")
            self.assertIn(f"mapped {copy}, but another copy: {libc} (name that one as TARGET)",
                          got)
            self.assertNotIn("yet", got)
        got = s.why("/bin/sh", ["sleep", "0.2"], "/")  # sleep maps no shell
        self.assertRegex(got, r"none of its 1 processes \(sleep\) mapped /bin/sh$")
        self.assertIn("it did not start (no-such-command-here: No such file or directory)",
                      s.why("/bin/sh", ["no-such-command-here"], "/"))

    def test_what_the_command_left_goes_with_it(self):
        """The command exits at once and leaves `sleep 30 &` in its group:
        killed by its group, before the command is reaped (so its pid and
        group id are nobody else's meanwhile)."""
        with tempfile.TemporaryDirectory() as d:
            mark = os.path.join(d, "pid")
            self.silence.why("/bin/sh", ["sh", "-c", f"sleep 30 & echo $! > {mark}"], "/")
            pid = int(open(mark).read())
        self.assertTrue(gone(pid), pid)

    def test_an_error_is_words(self):
        self.assertIn("it could not look (/no/such/lib.so: No such file or directory)",
                      self.silence.why("/no/such/lib.so", ["true"], "/"))

    def test_it_leaves_nothing_running(self):
        s = self.silence
        s.LIMIT_S, limit = 0.5, s.LIMIT_S
        try:
            with tempfile.TemporaryDirectory() as d:
                mark = os.path.join(d, "pid")
                s.why("/bin/sh", ["sh", "-c", f"sleep 30 & echo $! > {mark}; wait"], "/")
                pid = int(open(mark).read())
        finally:
            s.LIMIT_S = limit
        self.assertTrue(gone(pid), pid)


def gone(pid, wait_s=10):
    """PID has ended (gone, or a zombie) within WAIT_S: a SIGKILLed process
    dies when it is next scheduled, later on a busy machine."""
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


class ToolError(unittest.TestCase):
    """A failed row's reason is the tool's own error line: never a caret
    line, a blank line, a command echo or what the tool prints every run."""

    def test_bpftrace_syntax_error_not_its_caret(self):
        # bpftrace 0.17 on an unquoted libstdc++ path (the run)
        out = ("$ bpftrace -e ...\n"
               "stdin:1:48-96: ERROR: syntax error, unexpected ++\n"
               "BEGIN { } usdt:/lib/x86_64-linux-gnu/libstdc++.so.6:libstdcxx:throw { }\n"
               "                                               ~~~~~~~~~~~~\n\n")
        self.assertEqual(base.tool_error(out),
                         "stdin:1:48-96: ERROR: syntax error, unexpected ++")

    def test_noise_is_never_the_reason(self):
        out = ("ERROR: Unknown error -1: couldn't set RLIMIT_MEMLOCK for bpftrace.\n"
               "ERROR: Error attaching probe: usdt:x:p:m\n")
        self.assertEqual(base.tool_error(out, bpftrace.BACKEND.log_noise),
                         "ERROR: Error attaching probe: usdt:x:p:m")

    def test_perf_semantic_error(self):
        out = ("Semantic error :%sdt_libstdcxx is not supported.\n\n"
               " Usage: perf probe [<options>] 'PROBEDEF' ['PROBEDEF' ...]\n")
        self.assertEqual(base.tool_error(out), "Semantic error :%sdt_libstdcxx is not supported.")

    def test_perfs_bare_error_takes_its_words_below(self):
        out = "Error:\nThe sys_perf_event_open() syscall returned with 22 (Invalid argument)\n"
        self.assertEqual(base.tool_error(out), "Error: The sys_perf_event_open() syscall "
                                               "returned with 22 (Invalid argument)")

    def test_no_error_line_gives_the_last_line_with_words(self):
        self.assertEqual(base.tool_error("first\nlast words\n   ^^^\n\n"), "last words")
        self.assertEqual(base.tool_error("\n~~~\n"), "")


class Paths(unittest.TestCase):
    """Any character the kernel takes in a file name, unless the tracer's
    grammar truly cannot hold it; the refusal names the tracer and the
    character."""
    PATH = "/opt/we+ird@1.2-x/lib:v2/libstdc++.so.6"

    def test_plus_at_dot_dash_digits_colon_are_fine_everywhere(self):
        for t in (ftrace.BACKEND, perf.BACKEND, bpftrace.BACKEND, stap.BACKEND):
            self.assertIsNone(t.path_problem(self.PATH), t.name)

    def test_a_space_is_refused_by_uprobe_events_only(self):
        p = "/opt/my lib/libstdc++.so.6"
        self.assertIn("ftrace cannot name", ftrace.BACKEND.path_problem(p))
        self.assertIn("uprobe_events splits its line at white space and holds no ' '",
                      perf.BACKEND.path_problem(p))
        self.assertIsNone(bpftrace.BACKEND.path_problem(p))
        self.assertIsNone(stap.BACKEND.path_problem(p))

    def test_a_quote_is_refused_by_bpftrace(self):
        self.assertIn("bpftrace cannot name", bpftrace.BACKEND.path_problem('/opt/a"b/lib.so'))
        self.assertIsNone(ftrace.BACKEND.path_problem('/opt/a"b/lib.so'))

    def test_a_line_end_is_refused_by_all(self):
        for t in (ftrace.BACKEND, perf.BACKEND, bpftrace.BACKEND, stap.BACKEND):
            self.assertIn(repr("\n"), t.path_problem("/opt/a\nb/lib.so"), t.name)

    def test_bpftrace_quotes_the_path(self):
        run = mock.Mock(build=self.PATH, tag="kit1_1")
        run.workload.provider = "libstdcxx"
        run.cfg.marker, run.cfg.action = "throw", "count"
        self.assertIn(f'usdt:"{self.PATH}":libstdcxx:throw {{', bpftrace.BACKEND.program(run))


class Sites(unittest.TestCase):
    """ftrace and perf put one uprobe on one site: a real program's marker
    with several sites (Debian's postgres: sort__start at 4) is refused
    for them, saying so, where bpftrace and stap count every site."""

    def test_a_marker_with_several_sites(self):
        import dataclasses
        import configs
        import workloads
        pg = workloads.get("postgres")
        if not os.path.exists(pg.program):
            unavailable(self, f"{pg.program} not installed (Debian package {pg.package})")
        n = sum((x.provider, x.name) == ("postgresql", "sort__start")
                for x in Elf(pg.program).sdt_notes())
        self.assertGreater(n, 1)
        cfg = dataclasses.replace(configs.BY_NAME["postgres-ftrace-query"], marker="sort__start")
        self.assertEqual(ftrace.BACKEND.skip_reason(cfg),
                         f"postgresql:sort__start has {n} sites in {pg.program}, and ftrace puts "
                         "one uprobe on one site a run: the kit does not yet make one event a "
                         "site")
        self.assertIn("and perf puts one uprobe", perf.BACKEND.skip_reason(
            dataclasses.replace(cfg, tracer="perf")))
        self.assertIsNone(ftrace.BACKEND.skip_reason(configs.BY_NAME["postgres-ftrace-query"]))


# perf 6.1's output when it adds an event; its column aligned with one
# space, or with two where the event name is shorter (the parser
# wanted one): the kit reads neither.
PERF_ADDED = ("Added new event:\n  {ev}{pad}(on 0xa90a1 in /usr/lib/x86_64-linux-gnu/"
              "libstdc++.so.6.0.30)\n\nYou can now use it in all perf tools, such as:\n\n"
              "\tperf record -e {ev} -aR sleep 1\n\n")


class PerfNames(unittest.TestCase):
    """perf's event is the run's own, TAG:TAG_MARKER, named before perf
    probe runs; detach removes exactly it, whatever perf printed."""

    def attach(self, output, status=0, sem=None, suffix=""):
        """The kit's perf attach and detach, perf probe and uprobe_events
        played here: perf probe -a makes its event (named + SUFFIX, as
        perf names a return probe), then says OUTPUT and exits STATUS."""
        defined = set()
        said = []

        def sh(cmd, **_kw):
            said.append(cmd)
            if "-a" in cmd:
                defined.add(cmd[cmd.index("-a") + 1].split("=")[0] + suffix)
                return status, output
            if "-d" in cmd:  # perf probe -d GROUP:*
                group = cmd[cmd.index("-d") + 1].split(":")[0]
                defined.difference_update({d for d in defined if d.startswith(group + ":")})
            return (0, "") if _kw.get("code") else ""

        def group_events(group):
            return sorted(d.split(":")[1] for d in defined if d.startswith(group + ":"))
        run = mock.Mock(tag="kit2e81_6", build="/lib/x86_64-linux-gnu/libstdc++.so.6",
                        scratch="/nonexistent", log=os.devnull)
        run.cfg.probe, run.cfg.marker, run.cfg.attach = "marker-semaphore", "throw", "before"
        run.state = perf.State()
        with mock.patch.object(perf.Perf, "sh", staticmethod(sh)), \
                mock.patch.object(tracefs, "site", lambda _r, **_k: (0xa90a1, sem, "v=%di:u32")), \
                mock.patch.object(tracefs, "add_uprobe",
                                  lambda g, e, *_a: defined.add(f"{g}:{e}") or "p:..."), \
                mock.patch.object(tracefs, "group_events", group_events), \
                mock.patch.object(tracefs, "remove_uprobe",
                                  lambda g, e: defined.discard(f"{g}:{e}")), \
                mock.patch.object(os, "makedirs"), \
                mock.patch("builtins.open", mock.mock_open()):
            try:
                perf.BACKEND.attach(run)
                raised = None
            except base.TracerError as e:
                raised = str(e)
            named = run.state.event
            perf.BACKEND.detach(run)
        return named, raised, said, defined

    def test_one_space_or_two_the_event_is_the_runs(self):
        for pad in (" ", "  ", "        "):
            with self.subTest(pad=repr(pad)):
                out = PERF_ADDED.format(ev="kit2e81_6:kit2e81_6_throw", pad=pad)
                named, raised, said, left = self.attach(out)
                self.assertIsNone(raised)
                self.assertEqual(named, "kit2e81_6:kit2e81_6_throw")
                self.assertIn(["perf", "--buildid-dir", perf.BUILDID_DIR, "probe", "-x",
                               "/lib/x86_64-linux-gnu/libstdc++.so.6", "-a",
                               "kit2e81_6:kit2e81_6_throw=0xa90a1 v=%di:u32"], said)
                self.assertEqual(left, set())

    def test_an_event_made_by_a_perf_probe_that_failed_is_removed(self):
        named, raised, _said, left = self.attach("garbage\n", status=1)
        self.assertIn("perf probe failed (exit 1): garbage", raised)
        self.assertIsNone(named)
        self.assertEqual(left, set())

    def test_the_event_is_read_from_uprobe_events_not_from_perf(self):
        # perf 6.1 names a return probe EVENT__return, whatever it was told
        named, raised, said, left = self.attach("", suffix="__return")
        self.assertIsNone(raised)
        self.assertEqual(named, "kit2e81_6:kit2e81_6_throw__return")
        self.assertIn(["perf", "--buildid-dir", perf.BUILDID_DIR, "probe", "-d", "kit2e81_6:*"],
                      said)
        self.assertEqual(left, set())

    def test_a_marker_with_a_semaphore_keeps_its_reference_counter(self):
        # perf probe writes the reference counter only under its default
        # name: the kit writes perf's line under its own, and removes it
        named, raised, said, left = self.attach("", sem=0x1c5973)
        self.assertIsNone(raised)
        self.assertEqual(named, "kit2e81_6:kit2e81_6_throw")
        self.assertFalse([c for c in said if "-a" in c], said)  # no perf probe -a
        self.assertEqual(left, set())

    def test_never_perfs_default_name(self):
        run = mock.Mock(tag="kit1_3")
        run.cfg.probe, run.cfg.marker = "marker", "function__entry"
        self.assertEqual(perf.Perf.names(run), ("kit1_3", "kit1_3_function__entry"))
        run.cfg.probe = "return"
        self.assertEqual(perf.Perf.names(run), ("kit1_3", "kit1_3_single_trace"))


if __name__ == "__main__":
    unittest.main()
