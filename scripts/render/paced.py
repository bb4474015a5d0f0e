"""paced.py: the paced runs' tables (RATE=N): the rate each thread asked
for and reached, the cost at that rate, and each configuration's limit
(the highest rate it kept lossless).

Nothing to run: `from render.paced import paced_markdown`.
"""
from render.formats import f_ns, f_pct, f_rate, table


# -- paced runs ----------------------------------------------------------------
PACED_HEAD = ["config", "threads", "rate [calls/s/thread]", "achieved [calls/s/thread]",
              "runs", "status", "events seen/expected (dropped)", "target threads [% CPU]",
              "tracer processes, whole life [% CPU]", "machine [% CPU]",
              "over baseline: target [% CPU]", "over baseline: machine [% CPU]",
              "machine [ns/event]"]


LIMITS_HEAD = ["config", "threads", "rates tested [calls/s/thread]",
               "lossless up to [calls/s/thread]", "breaks at", "why", "1% of a CPU at [events/s]"]


PACED_NOTE = (
    "Each thread is paced to the rate by sleeping to absolute deadlines in ~1 ms batches "
    "(the pacing's own cost is the baseline's row at the same rate).  CPU is per second "
    "of the threads' window, in % of one CPU: of the target's threads (where a uprobe's "
    "trap and a BPF handler run), of the tracer's processes over their whole life "
    "(start-up and compilation included, so an upper bound), and of the whole machine "
    "(every task's scheduler time, read by the target around the window: daemons and "
    "kernel threads included).  Over baseline is against `baseline` at the same threads "
    "and rate; machine ns/event is that extra CPU per event.  Lossless: every run ok (or a "
    "flight recorder's overwrite) and the threads reached 95% of the rate; the limit is the "
    "highest rate that it and every lower rate tested held.  1% of a CPU: the events/s (all "
    "threads) at which the machine's extra CPU would be 1% of one CPU, from ns/event at "
    "the limit.  Rows of different rates are never pooled.")


def paced_rows(p):
    out = []
    for c in p["cells"]:
        ev = "-" if not c.get("achieved") or c["tracer"] == "none" else (
            f"{c['seen']:,}/{c['expected']:,}" + (f" ({c['dropped']:,})" if c["dropped"] else ""))
        out.append([c["config"], c["threads"], f_rate(c["rate"]), f_rate(c.get("achieved")),
                    f"{c['n_measured']}/{c['n_runs']}", "/".join(c["statuses"]), ev,
                    f_pct(c.get("target_pct")), f_pct(c.get("tracer_pct")),
                    f_pct(c.get("machine_pct")), f_pct(c["over_target_pct"]),
                    f_pct(c["over_machine_pct"]), f_ns(c["ns_per_event"])])
    return out


def limit_rows(p):
    out = []
    for m in p["limits"]:
        lim = m["limit"]
        shown = ("none tested held" if lim is None else
                 f">= {f_rate(lim)} (all tested held)" if m["broke_at"] is None else f_rate(lim))
        out.append([m["config"], m["threads"], ", ".join(f_rate(r) for r in m["tested"]), shown,
                    f_rate(m["broke_at"]) if m["broke_at"] else "-",
                    m["why"] or "-", f_rate(m["rate_at_1pct"])])
    return out


def paced_markdown(p):
    lines = ["", "## Paced runs: CPU at a given event rate", "", PACED_NOTE, ""]
    if not p["has_baseline"]:
        lines += ["**No paced baseline rows: overheads cannot be computed.**", ""]
    lines.append(table(PACED_HEAD, paced_rows(p)))
    lines += ["", "### Lossless limits", ""]
    lines.append(table(LIMITS_HEAD, limit_rows(p)))
    return lines
