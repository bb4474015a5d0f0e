#!/usr/bin/env python3
"""run_tests.py: the kit's test suite (what `make test` runs).

    make test                  # every tier (installing what the suite needs first)
    make check                 # the check tier: no root, no tracer, no guest
    make test-host             # the host tier: root, the real tracers and programs
    make test-guests           # the guests tier: what boots QEMU
    make test-userland         # the userland tier: the kit in a trixie root (not in make test)
    make test TESTS=render     # the tests whose module or name holds 'render'

Runs tests/test_*.py with unittest, tier by tier (kit_test.TIERS: a test
class names its own), and ends with each tier's time, the ten slowest
tests and one line `N passed, N failed, N skipped`.  With the guests
tier and another in the run, the guests tier runs in a process of its
own beside them (its output follows theirs), its scheduler group at nice
19 (the host tier's runs take a CPU first; a guest counts instructions,
which a busy CPU does not change), and, as root, it first builds the root
file systems its guests boot (tests/prebuild.py, niced too): so `make
test` takes about the longer of the host and check tiers and the
guests', not their sum.  A test that needs something this
machine lacks (root, a tracer) is skipped with the reason, and counted
as skipped, never as passed.  A test module that cannot be imported is
a failed test in every run, whatever its tiers and picks.  Exit status 1
if any test failed.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
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

    before = None  # what to do before a test (main sets it): True where it took time
    part_skips, part_count = [], 0  # the guests tier's, where it ran beside (merge)

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
        if self.before and self.before(test):  # (root file systems waited for: no test's time)
            self.last = time.monotonic()
        self.started = time.monotonic()
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
    p.add_argument("--tier", default=",".join(kit_test.DEFAULT_TIERS), metavar="TIERS",
                   help=f"comma-separated, of {', '.join(kit_test.TIERS)} (default "
                   f"{', '.join(kit_test.DEFAULT_TIERS)})")
    p.add_argument("--times", metavar="FILE", help="every test's seconds, tab-separated")
    p.add_argument("--dir", default=HERE, help="the tests of another folder (the suite's "
                   "test of its own closing line)")
    p.add_argument("--part", metavar="FILE", help="a part of another run's (the guests tier "
                   "beside the others): the outcomes to FILE (JSON), no closing lines")
    a = p.parse_args(argv)
    a.tiers = a.tier.split(",")
    for t in a.tiers:
        if t not in kit_test.TIERS:
            p.error(f"TIER '{t}' is not allowed: want a comma-separated list of "
                    f"{', '.join(kit_test.TIERS)}")
    a.pick = [x for x in a.pick if x]
    return a


PREBUILD = os.path.join(HERE, "prebuild.py")


def start(cmd, out_path=None):
    """CMD, one of the runner's helpers: in a session of its own (finish
    stops it), no test's descendant (kit_test.HELPERS), its output to a
    file (OUT_PATH where given: one to follow meanwhile); (its process,
    that file)."""
    out = (open(out_path, "w+", errors="replace") if out_path
           else tempfile.TemporaryFile("w+", errors="replace"))
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    kit_test.HELPERS.add(p.pid)
    return p, out


class Prebuilds:
    """The root file systems the guests tier's TESTS boot
    (kit_test.suites_of), built by tests/prebuild.py, niced, while the
    host tier runs: the suite most of them boot (sid) at once, waited for
    before the first guest test; the others then, in a second prebuild
    beside that test and the ones after it (those that boot sid alone go
    first: order), waited for before the first test that boots one of
    them.  While one builds, its suites are kit_test.PREBUILDING
    (mmdebstrap's mounts there are no lab's)."""

    stopping = False  # (a stop asked: stop_part)

    def __init__(self, tests):
        booted = [n for t in tests for n in kit_test.suites_of(t)]
        names = sorted(dict.fromkeys(booted), key=lambda n: -booted.count(n))  # most booted first
        self.first = set(names[:1])
        self.steps = [x for x in (names[:1], names[1:]) if x]
        self.ready, self.said, self.running = set(), [], None
        self.next()

    def order(self, tests):
        """TESTS, those that boot the first suite alone first (stable)."""
        return sorted(tests, key=lambda t: not set(kit_test.suites_of(t)) <= self.first)

    def next(self):
        if self.running:  # (ended, or to be waited for)
            p = self.running[0][0]
            while p.poll() is None:  # (in slices: a stop asked meanwhile ends the wait)
                if self.stopping:
                    raise KeyboardInterrupt
                time.sleep(0.2)
            self.said.append(finish(self.running[0]))
            self.ready |= set(self.running[1])
            kit_test.PREBUILDING.clear()
            self.running = None
        if self.steps and not self.stopping:
            names = self.steps.pop(0)
            try:
                self.running = (start(["nice", "-n", "19", sys.executable, PREBUILD, *names]),
                                names)
                kit_test.PREBUILDING.update(names)
            except OSError as e:  # (left to the labs, which say why they cannot build)
                self.said.append(f"prebuild: {', '.join(names)}: not started ({e})\n")
                self.ready |= set(names)

    def before(self, test):
        """What TEST boots built first; True where it waited for it."""
        waited = False
        while self.running and (self.running[0][0].poll() is not None
                                or not set(kit_test.suites_of(test)) <= self.ready):
            if self.running[0][0].poll() is None:
                print("\n(waiting for the guests' root file systems: tests/prebuild.py)",
                      flush=True)
                waited = True
            self.next()
        return waited

    def stop(self):
        """Its output; what still builds stopped (SIGTERM: its clean-up)."""
        if self.running:
            self.said.append(finish(self.running[0], stop=True))
            self.running = None
            kit_test.PREBUILDING.clear()
        return "".join(self.said)


def start_aside(a, part):
    """The guests tier in a process of its own (this script, --part PART,
    its output in PART's folder to follow meanwhile), beside the other
    tiers of this run."""
    return start(["nice", "-n", "19", sys.executable, os.path.abspath(__file__), "--tier",
                  "guests", "--dir", a.dir, "--part", part, *a.pick],
                 os.path.join(os.path.dirname(part), "guests.out"))


PR_SET_PDEATHSIG = 1
PARENT = os.getppid()  # (the runner, for a part)


def as_part():
    """The guests tier's process, beside the others: its CPU share the one
    they leave (prebuild.keep_low), and stopped by a SIGTERM, its
    runner's, or its runner's end (PR_SET_PDEATHSIG) as by a Ctrl-C."""
    from prebuild import keep_low  # (a broken lab/ fails the guests tier alone)
    keep_low("the guests tier")
    signal.signal(signal.SIGTERM, stop_part)
    unittest.installHandler()  # (its first SIGINT: stop after this test)
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != PARENT:  # (the runner gone before the line above)
        stop_part(signal.SIGTERM, None)


def stop_part(signum, frame):
    """SIGTERM (the runner's, once: a part runs in a session of its own, out
    of a Ctrl-C's reach): a Ctrl-C to its whole process group, as a
    terminal's would be, so that a lab running stops as it does at one
    (and leaves nothing), and this part then stops after that test; a
    wait for a root file system ends at once, and the prebuild is stopped
    by the runner's clean-up."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    Prebuilds.stopping = True
    os.killpg(os.getpgrp(), signal.SIGINT)


def finish(started, stop=False):
    """Waits for a process start_* started (SIGTERM first where STOP: each
    is in a session of its own, so a Ctrl-C at the terminal reaches it this
    way alone, once) and gives back its output."""
    p, out = started
    if stop and p.poll() is None:
        p.terminate()
    p.wait()
    kit_test.HELPERS.discard(p.pid)
    out.seek(0)
    return out.read()


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
    # (a module that failed to import is in every tier and every pick: a
    # broken test_lab.py must not leave make test-guests green, nor a pick
    # that names a class of it, whose id it no longer holds)
    tests = sorted((t for t in flatten(suite) if type(t).__name__ == "_FailedTest"
                    or (kit_test.tier_of(t) in a.tiers
                        and (not a.pick or any(p in t.id() for p in a.pick)))),
                   key=lambda t: order.index(kit_test.tier_of(t)))
    root = os.geteuid() == 0 and a.dir == HERE  # (a sample folder --dir attaches nothing)
    root_run = root and not a.part
    guests = [t for t in tests if kit_test.tier_of(t) == "guests"]
    # the guests tier beside the others: where both are in this run
    aside = bool(not a.part and guests and any(kit_test.tier_of(t) != "guests" for t in tests
                                                if type(t).__name__ != "_FailedTest"))
    asked = set()  # the guests tier's tests, where it runs beside: each must come back
    if aside:
        asked = {t.id() for t in guests if type(t).__name__ != "_FailedTest"}
        tests = [t for t in tests if kit_test.tier_of(t) != "guests"
                 or type(t).__name__ == "_FailedTest"]
        guests = []
    elif a.part and guests:  # (the others' runs go first: instructions do not mind)
        as_part()
    if root_run and (aside or any(kit_test.tier_of(t) != "check" for t in tests)):
        # The root tests attach, mount and start daemons: one kit at a time
        # on the machine (the runs they start go on under this lock, the
        # guests tier's beside them too).  (A sample folder, --dir, is the
        # suite's test of itself: it attaches nothing, and waits for no
        # other kit.)
        sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
        import kitlock
        import params
        kitlock.lock("tests", params.from_env("LOCK_WAIT_S"))
    broken = [t for t in tests if type(t).__name__ == "_FailedTest"]
    before = None if a.part else kit_test.tracing_state()  # (a part: the whole run's)
    runner = unittest.TextTestRunner(verbosity=2, stream=sys.stdout, resultclass=Outcomes)
    started, prebuilds = {}, None
    part = tempfile.mkdtemp(prefix="kit-test-part-") if aside else None
    outcomes = part and os.path.join(part, "guests.json")  # the guests tier's, beside
    told = {}  # the helpers' output, once each has ended
    try:
        if aside:
            started["aside"] = start_aside(a, outcomes)
        elif root and guests:
            prebuilds = Prebuilds(guests)
            tests = [t for t in tests if t not in guests] + prebuilds.order(guests)
            Outcomes.before = staticmethod(lambda t: kit_test.tier_of(t) == "guests"
                                           and prebuilds.before(t))
        result = runner.run(unittest.TestSuite(tests))
        if "aside" in started and started["aside"][0].poll() is None:
            print(f"\n(waiting for the guests tier, beside: its output so far in "
                  f"{started['aside'][1].name})", flush=True)
        told.update({k: finish(v) for k, v in started.items()})
        started.clear()
        if "aside" in told:
            print(f"\nthe guests tier, run beside the others:\n{told['aside']}", end="")
            merge(result, outcomes, asked)
    finally:
        for v in started.values():
            finish(v, stop=True)
        if prebuilds:
            told["prebuild"] = prebuilds.stop()
        if part:
            shutil.rmtree(part, ignore_errors=True)
    if told.get("prebuild", "").strip():
        print("\n" + told["prebuild"].strip())
    # (a subtest's skip is its test's: named by that test's class, counted once)
    skips = {(getattr(t, "test_case", t).id(), why): type(getattr(t, "test_case", t))
             for t, why in result.skipped}
    skips = {k: f"{c.__module__}.{c.__name__}" for k, c in skips.items()}
    skips.update(result.part_skips)
    if a.part:  # a part of another run: its outcomes, for that run's closing lines
        with open(a.part, "w") as f:
            json.dump({"outcome_of": result.outcome_of, "seconds": result.seconds,
                       "stopped": result.shouldStop,
                       "tier_seconds": result.tier_seconds,
                       "skips": [[list(k), c] for k, c in skips.items()]}, f)
        return 1 if result.counts()[1] else 0
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
            why.setdefault(reason, []).append(cls)
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
            n = (result.part_count if aside and t == "guests"
                 else sum(1 for x in tests if kit_test.tier_of(x) == t))
            print(f"  {t:7s} {result.tier_seconds[t]:7.1f} s  {n:3d} tests  "
                  f"({kit_test.TIERS[t]})" + ("  beside the others" if aside and t == "guests"
                                              else ""))
    print("\nslowest:")
    for tid, sec in sorted(((t, s) for t, s in result.seconds.items() if t in result.outcome_of),
                           key=lambda kv: -kv[1])[:10]:
        print(f"  {sec:7.1f} s  {tid}")
    if broken:  # (each is a test that errored, so already counted as failed)
        print(f"\n{len(broken)} test modules failed to import (counted as failed)")
    print(f"\n{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or not passed + skipped else 0


def merge(result, part, asked):
    """The guests tier's outcomes (PART, its --part file) into RESULT; a
    part that wrote none (it crashed), was stopped, or left one of ASKED
    (the ids it was to run) without an outcome is one failed test more."""
    why = None
    try:
        with open(part) as f:
            got = json.load(f)
    except (OSError, ValueError):
        got, why = None, "ended without its outcomes"
    if got:
        result.outcome_of.update(got["outcome_of"])
        result.seconds.update(got["seconds"])
        result.tier_seconds.update(got["tier_seconds"])
        result.part_skips = [(tuple(k), c) for k, c in got["skips"]]
        result.part_count = len(set(got["outcome_of"]) & asked)
        missed = asked - set(got["outcome_of"])
        if got.get("stopped") or missed:
            why = f"was stopped, {len(missed)} of its {len(asked)} tests not run"
    if why:
        result.outcome_of["run_tests.guests_tier_beside_the_others"] = "failed"
        print(f"\nFAIL: the guests tier, run beside the others, {why} "
              "(run_tests.guests_tier_beside_the_others)")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
