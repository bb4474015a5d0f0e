"""summary.py: the answers a run gives, said once and shown twice: at the end
of `make run` (and of `python3 scripts/report.py`) in the terminal, at most
LINES lines of at most WIDTH characters, and at the top of report.md.  What
each tracer costs per event (its cheapest `ok` configuration, and
SystemTap's four 2011 configurations), each real program's cost and
whether the loop predicts it (predict.py), which probe sites are UNSAFE or
NEVER FIRE here, the 2011 figures, status totals, each failure reason once,
and where the full report and plots are.  Nothing to run on its own.
"""
import os
import textwrap

import configs
import kernel
import kin
from tracers import marker_orders
import predict
import workloads
import silence
from configs import BASELINE
from kin import real
from record import LOSSLESS, OTHERS, STATUSES
from render.formats import (f_interval, f_ns, f_overhead, f_rate, f_slower, f_x, failure_groups,
                            normalise, reading, table, where)
from render.bodies import body_lines, floor_lines, script_lines
from render.lab import guest_2011, guest_head, guest_line
from render.y2011 import Y2011_CONFIGS, y2011

LINES, WIDTH = 60, 120
MAX_REASONS = 8  # distinct failure reasons shown; the rest are in report.md
IDLE = "idle-sdt"  # the question "is an unused marker free?"


def expects_events(name):
    c = configs.BY_NAME.get(name)
    return c is None or c.expect == "all"


def quotable(c):
    """A cell whose cost may be quoted: measured, every event seen."""
    return (c["n_runs"] and c.get("overhead") and not c["corrupted"]
            and (c.get("check") or {}).get("verdict") in LOSSLESS and expects_events(c["config"]))


def cost_cell(c):
    """A cell's overhead as the answers show it, or what stands in its way."""
    if c is None:
        return "not run"
    if not c["n_runs"]:
        return f"all {c['n_timed']} runs failed"
    v = (c.get("check") or {}).get("verdict")
    if c["corrupted"]:
        return "UNSAFE: corrupted"
    if v not in LOSSLESS + ("n/a",):
        return f"{v}: not quoted"
    return f_overhead(c.get("overhead"))


# How site_lines names an order of attach (configs.ATTACH).
ORDER_WORDS = {"before": "attached first", "running": "attached while it ran",
               "fork": "in a child forked after it fired"}


def unsafe_sites(a):
    """Builds whose site was found UNSAFE, NEVER FIRES, REFUSED or
    CRASHES here, in any order (the -canary build's verdict holds for its
    plain twin)."""
    return {kernel.site_name(s["build"]) for s in a.get("sites", [])
            if s["verdict"] in kernel.BAD}


def f_ratio(v):
    """A ratio to 3 figures: 0.45, 1.12, 12.3, 1,234."""
    return "-" if v is None else f"{v:,.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 \
        else f"{v:.2f}"


def loop_ratio(p):
    """A prediction's ratio, measured / predicted, mean [95% interval]."""
    if p["ratio"] is None:
        return "-"
    return (f_interval(p["ratio"], p["lo"], p["hi"], f_ratio) if p["lo"] is not None
            else f"{f_ratio(p['ratio'])} (no CI)")


def loop_verdict(p):
    """`predicted`, `dearer than the loop, x2.10`, `cheaper than the loop,
    x0.45`, `not resolved: [...] straddles 0.85-1.15` (predict's words), or
    why there is no verdict."""
    if p["verdict"] in predict.GAPS:
        return f"{p['verdict']} than the loop, x{f_ratio(p['ratio'])}"
    if p["verdict"] == predict.UNRESOLVED:
        return (f"{predict.UNRESOLVED}: [{f_ratio(p['lo'])}, {f_ratio(p['hi'])}] straddles "
                f"{band()}")
    return p["verdict"] or p["why_not"]


def band():
    """predict.BAND in words: 0.85-1.15."""
    return f"{predict.BAND[0]:g}-{predict.BAND[1]:g}"


