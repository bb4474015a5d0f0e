"""real.py: tables.md's "Real programs" section: per real program
(workloads.py) and thread count, each configuration against the
program's own untraced row: its slowdown and cost per event with their
95% intervals, the events a call by the tracer's count, the rate the
marker fires at untraced, and whether the count was checked; then "Does
the loop predict your program?" (predict.py): each traced row beside what
its tracer's twin in the tight loop predicts, and what may explain a gap.
The terminal's lines are render/summary.py's real_lines.

Nothing to run: `from render import real`.
"""
import configs
import kernel
import kin
import predict
import workloads
from kin import real
from render.formats import f_interval, f_ns, f_overhead, f_slower, table
from render.summary import band, loop_ratio, loop_verdict


def real_markdown(a):
    """The section's lines, or [] where no real program ran."""
    cells = [c for c in a["cells"] if real(c["config"]) and c["n_runs"]]
    if not cells:
        return []
    lines = ["", "## Real programs", "",
             "Each configuration against its program's own untraced row at the same "
             "thread count ([docs/real-programs.md](../../docs/real-programs.md)).  Per event: "
             "the extra time a call over the events a call by the tracer's count (and over "
             "the threads where they take turns).  Untraced rate: the events a call times "
             "the untraced calls a second.  Checked (each status as `python3 scripts/record` "
             "prints it): `ok`, the program's own count; `agreed`, a witness's, the row's "
             "reason naming it; `MISMATCH`, a count that differs; `NEVER FIRES`, 0 events "
             "by the tracer and its witness (a finding: no price, the reason below); "
             "`unverified`, no witness.",
             ""]
    for fam in dict.fromkeys(configs.BY_NAME[c["config"]].workload for c in cells):
        w = workloads.get(fam)
        base = {c["threads"]: c for c in cells if configs.BY_NAME[c["config"]].workload == fam
                and kin.is_baseline(c["config"])}
        rows = []
        for c in cells:
            if configs.BY_NAME[c["config"]].workload != fam or kin.is_baseline(c["config"]):
                continue
            b, o = base.get(c["threads"]), c.get("overhead")
            seen = (c.get("check") or {}).get("seen")
            k = seen / c["calls"] if seen and c.get("calls") else None
            rate = (k * c["threads"] * 1e9 / b["mean_ns"] if k and b and b.get("mean_ns")
                    else None)
            rows.append([c["config"], str(c["threads"]),
                         f_ns(b["mean_ns"]) if b else "-", f_slower(o),
                         f_overhead(predict.per_event(c, w)) if o and k else "-",
                         f_ns(k) if k is not None else "-",
                         f"{rate:,.0f}" if rate else "-",
                         (c.get("check") or {}).get("verdict", "-")])
        lines += [f"### {fam}: {w.description}", ""]
        lines += [table(["configuration", "threads", f"untraced [ns a {w.call}]",
                         "slowdown [95%]", "per event [ns, 95%]", f"events a {w.call}",
                         "untraced rate [events/s]", "checked"], rows), ""]
        silent = [c for c in cells if configs.BY_NAME[c["config"]].workload == fam
                  and (c.get("check") or {}).get("verdict") == kernel.NEVER_FIRES]
        lines += [f"- {c['config']} at {c['threads']} thread{'s' * (c['threads'] != 1)}, "
                  f"never fires: {c['check']['why']}" for c in silent] + [""] * bool(silent)
        lines += own_table(w, [c for c in cells if configs.BY_NAME[c["config"]].workload == fam])
    return lines + loop_markdown(a)


def own_table(w, cells):
    """Workload W's own figures (its figures: pgbench's tps and latency),
    untraced and traced, each its mean over the cell's runs (a rate's: the
    runs' work over their time) with the interval the cell's overhead has."""
    if not w.figures or not any(c.get("own") for c in cells):
        return []

    def f(v):  # three figures at least: 4,088, 12.3, 0.245
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"

    def cell(x):
        if not x:
            return "-"
        m, lo, hi = x
        return f(m) + (f" [{f(lo)}, {f(hi) if hi is not None else 'unbounded'}]"
                       if lo is not None else "")
    rows = [[c["config"], str(c["threads"]),
             *(cell((c.get("own") or {}).get(k)) for k, _, _ in w.figures)] for c in cells]
    return [f"{w.name}'s own figures, over the runs (a rate: their work over their time), "
            "with 95% intervals:", "",
            table(["configuration", "threads", *(h for _, h, _ in w.figures)], rows), ""]


