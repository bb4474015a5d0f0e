"""matrix.py: make run's matrix: what can run here (prepare: install,
build, each back-end's choice and availability), then every
(configuration, threads, rate) cell, a thread count at a time, in rounds
of a shuffled order, each cell warmed up or sized from TIMINGS and run
until it is done (Cells: RUNS, or settled between MIN_RUNS and MAX_RUNS).

Nothing to run: run.py calls prepare() and measure().
"""
import math
import os
import random
import tempfile
import time

import configs
import debpkgs
import host
import kin
import record
import trusted
import tracers
import workloads
from host import say
from measure import environment as env
from host import check_signalled
from measure.kit import target_path
import userscript
from measure import witness
from measure.plan import Plan, fmt_s
from measure.sizing import (WARMUP_ITER, floor_calls, size_iterations, wall_per_call,
                            warmup_calls)
from params import TIGHT, cpus
from measure.sizing import most_runs
from record import DEFAULT_UNIT, INSTRUCTIONS
from stats import paired, settle, settle_idle
from tracers.base import TracerError


MIN_FREE_MB = 64  # free space the results folder needs to start


def results_problem(path):
    """Why no results can be written under PATH (not a folder, not
    writable, its disk nearly full), or None: found by writing a file
    there and removing it, before anything is installed or built."""
    p = os.path.abspath(path)
    while not os.path.exists(p):
        p = os.path.dirname(p)
    if not os.path.isdir(p):
        return f"{p} is not a folder"
    try:
        fd, tmp = tempfile.mkstemp(prefix=".kit-write-test-", dir=p)
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        return f"{p}: {e.strerror}"
    st = os.statvfs(p)
    free = st.f_bavail * st.f_frsize // 2 ** 20
    return f"{p} has {free} MiB free, less than {MIN_FREE_MB} MiB" if free < MIN_FREE_MB else None


def prepare(args, wanted):
    """Installs, builds and checks what can run here: the skip reasons by
    configuration, or an exit status when nothing may run."""
    why = results_problem(args.results)
    if why:
        say(f"run: cannot write results under {args.results}: {why}; nothing was done")
        return 2
    costs = env.missing_packages(wanted, sorted({c.workload for c in args.configs if c.workload}))
    debpkgs.install("run", list(costs), args.no_install, costs)
    workloads.refresh()
    if not trusted.make_all("run"):
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
        w = workloads.get(cfg.workload, args) if cfg.workload else None
        why = t.available() or t.skip_reason(cfg, w)
        if not why and w:
            why = (workloads.unavailable(w, w.marker or cfg.marker, cfg.semaphores)
                   or t.path_problem(w.program)
                   or ("MISS is the kit's own target's (its kit_decoy())" if args.miss else None)
                   or (None if TIGHT in args.rate else
                       "a real program runs its tight loop only, not paced (RATE)"))
        elif not why and not os.path.exists(target_path(cfg.build)):
            why = f"build/benchmark-{cfg.build} was not built (see make's message)"
        if why:
            skip[cfg.name] = why
            say(f"run: skipping {cfg.name}: {why}")
    return skip


