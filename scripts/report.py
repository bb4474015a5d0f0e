#!/usr/bin/env python3
"""report.py: the kit's report: tables, plots, the 2011 figures and
side-by-side comparison (the statistics are in stats.py).

    python3 scripts/report.py                       # results/latest
    python3 scripts/report.py results/A results/B   # side by side, B against A
    make report RESULTS='results/A results/B'

Reads each folder's runs.csv and meta.json (written by scripts/run.py)
and shows, per configuration and thread count, what stats.py computes:
runs and failures, per-event times, the overhead against the baseline
with its 95% interval ("< upper limit" when it holds 0), the slowdown,
user/system CPU, the tracer's steady and fixed CPU, the event check and
scaling.  Writes report.md, report.json and PNG plots into the folder
(one folder), or into results/compare-<names>/ (several), and prints the
tables.  Plots need matplotlib (Debian's python3-matplotlib): an
interpreter without it re-runs the report under one that has it
(/usr/bin/python3 on Debian), and says so; with none, the tables are
complete and one line says how to get the plots.
Warm-up rows (rep 0) are kept in runs.csv but not counted here.
"""
import csv
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from record import BadInput, load  # noqa: E402
from record import DEFAULT_UNIT, paced_rate  # noqa: E402
from stats import BASELINE, analyse, config_rank, paced  # noqa: E402

# Set in the environment of a report re-run under another interpreter, so
# it never re-runs twice.
REEXEC = "KIT_REPORT_REEXEC"

# The 2011 post (shared/seeds/003): 10M calls, one thread, stap -F.
Y2011 = {"calls": 10_000_000, "bare_s": 0.27, "function_s": 51.82, "mark_s": 27.60,
         "gettimeofday_s": 8.4}
# Today's configurations that match the 2011 probes.
Y2011_MATCH = {"function_s": "stap-function-time", "mark_s": "stap-mark-time"}

# -- formatting ----------------------------------------------------------------
def f_ns(v):
    if v is None:
        return "-"
    a = abs(v)
    return f"{v:.0f}" if a >= 100 else f"{v:.1f}" if a >= 1 else f"{v:.2f}"


def f_overhead(o):
    if not o:
        return "-"
    if o["lo_ns"] is None:
        return f"{f_ns(o['mean_ns'])} (no CI)"
    if o["bounded"]:  # the interval holds 0: say only how large it may be
        return f"< {f_ns(o['hi_ns'])}"
    return f"{f_ns(o['mean_ns'])} [{f_ns(o['lo_ns'])}, {f_ns(o['hi_ns'])}]"


def f_x(o):
    if not o:
        return "-"
    x = f"{o['slowdown_x']:.2f}"
    if o["slowdown_lo"] is not None:
        x += f" [{o['slowdown_lo']:.2f}, {o['slowdown_hi']:.2f}]"
    return x


def f_check(ch):
    if ch is None:
        return "-"
    v = ch["verdict"]
    if ch["expected"] is None:
        return v
    s = f"{ch['seen']}/{ch['expected']}"
    if ch["dropped"]:
        s += f" ({ch['dropped']} dropped)"
    return f"{s} {v}" if v != "ok" else s


def table(headers, rows):
    w = [max(len(str(x)) for x in [h] + [r[i] for r in rows]) for i, h in enumerate(headers)]
    line = lambda r: "| " + " | ".join(str(x).ljust(w[i]) for i, x in enumerate(r)) + " |"
    return "\n".join([line(headers), "|" + "|".join("-" * (n + 2) for n in w) + "|"]
                     + [line(r) for r in rows])


OVERHEAD_HEAD = ["config", "threads", "runs (failed)", "median [ns/event]", "min [ns/event]",
                 "overhead mean [ns/event] (95% CI)", "overhead median [ns/event]",
                 "slowdown [x] (95% CI)", "user [ns/event]", "sys [ns/event]",
                 "tracer CPU, steady [ns/event]", "tracer CPU, fixed [ms]",
                 "events seen/expected", "flags"]
