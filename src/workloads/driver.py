"""driver.py: what the kit's workload drivers share (calls.py,
pgbench.py, command.py): the arguments the runner gives a target (--threads N
--iterations N [--hold] [--quiet], and the driver's own), and the target
record they print (kit-target-record/1, the fields src/benchmark.c
prints; docs/results-format.md).  calls.py parses with it but formats its
record by hand: the Python workload runs no Python function of its own
after its gate.

Nothing to run: `import driver` from a script beside it.
"""
import json
import os
import sys

REFUSED = ("--rate", "--fork", "--miss", "--pin")  # the kit's own target's alone


def parse(argv, prog, usage, strings=(), flags=()):
    """(the options by flag: --threads and --iterations as whole numbers
    above 0, each of STRINGS as given, each of FLAGS True where given;
    --hold given) from ARGV, or an exit naming what is not allowed;
    --threads and --iterations are required."""
    opts, hold = {}, False
    while argv:
        a = argv.pop(0)
        if a in ("--threads", "--iterations") and argv and argv[0].isdigit() \
                and int(argv[0]) > 0:
            opts[a] = int(argv.pop(0))
        elif a in strings and argv:
            opts[a] = argv.pop(0)
        elif a in flags:
            opts[a] = True
        elif a == "--hold":
            hold = True
        elif a == "--quiet":
            pass
        else:
            no = [f for f in REFUSED if f not in flags]
            sys.exit(f"{prog}: '{a}' is not allowed ({usage}; no {', '.join(no[:-1])} or "
                     f"{no[-1]})")
    if "--threads" not in opts or "--iterations" not in opts:
        sys.exit(f"{prog}: {usage}")
    return opts, hold


def record(build, threads, iterations, wall_ns, user_ns, sys_ns, per_thread, **extra):
    """Prints the target record: PER_THREAD is [(start_ns, wall_ns, calls)]
    a thread (a client, a copy of a command), its CPU unknown (0); EXTRA
    (the program's own count of its markers, "fired"; its own figures,
    "workload") joins the fields."""
    rec = {"format": "kit-target-record/1", "build": build, "pid": os.getpid(),
           "threads": threads, "iterations": iterations, "pinned": False,
           "clock": "CLOCK_MONOTONIC", "wall_ns": wall_ns, "process_user_ns": user_ns,
           "process_sys_ns": sys_ns, "rate": "max", "pacing": None, "machine_busy_ns": None,
           "proc_stat_busy_ns": None, "fork": None, "machine_source": "", "uprobe_maps": [],
           **extra,
           "per_thread": [{"thread": k, "cpu": -1, "start_ns": t0, "wall_ns": wall, "user_ns": 0,
                           "sys_ns": 0, "cpu_ns": 0, "calls": calls, "late": 0, "corrupted": 0,
                           "decoys": 0} for k, (t0, wall, calls) in enumerate(per_thread)]}
    sys.stdout.write(json.dumps(rec, separators=(",", ":")) + "\n")
