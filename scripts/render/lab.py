"""render/lab.py: everything the report says about a guest of make lab: its
section (kernel, tools, accelerator, pre-flight; instructions per event
under QEMU's -icount, else counts and statuses only; its probe sites),
its column of the 2011 table, in guest instructions, a unit never
compared with the host's ns; and what a lab says across its suites, in
its top folder (results/<stamp>-lab/summary.md): a line per suite
(kernel, SystemTap and its runtime, accelerator, pre-flight, rows), the
configuration x kernel table in guest instructions, and the 2011 post's
probes beside each guest's SystemTap.  report.py writes the summary when
it is given a lab's top folder (lab_folders finds its suites).

Nothing to run: `python3 scripts/report.py results/<stamp>-lab`, or
`from render.lab import lab_markdown`.
"""
import os
import sys

import configs
import record
import stats
from configs import BASELINE
from record import INSTRUCTIONS, timed_for_real
from record.lab import KIND, suites_of  # noqa: F401  (KIND: report.py's registry)
from render import lifecycle
from render.bodies import floor_paragraphs
from render.guesttools import tool_lines
from render.formats import (Notes, f_check, f_ins, f_interval, kernel_facts, runs_cell,
                            skipped_failed, table)
from render.sites import expectation, sites_table
from render.y2011 import Y2011, Y2011_ROWS


def short_kernel(lab):
    """A lab guest's kernel release as a column says it: 7.2.13."""
    return lab.get("kernel", "?").split("+")[0].split("-")[0]


def guest_head(guest):
    """The 2011 table's column for a lab guest's module runtime (GUEST:
    {"a": its analysis, "lab": its meta's lab, "folder": its name})."""
    lab = guest["lab"]
    return (f"{lab.get('stap_runtime', 'module')} runtime, {lab.get('suite')} guest "
            f"{short_kernel(lab)} [instructions/event]")


def guest_line(guest):
    """Where the 2011 table's guest column comes from, and what it counts."""
    lab = guest["lab"]
    return (f"The guest column: `make lab`'s {guest['folder']} (Debian {lab.get('suite')}, "
            f"kernel {lab.get('kernel', '?')}, SystemTap {lab.get('stap', '?')}, "
            + ("`stap --runtime=bpf`" if lab.get("stap_runtime") == "bpf" else
               "`staprun -L`, flight recorder")
            + "), in guest **instructions** per event (QEMU -icount), a unit of "
            "its own: never compared with the ns beside it.")


def guest_2011(guest):
    """The guest's figures for the 2011 rows, in instructions: {row label:
    text}; the bare call's per call, the probes' overhead per event."""
    cells = {c["config"]: c for c in guest["a"]["cells"] if c["threads"] == 1 and c["n_runs"]}
    ov = {n: c["overhead"] for n, c in cells.items()
          if c.get("overhead") and set(c.get("statuses", [])) == {"ok"}}
    base = cells.get(BASELINE)
    skipped = {s["config"] for s in guest["a"].get("skipped", [])}
    out = {"bare call (baseline)": f"{f_ins(base['median_ns'])} a call" if base else "-"}
    for label, _, cfg in Y2011_ROWS:
        o = ov.get(cfg)
        out[label] = f_interval(o["mean_ns"], o["lo_ns"], o["hi_ns"], f_ins) if o else (
            "no baseline" if cfg in cells and not base else
            "/".join(sorted(set(cells[cfg].get("statuses", [])))) if cfg in cells
            else "skipped" if cfg in skipped else "not measured")
    mt, m = ov.get("stap-mark-time"), ov.get("stap-mark")
    out["gettimeofday_ns() share"] = f_ins(mt["mean_ns"] - m["mean_ns"]) if mt and m else "-"
    return out


LAB_HEAD = ["config", "threads", "runs (failed)", "status", "events seen/expected", "runtime",
            "corrupted/calls", "path fired", "note"]


ICOUNT_HEAD = ["config", "threads", "runs (failed)", "status", "median [instructions/call]",
               "overhead [instructions/event]: mean [95% CI]", "events seen/expected",
               "path fired"]


def icount_rows(a):
    """Per cell, in guest instructions: the median per call and the
    overhead per event against the suite's own baseline, the mean always
    beside its interval."""
    rows = []
    for c in a["cells"]:
        o = c.get("overhead")
        ov = "-" if not o else f_interval(o["mean_ns"], o["lo_ns"], o["hi_ns"], f_ins)
        rows.append([c["config"], c["threads"], runs_cell(c),
                     "/".join(sorted({*c.get("statuses", [])})) or "-",
                     f_ins(c["median_ns"]) if c["n_runs"] else "-", ov,
                     f_check(c.get("check")) if c.get("check") else "-", c.get("path") or "-"])
    return rows


