"""test_atlas.py: make atlas (scripts/atlas) and its report
(render/atlas.py): a small atlas's README.md (tests/fixtures/atlas/, cut
from the atlas's folders) is made again, byte for byte, as
tests/expected/atlas-README.md; the units apart there and in the committed
docs/atlas/README.md; the steps between kernels, the run-to-run spread and
the kernels' order on hand-computed figures; bad input refused before
anything is made.

    make test TESTS=atlas

Needs nothing but python3 (the mirror for one refusal, skipped without it).
"""
import os
import re
import shutil
import sys
import tempfile
import unittest

from kit_test import EXPECTED, REPORT_PY, ROOT, SCRIPTS, run, unavailable

sys.path.insert(0, SCRIPTS)
from render import atlas  # noqa: E402

ATLAS_PY = os.path.join(SCRIPTS, "atlas")
# Two kernels, the host and two WHERE labs, cut from the atlas's folders
# (tests/fixtures/atlas/README.md says how); the README.md the report writes
# from them is tests/expected/atlas-README.md.
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "atlas", "two-kernels")
WANT = os.path.join(EXPECTED, "atlas-README.md")
# The atlas itself (its folders are in git history: docs/atlas.md).
COMMITTED = os.path.join(ROOT, "docs", "atlas", atlas.README)


def main_head(text):
    """The configuration x kernel table's columns."""
    head = next(ln for ln in text.splitlines() if re.match(r"\| config +\| threads ", ln))
    return [c.strip() for c in head.strip("|").split("|")]


class Golden(unittest.TestCase):
    def test_readme_from_its_folders(self):
        """The atlas's README.md is the report's own output: made from a
        copy of the fixture's folders, it is the expected file (after a
        change to the report: python3 scripts/report.py on a copy of
        tests/fixtures/atlas/two-kernels, its README.md read and copied to
        tests/expected/atlas-README.md)."""
        with open(WANT) as f:
            want = f.read()
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "atlas")
            shutil.copytree(FIXTURE, copy)
            r = run([sys.executable, REPORT_PY, copy])
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(copy, atlas.README)) as f:
                got = f.read()
        self.assertEqual(got, want, f"the atlas's README.md is not what {FIXTURE} gives")

    def test_units_apart(self):
        """Every kernel's column is in instructions, the host's in ns, and no
        head names both units: in the fixture's README and in the committed
        atlas."""
        with open(WANT) as f:
            cols = main_head(f.read())
        guests, hst = atlas.load(FIXTURE)
        self.assertEqual(len(guests), 2)
        self.assertIsNotNone(hst)
        for g in guests:
            self.assertIn(f"{g['head']} [instructions/event]", cols)
        self.assertIn(f"{hst['head']} (its own kernel) [ns/event]", cols)
        with open(COMMITTED) as f:
            committed = main_head(f.read())
        self.assertGreaterEqual(sum(c.endswith(" [instructions/event]") for c in committed), 1)
        for c in cols + committed:
            self.assertFalse("instructions" in c and "[ns" in c, c)


def ov(m, lo, hi):
    return {"mean_ns": m, "lo_ns": lo, "hi_ns": hi}


class Figures(unittest.TestCase):
    def test_steps(self):
        """A step where adjacent intervals do not overlap, by hand: 6.1's
        [98, 102] against 6.12's [118, 122] is +20.00 (f_ins); 6.12 against 7.2's
        [119, 125] overlaps (none); a kernel without an interval (None)
        breaks the chain (none across it)."""
        heads = ["6.1 (bookworm)", "6.12.117 (trixie)", "7.2.13 (sid)", "7.3.4 (x)", "7.4 (y)"]
        row = [ov(100, 98, 102), ov(120, 118, 122), ov(122, 119, 125), None, ov(50, 49, 51)]
        self.assertEqual(atlas.steps(row, heads), "6.1 → 6.12.117: +20.00")
        self.assertEqual(atlas.steps([ov(120, 118, 122), ov(100, 98, 102)], heads[:2]),
                         "6.1 → 6.12.117: -20.00")
        self.assertEqual(atlas.steps([ov(1, 0, 2)], heads[:1]), "-")

    def test_spread(self):
        """(max - min) / median over the runs: 1000, 1004, 1002 is 4/1002."""
        c = {"per_rep_ns": {0: 1000.0, 1: 1004.0, 2: 1002.0}}
        self.assertAlmostEqual(atlas.spread(c), 4 / 1002)
        self.assertIsNone(atlas.spread({"per_rep_ns": {0: 5.0}}))

    def test_release_order(self):
        got = sorted(["7.3.4+deb13-amd64", "6.12.117+deb13-amd64", "7.3-rc7-amd64",
                      "6.1.0-50-amd64", "6.12.95+bpo-amd64", "7.2.13+deb14-amd64"],
                     key=atlas.release_key)
        self.assertEqual(got, ["6.1.0-50-amd64", "6.12.95+bpo-amd64", "6.12.117+deb13-amd64",
                               "7.2.13+deb14-amd64", "7.3-rc7-amd64", "7.3.4+deb13-amd64"])


