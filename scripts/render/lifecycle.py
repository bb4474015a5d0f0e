"""render/lifecycle.py: the report of a `make lifecycle` folder (report.md,
report.json, two log-log plots, and the terminal's answers), from that
folder's format (record/lifecycle.py: its kind, its tables and their columns).

    python3 scripts/report.py results/<stamp>-lifecycle

Attach and detach times are medians over a cell's counted cycles with the
order-statistic interval of stats.median_ci (its coverage is said where it
is under 95%: a cell of fewer than 6 cycles); per probe is the total over
the cell's sites.  The bystander table sets the untraced process's cost
per call under each way against the same process with no tracer, run just
before (Welch's 95% interval).  Every figure is of the folder's clock
(CLOCKS, by meta.json's unit): ns of the host's, or, from make lab
LIFECYCLE=1's guests, of the guest's under QEMU's -icount, which the
report says beside each figure and never sets beside the host's.
"""
import json
import os
import statistics

import stats
import record
from record.lifecycle import BASELINE_WAY, BYSTANDER_CSV, KIND, LIFECYCLE_CSV, clock, rows_of
from render.formats import kernel_facts
from render.layout import save


def is_lifecycle(folder):
    return record.kind_of(folder) == KIND


def interval(values):
    med, lo, hi, held = stats.median_ci(values)
    return {"median": med, "lo": lo, "hi": hi, "held": held, "n": len(values)}


def cells(rows):
    """A cell per (tracer, sweep, sites, procs): its counted cycles (the
    pilot where it is all there is), medians with intervals."""
    by = {}
    for r in rows:
        by.setdefault((r["tracer"], r["sweep"], int(r["sites"]), int(r["procs"])), []).append(r)
    out = []
    for (tracer, sweep, nsites, nprocs), rs in by.items():
        # the medians: counted cycles that detached whole; where none did,
        # those that detached at all (a killed or miscounted one: the status says)
        done = ([r for r in rs if r["detach_s"] and r["status"] == "ok"]
                or [r for r in rs if r["detach_s"]])
        counted = [r for r in done if int(r["cycle"]) > 0] or done
        c = {"tracer": tracer, "path": rs[0]["path"], "sweep": sweep, "sites": nsites,
             "procs": nprocs, "cycles": len(counted),
             "pilot_only": bool(counted) and all(int(r["cycle"]) == 0 for r in counted),
             "statuses": sorted({r["status"] for r in rs}),
             "reasons": sorted({r["reason"] for r in rs if r["reason"]})}
        if counted:
            for k in ("attach_s", "detach_s", "startup_s"):
                got = [float(r[k]) for r in counted if r[k]]
                c[k] = interval(got) if got else None  # (a newer bpftrace: no start-up told)
            kb = [int(r["tracer_kb"]) for r in counted if r["tracer_kb"]]
            c["tracer_kb"] = statistics.median(kb) if kb else None
            c["late_covered"] = sorted({r["late_covered"] for r in counted})
            c["semaphore"] = sorted({r.get("semaphore") or "-" for r in counted})
            c["counted"] = sorted({r["counted"] for r in counted})
        out.append(c)
    return out


def bystanders(rows):
    """Each way's runs against the untraced block just before it."""
    out, base = [], []
    blocks = []  # (way, tracer, rows) in the order written
    for r in rows:
        if blocks and blocks[-1][0] == r["way"] and (r["way"] != BASELINE_WAY
                                                      or int(r["run"]) > 0):
            blocks[-1][2].append(r)
        else:
            blocks.append((r["way"], r["tracer"], [r]))
    for way, tracer, rs in blocks:
        ok = [r for r in rs if r["status"] == "ok" and r["calls"]]
        if way == BASELINE_WAY:
            base = ok
            continue
        got = [r for r in rs if r["calls"]]
        w = {"way": way, "tracer": tracer, "runs": len(got),
             "statuses": sorted({r["status"] for r in rs}),
             "reasons": sorted({r["reason"] for r in rs if r["reason"]})}
        if got and base:
            per = [int(r["wall_ns"]) / int(r["calls"]) for r in got]
            per0 = [int(r["wall_ns"]) / int(r["calls"]) for r in base]
            d, lo, hi = stats.welch_ci(per, per0)
            w.update(cost_ns=d, lo_ns=lo, hi_ns=hi, base_ns=statistics.fmean(per0),
                     user_ns=statistics.fmean(int(r["user_ns"]) / int(r["calls"]) for r in got),
                     sys_ns=statistics.fmean(int(r["sys_ns"]) / int(r["calls"]) for r in got),
                     trap=sorted({r["trap_in_untraced"] for r in got}),
                     traced_counted=got[0]["traced_counted"])
        out.append(w)
    return out


