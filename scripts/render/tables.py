"""tables.py: the report's detail tables, as Markdown (report.md) and as
plain text (the terminal): numbers formatted for people, every interval
with its mean, failure reasons normalised and long ones moved to numbered
notes below their table, verdicts in plain bold text.  The answers that
open the report are in summary.py, the plots in plots.py, the command line
in report.py.  Nothing to run on its own.
"""
import json
import os
import re

import configs
import kernel
from record import DEFAULT_UNIT, INSTRUCTIONS
from configs import BASELINE

from host import ROOT

# The 2011 post (shared/seeds/003): 10M calls, one thread, stap -F.
Y2011 = {"calls": 10_000_000, "bare_s": 0.27, "function_s": 51.82, "mark_s": 27.60,
         "gettimeofday_s": 8.4}
# Today's configurations that match the 2011 probes ...
Y2011_MATCH = {"function_s": "stap-function-time", "mark_s": "stap-mark-time"}
# ... and SystemTap's four configurations of the 2011 experiment.
Y2011_CONFIGS = ("stap-function", "stap-function-time", "stap-mark", "stap-mark-time")

# Verdicts a reader must not miss, as plain bold text (it renders in any
# Markdown viewer and reads in a terminal).
VERDICTS = kernel.BAD
NOTE_AT = 60  # characters: a longer reason becomes a numbered note


# -- numbers for people -------------------------------------------------------
def f_ns(v):
    """A time or count per event: 3 significant figures, thousands apart."""
    if v is None:
        return "-"
    a = abs(v)
    return (f"{v:,.0f}" if a >= 100 else f"{v:.1f}" if a >= 1 else
            f"{v:.2f}" if a >= 0.01 or a == 0 else f"{v:.3f}")


def f_x(v):
    """A ratio: 1.00, 16.5, 16,546."""
    return "-" if v is None else f"{v:,.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def f_s(v):
    """Seconds: 3 significant figures, thousands apart."""
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def f_rate(v):
    """Calls or events per second: 1,000 (never 1e+03)."""
    return "-" if v is None else f"{v:,.0f}" if v >= 10 else f"{v:.2g}"


def f_pct(v):
    return "-" if v is None else f"{v:.3g}"


def f_interval(m, lo, hi, fmt=f_ns):
    """The mean, then its 95% interval: `4.2 [3.6, 4.7]`."""
    if m is None:
        return "-"
    return fmt(m) if lo is None else f"{fmt(m)} [{fmt(lo)}, {fmt(hi)}]"


def f_overhead(o):
    """Overhead per event: the mean always, then its interval (no
    interval: one run, said so)."""
    if not o:
        return "-"
    if o["lo_ns"] is None:
        return f"{f_ns(o['mean_ns'])} (no CI)"
    return f_interval(o["mean_ns"], o["lo_ns"], o["hi_ns"])


def undetectable(o):
    """The overhead's interval holds 0 and the slowdown's holds 1: no
    overhead is detectable.  (With few noisy runs the first can hold 0
    while the second, on the logarithms, excludes 1: then the overhead is
    real and only too spread to bound.)"""
    return bool(o and o["bounded"] and not (o["slowdown_lo"] is not None
                                            and o["slowdown_lo"] > 1))


def reading(o, unit=DEFAULT_UNIT):
    """What an overhead says, in words."""
    if not o:
        return "no figure"
    if o["lo_ns"] is None:
        return f"{f_ns(o['mean_ns'])} {unit} per event, from one run (no interval)"
    if o["bounded"] and not undetectable(o):
        return (f"{f_ns(o['mean_ns'])} {unit} per event, too spread to bound; "
                f"slowdown >= {f_x(o['slowdown_lo'])}x")
    if o["bounded"]:
        return f"no overhead detectable above {f_ns(o['hi_ns'])} {unit} per event"
    return f"{f_ns(o['mean_ns'])} {unit} per event"


def f_slowdown(o):
    if not o or o["slowdown_x"] is None:
        return "-"
    return f_interval(o["slowdown_x"], o["slowdown_lo"], o["slowdown_hi"], f_x)