def lab_sites(a, meta, unit):
    """A guest's probe sites: what its kernel is expected to do, then
    what it did (as the host's report says them)."""
    if not a.get("sites"):
        return []
    return (["", "### Probe sites on this guest's kernel", ""] + expectation(meta)
            + ["", sites_table(a, meta, unit)])


def lab_markdown(a, lab, meta=None):
    """A guest's section (make lab): its kernel and tools, and under TCG,
    where wall time is emulated, instructions per event (QEMU -icount) or
    else counts and statuses only; then its probe sites, where it ran
    any, checked against what its kernel (META) was expected to do."""
    lines = ["", f"## Guest lab: Debian {lab.get('suite')}", "",
             f"- guest kernel: {lab.get('kernel', '?')}; SystemTap {lab.get('stap', '?')}; "
             f"accelerator: {lab.get('accel', 'none: the guest was not booted')}",
             f"- pre-flight: {lab.get('preflight') or 'SystemTap builds modules for this kernel'}"]
    if "modules_left" in lab:
        left = lab["modules_left"]
        lines.append("- modules left loaded in the guest at the end: "
                     + ("unknown" if left is None else ", ".join(left) or "none"))
    if timed_for_real({"lab": lab}):
        return lines + ["", "Under KVM the times below are real figures for this kernel.", ""]
    if lab.get("icount"):
        lines += ["", "Under TCG with QEMU's -icount shift=0 on one vCPU the guest's clock "
                  "advances 1 ns per instruction, so these figures are **guest instructions**, "
                  "not time: deterministic, comparable across kernels, never with the host's "
                  "ns. Instructions are not cycles (a trap costs far more cycles than "
                  "instructions). Each thread's figure is its own CPU time, user and kernel: "
                  "with one vCPU, threads take turns and the clock counts all of them.", ""]
        lines.append(table(ICOUNT_HEAD, icount_rows(a)))
        return lines + lab_sites(a, meta, INSTRUCTIONS) + skipped_failed(a)
    lines += ["", "Under TCG the guest's times are emulated, not measurements: only counts "
              "and statuses are shown.", ""]
    notes, rows = Notes(), []
    for c in a["cells"]:
        ch = c.get("check") or {}
        rows.append([c["config"], c["threads"], f"{c['n_timed'] - c['n_failed']}"
                     + (f" ({c['n_failed']}/{c['n_timed']} failed)" if c["n_failed"] else ""),
                     "/".join(sorted({*c.get("statuses", [])})) or "-", f_check(ch) if ch else "-",
                     c.get("runtime") or "-",
                     f"{c['corrupted']:,}/{c['calls']:,}" if c.get("path") else "-",
                     c.get("path") or "-", " ".join(notes.ref(r) for r in c["failed_reasons"])])
    lines.append(table(LAB_HEAD, rows))
    return lines + notes.lines() + lab_sites(a, meta, None) + skipped_failed(a)


SUMMARY_HEAD = ["suite", "kernel", "SystemTap", "accel", "pre-flight", "rows"]


lab_folders = suites_of  # (record/lab.py: the lab's top folder)


def kernels_table(folders):
    """Configuration x guest kernel, in instructions per event over each
    suite's own baseline (mean and 95% interval, per thread count), for
    the folders that counted instructions: one look at what a kernel
    changed.  A cell that did not count exactly gives its status, and a
    configuration that could not run there (SystemTap where its pre-flight
    fails) its reason, as a numbered note below."""
    got, cols, notes = {}, [], Notes()
    for d in folders:
        rows, meta, _ = record.load(d)
        if meta.get("unit") != record.INSTRUCTIONS:
            continue
        lab = meta.get("lab", {})
        col = f"{lab.get('suite')} ({short_kernel(lab)})"
        cols.append(col)
        cells = {(c["config"], c["threads"]): c for c in stats.analyse(rows, meta)["cells"]}
        why = {}  # (config, threads) -> {reason: runs} of its rows that did not count exactly
        for r in rows:
            if r["status"] != "ok" and r["reason"] and r["rep"]:  # not a warm-up
                k = why.setdefault((r["config"], int(r["threads"])), {})
                k[r["reason"]] = k.get(r["reason"], 0) + 1
        for r in rows:
            key = (r["config"], int(r["threads"]))
            c = cells.get(key)
            if col in got.get(key, {}):  # one cell, several rows
                continue
            if c:
                got.setdefault(key, {})[col] = kernel_cell(c, why.get(key, {}), notes)
            elif r["status"] == "skipped":
                got.setdefault(key, {})[col] = "skipped " + notes.ref(r["reason"])
    if not cols:
        return []
    order = {c.name: i for i, c in enumerate(configs.CONFIGS)}
    body = [[cfg, n] + [v.get(c, "-") for c in cols]
            for (cfg, n), v in sorted(got.items(), key=lambda kv: (order.get(kv[0][0], 0), kv[0]))
            if cfg != configs.BASELINE]
    return (["", "Overhead per event in guest **instructions** (QEMU -icount; mean [95% "
             "interval]) over each suite's own baseline; never compared with host ns:", "",
             table(["config", "threads"] + cols, body)] + notes.lines())


