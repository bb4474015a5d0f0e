"""The kit in today's Debian (issue 57): Debian 13 (trixie), the current
stable, as the userland, on this machine's kernel (tests/userland.py: an
mmdebstrap root made once, a fresh copy each run, a clone of HEAD at
/kit).  There, as a newcomer on a fresh trixie machine types them,
`make run QUICK=1` installs what it needs (every package this release has;
one it has not, named with what it costs, never blocking the rest), runs,
measures the rows bookworm measures (CPython through gc__start, SystemTap
on its bpf runtime), skips nothing for a package it could have installed;
and `make check` passes.

    make test-userland         # its own tier: about 10 minutes, once the base is cached

Not in `make test` (whose 25 minutes it would pass); .ci/run runs it first.
"""
import csv
import glob
import os
import re
import tempfile
import time
import unittest

import userland
from kit_test import need_root, unavailable

import configs
import workloads

RELEASE = "trixie"
RUN_S = 2400  # make run QUICK=1 there, its installs included
CHECK_S = 1200


class Trixie(unittest.TestCase):
    tier = "userland"

    @classmethod
    def setUpClass(cls):
        cls.log = tempfile.NamedTemporaryFile("w", prefix="userland-", suffix=".log",
                                              delete=False).name

    def test_make_run_quick_and_make_check(self):
        need_root(self)
        try:
            made = userland.base(RELEASE, self.log)
        except userland.Unavailable as e:
            unavailable(self, f"the {RELEASE} userland: {e}")
        print(f"\n  {RELEASE}: base " + (f"made in {made:.0f} s" if made else "cached"),
              flush=True)
        with userland.chroot(RELEASE, self.log) as work:
            t0 = time.monotonic()
            code, out = userland.run(work, "make run QUICK=1", self.log, RUN_S)
            print(f"  {RELEASE}: make run QUICK=1 in {time.monotonic() - t0:.0f} s", flush=True)
            self.assertEqual(code, 0, out[-3000:])
            (folder,) = [d for d in glob.glob(os.path.join(work, "kit", "results", "2*"))
                         if os.path.isdir(d)]  # (the first make run's: the only one yet)
            with open(os.path.join(folder, "runs.csv"), newline="") as f:
                rows = list(csv.DictReader(f))
            policy = userland.run(work, "apt-cache policy python3.11", self.log,
                                  120)[1]
            # the release's PostgreSQL (17 on trixie: the postgresql package's)
            t0 = time.monotonic()
            pcode, pout = userland.run(
                work, "make run QUICK=1 THREADS=1 CONFIGS=postgres-untraced,postgres-ftrace-query",
                self.log, RUN_S)
            print(f"  {RELEASE}: make run QUICK=1 CONFIGS=postgres-... in "
                  f"{time.monotonic() - t0:.0f} s", flush=True)
            pg = sorted(glob.glob(os.path.join(work, "kit", "results", "2*")))[-1]
            with open(os.path.join(pg, "runs.csv"), newline="") as f:
                pg_rows = [x for x in csv.DictReader(f) if x["rep"] not in ("", "0")]
            t0 = time.monotonic()
            ccode, cout = userland.run(work, "make check", self.log, CHECK_S)
            print(f"  {RELEASE}: make check in {time.monotonic() - t0:.0f} s", flush=True)
        # the packages: every one this release has was installed; each it
        # has not is named, with what it costs, in one line
        self.assertNotIn("apt-get could not install them all", out)
        self.assertNotIn("missing Debian packages", out)
        gone = re.findall(r"^run: Debian \S+ has no package (\S+?)(?::|$)", out, re.M)
        self.assertEqual(gone, ["python3.11"], out[-3000:])
        self.assertRegex(out, r"run: Debian trixie has no package python3\.11: the python-\* "
                              r"rows skipped")
        self.assertNotRegex(policy, r"python3\.11:\n\s+Installed:.*\n\s+Candidate: \d")
        # nothing skipped for a package the kit could have installed: a row
        # skipped for a Debian package names one this release has not
        for row in rows:
            if row["status"] == "skipped":
                for pkg in re.findall(r"\(Debian package (\S+?)\)", row["reason"]):
                    with self.subTest(config=row["config"]):
                        self.assertEqual(pkg, "python3.11", row["reason"])
        timed = [x for x in rows if x["rep"] not in ("", "0")]
        measured = {x["config"] for x in timed if x["status"] in ("ok", "agreed", "dropped")}
        # CPython through a 3.13 marker, SystemTap, and every tracer the
        # default run has, measured
        for name in ("python-gc-untraced", "python-gc-ftrace", "python-gc-bpftrace",
                     "python-gc-perf", "python-gc-stap", "stap-mark", "stap-mark-time",
                     "stap-mark-empty", "bpftrace-sdt-count", "perf-stat-sdt", "ftrace-sdt",
                     "lttng-flight", "uftrace"):
            with self.subTest(config=name):
                self.assertIn(name, configs.BY_NAME)
                self.assertIn(name, measured, [(x["config"], x["status"], x["reason"][:200])
                                               for x in rows if x["config"] == name])
        self.assertTrue(workloads.get("pygc"))
        self.assertEqual(pcode, 0, pout[-3000:])
        self.assertEqual(sorted(x["config"] for x in pg_rows),
                         ["postgres-ftrace-query", "postgres-untraced"], pout[-3000:])
        for row in pg_rows:
            self.assertEqual(row["status"], "ok", row["reason"])
        # make check in trixie's python 3.13
        self.assertEqual(ccode, 0, cout[-3000:])
        self.assertRegex(cout, r"(?m)^\d+ passed, 0 failed, \d+ skipped$")


if __name__ == "__main__":
    unittest.main()
