"""predict.py: does the loop predict your program?  For each traced row of a
real program (kin.real), its tracer's twin in the tight loop
(kin.LOOP_TWIN) at the same thread count in the same analysis: the
cost a call it predicts (the events a call by the tracer's own count x the
twin's overhead per event, x the threads where they take turns), the cost
a call measured, their ratio measured / predicted with a 95% interval made
of the two cells' own (ratio_ci), and what the kit records that may
explain a gap (causes).

A module of its own, not a room of stats/: stats/ computes each cell's
statistics, and this reads its analysis
whole (every cell, its overhead's interval, its runs' notes) once
stats.analyse has made it, as render/ does (render/real.py's section,
render/summary.py's line).  Worked by hand, and its interval's coverage
simulated under the kit's stopping rule, in tests/test_stats.py (Predict).

Nothing to run: `import predict`.
"""
import math
import re

import configs
import kin
import workloads
from kernel import NEVER_FIRES
from record import LOSSLESS, NS


def workload_events(check):
    """A real program's cell's events, the workload's own: its tracer's
    count, or, run by run, its witness's where the tracer's held more
    (other processes' hits that it could not tell apart: stats.analysis
    event_check's "workload", measure/witness.mixed)."""
    return (check or {}).get("workload", (check or {}).get("seen"))


def ratio_ci(a, b):
    """(ratio, lo, hi) of A's mean over B's, each (mean, lo, hi) with a 95%
    interval symmetric about its mean (stats.overhead's), from independent
    samples: the ratios r for which A - r B is within both intervals'
    half-widths combined, (a - r b)^2 <= ha^2 + r^2 hb^2.  That is
    Fieller's theorem with each mean's own t (E. C. Fieller, "Some problems
    in interval estimation", J. R. Statist. Soc. B 16 (1954) 175-185), and
    for symmetric intervals MOVER-R (R. G. Newcombe, "MOVER-R confidence
    intervals for ratios and products of two independently estimated
    quantities", Stat. Methods Med. Res. 25 (2016) 1774-1778).  Each
    half-width keeps its own degrees of freedom (a Stein's interval's are
    its pilot's): Welch-Satterthwaite's one t for both held the true ratio
    in 92% of simulated cells where a 3-run pilot met a 9-run one, this in
    96% to 99% (tests/test_stats.py, Predict).  lo/hi None where B's
    interval holds 0 (the set is then unbounded) or either has none."""
    (ma, la, ua), (mb, lb, ub) = a, b
    r = ma / mb
    if la is None or lb is None or lb <= 0 <= ub:
        return r, None, None
    ha, hb = (ua - la) / 2, (ub - lb) / 2
    den = mb * mb - hb * hb  # r^2 den - 2 r ma mb + (ma^2 - ha^2) <= 0
    root = math.sqrt(ma * ma * hb * hb + ha * ha * den)
    return r, (ma * mb - root) / den, (ma * mb + root) / den


# The band of measured / predicted within which the loop predicts a row:
# the kit's own margin (a tenth of a ratio's width is noise of the two
# cells' sizes, their CPU's turbo, a cache), written here alone.
BAND = (0.85, 1.15)


# The verdicts (verdict()), their one home: render/ says them by these names.
PREDICTED, DEARER, CHEAPER, UNRESOLVED = "predicted", "dearer", "cheaper", "not resolved"
GAPS = (DEARER, CHEAPER)  # a verdict the loop did not predict, one way or the other


def verdict(lo, hi):
    """Of the ratio's 95% interval [LO, HI]: PREDICTED where it lies
    within BAND, DEARER or CHEAPER (than the loop) where it lies wholly
    above or below it, UNRESOLVED where it straddles one of BAND's edges
    (more runs would narrow it); None without an interval."""
    if lo is None:
        return None
    if BAND[0] <= lo and hi <= BAND[1]:
        return PREDICTED
    return DEARER if lo > BAND[1] else CHEAPER if hi < BAND[0] else UNRESOLVED


# Checks of a row's count under which its events a call are not a count to
# predict from (analysis.event_check's verdicts).
FAILED_COUNTS = ("MISMATCH", "DROPPED", "CORRUPTED", NEVER_FIRES)