TRACER_CPU_NOTE = ("Tracer CPU is that of a tracer process the kit started (or LTTng's consumer "
                   "daemons), less the target's own: *steady* is its slope against events "
                   "between a cell's warm-up and its runs, which make different numbers of "
                   "calls, so start-up is not in it; *fixed* is what is left at zero events "
                   "(start-up, compiling, teardown).  `-` where both made the same number of "
                   "calls (QUICK) or there is no tracer process.  It rests on one warm-up, so "
                   "where the tracer's work is in the kernel (bpftrace, perf stat) it is 0 within "
                   "the start-up's run-to-run spread and may print below 0.")


def overhead_rows(a):
    rows = []
    for c in a["cells"]:
        runs = f"{c['n_runs']}" + (f" ({c['n_failed']}/{c['n_timed']} failed)"
                                   if c["n_failed"] else "")
        if not c["n_runs"]:
            why = "; ".join(c["failed_reasons"])
            rows.append([c["config"], c["threads"], runs] + ["-"] * 10 + [f"all failed: {why}"])
            continue
        rows.append([c["config"], c["threads"], runs, f_ns(c["median_ns"]), f_ns(c["min_ns"]),
                     f_overhead(c["overhead"]),
                     f_ns(c["overhead"]["median_ns"]) if c["overhead"] else "-",
                     f_x(c["overhead"]), f_ns(c["user_ns"]), f_ns(c["sys_ns"]),
                     f_ns(c["tracer_steady_ns"]),
                     "-" if c["tracer_fixed_ms"] is None else f"{c['tracer_fixed_ms']:.3g}",
                     f_check(c["check"]), "; ".join(c["flags"])])
    return rows


def scaling_rows(a):
    return [[c["config"], c["threads"],
             f"{c['scaling']['events_per_s'] / 1e6:.2f}" if c["scaling"]["events_per_s"] else "-",
             f"{c['scaling']['efficiency']:.0%}" if c["scaling"]["efficiency"] is not None
             else "-", "yes" if c["scaling"]["time_sliced"] else ""]
            for c in a["cells"] if c["n_runs"]]


def y2011(a):
    """The 2011 figures beside today's: as ratios to the baseline, and as
    overhead per event (ratios alone mislead: the bare call got 20x faster)."""
    cells = {c["config"]: c for c in a["cells"] if c["threads"] == 1 and c["n_runs"]}
    base = cells.get(BASELINE)
    n = Y2011["calls"]
    rows = [["bare call (baseline)", f"{Y2011['bare_s']:.2f} s", "1.0x", "-",
             f"{base['median_ns'] * n / 1e9:.3f} s" if base else "-",
             "1.0x" if base else "-", "-", "baseline"]]
    for key, label in (("function_s", "process.function + gettimeofday_ns + $v"),
                       ("mark_s", "process.mark + gettimeofday_ns + $arg1")):
        c = cells.get(Y2011_MATCH[key])
        then = Y2011[key] / Y2011["bare_s"]
        then_ns = (Y2011[key] - Y2011["bare_s"]) * 1e9 / n
        now = now_x = now_ns = "-"
        if c and base:
            now = f"{c['median_ns'] * n / 1e9:.3f} s"
            now_x = f"{c['median_ns'] / base['median_ns']:.1f}x"
            now_ns = f"{c['median_ns'] - base['median_ns']:.0f}"
        rows.append([label, f"{Y2011[key]:.2f} s", f"{then:.1f}x", f"{then_ns:.0f}", now, now_x,
                     now_ns, f"{Y2011_MATCH[key]}" + (
                         f" ({c['runtime']} runtime)" if c and c["runtime"]
                         else "" if c else " (not measured)")])
    g_then = Y2011["gettimeofday_s"] * 1e9 / n
    g_now = "-"
    mt, m = cells.get("stap-mark-time"), cells.get("stap-mark")
    if mt and m:
        g_now = f"{mt['median_ns'] - m['median_ns']:.0f}"
    rows.append(["gettimeofday_ns() share", f"{Y2011['gettimeofday_s']:.1f} s", "",
                 f"{g_then:.0f}", "", "", g_now, "stap-mark-time - stap-mark"])
    return rows