def loop_line(program, preds):
    """The terminal's answer for PROGRAM at its fewest threads: does the
    loop predict it?  Each row's ratio and verdict, as lines of at most
    WIDTH characters (a list item and its continuation)."""
    t = min(p["threads"] for p in preds)
    parts = [f"{p['config']} {loop_ratio(p)} {p['verdict']}" if p["verdict"] else
             f"{p['config']}: {p['why_not']}" for p in preds if p["threads"] == t]
    lines = [f"  - does the loop predict {program}? at {t} thread{'s' * (t != 1)}, "
             "measured / predicted [95%]:"]
    for i, part in enumerate(parts):
        part += ";" if i < len(parts) - 1 else ""
        if len(lines[-1]) + 1 + len(part) > WIDTH:
            lines.append("    " + part)
        else:
            lines[-1] += " " + part
    return lines


def others(x):
    """'; N hits from other processes ...' where cell X's tracer counted any
    apart from the workload's events (cgroups.py), else ''."""
    n = (x.get("check") or {}).get("others")
    return f"; {n:,} {OTHERS} in its runs, not the workload's (not priced)" if n else ""


def real_lines(a):
    """Per real program and thread count: what raising its semaphores
    costs with no probe, its cheapest and dearest tracer that saw every
    event, as % of its own untraced time (mean [95% interval]), and where
    the program keeps no count of a marker, each tracer's slowdown with the
    events it counted, side by side; under its fewest threads, whether the
    loop predicts it (predict.py, loop_line)."""
    lines, preds, said = [], predict.predictions(a), set()
    top = max([c["threads"] for c in a["cells"] if real(c["config"])] or [1])
    for c in a["cells"]:
        base = configs.BY_NAME.get(c["config"])
        if not real(c["config"]) or not kin.is_baseline(c["config"]) or not c["n_runs"] \
                or c["threads"] not in (1, top):  # the terminal's lines: 1 thread and the most
            continue
        w = workloads.get(base.workload)
        mine = [x for x in a["cells"] if x["threads"] == c["threads"] and x is not c
                and kin.against(x["config"]) == c["config"]]
        quiet = [x for x in mine if x["tracer"] in ("none", "") and x.get("overhead")]
        traced = [x for x in mine if x["tracer"] not in ("none", "")  # (a script: its own lines)
                  and configs.BY_NAME[x["config"]].mode != configs.SCRIPT_MODE]
        ok = sorted((x for x in traced if quotable(x)), key=lambda x: x["overhead"]["mean_ns"])
        silent = ""  # why the marker never fired, where it did not (silence.py)
        parts = [f"{x['config']}, no probe: {f_slower(x['overhead'])}" for x in quiet]
        user = base.workload == "user"  # a user's own program: every tracer, its verdict
        verdicts = {p["config"]: p for p in preds if p["threads"] == c["threads"]}
        for what, x in (((("", x) for x in ok)) if user else
                        (("cheapest", ok[0]), ("dearest", ok[-1])) if len(ok) > 1 else
                        (("tracer", ok[0]),) if ok else ()):
            p = verdicts.get(x["config"])
            parts.append(f"{what}, {x['config']}: ".lstrip(", ") + f"{f_slower(x['overhead'])}; "
                         f"{f_overhead(predict.per_event(x, w))} ns/event"
                         + (f"; vs loop {loop_ratio(p)} {p['verdict']}"
                            if user and p and p["verdict"] else
                            f"; vs loop: {p['why_not']}" if user and p else "") + others(x))
        for x in traced:
            if quotable(x):
                continue
            if (x.get("check") or {}).get("verdict") == kernel.NEVER_FIRES:
                parts.append(f"{x['config']}: never fires, 0 events in {x['calls']:,} "
                             f"{w.call}s ({f_slower(x['overhead'])}, no price per event)")
                why = x["check"]["why"]  # its silence words, where the kit looked (silence.py)
                silent = silent or why[why.find(silence.HEAD):] * (silence.HEAD in why)
            elif (x.get("check") or {}).get("verdict") == "unverified" and x.get("overhead"):
                seen = predict.workload_events(x["check"])
                parts.append(f"{x['config']}: {f_slower(x['overhead'])}; " + (
                    f"{seen / x['calls']:,.1f} events a {w.call}, unverified"
                    + (f" (its count, {x['check']['seen']:,}, held other processes' hits)"
                       if seen != x["check"]["seen"] else "")
                    if seen is not None else
                    "nothing counts its events (a probe that records nothing)") + others(x))
            else:
                parts.append(f"{x['config']}: {cost_cell(x)}")
        many = f" ({w.threads_are})" if c["threads"] > 1 and w.threads_are else ""
        lines.append(f"- {base.workload} at {c['threads']} thread{'s' * (c['threads'] != 1)}, "
                     f"{f_ns(c.get('mean_ns'))} ns a {w.call} untraced{many}:")
        lines += [f"  - {p}" for p in parts or ["nothing else ran"]]
        lines += textwrap.wrap(f"why it never fires: {silent}", WIDTH, initial_indent="  - ",
                               subsequent_indent="    ", break_on_hyphens=False) if silent else []
        mine = [p for p in preds if p["program"] == base.workload]
        if mine and base.workload not in said and not user:  # under its first block
            said.add(base.workload)
            lines += loop_line(base.workload, mine)
    return lines


