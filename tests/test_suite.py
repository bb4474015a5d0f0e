"""The suite's own closing line (tests/run_tests.py): one outcome per
test, however many of its subtests failed or were skipped."""
import os
import tempfile
import unittest

from kit_test import ROOT, run

SAMPLE = '''import unittest


class Sample(unittest.TestCase):
    def test_three_failing_subtests(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertEqual(i, -1)

    def test_a_skipped_subtest(self):
        with self.subTest(part=1):
            self.skipTest("not here")

    def test_passes(self):
        self.assertTrue(True)

    def test_skipped(self):
        self.skipTest("not here either")
'''


class ClosingLine(unittest.TestCase):
    def test_subtests_count_once(self):
        """3 failing subtests are 1 failed test; a skipped subtest is one
        skipped test (expected counts: 1 passed, 1 failed, 2 skipped)."""
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "test_sample.py"), "w") as f:
                f.write(SAMPLE)
            r = run(["python3", os.path.join(ROOT, "tests", "run_tests.py"), "--dir", d],
                    env=dict(os.environ, CI="false"))
        last = r.stdout.strip().splitlines()[-1]
        self.assertEqual(last, "1 passed, 1 failed, 2 skipped", r.stdout[-1500:])
        self.assertEqual(r.returncode, 1)


if __name__ == "__main__":
    unittest.main()
