"""The row's verdict (scripts/record/verdicts.py): what a tracer saw -> a
status, for every case, written out beside the test."""
import os
import unittest

import record
import tracers
from tracers import perf
from record import Events

# (tracer, expected, Events, overwrite) -> status, reason holds
CASES = [
    ("none", None, Events(None), False, "ok", ""),
    ("stap", None, Events(None, 0, "alibi: unverifiable"), False, "unverified", "alibi"),
    ("ftrace", 1000, Events(1000), False, "ok", ""),
    ("ftrace", 0, Events(0), False, "ok", ""),  # the -noref probe must see none
    ("ftrace", 1000, Events(999), False, "mismatch", "saw 999 events, expected 1000"),
    ("ftrace", 0, Events(5), False, "mismatch", "saw 5 events, expected 0"),
    # A tracer that says it lost events is never ok; `dropped` only where
    # what it saw and lost add up to every event, else `mismatch`, every
    # number said (perf-record-sdt here at THREADS=1..8: 130,445 + 25,556 =
    # 156,001 of 156,000; lttng-disk: 2,747,139 + 652,863 = 3,400,002).
    ("stap", 1000, Events(993, 7), False, "dropped", "lost 7 events (saw 993 of 1000)"),
    ("bpftrace", 1000, Events(990, 10), False, "dropped", "lost 10 events"),
    ("stap", 1000, Events(1000, 7), False, "mismatch", "saw 1000 events and said it lost 7: "
     "1007 of 1000, more than were made"),
    ("perf", 156000, Events(130445, 25556), False, "mismatch", "130445 events and said it "
     "lost 25556: 156001 of 156000, more than were made"),
    ("lttng", 3400000, Events(2747139, 652863), False, "mismatch", "3400002 of 3400000"),
    ("bpftrace", 1000, Events(980, 10), False, "mismatch", "990 of 1000, so some went "
     "unaccounted"),
    ("lttng", 1000, Events(400, 10, wrapped=True), True, "mismatch", "410 of 1000, so some "
     "went unaccounted (its flight recorder wrapped too)"),
    # A flight recorder: short only where its buffer wrapped, never 0.
    ("lttng", 1000, Events(400, 0, wrapped=True), True, "overwritten", "newest 400 of 1000"),
    ("lttng", 1000, Events(400, 0, wrapped=False), True, "mismatch", "never wrapped"),
    ("lttng", 1000, Events(0, 0, wrapped=True), True, "mismatch", "saw 0 events"),
    ("lttng", 1000, Events(400, 0, wrapped=None), True, "mismatch", "saw 400 events"),
    ("lttng", 1000, Events(1000, 0, wrapped=True), True, "ok", ""),
    # Not a flight recorder: a wrap is no excuse.
    ("perf", 1000, Events(400, 0, wrapped=True), False, "mismatch", "saw 400 events"),
]


class Verdict(unittest.TestCase):
    def test_cases(self):
        for tracer, expected, ev, overwrite, status, reason in CASES:
            with self.subTest(tracer=tracer, expected=expected, ev=ev, overwrite=overwrite):
                got = record.verdict(tracers.get(tracer).attaches, expected, ev, overwrite)
                self.assertEqual(got[0], status)
                self.assertIn(reason, got[1])

    def test_corrupted_comes_first(self):
        """A run whose red-zone canary changed is `corrupted`, whatever its
        tracer counted (even an exact count, even with drops)."""
        for ev in (Events(1000), Events(990, 10), Events(0)):
            with self.subTest(ev=ev):
                st, why = record.verdict(True, 1000, ev, corrupted=999, calls=1000)
                self.assertEqual(st, "corrupted")
                self.assertIn("999 of 1000 calls", why)
        self.assertEqual(record.verdict(True, 1000, Events(1000), corrupted=0, calls=1000)[0],
                         "ok")

    def test_every_status_documented(self):
        self.assertEqual(set(record.MEASURED) | {"failed", "skipped"}, set(record.STATUSES))

    def test_expected_events(self):
        def expected(tracer, expect):
            return record.expected_events(tracers.get(tracer).attaches, expect, 20)
        self.assertIsNone(expected("none", "all"))
        self.assertEqual(expected("ftrace", "all"), 20)
        self.assertEqual(expected("ftrace", "none"), 0)
        self.assertIsNone(expected("stap", "unverifiable"))