def f_iv(iv, scale=1.0, unit="s"):
    if not iv or iv.get("median") is None:
        return "-"
    m = iv["median"] * scale
    if iv["lo"] is None:
        return f"{m:.4g} {unit} (1 cycle)"
    text = f"{m:.4g} [{iv['lo'] * scale:.4g}, {iv['hi'] * scale:.4g}] {unit}"
    if iv["held"] < 0.95:
        text += f" ({iv['held']:.0%} interval, {iv['n']} cycles)"
    return text


def kb(x):
    return "-" if not x else f"{x:,.0f} kB"


def f_ns(x):
    if x is None:
        return "-"
    text = f"{x + 0.0:,.2f}" if abs(x) < 10 else f"{x:,.1f}"
    return "0.00" if text in ("-0.00", "0.00") else text


def markdown(meta, cs, bs):
    tu, mu, cu, _, said = clock(meta)
    lab = meta.get("lab") or {}
    out = [f"# make lifecycle on {meta.get('kernel', '?')}"
           + (f" (make lab's Debian {lab.get('suite')} guest)" if lab else ""), "",
           said + "  Medians over each cell's counted "
           "cycles, [95% interval] from order statistics; a cell of fewer than 6 cycles shows "
           "[min, max] and what that holds.  Start-up: from the tracer's start until it "
           "attaches (ftrace: its instance and lines; perf: its lines; bpftrace: until its "
           "'Attaching' line; one that says only 'Attached' after it, as 0.27.1 does: -; "
           "libbpf's loader, which says nothing between its load and its attach: -).  "
           "Attach: from "
           "the tracer's start until every site "
           "of every process holds int3; detach: from the stop until every site is its own "
           "byte again and the tracer has exited.", ""]
    for name, why in (meta.get("skipped") or {}).items():
        out.append(f"- {name}: skipped: {why}")
    for what, why in (("failed", meta.get("failed")), ("stopped early", lab.get("unfinished")),
                      ("interrupted", meta.get("interrupted"))):
        if why:
            out.append(f"- {what}: {why}")
    for sweep, what in (("sites", "against the number of probe sites (1 process)"),
                        ("procs", "against the number of processes (1 site each)"),
                        ("guarded", "of a guarded marker (the sdt-guarded build's, under its "
                                    "semaphore: 1 process and a late one)")):
        rows = [c for c in cs if c["sweep"] == sweep]
        if not rows:
            continue
        out += ["", f"## Attach and detach {what}", "",
                "| tracer | attach path | sites | processes | start-up | attach | detach "
                "| detach per probe | tracer's memory | late process covered | semaphore "
                "(held/late) | count | status |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for c in rows:
            per = None
            if c.get("detach_s"):
                per = f_iv(c["detach_s"], 1000 / c["sites"], mu)
            out.append(
                f"| {c['tracer']} | {c['path']} | {c['sites']} | {c['procs']} | "
                f"{f_iv(c.get('startup_s'), unit=tu)} | {f_iv(c.get('attach_s'), unit=tu)} | {f_iv(c.get('detach_s'), unit=tu)} | "
                f"{per or '-'} | "
                f"{kb(c.get('tracer_kb'))} | "
                f"{', '.join(c.get('late_covered') or ['-'])} | "
                f"{', '.join(c.get('semaphore') or ['-'])} | "
                f"{', '.join(c.get('counted') or ['-'])} | "
                f"{', '.join(c['statuses'])}{': ' + '; '.join(c['reasons']) if c['reasons'] else ''} |")
    if bs:
        base = next((b["base_ns"] for b in bs if b.get("base_ns") is not None), None)
        out += ["", "## The bystander: what an untraced process pays for a probe on a library "
                "it maps", "",
                f"One process is traced in each way; the other, untraced, calls kit_lib_call() "
                f"{meta.get('inputs', {}).get('BY_CALLS', '?')} times a run"
                + (f" ({f_ns(base)} {cu} a call with no tracer at all)" if base else "")
                + f".  Cost: its {cu} per call over the same process with no tracer just "
                f"before, Welch's 95% interval; its own user and system {cu} per call say where "
                "the cost went.", "",
                f"| way | trap in the untraced process | cost per call [95%] | its user {cu}/call "
                f"| its system {cu}/call | traced process counted | status |",
                "|---|---|---|---|---|---|---|"]
        for b in bs:
            iv = (f"{f_ns(b['cost_ns'])} [{f_ns(b['lo_ns'])}, {f_ns(b['hi_ns'])}] {cu}"
                  if b.get("cost_ns") is not None else "-")
            out.append(f"| {b['way']} | {', '.join(b.get('trap') or ['-'])} | {iv} | "
                       f"{f_ns(b.get('user_ns'))} | {f_ns(b.get('sys_ns'))} | "
                       f"{b.get('traced_counted') or '-'} | {', '.join(b['statuses'])}"
                       f"{': ' + '; '.join(b['reasons']) if b['reasons'] else ''} |")
    return "\n".join(out) + "\n"


def answers(cs, bs, meta=None):
    """The terminal's lines: the slowest detach per probe, and what an
    untraced process pays under the cheapest filter (in META's clock)."""
    tu, mu, cu, *_ = clock(meta or {})
    out, per = [], []
    for tracer in sorted({c["tracer"] for c in cs}):
        mine = sorted((c for c in cs if c["tracer"] == tracer and c["sweep"] == "sites"
                       and c.get("detach_s")), key=lambda c: c["sites"])
        if len(mine) > 1:  # each probe more, between the fewest sites and the most
            lo, hi = mine[0], mine[-1]
            slope = ((hi["detach_s"]["median"] - lo["detach_s"]["median"])
                     / (hi["sites"] - lo["sites"]))
            per.append((slope, lo, hi))
    if per:
        slope, lo, hi = max(per, key=lambda x: x[0])
        out.append(f"Slowest detach: {hi['tracer']} ({hi['path']}), {slope * 1000:.1f} {mu} more "
                   f"a probe from {lo['sites']} to {hi['sites']} sites "
                   f"({f_iv(hi['detach_s'], unit=tu)} "
                   f"for {hi['sites']}).")
    ok = [b for b in bs if b.get("cost_ns") is not None and b["statuses"] == ["ok"]]
    if ok:
        b = min(ok, key=lambda x: x["cost_ns"])
        out.append(f"Cheapest pid filter for an untraced neighbour: {b['way']}, "
                   f"{f_ns(b['cost_ns'])} [{f_ns(b['lo_ns'])}, {f_ns(b['hi_ns'])}] {cu} a call "
                   f"(trap there: {', '.join(b['trap'])}); the dearest, "
                   + (lambda w: f"{w['way']}, {f_ns(w['cost_ns'])} {cu} a call.")(
                       max(ok, key=lambda x: x["cost_ns"])))
    bad = [b for b in bs if b["statuses"] != ["ok"]]
    for b in bad:
        out.append(f"{b['way']}: {', '.join(b['statuses'])}: {'; '.join(b['reasons'])}")
    return out


def plot(folder, cs, meta=None):
    """lifecycle_attach.png and lifecycle_detach.png: log-log, a line per
    tracer and path, against sites and against processes."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    made = []
    for key, title in (("attach_s", "attach"), ("detach_s", "detach")):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
        for ax, sweep, xk, xl in ((axes[0], "sites", "sites", "probe sites (1 process)"),
                                  (axes[1], "procs", "procs", "processes (1 site)")):
            by = {}
            for c in cs:
                if c["sweep"] == sweep and c.get(key) and c[key]["median"]:
                    # the path without what it held: a line per tracer and path
                    by.setdefault((c["tracer"], c["path"].split(" (")[0]), []).append(c)
            for (tracer, path), rows in sorted(by.items()):
                rows.sort(key=lambda c: c[xk])
                xs = [c[xk] for c in rows]
                ys = [c[key]["median"] for c in rows]
                lo = [y - (c[key]["lo"] if c[key]["lo"] is not None else y)
                      for y, c in zip(ys, rows)]
                hi = [(c[key]["hi"] if c[key]["hi"] is not None else y) - y
                      for y, c in zip(ys, rows)]
                ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3,
                            label=f"{tracer}: {path}")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(xl)
            ax.set_ylabel(f"{title} time [{clock(meta or {})[0]}], {clock(meta or {})[3]}")
            ax.grid(True, which="both", alpha=0.3)
            if by:
                ax.legend(fontsize=7)
        fig.suptitle(f"{title}: median and interval over each cell's cycles")
        fig.tight_layout()
        made.append(save(fig, folder, f"lifecycle_{title}.png"))
    return made


def write(folder):
    """The report of FOLDER; its terminal lines returned."""
    with open(os.path.join(folder, "meta.json")) as f:
        meta = json.load(f)
    cs = cells(rows_of(folder, LIFECYCLE_CSV))
    bs = bystanders(rows_of(folder, BYSTANDER_CSV))
    made = plot(folder, cs, meta)
    with open(os.path.join(folder, "report.md"), "w") as f:
        f.write(markdown(meta, cs, bs))
    with open(os.path.join(folder, "report.json"), "w") as f:
        json.dump({"kind": KIND, "cells": cs, "bystanders": bs, "plots":
                   [os.path.basename(p) for p in made]}, f, indent=1, sort_keys=True)
        f.write("\n")
    lines = answers(cs, bs, meta)
    lines.append(f"report: wrote {os.path.join(folder, 'report.md')}, report.json"
                 + (f" and {len(made)} plots" if made else ""))
    return lines


# -- make lab LIFECYCLE=1: its top folder ---------------------------------------
def bystander_grid(guests, head):
    """The summary's bystander table: a row per way, a column per guest
    (GUESTS: (meta, cells, bystanders); HEAD: their columns' names)."""
    ways = {}
    for k, (m, _, bs) in enumerate(guests):
        for b in bs:
            ways.setdefault(b["way"], {})[k] = b
    if not ways:
        return []
    out = ["", "## The bystander: the untraced process's cost per call", "",
           "| way | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
    for way, by in ways.items():
        out.append(f"| {way} | " + " | ".join(
            (f"{f_ns(by[k]['cost_ns'])} [{f_ns(by[k]['lo_ns'])}, {f_ns(by[k]['hi_ns'])}] "
             f"{clock(guests[k][0])[2]}" if by[k].get("cost_ns") is not None
             else ", ".join(by[k]["statuses"])) if k in by else "-"
            for k in range(len(guests))) + " |")
    return out


def lab_summary(top, folders):
    """TOP/summary.md from the suites' lifecycle FOLDERS: a line per guest,
    then per tracer and attach path the detach per probe and the attach at
    the most sites, and each bystander way, kernel by kernel (each in its
    guest's own clock, which the table names); its text."""
    guests = []
    for d in folders:
        with open(os.path.join(d, "meta.json")) as f:
            meta = json.load(f)
        guests.append((meta, cells(rows_of(d, LIFECYCLE_CSV)),
                       bystanders(rows_of(d, BYSTANDER_CSV))))
    head = [f"{(m.get('lab') or {}).get('suite', '?')} "
            f"{m.get('kernel') or (m.get('lab') or {}).get('kernel', '?')} [{clock(m)[3]}]"
            for m, *_ in guests]
    out = ["# make lab LIFECYCLE=1", "", "| suite | kernel | accelerator | clock | tracers | "
           "status |", "|---|---|---|---|---|---|"]
    for m, cs, bs in guests:
        lab = m.get("lab") or {}
        bad = sorted({s for c in cs for s in c["statuses"] if s != "ok"}
                     | {s for b in bs for s in b["statuses"] if s != "ok"})
        status = m.get("failed") or (", ".join(bad) + " in some cells" if bad else "ok")
        if lab.get("unfinished"):
            status += f"; stopped early: {lab['unfinished']}"
        out.append(f"| {lab.get('suite', '?')} | {m.get('kernel') or lab.get('kernel', '?')} | "
                   f"{lab.get('accel') or '-'} | {clock(m)[3]} | "
                   f"{'; '.join(f'{k} {v}' for k, v in (m.get('tracers') or {}).items()) or '-'} | "
                   f"{status} |")
    out.append("")
    for said in dict.fromkeys(clock(m)[4] for m, *_ in guests):  # each clock's own sentence
        out += [said, ""]
    out += kernel_facts([m.get("lab") or {} for m, *_ in guests], head)

    def grid(title, key, pick, fmt):
        rows = {}
        for k, (m, cs, _) in enumerate(guests):
            for c in cs:
                if c["sweep"] == "sites" and c.get(key):
                    rows.setdefault((c["tracer"], c["path"].split(" (")[0]), {}).setdefault(
                        k, []).append(c)
        if not rows:
            return []
        lines = ["", f"## {title}", "", "| tracer | attach path | " + " | ".join(head) + " |",
                 "|---|---|" + "---|" * len(head)]
        for (tracer, path), by in sorted(rows.items()):
            lines.append(f"| {tracer} | {path} | " + " | ".join(
                fmt(pick(by[k]), guests[k][0]) if k in by else "-"
                for k in range(len(guests))) + " |")
        return lines

    def most(cs):
        return max(cs, key=lambda c: c["sites"])
    out += grid("Detach per probe, at the most sites each guest ran", "detach_s", most,
                lambda c, m: f"{f_iv(c['detach_s'], 1000 / c['sites'], clock(m)[1])} "
                             f"({c['sites']} sites)")
    out += grid("Attach, at the most sites each guest ran", "attach_s", most,
                lambda c, m: f"{f_iv(c['attach_s'], unit=clock(m)[0])} ({c['sites']} sites)")
    out += bystander_grid(guests, head)
    text = "\n".join(out) + "\n"
    with open(os.path.join(top, "summary.md"), "w") as f:
        f.write(text)
    return text


def report(folder, args):
    """scripts/report.py's for a lifecycle folder: written and its
    answers printed; an exit status."""
    print("\n".join(write(folder)))
    return 0
