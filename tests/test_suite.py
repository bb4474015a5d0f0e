"""The suite's own closing line (tests/run_tests.py): one outcome per
test, however many of its subtests failed or were skipped; its tiers
(each runs only its own classes, and a check that asks for root fails);
each tier's time and the slowest tests printed before that line."""
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from unittest import mock

import kit_test
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


TIERED = '''import unittest

from kit_test import need_root


class Check(unittest.TestCase):
    def test_fine(self):
        pass

    def test_asks_for_root(self):
        need_root(self)


class Host(unittest.TestCase):
    tier = "host"

    def test_fine(self):
        pass


class Guests(unittest.TestCase):
    tier = "guests"

    def test_fine(self):
        pass
'''


def run_sample(text, *args):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "test_sample.py"), "w") as f:
            f.write(text)
        return run(["python3", os.path.join(ROOT, "tests", "run_tests.py"), "--dir", d, *args],
                   env=dict(os.environ, CI="false"))


class Tiers(unittest.TestCase):
    def test_each_tier_its_own(self):
        """--tier check runs Check's two tests, one of which asks for root:
        it fails, naming the tier (1 passed, 1 failed); --tier host,guests
        runs the other two (2 passed), host's first; a tier that does not
        exist is refused (status 2, naming it and the tiers)."""
        r = run_sample(TIERED, "--tier", "check")
        lines = r.stdout.strip().splitlines()
        self.assertEqual(lines[-1], "1 passed, 1 failed, 0 skipped", r.stdout[-1500:])
        self.assertIn("Check is in the check tier, which runs without root: give the class "
                      "tier = 'host' (or 'guests')", r.stdout)
        r = run_sample(TIERED, "--tier", "host,guests")
        self.assertEqual(r.stdout.strip().splitlines()[-1], "2 passed, 0 failed, 0 skipped",
                         r.stdout[-1500:])
        self.assertLess(r.stdout.index("test_sample.Host.test_fine"),
                        r.stdout.index("test_sample.Guests.test_fine"))
        r = run_sample(TIERED, "--tier", "check,lab")
        self.assertEqual(r.returncode, 2)
        self.assertIn("TIER 'lab' is not allowed: want a comma-separated list of check, host, "
                      "guests, userland", r.stderr)

    def test_an_import_failure_in_every_tier(self):
        """A test module that cannot be imported fails in whatever tier
        was asked for (it names no tier: a broken test_lab.py must not
        leave make test-guests green)."""
        for tier in ("check", "host", "guests"):
            r = run_sample("import kit_no_such_module\n", "--tier", tier)
            self.assertEqual(r.stdout.strip().splitlines()[-1], "0 passed, 1 failed, 0 skipped",
                             r.stdout[-1500:])
            self.assertEqual(r.returncode, 1)

    def test_an_import_failure_whatever_the_pick(self):
        """A pick that names a class (mutants.py's do) keeps a test module
        that cannot be imported: its failure no longer holds that name, and
        dropped it left the run green (issue 67)."""
        with tempfile.TemporaryDirectory() as d:
            for name, text in (("test_sample.py", TIERED),
                               ("test_broken.py", "import kit_no_such_module\n")):
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
            r = run(["python3", os.path.join(ROOT, "tests", "run_tests.py"), "--dir", d,
                     "--tier", "check", "Check.test_fine"], env=dict(os.environ, CI="false"))
        self.assertEqual(r.stdout.strip().splitlines()[-1], "1 passed, 1 failed, 0 skipped",
                         r.stdout[-1500:])
        self.assertEqual(r.returncode, 1)

    def test_times_before_the_closing_line(self):
        """Every tier's seconds and test count, then the slowest tests
        (all four here, fewer than ten), then the closing line, last."""
        r = run_sample(TIERED)
        tail = r.stdout[r.stdout.index("\ntiers:\n"):].strip().splitlines()
        self.assertEqual([ln.split()[0] for ln in tail[1:4]], ["check", "host", "guests"])
        self.assertRegex(tail[1], r"^  check +\d+\.\d s +2 tests  \(no root")
        i = tail.index("slowest:")
        self.assertEqual(len(tail[i + 1:-2]), 4, tail)
        for ln in tail[i + 1:-2]:
            self.assertRegex(ln, r"^ +\d+\.\d s  test_sample\.\w+\.test_\w+$")
        self.assertEqual(tail[-2:], ["", "3 passed, 1 failed, 0 skipped"])


    def test_guests_beside_the_others(self):
        """With the guests tier and another in the run, the guests tier runs
        in a process of its own beside them: its output after theirs, its
        tests in the counts and the tiers' lines ("beside the others"); a
        guests process that dies without its outcomes is one failed test,
        not a green run."""
        parts = set(glob.glob(os.path.join(tempfile.gettempdir(), "kit-test-part-*")))
        r = run_sample(TIERED)
        out = r.stdout
        self.assertLess(out.index("test_sample.Check.test_fine"),
                        out.index("the guests tier, run beside the others:"))
        self.assertLess(out.index("test_sample.Host.test_fine"),
                        out.index("the guests tier, run beside the others:"))
        self.assertLess(out.index("the guests tier, run beside the others:"),
                        out.index("test_sample.Guests.test_fine"))
        self.assertRegex(out, r"\n  guests +\d+\.\d s +1 tests  \(.*\)  beside the others\n")
        self.assertEqual(out.strip().splitlines()[-1], "3 passed, 1 failed, 0 skipped",
                         out[-1500:])
        r = run_sample(TIERED.replace("class Guests(unittest.TestCase):\n    tier = \"guests\"\n\n"
                                      "    def test_fine(self):\n        pass\n",
                                      "class Guests(unittest.TestCase):\n    tier = \"guests\"\n\n"
                                      "    def test_fine(self):\n        import os\n"
                                      "        os._exit(3)\n", 1))
        self.assertEqual(r.stdout.strip().splitlines()[-1], "2 passed, 2 failed, 0 skipped",
                         r.stdout[-1500:])
        self.assertIn("run_tests.guests_tier_beside_the_others", r.stdout)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(set(glob.glob(os.path.join(tempfile.gettempdir(), "kit-test-part-*"))),
                         parts, "the runner's folder for the guests tier's outcomes stayed")


    STOPPED = '''import os, subprocess, sys, time, unittest

HERE = os.environ["KIT_SAMPLE_DIR"]


class Host(unittest.TestCase):
    tier = "host"

    def test_waits(self):
        open(os.path.join(HERE, "host"), "w").close()
        time.sleep(60)


class Guests(unittest.TestCase):
    tier = "guests"

    def test_a_lab(self):  # a lab that cleans up at a Ctrl-C, as make lab does
        code = ("import os, signal, sys, time\\n"
                "def stop(s, f):\\n"
                "    open(os.path.join(sys.argv[1], 'cleaned'), 'w').close()\\n"
                "    sys.exit(130)\\n"
                "signal.signal(signal.SIGINT, stop)\\n"
                "open(os.path.join(sys.argv[1], 'lab'), 'w').close()\\n"
                "time.sleep(60)\\n")
        subprocess.run([sys.executable, "-c", code, HERE])

    def test_b_after(self):
        open(os.path.join(HERE, "after"), "w").close()
'''

    def test_a_ctrl_c_stops_the_guests_beside(self):
        """Ctrl-C at the runner while the guests tier runs beside: its
        process gets it (a SIGTERM, passed on as a Ctrl-C to its group), the
        lab running cleans up as at a Ctrl-C, the tier stops after that
        test, the runner ends within seconds, and nothing of it is left (no
        process, no folder for its outcomes)."""
        parts = set(glob.glob(os.path.join(tempfile.gettempdir(), "kit-test-part-*")))
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "test_sample.py"), "w") as f:
                f.write(self.STOPPED)
            p = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "run_tests.py"),
                                  "--dir", d], env=dict(os.environ, CI="false", KIT_SAMPLE_DIR=d),
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 preexec_fn=kit_test.sigint_default)  # (as make test starts)
            try:
                deadline = time.monotonic() + 30
                while not all(os.path.exists(os.path.join(d, x)) for x in ("host", "lab")):
                    self.assertLess(time.monotonic(), deadline, "the sample never started")
                    time.sleep(0.1)
                p.send_signal(signal.SIGINT)
                try:
                    out = p.communicate(timeout=30)[0]
                except subprocess.TimeoutExpired:
                    self.fail("the runner had not ended 30 s after its Ctrl-C")
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            self.assertNotEqual(p.returncode, 0, out[-1500:])
            self.assertTrue(os.path.exists(os.path.join(d, "cleaned")), out[-1500:])
            self.assertFalse(os.path.exists(os.path.join(d, "after")), out[-1500:])
            def cmdline(pid):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        return f.read()
                except OSError:  # gone meanwhile
                    return b""
            left = [pid for pid in os.listdir("/proc")
                    if pid.isdigit() and d.encode() in cmdline(pid)]
            self.assertEqual(left, [], out[-1500:])
        self.assertEqual(set(glob.glob(os.path.join(tempfile.gettempdir(), "kit-test-part-*"))),
                         parts, "the runner's folder for the guests tier's outcomes stayed")


