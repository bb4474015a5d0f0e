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

USAGE = "usage: command.py --command JSON --threads N --iterations N [--hold] [--quiet]"


def main(argv):
    opts, hold = {}, False
    while argv:
        a = argv.pop(0)
        if a in ("--threads", "--iterations") and argv and argv[0].isdigit() \
                and int(argv[0]) > 0:
            opts[a] = int(argv.pop(0))
        elif a == "--command" and argv:
            opts[a] = json.loads(argv.pop(0))
        elif a == "--hold":
            hold = True
        elif a == "--quiet":
            pass
        else:
            sys.exit(f"command.py: '{a}' is not allowed ({USAGE}; no --rate, --fork, --miss "
                     "or --pin)")
    if len(opts) != 3:
        sys.exit(f"command.py: {USAGE}")
    cmd, threads, runs = opts["--command"], opts["--threads"], opts["--iterations"]
    if hold:
        sys.stdin.buffer.read(1)
    results, failed = [None] * threads, []

    def copy(k):
        t0 = time.monotonic_ns()
        for _ in range(runs):
            p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=sys.stderr,
                               stderr=subprocess.PIPE, text=True, errors="replace")
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
        sys.exit(f"command.py: the workload exited with status {code}"
                 + (f": {last.strip()}" if last.strip() else ""))
    per = ",".join(
        '{"thread":%d,"cpu":-1,"start_ns":%d,"wall_ns":%d,"user_ns":0,"sys_ns":0,"cpu_ns":0,'
        '"calls":%d,"late":0,"corrupted":0,"decoys":0}' % (k, t0 - start, t1 - t0, runs)
        for k, (t0, t1) in enumerate(results))
    sys.stdout.write(
        '{"format":"kit-target-record/1","build":"command","pid":%d,"threads":%d,'
        '"iterations":%d,"pinned":false,"clock":"CLOCK_MONOTONIC","wall_ns":%d,'
        '"process_user_ns":%d,"process_sys_ns":%d,"rate":"max","pacing":null,'
        '"machine_busy_ns":null,"proc_stat_busy_ns":null,"fork":null,"machine_source":"",'
        '"uprobe_maps":[],"fired":{},"per_thread":[%s]}\n'
        % (os.getpid(), threads, runs, end - start,
           int((r1.children_user - r0.children_user) * 1e9),
           int((r1.children_system - r0.children_system) * 1e9), per))


if __name__ == "__main__":
    main(sys.argv[1:])