def cheapest(a):
    """([(tracer, config)], [tracer]): per tracer (the kit's own target's
    rows) its cheapest quotable configuration at 1 thread on a site not
    found unsafe here, and the tracers that have none."""
    bad = unsafe_sites(a)
    best, none = [], []
    for tracer in dict.fromkeys(c["tracer"] for c in a["cells"]
                                if c["tracer"] not in ("none", "") and not real(c["config"])):
        ok = [c for c in a["cells"] if c["tracer"] == tracer and c["threads"] == 1
              and quotable(c) and kernel.site_name(c["build"]) not in bad
              and not real(c["config"])]
        if ok:
            best.append((tracer, min(ok, key=lambda c: c["overhead"]["mean_ns"])["config"]))
        else:
            none.append(tracer)
    return best, none


def cost_rows(a):
    """(head, [row], [words]): per tracer its cheapest quotable
    configuration at 1 thread on a site not found unsafe here, then
    SystemTap's 2011 four, each at 1 thread and at the highest thread
    count; WORDS: what an interval holding 0 means, and what was left out."""
    by = {(c["config"], c["threads"]): c for c in a["cells"]}
    bad = unsafe_sites(a)
    top = max([c["threads"] for c in a["cells"]] or [1])
    best, none = cheapest(a)
    picks = ([IDLE] if (IDLE, 1) in by else []) + [c for _, c in best]
    none = [t for t in none if t != "stap"]  # SystemTap's rows follow in any case
    picks += [n for n in Y2011_CONFIGS if n not in picks
              and any(c["config"] == n for c in a["cells"])]
    rows, words = [], []
    for n in picks:
        one, hi = by.get((n, 1)), by.get((n, top))
        o = (one or {}).get("overhead")
        rows.append([n + (" (2011)" if n in Y2011_CONFIGS else ""), cost_cell(one)]
                    + ([cost_cell(hi)] if top > 1 else [])
                    + [f_x(o["slowdown_x"]) if o and one["n_runs"] else "-"])
        for t, c in ((1, one), (top, hi))[:1 + (top > 1)]:  # (at 1 thread only: once)
            if c and c.get("overhead") and c["overhead"]["bounded"] and not c["corrupted"] \
                    and (c.get("check") or {}).get("verdict") in LOSSLESS + ("n/a",):
                words.append(f"{n} at {t} thread{'s' * (t != 1)}: {reading(c['overhead'])}")
    if none:
        words.append(f"no figure for {', '.join(none)}: no configuration of "
                     f"{'theirs' if len(none) > 1 else 'its'} saw every event at 1 thread")
    if bad:
        words.append(f"left out: configurations on the {', '.join(sorted(bad))} site"
                     f"{'s' * (len(bad) > 1)}, UNSAFE or never firing here (below)")
    head = ["configuration", "1 thread [ns/event]"] + (
        [f"{top} threads [ns/event]"] if top > 1 else []) + ["slowdown [x], 1 thread"]
    return head, rows, words


