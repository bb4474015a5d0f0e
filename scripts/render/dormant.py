"""render/dormant.py: the report of make run AGAINST='B' WORKLOAD='A''s
folder (record/dormant.py): per thread count, A against B in % of B's
time with its 95% interval, the verdict, the method, the half-width asked
and reached (and what would reach it), and, where passages were counted,
the price per marker passage in ns.  report.md and report.json in the
folder; the answer on stdout.  The statistics: stats/paired.py.

    python3 scripts/report.py results/<stamp>-dormant
"""
import csv
import json
import math
import os
import shlex

from record.dormant import DORMANT_CSV, KIND, METHODS, SAME  # noqa: F401  (KIND: report.py's)
from stats import paired


def figures(folder):
    """{threads: [round figures in % of B, in the order they ran]} from
    dormant.csv (a round whose four runs are not all there is left out)."""
    rounds = {}
    with open(os.path.join(folder, DORMANT_CSV), newline="") as f:
        for row in csv.DictReader(f):
            key = (int(row["threads"]), int(row["round"]))
            rounds.setdefault(key, {"A": [], "B": []})[row["side"]].append(int(row["wall_ns"]))
    out = {}
    for (threads, _), sides in sorted(rounds.items()):
        if len(sides["A"]) == 2 and len(sides["B"]) == 2:
            out.setdefault(threads, []).append(paired.round_figure(sides["A"], sides["B"]))
    return out


def per_passage(ans, b_wall_ns, passages):
    """(mean, lo, hi) ns a marker passage: the difference in ns of a run
    of B's time over the passages in one run of A (one copy)."""
    if not passages:
        return None
    return tuple(p / 100 * b_wall_ns / passages for p in
                 (ans["mean_pct"], ans["lo_pct"], ans["hi_pct"]))


def answers(folder):
    """(meta, {threads: answer}) with each answer's figures from the rows."""
    with open(os.path.join(folder, "meta.json")) as f:
        meta = json.load(f)
    got = {}
    passages = meta.get("passages")
    total = sum(passages.values()) if isinstance(passages, dict) else 0
    for threads, figs in figures(folder).items():
        m = meta["answers"].get(str(threads), {})
        if len(figs) < 2:
            continue
        ans = paired.answer(figs, min(m.get("pilot", len(figs)), len(figs)))
        ans["figures"] = figs
        ans.update(need=m.get("need"), fit=m.get("fit"), round_s=m.get("round_s"),
                   b_wall_ns=m.get("b_wall_ns"), method=m.get("method"))
        ans["per_passage_ns"] = per_passage(ans, ans["b_wall_ns"] or 0, total)
        got[threads] = ans
    return meta, got


def line(threads, ans, asked):
    ci = f"{ans['mean_pct']:+.2f}% [{ans['lo_pct']:+.2f}, {ans['hi_pct']:+.2f}]"
    words = (f"no difference detectable above +-{ans['half_pct']:.2f}%" if ans["verdict"] == SAME
             else f"{ans['verdict']}")
    more = ""
    if ans["half_pct"] > asked:  # (as the rule's later stages reckon it: stats/paired.py)
        need = math.ceil(ans["rounds"] * (ans["half_pct"] / asked) ** 2 * 1.1)
        more = (f"; +-{asked:g}% asked, +-{ans['half_pct']:.2f}% reached: about {need} rounds "
                f"would reach it, {math.ceil(need * (ans['round_s'] or 0))} s (DORMANT_S)")
    pp = ans.get("per_passage_ns")
    price = (f"; {pp[0]:,.2f} ns [{pp[1]:,.2f}, {pp[2]:,.2f}] a passage" if pp else "")
    return (f"{threads} cop{'y' if threads == 1 else 'ies'}: A against B {ci} of B's time, "
            f"{words} ({ans['rounds']} {ans['method']} rounds){price}{more}")


def write(folder):
    """report.md and report.json written; the lines to print."""
    meta, got = answers(folder)
    a, b = shlex.join(meta["workload"]), shlex.join(meta["against"])
    out = [f"What the markers cost while no one traces, on {meta['cpus']} CPUs, Linux "
           f"{meta['kernel']}:", "", f"A (WORKLOAD): {a}", f"B (AGAINST):  {b}",
           f"95% intervals; asked +-{meta['precision_pct']:g}% of B's time, "
           f"{meta['budget_s']:g} s at most; the methods:"]
    out += [f"  {m}: {METHODS[m]}" for m in sorted({x["method"] for x in got.values()})] + [""]
    if meta.get("error"):
        out.append(f"not answered: {meta['error']}")
    out += [line(t, ans, meta["precision_pct"]) for t, ans in sorted(got.items())]
    passages = meta.get("passages")
    if isinstance(passages, dict):
        out += ["", "passages of one run of A (one copy), the kernel's hit counter of a uprobe "
                "on each marker, one run apart from the timed ones: "
                + ", ".join(f"{k} {v:,}" for k, v in sorted(passages.items()))]
        if not sum(passages.values()):
            out.append("the markers never fired in A: no price per passage")
    elif passages:
        out += ["", f"passages not counted: {passages}"]
    with open(os.path.join(folder, "report.md"), "w") as f:
        f.write("# " + out[0] + "\n\n" + "\n".join(
            ("- " + x if x else "") for x in out[1:]) + "\n")
    with open(os.path.join(folder, "report.json"), "w") as f:
        json.dump({"workload": meta["workload"], "against": meta["against"],
                   "passages": passages,
                   "answers": {str(t): ans for t, ans in got.items()}}, f, indent=1)
    return out


def report(folder, args):
    """scripts/report.py's for a dormant folder: an exit status."""
    print("\n".join(write(folder)))
    return 0
