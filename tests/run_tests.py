#!/usr/bin/env python3
"""run_tests.py: the kit's test suite (what `make test` runs).

    make test                  # every tier (installing what the suite needs first)
    make check                 # the check tier: no root, no tracer, no guest
    make test-host             # the host tier: root, the real tracers and programs
    make test-guests           # the guests tier: what boots QEMU
    make test TESTS=render     # the tests whose module or name holds 'render'

Runs tests/test_*.py with unittest, tier by tier (kit_test.TIERS: a test
class names its own), and ends with each tier's time, the ten slowest
tests and one line `N passed, N failed, N skipped`.  A test that needs something this
machine lacks (root, a tracer) is skipped with the reason, and counted
as skipped, never as passed.  Exit status 1 if any test failed.
"""
import argparse
import os
import sys
import time
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
        self.seconds = {}  # test id (or a class's fixtures): wall seconds
        self.last = time.monotonic()  # the end of the test before
        self.tier_seconds = {}  # tier: wall seconds, its class fixtures in them

    def startTest(self, test):
        # what ran since the test before ended: a class's setUpClass, the
        # last class's tearDownClass (its fixtures, timed as one entry)
        now = time.monotonic()
        if now - self.last > 0.5:
            key = f"{type(test).__module__}.{type(test).__name__} (class fixtures)"
            self.seconds[key] = self.seconds.get(key, 0.0) + now - self.last
        self.started = now
        super().startTest(test)
        self.outcome_of.setdefault(test.id(), "passed")

    def stopTest(self, test):
        super().stopTest(test)
        now = time.monotonic()
        self.seconds[test.id()] = now - self.started
        tier = kit_test.tier_of(test)
        self.tier_seconds[tier] = self.tier_seconds.get(tier, 0.0) + now - self.last
        self.last = now

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


def options(argv):
    p = argparse.ArgumentParser(prog="run_tests.py", description=__doc__.split("\n\n")[0])
    p.add_argument("pick", nargs="*", help="only the tests whose id holds one of these")
    p.add_argument("--tier", default=",".join(kit_test.TIERS), metavar="TIERS",
                   help=f"comma-separated, of {', '.join(kit_test.TIERS)} (default all)")
    p.add_argument("--times", metavar="FILE", help="every test's seconds, tab-separated")
    p.add_argument("--dir", default=HERE, help="the tests of another folder (the suite's "
                   "test of its own closing line)")
    a = p.parse_args(argv)
    a.tiers = a.tier.split(",")
    for t in a.tiers:
        if t not in kit_test.TIERS:
            p.error(f"TIER '{t}' is not allowed: want a comma-separated list of "
                    f"{', '.join(kit_test.TIERS)}")
    a.pick = [x for x in a.pick if x]
    return a


def main(argv):
    a = options(argv)
    suite = unittest.defaultTestLoader.discover(a.dir, pattern="test_*.py", top_level_dir=a.dir)

    def flatten(s):
        for t in s:
            if isinstance(t, unittest.TestSuite):
                yield from flatten(t)
            else:
                yield t
    order = list(kit_test.TIERS)
    # tier by tier, in TIERS' order; within a tier, as discovered
    # (a module that failed to import is in every tier: a broken test_lab.py
    # must not leave make test-guests green)
    tests = sorted((t for t in flatten(suite) if (kit_test.tier_of(t) in a.tiers
                                                  or type(t).__name__ == "_FailedTest")
                    and (not a.pick or any(p in t.id() for p in a.pick))),
                   key=lambda t: order.index(kit_test.tier_of(t)))
    if os.geteuid() == 0 and a.dir == HERE and any(kit_test.tier_of(t) != "check"
                                                   for t in tests):
        # The root tests attach, mount and start daemons: one kit at a time
        # on the machine (the runs they start go on under this lock).  (A
        # sample folder, --dir, is the suite's test of itself: it attaches
        # nothing, and waits for no other kit.)
        sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
        import kitlock
        import params
        kitlock.lock("tests", params.from_env("LOCK_WAIT_S"))
    broken = [t for t in tests if type(t).__name__ == "_FailedTest"]
    before = kit_test.tracing_state()
    runner = unittest.TextTestRunner(verbosity=2, stream=sys.stdout, resultclass=Outcomes)
    result = runner.run(unittest.TestSuite(tests))
    # (a subtest's skip is its test's: named by that test's class, counted once)
    skips = {(getattr(t, "test_case", t).id(), why): type(getattr(t, "test_case", t))
             for t, why in result.skipped}
    passed, failed, skipped = result.counts()
    # The whole suite, too, must leave the machine's tracing state as it was.
    after = kit_test.tracing_state()
    if after != before:
        failed += 1
        print("\nFAIL: the suite left tracing state behind:")
        for k in sorted(set(before) | set(after)):
            if before.get(k) != after.get(k):
                print(f"  {k}: before {before.get(k)!r}, after {after.get(k)!r}")
    if skips:
        # one line per reason, with the classes it held back
        why = {}
        for (tid, reason), cls in skips.items():
            why.setdefault(reason, []).append(f"{cls.__module__}.{cls.__name__}")
        print("\nskipped, by reason:")
        for reason, classes in sorted(why.items(), key=lambda kv: -len(kv[1])):
            print(f"  {len(classes):3d} {reason} ({', '.join(sorted(set(classes)))})")
    if a.times:
        with open(a.times, "w") as f:
            f.writelines(f"{sec:.2f}\t{result.outcome_of.get(tid, 'fixtures')}\t{tid}\n"
                         for tid, sec in sorted(result.seconds.items(), key=lambda kv: -kv[1]))
    print("\ntiers:")
    for t in order:
        if t in result.tier_seconds:
            n = sum(1 for x in tests if kit_test.tier_of(x) == t)
            print(f"  {t:7s} {result.tier_seconds[t]:7.1f} s  {n:3d} tests  "
                  f"({kit_test.TIERS[t]})")
    print("\nslowest:")
    for tid, sec in sorted(((t, s) for t, s in result.seconds.items() if t in result.outcome_of),
                           key=lambda kv: -kv[1])[:10]:
        print(f"  {sec:7.1f} s  {tid}")
    if broken:  # (each is a test that errored, so already counted as failed)
        print(f"\n{len(broken)} test modules failed to import (counted as failed)")
    print(f"\n{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or not passed + skipped else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
