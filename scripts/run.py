#!/usr/bin/env python3
"""run.py: the kit's runner, what `make run` starts.

Measures every configuration (scripts/configs.py) that can run here, for
each thread count, repeated and interleaved, into a new folder
results/<UTC stamp>/ (runs.csv, meta.json, logs/), then writes the report.

    make run THREADS=1..8 ITER=10000000 RUNS=3 CONFIGS='baseline,bpftrace-*'
    python3 scripts/run.py --threads 1,2 --iter 100000 --configs 'ftrace-*'
    python3 scripts/run.py --list

Needs root for every tracer (uprobes); without it only the untraced rows
run.  Input is checked before anything is installed, built or attached.
Human progress goes to stderr; the machine record is runs.csv.
"""
import functools
import math
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import configs  # noqa: E402
import elfinfo  # noqa: E402
import host  # noqa: E402
from host import ROOT  # noqa: E402
import params  # noqa: E402
from measure import paths  # noqa: E402
import record  # noqa: E402
import report  # noqa: E402
import tracers  # noqa: E402
from params import DEFAULT_TIME_LIMIT, MAX_ITER, TIGHT, TIME_LIMIT_MARGIN, cpus  # noqa: E402
from measure.plan import Plan, fmt_s  # noqa: E402
from stats import BASELINE, settle  # noqa: E402
from host import say  # noqa: E402
from measure.supervise import Supervisor  # noqa: E402
from tracers.base import TracerError  # noqa: E402

WARMUP_ITER = 20000  # per thread, for the warm-up that also calibrates
FLOOR_ITER = 2000  # the fewest calls a sized run makes


class Interrupted(Exception):
    pass


# The signal that interrupted the run, once one has.  The handler raises
# Interrupted at once, but an exception raised while Python runs a
# finaliser (a Popen's __del__, say) is printed and dropped, so the matrix
# also checks this between runs: a SIGINT/SIGTERM is never lost.
SIGNALLED = []


def check_signalled():
    if SIGNALLED:
        raise Interrupted(SIGNALLED[-1])


def parse_args(argv):
    """params.parse_args with the back-ends' own variables."""
    return params.parse_args(argv, [p for t in tracers.BACKENDS.values() for p in t.params()])


# -- the machine ---------------------------------------------------------------
def missing_packages(wanted_tracers):
    """The Debian packages that what was asked for needs and this machine
    lacks: the back-ends' (each says), the builds' (make says), and
    matplotlib for the report's plots."""
    pkgs = {p for t in wanted_tracers for p in tracers.get(t).missing().values()}
    pkgs |= host.build_needs()
    if not host.has_matplotlib("/usr/bin/python3"):
        pkgs.add("python3-matplotlib")
    return sorted(pkgs)


def environment(args, builds):
    def read(path):
        try:
            with open(path) as f:
                return f.read().strip()
        except OSError:
            return None
    cpu = None
    for ln in (read("/proc/cpuinfo") or "").splitlines():
        if ln.startswith("model name"):
            cpu = ln.split(":", 1)[1].strip()
            break
    tools = {"cc": host.first_line([os.environ.get("CC", "cc"), "--version"])}
    for t in tracers.BACKENDS.values():
        tools.update((c, host.first_line([c, "--version"])) for c in t.versions)
    tools["python"] = sys.version.split()[0]
    sites = {}
    for b in builds:
        path = os.path.join(ROOT, "build", f"benchmark-{b}")
        if os.path.exists(path):
            sites[b] = elfinfo.summary(os.path.relpath(path, ROOT))
    return {
        "host": platform.node(), "cpu_model": cpu, "cpus": cpus(),
        "cpus_online": os.cpu_count(),
        "kernel": platform.release(), "machine": platform.machine(),
        "clocksource": read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        "tools": tools, "probe_sites": sites,
        "uprobe_optimisation": dict(zip(("errno", "site", "meaning"),
                                        paths.uprobe_optimisation())),
        "uretprobe_syscall": dict(zip(("answer", "meaning"), paths.uretprobe_syscall())),
        "inputs": {p.dest: inputs(getattr(args, p.dest)) for p in args.params},
        "root": os.geteuid() == 0,
    }