def predictions(a, loop=None):
    """Per traced cell of a real program in analysis A whose tracer has a
    twin (kin.LOOP_TWIN), in A's order: {config, threads, program,
    twin, events (a call, by the tracer's count), turns (the threads'
    factor: THREADS where they take turns, else 1), check, twin_ns and
    predicted_ns and measured_ns (each (mean, lo, hi)), ratio, lo, hi,
    verdict, why_not (where no ratio: why), causes}.  LOOP: the analysis
    the twins are read from (A's own by default).  [] where A is not in
    ns (a lab guest's instructions are never set beside a host's ns)."""
    cells = [c for c in a["cells"] if kin.real(c["config"]) and c["n_runs"]
             and not kin.is_baseline(c["config"]) and c["tracer"] in kin.LOOP_TWIN
             and configs.BY_NAME[c["config"]].mode != configs.SCRIPT_MODE]  # (their own)
    if any(c.get("unit", NS) != NS for c in cells):
        return []
    by = {(c["config"], c["threads"]): c for c in (loop or a)["cells"]}
    out = []
    for c in cells:
        cfg = configs.BY_NAME[c["config"]]
        w, t = workloads.get(cfg.workload), c["threads"]
        twin = kin.LOOP_TWIN[c["tracer"]]
        # Threads that take turns (w.serial) never share a CPU: the loop's
        # price at 1 thread, x THREADS below.  The loop at THREADS above the
        # CPUs is time-sliced already; multiplied again, the slicing would
        # count twice (x0.5 at 4 threads on 2 CPUs).  Copies at once (not
        # serial) are sliced as the loop's threads are: the same THREADS.
        at = 1 if w.serial else t
        seen = workload_events(c.get("check"))
        p = {"config": c["config"], "threads": t, "program": cfg.workload, "twin": twin,
             "twin_threads": at,
             "events": seen / c["calls"] if seen is not None and c.get("calls") else None,
             "turns": t if w.serial else 1, "check": (c.get("check") or {}).get("verdict"),
             "measured_ns": triple(c.get("overhead")), "twin_ns": None, "predicted_ns": None,
             "ratio": None, "lo": None, "hi": None, "verdict": None}
        p["why_not"] = compare(p, by.get((twin, at)))
        p["causes"] = causes(c, w, a["cells"])
        out.append(p)
    return out


def script_predictions(a, script):
    """Per cell of a user's script's row (configs.SCRIPT_MODE) in analysis
    A, the same as predictions() gives a real program's row, its twin the
    loop body closest to it (SCRIPT, meta.json's "script":
    userscript.closest): on the kit's marker one event a call; on a user's
    program the workload's events a call, the witnesses' (witness.script).
    [] where A is not in ns."""
    if not script or any(c.get("unit", NS) != NS for c in a["cells"]):
        return []
    by = {(c["config"], c["threads"]): c for c in a["cells"]}
    out = []
    for c in a["cells"]:
        cfg = configs.BY_NAME.get(c["config"])
        if not cfg or cfg.mode != configs.SCRIPT_MODE or not c["n_runs"]:
            continue
        w, t = workloads.get(cfg.workload) if cfg.workload else None, c["threads"]
        at = 1 if w and w.serial else t
        seen = workload_events(c.get("check")) if w else c.get("calls")
        p = {"config": c["config"], "threads": t, "program": cfg.workload or "the kit's marker",
             "twin": script["closest"], "twin_threads": at,
             "events": seen / c["calls"] if seen is not None and c.get("calls") else None,
             "turns": t if w and w.serial else 1, "check": (c.get("check") or {}).get("verdict"),
             "measured_ns": triple(c.get("overhead")), "twin_ns": None, "predicted_ns": None,
             "ratio": None, "lo": None, "hi": None, "verdict": None, "causes": []}
        p["why_not"] = compare(p, by.get((p["twin"], at)))
        out.append(p)
    return out


def triple(o):
    return (o["mean_ns"], o["lo_ns"], o["hi_ns"]) if o else None


def compare(p, twin):
    """Fills P's twin_ns, predicted_ns, ratio, lo, hi and verdict from its
    TWIN's cell; returns why there is no ratio (or no interval), or None."""
    t = p["twin_threads"]
    if p["check"] in FAILED_COUNTS:
        return f"no verdict: its own count failed ({p['check']})"
    if twin is None or not twin.get("n_runs") or twin.get("unit", NS) != NS:
        return f"{p['twin']} did not run at {t} thread{'s' * (t != 1)} here"
    v = (twin.get("check") or {}).get("verdict")
    if twin["corrupted"] or v not in LOSSLESS or not twin.get("overhead"):
        return f"{p['twin']}'s cost is not quoted ({'corrupted' if twin['corrupted'] else v})"
    p["twin_ns"] = triple(twin["overhead"])
    if not p["events"]:
        return "nothing counts its events" if p["events"] is None else "it saw no event"
    k = p["events"] * p["turns"]
    p["predicted_ns"] = tuple(None if x is None else k * x for x in p["twin_ns"])
    if p["measured_ns"] is None:
        return "no overhead: its program's untraced row did not run"
    m, lo, hi = p["twin_ns"]
    if (lo if lo is not None else m) <= 0:
        return "the loop's cost holds 0" if hi is not None and hi >= 0 else \
            "the loop's cost is not above 0"
    p["ratio"], p["lo"], p["hi"] = ratio_ci(p["measured_ns"], p["predicted_ns"])
    if p["lo"] is None:
        return "one run: no interval"
    if p["measured_ns"][1] is not None and p["measured_ns"][1] <= 0:
        # a ratio interval that reaches 0 "holds 1" only because it holds
        # everything: no verdict (a query__start's 7 events a transaction
        # under pgbench's spread, say)
        return ("its measured overhead's 95% interval lies below 0: cheaper than untraced, "
                "not a cost" if p["measured_ns"][2] < 0 else
                "its measured overhead's 95% interval holds 0: too noisy to compare")
    p["verdict"] = verdict(p["lo"], p["hi"])
    return None


