"""make lab (scripts/lab.py): SystemTap's module runtime in a guest kernel,
for real: what CI runs (`QUICK=1`: Debian sid's stap-mark and
stap-mark-alibi at THREADS=1..2), and its input checks.  Slow the first
time on a machine (mmdebstrap); the root file system is cached in
build/lab/ after that."""
import glob
import os
import re
import subprocess
import sys
import tempfile
import unittest

from kit_test import ROOT, SCRIPTS, need_root, run, unavailable
import lab
import record
import report

LAB_PY = os.path.join(SCRIPTS, "lab.py")
QUICK_ITER = 20000  # lab.py's QUICK runs


def lab_state():
    """What a lab could leave behind: qemu processes, mounts under the
    repository, loop devices."""
    qemu = subprocess.run(["pgrep", "-f", "qemu-system"], stdout=subprocess.PIPE,
                          text=True).stdout.split()
    with open("/proc/mounts") as f:
        mounts = [ln.split()[1] for ln in f if ln.split()[1].startswith(ROOT)]
    loops = subprocess.run(["losetup", "-a"], stdout=subprocess.PIPE, text=True).stdout.split("\n")
    return {"qemu": qemu, "mounts": mounts, "loops": [ln for ln in loops if ln.strip()]}


class Inputs(unittest.TestCase):
    def test_bad_suite(self):
        r = run([sys.executable, LAB_PY, "--lab", "sid,woody"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("LAB 'sid,woody' is not allowed: want a comma-separated list of "
                      "sid, trixie, bookworm", r.stderr)
        r = run([sys.executable, LAB_PY, "--accel", "xen"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("ACCEL 'xen' is not allowed", r.stderr)
        for bad in ("2", "yes"):
            r = run([sys.executable, LAB_PY, "--icount", bad])
            self.assertEqual(r.returncode, 2)
            self.assertIn(f"ICOUNT '{bad}' is not allowed: want 0 or 1", r.stderr)
        r = run([sys.executable, LAB_PY, "--miss", "x"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("MISS 'x' is not allowed: want a whole number in 0..", r.stderr)
        r = run([sys.executable, LAB_PY], env=dict(os.environ, LAB_CONFIGS="nonexistent"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("LAB_CONFIGS 'nonexistent' matches no configuration", r.stderr)

    def test_inputs_listed(self):
        """The lab's inputs are params.Param rows, so `make help` lists each
        with its default."""
        r = run(["make", "-s", "help"])
        for line in ("LAB=sid", "QUICK=0", "NO_INSTALL=0", "ICOUNT=1", "MISS=0", "STAP_TIMING=0",
                     "ACCEL=auto", "LAB_TIME_LIMIT=0", "LAB_CONFIGS=every stap-*"):
            self.assertRegex(r.stdout, r"make lab .*\n(\s+\S.*\n)*\s+" + re.escape(line))


class Quick(unittest.TestCase):
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
            r = run([sys.executable, LAB_PY, "--quick", "1", "--results", res], timeout=5400)
            self.assertEqual(r.returncode, 0, r.stderr[-3000:])
            folders = glob.glob(os.path.join(res, "*-lab", "sid"))
            self.assertEqual(len(folders), 1, r.stderr[-3000:])
            rows, meta, _ = record.load(folders[0])
            lab = meta["lab"]
            if (lab.get("preflight") or "").startswith("lab: "):
                # mmdebstrap could not reach the mirror, no space, no qemu...
                unavailable(self, lab["preflight"])
            self.assertIsNone(lab.get("preflight"), lab)
            self.assertIn(lab["accel"], ("kvm", "tcg"))
            self.assertEqual(lab["modules_left"], [])
            by = {(x["config"], int(x["threads"])): x for x in rows}
            self.assertEqual(sorted(by), [("stap-mark", 1), ("stap-mark", 2),
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
            with open(os.path.join(folders[0], "report.md")) as f:
                md = f.read()
            self.assertIn("## Guest lab: Debian sid", md)
            if lab["accel"] == "tcg":  # ICOUNT=1 by default: instructions, never ns
                self.assertTrue(lab["icount"])
                self.assertIn("these figures are **guest instructions**", md)
                self.assertNotIn("[ns/event]", md)
            with open(os.path.join(glob.glob(os.path.join(res, "*-lab"))[0], "summary.md")) as f:
                self.assertIn("| sid |", f.read())
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
        self.assertEqual(len(marks), 2 * lab.LAB_RUNS)  # THREADS=1..2
        for x in marks:
            n = int(x["threads"])
            self.assertEqual((x["status"], x["runtime"], int(x["events_seen"])),
                             ("mismatch", "module", n * (QUICK_ITER - 5000)), x["reason"])
            self.assertIn(f"expected {n * QUICK_ITER}", x["reason"])


class Icount(unittest.TestCase):
    """ICOUNT=1 (the default under TCG): the guest's clock counts
    instructions, and the kit's own timing path turns them into per-call
    figures exact enough to see one instruction."""

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
        with open(os.path.join(folder, "report.md")) as f:
            self.assertIn("overhead [instructions/event]: mean [95% CI]", f.read())
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


class Faults(unittest.TestCase):
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


if __name__ == "__main__":
    unittest.main()
