"""plan.py: how long a matrix will take, said before it starts and kept up
to date while it runs.  Each cell's cost is its tracer's start-up and end
(what a run takes beyond the target's loop) and its per-call time, both
measured by earlier runs on this machine and cached in TIMINGS
(build/timings.json; per configuration and thread count; a configuration never run here gets a
guess by whether anything is attached).  The runner (measure/matrix.py) prints the
plan in one line at the start, an ETA on every progress line, warm-ups
included, and the total beside the estimate at the end.

Nothing to run: measure/matrix.py uses Plan.
"""
import json

import host
import configs
import kin
import userscript
import workloads
from kin import is_baseline
from params import TIGHT, cpus
from measure.sizing import pilot_runs

# Guesses for a configuration this machine has not run yet: seconds a run
# takes beyond its loop, and ns per call, by whether a tracer attaches.
GUESS = {True: (0.5, 5000.0), False: (0.05, 2.0)}


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def fmt_s(s):
    s = int(round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class Plan:
    """The matrix's time: ESTIMATE(cell, calls) for one run, what was
    planned and what is left, corrected as runs report their real time."""

    def __init__(self, args, cells, attached, loop_s, warmup_iter):
        """CELLS: [(config name, threads, rate)]; ATTACHED(name): a tracer
        attaches; LOOP_S(name, threads, ns_per_call): the loop's seconds of
        one timed run as the runner will size it; WARMUP_ITER(name): a
        warm-up's calls per thread."""
        self.args, self.cells, self.attached, self.loop_s = args, cells, attached, loop_s
        self.warmup_iter = warmup_iter
        # The cache by configuration name; a user's row's under its command's
        # key (keyed): another WORKLOAD's timings size nothing of this one
        self.stored = load(args.timings)
        self.cache = {n: self.stored[keyed(n, args)] for n in configs.BY_NAME
                      if keyed(n, args) in self.stored}
        self.spent = self.planned_spent = 0.0
        # Each cell's pilot, fixed here, before anything runs: nothing the
        # pilot measures sets its length (stats.settle's two stages).
        self.pilots = {c: (args.runs or (pilot_runs(args, c[1], self.run_s(*c)) if c[2] == TIGHT
                                         else args.min_runs)) for c in cells}

    def costs(self, name, threads):
        """(seconds beyond the loop, ns per call) for a cell, cached or guessed."""
        c = self.cache.get(name, {})
        t = self.nearest(name, threads)[0]
        guess = GUESS[self.attached(name)]
        return (c.get("extra_s", guess[0]), t if t is not None else guess[1])

    def cached(self, name, threads):
        """A cell's wall time per call and thread from earlier timed runs
        here, or None."""
        return self.cache.get(name, {}).get("ns_per_call", {}).get(str(threads))

    def nearest(self, name, threads):
        """(wall time per call and thread, the thread count it was timed at)
        for a cell: its own from earlier runs here, else the nearest thread
        count's scaled by how many threads share a CPU (THREADS/CPUs, where
        above 1); (None, None) where the configuration was never timed here."""
        m, ns = self.closest(name, "ns_per_call", threads)
        if m is None:
            return None, None
        share = lambda n: max(1.0, n / cpus())  # noqa: E731
        return ns * share(threads) / share(m), m

    def closest(self, name, field, threads):
        """(thread count, value) of the cached FIELD ({threads: value}) of
        configuration NAME at the thread count nearest THREADS (the lower
        on a tie); (None, None) where there is none."""
        have = {int(t): v for t, v in self.cache.get(name, {}).get(field, {}).items()}
        m = min(have, key=lambda t: (abs(t - threads), t)) if have else None
        return m, have.get(m)

    def measured(self, name, threads, ns):
        """A warm-up here found the cell's wall time per call and thread: the
        plan's estimates use it from now on."""
        self.cache.setdefault(name, {}).setdefault("ns_per_call", {})[str(threads)] = ns

    def run_s(self, name, threads, rate, warm_up=False):
        extra, ns = self.costs(name, threads)
        if rate != TIGHT:
            return extra + self.args.duration
        return extra + (self.warmup_iter(name) * ns / 1e9 if warm_up
                        else self.loop_s(name, threads, ns))

    def warm_ups(self):
        """The cells that get a warm-up: tight-loop ones, unless QUICK; with
        WARM_UP=auto only a configuration never timed here, at its first
        thread count."""
        if self.args.quick:
            return []
        tight = [(n, t, r) for n, t, r in self.cells if r == TIGHT]
        if self.args.warm_up == "all":
            return tight
        # A configuration never timed here: at its first thread count only,
        # the others being scaled from that.
        return [c for c in tight if self.nearest(*c[:2])[0] is None
                and c == next(x for x in tight if x[0] == c[0])]

    def runs(self, n):
        """Seconds of timed runs at N(cell) runs a cell."""
        return sum(self.run_s(*c) * n(c) for c in self.cells)

    def expected(self, high):
        """Seconds of timed runs if each cell runs as many times as it did
        the last time here (its pilot's where never), within its pilot's
        runs..HIGH(threads)."""
        return sum(self.run_s(*c) * min(high(c[1]), max(self.pilots[c], self.closest(
            c[0], "runs", c[1])[1] or 0)) for c in self.cells)

    def line(self, low, most):
        """The plan in one line: LOW..MOST(threads)[0] runs a cell (MOST:
        (the most runs at a thread count, the parameter saying so)), and
        how many cells have a pilot longer than LOW (PILOT_S)."""
        high = lambda t: most(t)[0]  # noqa: E731
        w = sum(self.run_s(*c, warm_up=True) for c in self.warm_ups())
        ncells = len(self.cells)
        names = len({c[0] for c in self.cells})
        top = high(1)
        runs = f"{low} runs" if low == top else f"{low}..{top} runs (until PRECISION)"
        mine = [k for c, k in self.pilots.items() if not is_baseline(c[0])]  # runs as they do
        longer = sorted({k for k in mine if k > low})
        if longer and low != top:
            n = sum(1 for k in mine if k > low)
            runs += (f", {n} cheap cell{'s' * (n != 1)} piloting {longer[0]}"
                     + (f"..{longer[-1]}" if len(longer) > 1 else "") + " runs (PILOT_S)")
        est = w + self.expected(high)
        self.total = est
        span = (fmt_s(est) if low == top else
                f"{fmt_s(est)} (at least {fmt_s(w + self.runs(self.pilots.get))}, at most "
                f"{fmt_s(w + self.runs(lambda c: high(c[1])))})")
        seen = sum(1 for n, t, _ in self.cells if self.cached(n, t) is not None)
        near = sum(1 for n, t, _ in self.cells if self.nearest(n, t)[0] is not None) - seen
        src = ("from timings this machine measured before (TIMINGS)" if seen == ncells
               else f"{seen} of the {ncells} cells timed before on this machine"
                    + (f", {near} scaled from another thread count" if near else "")
                    + (", the rest guessed" if seen + near < ncells else ""))
        over = sorted({t for _, t, _ in self.cells if t > cpus()})
        cap = most(over[0]) if over else None
        sliced = (f"; THREADS {','.join(map(str, over))} exceed the {cpus()} CPUs: "
                  "time-sliced, another experiment (flagged in the report)"
                  + (f", at most {cap[1]}={cap[0]} runs a cell there" if cap[0] < top else "")
                  ) if over else ""
        loop = sorted({c[0] for c in self.cells} & set(kin.USER_LOOP))
        user = [c[0] for c in self.cells if getattr(configs.BY_NAME.get(c[0]), "workload", "")
                == "user"]
        what = (f"; your command's rows and, for the loop's prediction, {', '.join(loop)}"
                if user and loop else "")
        return (f"run: plan: {ncells} cells ({names} configurations x THREADS="
                f"{','.join(map(str, sorted({c[1] for c in self.cells})))}{what}), "
                f"{len(self.warm_ups())} warm-ups, {runs} each: about {span}, {src}{sliced}")

    def done(self, planned_s, real_s):
        """A run that was planned to take PLANNED_S took REAL_S."""
        self.planned_spent += planned_s
        self.spent += real_s

    def eta(self, left_s):
        """LEFT_S planned seconds left, corrected by how the runs so far
        compared with their plan."""
        k = self.spent / self.planned_spent if self.planned_spent else 1.0
        return fmt_s(left_s * k)

    def learn(self, done, write=True):
        """Updates the cache from this matrix's DONE runs ((row, record.Timing)
        pairs): per configuration the seconds a run takes
        beyond its loop, and per thread count its ns per call and how many
        timed runs it made; and writes it (WRITE: else it only serves the
        estimates and sizes of the rest of this matrix)."""
        per, runs = {}, {}
        for r, timing in done:
            if self.args.runs is None and (r.get("rep") or 0) >= 1 and r.get("rate") == TIGHT:
                key = (r["config"], str(r["threads"]))
                runs[key] = runs.get(key, 0) + 1
            wall = timing.max_thread_wall_ns
            if wall is None or not r.get("iterations") or r.get("rate") != TIGHT:
                continue
            e = per.setdefault(r["config"], {"extra": [], "ns": {}})
            e["extra"].append(max(0.0, timing.elapsed_s - wall / 1e9))
            if r.get("rep") == 0:  # a warm-up's few calls may fit in one time slice
                continue
            e["ns"].setdefault(str(r["threads"]), []).append(
                wall / r["iterations"])
        for (name, t), n in runs.items():
            self.cache.setdefault(name, {}).setdefault("runs", {})[t] = n
        for name, e in per.items():
            c = self.cache.setdefault(name, {})
            c["extra_s"] = round(sorted(e["extra"])[len(e["extra"]) // 2], 4)
            nsp = c.setdefault("ns_per_call", {})
            for t, v in e["ns"].items():
                nsp[t] = round(sorted(v)[len(v) // 2], 4)
        if not write:
            return
        try:
            host.write_json(self.args.timings, {**self.stored, **{keyed(n, self.args): v for n, v in
                                                                   self.cache.items()}},
                            indent=1, sort_keys=True)
        except OSError:
            pass  # a cache only: the next plan guesses


def keyed(name, args=None):
    """Configuration NAME's key in TIMINGS: its name, and for a row of a
    user's command (make run TARGET=...), the command's own key too; for
    a row of a user's script (ARGS' SCRIPT), the script's (its text)."""
    c = configs.BY_NAME.get(name)
    return name + (workloads.get(c.workload, args).timing_key() if c and c.workload else "") + (
        userscript.timing_key(args.script) if c and c.mode == configs.SCRIPT_MODE
        and getattr(args, "script", "") else "")
