"""plots.py: the report's PNG plots, one per question, each carrying the
verdicts: what each configuration costs (overhead_by_config.png), how that
grows with threads (overhead_vs_threads.png), what each probe site costs
and whether it is safe (probe_sites.png), where the CPU goes
(user_sys_split.png) and, for paced runs, CPU against the event rate
(paced_cpu.png).  A corrupted, never-firing or miscounted cell is never
drawn as an ordinary bar: it is hatched or hollow and labelled, and a
failed or skipped one is named in words.  Needs matplotlib (Debian's
python3-matplotlib); report.py calls it.
"""
import math
import os

import kernel
import configs
import workloads
from stats import config_rank
from render.formats import f_ns, f_overhead, normalise, undetectable

PACED_FLOOR = 1e-2  # % of a CPU: where a paced plot puts overheads at or below 0
LABEL_PX = 10  # pixels: the least distance between two line labels


def short(reason, n=48):
    reason = normalise(reason)
    return reason if len(reason) <= n else reason[:n - 1] + "…"


def kind(c):
    """How a cell is drawn: `bar` (a cost to read), `UNSAFE` (the probe
    corrupted the program), `NEVER FIRES` (attached, saw nothing),
    `MISMATCH` or `DROPPED` (events lost or miscounted), `none detectable`
    (the interval holds 0), `failed` (no figure)."""
    if not c["n_runs"]:
        return "failed"
    v = (c.get("check") or {}).get("verdict")
    if c["corrupted"]:
        return "UNSAFE"
    if (c.get("check") or {}).get("seen") == 0 and (c.get("check") or {}).get("expected"):
        return "NEVER FIRES"
    if v in ("MISMATCH", "DROPPED"):
        return v
    o = c.get("overhead")
    if o and (undetectable(o) or o["mean_ns"] <= 0):
        return "none detectable"
    return "bar" if o else "none"


def label(c, k):
    """The words beside a cell that is not an ordinary bar."""
    ch = c.get("check") or {}
    t = f"{c['threads']} thr"
    if k == "failed":
        return f"{t}: all {c['n_timed']} runs failed: {short('; '.join(c['failed_reasons']))}"
    if k == "UNSAFE":
        return f"{t}: UNSAFE, {c['corrupted']:,}/{c['calls']:,} calls corrupted"
    if k == "NEVER FIRES":
        return f"{t}: NEVER FIRES (0 of {ch['expected']:,} events)"
    if k in ("MISMATCH", "DROPPED"):
        return f"{t}: {k} {ch['seen']:,}/{ch['expected']:,} events, cost not quoted"
    if k == "none detectable":
        return f"{t}: none detectable: {f_overhead(c['overhead'])} ns"
    return ""


