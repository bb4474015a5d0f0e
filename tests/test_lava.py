"""The kit in LAVA (scripts/lava/, lava/kit.yaml): each cell of a
results folder as a lava-test-case measurement, with figures worked by
hand; the test definition and a qemu job it writes checked with LAVA's own
schemas (Debian's lava-common), and broken ones refused with LAVA's
message.  Whether lava-run itself runs a job here: docs/lava.md."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from kit_test import EXPECTED, ROOT, SCRIPTS, descendants, need_root, run, unavailable
import configs
import lava as kit_lava
from lava.cases import cases as lava_cases
import record

LAVA_PY = os.path.join(SCRIPTS, "lava")  # the wing, run as `python3 scripts/lava`
PAIRING = os.path.join(ROOT, "tests", "fixtures", "report", "pairing")
DEB_PYTHON = "/usr/bin/python3"  # Debian's, where lava-common's modules are
LAVA_TMP = "/var/lib/lava/dispatcher/tmp"  # lava-run's scratch


def lava(*args):
    return run([sys.executable, LAVA_PY, *args])


def need_lava(tc):
    r = subprocess.run([DEB_PYTHON, "-c", "import lava_common.schemas, yaml"],
                       stderr=subprocess.PIPE, text=True)
    if r.returncode:
        unavailable(tc, "LAVA's lava_common not importable (Debian package "
                    f"{kit_lava.NEEDS['lava_common']})")


class Cases(unittest.TestCase):
    def test_pairing(self):
        """tests/fixtures/report/pairing (test_stats.Pairing's figures):
        baseline 100, 300, 200 ns a call (mean 200); ftrace-sdt paired by
        repetition 86.667 ns per event, 95% interval [-162.18, 335.51];
        every run ok, so every case passes.  Beside the test:
        tests/expected/lava-cases-pairing.txt."""
        r = lava("cases", PAIRING)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(EXPECTED, "lava-cases-pairing.txt")) as f:
            self.assertEqual(r.stdout, f.read())

    def test_results(self):
        """A skipped cell is `skip` with no measurement; a cell whose runs
        miscounted is `fail`, its figure still given."""
        with tempfile.TemporaryDirectory() as res:
            folder = record.Folder(res)
            base = dict(threads=1, iterations=1000, unit="ns", tracer="none")
            for rep, (b, m) in enumerate(((100000, 600000), (110000, 640000)), start=1):
                folder.write(dict(base, config="baseline", rep=rep, status="ok",
                                  thread_wall_ns=b))
                folder.write(dict(base, config="ftrace-sdt", tracer="ftrace", rep=rep,
                                  status="mismatch", thread_wall_ns=m, events_expected=1000,
                                  events_seen=999))
            folder.skipped(configs.BY_NAME["lttng-disk"], [1], "no LTTng here")
            folder.close()
            r = lava("cases", folder.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        # baseline 100 and 110 ns a call, mean 105; ftrace-sdt 600 and 640:
        # paired differences 500 and 530, mean 515
        self.assertEqual(lines[0], "lava-test-case baseline-t1 --result pass "
                         "--measurement 105.0000 --units ns")
        self.assertEqual(lines[1], "lava-test-case ftrace-sdt-t1 --result fail "
                         "--measurement 515.0000 --units ns")
        self.assertIn("lava-test-case lttng-disk-t1 --result skip", lines)

    def test_a_call_is_not_an_event(self):
        """A real program's cell whose events nothing counted (a user's
        script: `unverified`, no count) is measured a call, and its units
        say so (ns/call), never passed off as a cost per event (issue 67);
        one whose events were counted is per event: 515 ns a call over 5
        events a call is 103 ns."""
        with tempfile.TemporaryDirectory() as res:
            folder = record.Folder(res)
            base = dict(threads=1, iterations=1000, calls=1000, unit="ns")
            for rep, (b, m) in enumerate(((100000, 600000), (110000, 640000)), start=1):
                folder.write(dict(base, config="user-untraced", tracer="none", rep=rep,
                                  status="ok", thread_wall_ns=b))
                folder.write(dict(base, config="user-script-bpftrace", tracer="bpftrace",
                                  rep=rep, status="unverified", thread_wall_ns=m))
                folder.write(dict(base, config="user-perf", tracer="perf", rep=rep,
                                  status="agreed", thread_wall_ns=m, events_seen=5000,
                                  events_expected=5000))
            folder.close()
            got = {name: (value, unit) for name, _, value, unit in lava_cases(folder.dir)}
        self.assertEqual(got["user-script-bpftrace-t1"], (515.0, "ns/call"))
        self.assertEqual(got["user-perf-t1"], (103.0, "ns"))

    def test_not_a_folder(self):
        r = lava("cases", "/nonexistent")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no such results folder", r.stderr)


class Schemas(unittest.TestCase):
    tier = "guests"

    def setUp(self):
        need_lava(self)

    def test_the_test_definition(self):
        r = lava("validate", os.path.join(ROOT, "lava", "kit.yaml"))
        self.assertEqual(r.returncode, 0, r.stderr)

    def job(self, tmp):
        rootfs = os.path.join(tmp, "rootfs.ext4")
        open(rootfs, "w").close()
        r = lava("job", "--suite", "sid", "--rootfs", rootfs)
        if r.returncode and "no kernel in" in r.stderr:
            unavailable(self, r.stderr.strip())  # make lab has not built sid here
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_a_qemu_job_validates(self):
        with tempfile.TemporaryDirectory() as tmp:
            text = self.job(tmp)
            self.assertIn("device_type: qemu", text)
            self.assertIn("-icount shift=0", text)
            path = os.path.join(tmp, "job.yaml")
            with open(path, "w") as f:
                f.write(text)
            r = lava("validate", path)
            self.assertEqual(r.returncode, 0, r.stderr)

    def test_broken_jobs_are_refused(self):
        """LAVA's schema refuses a job without device_type, one with a boot
        method it does not know, and a test definition without steps."""
        with tempfile.TemporaryDirectory() as tmp:
            text = self.job(tmp)
            for what, broken, why in (
                    ("no device_type", text.replace("device_type: qemu\n", ""),
                     '"device_type" or multinode should be defined'),
                    ("a boot method LAVA lacks", text.replace("method: qemu", "method: nosuch"),
                     "invalid"),
                    ("no steps", text.replace("          steps:", "          stepz:"),
                     "invalid")):
                with self.subTest(what):
                    path = os.path.join(tmp, "broken.yaml")
                    with open(path, "w") as f:
                        f.write(broken)
                    self.assertNotEqual(broken, text)
                    r = lava("validate", path)
                    self.assertEqual(r.returncode, 1, r.stdout)
                    self.assertIn(why, r.stderr)


    def test_the_device_dictionary(self):
        r = subprocess.run([DEB_PYTHON, "-c", "import sys, yaml; "
                            "from lava_common.schemas.device import validate; "
                            "validate(yaml.safe_load(open(sys.argv[1])))",
                            os.path.join(ROOT, "lava", "device-qemu.yaml")],
                           stderr=subprocess.PIPE, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)


class Run(unittest.TestCase):
    tier = "guests"
    suites = ("sid", "bookworm")  # (bookworm's kernel: libguestfs's appliance, lava/dispatch.py)

    def test_a_quick_job(self):
        """lava-run (Debian's lava-dispatcher, no lava-server) runs the job
        for real: make lab's sid guest under TCG with -icount, the kit
        inside; every cell comes back a lava-test-case in instructions,
        with its interval's bounds; nothing is left running, and LAVA's
        own scratch folder is gone."""
        need_root(self)
        need_lava(self)
        if not shutil.which("lava-run"):
            unavailable(self, f"lava-run not found (Debian package {kit_lava.NEEDS['lava-run']})")
        if not os.path.isdir(os.path.join(ROOT, "build", "lab", "sid", "rootfs", "boot")):
            unavailable(self, "no make lab root file system for sid (test_lab builds it)")
        before = set(os.listdir(LAVA_TMP)) if os.path.isdir(LAVA_TMP) else set()
        with tempfile.TemporaryDirectory() as res:
            r = run([sys.executable, LAVA_PY, "run", "--suite", "sid", "--results", res],
                    timeout=3600)
            self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
            self.assertEqual(descendants(os.getpid()), {})
            (folder,) = glob.glob(os.path.join(res, "*-lava"))
            with open(os.path.join(folder, "cases.json")) as f:
                got = {c["case"]: c for c in json.load(f)}
        self.assertEqual(got["kit-make-run"]["result"], "pass")
        for name in ("baseline-t1", "ftrace-sdt-t1"):
            self.assertEqual(got[name]["result"], "pass", got[name])
            self.assertEqual(got[name]["units"], "instructions")
        m, lo, hi = (float(got[f"ftrace-sdt-t1{e}"]["measurement"]) for e in ("", "-lo", "-hi"))
        self.assertTrue(0 < lo <= m <= hi, (lo, m, hi))
        after = set(os.listdir(LAVA_TMP)) if os.path.isdir(LAVA_TMP) else set()
        self.assertEqual(after - before, set())


if __name__ == "__main__":
    unittest.main()