# -- one run -------------------------------------------------------------------
def inputs(value):
    """An input as meta.json records it (configurations by name)."""
    if isinstance(value, list) and value and isinstance(value[0], configs.Config):
        return [c.name for c in value]
    return value


class Run:
    """One execution of the target under one configuration; STATE is the
    back-end's own per-run record (its State dataclass)."""

    def __init__(self, kit, cfg, tracer, threads, iterations, rep, rate=TIGHT):
        self.cfg, self.threads, self.iterations, self.rate = cfg, threads, iterations, rate
        self.pin = kit.args.pin
        self.miss = kit.args.miss
        self.duration_ms = max(1, round(kit.args.duration * 1000))
        self.build = os.path.join(ROOT, "build", f"benchmark-{cfg.build}")
        kit.serial += 1
        self.tag = f"kit{kit.id}_{kit.serial}"
        paced = "" if rate == TIGHT else f"-rate{rate}"
        self.log = os.path.join(kit.folder.logs, f"{cfg.name}-t{threads}{paced}-r{rep}.log")
        self.scratch = tempfile.mkdtemp(prefix=self.tag + "-", dir=kit.scratch)
        self.state = tracer.State()
        self.pids = set()  # the tracer's processes (what they leave behind is removed)
        # A -pg build writes gmon.out when it exits: into scratch, not the tree.
        self.env = dict(os.environ, GMON_OUT_PREFIX=os.path.join(self.scratch, "gmon.out"))

    def target(self):
        size = (["--iterations", str(self.iterations)] if self.rate == TIGHT else
                ["--rate", str(self.rate), "--duration-ms", str(self.duration_ms)])
        miss = min(self.miss, self.iterations) if self.rate == TIGHT else 0
        order = {"running": ["--hold"], "fork": ["--fork", str(configs.FORK_CALLS)]}
        return [self.build, "--threads", str(self.threads), *size, "--quiet",
                *(["--pin"] if self.pin else []), *(["--miss", str(miss)] if miss else []),
                *order.get(self.cfg.attach, [])]