def plots(a, folder, p=None):
    """Draws every plot the data allows into FOLDER; returns (paths,
    {plot name: {(config, threads): how the cell was drawn}})."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None, {}
    made, drawn = [], {}
    cells = [c for c in a["cells"] if not configs.is_baseline(c["config"])]
    threads = sorted({c["threads"] for c in a["cells"]})
    if cells and a["has_baseline"]:
        for fn in (plot_by_config, plot_vs_threads, plot_sites):
            path, how = fn(plt, a, cells, threads, folder)
            if path:
                made.append(path)
                drawn[os.path.basename(path)] = how
    if any(configs.real(c["config"]) and c["n_runs"] for c in a["cells"]):
        made.append(plot_throughput(plt, a, folder))
    one = [c for c in a["cells"] if c["threads"] == min(threads or [1]) and c["n_runs"]
           and c["user_ns"] is not None]
    if one:
        made.append(plot_user_sys(plt, one, folder))
    if p and any(c["over_machine_pct"] is not None for c in p["cells"]):
        made.append(plot_paced(plt, p, folder))
    return made, drawn


def plot_by_config(plt, a, cells, threads, folder):
    """(One function for one figure, axes to legend, read together.)  One
    bar per configuration and thread count, in the table's order, with its
    95% interval; verdict cells hatched or hollow and labelled; a cell
    with no bar says why in words."""
    skipped = {s["config"]: s["reason"] for s in a["skipped"]}
    names = list(dict.fromkeys([c["config"] for c in cells] + list(skipped)))
    rank = config_rank(names)
    names.sort(key=rank.get)
    fig, ax = plt.subplots(figsize=(12, 0.4 * len(names) * max(1, len(threads)) ** 0.5 + 1.8))
    h = 0.8 / max(1, len(threads))
    drawn = {}
    for j, t in enumerate(threads):
        by = {c["config"]: c for c in cells if c["threads"] == t}
        bars, texts = [], []
        for i, n in enumerate(names):
            y, c = i + j * h, by.get(n)
            if c is None:
                if n in skipped and j == 0:
                    texts.append((y, f"skipped: {short(skipped[n])}", None))
                    drawn[(n, None)] = "skipped"
                continue
            k, o = kind(c), c.get("overhead")
            if k in ("bar", "UNSAFE", "MISMATCH", "DROPPED") and o and o["mean_ns"] > 0:
                bars.append((y, o, k, n))
            if k not in ("bar", "UNSAFE", "MISMATCH", "DROPPED") or not o or o["mean_ns"] <= 0:
                drawn[(n, t)] = f"words: {label(c, k)}"
                texts.append((y, label(c, k), None))
            elif k != "bar":  # the words after the bar's end
                texts.append((y, label(c, k), o["mean_ns"] * 1.15))
        # What each cell became is recorded where it is drawn (tests read it).
        normal = [(y, o, n) for y, o, k, n in bars if k == "bar"]
        if normal:
            means = [o["mean_ns"] for _, o, _ in normal]
            # Whiskers: the 95% interval, its lower end kept on the log axis.
            lo = [m - max(o["lo_ns"], m * 1e-3) if o["lo_ns"] is not None else 0
                  for m, (_, o, _) in zip(means, normal)]
            hi = [o["hi_ns"] - m if o["hi_ns"] is not None else 0
                  for m, (_, o, _) in zip(means, normal)]
            ax.barh([y for y, _, _ in normal], means, height=h, xerr=[lo, hi], capsize=2,
                    label=f"{t} thread(s)", color=f"C{j}")
            drawn.update({(n, t): "bar" for _, _, n in normal})
        for y, o, k, n in bars:
            if k == "UNSAFE":  # red hatch: the program's data were overwritten
                ax.barh(y, o["mean_ns"], height=h, color="none", edgecolor="red", hatch="xx")
                drawn[(n, t)] = f"red hatch: {label(by[n], k)}"
            elif k != "bar":  # hollow: events lost or miscounted, the cost not a cost
                ax.barh(y, o["mean_ns"], height=h, color="none", edgecolor=f"C{j}", hatch="..",
                        ls="--")
                drawn[(n, t)] = f"hollow: {label(by[n], k)}"
        for y, text, x in texts:
            ax.text(0.005 if x is None else x, y, " " + text, va="center", fontsize=7,
                    color="red" if "UNSAFE" in text or "NEVER" in text else "0.25",
                    transform=ax.get_yaxis_transform() if x is None else ax.transData)
    ax.set_yticks([i + h * (len(threads) - 1) / 2 for i in range(len(names))])
    ax.set_yticklabels(names, fontsize=8)
    ax.set_ylim(len(names) - 0.1, -0.5)  # top to bottom, room for the first row's words
    ax.set_xscale("log")
    ax.set_xlabel("overhead per event [ns/event] (mean, 95% interval; log scale).  "
                  "Red hatch: UNSAFE (corrupted); dotted hollow: events lost or miscounted")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title("What each configuration costs per event (table order, baselines first)")
    fig.tight_layout()
    return save(fig, folder, "overhead_by_config.png"), drawn


def spread(ys, gap, top=None):
    """Label heights for points at YS on a log axis, moved apart so that
    no two are closer than GAP decades, in the points' order, and moved
    down together where the highest would pass TOP (a log10)."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    out = [0.0] * len(ys)
    last = None
    for i in order:
        v = math.log10(ys[i])
        v = v if last is None or v - last >= gap else last + gap
        out[i] = last = v
    over = max(out) - top if top is not None and out else 0
    return [10 ** (v - max(over, 0)) for v in out]