def kernel_cell(c, reasons, notes):
    """One configuration at one thread count on one kernel."""
    st = sorted(set(c.get("statuses", [])))
    if st and st != ["ok"]:
        never = " (never fired)" if (c.get("path") or "").startswith("none") else ""
        # one reason for the cell (its runs' differ in their figures alone)
        return "/".join(st) + never + (
            f" {notes.ref(min(reasons), sum(reasons.values()))}" if reasons else "")
    o = c.get("overhead")
    if o and o["lo_ns"] is not None:
        return f_interval(o["mean_ns"], o["lo_ns"], o["hi_ns"], f_ins)
    return "no interval"


def summary(top, folders):
    """TOP/summary.md from the suites' FOLDERS: a line per suite, their
    kernel facts, the configuration x kernel table and the 2011 probes in
    instructions; its text."""
    if all(lifecycle.is_lifecycle(d) for d in folders):  # make lab LIFECYCLE=1's
        return lifecycle.lab_summary(top, folders)
    folders = [d for d in folders if not lifecycle.is_lifecycle(d)]  # (one copied in)
    notes, body, guests, labs, loaded = Notes(), [], [], [], []
    for d in folders:
        rows, meta, _ = record.load(d)
        loaded.append((rows, meta))
        lab = meta.get("lab", {})
        labs.append(lab)
        counts = {}
        for r in rows:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        body.append([lab.get("suite"), lab.get("kernel", "?"),
                     f"{lab.get('stap', '?')}, {lab.get('stap_runtime', 'module')} runtime",
                     lab.get("accel", "-") + (f", {len(lab['guests'])} guests at once"
                                              if lab.get("guests") else ""),
                     notes.inline(lab.get("preflight") or "builds modules"),
                     ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
                     + (f"; stopped early: {notes.ref(lab['unfinished'])}"
                        if lab.get("unfinished") else "")])
        if meta.get("unit") == record.INSTRUCTIONS:
            guests.append({"a": dict(stats.analyse(rows, meta), **stats.outcomes(rows)), "lab": lab,
                           "folder": os.path.relpath(d, os.path.dirname(os.path.dirname(d)))})
    lines = [table(SUMMARY_HEAD, body)] + notes.lines()
    lines += kernel_facts(labs, [f"{lab.get('suite')} {short_kernel(lab)}" for lab in labs])
    lines += tool_lines(folders, loaded)
    lines += kernels_table(folders) + lab_2011(guests) + lab_floor(guests)
    text = "\n".join(lines) + "\n"
    os.makedirs(top, exist_ok=True)
    with open(os.path.join(top, "summary.md"), "w") as f:
        f.write(text)
    return text


def lab_2011(guests):
    """The 2011 post's probes (shared/seeds/003: seconds for 10M calls)
    beside each guest's SystemTap, in instructions per event: never the
    same unit, so side by side, never divided."""
    if not guests:
        return []
    y, vals = Y2011, [guest_2011(g) for g in guests]
    body = [["bare call (baseline)", f"{y['bare_s']:.2f} s"]]
    body += [[label, f"{y[key]:.2f} s" if key else "-"] for label, key, _ in Y2011_ROWS]
    body.insert(3, ["gettimeofday_ns() share", f"{y['gettimeofday_s']:.1f} s"])
    for row in body:
        row += [v.get(row[0], "-") for v in vals]
    return ["", "SystemTap's 2011 probes (2011: seconds for 10M calls, Fedora 14, SystemTap 1.3, "
            "`stap -F`) beside each guest's, in instructions per event:", "",
            table(["10M calls, 1 thread", "2011 [s]"]
                         + [guest_head(g) for g in guests], body)]


def lab_floor(guests):
    """The BPF floor in each guest's kernel (issue 68): libbpf's count and
    each BPF front end above it, in that guest's instructions, a kernel a
    paragraph (its report.md's lines)."""
    return floor_paragraphs([(f"In the {g['lab'].get('suite')} guest "
                              f"({short_kernel(g['lab'])})", g["a"]) for g in guests])


def report(folder, args):
    """scripts/report.py's for a lab's top folder: its summary.md written
    and printed; an exit status."""
    suites = lab_folders(folder)
    if suites:
        print(summary(folder, suites))
        return 0
    print(f"report: {folder}: make lab's folder holds no suite's folder", file=sys.stderr)
    return 1