def measure(kit, args, wanted, skip):
    """The results folder opened and its environment recorded, the
    skipped rows written, each tracer set up, and the matrix run."""
    kit.open()
    meta = kit.folder.meta
    say(f"run: results in {os.path.relpath(kit.folder.dir, host.ROOT)}; interleaving seed "
        f"{args.seed} (SEED= replays the order)")
    meta["skipped"] = skip
    # how the cells stop, which the report's interval follows (stats.pilot)
    meta["stopping"] = ({"rule": "fixed", "runs": args.runs} if args.runs else
                        {"rule": "stein", "pilot": args.min_runs, "max_runs": args.max_runs,
                         "sliced_runs": args.sliced_runs, "pilot_s": args.pilot_s,
                         # the idle-* rows' (by_pairs): paired.replay, its own cap
                         "idle_runs": args.idle_runs,
                         "dormant_precision_pct": args.dormant_precision})
    meta.update(env.environment(args, sorted({c.build for c in args.configs})))
    meta["tracers"] = {n: line for n in wanted if (line := tracers.get(n).describe())}
    if args.script:  # your SCRIPT: a copy, and the loop body it is set beside
        meta["script"] = userscript.record(args.script, kit.folder.dir)
    kit.folder.write_meta()
    for cfg in args.configs:
        if cfg.name in skip:
            kit.folder.skipped(cfg, args.threads, skip[cfg.name])
    runnable = preflight(kit, args, [c for c in args.configs if c.name not in skip])
    for name in sorted({c.tracer for c in runnable}):
        try:
            kit.sup.setup(tracers.get(name), kit.log)
        except TracerError as e:
            say(f"run: {name} could not be set up: {e}")
            for c in [c for c in runnable if c.tracer == name]:
                for n in args.threads:
                    kit.folder.write(record.failed_row(c, n, f"set-up failed: {e}"))
            runnable = [c for c in runnable if c.tracer != name]
    matrix(kit, args, runnable)
    check_signalled()  # one that came during the last run
    n = kit.folder.rejudge(lambda rows: witness.judge(rows, args))
    if n:
        say(f"run: {n} rows of real programs judged against their witnesses' counts "
            "(measure/witness.py)")
    meta["finished"] = record.now()


def preflight(kit, args, runnable):
    """A user's WORKLOAD run once, untraced, before anything is attached:
    if it fails, its row (rep 0, its reason) is the family's one failed
    row, the family's other rows are skipped saying so, and none of it runs
    traced.  RUNNABLE, less that family then."""
    for c in [c for c in runnable if c.workload and kin.is_baseline(c.name)
              and workloads.get(c.workload, args).command]:
        say(f"[pre-flight] {c.name}: the workload once, untraced")
        row, _ = kit.run_one(c, 1, 1, 0, sized_by="pre-flight: WORKLOAD once, untraced")
        if row["status"] not in record.MEASURED:
            family = [x for x in runnable if kin.against(x.name) == c.name]
            for x in family:
                if x is not c:
                    kit.folder.skipped(x, args.threads, f"the workload failed untraced ("
                                       f"{c.name}'s failed row says why): nothing runs traced")
            say(f"run: {c.name}: the workload failed untraced: {row['reason']}; none of "
                f"{', '.join(x.name for x in family)} runs")
            runnable = [x for x in runnable if x not in family]
    return runnable


def cut(c):
    """A cell whose runs are cut to ~MAX_RUN_S (and that the plan guesses
    as slow): a traced one, or a real program's (workloads.py), whose calls
    cost tens of ns untraced, not the kit's loop's one or two."""
    return tracers.get(c.tracer).attaches or bool(c.workload)


def warm_up(kit, args, c, n, label):
    """Rep 0 of a cell, which also times it to size its runs: (calls per
    thread, how they were chosen, its (row, timing) pairs).  A failed
    warm-up is tried once more; if that fails too, a traced cell falls
    back to the fewest calls (FLOOR_ITER, so a slow tracer cannot take
    minutes a run) and an untraced one to ITER."""
    traced = cut(c)
    runs = []
    calls = warmup_calls(kit.calib_iter, c)
    for attempt in ("warm-up", "warm-up retry"):
        say(f"[{attempt} {label}] {c.name} threads={n}")
        row, timing = kit.run_one(c, n, calls, 0, sized_by=attempt)
        runs.append((row, timing))
        if row["status"] in record.MEASURED:
            it, how = size_iterations(args, wall_per_call(row, timing, n, calls), traced,
                                      floor=floor_calls(c))
            kit.estimate[(c.name, n)] = timing.elapsed_s  # for its CALLS (time_limit)
            return it, how + (" (retried: the first warm-up failed)"
                              if attempt != "warm-up" else ""), runs
    if traced:
        return (min(args.iter, floor_calls(c)),
                f"fallback: both warm-ups failed ({row['reason']})", runs)
    return args.iter, f"ITER: both warm-ups failed ({row['reason']})", runs


