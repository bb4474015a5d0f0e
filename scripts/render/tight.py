"""tight.py: the tight-loop detail (RATE=max, the default): tables.md's
tables, a row per configuration and thread count (overhead per event with
its interval and slowdown, where the time goes: user, system, the tracer's
own CPU; scaling with threads; the probe sites), and report.md's closing
sections, whose length does not grow with THREADS (the 2011 table, what
was skipped or failed).

Nothing to run: `from render.tight import tight_tables, tight_closing`.
"""
import kin
from render.formats import (Notes, f_check, f_ns, f_overhead, f_slowdown, runs_cell,
                            skipped_failed, table, undetectable)
from render.lab import guest_2011, guest_head, guest_line
from render.bodies import bodies_markdown
from render.sites import SITES_NOTE, expectation, sites_table
from render.y2011 import Y2011_HEAD, y2011


# -- the tight-loop tables -----------------------------------------------------
OVERHEAD_HEAD = ["config", "threads", "runs (failed)", "overhead [ns/event]: mean [95% CI]",
                 "slowdown [x]: mean [95% CI]", "events seen/expected", "notes"]


CPU_HEAD = ["config", "threads", "median [ns/event]", "min [ns/event]",
            "overhead median [ns/event]", "user [ns/event]", "sys [ns/event]",
            "tracer CPU, steady [ns/event]", "tracer CPU, fixed [ms]"]


TRACER_CPU_NOTE = ("Tracer CPU is that of a tracer process the kit started (or LTTng's consumer "
                   "daemons), less the target's own: *steady* is its slope against events "
                   "between a cell's warm-up and its runs, which make different numbers of "
                   "calls, so start-up is not in it; *fixed* is what is left at zero events "
                   "(start-up, compiling, teardown).  `-` where both made the same number of "
                   "calls (QUICK), where the cell had no warm-up (sized by earlier runs here: "
                   "`WARM_UP=all` gives every cell one) or there is no tracer process.  It rests on one warm-up, so "
                   "where the tracer's work is in the kernel (bpftrace, perf stat) it is 0 within "
                   "the start-up's run-to-run spread and may print below 0.")


def overhead_rows(a, notes):
    rows = []
    for c in a["cells"]:
        if not c["n_runs"]:
            why = [notes.ref(r, c["n_failed"] if len(c["failed_reasons"]) == 1 else 1)
                   for r in c["failed_reasons"]]
            rows.append([c["config"], c["threads"], runs_cell(c), "-", "-", "-",
                         f"all failed {' '.join(why)}"])
            continue
        flags = [notes.inline(f) for f in c["flags"]]
        cap = next((p for p in ("MAX_RUNS", "SLICED_RUNS")
                    if c.get("stopped", "").startswith(p + "=")), None)
        if cap and not kin.is_baseline(c["config"]):
            flags.append(f"{cap} before PRECISION")
        if undetectable(c["overhead"]):
            flags.insert(0, "none detectable")
        elif c["overhead"] and c["overhead"]["bounded"]:
            flags.insert(0, "too spread to bound")
        rows.append([c["config"], c["threads"], runs_cell(c), f_overhead(c["overhead"]),
                     f_slowdown(c["overhead"]), f_check(c["check"]), "; ".join(flags)])
    return rows


def cpu_rows(a):
    return [[c["config"], c["threads"], f_ns(c["median_ns"]), f_ns(c["min_ns"]),
             f_ns(c["overhead"]["median_ns"]) if c["overhead"] else "-", f_ns(c["user_ns"]),
             f_ns(c["sys_ns"]), f_ns(c["tracer_steady_ns"]),
             "-" if c["tracer_fixed_ms"] is None else f"{c['tracer_fixed_ms']:.3g}"]
            for c in a["cells"] if c["n_runs"]]


def scaling_rows(a):
    return [[c["config"], c["threads"],
             f"{c['scaling']['events_per_s'] / 1e6:,.2f}" if c["scaling"]["events_per_s"]
             else "-",
             f"{c['scaling']['efficiency']:.0%}" if c["scaling"]["efficiency"] is not None
             else "-", "yes" if c["scaling"]["time_sliced"] else ""]
            for c in a["cells"] if c["n_runs"]]


def tight_tables(a, meta=None):
    """tables.md's tight-loop sections: each a row per configuration and
    thread count, so as long as the run is wide."""
    notes = Notes()
    lines = ["", "## Overhead per event", "",
             "Per-event time is each thread's loop wall time / calls.  Overhead is against "
             "`baseline` at the same thread count" + (
                 " (a real program's rows: its own untraced row, docs/real-programs.md)"
                 if any(kin.real(c["config"]) for c in a["cells"]) else "")
             + ": its mean, then its 95% interval; "
             "\"none detectable\" where the interval holds 0 (its upper end is then the "
             "most the runs allow).  Slowdown is the ratio of geometric means, with "
             "its interval from the same test.  A run whose tracer lost events is "
             "`dropped`, not ok.", ""]
    if not a["has_baseline"]:
        lines += ["**No baseline rows: overheads cannot be computed.**", ""]
    lines.append(table(OVERHEAD_HEAD, overhead_rows(a, notes)))
    lines += notes.lines()
    lines += ["", "## Where the time goes", "", TRACER_CPU_NOTE, ""]
    lines.append(table(CPU_HEAD, cpu_rows(a)))
    lines += ["", "## Scaling with threads", "",
              "Total events per second; efficiency = (rate / rate at 1 thread) / "
              "min(threads, CPUs).", ""]
    lines.append(table(["config", "threads", "events [M/s]", "efficiency", "time-sliced"],
                       scaling_rows(a)))
    if a.get("sites"):
        lines += ["", "## Probe sites: cost, safety and the path taken", "", SITES_NOTE, ""]
        lines += expectation(meta) + [""]
        lines.append(sites_table(a, meta))
    return lines + bodies_markdown(a)


def tight_closing(a, guest=None):
    """report.md's closing sections: the 2011 table, GUEST (guest_head)
    adding a lab guest's module runtime, then what was skipped or failed."""
    lines = ["", "## The 2011 figures beside today's", "",
             "2011: SystemTap 1.3, Fedora 14, Core 2 Duo P8600, utrace, `stap -F` "
             "(shared/seeds/003).  Today's runs are scaled to 10M calls at 1 thread.", ""]
    head = Y2011_HEAD[:7] + [guest_head(guest)] + Y2011_HEAD[7:] if guest else Y2011_HEAD
    lines.append(table(head, y2011(a, guest_2011(guest) if guest else None)))
    return lines + (["", guest_line(guest)] if guest else []) + skipped_failed(a)
