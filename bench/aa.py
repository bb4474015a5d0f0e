#!/usr/bin/env python3
"""aa.py: A/A tries of make run AGAINST= (measure/dormant.py): the same
command as WORKLOAD and as AGAINST, TRIES times, each a whole run of
scripts/run.py as make run starts it (its variables in the environment), and how often the verdict was `same` (a 95% interval
holds the true 0 in 19 of 20 tries on average; 2 or more of 20 come out
otherwise about one time in four even so).

    python3 bench/aa.py --tries 20 -- env USE_ZEND_DTRACE=0 php src/examples/fib.php
    python3 bench/aa.py --tries 4 --seconds 30 -- build/benchmark-plain --quiet

A benchmark, not a test: each try's line (estimate, interval, verdict,
rounds, wall time) and the tally.  Its folders go to a temporary folder.
Needs root only for what the command needs.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tries", type=int, default=20)
    p.add_argument("--seconds", type=float, default=None,
                   help="DORMANT_S (its default if not given)")
    p.add_argument("command", nargs="+", help="the command, after --")
    a = p.parse_args()
    if a.tries < 1:
        p.error("--tries wants a whole number of at least 1")
    cmd = shlex.join(a.command)
    tally = {}
    print(f"A/A: {cmd}\n{'try':>3} {'estimate [%]':>12} {'95% interval [%]':>18} "
          f"{'verdict':>8} {'rounds':>6} {'wall [s]':>8}")
    for i in range(1, a.tries + 1):
        with tempfile.TemporaryDirectory() as res:
            env = dict(os.environ, WORKLOAD=cmd, AGAINST=cmd, NO_INSTALL="1")
            if a.seconds:
                env["DORMANT_S"] = str(a.seconds)
            t0 = time.monotonic()
            r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "run.py"),
                                "--results", res], env=env, capture_output=True, text=True)
            wall = time.monotonic() - t0
            if r.returncode:
                sys.exit(f"aa: try {i} failed: {r.stderr[-800:]}")
            folder = [d for d in os.listdir(res) if d.endswith("-dormant")]
            with open(os.path.join(res, folder[0], "report.json")) as f:
                ans = json.load(f)["answers"]["1"]
        tally[ans["verdict"]] = tally.get(ans["verdict"], 0) + 1
        print(f"{i:>3} {ans['mean_pct']:>+12.2f} [{ans['lo_pct']:+7.2f}, {ans['hi_pct']:+7.2f}] "
              f"{ans['verdict']:>8} {ans['rounds']:>6} {wall:>8.1f}", flush=True)
    print("verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())))


if __name__ == "__main__":
    main()
