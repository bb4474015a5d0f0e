"""bodies.py: the probe-body table and plot (bodies.BODIES, issue 59):
per back-end and thread count, what each body costs an event, and its
share beyond the back-end's plainest probe on the same build, with its
interval; what a body that sends every event to user space lost.  How
to read it: docs/bodies.md.

Nothing to run: `from render.bodies import bodies_markdown, plot_bodies` (tables.md
and the plot), body_lines, floor_lines and script_lines (the answers,
render/summary.py).
"""
import functools
import textwrap

import configs
import kin
import workloads
from render.formats import Notes, bold, f_interval, f_ns, f_overhead, f_slower, f_x, table
from render.layout import save

BODIES_NOTE = (
    "Every body probes the same marker of the `body` build (a string argument, 12 frames "
    "below `single_trace`, frame pointers).  *Price* is its overhead per event against "
    "`baseline`; *beyond* is what the body costs an event more than its back-end's first "
    "row (its `beside`, at the same threads): the two cells' paired difference, with its 95% "
    "interval.  *Lost* is what a body that sends every event to user space said it lost "
    "(counted by the tracer, never guessed), of every event it made.  Docs: docs/bodies.md.")


def body_rows(a, notes):
    rows = []
    for b in a.get("bodies", []):
        if b["failed"]:
            rows.append([b["tracer"], b["config"], b["threads"], "-", "-", "-",
                         "failed " + " ".join(notes.ref(r) for r in b["failed"])])
            continue
        lost = ("-" if b["lost"] is None else
                f"{b['lost']:,} ({b['lost_fraction']:.1%})" if b["lost"] else "0")
        beyond = ("(the back-end's plainest)" if not b["beside"] else
                  f_overhead(b["share"]) + f" beyond {b['beside']}")
        rows.append([b["tracer"], b["config"], b["threads"], f_overhead(b["price"]), beyond,
                     lost, bold(b["verdict"] or "")])
    return rows


def floor_lines(a):
    """The answers' lines on the BPF floor (stats.analysis.floor): at the
    fewest threads both ran, libbpf's count, and a line per BPF front end:
    what it costs an event above it."""
    got = a.get("floor") or []
    if not got:
        return []
    n = min(f["threads"] for f in got)
    here = [f for f in got if f["threads"] == n]
    unit = here[0]["unit"]  # (one folder, one unit: ns on a host, instructions in a guest)
    return ["", f"Above the BPF floor, libbpf's own count ({kin.BPF_FLOOR}: "
                f"{f_overhead(here[0]['floor'])} {unit}/event at {n} thread{'s' * (n != 1)}):",
            ""] + [
        f"- {f['tracer']}{' (' + f['runtime'] + ' runtime)' if f['runtime'] else ''}: "
        f"{f_overhead(f['above'])} {unit}/event more ({f['above']['method'].split(' (')[0]}, "
        "mean [95% interval])" for f in here]


def floor_paragraphs(named):
    """The BPF floor in each of several folders, a paragraph each (its
    floor_lines): NAMED, [(where, analysis)], WHERE opening its first line
    ("In the sid guest (7.2)", a fleet's "On b (6.1)"); nothing for one without
    a floor."""
    out = []
    for where, a in named:
        lines = floor_lines(a)
        if lines:
            out += ["", f"{where}, " + lines[1][0].lower() + lines[1][1:]] + lines[2:]
    return out


def bodies_markdown(a):
    """tables.md's section: one row per body cell, or nothing."""
    if not a.get("bodies"):
        return []
    notes = Notes()
    lines = ["", "## Probe bodies: what the body costs an event", "", BODIES_NOTE, ""]
    lines.append(table(["tracer", "config", "threads", "price [ns/event]",
                        "beyond the plainest [ns/event]", "lost", "events"],
                       body_rows(a, notes)))
    return lines + notes.lines()


