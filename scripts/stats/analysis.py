"""stats/analysis.py: a results folder's analysis (analyse): every
cell with its overhead and flags, the outcomes and skips, the event
check, the probe sites and the scaling with threads.

Nothing to run: `import stats` (stats/__init__.py names them all).
"""
import os

import configs
import kernel
from bodies import BODY_BUILD
import kin
import workloads
from kernel import NEVER_FIRES
from configs import BASELINE
from record import LOSSLESS, MEASURED, is_witness_run, num
from .cells import NOISY_CV, calls, cell_stats, common, config_rank, overhead, own_figures, tracer_steady
from .stopping import pilot


def analyse(rows, meta):
    """(A cell's every field is set here, so a reader sees the cell whole.)
    The analysis of one folder's tight-loop ROWS: {"cells": [...], the
    outcomes, "has_baseline", "cpus", "sites"}."""
    ncpu = (meta or {}).get("cpus") or os.cpu_count() or 1
    cells, order = {}, []
    for r in rows:
        key = (r["config"], r["threads"])
        if r["config"] not in order:
            order.append(r["config"])
        cells.setdefault(key, []).append(r)
    out = []
    for (config, threads), rs in cells.items():
        timed = [r for r in rs if (r["rep"] or 0) >= 1]
        measured = [r for r in timed if r["status"] in MEASURED]
        n_failed = sum(r["status"] == "failed" for r in timed)
        if not timed:
            continue
        c = {"config": config, "threads": threads, "tracer": rs[0].get("tracer", ""),
             "build": rs[0].get("build", ""), "probe": rs[0].get("probe", ""),
             "path": common(r.get("path") for r in measured),
             "attach": common(r.get("attach") or "before" for r in timed),
             "corrupted": sum(num(r.get("corrupted")) or 0 for r in measured),
             "calls": sum(calls(r) for r in measured),
             "runtime": next((r.get("runtime") for r in measured if r.get("runtime")), ""),
             "iterations": sorted({r["iterations"] for r in measured}),
             "n_timed": len(timed), "n_failed": n_failed,
             "statuses": sorted({r["status"] for r in timed}),
             "stopped": next((r["stopped"] for r in reversed(timed) if r.get("stopped")), ""),
             "failed_reasons": sorted({r["reason"] for r in timed if r["status"] == "failed"}),
             # a real program's runs' notes (its semaphores, bystanders: predict.causes)
             "notes": sorted({r["note"] for r in measured if r.get("note")})
             if kin.real(config) else []}
        c["flags"] = []
        if n_failed:
            c["flags"].append(f"{n_failed}/{len(timed)} runs failed"
                              + (": no figure" if not measured else ""))
        if not measured:
            c.update(n_runs=0, overhead=None, check=None, scaling=None)
            out.append(c)
            continue
        measured_cell(c, [r for r in rs if r["rep"] == 0 and r["status"] in MEASURED
                          and not is_witness_run(r)], measured, ncpu)
        out.append(c)
    rank = config_rank(order)
    out.sort(key=lambda c: (rank[c["config"]], c["threads"]))
    # Each cell against its own baseline (kin.against: BASELINE, or a
    # real program's untraced row) at its thread count.
    against = {c["config"]: kin.against(c["config"]) for c in out}
    base = {(c["config"], c["threads"]): c for c in out
            if against[c["config"]] == c["config"] and c["n_runs"]}
    for c in out:
        b = base.get((against[c["config"]], c["threads"]))
        if c["n_runs"]:
            p = pilot(meta, c["config"], c["threads"])
            cfg = configs.BY_NAME.get(c["config"])
            c["overhead"] = overhead(c, b, p, bool(cfg and cfg.idle)) if b and c is not b else None
            w = workloads.get(cfg.workload) if cfg and cfg.workload else None
            c["own"] = own_figures(c, p, [k for k, _, rate in (w.figures if w else ()) if rate])
    scaling([c for c in out if c["n_runs"]], ncpu)
    return {"cells": out, **outcomes(rows), "cpus": ncpu,
            "has_baseline": any(k[0] == BASELINE for k in base),  # the kit's own
            "sites": sites(out), "bodies": bodies(out, pilot_of=lambda c: pilot(
                meta, c["config"], c["threads"])),
            "floor": floor(out, rows, lambda c: pilot(meta, c["config"], c["threads"]))}