def by_pairs(args, cell):
    """CELL stops by make run AGAINST='s rule (stats.settle_idle): an
    idle-* row at a thread count the CPUs hold, its tight loop, without
    RUNS (a time-sliced cell's noise is the scheduler's: settle's)."""
    c, n, rate = cell
    return c.idle and not args.runs and rate == TIGHT and n <= cpus()


def idle_pilot(args, run_s):
    """An idle-* cell's pilot: as many runs as fill PILOT_S (MIN_RUNS
    without it), paired.MIN_PILOT..MAX_PILOT, at most IDLE_RUNS."""
    want = math.ceil(args.pilot_s / run_s) if args.pilot_s and run_s > 0 else args.min_runs
    return min(args.idle_runs, paired.MAX_PILOT, max(paired.MIN_PILOT, want))


class Cells:
    """The matrix's cells and their timed rows so far, and when each is
    done: after exactly RUNS runs where RUNS is given; else (tight-loop
    cells) once settle() finds its interval precise enough, between
    MIN_RUNS and MAX_RUNS runs, the baseline at a thread count running
    for as long as any other cell there does; a paced cell runs MIN_RUNS
    times."""

    def __init__(self, args, cells, pilots):
        """PILOTS: {cell: the runs of its pilot} (Plan.pilots, fixed before
        anything runs)."""
        self.args, self.rows, self.stopped = args, {cell: [] for cell in cells}, {}
        self.pilots = {cell: pilots[(cell[0].name, *cell[1:])] for cell in cells}
        self.low, self.high = ((args.runs, args.runs) if args.runs
                               else (args.min_runs, args.max_runs))

    def most(self, threads):
        """(the most runs of a cell at THREADS, the parameter saying so)."""
        return (self.high, "RUNS") if self.args.runs else most_runs(self.args, threads)

    def most_of(self, cell):
        """(the most runs of CELL, the parameter saying so): an idle-* row's
        IDLE_RUNS (by_pairs), a baseline's the most of a cell measured
        against it, else most()."""
        if by_pairs(self.args, cell):
            return self.args.idle_runs, "IDLE_RUNS"
        c, n, rate = cell
        mine = [self.most_of(k) for k in self.rows
                if k[1:] == (n, rate) and k[0].against == c.name and k[0] is not c]
        return max(mine + [self.most(n)])

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
        base = next((k for k in self.rows if k[0].name == c.against and k[1:] == (n, TIGHT)),
                    None)
        if cell == base:  # a baseline: it runs while a cell measured against it does
            others = [k for k in self.active() if k != cell and k[1:] == (n, TIGHT)
                      and k[0].against == c.name]
            if len(mine) >= a.min_runs and not others:
                return (f"after {len(mine)} runs: every other cell at {n} thread{'s' * (n != 1)} "
                        "had stopped")
            top, cap = self.most_of(cell)
            return f"{cap}={top} reached" if len(mine) >= top else ""
        top, cap = self.most_of(cell)
        if by_pairs(a, cell) and (mine[-1].get("unit") or DEFAULT_UNIT) != INSTRUCTIONS:
            done, why = settle_idle(mine, self.rows.get(base, []), self.pilots[cell], top,
                                    a.dormant_precision, cap)
        else:
            done, why = settle(mine, self.rows.get(base, []), self.pilots[cell], top,
                               a.precision, a.precision_ns, cap)
        return why if done else ""

    def left_s(self, plan, warm_ups):
        """(fewest, most) planned seconds still to come: the WARM_UPS not
        yet run, then each cell still active up to its pilot's runs (fewest) or
        MAX_RUNS (most) runs."""
        lo = hi = sum(plan.run_s(name, n, TIGHT, warm_up=True) for name, n, _ in warm_ups)
        for cell in self.active():
            s, k = plan.run_s(cell[0].name, *cell[1:]), len(self.rows[cell])
            lo += s * max(0, self.pilots[cell] - k)
            hi += s * max(0, self.most_of(cell)[0] - k)
        return lo, hi


