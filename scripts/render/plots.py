"""plots.py: the report's PNG plots, one per question, each carrying the
verdicts: what each configuration costs (overhead_by_config.png), how that
grows with threads (overhead_vs_threads.png), what each probe site costs
and whether it is safe (probe_sites.png), where the CPU goes
(user_sys_split.png) and, for paced runs, CPU against the event rate
(paced_cpu.png).  A corrupted, never-firing or miscounted cell is never
drawn as an ordinary bar: it is hatched or hollow and labelled, and a
failed or skipped one is named in words.  However many configurations and
thread counts, no figure is taller than layout.MAX_IN (rows thin, then
panels go side by side), and layout.save() says on stderr where two texts
overlap.  Needs
matplotlib (Debian's python3-matplotlib); report.py calls it.
"""
import math
import os
import textwrap

import kernel
from kernel import NEVER_FIRES
import configs
import kin
import workloads
from stats import config_rank
from render.bodies import plot_bodies
from render.formats import f_ns, f_overhead, normalise, undetectable
from render.layout import DPI, panel_grid, place, rows_grid, save, spans, whiskers

PACED_FLOOR = 1e-2  # % of a CPU: where a paced plot puts overheads at or below 0
LINES = 7  # lines a panel of overhead_vs_threads.png at most, so that their names fit beside it
VERDICTS = ("UNSAFE", NEVER_FIRES, "MISMATCH", "DROPPED", "failed")  # kind()'s, not a cost


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
    if v == NEVER_FIRES or (c.get("check") or {}).get("seen") == 0 \
            and (c.get("check") or {}).get("expected"):  # (a real program's: expected 0)
        return NEVER_FIRES
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
    if k == NEVER_FIRES:
        return (f"{t}: NEVER FIRES (0 of {ch['expected']:,} events)" if ch.get("expected")
                else f"{t}: NEVER FIRES (0 events in {c['calls']:,} calls)")
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
    matplotlib.rcParams["figure.dpi"] = DPI  # what the layout measures is what save() writes
    made, drawn = [], {}
    cells = [c for c in a["cells"] if not kin.is_baseline(c["config"])]
    threads = sorted({c["threads"] for c in a["cells"]})
    if cells and a["has_baseline"]:
        for fn in (plot_by_config, plot_vs_threads, plot_sites):
            path, how = fn(plt, a, cells, threads, folder)
            if path:
                made.append(path)
                drawn[os.path.basename(path)] = how
    if any(kin.real(c["config"]) and c["n_runs"] for c in a["cells"]):
        made.append(plot_throughput(plt, a, folder))
    if a["has_baseline"]:
        path, how = plot_bodies(plt, a, folder)
        if path:
            made.append(path)
            drawn[os.path.basename(path)] = how
    one = [c for c in a["cells"] if c["threads"] == min(threads or [1]) and c["n_runs"]
           and c["user_ns"] is not None]
    if one:
        made.append(plot_user_sys(plt, one, folder))
    if p and any(c["over_machine_pct"] is not None for c in p["cells"]):
        made.append(plot_paced(plt, p, folder))
    return made, drawn