def measured_cell(c, warmups, measured, ncpu):
    """Cell C's figures from its MEASURED runs (and its WARMUPS': the
    tracer's steady CPU), its event check and its flags."""
    c.update(cell_stats(measured))
    c["tracer_steady_ns"], fixed = tracer_steady(warmups, measured)
    c["tracer_fixed_ms"] = None if fixed is None else fixed / 1e6
    c["check"] = event_check(measured)
    if c["corrupted"]:
        c["flags"].append(f"UNSAFE: {c['corrupted']:,}/{c['calls']:,} calls corrupted")
    if c["check"]["verdict"] == "MISMATCH":
        c["flags"].append("EVENT MISMATCH: overhead not trustworthy")
    if c["check"]["verdict"] == NEVER_FIRES:
        c["flags"].append("NEVER FIRES: 0 events, no price per event")
    if c["check"]["verdict"] == "DROPPED":
        c["flags"].append("EVENTS DROPPED: the tracer did not keep up")
    if c["cv"] > NOISY_CV and c["n_samples"] > 1:
        c["flags"].append(f"noisy (cv {c['cv']:.0%})")
    if c["threads"] > ncpu:
        c["flags"].append(f"time-sliced ({c['threads']} threads > {ncpu} CPUs)")


def outcomes(rows):
    """{"skipped": each skipped configuration once with its reason,
    "failed": every failed run (warm-ups included)}, in the rows' order."""
    skipped = [{"config": r["config"], "reason": r["reason"]} for r in rows
               if r["status"] == "skipped"]
    failed = [{"config": r["config"], "threads": r["threads"], "rep": r["rep"],
               "reason": r["reason"]} for r in rows if r["status"] == "failed"]
    return {"skipped": dedup_skips(skipped), "failed": failed}


def dedup_skips(skipped):
    seen, out = set(), []
    for s in skipped:
        if s["config"] not in seen:
            seen.add(s["config"])
            out.append({"config": s["config"], "reason": s["reason"]})
    return out


def workload_sum(rows):
    """The workload's events over ROWS: each run's count, or its witness's
    (events_expected) where the count held more (other processes' hits
    that its tracer could not tell apart); None where no run counted."""
    out = None
    for r in rows:
        seen, exp = num(r.get("events_seen")), num(r.get("events_expected"))
        if seen is not None:
            out = (out or 0) + (exp if exp is not None and seen > exp else seen)
        elif exp is not None and r["status"] == "unverified":  # a user's script's: the witnesses'
            out = (out or 0) + exp
    return out


def event_check(rows):
    """A cell's ROWS' counts, in all, and their verdict: a finding first
    (CORRUPTED, MISMATCH), then a loss (DROPPED: a run whose tracer said it
    lost events, whatever else its row could not say: a user's script's,
    `unverified`, counts nothing yet says what it lost; a run that lost
    some beside one that never fired), then NEVER FIRES, then the weakest
    of the rest."""
    exp = [num(r.get("events_expected")) for r in rows]
    seen = [num(r.get("events_seen")) for r in rows]
    dropped = sum(num(r.get("events_dropped")) or 0 for r in rows)
    statuses = {r["status"] for r in rows}
    if "corrupted" in statuses:
        verdict = "CORRUPTED"
    elif "mismatch" in statuses:
        verdict = "MISMATCH"
    elif "dropped" in statuses or dropped:  # losses come first: no count to price
        verdict = "DROPPED"
    elif statuses == {"never-fires"}:  # 0 events, witnessed: a finding (record.never_fired)
        verdict = NEVER_FIRES
    elif "never-fires" in statuses:  # fired in some runs, in others not: no count to trust
        verdict = "unverified"
    elif all(e is None for e in exp):
        verdict = "unverified" if "unverified" in statuses else "n/a"
    elif "overwritten" in statuses:
        verdict = "overwritten"
    elif "unverified" in statuses:  # some runs had a witness (agreed), some none
        verdict = "unverified"
    elif "agreed" in statuses:  # a witness's count, not the program's (record.STATUSES)
        verdict = "agreed"
    else:
        verdict = "ok"
    return {"expected": sum(e for e in exp if e is not None) if any(e is not None for e in exp)
            else None,
            "seen": sum(s for s in seen if s is not None) if any(s is not None for s in seen)
            else None,
            "dropped": dropped, "verdict": verdict,
            # the workload's own events where some run's count held other
            # processes' too (its witness's: measure/witness.mixed), run by run
            **({"workload": work} if (work := workload_sum(rows)) != (
                sum(x for x in seen if x is not None) if any(x is not None for x in seen)
                else None) else {}),
            # a probe by path's hits in other processes, where counted apart (cgroups.py)
            **({"others": sum(o)} if (o := [n for r in rows if (n := num(
                r.get("events_others"))) is not None]) else {}),
            # why it never fired, as its first such run's reason says (silence.py)
            **({"why": next(r["reason"] for r in rows if r["status"] == "never-fires")}
               if verdict == NEVER_FIRES else {})}


