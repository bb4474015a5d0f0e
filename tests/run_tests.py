#!/usr/bin/env python3
"""run_tests.py: the kit's test suite (what `make test` runs).

    make test                  # everything
    make test TESTS=report     # the tests whose module or name holds 'report'

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


def main():
    pick = [a for a in sys.argv[1:] if a]
    suite = unittest.defaultTestLoader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)

    def flatten(s):
        for t in s:
            if isinstance(t, unittest.TestSuite):
                yield from flatten(t)
            else:
                yield t
    tests = [t for t in flatten(suite) if not pick or any(p in t.id() for p in pick)]
    broken = [t for t in tests if type(t).__name__ == "_FailedTest"]
    before = kit_test.tracing_state()
    runner = unittest.TextTestRunner(verbosity=2, stream=sys.stdout)
    result = runner.run(unittest.TestSuite(tests))
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    passed = result.testsRun - failed - skipped - len(result.expectedFailures)
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
    if broken:
        print(f"\n{len(broken)} test modules failed to import (counted as failed)")
    print(f"\n{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or not result.testsRun else 0


if __name__ == "__main__":
    sys.exit(main())