def plot_by_config(plt, a, cells, threads, folder):
    """(One function for one figure, axes to legend, read together.)  One
    row per configuration, in the table's order, at the fewest threads (a
    row per cell once made it 8,536 px tall): a bar with its 95% interval,
    or a verdict cell hatched or hollow and labelled, or words saying why
    there is no bar; right of the axes, the verdicts it has at other thread
    counts, whose costs are in overhead_vs_threads.png and the tables."""
    skipped = {s["config"]: s["reason"] for s in a["skipped"]}
    names = list(dict.fromkeys([c["config"] for c in cells] + list(skipped)))
    rank = config_rank(names)
    names.sort(key=rank.get)
    by = {}
    for c in cells:
        by.setdefault(c["config"], {})[c["threads"]] = c
    cols, per, height = rows_grid(len(names), 0.4, 2.0)
    fig, axes = plt.subplots(1, cols, figsize=(12 if cols == 1 else 11 * cols, height),
                             sharex=True, squeeze=False)
    drawn, inside = {}, []
    for k, ax in enumerate(axes[0]):
        mine = names[k * per:(k + 1) * per]
        for y, n in enumerate(mine):
            inside += config_row(ax, y, n, by.get(n, {}), threads[0], skipped, drawn)
        ax.set_yticks(range(len(mine)))
        ax.set_yticklabels(mine, fontsize=8)
        ax.set_ylim(per - 0.5, -0.5)  # top to bottom, every panel's rows alike
        ax.set_xscale("log")
        ax.set_xlabel("overhead per event [ns/event] (mean, 95% interval; log scale)\nred hatch: "
                      "UNSAFE (corrupted); dotted hollow: events lost or miscounted", fontsize=8)
    others = ("; other thread counts: overhead_vs_threads.png and the tables, their verdicts "
              "right of the rows" if len(threads) > 1 else "")
    fig.suptitle(f"What each configuration costs per event at {threads[0]} thread(s)\n(table "
                 f"order, baselines first{others})", fontsize=10, y=0.995)
    fig.tight_layout()
    r = fig.canvas.get_renderer()
    for t in inside:  # kept inside: right of the axes are the other thread counts' words
        edge = t.axes.get_window_extent(r).x1
        if t.get_window_extent(r).x1 > edge and t.get_transform() is t.axes.transData:
            t.set_x(0.005)  # after its bar's end it would not fit: on the (hollow) bar
            t.set_transform(t.axes.get_yaxis_transform())
            t.set_bbox({"fc": "white", "ec": "none", "alpha": 0.8, "pad": 0.5})
        while t.get_window_extent(r).x1 > edge and len(t.get_text()) > 24:
            t.set_text(t.get_text()[:-5] + "…")  # its verdict first: the reason's end goes
    return save(fig, folder, "overhead_by_config.png"), drawn


def config_row(ax, y, n, mine, t0, skipped, drawn):
    """Row Y of overhead_by_config.png: configuration N's cell at T0
    threads (MINE: {threads: cell}), and its verdicts at the others in
    words.  Records how each cell was drawn (report.json, tests); the
    words drawn inside the axes, to be fitted once the layout is."""
    c, inside, words = mine.get(t0), [], None
    k, o = (kind(c), c.get("overhead")) if c else (None, None)
    if c is None:
        words = f"skipped: {short(skipped[n])}" if n in skipped else f"not run at {t0} thr"
        if n in skipped:
            drawn[(n, None)] = "skipped"
    elif k not in ("bar", "UNSAFE", "MISMATCH", "DROPPED") or not o or o["mean_ns"] <= 0:
        words = label(c, k)
        drawn[(n, t0)] = f"words: {words}"
    elif k == "bar":
        ax.barh(y, o["mean_ns"], height=0.7, xerr=whiskers([o]), capsize=2, color="C0")
        drawn[(n, t0)] = "bar"
    else:  # red hatch: the program's data were overwritten; hollow: events lost or miscounted
        unsafe = k == "UNSAFE"
        ax.barh(y, o["mean_ns"], height=0.7, color="none", edgecolor="red" if unsafe else "C0",
                hatch="xx" if unsafe else "..", ls="-" if unsafe else "--")
        drawn[(n, t0)] = f"{'red hatch' if unsafe else 'hollow'}: {label(c, k)}"
        inside.append(ax.text(o["mean_ns"] * 1.15, y, " " + label(c, k), va="center", fontsize=7,
                              color="red" if unsafe else "0.25"))
    if words is not None:
        inside.append(ax.text(0.005, y, " " + words, va="center", fontsize=7,
                              transform=ax.get_yaxis_transform(),
                              color="red" if "UNSAFE" in words or "NEVER" in words else "0.25"))
    verdicts = {}
    for t, c in sorted(mine.items()):
        if t != t0 and kind(c) in VERDICTS:
            verdicts.setdefault(kind(c), []).append(t)
    said = {k: f"at {short(spans(ts), 20)} thr: {k}" for k, ts in verdicts.items()}
    for t, c in mine.items():
        if t != t0:
            drawn[(n, t)] = (f"words: {said[kind(c)]}" if kind(c) in said
                             else "in overhead_vs_threads.png" if kind(c) == "bar"
                             else f"in the tables: {kind(c)}")
    if said:
        words = "; ".join(said.values())
        ax.text(1.01, y, words, va="center", fontsize=7, transform=ax.get_yaxis_transform(),
                color="red" if "UNSAFE" in words or "NEVER" in words else "0.25")
    return inside