def plot_bodies(plt, a, folder):
    """One bar a body at the fewest threads, coloured by back-end: its
    price per event with its interval; a failed body's words in its
    place."""
    rows = a.get("bodies", [])
    if not rows:
        return None, {}
    t0 = min(b["threads"] for b in rows)
    rows = [b for b in rows if b["threads"] == t0]
    fig, ax = plt.subplots(figsize=(8, max(3, 0.32 * len(rows) + 1.2)))
    tracers = list(dict.fromkeys(b["tracer"] for b in rows))
    drawn = {}
    for y, b in enumerate(rows):
        key, color = (b["config"], b["threads"]), f"C{tracers.index(b['tracer'])}"
        p = b["price"]
        if b["failed"] or not p or p["mean_ns"] is None or p["mean_ns"] <= 0:
            words = "failed" if b["failed"] else "no price"
            ax.text(0.01, y, words, va="center", fontsize=7, color="red",
                    transform=ax.get_yaxis_transform())
            drawn[key] = f"words: {words}"
            continue
        err = None if p["lo_ns"] is None else [[p["mean_ns"] - p["lo_ns"]],
                                               [p["hi_ns"] - p["mean_ns"]]]
        ax.barh(y, p["mean_ns"], xerr=err, color=color, capsize=2)
        ax.annotate(f_ns(p["mean_ns"]), (p["mean_ns"], y), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=6.5)
        drawn[key] = "bar"
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([b["config"] for b in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("price [ns/event] (log), 95% interval")
    ax.set_title(f"Probe bodies: what each costs an event ({t0} thread(s))")
    for j, tr in enumerate(tracers):
        ax.barh([0], [0], color=f"C{j}", label=tr)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return save(fig, folder, "probe_bodies.png"), drawn


def body_lines(a):
    """The terminal's probe-body answer: at the fewest threads, each body's
    price per event and what it costs beyond its back-end's plainest."""
    rows = a.get("bodies", [])
    if not rows:
        return []
    t0 = min(b["threads"] for b in rows)
    out = []
    for b in rows:
        if b["threads"] != t0:
            continue
        out.append([b["config"], "failed" if b["failed"] else f_overhead(b["price"]),
                    "-" if not b["beside"] or b["failed"] else f_overhead(b["share"]),
                    "-" if not b["lost"] else f"{b['lost']:,} ({b['lost_fraction']:.1%})"])
    return ["", f"Probe bodies at {t0} thread{'s' * (t0 != 1)}, per event, mean [95% interval] "
            "(beyond: over the back-end's first row; docs/bodies.md):", "",
            table(["body", "price [ns/event]", "beyond [ns/event]", "lost"], out)]


def script_lines(a, meta, preds, width):
    """The answer for a user's SCRIPT (meta.json's "script"), as lines of at
    most WIDTH characters: per thread count, its price per event of the
    marker, what it adds to a run, the events (whose count), what it said
    it lost, and what the loop body closest to it predicts (PREDS:
    predict.script_predictions)."""
    s = (meta or {}).get("script")
    if not s:
        return []
    wrap = functools.partial(textwrap.wrap, width=width, break_on_hyphens=False)
    lines = [""] + wrap(f"Your script {s['path']}, run by {s['tracer']} as written (a copy: "
                        f"{s['copy']}, its output in logs/); the loop body closest to it: "
                        f"{s['closest']} ({s['feature']}):") + [""]
    by = {(p["config"], p["threads"]): p for p in preds}
    for c in a["cells"]:
        cfg = configs.BY_NAME.get(c["config"])
        if not cfg or cfg.mode != configs.SCRIPT_MODE:
            continue
        lines += wrap(script_line(c, cfg, by.get((c["config"], c["threads"]))),
                      initial_indent="- ", subsequent_indent="  ")
    return lines


def script_line(c, cfg, p):
    """One thread count's answer for a script's cell C (of row CFG), P its
    prediction."""
    t = f"at {c['threads']} thread{'s' * (c['threads'] != 1)}"
    if not c["n_runs"]:
        return f"{t}: failed: {'; '.join(c['failed_reasons'])}"
    o, k = c["overhead"], (p or {}).get("events")
    if not o or not k:
        return f"{t}: " + ("no price: " + (p or {}).get("why_not", "") if o else
                           "no overhead: its untraced row did not run")
    k *= p["turns"]
    each = {f: None if o[f] is None else o[f] / k for f in ("mean_ns", "lo_ns", "hi_ns")}
    iters = c["calls"] / c["n_runs"] / c["threads"]
    lost = (c.get("check") or {}).get("dropped") or 0
    call = workloads.get(cfg.workload).call if cfg.workload else "call"
    whose = (f"the workload's, by {', '.join(configs.SCRIPT_WITNESSES)}" if cfg.workload
             else "the program's count: the marker fires once a call")
    n = p["events"]
    return (f"{t}: {f_overhead(each)} ns/event" + (f" ({f_slower(o)} a {call})"
                                                   if cfg.workload else "")
            + f"; about {o['mean_ns'] * iters / 1e9:.3g} s added to {iters:,.0f} {call}"
            f"{'s' * (iters != 1)} a thread; {n:,.0f} event{'s' * (n != 1)} a {call} ({whose}); "
            + (f"it said it lost {lost:,} events" if lost else "it said it lost none")
            + "; the loop predicts "
            + (f"{f_interval(*[None if x is None else x / k for x in p['predicted_ns']])} "
               "ns/event, measured / predicted "
               + (f"{f_interval(p['ratio'], p['lo'], p['hi'], f_x)} {p['verdict']}"
                  if p["verdict"] else p["why_not"])
               if p["predicted_ns"] else f"nothing: {p['why_not']}"))
