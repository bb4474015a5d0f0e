"""make lab (scripts/lab): SystemTap's module runtime in a guest kernel,
for real: what CI runs (`QUICK=1`: Debian sid's baseline, stap-mark and
stap-mark-alibi at THREADS=1..2), the instruction count's resolution, the
shell, faults, the summary's tables, and its input checks.  Slow the first
time on a machine (mmdebstrap); the root file system is cached in
build/lab/ after that."""
import contextlib
import csv
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types
import unittest

from kit_test import ROOT, SCRIPTS, descendants, need_root, pids_of, report_text, run, unavailable
import configs
import host
import kernel
import record
import report
from lab import common, shares, suite
from lab import initrd as guest_initrd
from lab import qemu as guest_qemu
from lab import modules as guest_modules
from lab import steps as guest_steps
from atlas.folders import newest
from atlas.kits import locked
from lab.init import LAB_RUNS, QUICK_ITER
from render import formats, lab as render_lab
from render import lifecycle as render_lifecycle

LAB_PY = os.path.join(SCRIPTS, "lab")


def lab_state():
    """What a lab could leave behind: qemu processes, mounts under the
    repository, loop devices."""
    qemu = subprocess.run(["pgrep", "-f", "qemu-system"], stdout=subprocess.PIPE,
                          text=True).stdout.split()
    with open("/proc/mounts") as f:
        mounts = [ln.split()[1] for ln in f if ln.split()[1].startswith(ROOT)]
    loops = subprocess.run(["losetup", "-a"], stdout=subprocess.PIPE, text=True).stdout.split("\n")
    return {"qemu": qemu, "mounts": mounts, "loops": [ln for ln in loops if ln.strip()]}


def lab_run(test, args, res, name="sid"):
    """lab.py ARGS with its results in RES: (rows, meta, folder) of its
    suite NAME's folder; TEST skips where the lab could not build its guest
    (no mirror, no space, no qemu: its folder's pre-flight says "lab: ...")."""
    r = run([sys.executable, LAB_PY, *args, "--results", res], timeout=5400)
    if "cannot reach the host's Debian mirror" in r.stderr:
        unavailable(test, r.stderr.strip()[-300:])
    test.assertEqual(r.returncode, 0, r.stderr[-3000:])
    folders = glob.glob(os.path.join(res, "*-lab", name))
    test.assertEqual(len(folders), 1, r.stderr[-3000:])
    rows, meta, _ = record.load(folders[0])
    if (meta["lab"].get("preflight") or "").startswith("lab: "):
        unavailable(test, meta["lab"]["preflight"])
    return rows, meta, folders[0]