def plot_vs_threads(plt, a, cells, threads, folder):
    """(One function for one figure, axes to legend, read together.)  A
    line per configuration with 95% whiskers, at most LINES to a panel (a
    tracer with more gets several), each named once right of its panel,
    the names moved apart by their own height once the layout is fixed;
    verdict cells are red crosses, their words in the name ("name: UNSAFE
    (1-2)"); one with no point (NEVER FIRES, failed) named at the bottom."""
    if len(threads) < 2:
        return None, {}
    drawn = {(c["config"], c["threads"]): kind(c) for c in cells}
    by = {}
    for c in sorted(cells, key=lambda c: c["threads"]):
        by.setdefault(c["tracer"] or "?", {}).setdefault(c["config"], []).append(c)
    panels = []
    for tr, lines in by.items():
        shown = [cs for cs in lines.values() if {kind(c) for c in cs} & {"bar", *VERDICTS}]
        parts = [shown[i:i + LINES] for i in range(0, len(shown), LINES)]
        panels += [(tr if len(parts) == 1 else f"{tr} ({i + 1}/{len(parts)})", p)
                   for i, p in enumerate(parts)]
    if not panels:
        return None, {}
    cols, rows_n, height = panel_grid(len(panels))
    fig, axes = plt.subplots(rows_n, cols, figsize=(5.4 * cols, height), squeeze=False)
    named = []
    for ax, (title, lines) in zip(axes.flat, panels):
        names = [line(ax, f"C{i}", cs, drawn) for i, cs in enumerate(lines)]
        ax.set_title(title, fontsize=9)
        ax.set_yscale("log")
        ax.set_xticks(threads[::math.ceil(len(threads) / 12)])  # 12 fit a panel's width
        ax.set_xlim(min(threads) - 0.3, max(threads) + 0.3)
        ax.set_xlabel("threads", fontsize=8)
        ax.set_ylabel("overhead [ns/event]", fontsize=8)
        ax.tick_params(which="both", labelsize=7)
        # Right of the panel, joined to its point; where only after the layout (place()).
        named.append((ax, [(ax.annotate(
            text, xy or (1.03, 0), xycoords="data" if xy else "axes fraction", xytext=(1.03, 0),
            textcoords="axes fraction", fontsize=6.5, va="center", color=col,
            arrowprops={"arrowstyle": "-", "color": col, "lw": 0.5} if xy else None,
            annotation_clip=False), xy) for text, xy, col in names]))
    for ax in axes.flat[len(panels):]:
        fig.delaxes(ax)
    fig.suptitle("Overhead per event against threads, by tracer (mean, 95% interval; log scale;"
                 " red x: a verdict, not a cost)", y=0.995)
    for fixed in (False, True):  # the names' widths shape the layout, the layout their places
        if fixed:
            fig.tight_layout()
        r = fig.canvas.get_renderer()
        for ax, anns in named:
            place(ax, anns, r)
    return save(fig, folder, "overhead_vs_threads.png"), drawn


