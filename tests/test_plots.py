"""The report's PNG plots (scripts/render/plots.py) on real runs (issue
47): none taller than 2,000 px however many configurations and thread
counts, no text drawn on another (the check layout.save() makes, itself tested
here), and every verdict still drawn where report.json says it is."""
import json
import os
import shutil
import struct
import tempfile
import unittest

from kit_test import EXAMPLE, REPORT_PY, ROOT, run, unavailable
import kin
from render import runs as report_runs
from render import layout, plots

# Real runs, each once unreadable: 1320 x 8536 px (threads 1-8), 1320 x
# 3620 px (the default run), 1320 x 4802 px (the default with real programs).
# The two besides docs/example are cut to every cell's first one or two runs of
# each status (tests/fixtures/plots/README.md): the same cells, verdicts and PNG sizes.
PLOTS = os.path.join(ROOT, "tests", "fixtures", "plots")
THREADS_1_8 = os.path.join(PLOTS, "threads-1-8")
REAL_PROGRAMS = os.path.join(PLOTS, "real-programs")

TALLEST_PX = 2000  # pixels: issue 47's bound on every PNG's height
REPORT_KB = 80  # KiB: issue 47's bound on report.md


def report_text_of(path):
    with open(path) as f:
        return f.read()


def png_size(path):
    """(width, height) in pixels, from the PNG's IHDR: bytes 16 to 24."""
    with open(path, "rb") as f:
        head = f.read(24)
    return struct.unpack(">II", head[16:24])


class RealRuns(unittest.TestCase):
    """Issue 47 on three real runs: report.md under REPORT_KB with every
    table in tables.md beside it, each of its sections linked with its
    rows and none lost (the overhead table a row per cell); every PNG at
    most TALLEST_PX tall, no text on another, every verdict drawn."""

    def drawn(self, folder):
        """FOLDER's runs.csv and meta.json reported in a folder of our own:
        (report.json, the PNGs' {name: (width, height)}, stderr, report.md,
        tables.md)."""
        with tempfile.TemporaryDirectory() as tmp:
            for f in ("runs.csv", "meta.json"):
                shutil.copy(os.path.join(folder, f), tmp)
            r = run(["python3", REPORT_PY, tmp])
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(tmp, "report.json")) as f:
                j = json.load(f)
            self.assertLess(os.path.getsize(os.path.join(tmp, "report.md")), REPORT_KB * 1024)
            md, tables = (report_text_of(os.path.join(tmp, n)) for n in ("report.md", "tables.md"))
            pngs = {p: png_size(os.path.join(tmp, p)) for p in os.listdir(tmp)
                    if p.endswith(".png")}
        return j, pngs, r.stderr, md, tables

    def short(self, j, md, tables):
        """report.md the answers, its tables in tables.md, none lost."""
        self.assertIn("## Answers", md)
        self.assertNotIn("## Overhead per event", md)
        rows = len(j["cells"])
        self.assertIn(f"- [Overhead per event](tables.md#overhead-per-event): {rows:,} table rows",
                      md)
        section = tables[tables.index("## Overhead per event"):]
        section = section[:section.index("\n## ")]
        self.assertEqual(sum(1 for ln in section.splitlines() if ln.startswith("| ")) - 1, rows)

    def check(self, folder):
        j, pngs, err, md, tables = self.drawn(folder)
        self.short(j, md, tables)
        if "no plots: matplotlib cannot be imported" in err:
            unavailable(self, "no interpreter here has matplotlib")
        self.assertLessEqual({"overhead_by_config.png", "user_sys_split.png"}, set(pngs))
        for p, (w, h) in pngs.items():
            self.assertLessEqual(h, TALLEST_PX, f"{p} is {w} x {h} px")
        self.assertNotIn("labels overlap", err)
        by, vs = j["plots"]["overhead_by_config.png"], j["plots"].get("overhead_vs_threads.png")
        fewest = min(c["threads"] for c in j["cells"])
        verdicts = 0
        for c in j["cells"]:
            if kin.is_baseline(c["config"]):
                continue
            key, k = f"{c['config']}@{c['threads']}", plots.kind(c)
            self.assertIn(key, by)  # every cell says how it was drawn, one row or not
            if vs is not None:
                self.assertIn(key, vs)
            if k not in plots.VERDICTS:
                continue
            verdicts += 1
            # A verdict is words in every plot it is in: the row's own at the fewest
            # threads, "at 2-8 thr: UNSAFE" right of it at the others; the line's name.
            self.assertIn(k, by[key], key)
            self.assertTrue(by[key].startswith(("red hatch", "hollow", "words"))
                            if c["threads"] == fewest else by[key].startswith("words: at "),
                            f"{key}: {by[key]}")
            if vs is not None:
                self.assertIn(k, vs[key].split("named: ")[-1], key)
                if k in ("NEVER FIRES", "failed"):  # no cost was seen: no point to draw
                    self.assertTrue(vs[key].startswith("no point, named: "), vs[key])
        self.assertGreater(verdicts, 0)  # the runs hold some: the checks above did check
        return pngs

    def test_default_run(self):
        pngs = self.check(EXAMPLE)
        self.assertIn("overhead_vs_threads.png", pngs)

    def test_threads_1_to_8(self):
        self.assertIn("overhead_vs_threads.png", self.check(THREADS_1_8))

    def test_real_programs(self):
        self.assertIn("real_throughput.png", self.check(REAL_PROGRAMS))