def f_check(ch):
    if ch is None:
        return "-"
    v = ch["verdict"]
    if ch["expected"] is None:
        return v
    s = f"{ch['seen']:,}/{ch['expected']:,}"
    if ch["dropped"]:
        s += f" ({ch['dropped']:,} dropped)"
    return f"{s} {v}" if v != "ok" else s


def bold(verdict):
    return f"**{verdict}**" if verdict in VERDICTS else verdict or "-"


# -- reasons -------------------------------------------------------------------
# What differs between two runs' reasons for the same failure, replaced by
# a placeholder so that the reason is said once: process ids, the kit's
# run tags (its probe and session names), temporary paths and the
# checkout's own path.
NORMALISE = (
    # A checkout's own files, wherever it was (this one's ROOT is removed first).
    (re.compile(r"(?<![\w.])(?:/[^\s/:;,'\"()]+)+/((?:build/(?:benchmark-|kit-|stap-kernel|"
                r"lab/|site-|raw-loop|memlock)|results/|stp/|scripts/))"), r"\1"),
    (re.compile(r"(/tmp|/var/tmp|/dev/shm)/[^\s:;,'\")]+"), r"\1/…"),
    (re.compile(r"\bkit[0-9a-f]{1,8}_\d+"), "kit…"),
    (re.compile(r"\b([pr])_\w*_bcc_\d+"), r"\1_…_bcc_<pid>"),
    (re.compile(r"\bstapprobe_\d+_\d+"), "stapprobe_<pid>_<n>"),
    (re.compile(r"\b(pid|PID|process|Process)([:=]? ?)\d+"), r"\1\2<pid>"),
    (re.compile(r"\blost \d+"), "lost <n>"),
    (re.compile(r"\[\d{2,}\]"), "[<pid>]"),
    (re.compile(r"\bstap_[0-9a-f]{20,}(_\d+)?"), "stap_…"),
)


def normalise(reason):
    """REASON with pids, run tags and temporary paths made alike, and no
    absolute path into the checkout."""
    text = (reason or "").replace(ROOT + os.sep, "")
    for pat, repl in NORMALISE:
        text = pat.sub(repl, text)
    return text


class Notes:
    """Numbered notes below a table: each distinct (normalised) text once,
    with how many rows it covers."""

    def __init__(self):
        self.texts, self.count = [], []

    def ref(self, text, rows=1):
        """`[n]` for TEXT, the note made the first time it is seen."""
        text = normalise(text)
        if text not in self.texts:
            self.texts.append(text)
            self.count.append(0)
        i = self.texts.index(text)
        self.count[i] += rows
        return f"[{i + 1}]"

    def inline(self, text, rows=1):
        """TEXT itself where short, else a note's number."""
        text = normalise(text)
        return text if len(text) <= NOTE_AT else self.ref(text, rows)

    def lines(self):
        return [""] + [f"[{i + 1}] {t} ({n} run{'s' * (n != 1)})"
                       for i, (t, n) in enumerate(zip(self.texts, self.count))] \
            if self.texts else []


def table(headers, rows):
    """A Markdown table, each column as wide as its widest cell."""
    w = [max(len(str(x)) for x in [h] + [r[i] for r in rows]) for i, h in enumerate(headers)]
    line = lambda r: "| " + " | ".join(str(x).ljust(w[i]) for i, x in enumerate(r)) + " |"  # noqa
    return "\n".join([line(headers), "|" + "|".join("-" * (n + 2) for n in w) + "|"]
                     + [line(r) for r in rows])


def runs_cell(c):
    return f"{c['n_runs']}" + (f" ({c['n_failed']}/{c['n_timed']} failed)"
                               if c["n_failed"] else "")


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
        if c.get("stopped", "").startswith("MAX_RUNS") and c["config"] != BASELINE:
            flags.append("MAX_RUNS before PRECISION")
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


Y2011_HEAD = ["10M calls, 1 thread", "2011 [s]", "2011 [x baseline]", "2011 overhead [ns/event]",
              "today, scaled to 10M [s]", "today [x baseline]", "today overhead [ns/event]",
              "configuration"]