class Inputs(unittest.TestCase):
    def test_bad_suite(self):
        r = run([sys.executable, LAB_PY, "--lab", "sid,woody"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("LAB 'sid,woody' is not allowed: want a comma-separated list of SUITE "
                      "or SUITE:KERNEL, SUITE one of sid, trixie, bookworm", r.stderr)
        r = run([sys.executable, LAB_PY, "--accel", "xen"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("ACCEL 'xen' is not allowed", r.stderr)
        for bad in ("2", "yes"):
            r = run([sys.executable, LAB_PY, "--icount", bad])
            self.assertEqual(r.returncode, 2)
            self.assertIn(f"ICOUNT '{bad}' is not allowed: want 0 or 1", r.stderr)
        for bad in ("0", "9", "many"):
            r = run([sys.executable, LAB_PY, "--lab-guests", bad])
            self.assertEqual(r.returncode, 2)
            self.assertIn(f"LAB_GUESTS '{bad}' is not allowed: want auto or a whole number in "
                          "1..8", r.stderr)
        r = run([sys.executable, LAB_PY, "--miss", "x"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("MISS 'x' is not allowed: want a whole number in 0..", r.stderr)
        r = run([sys.executable, LAB_PY], env=dict(os.environ, LAB_CONFIGS="nonexistent"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("LAB_CONFIGS 'nonexistent' matches no configuration", r.stderr)
        r = run([sys.executable, LAB_PY], env=dict(os.environ, LAB_CONFIGS="postgres-untraced"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("LAB_CONFIGS 'postgres-untraced' is not allowed: postgres-untraced run a "
                      "program the guests' root file system does not hold", r.stderr)

    def test_lifecycle_inputs(self):
        """LIFECYCLE=1 takes make lifecycle's own inputs, checked here before
        anything is built or booted, and no configuration."""
        for args, want in ((["--lifecycle", "1", "--probes", "7"],
                            "PROBES '7' is not allowed: want comma-separated counts among 1, "
                            "10, 100, 1000"),
                           (["--lifecycle", "1", "--procs", "0"], "PROCS '0' is not allowed"),
                           (["--lifecycle", "1", "--quick", "1"],
                            "LIFECYCLE=1 is not allowed with QUICK=1"),
                           (["--lifecycle", "1", "--lab-configs", "baseline"],
                            "LIFECYCLE=1 is not allowed with LAB_CONFIGS"),
                           (["--lifecycle", "1", "--icount", "0"],
                            "LIFECYCLE=1 is not allowed with ICOUNT=0"),
                           (["--lifecycle", "1", "--stap-runtime", "bpf"],
                            "LIFECYCLE=1 is not allowed with STAP_RUNTIME=bpf"),
                           (["--lifecycle", "2"], "LIFECYCLE '2' is not allowed: want 0 or 1"),
                           (["--probes", "1"],
                            "PROBES is make lifecycle's: it is allowed with LIFECYCLE=1 only")):
            with self.subTest(args=args), tempfile.TemporaryDirectory() as res:
                r = run([sys.executable, LAB_PY, *args, "--results", res])
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(want, r.stderr)
                self.assertEqual(os.listdir(res), [])

    def test_inputs_listed(self):
        """The lab's inputs are params.Param rows, so `make help` lists each
        with its default."""
        r = run(["make", "-s", "--no-print-directory", "help"])
        for line in ("LAB=sid", "QUICK=0", "NO_INSTALL=0", "ICOUNT=1", "MISS=0", "STAP_TIMING=0",
                     "ACCEL=auto", "LAB_TIME_LIMIT=0", "LAB_CONFIGS=every configuration",
                     "LIFECYCLE=0", "PROBES=1,10,100\n", "PROCS=1,10\n"):
            self.assertRegex(r.stdout, r"make lab .*\n(\s+\S.*\n)*\s+" + re.escape(line))


class KernelAxis(unittest.TestCase):
    """SUITE:KERNEL against the host's Debian mirror (the network: not a
    check)."""
    tier = "host"

    def test_kernel_axis_refused(self):
        """SUITE:KERNEL: a KERNEL that is no suite's name is refused by the
        parser; one the mirror does not have (woody, long archived) is
        refused before anything is built, naming the kernels' suites it
        has; neither makes a folder or a cache."""
        r = run([sys.executable, LAB_PY, "--lab", "sid:Trixie"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("LAB 'sid:Trixie' is not allowed: want a comma-separated list of SUITE or "
                      "SUITE:KERNEL", r.stderr)
        with tempfile.TemporaryDirectory() as res:
            r = run([sys.executable, LAB_PY, "--lab", "sid:woody", "--results", res])
            if "cannot reach the host's Debian mirror" in r.stderr or "no Debian mirror" in r.stderr:
                unavailable(self, r.stderr.strip())
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertRegex(r.stderr, r"LAB 'sid:woody' is not allowed: the host's Debian mirror "
                                       r"has no woody \(dists/SUITE/Release\); the kernels' "
                                       r"suites it has: .*\bsid\b")
            self.assertEqual(os.listdir(res), [])
        self.assertFalse(os.path.exists(os.path.join(common.LAB_DIR, "sid+woody")))


class PutKit(unittest.TestCase):
    """The kit put in a guest's root file system leaves build/'s own root
    file systems out (host.ROOT_FILE_SYSTEMS): make test-userland's trixie
    root, copied in with its /dev/full read as a file, filled the disk
    (74 GB, 2026-12-05); its builds and sources go in."""

    def test_no_root_file_system_inside(self):
        with tempfile.TemporaryDirectory() as repo, tempfile.TemporaryDirectory() as rootfs:
            for f in ("src/benchmark.c", "build/benchmark-sdt", "build/userland/trixie/x",
                      "build/lab/sid/rootfs/y", "results/z"):
                os.makedirs(os.path.dirname(os.path.join(repo, f)), exist_ok=True)
                open(os.path.join(repo, f), "w").close()
            old = suite.ROOT
            suite.ROOT = repo
            try:
                suite.put_kit(rootfs, repo, timings=[])
            finally:
                suite.ROOT = old
            kit = os.path.join(rootfs, common.GUEST_KIT.lstrip("/"))
            got = sorted(os.path.relpath(os.path.join(d, f), kit)
                         for d, _, fs in os.walk(kit) for f in fs)
        self.assertEqual(got, ["build/benchmark-sdt", "src/benchmark.c"])


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
        self.assertEqual([p for p in pids if (st := host.proc_stat(p)) and st[1][0] != "Z"], [])
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
            self.assertIsNone(host.proc_stat(int(f.read())))

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


class WordLists(unittest.TestCase):
    """The package lists the kit reads from make (the guests' packages,
    the builds' needs) hold package names only, also when the kit runs
    under a make started with -C, whose MAKEFLAGS carry w: its "Entering
    directory" lines once went into the guests' package list, the root
    file system was rebuilt for packages named 'Leaving' and 'make[1]:',
    and mmdebstrap failed with the cached one already gone."""

    def test_under_make_dash_c(self):
        name = re.compile(r"[a-z0-9][a-z0-9+.-]+")
        old = os.environ.get("MAKEFLAGS")
        os.environ["MAKEFLAGS"] = "w"  # what make -C DIR passes its children
        try:
            lists = {"packages": suite.packages(), "needs": sorted(host.build_needs())}
        finally:
            if old is None:
                del os.environ["MAKEFLAGS"]
            else:
                os.environ["MAKEFLAGS"] = old
        for what, words in lists.items():
            with self.subTest(what):
                self.assertEqual([w for w in words if not name.fullmatch(w)], [])
        self.assertIn("linux-image-amd64", lists["packages"])


class FailedRebuild(unittest.TestCase):
    tier = "guests"  # (mmdebstrap, the mirror)

    def test_a_failed_rebuild_keeps_the_cache(self):
        """A root file system rebuilt for another package list (one Debian
        has no such package in) fails in mmdebstrap, for real, and leaves
        the cached one and its list as they were."""
        need_root(self)
        if not shutil.which("mmdebstrap"):
            unavailable(self, "lab: mmdebstrap is not installed")
        with tempfile.TemporaryDirectory() as tmp:
            s = suite.Suite("sid", None, tmp, os.path.join(tmp, "lab.log"))
            s.dir = os.path.join(tmp, "sid")
            s.rootfs = os.path.join(s.dir, "rootfs")
            os.makedirs(os.path.join(s.rootfs, "lib", "modules", "6.1.0-kit"))
            with open(os.path.join(s.dir, "rootfs.ok"), "w") as f:
                f.write("linux-image-amd64\n")
            real = suite.packages
            suite.packages = lambda: ["linux-image-amd64", "kit-no-such-package"]
            try:
                with self.assertRaises(suite.LabError) as e:
                    s.make_rootfs()
                self.assertIn("mmdebstrap", str(e.exception))  # it ran, and failed
            finally:
                suite.packages = real
            kept = os.path.join(s.rootfs, "lib", "modules")
            self.assertTrue(os.path.isdir(kept), "the cached root file system was removed")
            self.assertEqual(os.listdir(kept), ["6.1.0-kit"])
            with open(os.path.join(s.dir, "rootfs.ok")) as f:
                self.assertEqual(f.read(), "linux-image-amd64\n")
            self.assertFalse(os.path.exists(s.rootfs + ".tmp"))


class Tables(unittest.TestCase):
    """summary.md's tables from two hand-made guest folders
    (tests/fixtures/report/guest/: sid, where each SystemTap configuration
    costs its baseline plus a constant in every run and ftrace-sdt
    miscounted in each of its 3, and trixie, where the pre-flight failed),
    worked by hand."""
    FOLDERS = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "report", "guest",
                                            "*-lab", "*")))

    def test_kernels_table(self):
        lines = "\n".join(render_lab.kernels_table(self.FOLDERS)).splitlines()
        rows = [[x.strip() for x in ln.strip("|").split("|")] for ln in lines
                if ln.startswith(("| stap", "| ftrace"))]
        self.assertEqual(rows, [
            ["ftrace-sdt", "1", "mismatch [1]", "-"],  # 3 runs, each its own count: one note
            ["stap-function-time", "1", "2,500 [2,500, 2,500]", "-"],
            ["stap-function", "1", "2,000 [2,000, 2,000]", "-"],
            ["stap-mark-time", "1", "1,910 [1,910, 1,910]", "-"],
            ["stap-mark", "1", "1,400 [1,400, 1,400]", "skipped [2]"]])  # configs.CONFIGS' order
        self.assertIn("| config             | threads | sid (7.2.13)         | trixie (6.12.117) |",
                      lines)
        self.assertIn("[1] the tracer saw 1 events, expected 1000 (3 runs)", lines)
        self.assertIn("[2] SystemTap 5.1 cannot build modules for kernel 6.12.117+deb13-amd64: "
                      "uprobes-inode.c:50:17: error: 'uprobe_unregister' undeclared (1 run)", lines)

    def test_kernel_facts(self):
        """The kernel facts, read from a config by hand: the preemption
        model (dynamic or not), HZ, the RCU tasks-trace barrier option, the
        mitigations (either option's name), uprobes; and the summary's table
        of them, a column a guest."""
        text = ("CONFIG_PREEMPT_BUILD=y\n# CONFIG_PREEMPT_NONE is not set\n"
                "CONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_HZ=1000\n"
                "CONFIG_TASKS_TRACE_RCU_NO_MB=y\nCONFIG_SPECULATION_MITIGATIONS=y\n"
                "CONFIG_UPROBES=y\n")
        got = kernel.config_facts(text)
        self.assertEqual(list(got.values()), ["preempt-voluntary, dynamic", "1000", "y", "y", "y"])
        got = kernel.config_facts("CONFIG_PREEMPT_LAZY=y\nCONFIG_CPU_MITIGATIONS=y\n")
        self.assertEqual(list(got.values()), ["preempt-lazy", "?", "not set", "y", "not set"])
        lines = formats.kernel_facts([{"kernel_config": kernel.config_facts(text)}, {}],
                                        ["a 6.1", "b 7.2"])
        self.assertIn("| preemption model ", "\n".join(lines))
        self.assertRegex("\n".join(lines), r"\| HZ [^|]*\| 1000 +\| - +\|")
        self.assertEqual(formats.kernel_facts([{}, {}], ["a", "b"]), [])

    def test_2011_in_instructions(self):
        with tempfile.TemporaryDirectory() as top:
            render_lab.summary(top, self.FOLDERS)
            with open(os.path.join(top, "summary.md")) as f:
                md = f.read()
        # the 2011 seconds beside the guests' instructions, one column each
        self.assertRegex(md, r"\| process.mark \+ gettimeofday_ns \+ \$arg1 +\| 27.60 s +\| "
                             r"1,910 \[1,910, 1,910\] +\| not measured +\|")
        self.assertRegex(md, r"\| process.mark \+ \$arg1, no gettimeofday_ns +\| - +\| "
                             r"1,400 \[1,400, 1,400\] +\| skipped +\|")
        self.assertRegex(md, r"\| gettimeofday_ns\(\) share +\| 8.4 s +\| 510 +\| - +\|")
        self.assertIn("module runtime, sid guest 7.2.13 [instructions/event]", md)
        self.assertRegex(md, r"\| trixie \| 6.12.117\+deb13-amd64 \| 5.1/0.193, module runtime \| "
                             r"tcg +\| \[1\] +\| 3 ok, 1 skipped")

    def test_report_writes_the_summary(self):
        """report.py, given a lab's top folder, writes its summary.md (the
        suites in the order the lab ran them: their meta.json "started")
        and prints it, as the lab has it do."""
        with tempfile.TemporaryDirectory() as d:
            top = os.path.join(d, "20261201T000000Z-lab")
            shutil.copytree(os.path.dirname(self.FOLDERS[0]), top)
            for name, started in (("sid", "2026-12-01T00:10:00+00:00"),
                                  ("trixie", "2026-12-01T00:00:00+00:00")):
                meta = os.path.join(top, name, "meta.json")
                with open(meta) as f:
                    m = json.load(f)
                host.write_json(meta, dict(m, started=started))
            folders = render_lab.lab_folders(top)
            self.assertEqual([os.path.basename(x) for x in folders], ["trixie", "sid"])
            self.assertEqual(render_lab.lab_folders(folders[0]), [])  # a suite's own folder
            r = run([sys.executable, os.path.join(SCRIPTS, "report.py"), top])
            with open(os.path.join(top, "summary.md")) as f:
                md = f.read()
            want = render_lab.summary(os.path.join(d, "again"), folders)
        self.assertEqual(md, want)
        self.assertIn(md, r.stdout)
        self.assertLess(md.index("| trixie "), md.index("| sid "))


class Shares(unittest.TestCase):
    """How a suite's configurations are shared among guests (LAB_GUESTS),
    worked by hand."""
    def names(self, parts):
        return [[c.name for c in p] for p in parts]

    def test_idle_with_the_baseline_tracers_spread(self):
        cfgs = [configs.BY_NAME[n] for n in (
            "baseline", "idle-sdt", "ftrace-sdt", "ftrace-function", "bpftrace-function-count",
            "bpftrace-function-store", "stap-mark")]
        cost = {"ftrace-sdt": 1, "ftrace-function": 1, "bpftrace-function-count": 8,
                "bpftrace-function-store": 9, "stap-mark": 2, "idle-sdt": 0.5}
        # costliest first, each to the guest with the fewest of its tracer's,
        # then the least cost: store -> 2 (0.5 vs 0), count -> 1 (0.5 vs 9),
        # stap-mark -> 1 (8.5 vs 9), ftrace-sdt -> 2 (10.5 vs 9),
        # ftrace-function -> 1 (no ftrace there yet)
        self.assertEqual(self.names(shares.shares(cfgs, 2, lambda c: cost.get(c.name, 0))), [
            ["baseline", "idle-sdt", "ftrace-function", "bpftrace-function-count", "stap-mark"],
            ["baseline", "ftrace-sdt", "bpftrace-function-store"]])
        # one guest: all of them, in their order
        self.assertEqual(self.names(shares.shares(cfgs, 1)), [[c.name for c in cfgs]])

    def test_no_more_guests_than_shares(self):
        """The idle configurations are one share, each traced one another."""
        quick = [configs.BY_NAME[n] for n in suite.QUICK_CONFIGS]
        self.assertEqual(self.names(shares.shares(quick, 8)),
                         [["baseline", "stap-mark"], ["baseline", "stap-mark-alibi"]])
        idle = [configs.BY_NAME[n] for n in ("baseline", "idle-sdt", "stap-mark-empty")]
        self.assertEqual(self.names(shares.shares(idle, 4)),
                         [["baseline", "idle-sdt"], ["baseline", "stap-mark-empty"]])
        self.assertEqual(self.names(shares.shares(idle[:2], 4)), [["baseline", "idle-sdt"]])


class TornMeta(unittest.TestCase):
    """A guest killed within its file system's writeback delay can leave
    meta.json named but empty (CI saw it once under Ctrl-C): its rows are
    merged all the same, in their own unit, and the lab says why."""
    def guest_folder(self, top, name, cfg, meta_text):
        d = os.path.join(top, name)
        os.makedirs(os.path.join(d, "logs"))
        rows = [dict(config=c, threads=1, iterations=100, rep=1, status="ok", thread_wall_ns=9,
                     unit=record.INSTRUCTIONS) for c in (configs.BASELINE, cfg)]
        with open(os.path.join(d, "runs.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, record.COLUMNS)
            w.writeheader()
            w.writerows(rows)
        with open(os.path.join(d, "meta.json"), "w") as f:
            f.write(meta_text)
        return d

    def test_reopen_and_add_rows(self):
        from lab import merge
        with tempfile.TemporaryDirectory() as top:
            first = self.guest_folder(top, "first", "stap-mark", "")
            other = self.guest_folder(top, "other", "stap-mark-alibi", '{"skipped": {')
            try:
                folder = record.Folder.reopen(first)
            except ValueError as e:  # json's own error: the lab died so in CI
                self.fail(f"a torn meta.json stopped the merge: {e!r}")
            self.assertEqual(folder.unit, record.INSTRUCTIONS)  # its rows', not ns
            g = type("G", (), {"name": "sid/2", "sfx": "-2"})()
            merge.add_rows(folder, g, other, {("baseline", "1")})
            folder.skipped(configs.BY_NAME["stap-mark-empty"], [1], "not reached")
            folder.close()
            rows, meta, warnings = record.load(first)
        self.assertEqual([r["config"] for r in rows],
                         ["baseline", "stap-mark", "stap-mark-alibi", "stap-mark-empty"])
        self.assertEqual({r["unit"] for r in rows}, {record.INSTRUCTIONS})
        self.assertEqual(meta["unit"], record.INSTRUCTIONS)
        self.assertEqual(len(warnings), 1)  # the folder says its meta was torn
        self.assertRegex(warnings[0], r"meta\.json was torn when the lab merged it \(.*not "
                         r"valid JSON")


# Debian's CPython in the guests: bookworm's (RealPrograms), sid's (MixedKernel)
PYTHON_CONFIGS = ["python-untraced", "python-ftrace-entry", "python-bpftrace-entry"]
# One row of each tracer that runs on the host beside SystemTap's (QUICK's):
# sid moves, and each must still measure in its guest (issue 57: sid's
# bpftrace 0.27 failed every row on a guest /dev without fd, unnoticed).
EVERY_TRACER = ["ftrace-sdt", "bpftrace-sdt-count", "perf-stat-sdt", "lttng-flight"]


class RealPrograms(unittest.TestCase):
    tier = "guests"
    suites = ("bookworm",)

    def test_python_in_the_guests(self):
        """Debian's CPython in make lab: on bookworm (3.11, function__entry
        there) python-ftrace-entry counts every call at 1 and 2 threads, in
        instructions, against python-untraced, which runs in each guest
        holding one of its family and is kept once; nothing is left on the
        host.  (sid's CPython, 3.14, is MixedKernel's: sid's userland.)"""
        need_root(self)
        before = lab_state()
        with tempfile.TemporaryDirectory() as res:
            r = run([sys.executable, LAB_PY, "--lab", "bookworm", "--quick", "1",
                     "--lab-configs", ",".join(PYTHON_CONFIGS),
                     "--lab-guests", "2", "--results", res], timeout=5400)
            self.assertEqual(r.returncode, 0, r.stderr[-3000:])
            folders = glob.glob(os.path.join(res, "*-lab", "bookworm"))
            self.assertEqual(len(folders), 1, r.stderr[-3000:])
            rows, meta, _ = record.load(folders[0])
            if (meta["lab"].get("preflight") or "").startswith("lab: "):
                unavailable(self, meta["lab"]["preflight"])  # no mirror, no space...
        self.assertEqual(lab_state(), before)
        bw = rows
        self.assertEqual({x["unit"] for x in bw}, {record.INSTRUCTIONS})
        for n in (1, 2):
            cell = [x for x in bw if x["config"] == "python-untraced" and x["threads"] == n]
            self.assertEqual(len(cell), LAB_RUNS)  # one guest's, not both
            for x in [x for x in bw if x["config"] == "python-ftrace-entry" and x["threads"] == n]:
                self.assertEqual(x["status"], "ok", x["reason"])
                self.assertEqual(int(x["events_seen"]), n * QUICK_ITER)
                self.assertEqual(int(x["events_expected"]), n * QUICK_ITER)


class MixedKernel(unittest.TestCase):
    # today's Debian (sid's tools on trixie's kernel): the userland tier's,
    # which CI runs beside make test (make test-userland), keeping make
    # test within its 25 minutes; its root file system made by the lab
    tier = "userland"

    def test_quick_on_another_suites_kernel(self):
        """LAB=sid:trixie-backports QUICK=1: sid's tools on trixie-backports'
        kernel boot and run QUICK: the guest's kernel is that suite's (a
        Debian 13 build, +deb13, not sid's +deb14), its folder is
        sid+trixie-backports, the baseline counts, SystemTap's rows run or
        are skipped with the pre-flight's own reason; sid's CPython (3.14,
        no function__entry marker) has every python-* row skipped saying
        what it has; ftrace, bpftrace, perf and LTTng each have every run
        measured in sid's userland (EVERY_TRACER: a tracer whose run fails
        or is skipped there fails the test, named with its reason); nothing
        is left on the host."""
        need_root(self)
        before = lab_state()
        with tempfile.TemporaryDirectory() as res:
            rows, meta, _ = lab_run(self, ["--lab", "sid:trixie-backports", "--quick", "1",
                                           "--lab-configs", ",".join(suite.QUICK_CONFIGS
                                                                     + PYTHON_CONFIGS
                                                                     + EVERY_TRACER)],
                                    res, "sid+trixie-backports")
            for name in EVERY_TRACER:
                mine = [x for x in rows if x["config"] == name and x["rep"] not in ("", "0")]
                tools = meta.get("tools") or {}
                tracer = configs.BY_NAME[name].tracer
                with self.subTest(config=name):
                    self.assertTrue(mine, f"{name}: no row in sid's guest")
                    # measured: it ran and counted.  A miscount is the tool's
                    # finding, a row with its reason, not the suite's failure
                    # (sid's bpftrace 0.27.1 once saw 39,433 of 40,000 at 2
                    # threads: docs/findings/2026-12-05-bpftrace-0.27-in-sid.md)
                    for x in mine:
                        self.assertIn(x["status"], record.MEASURED,
                                      f"{tracer} ({tools.get(tracer, '?')}) measured nothing "
                                      f"in sid's guest: {name} at {x['threads']} threads, "
                                      f"{x['status']}: {x['reason']}")
            lab = meta["lab"]
            self.assertEqual(lab["suite"], "sid:trixie-backports")
            self.assertIn("+deb13", lab["kernel"])
            base = [x for x in rows if x["config"] == "baseline"]
            self.assertTrue(base)
            self.assertEqual({x["status"] for x in base}, {"ok"}, base)
            for x in rows:
                if x["config"].startswith("stap"):
                    if lab.get("preflight"):
                        self.assertEqual(x["status"], "skipped", x)
                        self.assertIn(lab["preflight"].split(": ")[-1][:40], x["reason"])
                    else:
                        self.assertEqual(x["status"], "ok", x)
            sid = [x for x in rows if x["config"].startswith("python-")]
            self.assertEqual({x["config"] for x in sid}, set(PYTHON_CONFIGS))
            self.assertEqual({x["status"] for x in sid}, {"skipped"})
            for x in sid:
                self.assertRegex(x["reason"], r"/usr/bin/python3\.11 not found.*"
                                 r"/usr/bin/python3\.1[2-9] has no python:function__entry")
        self.assertEqual(lab_state(), before)


class LifecycleGuest(unittest.TestCase):
    tier = "guests"

    def test_lifecycle_in_a_guest(self):
        """make lab LIFECYCLE=1 on sid at its smallest (ftrace, 1 and 10
        sites, 1 process, CELL_S=0: the pilots alone, and its bystander
        ways): in the guest every site live and fired once, a late process
        covered, every site its own byte again; the untraced neighbour's
        calls made and its cost an interval in instructions; the folder
        and the lab's summary in the guest's clock; nothing left in the
        guest or on the host (qemu, mounts, loop devices)."""
        need_root(self)
        before = lab_state()
        with tempfile.TemporaryDirectory() as res:
            r = run([sys.executable, LAB_PY, "--lifecycle", "1", "--tracers", "ftrace",
                     "--probes", "1,10", "--procs", "1", "--cell-s", "0", "--by-runs", "2",
                     "--results", res], timeout=3600)
            self.assertEqual(r.returncode, 0, r.stderr[-3000:])
            folders = glob.glob(os.path.join(res, "*-lab", "sid"))
            self.assertEqual(len(folders), 1, r.stderr[-3000:])
            meta, _ = record.read_meta(folders[0])
            if (meta["lab"].get("preflight") or "").startswith("lab: "):
                unavailable(self, meta["lab"]["preflight"])  # no mirror, no space, no qemu
            self.assertEqual(meta["kind"], render_lifecycle.KIND)
            self.assertIsNone(meta.get("failed"), meta)
            self.assertEqual(meta["lab"].get("modules_left"), [], meta["lab"])
            if meta["lab"].get("accel") == "tcg":
                self.assertEqual(meta["unit"], record.INSTRUCTIONS)
            tables = {}
            for name in (render_lifecycle.LIFECYCLE_CSV, render_lifecycle.BYSTANDER_CSV):
                with open(os.path.join(folders[0], name), newline="") as f:
                    tables[name] = list(csv.DictReader(f))
            lc = tables[render_lifecycle.LIFECYCLE_CSV]
            self.assertEqual(sorted((x["sweep"], x["sites"]) for x in lc),
                             [("guarded", "1"), ("procs", "1"), ("sites", "1"), ("sites", "10")])
            for x in lc:
                self.assertEqual((x["status"], x["counted"], x["late_covered"]),
                                 ("ok", "ok", "yes"), x)
                self.assertGreater(float(x["detach_s"]), 0)
                # the guarded marker's semaphore raised in the held and the late process
                self.assertEqual(x["semaphore"], "1/1" if x["sweep"] == "guarded" else "", x)
            ways = {b["way"]: b for b in render_lifecycle.bystanders(
                tables[render_lifecycle.BYSTANDER_CSV])}
            each = ways["ftrace common_pid filter (each thread)"]
            self.assertEqual((each["statuses"], each["trap"]), (["ok"], ["yes"]), each)
            self.assertGreater(each["lo_ns"], 0, each)
            self.assertEqual(ways["ftrace common_pid == PID"]["statuses"], ["mismatch"])
            with open(os.path.join(folders[0], "report.md")) as f:
                md = f.read()
            self.assertIn("(make lab's Debian sid guest)", md)
            if meta["unit"] == record.INSTRUCTIONS:
                self.assertIn("**guest's clock** under QEMU's -icount", md)
                self.assertRegex(md, r"\] instructions \|")
            with open(os.path.join(os.path.dirname(folders[0]), "summary.md")) as f:
                self.assertRegex(f.read(), r"# make lab LIFECYCLE=1\n(.*\n)*\| sid \| 7\.")
        self.assertEqual(lab_state(), before)


class Initramfs(unittest.TestCase):
    """The kit's own initramfs (lab/initrd.py): the modules in
    modprobe's order, what it cannot load refused (Debian's is booted
    then), the kernel's newc archive byte for byte, and its /init's
    failure line as the reason a guest stopped."""
    SAID = ("builtin virtio_pci\n"
            "insmod /lib/modules/7.2.13/kernel/drivers/block/virtio_blk.ko.xz \n"
            "insmod /lib/modules/7.2.13/kernel/crypto/crc32c-cryptoapi.ko.xz \n"
            "builtin crc32c\n"
            "insmod /lib/modules/7.2.13/kernel/fs/jbd2/jbd2.ko.xz \n"
            "insmod /lib/modules/7.2.13/kernel/crypto/crc32c-cryptoapi.ko.xz \n"
            "insmod /lib/modules/7.2.13/kernel/fs/ext4/ext4.ko \n")

    def test_load_order(self):
        self.assertEqual([os.path.basename(p) for p in guest_initrd.load_order(self.SAID)],
                         ["virtio_blk.ko.xz", "crc32c-cryptoapi.ko.xz", "jbd2.ko.xz", "ext4.ko"])
        for said, why in (("insmod /m/ext4.ko.xz errors=panic\n", "options (errors=panic)"),
                          ("insmod /m/ext4.ko.zst\n", "compression this initramfs does not"),
                          ("softdep ext4 pre: crc32c\n", "said 'softdep ext4 pre: crc32c'")):
            with self.subTest(said=said), self.assertRaisesRegex(common.LabError, re.escape(why)):
                guest_initrd.load_order(said)

    def test_newc_archive(self):
        """Each entry's 110-byte header (magic 070701, 13 fields of 8 hex
        digits), its name with a NUL, its data, each padded to 4 bytes,
        then TRAILER!!!: read back by hand here."""
        entries = [("dev", 0o40755, b"", 0), ("dev/console", 0o20600, b"", os.makedev(5, 1)),
                   ("init", 0o100755, b"#!x\n", 0), ("modules/00-a.ko", 0o100644, b"12345", 0)]
        raw, got, at = guest_initrd.newc(entries), [], 0
        while True:
            self.assertEqual(raw[at:at + 6], b"070701")
            f = [int(raw[at + 6 + 8 * i:at + 14 + 8 * i], 16) for i in range(13)]
            name = raw[at + 110:at + 110 + f[11] - 1].decode()
            self.assertEqual(raw[at + 110 + f[11] - 1], 0)  # the name's NUL
            at = (at + 110 + f[11] + 3) // 4 * 4
            data = raw[at:at + f[6]]
            at = (at + f[6] + 3) // 4 * 4
            if name == "TRAILER!!!":
                break
            got.append((name, f[1], data, os.makedev(f[9], f[10])))
        self.assertEqual(got, entries)
        self.assertEqual(at, len(raw))

    def test_a_second_boot_on_debians(self):
        """A guest whose kit's initramfs stopped it (its KIT-INITRD line) is
        booted once more on Debian's own, said in the line; one stopped
        otherwise is booted again as it was."""
        class Fake:
            def __init__(self, suite, console):
                self.suite, self.console, self.name, self.booted = suite, console, "sid", []
                self.reached, self.exited_early = False, True

            def start(self, accel, limit):
                self.booted.append(self.suite.initrd)

            def text(self):
                return self.console
        for console, second in (("KIT-INITRD: cannot mount /dev/vda: No such device\n",
                                 "debian.img"),
                                ("Kernel panic - not syncing: in sched_clock_cpu\n", "kit.cpio")):
            with self.subTest(console=console):
                s = types.SimpleNamespace(initrd="kit.cpio", debian_initrd="debian.img",
                                          name="sid", images=lambda g: None,
                                          release=lambda: None)
                g = Fake(s, console)
                s.tcg = [g]
                args = types.SimpleNamespace(accel="tcg", icount=True)
                watch, said = guest_qemu.watch, []
                guest_qemu.watch, real_say = (lambda gs: None), guest_qemu.say
                guest_qemu.say = said.append
                try:
                    guest_qemu.boot_guests(s, 60, args, {})
                finally:
                    guest_qemu.watch, guest_qemu.say = watch, real_say
                self.assertEqual(g.booted, ["kit.cpio", second])
                self.assertEqual(s.initrd, second)
                self.assertEqual("booting Debian's own initramfs" in said[-1],
                                 second == "debian.img", said)

    def test_its_failure_is_the_reason(self):
        console = ("\x1b[2J[    2.10] Run /init as init process\n"
                   "[    2.30] KIT-INITRD: cannot mount /dev/vda: No such device\n"
                   "[    2.31] Kernel panic - not syncing: Attempted to kill init!\n")
        self.assertEqual(guest_qemu.stopped_why(console),
                         "KIT-INITRD: cannot mount /dev/vda: No such device")
        self.assertEqual(guest_qemu.stopped_why(console.replace("KIT-INITRD:", "other:")),
                         "Kernel panic - not syncing: Attempted to kill init!")


class KvmVerdict(unittest.TestCase):
    def test_remembered_for_this_host_only(self):
        """KVM's failure is kept (build/lab/kvm.json) for the host it was
        found on, so the next lab does not spend BOOT_S finding it again;
        on another kernel, CPU or qemu it is tried anew."""
        old = guest_qemu.KVM_VERDICT
        with tempfile.TemporaryDirectory() as d:
            guest_qemu.KVM_VERDICT = os.path.join(d, "kvm.json")
            try:
                self.assertIsNone(guest_qemu.kvm_known())  # never tried
                host.write_json(guest_qemu.KVM_VERDICT,
                                {"host": guest_qemu.kvm_host(), "why": "no BIOS"})
                self.assertRegex(guest_qemu.kvm_known(), r"^no BIOS; found by a lab before on this "
                                 r"host \(.*kvm\.json, removed by make clean; ACCEL=kvm tries")
                host.write_json(guest_qemu.KVM_VERDICT, {"host": ["another", "host", "qemu"],
                                                         "why": "no BIOS"})
                self.assertIsNone(guest_qemu.kvm_known())
            finally:
                guest_qemu.KVM_VERDICT = old


class Quick(unittest.TestCase):
    tier = "guests"

    def test_quick_lab(self):
        """In the guest, on the module runtime with modules built in the
        chroot: stap-mark counts exactly at 1 and 2 threads (flight
        recorder, counts from procfs, staprun -d after), stap-mark-alibi
        counts exactly from the module's probe hit report (built on a
        terminal, run by staprun -c); no module is left loaded in
        the guest; the folder says which accelerator ran it; nothing (qemu,
        mounts, loop devices) is left on the host."""
        need_root(self)
        before = lab_state()
        with tempfile.TemporaryDirectory() as res:
            rows, meta, folder = lab_run(self, ["--quick", "1", "--lab-guests", "2"], res)
            folders = [folder]
            lab = meta["lab"]
            self.assertIsNone(lab.get("preflight"), lab)
            self.assertIn(lab["accel"], ("kvm", "tcg"))
            self.assertEqual(lab["modules_left"], [])
            # booted on the kit's own initramfs (lab/initrd.py), not Debian's
            self.assertEqual(lab["initramfs"], guest_initrd.name(lab["kernel"]))
            by = {(x["config"], int(x["threads"])): x for x in rows}
            self.assertEqual(sorted(by), [("baseline", 1), ("baseline", 2),
                                          ("stap-mark", 1), ("stap-mark", 2),
                                          ("stap-mark-alibi", 1), ("stap-mark-alibi", 2)])
            for n in (1, 2):
                mark = by[("stap-mark", n)]
                self.assertEqual(mark["status"], "ok", mark["reason"])
                self.assertEqual(mark["runtime"], "module")
                self.assertEqual(int(mark["events_seen"]), n * QUICK_ITER)
                alibi = by[("stap-mark-alibi", n)]
                # counted exactly from the module's own probe hit report
                self.assertEqual(alibi["status"], "ok", alibi["reason"])
                self.assertEqual(int(alibi["events_seen"]), n * QUICK_ITER)
                self.assertIn("counted from the probe hit report (-DSTP_ALIBI", alibi["note"])
            md = report_text(folders[0])
            self.assertIn("## Guest lab: Debian sid", md)
            if lab["accel"] == "tcg":  # ICOUNT=1 by default: instructions, never ns
                self.assertTrue(lab["icount"])
                # two guests at once, one folder: the first guest's baseline
                # alone (3 runs a thread count), the second's in its log
                self.assertEqual([g["guest"] for g in lab["guests"]], ["sid/1", "sid/2"])
                # which goes first depends on the costs an earlier lab measured
                self.assertEqual(sorted(g["configs"] for g in lab["guests"]),
                                 [["baseline", "stap-mark"], ["baseline", "stap-mark-alibi"]])
                self.assertEqual(len([x for x in rows if x["config"] == "baseline"]),
                                 2 * LAB_RUNS)
                with open(os.path.join(folders[0], "logs", "runs-2.csv"), newline="") as f:
                    theirs = [x["config"] for x in csv.DictReader(f)]
                self.assertEqual(theirs.count("baseline"), 2 * LAB_RUNS)
                self.assertIn("these figures are **guest instructions**", md)
                self.assertNotIn("[ns/event]", md)
            with open(os.path.join(glob.glob(os.path.join(res, "*-lab"))[0], "summary.md")) as f:
                self.assertRegex(f.read(), r"\| sid +\| 7\.")
        self.assertEqual(lab_state(), before)


    def test_module_runtime_misses(self):
        """MISS on the module runtime, in the guest: the first 5000 of each
        thread's calls go to kit_decoy(), so the module's own count is
        5000 a thread short and stap-mark must be a `mismatch` with both
        numbers (a back-end that assumed its count would say `ok`)."""
        need_root(self)
        with tempfile.TemporaryDirectory() as res:
            r = run([sys.executable, LAB_PY, "--quick", "1", "--miss", "5000", "--results", res],
                    timeout=5400)
            self.assertEqual(r.returncode, 0, r.stderr[-3000:])
            (folder,) = glob.glob(os.path.join(res, "*-lab", "sid"))
            rows, meta, _ = record.load(folder)
            if (meta["lab"].get("preflight") or "").startswith("lab: "):
                unavailable(self, meta["lab"]["preflight"])
        marks = [x for x in rows if x["config"] == "stap-mark"]
        self.assertEqual(len(marks), 2 * LAB_RUNS)  # THREADS=1..2
        for x in marks:
            n = int(x["threads"])
            self.assertEqual((x["status"], x["runtime"], int(x["events_seen"])),
                             ("mismatch", "module", n * (QUICK_ITER - 5000)), x["reason"])
            self.assertIn(f"expected {n * QUICK_ITER}", x["reason"])


class Icount(unittest.TestCase):
    """ICOUNT=1 (the default under TCG): the guest's clock counts
    instructions, and the kit's own timing path turns them into per-call
    figures exact enough to see one instruction."""
    tier = "guests"

    def lab(self, res):
        r = run([sys.executable, LAB_PY, "--quick", "1", "--accel", "tcg", "--icount", "1",
                 "--lab-configs", "baseline,idle-sdt,idle-sdt-nop5,stap-mark-empty",
                 "--results", res], timeout=5400)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        (folder,) = glob.glob(os.path.join(res, "*-lab", "sid"))
        rows, meta, _ = record.load(folder)
        if (meta["lab"].get("preflight") or "").startswith("lab: "):
            unavailable(self, meta["lab"]["preflight"])
        self.assertEqual(meta["unit"], "instructions")
        self.assertTrue(meta["lab"]["icount"])
        self.assertEqual({x["unit"] for x in rows}, {"instructions"})
        self.assertIn("overhead [instructions/event]: mean [95% CI]", report_text(folder))
        cells = {(c["config"], c["threads"]): c for c in report.analyse(rows, meta)["cells"]}
        return cells

    def test_one_instruction_and_two_boots(self):
        """The idle sdt build costs the baseline plus its one `nop`, 1.00
        instruction a call within 0.05 at 1 thread, and so does the 5-byte
        nop's (one instruction however long), in each of two boots; and the
        two boots give the same figure for a traced configuration
        (stap-mark-empty: the module's trap) within 1%, at 1 and 2 threads."""
        need_root(self)
        with tempfile.TemporaryDirectory() as res1, tempfile.TemporaryDirectory() as res2:
            first, second = self.lab(res1), self.lab(res2)
        # At 1 thread, from each cell's fastest run: a timer interrupt that
        # lands in a 20000-call window (~3% of them) adds thousands of
        # instructions, ~0.1-0.25 a call, and interrupts only ever add.  (At
        # 2 threads a switch between them does the same: README.)
        for idle in ("idle-sdt", "idle-sdt-nop5"):
            for cells in (first, second):
                with self.subTest(config=idle):
                    extra = cells[(idle, 1)]["min_ns"] - cells[("baseline", 1)]["min_ns"]
                    self.assertAlmostEqual(extra, 1.0, delta=0.05)
        for n in (1, 2):
            with self.subTest(config="stap-mark-empty", threads=n):
                a = first[("stap-mark-empty", n)]["overhead"]["mean_ns"]
                b = second[("stap-mark-empty", n)]["overhead"]["mean_ns"]
                self.assertGreater(a, 100)  # a trap and a handler: hundreds at least
                self.assertLess(abs(a / b - 1), 0.01, (a, b))


class Shell(unittest.TestCase):
    tier = "guests"

    def test_shell_counts_instructions(self):
        """make lab-shell under TCG (ICOUNT=1): a command typed in the guest
        gets the lab's yardstick, the clock counting instructions; typed
        there, the idle marker's build costs the bare call's plus its one
        `nop` (1.00 instruction a call within 0.05, each build's fastest of
        three runs, from the target's own text output), and leaving the
        shell powers the guest off."""
        need_root(self)
        before = lab_state()
        p = subprocess.Popen([sys.executable, LAB_PY, "--shell", "--accel", "tcg"], cwd=ROOT,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
        out = b""
        try:
            os.set_blocking(p.stdout.fileno(), False)
            deadline, sent = time.monotonic() + 900, False
            while p.poll() is None and time.monotonic() < deadline:
                chunk = p.stdout.read() or b""
                out += chunk
                banner = out.find(b"try: stap -F stp/mark.stp")
                if not sent and banner >= 0 and b"# " in out[banner:]:  # root's prompt: it reads
                    # 10M calls: a timer tick's few thousand instructions
                    # are < 0.01 a call; into a file, printed after: the
                    # serial console's own interrupts stay out of the runs
                    p.stdin.write(b"for b in plain plain plain sdt sdt sdt; do "
                                  b"build/benchmark-$b -i 10000000 -f text >>/tmp/o; done; "
                                  b"cat /tmp/o; exit\n")
                    p.stdin.flush()
                    sent = True
                time.sleep(0.2)
            out += p.stdout.read() or b""
        finally:
            if p.poll() is None:
                p.kill()
            p.wait()
        text = out.decode(errors="replace")
        if "lab: " in text and "root file system" in text and "failed" in text:
            unavailable(self, text[-500:])
        self.assertIn("The guest's clock counts instructions (QEMU -icount shift=0)", text)
        per_call = [float(x) for x in re.findall(r"calls, wall [\d.]+ s, user .*?, ([\d.]+) "
                                                  r"ns/call", text)]
        self.assertEqual(len(per_call), 6, text[-2000:])
        # each build's fastest of three: an interrupt only ever adds (Icount)
        self.assertAlmostEqual(min(per_call[3:]) - min(per_call[:3]), 1.0, delta=0.05)
        self.assertEqual(p.returncode, 0, text[-2000:])
        self.assertEqual(lab_state(), before)


class Faults(unittest.TestCase):
    tier = "guests"

    def test_a_guest_past_its_time_limit(self):
        """A guest that has not finished at LAB_TIME_LIMIT (here 5 s, less
        than a boot takes under TCG): qemu is killed, the suite's rows are
        skipped saying so in one line, and nothing is left on the host."""
        need_root(self)
        before = lab_state()
        with tempfile.TemporaryDirectory() as res:
            r = run([sys.executable, LAB_PY, "--quick", "1", "--accel", "tcg",
                     "--lab-time-limit", "5", "--results", res], timeout=5400)
            self.assertEqual(r.returncode, 0, r.stderr[-3000:])
            rows, meta, _ = record.load(glob.glob(os.path.join(res, "*-lab", "sid"))[0])
        why = meta["lab"].get("preflight") or ""
        if why.startswith("lab: mmdebstrap") or "missing Debian packages" in why:
            unavailable(self, why)
        self.assertEqual({x["status"] for x in rows}, {"skipped"})
        self.assertEqual({x["reason"] for x in rows},
                         {"lab: the guest (tcg) never reached userspace in 5 s"})
        self.assertIn("lab: sid: the guest (tcg) never reached userspace in 5 s", r.stderr)
        self.assertEqual(lab_state(), before)

    ONE, TWO = ("baseline", "ftrace-sdt"), ("baseline", "ftrace-sdt", "ftrace-function")

    @staticmethod
    def sigint_default():
        """The lab as a terminal starts it: SIGINT not ignored, even where
        the suite itself runs in the background (a shell without job
        control starts its `&` jobs ignoring SIGINT, and they pass that on)."""
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    def interrupt_mid_run(self, res, stop, cfgs=ONE, guests=1):
        """Runs the lab (QUICK, CFGS, TCG, GUESTS at once: each guest runs
        the baseline and one of the others) until the first guest has done
        its first run (of 12), then STOP(lab process); (return code,
        stderr, rows, meta, the configuration of that first run)."""
        p = subprocess.Popen([sys.executable, LAB_PY, "--quick", "1", "--accel", "tcg",
                              "--lab-configs", ",".join(cfgs), "--lab-guests", str(guests),
                              "--results", res],
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True, preexec_fn=Faults.sigint_default)
        err = []
        who = "sid" if guests == 1 else "sid/1"  # whose rows the folder has
        try:
            first = None
            for line in p.stderr:
                err.append(line)
                m = re.search(rf"lab: {who}: .*\[threads=1 round 1, 1/2\] (\S+)", line)
                if m:  # its row is on the guest's disk: written before this line
                    first = m.group(1)
                    stop(p)
                    break
            err += p.stderr.readlines()
            rc = p.wait(timeout=600)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        text = "".join(err)
        folders = glob.glob(os.path.join(res, "*-lab", "sid"))
        if not folders:
            self.fail(text[-3000:])
        rows, meta, _ = record.load(folders[0])
        if (meta.get("lab", {}).get("preflight") or "").startswith("lab: "):
            unavailable(self, meta["lab"]["preflight"])
        self.assertIsNotNone(first, text[-3000:])
        return rc, text, rows, meta, first

    def check_kept(self, rows, why, first, cfgs=ONE, err=""):
        """The first run's row (and whatever followed before the stop
        reached the guests) kept as the guest wrote it; each cell of CFGS
        they did not reach, one skipped row saying WHY.  ERR: the lab's
        standard error, said with any failure."""
        said = "\n" + err[-3000:]
        done = {(x["config"], x["threads"]) for x in rows if x["status"] == "ok"}
        self.assertIn((first, 1), done, said)
        skipped = [((x["config"], x["threads"]), x["reason"]) for x in rows
                   if x["status"] == "skipped"]
        cells = {(c, n) for c in cfgs for n in common.LAB_THREADS}
        self.assertEqual(sorted(k for k, _ in skipped), sorted(cells - done), said)
        self.assertTrue(skipped, "the guest finished before it was stopped" + said)
        self.assertEqual({w for _, w in skipped}, {f"lab: {why}: not run"}, said)

    def test_a_guest_killed_mid_run(self):
        """qemu killed (SIGKILL) while the guest runs: the rows it wrote
        are kept (its file system's journal replayed), the cells it did not
        reach are skipped saying qemu was killed, and nothing is left."""
        need_root(self)
        before = lab_state()

        def kill_qemu(lab):  # the lab's own qemu: a descendant, never a name
            mine = pids_of("qemu-system-x86", lab.pid)  # comm: 15 characters
            self.assertEqual(len(mine), 1, descendants(lab.pid))
            os.kill(mine[0], signal.SIGKILL)
        with tempfile.TemporaryDirectory() as res:
            rc, err, rows, meta, first = self.interrupt_mid_run(res, kill_qemu)
        why = "the guest (tcg) stopped before it finished: qemu was killed by signal 9"
        self.assertEqual(rc, 0, err[-3000:])
        self.assertIn(f"lab: sid: {why}; keeping the rows it wrote", err)
        self.assertEqual(meta["lab"]["unfinished"], why)
        self.check_kept(rows, why, first)
        self.assertEqual(lab_state(), before)

    def test_ctrl_c_mid_run(self):
        """Ctrl-C (SIGINT) during make lab, two guests running: exit 130,
        both stopped (but one that had already finished: a QUICK share
        takes ~2 s, and one guest may boot seconds before the other), the
        rows they wrote kept in one results folder, nothing left."""
        need_root(self)
        before = lab_state()
        with tempfile.TemporaryDirectory() as res:
            rc, err, rows, meta, first = self.interrupt_mid_run(
                res, lambda lab: lab.send_signal(signal.SIGINT), self.TWO, guests=2)
        why = "the lab was interrupted (Ctrl-C or SIGTERM)"
        self.assertEqual(rc, 130, err[-3000:])
        self.assertIn("the rows the guest wrote are in", err)
        self.check_kept(rows, why, first, self.TWO, err)

        def finished(guest):  # its runner's last line, on its console, came before the stop
            return re.search(rf"lab: {re.escape(guest)}: +\d+ s: {re.escape(guest_qemu.DONE)}",
                             err) is not None
        self.assertFalse(finished("sid/1"), err[-3000:])
        self.assertEqual([(g["guest"], g["unfinished"]) for g in meta["lab"]["guests"]],
                         [("sid/1", why), ("sid/2", None if finished("sid/2") else why)],
                         err[-3000:])
        self.assertEqual(lab_state(), before, err[-3000:])


if __name__ == "__main__":
    unittest.main()