# Two texts on one another, then apart, and tick labels on one another: what
# save() says on stderr for each (run where matplotlib is, as the report is).
OVERLAP = r"""
import sys
sys.path.insert(0, sys.argv[1])
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from render import layout
for name, at in (("same.png", (0.2, 0.5)), ("apart.png", (0.6, 0.8))):
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.text(0.2, 0.5, "first words")
    ax.text(*at, "second words")
    layout.save(fig, sys.argv[2], name)
fig, ax = plt.subplots(figsize=(4, 3))
ax.set_xticks([0.5, 0.51])
ax.set_xticklabels(["left tick", "right tick"])
layout.save(fig, sys.argv[2], "ticks.png")
"""


class OverlapCheck(unittest.TestCase):
    def test_says_which_texts_overlap(self):
        py = report_runs.plotting_python()
        if py is None:
            unavailable(self, "no interpreter here has matplotlib")
        with tempfile.TemporaryDirectory() as tmp:
            r = run([py, "-c", OVERLAP, os.path.join(ROOT, "scripts"), tmp])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(sorted(os.listdir(tmp)), ["apart.png", "same.png", "ticks.png"])
        lines = r.stderr.splitlines()
        self.assertIn("report: labels overlap in same.png: 'first words' and 'second words'",
                      lines)
        self.assertIn(lines[-1], ("report: labels overlap in ticks.png: 'left tick' and "
                                  "'right tick'", "report: labels overlap in ticks.png: "
                                  "'right tick' and 'left tick'"))  # tick labels count
        self.assertEqual(len(lines), 2, r.stderr)  # apart.png: nothing said


class Bounds(unittest.TestCase):
    def test_any_number_of_rows_or_panels(self):
        """However many configurations (rows) or panels, a figure stays
        within TALLEST_PX at the PNGs' resolution, and a row no thinner
        than an 8 pt name needs (a tenth under ROW_MIN_IN at most: the
        rows of the last panel round up)."""
        for n in range(1, 3000):
            for row_in, fixed_in in ((0.4, 2.0), (0.35, 1.5)):  # by_config's, user_sys's
                cols, per, height = layout.rows_grid(n, row_in, fixed_in)
                self.assertLessEqual(height * layout.DPI, TALLEST_PX, n)
                self.assertGreaterEqual(cols * per, n)
                self.assertGreaterEqual((height - fixed_in) / per, layout.ROW_MIN_IN * 0.9, n)
            cols, rows, height = layout.panel_grid(n)
            self.assertLessEqual(height * layout.DPI, TALLEST_PX, n)
            self.assertGreaterEqual(cols * rows, n)


class Spread(unittest.TestCase):
    def test_names_apart_and_inside(self):
        """Names wanted at one place come out their half-heights and the
        pad apart, in their order, inside the axes where they fit."""
        hs = [0.05, 0.1, 0.05, 0.05]
        for want in ([0.5] * 4, [0.99, 0.98, 0.97, 0.96], [0.0, 0.01, 0.0, 0.02]):
            got = layout.spread(want, hs, 0.01)
            order = sorted(range(4), key=lambda i: (got[i], i))
            for i, j in zip(order, order[1:]):
                self.assertGreaterEqual(got[j] - got[i], (hs[i] + hs[j]) / 2 + 0.01 - 1e-9)
            for g, h in zip(got, hs):
                self.assertGreaterEqual(g - h / 2, -1e-9)
                self.assertLessEqual(g + h / 2, 1 + 1e-9)

    def test_names_stay_beside_their_points(self):
        """Names far apart stay where they are wanted."""
        self.assertEqual(layout.spread([0.2, 0.8], [0.05, 0.05], 0.01), [0.2, 0.8])


if __name__ == "__main__":
    unittest.main()