# The 2011 post's rows: (label, its figure in Y2011 or None, today's configuration)
Y2011_ROWS = [("process.function + gettimeofday_ns + $v", "function_s", "stap-function-time"),
              ("process.mark + gettimeofday_ns + $arg1", "mark_s", "stap-mark-time"),
              ("process.function + $v, no gettimeofday_ns", None, "stap-function"),
              ("process.mark + $arg1, no gettimeofday_ns", None, "stap-mark")]


def short_kernel(lab):
    """A lab guest's kernel release as a column says it: 7.2.13."""
    return lab.get("kernel", "?").split("+")[0].split("-")[0]


def guest_head(guest):
    """The 2011 table's column for a lab guest's module runtime (GUEST:
    {"a": its analysis, "lab": its meta's lab, "folder": its name})."""
    lab = guest["lab"]
    return (f"{lab.get('stap_runtime', 'module')} runtime, {lab.get('suite')} guest "
            f"{short_kernel(lab)} [instructions/event]")


def guest_line(guest):
    """Where the 2011 table's guest column comes from, and what it counts."""
    lab = guest["lab"]
    return (f"The guest column: `make lab`'s {guest['folder']} (Debian {lab.get('suite')}, "
            f"kernel {lab.get('kernel', '?')}, SystemTap {lab.get('stap', '?')}, "
            + ("`stap --runtime=bpf`" if lab.get("stap_runtime") == "bpf" else
               "`staprun -L`, flight recorder")
            + "), in guest **instructions** per event (QEMU -icount), a unit of "
            "its own: never compared with the ns beside it.")


def guest_2011(guest):
    """The guest's figures for the 2011 rows, in instructions: {row label:
    text}; the bare call's per call, the probes' overhead per event."""
    cells = {c["config"]: c for c in guest["a"]["cells"] if c["threads"] == 1 and c["n_runs"]}
    ov = {n: c["overhead"] for n, c in cells.items()
          if c.get("overhead") and set(c.get("statuses", [])) == {"ok"}}
    base = cells.get(BASELINE)
    skipped = {s["config"] for s in guest["a"].get("skipped", [])}
    out = {"bare call (baseline)": f"{f_ins(base['median_ns'])} a call" if base else "-"}
    for label, _, cfg in Y2011_ROWS:
        o = ov.get(cfg)
        out[label] = f_interval(o["mean_ns"], o["lo_ns"], o["hi_ns"], f_ins) if o else (
            "no baseline" if cfg in cells and not base else
            "/".join(sorted(set(cells[cfg].get("statuses", [])))) if cfg in cells
            else "skipped" if cfg in skipped else "not measured")
    mt, m = ov.get("stap-mark-time"), ov.get("stap-mark")
    out["gettimeofday_ns() share"] = f_ins(mt["mean_ns"] - m["mean_ns"]) if mt and m else "-"
    return out


def y2011(a, guest=None):
    """The 2011 figures beside today's: as ratios to the baseline, and as
    overhead per event (ratios alone mislead: the bare call got 20x faster);
    and, given a lab GUEST, its module runtime's in instructions, a column
    of its own (guest_head)."""
    cells = {c["config"]: c for c in a["cells"] if c["threads"] == 1 and c["n_runs"]}
    base = cells.get(BASELINE)
    n = Y2011["calls"]
    rows = [["bare call (baseline)", f"{Y2011['bare_s']:.2f} s", "1.0x", "-",
             f"{f_s(base['median_ns'] * n / 1e9)} s" if base else "-",
             "1.0x" if base else "-", "-", "baseline"]]

    def today(label, then_s, cfg):
        c = cells.get(cfg)
        then = then_x = then_ns = "-"
        if then_s is not None:
            then, then_x = f"{then_s:.2f} s", f"{then_s / Y2011['bare_s']:.1f}x"
            then_ns = f"{(then_s - Y2011['bare_s']) * 1e9 / n:.0f}"
        now = now_x = now_ns = "-"
        if c and base:
            now = f"{f_s(c['median_ns'] * n / 1e9)} s"
            now_x = f"{f_x(c['median_ns'] / base['median_ns'])}x"
            now_ns = f_ns(c["median_ns"] - base["median_ns"])
        return [label, then, then_x, then_ns, now, now_x, now_ns, cfg + (
            f" ({c['runtime']} runtime)" if c and c["runtime"] else "" if c else " (not measured)")]
    rows += [today(label, Y2011[key], cfg) for label, key, cfg in Y2011_ROWS if key]
    g_then = Y2011["gettimeofday_s"] * 1e9 / n
    g_now = "-"
    mt, m = cells.get("stap-mark-time"), cells.get("stap-mark")
    if mt and m:
        g_now = f_ns(mt["median_ns"] - m["median_ns"])
    rows.append(["gettimeofday_ns() share", f"{Y2011['gettimeofday_s']:.1f} s", "",
                 f"{g_then:.0f}", "", "", g_now, "stap-mark-time - stap-mark"])
    rows += [today(label, None, cfg) for label, key, cfg in Y2011_ROWS if not key]
    if guest:
        g = guest_2011(guest)
        rows = [r[:7] + [g.get(r[0], "-")] + r[7:] for r in rows]
    return rows


