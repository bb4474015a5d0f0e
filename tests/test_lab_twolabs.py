"""Two make lab runs of one suite at once (make atlas: a kernel's lab and
its WHERE=1 lab; scripts/lab/suite.py, modules.py, steps.py): they take
turns with the root file system, each removes only its own images and
fetched folders, their results folders are told apart; a kernel's first
lab sizes its runs from a guest of the same tools; the pre-flight's
answer is kept for the next lab (a time-out never); and a stop (Ctrl-C)
ends the module builds it started, on a terminal or not, late ones too,
and nothing else (`TwoLabs`).

    make check TESTS=test_lab_twolabs

No root, no guest: a suite's folders in a temporary folder, the builds
and the pre-flight stood in for (`sleep`, a function).
"""
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

import kit_test  # noqa: F401  (puts scripts/ on the path)
import configs
import host
import procs
from lab import common, suite
from lab import qemu as guest_qemu
from lab import modules as guest_modules
from lab import steps as guest_steps
from atlas.folders import newest
from atlas.kits import locked


class TwoLabs(unittest.TestCase):
    """Two labs of one suite at once (make atlas: a kernel's lab and its
    WHERE=1 lab): they take turns with the root file system, each removes
    only its own images and folders, their folders are told apart; and a
    kernel's first lab sizes its runs from a guest of the same tools."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kit-test-twolabs-")
        self.old_dir = suite.LAB_DIR
        suite.LAB_DIR = self.tmp

    def tearDown(self):
        suite.LAB_DIR = self.old_dir
        shutil.rmtree(self.tmp)

    def timings(self, slug, unit="instructions"):
        d = os.path.join(self.tmp, slug)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, common.TIMINGS.format(unit))
        with open(path, "w") as f:
            f.write("{}\n")
        return path

    def lab(self, name, where=False):
        args = type("Args", (), {"where": where})()
        s = suite.Suite(name, args, self.tmp, os.path.join(self.tmp, "lab.log"))
        s.dir = os.path.join(self.tmp, suite.folder_name(name))
        return s

    def test_first_lab_of_a_kernel_sized_from_its_tools(self):
        """Its own timings first; else its tools' own suite's; else the
        newest of another kernel under those tools; else none (warm-ups)."""
        newer = self.timings("sid+bookworm")
        os.utime(newer, (2e9, 2e9))
        older = self.timings("sid+trixie-backports")
        os.utime(older, (1e9, 1e9))
        self.assertEqual(self.lab("sid:trixie").timings("instructions"), (newer, "sid:bookworm"))
        tools = self.timings("sid")
        self.assertEqual(self.lab("sid:trixie").timings("instructions"), (tools, "sid"))
        own = self.timings("sid+trixie")
        self.assertEqual(self.lab("sid:trixie").timings("instructions"), (own, "sid:trixie"))
        self.assertEqual(self.lab("sid:trixie").timings("ns"), (None, None))
        self.assertEqual(self.lab("trixie:sid").timings("instructions"), (None, None))

    def test_take_turns_with_the_root_file_system(self):
        """The second lab's hold waits until the first releases it; make
        atlas sees it held (and by asking does not hold it itself)."""
        first, second = self.lab("sid"), self.lab("sid", where=True)
        path = os.path.join(self.tmp, "sid.lock")
        self.assertFalse(locked(path))
        first.hold()
        self.assertTrue(locked(path))
        t = threading.Thread(target=second.hold)
        t.start()
        t.join(1.0)
        self.assertTrue(t.is_alive(), "the second lab did not wait for the first")
        first.release()
        t.join(10)
        self.assertFalse(t.is_alive(), "the second lab never got the root file system")
        self.assertIsNotNone(second.held)
        second.release()
        self.assertFalse(locked(path))

    def test_each_removes_its_own(self):
        """The WHERE=1 lab ending first leaves the other lab's images and
        fetched folders; its own are gone."""
        s = self.lab("sid", where=True)
        os.makedirs(s.dir)
        g = guest_qemu.Guest(s, [])
        s.whole, s.tcg = g, [g]
        self.assertEqual(os.path.basename(g.img), "disk-where.img")
        other = [os.path.join(s.dir, n) for n in ("disk-1.img", "disk-2.img", "disk.img")]
        for path in other + [g.img]:
            open(path, "w").close()
        theirs = os.path.join(s.dir, "lab-fetch-theirs")
        mine = os.path.join(s.dir, "lab-fetch-mine")
        os.makedirs(theirs)
        os.makedirs(mine)
        s.fetched.append(mine)
        guest_steps.remove_own(s)
        self.assertEqual(sorted(os.listdir(s.dir)),
                         sorted([os.path.basename(p) for p in other] + ["lab-fetch-theirs"]))

    def test_preflight_answer_kept(self):
        """The pre-flight's answer is kept for the root file system by
        kernel, SystemTap and the target's bytes: asked again, the second
        lab gets it without a build; a changed target is asked anew; a
        time-out is never kept."""
        s = self.lab("sid")
        target = os.path.join(s.rootfs, common.GUEST_KIT.lstrip("/"), "build", "benchmark-sdt")
        os.makedirs(os.path.dirname(target))
        os.makedirs(os.path.join(s.rootfs, "tmp"))
        with open(target, "w") as f:
            f.write("a")
        built = []
        answers = iter(["SystemTap 5.6 cannot build modules for kernel 6.1.0-kit: error: x",
                        None, "SystemTap 5.6 did not build a module for kernel 6.1.0-kit in 1 s",
                        None, "SystemTap ? cannot build modules for kernel 6.3.0-kit: sh: 1: "
                        "stap: not found", None])

        def build(*_):
            built.append(1)
            return next(answers)
        real = guest_modules.stap_build.preflight, guest_modules.Mounts
        guest_modules.stap_build.preflight = build
        guest_modules.Mounts = lambda _: contextlib.nullcontext()
        try:
            first = guest_modules.preflight(s, "6.1.0-kit")
            self.assertEqual(guest_modules.preflight(s, "6.1.0-kit"), first)
            self.assertEqual(len(built), 1)
            with open(target, "w") as f:
                f.write("b")
            self.assertIsNone(guest_modules.preflight(s, "6.1.0-kit"))
            self.assertEqual(len(built), 2)
            self.assertIn("did not build", guest_modules.preflight(s, "6.2.0-kit"))
            self.assertIsNone(guest_modules.preflight(s, "6.2.0-kit"))  # the time-out not kept
            self.assertIn("not found", guest_modules.preflight(s, "6.3.0-kit"))
            self.assertIsNone(guest_modules.preflight(s, "6.3.0-kit"))  # nor a missing stap
            self.assertEqual(len(built), 6)
        finally:
            guest_modules.stap_build.preflight, guest_modules.Mounts = real

    def stop_builds(self, start, wait_for_starts=True):
        """Ctrl-C to this process while stap_build.build builds three
        modules, each build START(pidfile) (run in a pool thread); sent
        once every build in the first round has written its pid to
        pidfile (WAIT_FOR_STARTS), else once each has begun.  Returns
        (seconds until the stop came through, the pids written)."""
        from tracers import stap_build
        cfgs = [c for c in configs.CONFIGS if c.tracer == "stap"]
        be = stap_build.stap.Stap.for_guest(False)
        cfgs = [c for c in cfgs if not be.skip_reason(c)][:3]
        first_round = min(len(cfgs), os.cpu_count() or 1)
        pidfile = os.path.join(self.tmp, "started")
        open(pidfile, "w").close()

        def written():
            with open(pidfile) as f:
                return [int(line) for line in f if line.endswith("\n")]

        taken = []  # a build each pool thread has begun

        def build_one(*_):
            taken.append(1)
            return start(pidfile)

        def stop():
            host.wait_for(lambda: len(written() if wait_for_starts else taken) >= first_round, 30)
            os.kill(os.getpid(), signal.SIGINT)
        real = stap_build.build_one, stap_build.version
        stap_build.build_one, stap_build.version = build_one, (lambda _: "?")
        old = signal.signal(signal.SIGINT, signal.default_int_handler)  # whatever the suite inherited
        timer = threading.Thread(target=stop)
        t0 = time.monotonic()
        try:
            timer.start()
            with self.assertRaises(KeyboardInterrupt):
                stap_build.build(cfgs, self.tmp, "/kit", "6.1.0-kit", os.path.join(self.tmp, "out"),
                                 os.path.join(self.tmp, "cache"), os.path.join(self.tmp, "log"),
                                 False, lambda *a: None)
            took = time.monotonic() - t0
        finally:
            timer.join()
            signal.signal(signal.SIGINT, old)
            stap_build.build_one, stap_build.version = real
        pids = written()
        if wait_for_starts:
            self.assertEqual(len(pids), first_round)
        self.assertEqual([p for p in pids if (st := procs.proc_stat(p)) and st[1][0] != "Z"], [])
        return took, pids

    SLEEP = ["sh", "-c", 'echo $$ >> "$0"; exec sleep 60']

    def test_a_stop_stops_the_module_builds(self):
        """Ctrl-C while modules build in the pool: the builds running (each
        in a process group of its own, which no signal of the terminal
        reaches) are stopped at once, and the stop goes on; a child of
        this process the builds did not start (the suite is a subreaper:
        it has many) is left alone."""
        bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)
        try:
            took, _ = self.stop_builds(lambda pf: host.run([*self.SLEEP, pf], group=True) and "stopped")
            self.assertLess(took, 30)
            self.assertRaises(subprocess.TimeoutExpired, bystander.wait, 1)
        finally:
            bystander.kill()
            bystander.wait()

    def test_a_stop_stops_the_builds_on_a_terminal(self):
        """The same for builds with a hit report, each on a pseudo-terminal
        of its own (stap_preflight.on_a_tty), in the pool."""
        from tracers import stap_preflight
        log = os.path.join(self.tmp, "log")
        took, _ = self.stop_builds(lambda pf: stap_preflight.on_a_tty([*self.SLEEP, pf], log, 120)
                                   and "stopped")
        self.assertLess(took, 30)

    def test_a_build_that_starts_after_the_stop_is_stopped(self):
        """A build whose thread had taken its module but not yet started
        its command when the stop came is stopped as it starts, not
        waited for."""
        ran = []

        def late(pf):
            time.sleep(1.5)
            ran.append(1)  # (its pid may never be written: the SIGTERM can come first)
            return host.run([*self.SLEEP, pf], group=True) and "stopped"
        took, _ = self.stop_builds(late, wait_for_starts=False)
        self.assertLess(took, 30)
        self.assertEqual(len(ran), min(3, os.cpu_count() or 1))

    def test_a_stop_stops_a_build_on_a_terminal(self):
        """Ctrl-C while the pre-flight builds on a pseudo-terminal (a
        session of its own, which no signal of the terminal reaches): the
        build is stopped, not waited for, and the stop goes on."""
        from tracers import stap_preflight
        started = os.path.join(self.tmp, "started")
        open(started, "w").close()
        old = signal.signal(signal.SIGINT, signal.default_int_handler)

        def stop():
            host.wait_for(lambda: os.path.getsize(started), 30)
            os.kill(os.getpid(), signal.SIGINT)
        timer = threading.Thread(target=stop)
        t0 = time.monotonic()
        try:
            timer.start()
            with self.assertRaises(KeyboardInterrupt):
                stap_preflight.on_a_tty([*self.SLEEP, started], os.path.join(self.tmp, "log"), 120)
        finally:
            timer.join()
            signal.signal(signal.SIGINT, old)
        self.assertLess(time.monotonic() - t0, 30)
        with open(started) as f:
            self.assertIsNone(procs.proc_stat(int(f.read())))

    def test_folders_told_apart(self):
        """Started in the same second, the lab's and the WHERE=1 lab's
        folders are found each by its own ending."""
        for n in ("20261203T000000Z-lab", "20261203T000000Z-where-lab", "20261202T000000Z-lab"):
            os.makedirs(os.path.join(self.tmp, n))
        before = {"20261202T000000Z-lab"}
        self.assertEqual(newest(self.tmp, common.LAB_TOP, before, common.WHERE_TOP),
                         os.path.join(self.tmp, "20261203T000000Z-lab"))
        self.assertEqual(newest(self.tmp, common.WHERE_TOP, before),
                         os.path.join(self.tmp, "20261203T000000Z-where-lab"))


if __name__ == "__main__":
    unittest.main()
