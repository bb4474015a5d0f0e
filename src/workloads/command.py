"""command.py: a user's own workload as the kit's target (make run TARGET=
PROBE= WORKLOAD=): THREADS copies of the command at once, each run
ITERATIONS times in turn, and the kit's target record (kit-target-record/1)
on stdout, each copy a "thread" whose calls are its command's runs.

    python3 src/workloads/command.py --command '["sh", "-c", "..."]' --threads 1 --iterations 3 [--hold]

The command is a JSON list (the runner split WORKLOAD with shlex: no shell
unless the user names one), run with its output to this script's stderr
(the run's log), never to stdout (the record's). With --hold, one byte is
read from stdin first (the runner attaches meanwhile). A run that exits
non-zero ends the script with its status and last line: the row's reason.
The command keeps no count of the marker (the rows are unverified unless a
tracer's count is all there is to say). Needs only the command.
"""
import json
import os
import subprocess
import sys
import threading
import time

import driver

USAGE = "usage: command.py --command JSON --threads N --iterations N [--hold] [--quiet]"


def main(argv):
    opts, hold = driver.parse(argv, "command.py", USAGE, strings=("--command",))
    if "--command" not in opts:
        sys.exit(f"command.py: {USAGE}")
    opts["--command"] = json.loads(opts["--command"])
    cmd, threads, runs = opts["--command"], opts["--threads"], opts["--iterations"]
    if hold:
        sys.stdin.buffer.read(1)
    results, failed = [None] * threads, []

    def copy(k):
        t0 = time.monotonic_ns()
        for _ in range(runs):
            try:
                p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=sys.stderr,
                                   stderr=subprocess.PIPE, text=True, errors="replace")
            except OSError as e:  # no such program, not executable
                failed.append((None, f"{cmd[0]}: {e.strerror}"))
                return
            sys.stderr.write(p.stderr)
            if p.returncode != 0:
                last = [ln for ln in p.stderr.splitlines() if ln.strip()] or [""]
                failed.append((p.returncode, last[-1]))
                return
        results[k] = (t0, time.monotonic_ns())
    start = time.monotonic_ns()
    r0 = os.times()
    workers = [threading.Thread(target=copy, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    end = time.monotonic_ns()
    r1 = os.times()
    if failed:
        code, last = failed[0]
        sys.exit("command.py: the workload failed"
                 + (f": it exited with status {code}" if code is not None else "")
                 + (f": {last.strip()}" if last.strip() else ""))
    driver.record("command", threads, runs, end - start,
                  int((r1.children_user - r0.children_user) * 1e9),
                  int((r1.children_system - r0.children_system) * 1e9),
                  [(t0 - start, t1 - t0, runs) for t0, t1 in results], fired={})


if __name__ == "__main__":
    main(sys.argv[1:])