# What a run's note (measure/kit.py) says of a semaphore raised and of
# processes a probe by path counted beside the kit's.
RAISED = re.compile(r"raised through /proc/PID/mem before the calls: ([^;]*)")
BYSTANDERS = re.compile(r"(\d+) other processes ran .*? a probe by path counted their events")


def causes(c, w, cells):
    """What the kit recorded of cell C (of workload W) that the loop's twin
    has not, each that applies: [("semaphore", the markers its notes say
    were raised through /proc/PID/mem, whether its probe raises its
    marker's (marker-semaphore, where the runner does not), the no-probe
    row that prices its family's semaphores at its threads or None, that
    row's overhead), ("turns", threads, W's words for them),
    ("bystanders", the most processes its notes name)].  A probe at
    marker-semaphore counts only where such a row prices it: a user's
    marker may have no semaphore."""
    out, t, notes = [], c["threads"], c.get("notes") or ()
    raised = sorted({m for n in notes for s in RAISED.findall(n)
                     for m in re.findall(r"([\w.]+)'s semaphore", s)})
    quiet = next((x for x in cells if x["threads"] == t and x.get("overhead")
                  and kin.against(x["config"]) == kin.against(c["config"])
                  and x["tracer"] in ("none", "") and x is not c
                  and getattr(configs.BY_NAME.get(x["config"]), "semaphores", ())), None)
    marker = configs.BY_NAME[c["config"]].marker
    by_probe = c["probe"] == "marker-semaphore" and marker not in raised
    if raised or (by_probe and quiet):
        out.append(("semaphore", raised, by_probe, quiet and quiet["config"],
                     triple(quiet and quiet["overhead"])))
    if w.serial and t > 1:
        out.append(("turns", t, w.threads_are))
    n = max([int(m) for s in notes for m in BYSTANDERS.findall(s)] or [0])
    if n:
        out.append(("bystanders", n))
    return out


# Which way each cause (causes) can move a row from its prediction: what a
# program computes for a raised semaphore adds to its calls, which the
# loop's marker has not (dearer only); threads taking turns are timed
# otherwise than the loop's, which ran at once (a hand-off's cost, or
# contention between CPUs the turns do not have: either way); other
# processes' events are in the tracer's count, so in the prediction, but
# their traps are taken in their own processes (cheaper only).
MOVES = {"semaphore": (DEARER,), "turns": GAPS, "bystanders": (CHEAPER,)}


def explains(p):
    """P's causes that can explain its gap, dearer or cheaper than the loop."""
    return [x for x in p["causes"] if p["verdict"] in MOVES[x[0]]]


def per_event(x, w):
    """A real program's cell's overhead per event: per call (a Python call,
    a pgbench transaction) over the events a call fired, by the tracer's
    own count (the program's, where it keeps one, is the same: quotable);
    and where its threads take turns (workload W's `serial`: the GIL, one
    CPU), a thread's wall time a call holds every thread's calls, so over
    the threads too.  A count that holds other processes' hits (a tracer
    that cannot tell them apart) is priced on the workload's own, its
    witness's.  Where nothing counted its events the figure is a call's,
    and "per" says so: "call" (else "event")."""
    o, seen = x["overhead"], workload_events(x.get("check"))
    if seen == 0:  # never fired: no event to price (zero is a finding)
        return {**o, "mean_ns": None, "lo_ns": None, "hi_ns": None, "per": "event"}
    k = seen / x["calls"] if seen and x.get("calls") else 1.0
    k *= x["threads"] if w.serial else 1
    return {**o, **{f: (o[f] / k if o[f] is not None else None)
                    for f in ("mean_ns", "lo_ns", "hi_ns")},
            "per": "event" if seen and x.get("calls") else "call"}
