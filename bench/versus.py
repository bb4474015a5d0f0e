#!/usr/bin/env python3
"""versus.py: the kit against a general benchmarking tool, in one sitting,
on the kit's own question: what does a marker with nothing attached cost?

    make versus                     # 3 alternations, about a minute
    python3 bench/versus.py --tries 3 --iter 20000000 --runs 30

A benchmark, not a test.  Each try runs, one after the other:
1. hyperfine (Debian package): RUNS whole-process runs each of
   build/benchmark-plain and build/benchmark-sdt (ITER calls, one thread),
   the idle marker's cost per call being the difference of the means over
   ITER, with Welch's 95% interval from hyperfine's own per-run times;
2. the kit: `scripts/run.py --configs baseline,idle-sdt --threads 1`,
   told to stop once it is as precise as hyperfine just was
   (PRECISION_NS = hyperfine's half-width; MAX_RUNS as given, its
   default run lengths), its overhead interval from the statistics the
   report uses (stats.analyse), the kit's wall time being the whole
   command's (its make, its checks, its warm-ups where needed, its runs)
   less the report, which hyperfine has no counterpart of;
and prints per try each one's wall time, estimate and interval half-width,
so that "same or narrower intervals in the same wall time" can be read
off: the kit is ahead in a try where its half-width is no wider and its
wall time no longer.  Needs hyperfine and `make` (the builds); no root.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from record import load  # noqa: E402
from stats import analyse, welch_ci  # noqa: E402


def hyperfine(n, runs, tmp):
    out = os.path.join(tmp, "hf.json")
    cmds = [f"{ROOT}/build/benchmark-{b} --threads 1 --iterations {n} --quiet"
            for b in ("plain", "sdt")]
    t0 = time.monotonic()
    subprocess.run(["hyperfine", "-N", "--warmup", "3", "--runs", str(runs), "--style", "none",
                    "--export-json", out, *cmds], stdout=subprocess.DEVNULL, check=True)
    wall = time.monotonic() - t0
    with open(out) as f:
        plain, sdt = (r["times"] for r in json.load(f)["results"])
    m, lo, hi = welch_ci([t * 1e9 / n for t in sdt], [t * 1e9 / n for t in plain])
    return wall, m, (hi - lo) / 2


def kit(precision_ns, max_runs, tmp):
    res = os.path.join(tmp, "results")
    os.makedirs(res, exist_ok=True)
    t0 = time.monotonic()
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "run.py"), "--threads", "1",
                    "--configs", "baseline,idle-sdt", "--no-install", "1", "--precision-ns",
                    str(precision_ns), "--max-runs", str(max_runs), "--no-report", "--results",
                    res], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.monotonic() - t0
    rows, meta, _ = load(os.path.join(res, "latest"))
    c = next(c for c in analyse(rows, meta)["cells"] if c["config"] == "idle-sdt")
    o = c["overhead"]
    return wall, o["mean_ns"], (o["hi_ns"] - o["lo_ns"]) / 2, c["n_runs"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tries", type=int, default=3)
    p.add_argument("--iter", type=int, default=20_000_000, help="hyperfine: calls a run")
    p.add_argument("--runs", type=int, default=30, help="hyperfine: runs of each program")
    p.add_argument("--max-runs", type=int, default=30, help="the kit's MAX_RUNS")
    a = p.parse_args()
    if not shutil.which("hyperfine"):
        sys.exit("versus: hyperfine is not installed (Debian package hyperfine)")
    subprocess.run(["make", "-s", "-C", ROOT, "build/benchmark-plain", "build/benchmark-sdt"],
                   check=True)
    print("idle-sdt's cost per call [ns]: estimate and 95% half-width; wall time [s]")
    print(f"{'try':>3}  {'tool':<28} {'wall [s]':>8} {'estimate [ns]':>13} {'+- [ns]':>8}")
    widths = {"hyperfine": [], "kit": []}
    walls = {"hyperfine": [], "kit": []}
    ahead = 0
    for i in range(1, a.tries + 1):
        with tempfile.TemporaryDirectory() as tmp:
            hw, m, h = hyperfine(a.iter, a.runs, tmp)
            widths["hyperfine"].append(h)
            walls["hyperfine"].append(hw)
            print(f"{i:>3}  {'hyperfine, ' + str(a.runs) + ' runs each':<28} {hw:8.1f} "
                  f"{m:13.3f} {h:8.3f}")
            kw, m, k, n = kit(max(0.001, round(h, 3)), a.max_runs, tmp)
            widths["kit"].append(k)
            walls["kit"].append(kw)
            ahead += k <= h and kw <= hw
            print(f"{i:>3}  {'kit, ' + str(n) + ' runs each':<28} {kw:8.1f} {m:13.3f} {k:8.3f}")
    for tool, hs in widths.items():
        print(f"median, {tool}: +-{statistics.median(hs):.3f} ns in "
              f"{statistics.median(walls[tool]):.1f} s")
    print(f"the kit as precise as hyperfine, or more, in as little time or less: {ahead} of "
          f"{a.tries} tries")


if __name__ == "__main__":
    main()