def plot_vs_threads(plt, a, cells, threads, folder):
    """(One function for one figure, axes to legend, read together.)  One
    panel per tracer, a line per configuration with 95% whiskers,
    labelled at its end (labels moved apart, never on one another);
    verdict cells are red crosses with their word, not points on a line."""
    if len(threads) < 2:
        return None, {}
    tracers = list(dict.fromkeys(c["tracer"] or "?" for c in cells))
    cols = min(3, len(tracers))
    rows_n = (len(tracers) + cols - 1) // cols
    fig, axes = plt.subplots(rows_n, cols, figsize=(4.6 * cols, 3.4 * rows_n), squeeze=False)
    drawn = {}
    for k, tr in enumerate(tracers):
        ax = axes[k // cols][k % cols]
        ends, silent = [], {}
        for i, n in enumerate(dict.fromkeys(c["config"] for c in cells if c["tracer"] == tr)):
            mine = sorted((c for c in cells if c["config"] == n), key=lambda c: c["threads"])
            good = []
            for c in mine:
                drawn[(n, c["threads"])] = how = kind(c)
                o = c.get("overhead")
                if how == "bar":
                    good.append(c)
                elif how == "NEVER FIRES":  # its time is no cost: named, not drawn
                    silent.setdefault(n, []).append(c["threads"])
                elif o and o["mean_ns"] > 0 and how not in ("none detectable", "failed"):
                    ax.plot([c["threads"]], [o["mean_ns"]], "x", color="red", ms=8)
                    ax.annotate(how, (c["threads"], o["mean_ns"]), textcoords="offset points",
                                xytext=(5, -9), fontsize=6, color="red")
            if not good:
                continue
            xs = [c["threads"] for c in good]
            ms = [c["overhead"]["mean_ns"] for c in good]
            err = [[m - max(c["overhead"]["lo_ns"], m * 1e-3) if c["overhead"]["lo_ns"] is not None
                    else 0 for m, c in zip(ms, good)],
                   [c["overhead"]["hi_ns"] - m if c["overhead"]["hi_ns"] is not None else 0
                    for m, c in zip(ms, good)]]
            ax.errorbar(xs, ms, yerr=err, marker="o", ms=3, capsize=3, color=f"C{i}")
            ends.append((xs[-1], ms[-1], n, f"C{i}"))
        if silent:
            ax.text(0.02, 0.02, "NEVER FIRES:\n" + "\n".join(
                f"{n} ({spans(ts)})" for n, ts in silent.items()), fontsize=6, color="red",
                transform=ax.transAxes, va="bottom")
        ax.set_yscale("log")
        lo, hi = (math.log10(v) for v in ax.get_ylim())
        px = ax.get_window_extent().height or 1
        for (x, y, n, col), ly in zip(ends, spread([e[1] for e in ends],
                                                   (hi - lo) * LABEL_PX / px, hi)):
            ax.annotate(n, (x, y), xytext=(x + 0.15, ly), fontsize=6.5, va="center", color=col,
                        arrowprops={"arrowstyle": "-", "color": col, "lw": 0.5},
                        annotation_clip=False)
        ax.set_title(tr, fontsize=9)
        ax.set_yscale("log")
        ax.set_xticks(threads)
        ax.set_xlim(min(threads) - 0.3, max(threads) + 0.3 + 0.7 * len(threads))
        ax.set_xlabel("threads", fontsize=8)
        ax.set_ylabel("overhead [ns/event]", fontsize=8)
        ax.tick_params(which="both", labelsize=7)
    for k in range(len(tracers), rows_n * cols):
        axes[k // cols][k % cols].axis("off")
    fig.suptitle("Overhead per event against threads, by tracer (mean, 95% interval; log scale;"
                 " red x: a verdict, not a cost)")
    fig.tight_layout()
    return save(fig, folder, "overhead_vs_threads.png"), drawn


def plot_throughput(plt, a, folder):
    """Each real program's throughput against its threads (Python's threads,
    pgbench's clients, copies of a user's command), a line per configuration,
    its untraced baseline first: THREADS calls over a thread's wall time a
    call (the threads take turns, so that is the whole program's), in its
    own calls a second (transactions for pgbench)."""
    fams = list(dict.fromkeys(configs.BY_NAME[c["config"]].workload for c in a["cells"]
                              if configs.real(c["config"]) and c["n_runs"]))
    fig, axes = plt.subplots(1, len(fams), figsize=(5.2 * len(fams), 3.6), squeeze=False)
    for ax, fam in zip(axes[0], fams):
        w = workloads.get(fam)
        mine = [c for c in a["cells"] if configs.real(c["config"]) and c["n_runs"]
                and configs.BY_NAME[c["config"]].workload == fam and c.get("mean_ns")]
        for i, n in enumerate(dict.fromkeys(c["config"] for c in mine)):
            line = sorted((c for c in mine if c["config"] == n), key=lambda c: c["threads"])
            ax.plot([c["threads"] for c in line],
                    [c["threads"] * 1e9 / c["mean_ns"] for c in line], marker="o", ms=3,
                    color=f"C{i}", label=n, ls="--" if configs.is_baseline(n) else "-")
        ax.set_yscale("log")
        ax.set_xticks(sorted({c["threads"] for c in mine}))
        ax.set_xlabel({"postgres": "pgbench clients"}.get(fam, "threads"), fontsize=8)
        ax.set_ylabel(f"{w.call}s per second (log)", fontsize=8)
        ax.set_title(f"{fam}: {w.threads_are or 'threads'}", fontsize=8)
        ax.tick_params(which="both", labelsize=7)
        ax.legend(fontsize=6)
    fig.suptitle("Real programs: throughput against threads\nuntraced (dashed) and traced",
                 fontsize=9)
    fig.tight_layout()
    return save(fig, folder, "real_throughput.png")


def spans(nums):
    """Whole numbers as runs: [1, 2, 3, 5] -> '1-3, 5'."""
    out, nums = [], sorted(nums)
    for x in nums:
        if out and x == out[-1][1] + 1:
            out[-1][1] = x
        else:
            out.append([x, x])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in out)


def plot_sites(plt, a, cells, threads, folder):
    """Probe sites, cost against safety: per site (the canary builds), a
    bar per tracer at the fewest threads, green where safe, red hatch
    and UNSAFE where the canary caught a write, the words NEVER FIRES
    (or REFUSED, CRASHES) where the probe saw nothing.  Probes attached
    before the target started only: the other orders are the report's
    table."""
    sites = [s for s in a.get("sites", []) if s["threads"] == min(threads)
             and s["build"].endswith("-canary") and (s.get("attach") or "before") == "before"]
    if not sites:
        return None, {}
    names = list(dict.fromkeys(kernel.site_name(s["build"]) for s in sites))
    tracers = list(dict.fromkeys(s["tracer"] for s in sites))
    fig, ax = plt.subplots(figsize=(max(7, 1.8 * len(names) * len(tracers) ** 0.5), 4.8))
    w = 0.8 / len(tracers)
    drawn = {}
    for j, tr in enumerate(tracers):
        for i, n in enumerate(names):
            s = next((s for s in sites if s["tracer"] == tr
                      and kernel.site_name(s["build"]) == n), None)
            if s is None:
                continue
            x = i + (j - (len(tracers) - 1) / 2) * w
            key, v = (s["config"], s["threads"]), s["verdict"] or "safe"
            if v not in ("safe", "UNSAFE") or not s["ns_per_event"] or s["ns_per_event"] <= 0:
                words = v if v not in ("safe", "UNSAFE") else "no cost measured"
                ax.text(x, 0.02, words, rotation=90, ha="center", va="bottom", fontsize=7,
                        color="red" if v != "safe" else "0.3", transform=ax.get_xaxis_transform())
                drawn[key] = f"words: {words}"
                continue
            unsafe = v == "UNSAFE"
            drawn[key] = "red hatch: UNSAFE" if unsafe else "bar"
            ax.bar(x, s["ns_per_event"], width=w, color="none" if unsafe else f"C{j}",
                   edgecolor="red" if unsafe else f"C{j}", hatch="xx" if unsafe else None)
            ax.annotate("UNSAFE" if unsafe else f_ns(s["ns_per_event"]), (x, s["ns_per_event"]),
                        ha="center", va="bottom", fontsize=6.5,
                        color="red" if unsafe else "0.2", xytext=(0, 2),
                        textcoords="offset points")
    for j, tr in enumerate(tracers):
        ax.bar([0], [0], color=f"C{j}", label=tr)
    ax.bar([0], [0], color="none", edgecolor="red", hatch="xx", label="UNSAFE (corrupted)")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names)
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_yscale("log")
    ax.set_ylabel("overhead [ns/event] (log)")
    ax.set_title(f"Probe sites: cost and safety on this kernel ({min(threads)} thread(s), "
                 "red-zone canary)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return save(fig, folder, "probe_sites.png"), drawn


def plot_user_sys(plt, one, folder):
    fig, ax = plt.subplots(figsize=(10, 0.35 * len(one) + 1.5))
    # Side by side, not stacked: a stack misleads on a log axis.
    ys = list(range(len(one)))
    ax.barh([y - 0.2 for y in ys], [max(c["user_ns"], 1e-3) for c in one], height=0.4,
            label="user")
    ax.barh([y + 0.2 for y in ys], [max(c["sys_ns"], 1e-3) for c in one], height=0.4,
            label="system")
    ax.set_yticks(ys)
    ax.set_yticklabels([c["config"] for c in one], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(left=0.1)
    ax.set_xlabel(f"CPU per event [ns/event] at {one[0]['threads']} thread(s) (log scale)")
    ax.set_title("Where the time goes: user and system CPU per event")
    ax.legend()
    fig.tight_layout()
    return save(fig, folder, "user_sys_split.png")


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


def plot_fleet(folder, by_host, units, cheapest):
    """fleet_cost_<unit>.png: each tracer's cheapest configuration at 1
    thread (CHEAPEST: [(tracer, config)]), a bar per host with its 95%
    interval (BY_HOST: {host: {(config, threads): cell}}), one plot per
    unit (UNITS: {host: unit}): ns and instructions never share axes.  The
    paths drawn ([] without matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    made = []
    for unit in sorted(set(units.values())):
        hosts = [h for h in by_host if units[h] == unit]
        rows = [(t, c) for t, c in cheapest if any(by_host[h].get((c, 1)) for h in hosts)]
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(rows) * len(hosts) / 2 + 3), 4.5))
        width = 0.8 / len(hosts)
        for k, h in enumerate(hosts):
            xs, ys, err = [], [], [[], []]
            for i, (_, c) in enumerate(rows):
                o = (by_host[h].get((c, 1)) or {}).get("overhead")
                if not o:
                    continue
                xs.append(i + (k - (len(hosts) - 1) / 2) * width)
                ys.append(o["mean_ns"])
                lo, hi = o.get("lo_ns"), o.get("hi_ns")
                err[0].append(o["mean_ns"] - lo if lo is not None else 0)
                err[1].append(hi - o["mean_ns"] if hi is not None else 0)
            ax.bar(xs, ys, width, yerr=err, capsize=3, label=h)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([f"{t}\n{c}" for t, c in rows], fontsize=8)
        ax.set_ylabel(f"overhead per event [{unit}], 1 thread")
        ax.set_title("each tracer's cheapest configuration, by host (95% intervals where a "
                     "cell has one)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        made.append(save(fig, folder, f"fleet_cost_{unit}.png"))
    return made


def save(fig, folder, name):
    import matplotlib.pyplot as plt
    path = os.path.join(folder, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
