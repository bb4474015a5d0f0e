#!/usr/bin/env python3
"""floor.py: is the kit's untraced loop as fast and as steady as a raw loop?

    make floor                      # THREADS=1,2, 20M calls, 10 pairs
    python3 bench/floor.py --threads 1 --iter 20000000 --pairs 10

A benchmark, not a test: it alternates build/benchmark-plain (the kit's
baseline) and build/raw-loop (bench/raw_loop.c: a bare pthread loop of
the same shape) PAIRS times per thread count, each run's output to a
file read after it exits (a consumer started beside a run, such as a
pipe into a Python that starts up, slows the run it watches: that is
how this comparison once read 1.36x), and prints per program the median,
mean and CV of the per-call time, and the kit/raw ratio of each pair
with its 95% interval.  Needs `make` (which builds both).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from stats import mean_ci  # noqa: E402

KIT = os.path.join(ROOT, "build", "benchmark-plain")
RAW = os.path.join(ROOT, "build", "raw-loop")


def once(cmd, out):
    """Runs CMD with stdout to the file OUT; its text once it has exited."""
    with open(out, "w") as f:
        subprocess.run(cmd, stdout=f, check=True)
    with open(out) as f:
        return f.read()


def kit(threads, n, out):
    rec = json.loads(once([KIT, "--threads", str(threads), "--iterations", str(n), "--quiet"],
                          out))
    return statistics.fmean(t["wall_ns"] / t["calls"] for t in rec["per_thread"])


def raw(threads, n, out):
    return statistics.fmean(float(x) for x in once([RAW, str(threads), str(n)], out).split())


def summary(name, xs):
    m = statistics.fmean(xs)
    cv = statistics.stdev(xs) / m if len(xs) > 1 else 0.0
    return f"{name:<22} median {statistics.median(xs):6.3f}  mean {m:6.3f}  CV {100 * cv:5.1f}%"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    p.add_argument("--iter", type=int, default=20000000, help="calls per thread a run")
    p.add_argument("--pairs", type=int, default=10, help="kit/raw pairs per thread count")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kit-floor-") as d:
        out = os.path.join(d, "out")
        for threads in [int(t) for t in a.threads.split(",")]:
            ks, rs = [], []
            for _ in range(a.pairs):
                ks.append(kit(threads, a.iter, out))
                rs.append(raw(threads, a.iter, out))
            m, lo, hi = mean_ci([k / r for k, r in zip(ks, rs)])
            print(f"threads={threads}, {a.iter} calls a thread, {a.pairs} pairs, ns per call:")
            print("  " + summary("build/benchmark-plain", ks))
            print("  " + summary("build/raw-loop", rs))
            print(f"  kit/raw per pair       {m:.3f} [{lo:.3f}, {hi:.3f}] (95%)")
            print("  runs (kit raw): " + "  ".join(f"{k:.3f} {r:.3f}" for k, r in zip(ks, rs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