Y2011_HEAD = ["10M calls, 1 thread", "2011 [s]", "2011 [x baseline]", "2011 overhead [ns/event]",
              "today, scaled to 10M [s]", "today [x baseline]", "today overhead [ns/event]",
              "configuration"]


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


def f_pct(v):
    return "-" if v is None else f"{v:.3g}"


def f_rate(v):
    return "-" if v is None else f"{v:.3g}"


def paced_rows(p):
    out = []
    for c in p["cells"]:
        ev = "-" if not c.get("achieved") or c["tracer"] == "none" else (
            f"{c['seen']}/{c['expected']}" + (f" ({c['dropped']})" if c["dropped"] else ""))
        out.append([c["config"], c["threads"], c["rate"], f_rate(c.get("achieved")),
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
                 f">= {lim} (all tested held)" if m["broke_at"] is None else str(lim))
        out.append([m["config"], m["threads"], ",".join(map(str, m["tested"])), shown,
                    m["broke_at"] or "-", short(m["why"] or "-", 80),
                    f_rate(m["rate_at_1pct"])])
    return out


def paced_markdown(p):
    lines = ["", "## Paced runs: CPU at a given event rate", "", PACED_NOTE, ""]
    if not p["has_baseline"]:
        lines += ["**No paced baseline rows: overheads cannot be computed.**", ""]
    lines.append(table(PACED_HEAD, paced_rows(p)))
    lines += ["", "### Lossless limits", ""]
    lines.append(table(LIMITS_HEAD, limit_rows(p)))
    return lines


SITES_HEAD = ["config", "build (site)", "probe", "tracer", "threads", "overhead [ns/event]",
              "corrupted/calls", "path fired", "safe on this kernel?"]
SITES_NOTE = (
    "Each marker site runs inside a red-zone canary (the -canary builds): a leaf function "
    "keeps a sentinel in the 128 bytes below %rsp, the marker fires, the sentinel is read "
    "back.  A probe whose handling writes there (an optimised uprobe's call pushes its "
    "return address at -8(%rsp)) corrupts the program: UNSAFE.  NEVER FIRES: the probe was "
    "attached without error and saw no event.  The path is what the target's own "
    "mappings showed ([uprobes-trampoline]: optimised; [uprobes]: single-stepped; neither: "
    "emulated) or, for a return probe, whether the uretprobe syscall was made.")
RED = '<span style="color:red">**{}**</span>'


def site_rows(a):
    out = []
    for s in a.get("sites", []):
        v = s["verdict"]
        out.append([s["config"], s["build"], s["probe"], s["tracer"], s["threads"],
                    f_ns(s["ns_per_event"]), f"{s['corrupted']}/{s['calls']}", s["path"] or "-",
                    RED.format(v) if v in ("UNSAFE", "NEVER FIRES") else v or "-"])
    return out


def tight_markdown(a):
    """The tight-loop sections (RATE=max, the default)."""
    lines = []
    lines += ["", "## Overhead per event", "",
              "Per-event time is each thread's loop wall time / calls.  Overhead is against "
              "`baseline` at the same thread count, with a 95% interval; `< b` means the "
              "interval holds 0 and b is its upper limit (no overhead above b ns is "
              "compatible with the runs).  Slowdown is the ratio of geometric means, with "
              "its interval from the same test.  A run whose tracer lost events is "
              "`dropped`, not ok.", "", TRACER_CPU_NOTE, ""]
    if not a["has_baseline"]:
        lines += ["**No baseline rows: overheads cannot be computed.**", ""]
    lines.append(table(OVERHEAD_HEAD, overhead_rows(a)))
    lines += ["", "## Scaling with threads", "",
              "Total events per second; efficiency = (rate / rate at 1 thread) / "
              "min(threads, CPUs).", ""]
    lines.append(table(["config", "threads", "events [M/s]", "efficiency", "time-sliced"],
                       scaling_rows(a)))
    if a.get("sites"):
        lines += ["", "## Probe sites: cost, safety and the path taken", "", SITES_NOTE, ""]
        lines.append(table(SITES_HEAD, site_rows(a)))
    lines += ["", "## The 2011 figures beside today's", "",
              "2011: SystemTap 1.3, Fedora 14, Core 2 Duo P8600, utrace, `stap -F` "
              "(shared/seeds/003).  Today's runs are scaled to 10M calls at 1 thread.", ""]
    lines.append(table(Y2011_HEAD, y2011(a)))
    lines += ["", "## Skipped and failed", ""]
    if not a["skipped"] and not a["failed"]:
        lines.append("None.")
    for s in a["skipped"]:
        lines.append(f"- skipped {s['config']}: {s['reason']}")
    for f in a["failed"]:
        lines.append(f"- FAILED {f['config']} threads={f['threads']} rep={f['rep']}: "
                     f"{f['reason']}")
    flagged = [c for c in a["cells"] if c["flags"]]
    lines += ["", "## Flagged cells", ""]
    lines += [f"- {c['config']} threads={c['threads']}: {'; '.join(c['flags'])}"
              for c in flagged] or ["None."]
    return lines


def markdown(a, meta, warnings, folder, p=None):
    env = meta or {}
    lines = [f"# Tracing overhead: {os.path.basename(os.path.normpath(folder))}", ""]
    lines += ["## Environment", ""]
    tools = env.get("tools") or {}
    for k in ("host", "cpu_model", "cpus", "kernel", "clocksource"):
        lines.append(f"- {k}: {env.get(k, 'unknown')}")
    for line in (env.get("tracers") or {}).values():
        lines.append(f"- {line}")
    for k, v in tools.items():
        lines.append(f"- {k}: {v or 'not installed'}")
    inp = env.get("inputs")
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
    if warnings:
        lines += ["", "## Input warnings", ""] + [f"- {w}" for w in warnings]
    lab = env.get("lab")
    if lab:
        lines += lab_markdown(a, lab)
        if lab.get("accel") != "kvm":  # emulated times are not shown beside anything
            return "\n".join(lines) + "\n"
    if a["cells"] or not (p and p["cells"]):
        lines += tight_markdown(a)
    if p and p["cells"]:
        lines += paced_markdown(p)
    return "\n".join(lines) + "\n"


LAB_HEAD = ["config", "threads", "runs (failed)", "status", "events seen/expected", "runtime",
            "corrupted/calls", "path fired", "note"]


ICOUNT_HEAD = ["config", "threads", "runs (failed)", "status", "median [instructions/call]",
               "overhead mean [instructions/event] (95% CI)", "events seen/expected",
               "path fired"]


def f_ins(v):
    """Instructions: two decimals (an idle marker's nop is 1.00)."""
    return "-" if v is None else f"{v:.2f}" if abs(v) < 1000 else f"{v:.0f}"


def icount_rows(a):
    """Per cell, in guest instructions: the median per call and the
    overhead per event against the guest's own baseline, the mean always
    beside its interval."""
    rows = []
    for c in a["cells"]:
        runs = f"{c['n_runs']}" + (f" ({c['n_failed']}/{c['n_timed']} failed)"
                                   if c["n_failed"] else "")
        o = c.get("overhead")
        ov = "-" if not o else f_ins(o["mean_ns"]) + (
            "" if o["lo_ns"] is None else f" [{f_ins(o['lo_ns'])}, {f_ins(o['hi_ns'])}]")
        rows.append([c["config"], c["threads"], runs,
                     "/".join(sorted({*c.get("statuses", [])})) or "-",
                     f_ins(c["median_ns"]) if c["n_runs"] else "-", ov,
                     f_check(c.get("check")) if c.get("check") else "-", c.get("path") or "-"])
    return rows


def lab_markdown(a, lab):
    """A guest's section (make lab): its kernel and tools, and under TCG,
    where wall time is emulated, instructions per event (QEMU -icount) or
    else counts and statuses only."""
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
        return lines + skipped_failed(a)
    lines += ["", "Under TCG the guest's times are emulated, not measurements: only counts "
              "and statuses are shown.", ""]
    rows = []
    for c in a["cells"]:
        ch = c.get("check") or {}
        rows.append([c["config"], c["threads"], f"{c['n_timed'] - c['n_failed']}"
                     + (f" ({c['n_failed']}/{c['n_timed']} failed)" if c["n_failed"] else ""),
                     "/".join(sorted({*c.get("statuses", [])})) or "-", f_check(ch) if ch else "-",
                     c.get("runtime") or "-",
                     f"{c['corrupted']}/{c['calls']}" if c.get("path") else "-",
                     c.get("path") or "-", "; ".join(c["failed_reasons"])[:120]])
    lines.append(table(LAB_HEAD, rows))
    return lines + skipped_failed(a)


def skipped_failed(a):
    lines = ["", "## Skipped and failed", ""]
    lines += [f"- skipped {s['config']}: {s['reason']}" for s in a["skipped"]]
    lines += [f"- FAILED {f['config']} threads={f['threads']} rep={f['rep']}: {f['reason']}"
              for f in a["failed"]] or (["None."] if not a["skipped"] else [])
    return lines


# -- plots ---------------------------------------------------------------------
def short(reason, n=48):
    return reason if len(reason) <= n else reason[:n - 1] + "…"


def plots(a, folder, p=None):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"report: no plots: matplotlib cannot be imported by {sys.executable}, nor by "
              "/usr/bin/python3; install Debian's python3-matplotlib", file=sys.stderr)
        return []
    made = []
    cells = [c for c in a["cells"] if c["config"] != BASELINE]
    threads = sorted({c["threads"] for c in a["cells"]})
    if cells:
        made.append(plot_by_config(plt, a, cells, threads, folder))
        made.append(plot_vs_threads(plt, cells, threads, folder))
    one = [c for c in a["cells"] if c["threads"] == min(threads or [1]) and c["n_runs"]
           and c["user_ns"] is not None]
    if one:
        fig, ax = plt.subplots(figsize=(10, 0.35 * len(one) + 1.5))
        # Side by side, not stacked: a stack misleads on a log axis.
        ys = list(range(len(one)))
        ax.barh([y - 0.2 for y in ys], [max(c["user_ns"], 1e-3) for c in one], height=0.4,
                label="user")
        ax.barh([y + 0.2 for y in ys], [max(c["sys_ns"], 1e-3) for c in one], height=0.4,
                label="system")
        ax.set_yticks(ys)
        ax.set_yticklabels([c["config"] for c in one])
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlim(left=0.1)
        ax.set_xlabel(f"CPU per event [ns/event] at {one[0]['threads']} thread(s) (log scale)")
        ax.set_title("Where the time goes: user and system CPU per event")
        ax.legend()
        fig.tight_layout()
        made.append(save(fig, folder, "user_sys_split.png"))
    if p and any(c["over_machine_pct"] is not None for c in p["cells"]):
        made.append(plot_paced(plt, p, folder))
    return made


