"""lava/cases.py: each cell of a results folder as a lava-test-case
measurement, the words a LAVA test shell reports (`python3 scripts/lava
cases FOLDER`; lava/kit.yaml runs it with --report in the guest).

A cell is named CONFIG-tTHREADS, measured as its cost per event over its
own baseline (the report's mean), in the folder's unit (ns, or
instructions in a guest under -icount), with CONFIG-tTHREADS-lo and -hi
for its 95% interval's bounds; a baseline's cell is its time a call, and
so is a real program's cell whose events nothing counted, its units
saying so (ns/call: a cost a call is never passed off as one an event).
Its result: pass where every timed run is lossless, skip where it was
skipped, fail otherwise (the reason is the report's).
"""
import re

import configs
import kin
import predict
import workloads
from record import LOSSLESS, load
from stats import analyse

NAME_OK = re.compile(r"[^-_.a-zA-Z0-9]")  # lava-test-case names: no spaces or slashes


def cases(folder):
    """[(name, result, measurement or None, unit)] of FOLDER's cells."""
    rows, meta, _ = load(folder)
    a = analyse([r for r in rows if (r["rep"] or 0) >= 1], meta)
    unit = meta.get("unit") or "ns"
    out = []
    for c in a["cells"]:
        name = NAME_OK.sub("_", f"{c['config']}-t{c['threads']}")
        statuses = set(c["statuses"])
        result = ("skip" if statuses <= {"skipped"} else
                  "pass" if c["n_runs"] and statuses <= set(LOSSLESS) else "fail")
        o = c.get("overhead")
        cfg = configs.BY_NAME.get(c["config"])
        if kin.is_baseline(c["config"]):  # its time a call
            out.append((name, result, c.get("mean_ns") if c["n_runs"] else None, unit))
            continue
        if not o:  # no figure: not a time a call under a cost's name
            out.append((name, result, None, unit))
            continue
        per = unit
        if cfg and cfg.workload:  # per event, as the report says it: where counted
            o = predict.per_event(c, workloads.get(cfg.workload))
            per = unit if o["per"] == "event" else f"{unit}/{o['per']}"  # (a call's: said)
        out.append((name, result, o["mean_ns"], per))
        for end in ("lo", "hi"):
            if o[f"{end}_ns"] is not None:
                out.append((f"{name}-{end}", result, o[f"{end}_ns"], per))
    timed = {(c["config"], c["threads"]) for c in a["cells"]}
    for r in rows:  # a skipped row has no repetition: no cell of the analysis
        key = (r["config"], r["threads"])
        if r["status"] == "skipped" and key not in timed:
            timed.add(key)
            out.append((NAME_OK.sub("_", f"{r['config']}-t{r['threads']}"), "skip", None, unit))
    return out


def case_args(name, result, value, unit):
    return (["lava-test-case", name, "--result", result]
            + ([] if value is None else ["--measurement", f"{value:.4f}", "--units", unit]))
