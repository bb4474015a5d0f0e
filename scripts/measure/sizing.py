"""sizing.py: how many calls a run of a cell makes, from how long a call
took there (a warm-up, or earlier runs here in TIMINGS): a slow traced
cell is cut so one run takes ~MAX_RUN_S, a fast untraced one raised so it
takes at least MIN_RUN_S, both to two significant figures; and how many
runs a cell makes at most (most_runs), and in its pilot (pilot_runs).

Nothing to run: `from measure import sizing`.
"""
import math

import record
import workloads
from params import MAX_ITER, cpus

WARMUP_ITER = 20000  # per thread, for the warm-up that also calibrates
FLOOR_ITER = 2000  # the fewest calls a sized run makes


def warmup_calls(calib_iter, cfg):
    """A warm-up's calls per thread for CFG: CALIB_ITER (ITER, at most
    WARMUP_ITER), or fewer for a real program whose call is a whole
    transaction (workload.Workload.warmup_iter)."""
    if cfg.workload:
        return min(calib_iter, workloads.get(cfg.workload).warmup_iter or calib_iter)
    return calib_iter


def round2(n, up):
    """N (> 0) rounded down (or up) to two significant figures, at least 1."""
    scale = 10 ** max(0, len(str(int(n))) - 2)
    return max(1, (math.ceil if up else math.floor)(n / scale) * scale)


def floor_calls(cfg):
    """The fewest calls a sized run of CFG makes: FLOOR_ITER, or a real
    program's own (a user's command run once is a call)."""
    w = workloads.get(cfg.workload) if cfg.workload else None
    return w.floor_iter if w and w.floor_iter else FLOOR_ITER


def size_iterations(args, ns_per_call, traced, source="the warm-up", floor=FLOOR_ITER):
    """(calls per thread, how) for a cell whose run takes NS_PER_CALL of
    wall time per call and thread (as SOURCE measured it): a slow (traced)
    cell gets fewer calls so one run takes ~MAX_RUN_S (never below
    FLOOR); a fast untraced one gets more, so one run takes at least
    MIN_RUN_S and the VM's jitter is averaged out."""
    if traced and args.max_run_s and ns_per_call > 0:
        n = args.max_run_s * 1e9 / ns_per_call
        if n < args.iter:
            return (max(min(args.iter, floor), round2(n, up=False)),
                    f"cut to ~MAX_RUN_S={args.max_run_s:g} s by {source}")
    if not traced and args.min_run_s and ns_per_call > 0:
        n = args.min_run_s * 1e9 / ns_per_call
        if n > args.iter:
            return (min(MAX_ITER, round2(n, up=True)),
                    f"raised to MIN_RUN_S={args.min_run_s:g} s by {source}")
    return args.iter, "ITER"


def wall_per_call(row, timing, threads, calls):
    """A run's wall time per call and thread, as a longer run of the same
    cell would see it: its slowest thread's (TIMING), or where THREADS
    exceed the CPUs, its threads' mean CPU time (ROW) times THREADS/CPUs
    (a short warm-up's threads each fit in one time slice, so its wall
    time would not show the slicing a timed run gets)."""
    wall = timing.max_thread_wall_ns / calls
    cpu = record.split_ns(row.get("thread_cpu_ns") or "")
    if threads > cpus() and cpu:
        return max(wall, sum(cpu) / len(cpu) / calls * threads / cpus())
    return wall


def most_runs(args, threads):
    """(the most runs of a cell at THREADS, the parameter that says so):
    MAX_RUNS, or SLICED_RUNS where THREADS exceed the CPUs."""
    if threads > cpus() and args.sliced_runs < args.max_runs:
        return args.sliced_runs, "SLICED_RUNS"
    return args.max_runs, "MAX_RUNS"


def pilot_runs(args, threads, run_s):
    """The runs of a tight-loop cell's pilot (stats.settle's first stage)
    at THREADS whose one run the plan puts at RUN_S seconds: as many as
    fill PILOT_S, at least MIN_RUNS, at most the cell's most (most_runs);
    MIN_RUNS where PILOT_S is 0."""
    most = most_runs(args, threads)[0]
    if not args.pilot_s or run_s <= 0:
        return min(args.min_runs, most)
    return max(min(args.min_runs, most), min(most, math.ceil(args.pilot_s / run_s)))