PACED_FLOOR = 1e-2  # % of a CPU: where a paced plot puts overheads at or below 0


def plot_paced(plt, p, folder):
    """Machine-wide overhead (% of one CPU) against events/s on log-log
    axes, a line per configuration, a panel per thread count, with the 1%
    and 10% lines; points at or below 0 sit on the floor, hollow."""
    threads = sorted({c["threads"] for c in p["cells"]})
    fig, axes = plt.subplots(1, len(threads), figsize=(6.5 * len(threads), 5), squeeze=False)
    for ax, n in zip(axes[0], threads):
        lines = {}
        for c in p["cells"]:
            if c["threads"] == n and c["over_machine_pct"] is not None:
                lines.setdefault(c["config"], []).append(c)
        for config, cs in lines.items():
            xs = [c["events_per_s"] for c in cs]
            ys = [max(c["over_machine_pct"], PACED_FLOOR) for c in cs]
            line, = ax.plot(xs, ys, marker="o", label=config)
            low = [(x, y) for x, y, c in zip(xs, ys, cs) if c["over_machine_pct"] <= 0]
            if low:
                ax.plot(*zip(*low), "o", mfc="white", color=line.get_color())
            broke = [(x, y) for x, y, c in zip(xs, ys, cs) if not c["lossless"]]
            if broke:
                ax.plot(*zip(*broke), "x", ms=10, color="red")
        for level in (1, 10):
            ax.axhline(level, color="grey", ls="--", lw=0.8)
            ax.annotate(f"{level}% of a CPU", (0.01, level), xycoords=("axes fraction", "data"),
                        fontsize=7, va="bottom", color="grey")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(bottom=PACED_FLOOR / 2)
        ax.set_xlabel("events per second, all threads (log)")
        ax.set_ylabel("machine CPU above baseline [% of one CPU] (log)")
        ax.set_title(f"{n} thread(s): red x = lost events, failed or fell behind; "
                     "hollow = <= 0", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return save(fig, folder, "paced_cpu.png")


def plot_by_config(plt, a, cells, threads, folder):
    """One bar per configuration and thread count, in the table's order,
    with its 95% interval; a cell with no bar says why in words."""
    skipped = {s["config"]: s["reason"] for s in a["skipped"]}
    names = list(dict.fromkeys([c["config"] for c in cells] + list(skipped)))
    rank = config_rank(names)
    names.sort(key=rank.get)
    fig, ax = plt.subplots(figsize=(11, 0.4 * len(names) * max(1, len(threads)) ** 0.5 + 1.8))
    h = 0.8 / max(1, len(threads))
    for j, t in enumerate(threads):
        by = {c["config"]: c for c in cells if c["threads"] == t}
        bars, texts = [], []
        for i, n in enumerate(names):
            y, c = i + j * h, by.get(n)
            if c is None:
                if n in skipped and j == 0:
                    texts.append((y, f" skipped: {short(skipped[n])}"))
                continue
            o = c.get("overhead")
            if not c["n_runs"]:
                texts.append((y, f" {t} thr: all {c['n_timed']} runs failed: "
                                 f"{short('; '.join(c['failed_reasons']))}"))
            elif o and not o["bounded"] and o["mean_ns"] > 0:
                bars.append((y, o))
            elif o:
                texts.append((y, f" {t} thr: {f_overhead(o)} ns"))
        if bars:
            means = [o["mean_ns"] for _, o in bars]
            # Whiskers: the 95% interval, its lower end kept on the log axis.
            lo = [m - max(o["lo_ns"], m * 1e-3) if o["lo_ns"] is not None else 0
                  for m, (_, o) in zip(means, bars)]
            hi = [o["hi_ns"] - m if o["hi_ns"] is not None else 0
                  for m, (_, o) in zip(means, bars)]
            ax.barh([y for y, _ in bars], means, height=h, xerr=[lo, hi], capsize=2,
                    label=f"{t} thread(s)", color=f"C{j}")
        for y, text in texts:
            ax.text(0, y, text, va="center", fontsize=7, color="0.3",
                    transform=ax.get_yaxis_transform())
    ax.set_yticks([i + h * (len(threads) - 1) / 2 for i in range(len(names))])
    ax.set_yticklabels(names)
    ax.set_ylim(len(names) - 0.1, -0.5)  # top to bottom, room for the first row's words
    ax.set_xscale("log")
    ax.set_xlabel("overhead per event [ns/event] (mean, 95% interval; log scale)")
    ax.legend(loc="lower right")
    ax.set_title("Overhead per event by configuration (table order, baselines first)")
    fig.tight_layout()
    return save(fig, folder, "overhead_by_config.png")


def plot_vs_threads(plt, cells, threads, folder):
    """One small panel per tracer, a line per configuration labelled at
    its end, so no configuration is found by its colour alone."""
    tracers = list(dict.fromkeys(c["tracer"] or "?" for c in cells))
    cols = min(3, len(tracers))
    rows_n = (len(tracers) + cols - 1) // cols
    fig, axes = plt.subplots(rows_n, cols, figsize=(4.2 * cols, 3.2 * rows_n), squeeze=False)
    for k, tr in enumerate(tracers):
        ax = axes[k // cols][k % cols]
        for i, n in enumerate(dict.fromkeys(c["config"] for c in cells if c["tracer"] == tr)):
            pts = sorted((c["threads"], c["overhead"]["mean_ns"]) for c in cells
                         if c["config"] == n and c.get("overhead")
                         and c["overhead"]["mean_ns"] > 0)
            if not pts:
                continue
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=f"C{i}")
            ax.annotate(n, pts[-1], textcoords="offset points", xytext=(4, 0), fontsize=7,
                        va="center", color=f"C{i}")
        ax.set_title(tr, fontsize=9)
        ax.set_yscale("log")
        ax.set_xticks(threads)
        ax.set_xlim(min(threads) - 0.3, max(threads) + 0.3 + 0.6 * len(threads))
        ax.set_xlabel("threads", fontsize=8)
        ax.set_ylabel("overhead [ns/event]", fontsize=8)
        ax.tick_params(which="both", labelsize=7)
    for k in range(len(tracers), rows_n * cols):
        axes[k // cols][k % cols].axis("off")
    fig.suptitle("Overhead per event against threads, by tracer (log scale)")
    fig.tight_layout()
    return save(fig, folder, "overhead_vs_threads.png")


def save(fig, folder, name):
    import matplotlib.pyplot as plt
    path = os.path.join(folder, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# -- several folders -----------------------------------------------------------
def compare(results):
    """Tables with a column per folder and the ratio of each to the first."""
    names = [os.path.basename(os.path.normpath(f)) for f, _ in results]
    keys = []
    for _, a in results:
        for c in a["cells"]:
            if (c["config"], c["threads"]) not in keys:
                keys.append((c["config"], c["threads"]))
    rows = []
    for k in keys:
        vals = []
        for _, a in results:
            c = next((c for c in a["cells"] if (c["config"], c["threads"]) == k), None)
            vals.append(c["overhead"]["mean_ns"] if c and c.get("overhead") else
                        c.get("median_ns") if c and k[0] == BASELINE else None)
        row = [k[0], k[1]] + [f_ns(v) for v in vals]
        for v in vals[1:]:
            row.append(f"{v / vals[0]:.2f}" if v is not None and vals[0] else "-")
        rows.append(row)
    head = ["config", "threads"] + [f"{n} [ns/event]" for n in names] + \
        [f"{n} / {names[0]}" for n in names[1:]]
    return head, rows


def to_json(a, meta, warnings, p=None):
    return {"environment": meta, "warnings": warnings, **a, "paced": p or {"cells": []}}


def has_matplotlib(python):
    return subprocess.run([python, "-c", "import matplotlib"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def plotting_python():
    """An interpreter that can draw the plots: this one, else Debian's
    /usr/bin/python3 or the python3 on PATH; None if none can."""
    if _can_import_matplotlib():
        return sys.executable
    for py in ("/usr/bin/python3", shutil.which("python3")):
        if py and os.path.realpath(py) != os.path.realpath(sys.executable) and has_matplotlib(py):
            return py
    return None


def _can_import_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        return False


def main(argv):
    if not os.environ.get(REEXEC) and not _can_import_matplotlib():
        py = plotting_python()
        if py:
            print(f"report: {sys.executable} has no matplotlib; running it under {py}, "
                  "which has matplotlib", file=sys.stderr, flush=True)
            os.execve(py, [py, os.path.abspath(__file__), *argv],
                      dict(os.environ, **{REEXEC: "1"}))
    folders = argv or [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "results", "latest")]
    results, units, status = [], {}, 0
    for folder in folders:
        try:
            rows, meta, warnings = load(folder)
        except BadInput as e:
            print(f"report: {e}", file=sys.stderr)
            status = 1
            continue
        except (OSError, UnicodeDecodeError, csv.Error) as e:
            print(f"report: {folder}: cannot read: {e}", file=sys.stderr)
            status = 1
            continue
        for w in warnings:
            print(f"report: warning: {w}", file=sys.stderr)
        p = paced([r for r in rows if paced_rate(r) is not None])
        a = analyse([r for r in rows if paced_rate(r) is None], meta)
        emulated = (meta.get("lab") or {}).get("accel", "kvm") != "kvm"  # make lab under TCG
        if not a["has_baseline"] and a["cells"] and not emulated:
            print(f"report: {folder}: no baseline rows; overheads are not computed",
                  file=sys.stderr)
        results.append((folder, a))
        units[folder] = meta.get("unit") or DEFAULT_UNIT
        md = markdown(a, meta, warnings, folder, p)
        with open(os.path.join(folder, "report.md"), "w") as f:
            f.write(md)
        with open(os.path.join(folder, "report.json"), "w") as f:
            json.dump(to_json(a, meta, warnings, p), f, indent=1, sort_keys=True)
            f.write("\n")
        made = [] if emulated else plots(a, folder, p)
        print(f"\n== {folder}\n")
        if emulated:
            print("\n".join(lab_markdown(a, meta["lab"])))
        elif a["cells"]:
            print(table(OVERHEAD_HEAD, overhead_rows(a)))
            print()
            print(table(Y2011_HEAD, y2011(a)))
        if p["cells"]:
            print("\nPaced runs: lossless limits\n")
            print(table(LIMITS_HEAD, limit_rows(p)))
        for s in a["skipped"]:
            print(f"skipped {s['config']}: {s['reason']}")
        print(f"\nreport: wrote {os.path.join(folder, 'report.md')}, report.json"
              + (f" and {len(made)} plots (drawn by {sys.executable})" if made else ""))
    if len(set(units.values())) > 1:  # host ns and guest instructions never meet
        print("report: the folders count in different units ("
              + ", ".join(f"{os.path.basename(os.path.normpath(f))}: {u}" for f, u in units.items())
              + "): each has its report, and none is compared with another", file=sys.stderr)
    elif len(results) > 1:
        head, rows = compare(results)
        out = os.path.join(os.path.dirname(os.path.normpath(results[0][0])), "compare-" + "-".join(
            os.path.basename(os.path.normpath(f)) for f, _ in results))
        os.makedirs(out, exist_ok=True)
        text = ("# Comparison: overhead per event [ns/event] (baseline: its median), "
                "and each folder against the first\n\n" + table(head, rows) + "\n")
        with open(os.path.join(out, "report.md"), "w") as f:
            f.write(text)
        with open(os.path.join(out, "report.json"), "w") as f:
            json.dump({"folders": [f for f, _ in results], "head": head, "rows": rows}, f,
                      indent=1)
        print("\n" + text)
        print(f"report: wrote {out}/report.md")
    if not results:
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