SITES_NOTE = (
    "Each marker site runs inside a red-zone canary (the -canary builds): a leaf function "
    "keeps a sentinel in the 128 bytes below %rsp, the marker fires, the sentinel is read "
    "back.  A probe whose handling writes there (an optimised uprobe's call pushes its "
    "return address at -8(%rsp)) corrupts the program: **UNSAFE**.  **NEVER FIRES**: the probe "
    "was attached without error and saw no event.  **REFUSED**: the kernel refused the probe "
    f"(error {kernel.REFUSED_ERRNO}).  **CRASHES**: the target, or its forked child, was killed "
    "by a signal.  The order is when the probe was attached: "
    + "; ".join(f"{k}: {v}" for k, v in configs.ATTACH.items()) + ".  The path is what the "
    "target's own "
    "mappings showed ([uprobes-trampoline]: optimised; [uprobes]: single-stepped; neither: "
    "emulated) or, for a return probe, whether the uretprobe syscall was made.  Corrupted "
    "calls are shown only where a canary ran.")


def canary(build):
    b = configs.builds().get(build)
    return bool(b and b.canary)


def as_expected(meta, s):
    """`yes`, `**NO**: what differs` or `-` (no expectation here)."""
    diff = kernel.check(meta, s)
    return "-" if diff is None else "yes" if not diff else f"**NO**: {diff}"


def expectation(meta):
    """What this kernel is expected to do at each site, said before the
    sites are measured (kernel.py), as lines of Markdown."""
    u = (meta or {}).get("uprobe_optimisation") or {}
    r = (meta or {}).get("uretprobe_syscall") or {}
    lines = [f"This kernel answered the uprobe syscall with {kernel.answer(meta)}"
             + (f": {u['meaning']}." if u.get("meaning") else "."),
             f"Return probes: {r.get('meaning') or 'unknown (not recorded)'}."]
    rows = kernel.table(meta)
    if rows:
        lines += ["Expected at each site, before measuring (kernel.py):", "",
                  table(["site", "order", "expected path", "expected verdict"], rows)]
    else:
        lines.append("No expectation is known for that answer: each site is only measured.")
    return lines


def sites_table(a, meta=None, unit=DEFAULT_UNIT):
    """The probe-site table, its corrupted/calls column only where a
    canary ran in some row, each site marked as this kernel was expected
    to behave there or not; its cost in UNIT (ns, or a lab guest's
    instructions; None: no cost column, where times are emulated)."""
    sites = a.get("sites", [])
    with_canary = any(canary(s["build"]) for s in sites)
    orders = any((s.get("attach") or "before") != "before" for s in sites)
    head = ["config", "build (site)", "probe", "tracer", "threads"] + (
        ["order"] if orders else []) + ([f"overhead [{unit}/event]"] if unit else []) + (
        ["corrupted/calls"] if with_canary else []) + ["path fired", "safe on this kernel?",
                                                       "as expected?"]
    rows = []
    for s in sites:
        rows.append([s["config"], s["build"], s["probe"], s["tracer"], s["threads"]]
                    + ([s.get("attach") or "before"] if orders else [])
                    + ([(f_ins if unit == INSTRUCTIONS else f_ns)(s["ns_per_event"])]
                       if unit else [])
                    + ([f"{s['corrupted']:,}/{s['calls']:,}" if canary(s["build"]) and s["calls"]
                        else "-"]
                       if with_canary else [])
                    + [s["path"] or "-", bold(s["verdict"]), as_expected(meta, s)])
    return table(head, rows)