def site_lines(a, meta=None):
    """One line per verdict that matters and site: which tracers; and
    each site that contradicts what this kernel was expected to do."""
    out = {}
    for s in a.get("sites", []):
        if s["verdict"] in kernel.BAD:
            site = kernel.site_name(s["build"])
            out.setdefault((s["verdict"], site), {}).setdefault(
                (s["tracer"], s.get("attach") or "before"), s)
    lines = []
    for (verdict, site), found in out.items():
        bad = [s for s in found.values() if s["corrupted"]]
        tracers = dict.fromkeys(t for t, _ in found)
        orders = dict.fromkeys(o for _, o in found)
        parts = ([f"{sum(s['corrupted'] for s in bad):,} of {sum(s['calls'] for s in bad):,} "
                  "calls corrupted"] if bad else []) + (
            [] if list(orders) == ["before"] else [", ".join(ORDER_WORDS.get(o, o) for o in orders)])
        lines.append(f"- **{verdict}**: the {site} site under {', '.join(tracers)}"
                     + (f" ({'; '.join(parts)})" if parts else ""))
    safe = sorted({kernel.site_name(s["build"]) for s in a.get("sites", [])
                   if s["verdict"] == "safe"} - {site for _, site in out})
    if safe:
        lines.append(f"- safe under every tracer tried: {', '.join(safe)}")
    for s in a.get("sites", []):
        diff = kernel.check(meta, s, marker_orders())
        if diff:
            lines.append(f"- **NOT AS EXPECTED** on this kernel ({kernel.answer(meta)}): "
                         f"{s['config']} at {s['threads']} thread(s): {diff}")
    return lines


def totals(rows):
    """`1,057 ok, 8 mismatch, ...` over the timed runs (warm-ups not
    counted), and the configurations skipped."""
    timed = [r for r in rows if (r.get("rep") or 0) >= 1 and r["status"] != "skipped"]
    n = {s: sum(r["status"] == s for r in timed) for s in STATUSES if s != "skipped"}
    skipped = {r["config"] for r in rows if r["status"] == "skipped"}
    return (f"{len(timed):,} timed runs: " + ", ".join(f"{v:,} {s}" for s, v in n.items() if v
                                                        or s in ("ok", "failed"))
            + f"; {len(skipped)} configuration{'s' * (len(skipped) != 1)} skipped")


def failure_lines(a, limit=MAX_REASONS):
    groups = failure_groups(a)
    lines = [f"- {sum(k for _, k in cells.values())} run(s), {where(cells)}: {why}"
             for why, cells in groups[:limit]]
    if len(groups) > limit:
        lines.append(f"- and {len(groups) - limit} more reasons: see report.md")
    skips = {}
    for s in a["skipped"]:
        skips.setdefault(normalise(s["reason"]), []).append(s["config"])
    lines += [f"- skipped {', '.join(cs)}: {why}" for why, cs in skips.items()]
    return lines



def cost_lines(a, mine):
    """The loop's cost table and the real programs' lines; MINE: a user's
    program ran (make run TARGET=...), whose answer comes first, the loop's
    table beside it as what the prediction is made of."""
    lines = []
    head, rows_, words = cost_rows(a)
    progs = real_lines(a)
    progs = progs and ["", "Real programs, each against its own untraced runs (% of its "
                       "time, mean [95% interval]):", ""] + progs
    if mine:
        lines += progs[1:]
    if a["has_baseline"] and rows_:
        lines += (["", "The loop's twins (what the prediction is made of; measured / "
                   f"predicted is `{predict.PREDICTED}` within {band()}),", "per event over the bare "
                   "call, mean [95% interval]:"] if mine else
                  ["Overhead per event over the bare call, mean [95% interval]: each "
                   "tracer's cheapest configuration", "that saw every event, and "
                   "SystemTap's four of 2011."]) + ["", table(head, rows_)]
        lines += [""] + [f"- {w}" for w in words] if words else []
    elif not a["has_baseline"] and not mine:
        lines.append(f"No `{BASELINE}` rows: no overhead can be computed.")
    return lines if mine else lines + progs