def line(ax, col, cs, drawn):
    """Configuration CS's line (its cells by threads) on AX in COL, its
    verdicts red crosses, recorded in DRAWN as named; (its name with its
    verdicts, the point to name, or None, and the name's colour)."""
    good = [c for c in cs if kind(c) == "bar"]
    crosses, verdicts = [], {}
    for c in cs:
        o, k = c.get("overhead"), kind(c)
        if k in VERDICTS:
            verdicts.setdefault(k, []).append(c["threads"])
            if o and o["mean_ns"] > 0 and k not in (NEVER_FIRES, "failed"):  # no cost seen
                crosses.append((c["threads"], o["mean_ns"]))
    if crosses:
        ax.plot(*zip(*crosses), "x", color="red", ms=8)
    if good:
        ax.errorbar([c["threads"] for c in good], [c["overhead"]["mean_ns"] for c in good],
                    yerr=whiskers([c["overhead"] for c in good]), marker="o", ms=3, capsize=3,
                    color=col)
    words = "; ".join(f"{k} ({spans(ts)})" for k, ts in verdicts.items())
    name = cs[0]["config"]
    if words:  # two lines at most: a wide name squeezes the panel; the rest is in the tables
        name += (": " + words if len(name + words) < 36 else
                 ":\n" + "\n".join(textwrap.wrap(words, 40, max_lines=2, placeholder=" …")))
    xy = ((good[-1]["threads"], good[-1]["overhead"]["mean_ns"]) if good
          else crosses[-1] if crosses else None)
    crossed, said = {t for t, _ in crosses}, " ".join(name.split())
    for c in cs:
        if kind(c) in verdicts:
            drawn[(c["config"], c["threads"])] = (
                f"{'red x' if c['threads'] in crossed else 'no point'}, named: {said}")
    return name, xy, col if good else "red" if set(verdicts) - {"failed"} else "0.3"


def plot_throughput(plt, a, folder):
    """Each real program's throughput against its threads (Python's threads,
    pgbench's clients, copies of a user's command), a line per configuration,
    its untraced baseline first: THREADS calls over a thread's wall time a
    call (the threads take turns, so that is the whole program's), in its
    own calls a second (transactions for pgbench)."""
    fams = list(dict.fromkeys(configs.BY_NAME[c["config"]].workload for c in a["cells"]
                              if kin.real(c["config"]) and c["n_runs"]))
    fig, axes = plt.subplots(1, len(fams), figsize=(5.2 * len(fams), 3.6), squeeze=False)
    for ax, fam in zip(axes[0], fams):
        w = workloads.get(fam)
        mine = [c for c in a["cells"] if kin.real(c["config"]) and c["n_runs"]
                and configs.BY_NAME[c["config"]].workload == fam and c.get("mean_ns")]
        for i, n in enumerate(dict.fromkeys(c["config"] for c in mine)):
            line = sorted((c for c in mine if c["config"] == n), key=lambda c: c["threads"])
            ax.plot([c["threads"] for c in line],
                    [c["threads"] * 1e9 / c["mean_ns"] for c in line], marker="o", ms=3,
                    color=f"C{i}", label=n, ls="--" if kin.is_baseline(n) else "-")
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
    """User and system CPU per event at the fewest threads, a row per
    configuration, the rows thinning and then going into panels side by
    side (one x scale) to stay within layout.MAX_IN."""
    cols, per, height = rows_grid(len(one), 0.35, 1.5)
    fig, axes = plt.subplots(1, cols, figsize=(max(10, 7 * cols), height), sharex=True,
                             squeeze=False)
    for k, ax in enumerate(axes[0]):
        mine = one[k * per:(k + 1) * per]
        # Side by side, not stacked: a stack misleads on a log axis.
        ys = list(range(len(mine)))
        ax.barh([y - 0.2 for y in ys], [max(c["user_ns"], 1e-3) for c in mine], height=0.4,
                label="user", color="C0")
        ax.barh([y + 0.2 for y in ys], [max(c["sys_ns"], 1e-3) for c in mine], height=0.4,
                label="system", color="C1")
        ax.set_yticks(ys)
        ax.set_yticklabels([c["config"] for c in mine], fontsize=8)
        ax.set_ylim(per - 0.5, -0.5)
        ax.set_xscale("log")
        ax.set_xlim(left=0.1)
        ax.set_xlabel(f"CPU per event [ns/event] at {one[0]['threads']} thread(s) (log scale)")
    axes[0][0].legend()
    fig.suptitle("Where the time goes: user and system CPU per event", y=0.995)
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