class Kit:
    """The matrix's runs: each one attached, timed, judged (record.verdict)
    and written to the results folder (record.Folder); the Supervisor
    starts, watches and cleans up the processes."""

    def __init__(self, args):
        self.args = args
        self.id = f"{os.getpid():x}"
        self.serial = 0
        self.folder = None
        self.scratch = None
        self.sup = Supervisor()
        self.estimate = {}  # (config, threads): the warm-up's seconds
        self.calib_iter = WARMUP_ITER

    def open(self):
        self.folder = record.Folder(self.args.results, unit=self.args.unit)
        self.scratch = tempfile.mkdtemp(prefix="kit-scratch-", dir=os.path.join(ROOT, "build"))
        self.log = os.path.join(self.folder.logs, "kit.log")

    def close(self):
        self.sup.cleanup()
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)
        if self.folder:
            self.folder.close()

    def run_one(self, cfg, threads, iterations, rep, sized_by="", rate=TIGHT, judge=None):
        """Runs the target once under cfg (paced at RATE calls/s per thread
        for DURATION, or ITERATIONS calls in a tight loop); writes and
        returns its row, whose `stopped` JUDGE(row) fills: why the cell
        runs no more, or ''."""
        tracer = tracers.get(cfg.tracer)
        if rate != TIGHT:
            iterations = max(1, rate * round(self.args.duration * 1000) // 1000)
            sized_by = f"RATE={rate} x DURATION={self.args.duration:g} s"
        run = Run(self, cfg, tracer, threads, iterations, rep, rate)
        base = dict(config=cfg.name, build=cfg.build, tracer=cfg.tracer, probe=cfg.probe,
                    action=cfg.action, threads=threads, iterations=iterations, rep=rep,
                    sized_by=sized_by, pinned=int(run.pin), rate=rate, unit=self.args.unit,
                    attach=cfg.attach)
        planned = threads * iterations
        expected = record.expected_events(tracer.attaches, cfg.expect, planned)
        row = dict(base, events_expected=expected, status="failed")
        # A return probe's path is the kernel's uretprobe syscall, or a trap.
        uret = paths.UretprobeSyscalls(run) if cfg.probe == "return" else None
        t0 = time.monotonic()
        try:
            try:
                if uret:
                    self.sup.attach(uret, run)
                # ATTACH: "running" attaches while the started target holds
                attach = functools.partial(self.sup.attach, tracer, run)
                if cfg.attach != "running":
                    attach()
                cmd = tracer.wrap(run, run.target())
                rec, rusage, why = self.sup.execute(
                    tracer, run, cmd, self.time_limit(run), ROOT,
                    release=attach if cfg.attach == "running" else None)
                if why:
                    raise TracerError(why)
                ev = tracer.events(run)
                if uret:
                    row["path"] = uret.path()
            finally:
                self.sup.detach(tracer, run)
                if uret:
                    self.sup.detach(uret, run)
            row.update(self.record_fields(rec))
            if tracer.uprobes and not uret:
                row["path"] = paths.entry_path(rec["uprobe_maps"], ev.seen)
            if ev.tracer_cpu_ns:  # a daemon's CPU, read by the back-end
                row["tracer_user_ns"], row["tracer_sys_ns"] = ev.tracer_cpu_ns
            elif rusage and cmd[0] != run.build:
                # The tracer's process and its children, less the target.
                row["tracer_user_ns"] = max(0, int(rusage.ru_utime * 1e9) - rec["process_user_ns"])
                row["tracer_sys_ns"] = max(0, int(rusage.ru_stime * 1e9) - rec["process_sys_ns"])
            decoys = sum(t.get("decoys", 0) for t in rec["per_thread"])
            note = ev.note + (f"; MISS: {decoys} of the calls went to kit_decoy(), which no "
                              "probe covers" if decoys else "")
            row.update(events_seen=ev.seen, events_dropped=ev.dropped, note=note.lstrip("; "),
                       runtime=ev.runtime)
            calls = row["calls"] = sum(t["calls"] for t in rec["per_thread"])
            if rate != TIGHT:  # a paced thread that fell behind stops at DURATION
                expected = row["events_expected"] = record.expected_events(
                    tracer.attaches, cfg.expect, calls)
            if rec.get("fork"):  # the parent's calls before the fork were probed too
                row["fork_calls"], row["fork_corrupted"] = (rec["fork"]["calls"],
                                                            rec["fork"]["corrupted"])
                expected = row["events_expected"] = record.expected_events(
                    tracer.attaches, cfg.expect, calls + rec["fork"]["calls"])
            if calls != planned and (rate == TIGHT or calls > planned):
                # the target's own sanity check
                row["reason"] = f"the target made {calls} calls, not {planned}"
            else:
                row["status"], row["reason"] = record.verdict(
                    tracer.attaches, expected, ev, cfg.overwrite, row["corrupted"], calls)
        except TracerError as e:
            row["reason"] = str(e)
        except OSError as e:
            row["reason"] = f"{e.filename or ''}: {e.strerror}".strip(": ")
        except (Interrupted, KeyboardInterrupt) as e:
            row["reason"] = f"interrupted by {e or 'Ctrl-C'}"
            raise
        except Exception as e:  # a back-end's bug must not stop the matrix
            with open(run.log, "a") as f:
                traceback.print_exc(file=f)
            row["reason"] = f"internal error: {type(e).__name__}: {e} (see {run.log})"
        finally:
            shutil.rmtree(run.scratch, ignore_errors=True)
            row["_elapsed"] = time.monotonic() - t0
        if judge:
            row["stopped"] = judge(row)
        self.folder.row(**{k: v for k, v in row.items() if not k.startswith("_")})
        return row

    @staticmethod
    def record_fields(rec):
        pt = rec["per_thread"]
        fields = {f"thread_{k}": record.join_ns(t[k] for t in pt)
                  for k in ("wall_ns", "user_ns", "sys_ns", "cpu_ns")}
        fields.update((k, rec[k]) for k in ("wall_ns", "process_user_ns", "process_sys_ns",
                                            "machine_busy_ns", "machine_source",
                                            "proc_stat_busy_ns"))
        fields["corrupted"] = sum(t["corrupted"] for t in pt)
        if rec["pacing"]:
            fields["pacing"] = "{method}, batches of {batch}".format(**rec["pacing"])
            fields["late"] = sum(t["late"] for t in pt)
        fields["_max_thread_wall_ns"] = max(t["wall_ns"] for t in pt)
        return fields

    def time_limit(self, run):
        """TIME_LIMIT if given; else 10x the cell's expected time (its
        warm-up's, or its loop as TIMINGS timed it) scaled to the run's
        calls (a paced run: 10x DURATION), plus TIME_LIMIT_MARGIN for the
        tracer's start and end."""
        if self.args.time_limit:
            return self.args.time_limit
        if run.rate != TIGHT:
            return TIME_LIMIT_MARGIN + 10 * self.args.duration
        est = self.estimate.get((run.cfg.name, run.threads))
        if est is None:
            return DEFAULT_TIME_LIMIT
        return TIME_LIMIT_MARGIN + 10 * est * run.iterations / max(1, self.calib_iter)


# -- the matrix ----------------------------------------------------------------
def round2(n, up):
    """N (> 0) rounded down (or up) to two significant figures, at least 1."""
    scale = 10 ** max(0, len(str(int(n))) - 2)
    return max(1, (math.ceil if up else math.floor)(n / scale) * scale)


def size_iterations(args, ns_per_call, traced, source="the warm-up"):
    """(calls per thread, how) for a cell whose run takes NS_PER_CALL of
    wall time per call and thread (as SOURCE measured it): a slow (traced)
    cell gets fewer calls so one run takes ~MAX_RUN_S (never below
    FLOOR_ITER); a fast untraced one gets more, so one run takes at least
    MIN_RUN_S and the VM's jitter is averaged out."""
    if traced and args.max_run_s and ns_per_call > 0:
        n = args.max_run_s * 1e9 / ns_per_call
        if n < args.iter:
            return (max(min(args.iter, FLOOR_ITER), round2(n, up=False)),
                    f"cut to ~MAX_RUN_S={args.max_run_s:g} s by {source}")
    if not traced and args.min_run_s and ns_per_call > 0:
        n = args.min_run_s * 1e9 / ns_per_call
        if n > args.iter:
            return (min(MAX_ITER, round2(n, up=True)),
                    f"raised to MIN_RUN_S={args.min_run_s:g} s by {source}")
    return args.iter, "ITER"


def wall_per_call(row, threads, calls):
    """A run's wall time per call and thread, as a longer run of the same
    cell would see it: its slowest thread's, or where THREADS exceed the
    CPUs, its threads' mean CPU time times THREADS/CPUs (a short warm-up's
    threads each fit in one time slice, so its wall time would not show
    the slicing a timed run gets)."""
    wall = row["_max_thread_wall_ns"] / calls
    cpu = record.split_ns(row.get("thread_cpu_ns") or "")
    if threads > cpus() and cpu:
        return max(wall, sum(cpu) / len(cpu) / calls * threads / cpus())
    return wall


def prepare(args, wanted):
    """Installs, builds and checks what can run here: the skip reasons by
    configuration, or an exit status when nothing may run."""
    host.install("run", missing_packages(wanted), args.no_install)
    if not host.make_all("run"):
        return 1
    # Each back-end settles how it will run (SystemTap its runtime); one
    # that was told to run a way it cannot is an error, before anything
    # is attached.
    for name in wanted:
        try:
            line = tracers.get(name).choose(args)
        except TracerError as e:
            say(f"run: {e}")
            return 2
        if line:
            say(f"run: {line}")
    skip = {}
    for cfg in args.configs:
        t = tracers.get(cfg.tracer)
        why = t.available() or t.skip_reason(cfg)
        if not why and not os.path.exists(os.path.join(ROOT, "build", f"benchmark-{cfg.build}")):
            why = f"build/benchmark-{cfg.build} was not built (see make's message)"
        if why:
            skip[cfg.name] = why
            say(f"run: skipping {cfg.name}: {why}")
    return skip


def measure(kit, args, wanted, skip):
    kit.open()
    meta = kit.folder.meta
    say(f"run: results in {os.path.relpath(kit.folder.dir, ROOT)}; interleaving seed "
        f"{args.seed} (SEED= replays the order)")
    meta["skipped"] = skip
    meta.update(environment(args, sorted({c.build for c in args.configs})))
    meta["tracers"] = {n: line for n in wanted if (line := tracers.get(n).describe())}
    kit.folder.write_meta()
    for cfg in args.configs:
        if cfg.name in skip:
            kit.folder.skipped(cfg, args.threads, skip[cfg.name])
    runnable = [c for c in args.configs if c.name not in skip]
    for name in sorted({c.tracer for c in runnable}):
        try:
            kit.sup.setup(tracers.get(name), kit.log)
        except TracerError as e:
            say(f"run: {name} could not be set up: {e}")
            for c in [c for c in runnable if c.tracer == name]:
                for n in args.threads:
                    kit.folder.row(config=c.name, build=c.build, tracer=c.tracer, threads=n,
                                   status="failed", reason=f"set-up failed: {e}")
            runnable = [c for c in runnable if c.tracer != name]
    matrix(kit, args, runnable)
    check_signalled()  # one that came during the last run
    meta["finished"] = record.now()


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.list:
        print(configs.table())
        return 0
    if args.vars:
        print("\n".join(params.defaults(args.params)))
        return 0
    wanted = sorted({c.tracer for c in args.configs if tracers.get(c.tracer).attaches})
    kit = Kit(args)
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def on_signal(signum, _frame):
        SIGNALLED.append(signal.Signals(signum).name)
        raise Interrupted(SIGNALLED[-1])
    for s in old:
        signal.signal(s, on_signal)
    try:
        skip = prepare(args, wanted)
        if isinstance(skip, int):
            return skip
        measure(kit, args, wanted, skip)
    except Interrupted as e:
        say(f"\nrun: interrupted by {e}; cleaning up (rows so far are kept)")
        if kit.folder:
            kit.folder.meta["interrupted"] = str(e)
        return 130
    finally:
        for s in old:
            signal.signal(s, signal.SIG_IGN)  # cleanup runs to its end
        kit.close()
        for s, h in old.items():
            signal.signal(s, h)
    if not args.no_report and os.path.exists(os.path.join(HERE, "report.py")):
        subprocess.run([sys.executable, os.path.join(HERE, "report.py"), kit.folder.dir])
    return 0


def warm_up(kit, args, c, n, label):
    """Rep 0 of a cell, which also times it to size its runs: (calls per
    thread, how they were chosen, its rows).  A failed warm-up is tried
    once more; if that fails too, a traced cell falls back to the fewest
    calls (FLOOR_ITER, so a slow tracer cannot take minutes a run) and an
    untraced one to ITER."""
    traced = tracers.get(c.tracer).attaches
    rows = []
    for attempt in ("warm-up", "warm-up retry"):
        say(f"[{attempt} {label}] {c.name} threads={n}")
        row = kit.run_one(c, n, kit.calib_iter, 0, sized_by=attempt)
        rows.append(row)
        if row["status"] in record.MEASURED:
            it, how = size_iterations(args, wall_per_call(row, n, kit.calib_iter), traced)
            kit.estimate[(c.name, n)] = row["_elapsed"]
            return it, how + (" (retried: the first warm-up failed)"
                              if attempt != "warm-up" else ""), rows
    if traced:
        return (min(args.iter, FLOOR_ITER), f"fallback: both warm-ups failed ({row['reason']})",
                rows)
    return args.iter, f"ITER: both warm-ups failed ({row['reason']})", rows


class Cells:
    """The matrix's cells and their timed rows so far, and when each is
    done: after exactly RUNS runs where RUNS is given; else (tight-loop
    cells) once settle() finds its interval precise enough, between
    MIN_RUNS and MAX_RUNS runs, the baseline at a thread count running
    for as long as any other cell there does; a paced cell runs MIN_RUNS
    times."""

    def __init__(self, args, cells):
        self.args, self.rows, self.stopped = args, {cell: [] for cell in cells}, {}
        self.low, self.high = ((args.runs, args.runs) if args.runs
                               else (args.min_runs, args.max_runs))

    def active(self):
        return [cell for cell in self.rows if cell not in self.stopped]

    def judge(self, cell):
        """The run_one judge for CELL: records the row, says if it was the last."""
        def judge(row):
            self.rows[cell].append(row)
            why = self.decide(cell)
            if why:
                self.stopped[cell] = why
            return why
        return judge

    def decide(self, cell):
        c, n, rate = cell
        mine, a = self.rows[cell], self.args
        if a.runs:
            return f"RUNS={a.runs}" if len(mine) >= a.runs else ""
        if rate != TIGHT:
            return f"MIN_RUNS={a.min_runs} (a paced cell)" if len(mine) >= a.min_runs else ""
        base = next((k for k in self.rows if k[0].name == BASELINE and k[1:] == (n, TIGHT)), None)
        if cell == base:
            others = [k for k in self.active() if k != cell and k[1:] == (n, TIGHT)]
            if len(mine) >= a.min_runs and not others:
                return (f"after {len(mine)} runs: every other cell at {n} thread{'s' * (n != 1)} "
                        "had stopped")
            return f"MAX_RUNS={a.max_runs} reached" if len(mine) >= a.max_runs else ""
        done, why = settle(mine, self.rows.get(base, []), a.min_runs, a.max_runs, a.precision,
                           a.precision_ns)
        return why if done else ""

    def left_s(self, plan, warm_ups):
        """(fewest, most) planned seconds still to come: the WARM_UPS not
        yet run, then each cell still active up to MIN_RUNS (fewest) or
        MAX_RUNS (most) runs."""
        lo = hi = sum(plan.run_s(name, n, TIGHT, warm_up=True) for name, n, _ in warm_ups)
        for cell in self.active():
            s, k = plan.run_s(cell[0].name, *cell[1:]), len(self.rows[cell])
            lo += s * max(0, self.low - k)
            hi += s * max(0, self.high - k)
        return lo, hi


def matrix(kit, args, runnable):
    """Every (configuration, threads, rate) cell, a thread count at a time,
    ascending: there, each tight-loop cell that needs one first gets a
    warm-up that sizes it (WARM_UP; the others are sized from TIMINGS,
    build/timings.json), then the thread count runs in rounds, each round
    running every cell not yet done once, in a new shuffled order (drift
    hits all cells alike, and a cell's extra runs fall in later rounds,
    never back to back).  A cell is measured against the baseline at its
    own thread count, so only the cells of one thread count need to share
    the same stretch of time: a round is a thread count's cells, not the
    whole matrix's."""
    cells = [(c, n, r) for c in runnable for n in args.threads for r in args.rate]
    attached = {c.name: tracers.get(c.tracer).attaches for c in runnable}
    plan = Plan(args, [(c.name, n, r) for c, n, r in cells], attached.get,
                lambda name, n, ns: size_iterations(args, ns, attached[name])[0] * ns / 1e9,
                WARMUP_ITER)
    state = Cells(args, cells)
    say(plan.line(state.low, state.high))
    t0 = time.monotonic()
    warm_ups = plan.warm_ups()
    sizing, all_rows = {}, []
    kit.calib_iter = min(args.iter, WARMUP_ITER)
    shuffle = random.Random(args.seed)  # interleaved: drift hits all cells alike
    nruns = nwarm = 0
    nwarm_all = len(warm_ups)

    def eta():
        lo, hi = state.left_s(plan, warm_ups)
        return plan.eta(lo) + ("" if plan.eta(lo) == plan.eta(hi) else f"..{plan.eta(hi)}")
    for n in args.threads:
        block = [cell for cell in cells if cell[1] == n]
        for c, _, r in block:
            if r != TIGHT or (c.name, n, r) in warm_ups or args.quick:  # QUICK: ITER
                continue
            ns, m = plan.nearest(c.name, n)  # no warm-up: sized by earlier runs here
            src = "earlier runs here (TIMINGS)" if m == n else (
                f"earlier runs here at {m} thread{'s' * (m != 1)}, scaled (TIMINGS)")
            if ns:
                sizing[(c.name, n)] = size_iterations(args, ns, attached[c.name], src)
                kit.estimate[(c.name, n)] = kit.calib_iter * ns / 1e9
            elif attached[c.name]:  # its warm-up failed: the fewest calls, as warm_up() does
                sizing[(c.name, n)] = (min(args.iter, FLOOR_ITER),
                                       "fallback: no run here has timed it")
        for c, _, r in [cell for cell in block if (cell[0].name, n, cell[2]) in warm_ups]:
            check_signalled()
            planned = plan.run_s(c.name, n, TIGHT, warm_up=True)
            nwarm += 1
            label = f"{nwarm}/{nwarm_all}, ETA {eta()}"
            warm_ups.remove((c.name, n, r))
            t = time.monotonic()
            it, how, rows = warm_up(kit, args, c, n, label)
            plan.done(planned, time.monotonic() - t)
            if rows[-1]["status"] in record.MEASURED:
                plan.measured(c.name, n, wall_per_call(rows[-1], n, kit.calib_iter))
            sizing[(c.name, n)] = (it, how)
            all_rows += rows
        rep = 0
        while any(cell not in state.stopped for cell in block):
            rep += 1
            order = [cell for cell in block if cell not in state.stopped]
            shuffle.shuffle(order)
            for k, cell in enumerate(order):
                check_signalled()
                c, _, r = cell
                it, how = sizing.get((c.name, n), (args.iter, "ITER"))
                extra, ns = plan.costs(c.name, n)
                planned = extra + (it * ns / 1e9 if r == TIGHT else args.duration)
                t = time.monotonic()
                row = kit.run_one(c, n, it, rep, sized_by=how, rate=r, judge=state.judge(cell))
                plan.done(planned, time.monotonic() - t)
                all_rows.append(row)
                nruns += 1
                size = f"iter={it}" if r == TIGHT else f"rate={r}/s for {args.duration:g} s"
                tail = f"{row['status']}" + (f" ({row['reason']})" if row.get("reason") else "")
                stop = f" [stopped: {row['stopped']}]" if row.get("stopped") else ""
                say(f"[threads={n} round {rep}, {k + 1}/{len(order)}] {c.name} {size}: "
                    f"{tail}{stop}  ETA {eta()}")
        plan.learn(all_rows, write=False)  # the next thread counts scale from this one
    plan.learn(all_rows)
    say(f"run: {nruns} runs and {len(all_rows) - nruns} warm-ups in "
        f"{fmt_s(time.monotonic() - t0)}; the plan said about {fmt_s(plan.total)}")


if __name__ == "__main__":
    sys.exit(main())
