"""make lab (scripts/lab): SystemTap's module runtime in a guest kernel,
for real: what CI runs (`QUICK=1`: Debian sid's baseline, stap-mark and
stap-mark-alibi at THREADS=1..2, two guests at once) and MISS's
miscount on the module runtime (`Quick`); a guest past its time limit,
qemu killed and Ctrl-C mid-run (`Faults`); the lab's input checks
(`Inputs`; SUITE:KERNEL's against the host's Debian mirror:
`KernelAxis`).  Slow the first time on a machine (mmdebstrap); the root
file system is cached in build/lab/ after that.  lab_run and lab_state,
for a test that runs a lab, live here (test_lab_guests and test_where
import them).

The lab's other tests, each in a test_lab_*.py of its own: the guests'
image and boot (test_lab_image), two labs of one suite at once
(test_lab_twolabs), the guests' shares, merge and summary
(test_lab_merge), real programs, the instruction count and the shell in
guests (test_lab_guests).

    make test TESTS=test_lab.          # this file's tests (TESTS=test_lab_image: that file's)

Needs root, qemu, mmdebstrap and the host's Debian mirror for its guests
(skipped with the reason otherwise); Inputs needs python3 alone.
"""
import csv
import glob
import os
import re
import signal
import subprocess
import sys
import tempfile
import unittest

import kit_test
from kit_test import ROOT, SCRIPTS, descendants, need_root, pids_of, report_text, run, unavailable
import record
from lab import common, suite
from lab import initrd as guest_initrd
from lab import qemu as guest_qemu
from lab.init import LAB_RUNS, QUICK_ITER

LAB_PY = os.path.join(SCRIPTS, "lab")


def lab_state():
    """What a lab could leave behind: qemu processes below this one (the
    suite, their subreaper: what a lab orphaned is still below it; not
    another tier's `qemu-system-x86_64 --version`), mounts under the
    repository (but those of a root file system the runner's prebuild is
    building beside: kit_test.PREBUILDING), loop devices."""
    qemu = sorted(pid for pid, comm in descendants(os.getpid()).items()
                  if comm.startswith("qemu-system"))
    theirs = tuple(os.path.join(common.LAB_DIR, suite.folder_name(n), "rootfs.tmp") + "/"
                   for n in kit_test.PREBUILDING)
    with open("/proc/mounts") as f:
        mounts = [m for m in (ln.split()[1] for ln in f)
                  if m.startswith(ROOT) and not (m + "/").startswith(theirs)]
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


class Quick(unittest.TestCase):
    tier = "guests"

    def test_quick_lab(self):
        """In the guest, on the module runtime with modules built in the
        chroot: stap-mark counts exactly at 1 and 2 threads (flight
        recorder, counts from procfs, staprun -d after), stap-mark-alibi
        counts exactly from the module's probe hit report (built on a
        terminal, run by staprun -c); no module is left loaded in
        the guest; the folder says which accelerator ran it; the suite's
        base image is as it was made (its guests boot it read-only);
        Debian's initramfs is in the root file system, for the fallback and
        LAVA; nothing (qemu, mounts, loop devices) is left on the host."""
        need_root(self)
        before = lab_state()
        base = os.path.join(common.LAB_DIR, "sid", suite.BASE)
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
        # written before its key (base.img.ok), never after: no guest wrote to it
        self.assertLessEqual(os.stat(base).st_mtime_ns, os.stat(base + ".ok").st_mtime_ns)
        # Debian's initramfs (the fallback's, LAVA's), made once at the end of the
        # build (lab/rootfs.py's ONE_INITRD), and the link a stock install has
        rootfs = os.path.join(common.LAB_DIR, "sid", "rootfs")
        debian = f"initrd.img-{lab['kernel']}"
        self.assertGreater(os.path.getsize(os.path.join(rootfs, "boot", debian)), 2 ** 20)
        self.assertEqual(os.readlink(os.path.join(rootfs, "initrd.img")), f"boot/{debian}")
        self.assertEqual(lab_state(), before)


    def test_module_runtime_misses(self):
        """MISS on the module runtime, in the guest: the first 5000 of each
        thread's calls go to kit_decoy(), so the module's own count is
        5000 a thread short and stap-mark must be a `mismatch` with both
        numbers (a back-end that assumed its count would say `ok`)."""
        need_root(self)
        with tempfile.TemporaryDirectory() as res:
            # (stap-mark and its baseline alone: the alibi's module and runs
            # would add a minute and nothing this test reads)
            r = run([sys.executable, LAB_PY, "--quick", "1", "--miss", "5000", "--lab-configs",
                     "baseline,stap-mark", "--results", res], timeout=5400)
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

    def interrupt_mid_run(self, res, stop, cfgs=ONE, guests=1):
        """Runs the lab (QUICK, CFGS, TCG, GUESTS at once: each guest runs
        the baseline and one of the others) until the first guest has done
        its first run (of 12), then STOP(lab process); (return code,
        stderr, rows, meta, the configuration of that first run)."""
        p = subprocess.Popen([sys.executable, LAB_PY, "--quick", "1", "--accel", "tcg",
                              "--lab-configs", ",".join(cfgs), "--lab-guests", str(guests),
                              "--results", res],
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True, preexec_fn=kit_test.sigint_default)
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
