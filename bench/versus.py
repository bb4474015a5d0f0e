#!/usr/bin/env python3
"""versus.py: the kit against a general benchmarking tool, in one sitting,
on the kit's own question: what does a marker with nothing attached cost?

    make versus                     # 3 alternations, about half a minute
    python3 bench/versus.py --tries 3 --iter 20000000

A benchmark, not a test.  Each try runs, one after the other:
1. the kit as a user runs it, `make run THREADS=1
   CONFIGS='baseline,idle-sdt'` with its defaults (its stopping rule,
   its pilot, its checks and its report; scripts/run.py, what make
   runs, so make's own ~0.3 s of variable checks is not counted), timed
   whole, its interval the report's (stats.analyse);
2. hyperfine (Debian package) given the same wall time: as many
   whole-process runs each of build/benchmark-plain and
   build/benchmark-sdt (ITER calls, one thread, 3 warm-ups) as its own
   last try's pace says fit in the kit's time, the idle marker's cost
   per call being the difference of the means over ITER, with Welch's
   95% interval from hyperfine's own per-run times;
3. with --methods, make run AGAINST='s pairings (measure/dormant.py) on
   the same two programs (A build/benchmark-sdt, B build/benchmark-plain,
   ITER calls, one copy), each given the kit's wall time (DORMANT_S, a
   precision no run reaches, so each runs to its time), timed whole:
   abba (alternated) and duet (side by side on two CPUs);
and prints per try each one's wall time, estimate and interval half-width:
the kit is ahead in a try where its half-width is no wider and its wall
time no longer.  Needs hyperfine and `make` (the builds); no root.
The kit's folders go to a temporary folder (run.py --results): results/
is left as it was.
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
from host import MAKE  # noqa: E402
from record import load  # noqa: E402
from render import dormant  # noqa: E402
from stats import analyse, welch_ci  # noqa: E402


def hyperfine(n, runs, tmp, builds=("plain", "sdt")):
    """(wall seconds, estimate, half-width) of RUNS runs of each program
    (BUILDS: the same one twice is an A/A test, whose true difference is
    0; the second gets a trailing space, as hyperfine wants two commands)."""
    out = os.path.join(tmp, "hf.json")
    cmds = [f"{ROOT}/build/benchmark-{b} --threads 1 --iterations {n} --quiet" + " " * k
            for k, b in enumerate(builds)]
    t0 = time.monotonic()
    subprocess.run(["hyperfine", "-N", "--warmup", "3", "--runs", str(runs), "--style", "none",
                    "--export-json", out, *cmds], stdout=subprocess.DEVNULL, check=True)
    wall = time.monotonic() - t0
    with open(out) as f:
        plain, sdt = (r["times"] for r in json.load(f)["results"])
    m, lo, hi = welch_ci([t * 1e9 / n for t in sdt], [t * 1e9 / n for t in plain])
    return wall, m, (hi - lo) / 2


def kit(tmp):
    """(wall seconds, estimate, half-width, runs of idle-sdt) of the
    kit's default command, its report included."""
    res = os.path.join(tmp, "results")
    os.makedirs(res, exist_ok=True)
    t0 = time.monotonic()
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "run.py"), "--threads", "1",
                    "--configs", "baseline,idle-sdt", "--no-install", "1", "--results", res],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.monotonic() - t0
    rows, meta, _ = load(os.path.join(res, "latest"))
    c = next(c for c in analyse(rows, meta)["cells"] if c["config"] == "idle-sdt")
    o = c["overhead"]
    if not o or o["lo_ns"] is None:
        sys.exit(f"versus: the kit's idle-sdt has no interval ({c['stopped'] or c['flags']})")
    return wall, o["mean_ns"], (o["hi_ns"] - o["lo_ns"]) / 2, c["n_runs"]