class Prebuild(unittest.TestCase):
    def test_its_cpu_share_is_nices(self):
        """The root file systems' build (tests/prebuild.py) runs in a session
        of its own, an autogroup of its own: the group is set to nice 19,
        or dpkg there takes a CPU of two from the host tier's runs whatever
        the processes' own nice (CI on 2c71b30: a bystander's interval
        [-590, 4036] ns for a cost of 1,723)."""
        if not os.path.exists("/proc/self/autogroup"):
            self.skipTest("no /proc/self/autogroup (CONFIG_SCHED_AUTOGROUP off)")
        mine = open("/proc/self/autogroup").read()
        r = run([sys.executable, "-c", "import prebuild; prebuild.lower(); "
                 "print(open('/proc/self/autogroup').read(), end='')"],
                cwd=os.path.join(ROOT, "tests"), start_new_session=True)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertRegex(r.stdout, r"^/autogroup-\d+ nice 19\n$")
        # not the suite's own group; a suite in the root autogroup (started
        # with no session of its own: CI's make check in the trixie root)
        # reads an empty file, and any /autogroup-N is then another group
        self.assertNotEqual(r.stdout.split()[0], (mine.split() or ["(root)"])[0])
        self.assertEqual(open("/proc/self/autogroup").read(), mine)

    def test_the_first_suite_first(self):
        """Prebuilds (the guests' root file systems, beside the host tier):
        the suite most guests boot (sid) alone at once, the guests that
        boot sid alone first; the first guest test waits for sid, and then
        the others build (PREBUILDING says which, for lab_state), waited
        for by the first test that boots one; a test whose suites are built
        waits for nothing."""
        import run_tests

        class Sid(unittest.TestCase):
            tier = "guests"

            def test_x(self):
                pass

            def test_y(self):
                pass

        class Old(Sid):
            suites = ("bookworm",)
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "prebuild.py")
            with open(fake, "w") as f:
                f.write("import sys, time\ntime.sleep(0.5)\nprint('built', *sys.argv[1:])\n")
            with mock.patch.object(run_tests, "PREBUILD", fake):
                p = run_tests.Prebuilds([Old("test_x"), Sid("test_x"), Sid("test_y")])
                try:
                    self.assertEqual([type(t) for t in p.order([Old("test_x"), Sid("test_x")])],
                                     [Sid, Old])
                    self.assertEqual(kit_test.PREBUILDING, {"sid"})
                    self.assertTrue(p.before(Sid("test_x")))
                    self.assertEqual(kit_test.PREBUILDING, {"bookworm"})
                    self.assertTrue(p.before(Old("test_x")))
                    self.assertEqual(kit_test.PREBUILDING, set())
                    self.assertFalse(p.before(Old("test_x")))
                finally:
                    said = p.stop()
        self.assertEqual(said, "built sid\nbuilt bookworm\n")

    def test_a_session_below_kept_low(self):
        """keep_low (the guests tier beside the others): a process below it
        that starts a session of its own, so an autogroup of its own at
        nice 0 (lab/qemu.py's qemu), is set to the keeper's nice 19 within
        a look or two; the keeper's own group is 19 as lower() sets it."""
        if not os.path.exists("/proc/self/autogroup"):
            self.skipTest("no /proc/self/autogroup (CONFIG_SCHED_AUTOGROUP off)")
        code = ("import subprocess, time, prebuild\n"
                "prebuild.keep_low('test', every_s=0.1)\n"
                "p = subprocess.Popen(['sleep', '30'], start_new_session=True)\n"
                "try:\n"
                "    for _ in range(50):\n"
                "        time.sleep(0.1)\n"
                "        if prebuild.autogroup(p.pid)[1] == 19: break\n"
                "    print(prebuild.autogroup()[1], prebuild.autogroup(p.pid)[1],\n"
                "          prebuild.autogroup(p.pid)[0] != prebuild.autogroup()[0])\n"
                "finally:\n"
                "    p.kill(); p.wait()\n")
        r = run([sys.executable, "-c", code], cwd=os.path.join(ROOT, "tests"),
                start_new_session=True)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual(r.stdout, "19 19 True\n")


class Mutants(unittest.TestCase):
    def test_each_applies_and_names_real_tests(self):
        """Every mutant of tests/mutants.py breaks its file where it says:
        the text it replaces is there exactly once (a mutant whose file
        moved on says NOT APPLIED and kills nothing: two had), and each
        test it runs picks one of the suite's (a part of its id)."""
        import mutants

        def ids(suite):
            for t in suite:
                yield from ids(t) if isinstance(t, unittest.TestSuite) else [t.id()]
        tests = list(ids(unittest.defaultTestLoader.discover(os.path.join(ROOT, "tests"))))
        for name, path, old, new, named in mutants.MUTANTS:
            with self.subTest(name):
                with open(os.path.join(ROOT, path)) as f:
                    self.assertEqual(f.read().count(old), 1, f"{name}: {old!r} in {path}")
                self.assertNotEqual(old, new)
                self.assertTrue(named)
                for t in named:  # picked as run_tests.py picks, by a part of the id
                    self.assertTrue(any(t in x for x in tests), f"{name}: no test {t}")


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