def loop_markdown(a):
    """"Does the loop predict your program?": per real program and thread
    count, each traced row beside its tracer's twin in the tight loop
    (predict.predictions), then a line per row the loop did not predict on
    what the kit recorded that may explain it.  [] where nothing is
    predicted (no real program, or a folder in instructions)."""
    preds = predict.predictions(a)
    if not preds:
        return []
    lines = ["", "## Does the loop predict your program?", "",
             "Each traced row beside its tracer's twin in the tight loop, the same kind of probe "
             "on the kit's SDT marker at its 1-byte nop (`kin.LOOP_TWIN`), at the same "
             "thread count in this folder, or at 1 thread where the program's threads take "
             "turns ([docs/real-programs.md](../../docs/real-programs.md"
             "#does-the-loop-predict-your-program)).  Predicted: the events a call by the "
             "tracer's own count times the twin's overhead per event (times the threads where "
             "they take turns: a thread's wall time a call holds every thread's calls, and "
             "the twin at 1 thread, so that time-slicing counts once).  "
             "Measured: the row's overhead a call against its program's untraced row.  Their "
             "ratio's 95% interval is made of the two cells' own (Fieller's, each with its own "
             f"t); `{predict.PREDICTED}` where it lies within {band()}, `{predict.DEARER}` or "
             f"`{predict.CHEAPER}` where it lies wholly outside, `{predict.UNRESOLVED}` where it "
             "straddles an edge (more runs narrow it); no verdict on a row whose own count "
             "failed.", ""]
    for (fam, t) in dict.fromkeys((p["program"], p["threads"]) for p in preds):
        w = workloads.get(fam)
        mine = [p for p in preds if (p["program"], p["threads"]) == (fam, t)]
        rows = [[p["config"], events(p), p["twin"] + (f" at {p['twin_threads']} thread"
                                                      if p["twin_threads"] != t else ""),
                 f_interval(*p["twin_ns"]) if p["twin_ns"]
                 else "-", f_ns(p["predicted_ns"][0]) if p["predicted_ns"] else "-",
                 f_interval(*p["measured_ns"]) if p["measured_ns"] else "-", loop_ratio(p),
                 loop_verdict(p)] for p in mine]
        lines += [f"### {fam} at {t} thread{'s' * (t != 1)}", "",
                  table(["configuration", f"events a {w.call}", "twin in the loop",
                         "loop [ns/event, 95%]", f"predicted [ns a {w.call}]",
                         f"measured [ns a {w.call}, 95%]", "measured / predicted [95%]",
                         "verdict"], rows), ""]
        gaps = [p for p in mine if p["verdict"] in predict.GAPS]
        lines += [f"- {p['config']}, {loop_verdict(p)}: " + ("; ".join(
            cause_words(p, x, w) for x in predict.explains(p)) or "not explained by what the kit "
            "records") for p in gaps] + ([""] if gaps else [])
    return lines


def events(p):
    """The events a call, the threads' factor where they take turns, and
    the count's check where it is not the program's own or a witness's."""
    if p["events"] is None:
        return "-"
    return (f_ns(p["events"]) + (f" x {p['turns']} threads" if p["turns"] > 1 else "")
            + (f" ({p['check']})" if p["check"] not in ("ok", "agreed") else ""))


def cause_words(p, cause, w):
    """One thing the kit recorded (predict.causes) that the loop's twin has
    not, in words, with its figures where the folder has them."""
    kind, *rest = cause
    if kind == "semaphore":
        raised, by_probe, quiet, price = rest
        names = ", ".join(f"{m}'s" for m in raised)
        how = "; ".join(([f"{names} through /proc/PID/mem"] if raised else [])
                        + (["its marker's by its probe"] if by_probe else []))
        if not quiet:
            return (f"semaphores raised ({how}), which the loop's marker has not; no row without "
                    "a probe prices them in this folder")
        return (f"semaphores raised ({how}), which the loop's marker has not: {quiet}, the same "
                f"with no probe, costs {f_interval(*price)} ns a {w.call}; predicted with it: "
                f"{f_ns(p['predicted_ns'][0] + price[0])} ns a {w.call}")
    if kind == "turns":
        t, are = rest
        return (f"its {t} threads take turns ({are}): the prediction counts {t} threads' events "
                f"in a thread's wall time a {w.call}, while the loop's {t} threads ran at once")
    return (f"a probe by path counted the events of {rest[0]} other processes running "
            f"{w.name} too (the row's note): the events a {w.call}, and so the prediction, "
            "hold theirs")
