#!/usr/bin/env python3
"""run_tests.py: the kit's test suite (what `make test` runs).

    make test                  # everything
    make test TESTS=render     # the tests whose module or name holds 'render'

Runs tests/test_*.py with unittest and ends with one line
`N passed, N failed, N skipped`.  A test that needs something this
machine lacks (root, a tracer) is skipped with the reason, and counted
as skipped, never as passed.  Exit status 1 if any test failed.
"""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kit_test  # noqa: E402


class Outcomes(unittest.TextTestResult):
    """One outcome per test, whatever its subtests did: failed if any
    part of it failed, else skipped if it (or a subtest) was skipped,
    else passed.  (unittest's own counts add a failure per subtest, so
    testsRun - failures - skips can go below zero.)"""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.outcome_of = {}  # test id: passed, skipped or failed

    def startTest(self, test):
        super().startTest(test)
        self.outcome_of.setdefault(test.id(), "passed")

    def mark(self, test, outcome):
        rank = {"passed": 0, "skipped": 1, "failed": 2}
        # a subtest's failure is reported against its parent test's id
        tid = getattr(test, "test_case", test).id()
        if rank[outcome] > rank[self.outcome_of.get(tid, "passed")]:
            self.outcome_of[tid] = outcome

    def addError(self, test, err):
        super().addError(test, err)
        self.mark(test, "failed")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.mark(test, "failed")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            self.mark(test, "failed")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.mark(test, "skipped")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.mark(test, "failed")

    def counts(self):
        o = list(self.outcome_of.values())
        return o.count("passed"), o.count("failed"), o.count("skipped")


def main(argv):
    # --dir D: the tests of another folder (the suite's test of this very line)
    where = HERE
    if "--dir" in argv:
        i = argv.index("--dir")
        where, argv = argv[i + 1], argv[:i] + argv[i + 2:]
    pick = [a for a in argv if a]
    suite = unittest.defaultTestLoader.discover(where, pattern="test_*.py", top_level_dir=where)

    def flatten(s):
        for t in s:
            if isinstance(t, unittest.TestSuite):
                yield from flatten(t)
            else:
                yield t
    tests = [t for t in flatten(suite) if not pick or any(p in t.id() for p in pick)]
    if os.geteuid() == 0:
        # The root tests attach, mount and start daemons: one kit at a time
        # on the machine (the runs they start go on under this lock).
        sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
        import host
        host.lock("tests")
    broken = [t for t in tests if type(t).__name__ == "_FailedTest"]
    before = kit_test.tracing_state()
    runner = unittest.TextTestRunner(verbosity=2, stream=sys.stdout, resultclass=Outcomes)
    result = runner.run(unittest.TestSuite(tests))
    passed, failed, skipped = result.counts()
    # The whole suite, too, must leave the machine's tracing state as it was.
    after = kit_test.tracing_state()
    if after != before:
        failed += 1
        print("\nFAIL: the suite left tracing state behind:")
        for k in sorted(set(before) | set(after)):
            if before.get(k) != after.get(k):
                print(f"  {k}: before {before.get(k)!r}, after {after.get(k)!r}")
    if result.skipped:
        print("\nskipped:")
        for t, why in result.skipped:
            print(f"  {t.id()}: {why}")
    if broken:  # (each is a test that errored, so already counted as failed)
        print(f"\n{len(broken)} test modules failed to import (counted as failed)")
    print(f"\n{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or not passed + skipped else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