def against(tmp, method, seconds, n):
    """(wall seconds, estimate, half-width in ns a call) of make run
    AGAINST='s METHOD on the marked and the plain loop, SECONDS of rounds."""
    res = os.path.join(tmp, "dormant-" + method)
    cmd = [f"{ROOT}/build/benchmark-{b} --threads 1 --iterations {n} --quiet"
           for b in ("sdt", "plain")]
    t0 = time.monotonic()
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "run.py"), "--workload",
                    cmd[0], "--against", cmd[1], "--threads", "1", "--dormant-s",
                    f"{seconds:.1f}", "--dormant-precision", "0.01", "--dormant-method", method,
                    "--no-install", "1", "--no-report", "--results", res],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.monotonic() - t0
    _, got = dormant.answers(os.path.join(res, "latest"))
    ans = got[1]
    per = ans["b_wall_ns"] / 100 / n  # ns a call per % of B
    return wall, ans["mean_pct"] * per, ans["half_pct"] * per


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tries", type=int, default=3)
    p.add_argument("--iter", type=int, default=20_000_000, help="hyperfine: calls a run")
    p.add_argument("--methods", action="store_true",
                   help="make run AGAINST='s abba and duet too, each in the kit's time")
    p.add_argument("--aa", type=int, default=0, metavar="T",
                   help="then T A/A tries: hyperfine on build/benchmark-plain twice, at the "
                        "last try's runs, and how often its interval held the true 0")
    a = p.parse_args()
    if a.tries < 1 or a.aa < 0 or a.iter < 1:
        p.error("--tries and --iter want a whole number of at least 1, --aa at least 0")
    if not shutil.which("hyperfine"):
        sys.exit("versus: hyperfine is not installed (Debian package hyperfine)")
    subprocess.run([*MAKE, "build/benchmark-plain", "build/benchmark-sdt"],
                   check=True)
    print("idle-sdt's cost per call [ns]: estimate and 95% half-width; wall time [s]")
    print(f"{'try':>3}  {'tool':<28} {'wall [s]':>8} {'estimate [ns]':>13} {'+- [ns]':>8}")
    tools = ["hyperfine", "kit"] + (["abba", "duet"] if a.methods else [])
    widths, walls = {t: [] for t in tools}, {t: [] for t in tools}
    ahead = 0
    with tempfile.TemporaryDirectory() as tmp:
        pace = hyperfine(a.iter, 5, tmp)[0] / (2 * (5 + 3))  # seconds a run, warm-ups counted
    for i in range(1, a.tries + 1):
        with tempfile.TemporaryDirectory() as tmp:
            kw, m, k, n = kit(tmp)
            widths["kit"].append(k)
            walls["kit"].append(kw)
            print(f"{i:>3}  {'kit, ' + str(n) + ' runs each':<28} {kw:8.1f} {m:13.3f} {k:8.3f}")
            runs = max(2, int(kw / pace / 2) - 3)  # the kit's time, at hyperfine's pace
            hw, m, h = hyperfine(a.iter, runs, tmp)
            pace = hw / (2 * (runs + 3))
            widths["hyperfine"].append(h)
            walls["hyperfine"].append(hw)
            print(f"{i:>3}  {'hyperfine, ' + str(runs) + ' runs each':<28} {hw:8.1f} "
                  f"{m:13.3f} {h:8.3f}")
            ahead += k <= h and kw <= hw * 1.05  # its pace is a guess: 5% of time is a tie
            for method in tools[2:]:  # (their fixed cost, ~1.5 s, left out of their rounds)
                w, m, h = against(tmp, method, max(5.0, kw - 1.5), a.iter)
                widths[method].append(h)
                walls[method].append(w)
                print(f"{i:>3}  {'make run AGAINST=, ' + method:<28} {w:8.1f} {m:13.3f} "
                      f"{h:8.3f}")
    for tool, hs in widths.items():
        print(f"median, {tool}: +-{statistics.median(hs):.3f} ns in "
              f"{statistics.median(walls[tool]):.1f} s")
    print(f"the kit as precise as hyperfine, or more, in as little time or less: {ahead} of "
          f"{a.tries} tries")
    if a.aa:
        held = 0
        for i in range(1, a.aa + 1):
            with tempfile.TemporaryDirectory() as tmp:
                _, m, h = hyperfine(a.iter, runs, tmp, ("plain", "plain"))
            held += abs(m) <= h
            print(f"A/A {i:>2}  hyperfine, {runs} runs each: {m:+.3f} +- {h:.3f} ns")
        print(f"hyperfine's 95% interval held the true 0 (one program twice) in {held} of "
              f"{a.aa} A/A tries")


if __name__ == "__main__":
    main()
