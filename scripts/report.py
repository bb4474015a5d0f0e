#!/usr/bin/env python3
"""report.py: the statistics of the kit, and its report.

    python3 scripts/report.py                       # results/latest
    python3 scripts/report.py results/A results/B   # side by side, B against A
    make report RESULTS='results/A results/B'

Reads each folder's runs.csv and meta.json (written by scripts/run.py).
For every configuration and thread count: n runs; median, mean and min
of the per-event time of each thread's loop; sd and coefficient of
variation; the overhead per event against the baseline at the same
thread count with a 95% interval (paired t over repetitions, which the
runner interleaves; Welch's t where runs cannot be paired), "< bound"
when the interval holds 0; the slowdown (x) with its interval; user and
system CPU per event; the tracer's own CPU; the event check; scaling with
threads.  Writes report.md, report.json and PNG plots into the folder
(one folder), or into results/compare-<names>/ (several), and prints the
tables.  Plots need matplotlib (Debian's python3-matplotlib); without it
the tables are complete and one line says how to get the plots.
Warm-up rows (rep 0) are kept in runs.csv but not counted here.
"""
import csv
import json
import math
import os
import statistics
import sys

BASELINE = "baseline"
NOISY_CV = 0.10  # a cell whose per-event times vary more than this is flagged
REQUIRED = ["config", "threads", "iterations", "rep", "status", "thread_wall_ns"]
KNOWN = {
    "started", "config", "build", "tracer", "probe", "action", "threads", "iterations", "rep",
    "status", "reason", "events_expected", "events_seen", "events_dropped", "wall_ns",
    "thread_wall_ns", "thread_user_ns", "thread_sys_ns", "thread_cpu_ns", "process_user_ns",
    "process_sys_ns", "tracer_user_ns", "tracer_sys_ns", "runtime", "note",
}
MEASURED = ("ok", "overwritten", "unverified", "mismatch")

# The 2011 post (shared/seeds/003): 10M calls, one thread, stap -F.
Y2011 = {"calls": 10_000_000, "bare_s": 0.27, "function_s": 51.82, "mark_s": 27.60,
         "gettimeofday_s": 8.4}
# Today's configurations that match the 2011 probes.
Y2011_MATCH = {"function_s": "stap-function-time", "mark_s": "stap-mark-time"}

# Two-sided 95% critical values of Student's t, by degrees of freedom.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042,
       40: 2.021, 60: 2.000, 120: 1.980}


class BadInput(Exception):
    """A results folder that cannot be read; the message names it."""


def t95(df):
    if df < 1:
        return float("nan")
    best = max(k for k in T95 if k <= df) if df < 1000 else None
    return T95[best] if best else 1.960


def ints(text):
    return [int(x) for x in text.split(";") if x != ""] if text else []