class Folder(unittest.TestCase):
    def test_odd_characters_kept(self):
        """A reason with a line break, a form feed or U+2028 (a tool's
        message) is written and read back whole, its row kept."""
        import tempfile
        import configs
        reason = "stap said:\nline two\x0cpage\u2028separator"
        with tempfile.TemporaryDirectory() as tmp:
            f = record.Folder(tmp, name="odd")
            f.write(record.failed_row(configs.BY_NAME["ftrace-sdt"], 1, reason, rep=1))
            f.write(record.skipped_row(configs.BY_NAME["baseline"], 2, "fine"))
            f.close()
            rows, _, warnings = record.load(f.dir)
        self.assertEqual(warnings, [])
        self.assertEqual([r["reason"] for r in rows], [reason, "fine"])



class Kinds(unittest.TestCase):
    """A folder's kind (record.kind_of), the one rule the report goes by:
    its meta.json's stamp, written by every writer; a folder written
    before the stamp by the file only its kind writes."""

    def folder(self, tmp, name, files):
        d = os.path.join(tmp, name)
        for f, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, f)), exist_ok=True)
            with open(os.path.join(d, f), "w") as out:
                out.write(text)
        return d

    def test_the_stamp_and_the_files(self):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            cases = {  # name: (files, its kind)
                "stamped": ({"meta.json": '{"kind": "fleet"}', "runs.csv": ""}, "fleet"),
                "atlas": ({"atlas.json": "{}", "host/runs.csv": ""}, "atlas"),
                "fleet": ({"fleet.json": "{}"}, "fleet"),
                "runs": ({"runs.csv": "", "meta.json": '{"format_version": 13}'}, "runs"),
                "killed-early": ({"meta.json": "{"}, "runs"),
                "lab": ({"sid/meta.json": '{"lab": {}}', "sid/runs.csv": ""}, "lab"),
                "lifecycle": ({"meta.json": '{"kind": "lifecycle"}'}, "lifecycle"),
                "nothing": ({"notes.txt": ""}, None)}
            for name, (files, kind) in cases.items():
                with self.subTest(folder=name):
                    self.assertEqual(record.kind_of(self.folder(tmp, name, files)), kind)

    def test_every_writer_stamps(self):
        """A runs folder's meta.json (record.Folder) and a top folder's
        (record.stamp: a lab's, a fleet's, an atlas's) say their kind."""
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            f = record.Folder(tmp, name="a-run")
            f.write_meta()
            f.close()
            self.assertEqual(record.stamp_of(f.dir), record.runs.KIND)
            for m in (record.lab, record.fleet, record.atlas):
                d = os.path.join(tmp, m.KIND)
                record.stamp(d, m.KIND)
                self.assertEqual(record.stamp_of(d), m.KIND)


class PerfLost(unittest.TestCase):
    """perf record's lost samples, from `perf report --stats` as perf 6.1
    printed it here (tests/fixtures/perf/): 2 runs of benchmark-sdt at 2
    threads x 100000 calls, one whose buffer filled (2 PERF_RECORD_LOST
    records, 693 and 457 samples: 198850 seen + 1150 lost = 200000), one
    that lost none."""
    HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "perf")

    def stats(self, name):
        with open(os.path.join(self.HERE, name)) as f:
            return f.read()

    def test_samples_not_records(self):
        lost = perf.Perf.lost_samples(self.stats("stats-lost.txt"), "sdt_benchmark:single_trace")
        self.assertEqual(lost, 1150)  # not the 2 records of "LOST events: 2"
        self.assertEqual(198850 + lost, 2 * 100000)

    def test_none_lost(self):
        self.assertEqual(perf.Perf.lost_samples(self.stats("stats-none.txt"),
                                                "sdt_benchmark:single_trace"), 0)

    def test_duplicates_counted_once(self):
        """perf script's lines (tests/fixtures/perf/script-duplicates.txt,
        made by hand as perf 6.1 prints them): 6 records, of which 2 repeat
        another's thread, timestamp and argument: 4 events.  The same
        timestamp on another thread, or another argument, is another event."""
        with open(os.path.join(self.HERE, "script-duplicates.txt")) as f:
            self.assertEqual(perf.Perf.distinct(f.read()), 4)

    def test_records_without_a_count(self):
        """A perf whose --stats lists LOST records but not the event's lost
        samples: the run fails saying so, never a guess."""
        text = self.stats("stats-lost.txt").split("sdt_benchmark:single_trace stats:")[0]
        with self.assertRaises(tracers.TracerError):
            perf.Perf.lost_samples(text, "sdt_benchmark:single_trace")


if __name__ == "__main__":
    unittest.main()