def tight_markdown(a, meta=None, guest=None):
    """The tight-loop detail (RATE=max, the default); GUEST (guest_head)
    adds a lab guest's module runtime to the 2011 table."""
    notes = Notes()
    lines = ["", "## Overhead per event", "",
             "Per-event time is each thread's loop wall time / calls.  Overhead is against "
             "`baseline` at the same thread count: its mean, then its 95% interval; "
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
    lines += ["", "## The 2011 figures beside today's", "",
              "2011: SystemTap 1.3, Fedora 14, Core 2 Duo P8600, utrace, `stap -F` "
              "(shared/seeds/003).  Today's runs are scaled to 10M calls at 1 thread.", ""]
    head = Y2011_HEAD[:7] + [guest_head(guest)] + Y2011_HEAD[7:] if guest else Y2011_HEAD
    lines.append(table(head, y2011(a, guest)))
    return lines + (["", guest_line(guest)] if guest else []) + skipped_failed(a)


def skipped_failed(a):
    """Each skipped configuration with its reason; each distinct failure
    reason once, with the cells it covers."""
    lines = ["", "## Skipped and failed", ""]
    lines += [f"- skipped {s['config']}: {normalise(s['reason'])}" for s in a["skipped"]]
    for why, cells in failure_groups(a):
        n = sum(k for _, k in cells.values())
        lines.append(f"- FAILED, {n} run{'s' * (n != 1)} ({where(cells)}): {why}")
    if len(lines) == 3:
        lines.append("None.")
    return lines


def failure_groups(a):
    """[(normalised reason, {config: ([threads], runs)})], most runs first."""
    groups = {}
    for f in a["failed"]:
        g = groups.setdefault(normalise(f["reason"]), {})
        ts, n = g.get(f["config"], ([], 0))
        g[f["config"]] = (ts + [f["threads"]] if f["threads"] not in ts else ts, n + 1)
    return sorted(groups.items(), key=lambda kv: -sum(n for _, n in kv[1].values()))


def where(cells):
    """`stap-mark at 1-2 threads, stap-mark-time at 2 threads`."""
    def span(ts):
        ts = sorted(ts)
        return (f"{ts[0]}" if len(ts) == 1 else f"{ts[0]}-{ts[-1]}"
                if ts == list(range(ts[0], ts[-1] + 1)) else ",".join(map(str, ts)))
    return ", ".join(f"{c} at {span(ts)} thread{'s' * (ts != [1])}"
                     for c, (ts, _) in cells.items())


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


# -- the environment and a guest's section -------------------------------------
def environment(env):
    lines = ["## Environment", ""]
    for k in ("host", "cpu_model", "cpus", "kernel", "clocksource"):
        lines.append(f"- {k}: {env.get(k, 'unknown')}")
    for line in (env.get("tracers") or {}).values():
        lines.append(f"- {normalise(line)}")
    for k, v in (env.get("tools") or {}).items():
        lines.append(f"- {k}: {v or 'not installed'}")
    inp = dict(env.get("inputs") or {})
    if len(inp.get("configs") or []) > 8:  # meta.json keeps the list
        inp["configs"] = f"{len(inp['configs'])} configurations (listed in meta.json)"
    if inp:
        lines.append(f"- inputs: {json.dumps(inp, sort_keys=True)}")
    sites = env.get("probe_sites") or {}
    if sites:
        lines += ["", "Probe sites (instruction bytes where the uprobe goes):", ""]
        rows = []
        for b, s in sorted(sites.items()):
            rows.append([b, "single_trace entry", s["function"]["file_offset"],
                         s["function"]["bytes"]])
            for m in s.get("markers", []):
                rows.append([b, f"marker {m['provider']}:{m['name']} ({m['args']})",
                             m["file_offset"], m["bytes"]])
        lines.append(table(["build", "site", "file offset", "bytes"], rows))
    return lines


LAB_HEAD = ["config", "threads", "runs (failed)", "status", "events seen/expected", "runtime",
            "corrupted/calls", "path fired", "note"]
ICOUNT_HEAD = ["config", "threads", "runs (failed)", "status", "median [instructions/call]",
               "overhead [instructions/event]: mean [95% CI]", "events seen/expected",
               "path fired"]


def f_ins(v):
    """Instructions: two decimals below 100 (an idle marker's nop is
    1.00), whole ones above (a trap's hundreds vary by more than one)."""
    return "-" if v is None else f"{v:.2f}" if abs(v) < 100 else f"{v:,.0f}"


def icount_rows(a):
    """Per cell, in guest instructions: the median per call and the
    overhead per event against the suite's own baseline, the mean always
    beside its interval."""
    rows = []
    for c in a["cells"]:
        o = c.get("overhead")
        ov = "-" if not o else f_interval(o["mean_ns"], o["lo_ns"], o["hi_ns"], f_ins)
        rows.append([c["config"], c["threads"], runs_cell(c),
                     "/".join(sorted({*c.get("statuses", [])})) or "-",
                     f_ins(c["median_ns"]) if c["n_runs"] else "-", ov,
                     f_check(c.get("check")) if c.get("check") else "-", c.get("path") or "-"])
    return rows


def lab_sites(a, meta, unit):
    """A guest's probe sites: what its kernel is expected to do, then
    what it did (as the host's report says them)."""
    if not a.get("sites"):
        return []
    return (["", "### Probe sites on this guest's kernel", ""] + expectation(meta)
            + ["", sites_table(a, meta, unit)])


def lab_markdown(a, lab, meta=None):
    """A guest's section (make lab): its kernel and tools, and under TCG,
    where wall time is emulated, instructions per event (QEMU -icount) or
    else counts and statuses only; then its probe sites, where it ran
    any, checked against what its kernel (META) was expected to do."""
    lines = ["", f"## Guest lab: Debian {lab.get('suite')}", "",
             f"- guest kernel: {lab.get('kernel', '?')}; SystemTap {lab.get('stap', '?')}; "
             f"accelerator: {lab.get('accel', 'none: the guest was not booted')}",
             f"- pre-flight: {lab.get('preflight') or 'SystemTap builds modules for this kernel'}"]
    if "modules_left" in lab:
        left = lab["modules_left"]
        lines.append("- modules left loaded in the guest at the end: "
                     + ("unknown" if left is None else ", ".join(left) or "none"))
    if lab.get("accel") == "kvm":
        return lines + ["", "Under KVM the times below are real figures for this kernel.", ""]
    if lab.get("icount"):
        lines += ["", "Under TCG with QEMU's -icount shift=0 on one vCPU the guest's clock "
                  "advances 1 ns per instruction, so these figures are **guest instructions**, "
                  "not time: deterministic, comparable across kernels, never with the host's "
                  "ns. Instructions are not cycles (a trap costs far more cycles than "
                  "instructions). Each thread's figure is its own CPU time, user and kernel: "
                  "with one vCPU, threads take turns and the clock counts all of them.", ""]
        lines.append(table(ICOUNT_HEAD, icount_rows(a)))
        return lines + lab_sites(a, meta, INSTRUCTIONS) + skipped_failed(a)
    lines += ["", "Under TCG the guest's times are emulated, not measurements: only counts "
              "and statuses are shown.", ""]
    notes, rows = Notes(), []
    for c in a["cells"]:
        ch = c.get("check") or {}
        rows.append([c["config"], c["threads"], f"{c['n_timed'] - c['n_failed']}"
                     + (f" ({c['n_failed']}/{c['n_timed']} failed)" if c["n_failed"] else ""),
                     "/".join(sorted({*c.get("statuses", [])})) or "-", f_check(ch) if ch else "-",
                     c.get("runtime") or "-",
                     f"{c['corrupted']:,}/{c['calls']:,}" if c.get("path") else "-",
                     c.get("path") or "-", " ".join(notes.ref(r) for r in c["failed_reasons"])])
    lines.append(table(LAB_HEAD, rows))
    return lines + notes.lines() + lab_sites(a, meta, None) + skipped_failed(a)