class Matrix:
    """One matrix's state: its cells, plan, sizes and every (row, timing)."""

    def __init__(self, kit, args, runnable):
        self.kit, self.args = kit, args
        self.cells = [(c, n, r) for c in runnable for n in args.threads for r in args.rate
                      if r == TIGHT or not c.workload]  # a real program: its tight loop only
        self.cut = {c.name: cut(c) for c in runnable}  # its runs cut to ~MAX_RUN_S: cut()
        self.plan = Plan(args, [(c.name, n, r) for c, n, r in self.cells], self.cut.get,
                         lambda name, n, ns: size_iterations(
                             args, ns, self.cut[name], floor=floor_calls(configs.BY_NAME[name])
                         )[0] * ns / 1e9,
                         lambda name: warmup_calls(WARMUP_ITER, configs.BY_NAME[name]))
        for cell in filter(lambda cell: by_pairs(args, cell), self.cells):
            key = (cell[0].name, *cell[1:])
            self.plan.pilots[key] = idle_pilot(args, self.plan.run_s(*key))
        self.state = Cells(args, self.cells, self.plan.pilots)
        self.warm_ups = self.plan.warm_ups()
        self.nwarm_all, self.nwarm, self.nruns = len(self.warm_ups), 0, 0
        self.nwitness = 0  # witness runs (witness()): never in self.runs
        self.sizing, self.runs = {}, []
        self.shuffle = random.Random(args.seed)  # interleaved: drift hits all cells alike

    def eta(self):
        lo, hi = self.state.left_s(self.plan, self.warm_ups)
        p = self.plan
        return p.eta(lo) + ("" if p.eta(lo) == p.eta(hi) else f"..{p.eta(hi)}")

    def presize(self, block, n):
        """Sizes BLOCK's tight-loop cells that get no warm-up from earlier
        runs here (TIMINGS, the nearest thread count scaled)."""
        for c, _, r in block:
            if r != TIGHT or (c.name, n, r) in self.warm_ups or self.args.quick:  # QUICK: ITER
                continue
            ns, m = self.plan.nearest(c.name, n)
            src = "earlier runs here (TIMINGS)" if m == n else (
                f"earlier runs here at {m} thread{'s' * (m != 1)}, scaled (TIMINGS)")
            if ns:
                self.sizing[(c.name, n)] = size_iterations(self.args, ns, self.cut[c.name],
                                                           src, floor_calls(c))
                self.kit.estimate[(c.name, n)] = warmup_calls(self.kit.calib_iter, c) * ns / 1e9
            elif self.cut[c.name]:  # its warm-up failed: the fewest calls, as warm_up() does
                self.sizing[(c.name, n)] = (min(self.args.iter, floor_calls(c)),
                                            "fallback: no run here has timed it")

    def warm(self, block, n):
        """BLOCK's warm-ups, each sizing its cell."""
        for c, _, r in [cell for cell in block if (cell[0].name, n, cell[2]) in self.warm_ups]:
            check_signalled()
            planned = self.plan.run_s(c.name, n, TIGHT, warm_up=True)
            self.nwarm += 1
            label = f"{self.nwarm}/{self.nwarm_all}, ETA {self.eta()}"
            self.warm_ups.remove((c.name, n, r))
            t = time.monotonic()
            it, how, runs = warm_up(self.kit, self.args, c, n, label)
            self.plan.done(planned, time.monotonic() - t)
            row, timing = runs[-1]
            if row["status"] in record.MEASURED:
                self.plan.measured(c.name, n, wall_per_call(row, timing, n,
                                                            warmup_calls(self.kit.calib_iter, c)))
            self.sizing[(c.name, n)] = (it, how)
            self.runs += runs

    def witness(self, block, n):
        """A witness run (record.WITNESS_RUN) for each of BLOCK's cells of
        a real program whose tracer can count with the kernel as its
        witness (Tracer.witness_run) and whose timed runs nothing witnessed
        (`unverified`, no other tracer's run of the family witnessed by its
        kernel, no other process's hits among them): after its rounds,
        never timed, never in the plan's timings; measure/witness.py then
        judges the timed runs by it."""
        for c, _, r in block:
            tracer = tracers.get(c.tracer)
            if not (c.workload and tracer.witness_run):
                continue
            timed = [row for row, _ in self.runs
                     if (row["config"], row["threads"]) == (c.name, n) and row["rep"]]
            family = [row for row, _ in self.runs if row["rep"] and timed
                      and witness.family(row) == witness.family(timed[-1])]
            if (not any(row["status"] == "unverified" for row in timed)
                    or any(record.kernel_witnessed(row) for row in family
                           if row["tracer"] != c.tracer)
                    or any(row.get("events_others") for row in family)):
                continue
            why = tracer.witness_problem(c, workloads.get(c.workload, self.args))
            if why:
                say(f"[witness threads={n}] {c.name}: no witness run: {why}")
                continue
            check_signalled()
            row, _ = self.kit.run_one(c, n, timed[-1]["iterations"], 0,
                                      sized_by=timed[-1]["sized_by"], witness=True)
            self.nwitness += 1
            say(f"[witness threads={n}] {c.name} iter={row['iterations']}, untimed, its count "
                f"against the site's traps: {row['status']}"
                + (f" ({row['reason']})" if row.get("reason") else ""))

    def rounds(self, block, n):
        """BLOCK's rounds until every cell in it is done."""
        args, rep = self.args, 0
        while any(cell not in self.state.stopped for cell in block):
            rep += 1
            order = [cell for cell in block if cell not in self.state.stopped]
            self.shuffle.shuffle(order)
            for k, cell in enumerate(order):
                check_signalled()
                c, _, r = cell
                it, how = self.sizing.get((c.name, n), (args.iter, "ITER"))
                extra, ns = self.plan.costs(c.name, n)
                planned = extra + (it * ns / 1e9 if r == TIGHT else args.duration)
                t = time.monotonic()
                row, timing = self.kit.run_one(c, n, it, rep, sized_by=how, rate=r,
                                               judge=self.state.judge(cell))
                self.plan.done(planned, time.monotonic() - t)
                self.runs.append((row, timing))
                self.nruns += 1
                size = (f"iter={row.get('iterations') or it}" if r == TIGHT else
                        f"rate={r}/s for {args.duration:g} s")  # (as run: a cap's too)
                tail = f"{row['status']}" + (f" ({row['reason']})" if row.get("reason") else "")
                stop = f" [stopped: {row['stopped']}]" if row.get("stopped") else ""
                say(f"[threads={n} round {rep}, {k + 1}/{len(order)}] {c.name} {size}: "
                    f"{tail}{stop}  ETA {self.eta()}")


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
    m = Matrix(kit, args, runnable)
    say(m.plan.line(m.state.low, m.state.most))
    if not args.runs:  # the report's interval takes each cell's pilot from here (stats.pilot)
        kit.folder.meta["stopping"]["pilots"] = {
            f"{c.name}/{n}": k for (c, n, r), k in m.state.pilots.items() if r == TIGHT}
        kit.folder.write_meta()
    t0 = time.monotonic()
    kit.calib_iter = min(args.iter, WARMUP_ITER)
    for n in args.threads:
        block = [cell for cell in m.cells if cell[1] == n]
        m.presize(block, n)
        m.warm(block, n)
        m.rounds(block, n)
        m.witness(block, n)
        m.plan.learn(m.runs, write=False)  # the next thread counts scale from this one
    m.plan.learn(m.runs)
    say(f"run: {m.nruns} runs and {len(m.runs) - m.nruns} warm-ups"
        + (f" and {m.nwitness} witness runs" if m.nwitness else "") + " in "
        f"{fmt_s(time.monotonic() - t0)}; the plan said about {fmt_s(m.plan.total)}")