def sites(cells):
    """The probe-site table: every cell of a uprobe-based probe whose row
    says which path it took, or that was judged by the canary; per cell
    its order of attach (configs.ATTACH), cost, corrupted/total calls, path
    and verdict (kernel.VERDICTS: UNSAFE where the canary caught the probe
    writing the program's data, NEVER FIRES where it saw nothing, REFUSED
    where the kernel refused the probe, CRASHES where the target died)."""
    out = []
    for c in cells:
        if (not c.get("path") and not c.get("build", "").endswith("-canary")) \
                or kin.real(c["config"]):  # a real program's: not one of the kit's sites
            continue
        o = c.get("overhead")
        seen = (c.get("check") or {}).get("seen")
        failed = c["failed_reasons"] if not c.get("n_runs") else []
        verdict = ("UNSAFE" if c["corrupted"] else
                   "REFUSED" if failed and all(map(kernel.refused, failed)) else
                   "CRASHES" if failed and all(map(kernel.crashed, failed)) else
                   "" if not c.get("n_runs") else
                   NEVER_FIRES if seen == 0 and c["probe"] != "marker-noref" else
                   "safe" if c["build"].endswith("-canary") else "")
        out.append({"config": c["config"], "build": c["build"], "probe": c["probe"],
                    "tracer": c["tracer"], "threads": c["threads"], "attach": c["attach"],
                    "ns_per_event": o["mean_ns"] if o else None, "corrupted": c["corrupted"],
                    "calls": c["calls"], "path": c["path"], "verdict": verdict})
    return out


def bodies(cells, pilot_of=lambda c: None):
    """The probe-body table (bodies.BODIES): per body cell, its price per
    event (its overhead against the baseline) and its share: what it costs
    an event beyond the row it is priced beside (configs' beside: its
    back-end's plainest probe on the same build, at the same threads), the
    two cells' difference with its interval (cells.overhead, paired over
    their repetitions); what it lost (a body that sends every event to
    user space) and the loss as a fraction of its events; a cell with no
    runs says why (its runs' failure)."""
    by = {(c["config"], c["threads"]): c for c in cells}
    out = []
    for c in cells:
        cfg = configs.BY_NAME.get(c["config"])
        if not cfg or cfg.build != BODY_BUILD or cfg.tracer == "none":
            continue
        ref = by.get((cfg.beside, c["threads"])) if cfg.beside else None
        share = None
        if c["n_runs"] and ref and ref.get("n_runs"):
            share = overhead(c, ref, pilot_of(c))
        check = c.get("check") or {}
        made = (check.get("seen") or 0) + (check.get("dropped") or 0)
        out.append({"config": c["config"], "tracer": c["tracer"], "threads": c["threads"],
                    "body": cfg.description.removeprefix("body: "), "beside": cfg.beside,
                    "price": c.get("overhead"), "share": share,
                    "verdict": check.get("verdict"), "lost": check.get("dropped"),
                    "lost_fraction": check["dropped"] / made if made and check.get("dropped")
                    is not None else None,
                    "failed": c["failed_reasons"] if not c.get("n_runs") else []})
    return out


def floor(cells, rows, pilot_of=lambda c: None):
    """The BPF floor (kin.BPF_FLOOR, issue 68): each BPF front end's
    twin (kin.ABOVE_FLOOR) priced above libbpf's count at each thread
    count both counted every event: the two cells' paired difference with
    its interval (cells.overhead, as a body's share), with the runtime its
    rows ran on (SystemTap's only where it is bpf: a module is no BPF
    tracer)."""
    by = {(c["config"], c["threads"]): c for c in cells}
    runtimes = {}
    for r in rows:
        if r.get("runtime"):
            runtimes.setdefault(r["config"], set()).add(r["runtime"])
    out = []
    for tracer, name in kin.ABOVE_FLOOR.items():
        if tracer == "stap" and runtimes.get(name) != {"bpf"}:  # (a module is no BPF tracer)
            continue
        for c in (c for c in cells if c["config"] == name):
            ref = by.get((kin.BPF_FLOOR, c["threads"]))
            if not (ref and c["n_runs"] and ref["n_runs"] and all(
                    (x.get("check") or {}).get("verdict") in LOSSLESS for x in (c, ref))):
                continue
            out.append({"tracer": tracer, "config": name, "threads": c["threads"],
                        "unit": c["unit"],  # (cell_stats: ns, or a lab guest's instructions)
                        "runtime": "/".join(sorted(runtimes.get(name, ()))),
                        "floor": ref.get("overhead"), "price": c.get("overhead"),
                        "above": overhead(c, ref, pilot_of(c))})
    return out


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