def answers(a, p, rows, meta, folder, plots=(), terminal=False, guest=None):
    """The answers as lines of Markdown (which read as text in a terminal).
    TERMINAL: cut to LINES lines of WIDTH characters, the way out named.
    GUEST (report.guest_for): a lab guest's module runtime beside the 2011
    figures, in instructions, a column of its own."""
    env = meta or {}
    name = shown(folder) if terminal else os.path.basename(os.path.normpath(folder))
    lines = [f"What tracing costs on {env.get('cpu_model', 'this machine')}, "
             f"{env.get('cpus', '?')} CPUs, Linux {env.get('kernel', '?')}:", ""]
    if a["cells"]:
        mine = any(getattr(configs.BY_NAME.get(c["config"]), "workload", "") == "user"
                   for c in a["cells"])
        lines += cost_lines(a, mine) + floor_lines(a)
        lines += body_lines(a) + script_lines(a, env, predict.script_predictions(
            a, env.get("script")), WIDTH)
        sites = site_lines(a, env)
        if sites:
            lines += ["", "Probe sites on this kernel (red-zone canary; the uprobe syscall "
                      f"answered {kernel.answer(env)}):", ""] + sites
        if a["has_baseline"] and not mine and not env.get("script"):  # (a user's run, or a
            # script's: its loop is for the prediction)
            lines += ["", "The 2011 post beside today (10M calls, 1 thread, scaled):", ""]
            head = ["probe", "2011", "today, this machine (mean)", "today's configuration"]
            if guest:
                head[3:3] = [guest_head(guest)]
            lines.append(table(head, [
                [r[0], f"{r[1]}, {r[2]}" if r[2] not in ("", "-") else r[1],
                 "-" if r[4] == "-" and r[5] else f"{r[4]}, {r[5]}" if r[5]
                 else r[6] and f"{r[6]} ns/event"] + r[7:-1] + r[-1:]
                for r in y2011(a, guest_2011(guest) if guest else None)]))
            lines += ["", guest_line(guest)] if guest else []
    if p and p["cells"]:
        lim = [m for m in p["limits"] if m["config"] != BASELINE]
        if lim:
            lines += ["", "Paced runs: the highest rate each held without losing an event:", ""]
            lines.append(table(["configuration", "threads", "lossless up to [calls/s/thread]",
                                "1% of a CPU at [events/s]"],
                               [[m["config"], m["threads"],
                                 "none tested held" if m["limit"] is None else
                                 f">= {f_rate(m['limit'])}" if m["broke_at"] is None
                                 else f_rate(m["limit"]), f_rate(m["rate_at_1pct"])]
                                for m in lim]))
    lines += ["", totals(rows)]
    fails = failure_lines(a)
    if fails:
        lines += ["", "Failed and skipped, each reason once (warm-ups included):", ""] + fails
    if terminal:
        lines += ["", f"Full report: {os.path.join(name, 'report.md')}"]
        if plots:
            lines.append(f"Plots beside it: {', '.join(os.path.basename(m) for m in plots)}")
    elif plots:
        lines += ["", "Plots: " + ", ".join(f"[{os.path.basename(m)}]({os.path.basename(m)})"
                                            for m in plots)]
    lines = "\n".join(lines).split("\n")  # a table is one string of several lines
    lines = [ln for i, ln in enumerate(lines) if ln or (i and lines[i - 1])]  # one blank at most
    return fit(lines) if terminal else lines


def shown(path):
    """PATH relative to here if it is below here, else absolute."""
    rel = os.path.relpath(path)
    return os.path.abspath(path) if rel.startswith("..") else rel


def fit(lines):
    """At most LINES lines of WIDTH characters: a long line is cut with an
    ellipsis, and past the limit one line says where the rest is."""
    out = [ln if len(ln) <= WIDTH else ln[:WIDTH - 1] + "…" for ln in lines]
    if len(out) > LINES:
        out = out[:LINES - 1] + ["… (cut here: the whole of it opens report.md)"]
    return out