class Libbpf(unittest.TestCase):
    def test_the_library_and_its_usdt_link_on_each_kernel(self):
        """The kernels' line's libbpf column (issue 68): the library the
        loader ran on (meta's tracers) and the link the floor's USDT probe
        took on that kernel, as its timed rows' note says; "-" where no
        libbpf row ran (the fixture's and the committed atlas's kernels,
        measured before libbpf: their README.md says "-" in each line)."""
        note = "libbpf, sdt_count on every process mapping it; it held {}; other"
        g = {"meta": {"tracers": {"libbpf": "libbpf 1.7 (build/kit-libbpf)"}},
             "rows": [{"config": "libbpf-sdt-count", "rep": 0, "note": "a warm-up"},
                      {"config": "libbpf-uprobe-nop", "rep": 1,
                       "note": note.format("perf link (1), perf_event (1)")},
                      {"config": "libbpf-sdt-count", "rep": 1,
                       "note": note.format("uprobe_multi link (1)")}]}
        self.assertEqual(atlas.libbpf_line(g), "1.7 (USDT: uprobe_multi link (1))")
        g["rows"] = g["rows"][:2]  # the floor's row never ran: the library alone
        self.assertEqual(atlas.libbpf_line(g), "1.7")
        self.assertEqual(atlas.libbpf_line({"meta": {}, "rows": []}), "-")
        with open(WANT) as f:
            lines = [ln for ln in f if ln.startswith("| ") and "builds modules" in ln]
        self.assertTrue(lines)
        for ln in lines:
            self.assertIn("| 5.6/0.196 | -      |", ln)


class Inputs(unittest.TestCase):
    def test_refused(self):
        """Bad input: exit 2, the value named with what is allowed, and no
        atlas folder made."""
        with tempfile.TemporaryDirectory() as tmp:
            d = os.path.join(tmp, "atlas")
            for env, want in (({"ATLAS_KERNELS": "x y"}, "ATLAS_KERNELS 'x y' is not allowed: "
                               "want a comma-separated list of Debian suites"),
                              ({"ATLAS_TOOLS": "woody"}, "ATLAS_TOOLS 'woody' is not allowed: "
                               "want one of"),
                              ({"ATLAS_FRESH": "2"}, "ATLAS_FRESH '2'")):
                r = run([sys.executable, ATLAS_PY], env=dict(os.environ, ATLAS_DIR=d, **env))
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(want, r.stderr)
                self.assertFalse(os.path.exists(d))


class Mirror(unittest.TestCase):
    """What the host's Debian mirror has (the network: not a check)."""
    tier = "host"

    def test_kernel_the_mirror_lacks(self):
        """A kernel the mirror does not have is refused before anything is
        made, naming the kernels' suites it has."""
        with tempfile.TemporaryDirectory() as tmp:
            d = os.path.join(tmp, "atlas")
            r = run([sys.executable, ATLAS_PY], env=dict(os.environ, ATLAS_DIR=d,
                                                         ATLAS_KERNELS="trixie,woody"))
            if "cannot reach the host's Debian mirror" in r.stderr or "no Debian mirror" in r.stderr:
                unavailable(self, r.stderr.strip())
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertRegex(r.stderr, r"ATLAS_KERNELS 'trixie,woody' is not allowed: the host's "
                                       r"Debian mirror has no woody .*suites it has: .*\bsid\b")
            self.assertFalse(os.path.exists(d))


if __name__ == "__main__":
    unittest.main()