def num(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


# -- reading -------------------------------------------------------------------
def load(folder):
    """(rows, meta, warnings) of one results folder."""
    warnings = []
    if not os.path.isdir(folder):
        raise BadInput(f"{folder}: no such results folder")
    path = os.path.join(folder, "runs.csv")
    if not os.path.exists(path):
        raise BadInput(f"{path}: missing (is {folder} a results folder of `make run`?)")
    with open(path, newline="") as f:
        lines = f.read().splitlines()
    if not lines:
        raise BadInput(f"{path}: empty (not even a header line)")
    header = next(csv.reader([lines[0]]))
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise BadInput(f"{path}: missing columns {', '.join(missing)}")
    unknown = [c for c in header if c not in KNOWN]
    if unknown:
        warnings.append(f"{path}: unknown columns ignored: {', '.join(unknown)}")
    rows = []
    for i, rec in enumerate(csv.reader(lines[1:]), start=2):
        if len(rec) != len(header):
            warnings.append(f"{path}: line {i} has {len(rec)} fields, not {len(header)} "
                            "(truncated?); ignored")
            continue
        r = dict(zip(header, rec))
        r["threads"], r["iterations"], r["rep"] = (num(r["threads"]), num(r["iterations"]),
                                                   num(r["rep"]))
        if r["status"] in MEASURED and (not r["threads"] or not r["iterations"]
                                        or len(ints(r["thread_wall_ns"])) != r["threads"]):
            warnings.append(f"{path}: line {i} ({r['config']}) has unreadable timings; ignored")
            continue
        rows.append(r)
    if not rows:
        warnings.append(f"{path}: no runs recorded")
    meta = {}
    mpath = os.path.join(folder, "meta.json")
    try:
        with open(mpath) as f:
            meta = json.load(f)
    except FileNotFoundError:
        warnings.append(f"{mpath}: missing; the environment is unknown")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        warnings.append(f"{mpath}: not valid JSON ({e}); the environment is unknown")
    return rows, meta, warnings


# -- statistics ----------------------------------------------------------------
def mean_ci(values):
    """(mean, lo, hi) with a 95% t interval; lo/hi None below 2 values."""
    m = statistics.fmean(values)
    if len(values) < 2:
        return m, None, None
    h = t95(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return m, m - h, m + h


def welch_ci(a, b):
    """Mean of a - b with Welch's 95% interval."""
    d = statistics.fmean(a) - statistics.fmean(b)
    if len(a) < 2 or len(b) < 2:
        return d, None, None
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return d, d, d
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    h = t95(int(df)) * se
    return d, d - h, d + h


def cell_stats(rows):
    """Statistics of one (config, threads) cell from its measured rows."""
    samples, per_rep, user, sys_, tracer, walls = [], {}, [], [], [], []
    for r in rows:
        it, n = r["iterations"], r["threads"]
        thread_ns = [w / it for w in ints(r["thread_wall_ns"])]
        samples += thread_ns
        per_rep.setdefault(r["rep"], []).append(statistics.fmean(thread_ns))
        ev = it * n
        if r.get("thread_user_ns"):
            user.append(sum(ints(r["thread_user_ns"])) / ev)
            sys_.append(sum(ints(r["thread_sys_ns"])) / ev)
        tu, ts = num(r.get("tracer_user_ns")), num(r.get("tracer_sys_ns"))
        if tu is not None and ts is not None:
            tracer.append((tu + ts) / ev)
        w = num(r.get("wall_ns"))
        if w:
            walls.append(ev / (w / 1e9))
    per_rep = {k: statistics.fmean(v) for k, v in per_rep.items()}
    sd = statistics.stdev(samples) if len(samples) > 1 else 0.0
    mean = statistics.fmean(samples)
    return {
        "n_runs": len(rows), "n_samples": len(samples), "samples_ns": samples,
        "per_rep_ns": per_rep, "median_ns": statistics.median(samples), "mean_ns": mean,
        "min_ns": min(samples), "sd_ns": sd, "cv": sd / mean if mean else 0.0,
        "user_ns": statistics.fmean(user) if user else None,
        "sys_ns": statistics.fmean(sys_) if sys_ else None,
        "tracer_cpu_ns": statistics.fmean(tracer) if tracer else None,
        "events_per_s": statistics.fmean(walls) if walls else None,
    }


def overhead(cell, base):
    """Overhead per event of cell against base, and the slowdown."""
    common = sorted(set(cell["per_rep_ns"]) & set(base["per_rep_ns"]))
    if len(common) >= 2:
        d = [cell["per_rep_ns"][k] - base["per_rep_ns"][k] for k in common]
        m, lo, hi = mean_ci(d)
        ratios = [cell["per_rep_ns"][k] / base["per_rep_ns"][k] for k in common]
        x, xlo, xhi = mean_ci(ratios)
        method = f"paired t over {len(common)} repetitions"
    else:
        a, b = list(cell["per_rep_ns"].values()), list(base["per_rep_ns"].values())
        m, lo, hi = welch_ci(a, b)
        x = statistics.fmean(a) / statistics.fmean(b)
        xlo = xhi = None
        if lo is not None:
            xlo, xhi = (statistics.fmean(b) + lo) / statistics.fmean(b), \
                (statistics.fmean(b) + hi) / statistics.fmean(b)
        method = "Welch t (unpaired)" if lo is not None else "one run: no interval"
    return {
        "mean_ns": m, "lo_ns": lo, "hi_ns": hi, "method": method,
        "bounded": lo is not None and lo <= 0 <= hi,
        "median_ns": cell["median_ns"] - base["median_ns"],
        "min_ns": cell["min_ns"] - base["min_ns"],
        "slowdown_x": x, "slowdown_lo": xlo, "slowdown_hi": xhi,
    }


def analyse(rows, meta):
    ncpu = (meta or {}).get("cpus") or os.cpu_count() or 1
    cells, order = {}, []
    for r in rows:
        key = (r["config"], r["threads"])
        if r["config"] not in order:
            order.append(r["config"])
        cells.setdefault(key, []).append(r)
    out, skipped, failed = [], [], []
    for (config, threads), rs in cells.items():
        measured = [r for r in rs if r["status"] in MEASURED and (r["rep"] or 0) >= 1]
        for r in rs:
            if r["status"] == "skipped":
                skipped.append({"config": config, "threads": threads, "reason": r["reason"]})
            elif r["status"] == "failed":
                failed.append({"config": config, "threads": threads, "rep": r["rep"],
                               "reason": r["reason"]})
        if not measured:
            continue
        c = {"config": config, "threads": threads, "tracer": rs[0].get("tracer", ""),
             "runtime": next((r.get("runtime") for r in measured if r.get("runtime")), ""),
             "iterations": sorted({r["iterations"] for r in measured})}
        c.update(cell_stats(measured))
        c["check"] = event_check(measured)
        c["flags"] = []
        if c["check"]["verdict"] == "MISMATCH":
            c["flags"].append("EVENT MISMATCH: overhead not trustworthy")
        if c["cv"] > NOISY_CV and c["n_samples"] > 1:
            c["flags"].append(f"noisy (cv {c['cv']:.0%})")
        if threads > ncpu:
            c["flags"].append(f"time-sliced ({threads} threads > {ncpu} CPUs)")
        if any(r["status"] == "failed" for r in rs if (r["rep"] or 0) >= 1):
            c["flags"].append("some runs failed")
        out.append(c)
    rank = {name: i for i, name in enumerate(order)}
    out.sort(key=lambda c: (rank[c["config"]], c["threads"]))
    base = {c["threads"]: c for c in out if c["config"] == BASELINE}
    for c in out:
        b = base.get(c["threads"])
        c["overhead"] = overhead(c, b) if b and c["config"] != BASELINE else None
    scaling(out, ncpu)
    return {"cells": out, "skipped": dedup_skips(skipped), "failed": failed,
            "has_baseline": bool(base), "cpus": ncpu}


def dedup_skips(skipped):
    seen, out = set(), []
    for s in skipped:
        if s["config"] not in seen:
            seen.add(s["config"])
            out.append({"config": s["config"], "reason": s["reason"]})
    return out


def event_check(rows):
    exp = [num(r.get("events_expected")) for r in rows]
    seen = [num(r.get("events_seen")) for r in rows]
    dropped = sum(num(r.get("events_dropped")) or 0 for r in rows)
    statuses = {r["status"] for r in rows}
    if all(e is None for e in exp):
        verdict = "unverified" if "unverified" in statuses else "n/a"
    elif "mismatch" in statuses:
        verdict = "MISMATCH"
    elif "overwritten" in statuses:
        verdict = "overwritten"
    else:
        verdict = "ok"
    return {"expected": sum(e for e in exp if e is not None) if any(e is not None for e in exp)
            else None,
            "seen": sum(s for s in seen if s is not None) if any(s is not None for s in seen)
            else None,
            "dropped": dropped, "verdict": verdict}


def scaling(cells, ncpu):
    by_cfg = {}
    for c in cells:
        by_cfg.setdefault(c["config"], {})[c["threads"]] = c
    for cfg, byt in by_cfg.items():
        one = byt.get(1)
        for t, c in byt.items():
            eff = None
            if one and one["events_per_s"] and c["events_per_s"]:
                eff = c["events_per_s"] / one["events_per_s"] / min(t, ncpu)
            c["scaling"] = {"events_per_s": c["events_per_s"], "efficiency": eff,
                            "time_sliced": t > ncpu}


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
    if o["bounded"]:
        return f"< {f_ns(max(abs(o['lo_ns']), abs(o['hi_ns'])))}"
    return f"{f_ns(o['mean_ns'])} [{f_ns(o['lo_ns'])}, {f_ns(o['hi_ns'])}]"


def f_x(o):
    if not o:
        return "-"
    x = f"{o['slowdown_x']:.2f}"
    if o["slowdown_lo"] is not None:
        x += f" ±{(o['slowdown_hi'] - o['slowdown_lo']) / 2:.2f}"
    return x


def f_check(ch):
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


OVERHEAD_HEAD = ["config", "threads", "runs", "median [ns/event]", "min [ns/event]",
                 "overhead mean [ns/event] (95% CI)", "overhead median [ns/event]",
                 "slowdown [x]", "user [ns/event]", "sys [ns/event]", "tracer CPU [ns/event]",
                 "events seen/expected", "flags"]


def overhead_rows(a):
    return [[c["config"], c["threads"], c["n_runs"], f_ns(c["median_ns"]), f_ns(c["min_ns"]),
             f_overhead(c["overhead"]),
             f_ns(c["overhead"]["median_ns"]) if c["overhead"] else "-", f_x(c["overhead"]),
             f_ns(c["user_ns"]), f_ns(c["sys_ns"]), f_ns(c["tracer_cpu_ns"]),
             f_check(c["check"]), "; ".join(c["flags"])] for c in a["cells"]]


def scaling_rows(a):
    return [[c["config"], c["threads"],
             f"{c['scaling']['events_per_s'] / 1e6:.2f}" if c["scaling"]["events_per_s"] else "-",
             f"{c['scaling']['efficiency']:.0%}" if c["scaling"]["efficiency"] is not None
             else "-", "yes" if c["scaling"]["time_sliced"] else ""] for c in a["cells"]]


def y2011(a):
    """The 2011 figures beside today's: as ratios to the baseline, and as
    overhead per event (ratios alone mislead: the bare call got 20x faster)."""
    cells = {c["config"]: c for c in a["cells"] if c["threads"] == 1}
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


def markdown(a, meta, warnings, folder):
    env = meta or {}
    lines = [f"# Tracing overhead: {os.path.basename(os.path.normpath(folder))}", ""]
    lines += ["## Environment", ""]
    tools = env.get("tools") or {}
    for k in ("host", "cpu_model", "cpus", "kernel", "clocksource"):
        lines.append(f"- {k}: {env.get(k, 'unknown')}")
    if env.get("stap"):
        s = env["stap"]
        lines.append(f"- SystemTap runtime: {s.get('runtime')} ({s.get('why')}); "
                     f"flags: {s.get('flags')}")
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
    lines += ["", "## Overhead per event", "",
              "Per-event time is each thread's loop wall time / calls.  Overhead is against "
              "`baseline` at the same thread count, with a 95% interval; `< b` means the "
              "interval holds 0 (no overhead shown above b ns).", ""]
    if not a["has_baseline"]:
        lines += ["**No baseline rows: overheads cannot be computed.**", ""]
    lines.append(table(OVERHEAD_HEAD, overhead_rows(a)))
    lines += ["", "## Scaling with threads", "",
              "Total events per second; efficiency = (rate / rate at 1 thread) / "
              "min(threads, CPUs).", ""]
    lines.append(table(["config", "threads", "events [M/s]", "efficiency", "time-sliced"],
                       scaling_rows(a)))
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
    return "\n".join(lines) + "\n"


# -- plots ---------------------------------------------------------------------
def plots(a, folder):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"report: no plots: matplotlib cannot be imported by {sys.executable}; "
              "install Debian's python3-matplotlib and use /usr/bin/python3 (make report does)",
              file=sys.stderr)
        return []
    made = []
    cells = [c for c in a["cells"] if c["overhead"]]
    threads = sorted({c["threads"] for c in cells})
    if cells:
        names = [c for c in dict.fromkeys(c["config"] for c in cells)]
        fig, ax = plt.subplots(figsize=(10, 0.35 * len(names) + 1.5))
        h = 0.8 / max(1, len(threads))
        for j, t in enumerate(threads):
            by = {c["config"]: c for c in cells if c["threads"] == t}
            shown = [(i, by[n]["overhead"]) for i, n in enumerate(names) if n in by]
            # An overhead whose interval holds 0 gets no bar, only its bound.
            bars = [(i, o) for i, o in shown if not o["bounded"] and o["mean_ns"] > 0]
            ax.barh([i + j * h for i, _ in bars], [o["mean_ns"] for _, o in bars], height=h,
                    label=f"{t} thread(s)")
            for i, o in shown:
                if (i, o) not in bars:
                    ax.text(0, i + j * h, f" {f_overhead(o)} ns", va="center", fontsize=7,
                            transform=ax.get_yaxis_transform())
        ax.set_yticks([i + h * (len(threads) - 1) / 2 for i in range(len(names))])
        ax.set_yticklabels(names)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("overhead per event [ns/event] (mean, log scale)")
        ax.legend()
        ax.set_title("Overhead per event by configuration")
        fig.tight_layout()
        made.append(save(fig, folder, "overhead_by_config.png"))
        fig, ax = plt.subplots(figsize=(11, 6))
        for n in names:
            pts = sorted((c["threads"], c["overhead"]["mean_ns"]) for c in cells
                         if c["config"] == n)
            if len(pts) > 1 and all(y > 0 for _, y in pts):
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=n)
        ax.set_yscale("log")
        ax.set_xlabel("threads")
        ax.set_ylabel("overhead per event [ns/event]")
        ax.set_xticks(threads)
        ax.set_title("Overhead per event against threads")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
        fig.tight_layout()
        made.append(save(fig, folder, "overhead_vs_threads.png"))
    one = [c for c in a["cells"] if c["threads"] == min(threads or [1]) and c["user_ns"]
           is not None]
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
    return made


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
            vals.append(c["overhead"]["mean_ns"] if c and c["overhead"] else
                        c["median_ns"] if c and k[0] == BASELINE else None)
        row = [k[0], k[1]] + [f_ns(v) for v in vals]
        for v in vals[1:]:
            row.append(f"{v / vals[0]:.2f}" if v is not None and vals[0] else "-")
        rows.append(row)
    head = ["config", "threads"] + [f"{n} [ns/event]" for n in names] + \
        [f"{n} / {names[0]}" for n in names[1:]]
    return head, rows


def to_json(a, meta, warnings):
    return {"environment": meta, "warnings": warnings, **a}


def main(argv):
    folders = argv or [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "results", "latest")]
    results, status = [], 0
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
        a = analyse(rows, meta)
        if not a["has_baseline"]:
            print(f"report: {folder}: no baseline rows; overheads are not computed",
                  file=sys.stderr)
        results.append((folder, a))
        md = markdown(a, meta, warnings, folder)
        with open(os.path.join(folder, "report.md"), "w") as f:
            f.write(md)
        with open(os.path.join(folder, "report.json"), "w") as f:
            json.dump(to_json(a, meta, warnings), f, indent=1, sort_keys=True)
            f.write("\n")
        made = plots(a, folder)
        print(f"\n== {folder}\n")
        print(table(OVERHEAD_HEAD, overhead_rows(a)))
        print()
        print(table(Y2011_HEAD, y2011(a)))
        for s in a["skipped"]:
            print(f"skipped {s['config']}: {s['reason']}")
        print(f"\nreport: wrote {os.path.join(folder, 'report.md')}, report.json"
              + (f" and {len(made)} plots" if made else ""))
    if len(results) > 1:
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
