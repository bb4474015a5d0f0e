"""The row's verdict (scripts/record.py): what a tracer saw -> a status,
for every case, written out beside the test."""
import unittest

import record
import tracers
from record import Events

# (tracer, expected, Events, overwrite) -> status, reason holds
CASES = [
    ("none", None, Events(None), False, "ok", ""),
    ("stap", None, Events(None, 0, "alibi: unverifiable"), False, "unverified", "alibi"),
    ("ftrace", 1000, Events(1000), False, "ok", ""),
    ("ftrace", 0, Events(0), False, "ok", ""),  # the -noref probe must see none
    ("ftrace", 1000, Events(999), False, "mismatch", "saw 999 events, expected 1000"),
    ("ftrace", 0, Events(5), False, "mismatch", "saw 5 events, expected 0"),
    # A tracer that says it lost events is never ok, even with an exact count.
    ("stap", 1000, Events(1000, 7), False, "dropped", "lost 7 events (saw 1000 of 1000)"),
    ("bpftrace", 1000, Events(990, 10), False, "dropped", "lost 10 events"),
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


if __name__ == "__main__":
    unittest.main()
