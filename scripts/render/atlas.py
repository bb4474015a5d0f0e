"""atlas.py: the atlas's README.md (make atlas, scripts/atlas), written
from its folders alone, so the committed tables can be made again from the
committed folders (tests/test_atlas.py): a line per kernel (its suite,
SystemTap, libbpf and its USDT link, pre-flight, rows); the kernel facts that change the figures,
from each guest's own config and its answers to the uprobe and uretprobe
syscalls; configuration x kernel in guest instructions per event (mean
[95% interval]), oldest kernel first, each step between adjacent kernels
larger than both intervals named with the two versions, and the host's ns
on its own kernel in a column of its own (never a ratio: the two units
never meet in one figure); the run-to-run spread of every traced cell
against SPREAD; the uprobe path and the safety verdict of each probe site,
kernel by kernel.

Nothing to run: `python3 scripts/report.py docs/atlas` (is_atlas()), or
`from render.atlas import write`.
"""
import json
import os
import re
import statistics

import configs
import kernel
import kin
import record
from record.atlas import ATLAS_FILE, HOST_FOLDER, KIND, WHERE_DIR
import stats
from render.formats import Notes, f_interval, f_ins, f_ns, table
from render import where
from render.lab import short_kernel
from tracers import libbpf

README = "README.md"
SPREAD = 0.005  # a traced cell's runs, (max - min) / median per call, that -icount should keep to


def is_atlas(folder):
    return record.kind_of(folder) == KIND


def release_key(release):
    """A kernel release's order: 6.12.95 < 6.12.117 < 7.3-rc7 < 7.3.4."""
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?(?:-rc(\d+))?", release or "")
    if not m:
        return (0, 0, 0, 0)
    maj, mi, patch, rc = m.groups()
    return (int(maj), int(mi), 0 if rc else 1, int(rc or patch or 0))


def kernel_suite(lab):
    """The suite a guest's kernel came from: trixie of sid:trixie, sid of sid."""
    suite = lab.get("suite") or "?"
    return suite.partition(":")[2] or suite


def load(folder):
    """The atlas's guests (oldest kernel first) and its host, each
    {"name", "rows", "meta", "a", "lab", "head"}; the host None if absent."""
    guests, hst = [], None
    for name in sorted(os.listdir(folder)):
        d = os.path.join(folder, name)
        if not os.path.isfile(os.path.join(d, "runs.csv")):
            continue
        rows, meta, _ = record.load(d)
        g = {"name": name, "rows": rows, "meta": meta, "lab": meta.get("lab") or {},
             "a": dict(stats.analyse(rows, meta), **stats.outcomes(rows))}
        if name == HOST_FOLDER:
            g["head"] = f"host {meta.get('kernel', '?').split('-')[0].split('+')[0]}"
            hst = g
        elif "lab" in meta and meta.get("unit") == record.INSTRUCTIONS:
            g["head"] = f"{short_kernel(g['lab'])} ({kernel_suite(g['lab'])})"
            guests.append(g)
    guests.sort(key=lambda g: release_key(g["lab"].get("kernel")))
    return guests, hst


def cells(g):
    return {(c["config"], c["threads"]): c for c in g["a"]["cells"]}


def ok_overhead(c):
    """A cell's overhead where every run counted exactly, else None."""
    if not c or sorted(set(c.get("statuses", []))) != ["ok"]:
        return None
    o = c.get("overhead")
    return o if o and o.get("lo_ns") is not None else None


def spread(c):
    """(max - min) / median of a cell's runs, per call; None under two runs."""
    v = list((c or {}).get("per_rep_ns", {}).values())
    return (max(v) - min(v)) / statistics.median(v) if len(v) > 1 and statistics.median(v) else None


def status_cell(c, notes, skipped):
    """A cell that has no interval: its statuses, or why it was skipped."""
    if c:
        st = "/".join(sorted(set(c.get("statuses", [])))) or "-"
        why = sorted(set(c.get("failed_reasons") or []))
        return st + (f" {notes.ref(why[0], len(why))}" if why and st != "ok" else "")
    return f"skipped {notes.ref(skipped)}" if skipped else "-"


def steps(row_o, heads):
    """The steps between adjacent kernels whose intervals do not overlap:
    '6.1 → 6.12.117: +35' (the later mean minus the earlier), '; '-joined."""
    out = []
    for (a, ha), (b, hb) in zip(zip(row_o, heads), zip(row_o[1:], heads[1:])):
        if a and b and (b["lo_ns"] > a["hi_ns"] or b["hi_ns"] < a["lo_ns"]):
            d = b["mean_ns"] - a["mean_ns"]
            out.append(f"{ha.split()[0]} → {hb.split()[0]}: {'+' if d > 0 else ''}{f_ins(d)}")
    return "; ".join(out) or "-"


def main_table(guests, hst):
    """Configuration x kernel in instructions per event, the steps, the
    host's ns; and the cells whose runs spread more than SPREAD."""
    notes, wide = Notes(), []
    got = [cells(g) for g in guests]
    skips = [{s["config"]: s["reason"] for s in g["a"].get("skipped", [])} for g in guests]
    hc = cells(hst) if hst else {}
    hskip = {s["config"]: s["reason"] for s in hst["a"].get("skipped", [])} if hst else {}
    keys = {k for c in got for k in c} | {k for k in hc}
    rank = stats.config_rank(sorted({k[0] for k in keys}))
    body = []
    for cfg, n in sorted(keys, key=lambda k: (rank.get(k[0], 0), k)):
        if cfg == configs.BASELINE:
            continue
        row, os_ = [cfg, n], []
        for g, c, sk in zip(guests, got, skips):
            cell = c.get((cfg, n))
            o = ok_overhead(cell)
            os_.append(o)
            if o:
                s = spread(cell)
                mark = ""
                if s is not None and s > SPREAD:
                    wide.append([cfg, n, g["head"], f"{100 * s:.2f}%", len(cell["per_rep_ns"]),
                                 f_ins(min(cell["per_rep_ns"].values())),
                                 f_ins(max(cell["per_rep_ns"].values()))])
                    mark = " ‡"
                row.append(f_interval(o["mean_ns"], o["lo_ns"], o["hi_ns"], f_ins) + mark)
            else:
                row.append(status_cell(cell, notes, sk.get(cfg)))
        row.append(steps(os_, [g["head"] for g in guests]))
        if hst:
            cell = hc.get((cfg, n))
            o = ok_overhead(cell)
            row.append(f_interval(o["mean_ns"], o["lo_ns"], o["hi_ns"], f_ns) if o
                       else status_cell(cell, notes, hskip.get(cfg)))
        body.append(row)
    heads = (["config", "threads"] + [f"{g['head']} [instructions/event]" for g in guests]
             + ["steps between adjacent kernels [instructions/event]"]
             + ([f"{hst['head']} (its own kernel) [ns/event]"] if hst else []))
    lines = ["## Configuration x kernel", "",
             "Overhead per event over each kernel's own baseline: mean [95% interval]. The "
             "kernels' columns are guest **instructions** (QEMU -icount shift=0, one vCPU: the "
             "guest's clock is 1 ns an instruction); the host's is **ns** of its own clock on "
             "its own kernel. The two units are never divided into each other, and no figure "
             "of one is compared with the other's. A step is named where the intervals of "
             "two adjacent kernels do not overlap. ‡: the cell's runs spread more than "
             f"{100 * SPREAD:.1f}% (below).", "", table(heads, body)] + notes.lines()
    lines += ["", "### Run-to-run spread", ""]
    traced = sum(1 for c in got for k, cell in c.items()
                 if k[0] != configs.BASELINE and ok_overhead(cell) and spread(cell) is not None)
    if not wide:
        lines.append(f"Every traced cell with an interval ({traced}) kept its runs within "
                     f"{100 * SPREAD:.1f}% of their median, per call.")
    else:
        lines += [f"{len(wide)} of the {traced} traced cells with an interval spread more than "
                  f"{100 * SPREAD:.1f}% (max - min over the median, per call). Under -icount a "
                  "run's count changes only with what lands in it: timer ticks, and the "
                  "kernel work a tracer defers (its consumer's reads, RCU callbacks, map "
                  "updates on another thread); the interval beside the figure already holds "
                  "that spread.", "",
                  table(["config", "threads", "kernel", "spread", "runs",
                         "fewest [instructions/call]", "most [instructions/call]"], wide)]
    return lines


def short_path(path):
    """A site's path as a table cell says it: trap, emulated; optimised
    call; never fired; uretprobe syscall (the full text in the legend)."""
    p = path or ""
    if p.startswith("trap"):
        return "trap, " + ("single-stepped" if "single-step" in p else
                           "emulated" if "emulated" in p else p.partition(":")[2].strip())
    if p.startswith("optimised"):
        return "optimised call"
    if p.startswith("none"):
        return "never fired"
    return p.partition(" (")[0].partition(":")[0]


def sites_table(guests, hst):
    """Each probe site's path and verdict per kernel (and on the host): a
    path and a verdict carry no unit, so the host sits beside the guests."""
    cols = guests + ([hst] if hst else [])
    per = [{(s["config"], s["threads"]): s for s in stats.sites(g["a"]["cells"])} for g in cols]
    keys = sorted({k for p in per for k in p if k[1] == 1})
    if not keys:
        return []
    rank = stats.config_rank(sorted({k[0] for k in keys}))
    body, legend, notes = [], {}, Notes()
    for k in sorted(keys, key=lambda k: (rank.get(k[0], 0), k)):
        row = [k[0]]
        for p, c in zip(per, [cells(g) for g in cols]):
            s = p.get(k)
            if s and s["path"]:
                legend.setdefault(short_path(s["path"]), set()).add(
                    re.sub(r" \(\d+ calls seen\)", "", s["path"]))
            path = "" if s and s["verdict"] == kernel.NEVER_FIRES else short_path(s and s["path"])
            row.append(", ".join(x for x in (path, s and s["verdict"]) if x)
                       or (status_cell(c.get(k), notes, None) if c.get(k) else "-"))
        body.append(row)
    return ["", "## Probe sites: the path each kernel took, and its verdict", "",
            "At 1 thread, per configuration of a probe site: the uprobe path the run saw and "
            "the verdict (" + "; ".join(f"{v}: {w}" for v, w in kernel.VERDICTS.items())
            + ").", "", table(["config"] + [g["head"] for g in cols], body), *notes.lines(), "",
            "The paths, as each run's row says them: "
            + "; ".join(f"**{k}**: {' / '.join(sorted(v))}" for k, v in sorted(legend.items()))
            + "."]


def facts(guests, hst):
    """The kernel facts per kernel: its config's (kernel.CONFIG_FACTS, the
    guests' own /boot/config-REL) and its answers to the uprobe syscall
    and the uretprobe syscall (each run's meta.json)."""
    cols = guests + ([hst] if hst else [])

    def answer(m):
        u = m.get("uprobe_optimisation") or {}
        site = kernel.OPTIMISATION.get(u.get("errno"), ("?",))[0]
        return f"{u.get('errno', '?')} (optimises: {site})" if u else "-"

    body = [[label] + [(g["lab"].get("kernel_config") or {}).get(label, "-") for g in cols]
            for label, _ in kernel.CONFIG_FACTS]
    body += [["the uprobe syscall's answer (the site it optimises)"]
             + [answer(g["meta"]) for g in cols],
             ["uretprobe syscall (a return probe's path)"]
             + [kernel.uretprobe(g["meta"]) or "unknown" for g in cols]]
    return ["", "## Kernel facts", "", "What changes the figures, from each guest's own config "
            "and each run's answers (the host's config is not read: `-`):", "",
            table(["fact"] + [g["head"] for g in cols], body)]


def stap_version(meta):
    """The host's SystemTap as its meta.json's tools say it: 4.8/0.188."""
    text = str((meta.get("tools") or {}).get("stap") or "-")
    m = re.search(r"version ([^,\s)]+)", text)
    return m.group(1) if m else text


def libbpf_line(g):
    """Kernel G's libbpf, as the BPF floor's rows (libbpf-sdt-count) met
    it: the library its loader ran on and the link its USDT probe took
    there (a perf_event uprobe, or a uprobe_multi link: libbpf 1.5+ on
    Linux 6.6+); "-" where it did not run."""
    version = libbpf.Libbpf.version_of((g["meta"].get("tracers") or {}).get("libbpf"))
    links = next((h for r in g["rows"] if r["config"] == kin.BPF_FLOOR and r["rep"]
                  and (h := libbpf.held(r.get("note")))), None)
    if not version:
        return "-"
    return version + (f" (USDT: {links})" if links else "")


def kernels_line(guests, hst, own):
    notes, body = Notes(), []
    for g in guests + ([hst] if hst else []):
        lab, counts = g["lab"], {}
        for r in g["rows"]:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        body.append([g["head"], g["meta"].get("kernel") or lab.get("kernel", "?"),
                     g["name"], lab.get("suite", "the host") if g is not hst else "the host",
                     lab.get("stap", "?") if g is not hst else stap_version(g["meta"]),
                     libbpf_line(g),
                     notes.inline(lab.get("preflight") or "builds modules") if g is not hst
                     else "-",
                     ", ".join(f"{v} {s}" for s, v in sorted(counts.items()))])
    head = ["column", "kernel", "folder", "tools", "SystemTap", "libbpf", "module pre-flight",
            "rows"]
    return ([f"Every configuration under Debian {own.get('tools', '?')}'s tools on each "
             "kernel, THREADS=" + ",".join(map(str, own.get("threads", []))) + ", made by "
             "`make atlas` (scripts/atlas) and written by `python3 scripts/report.py "
             "docs/atlas` from the folders beside this file.", "", table(head, body)]
            + notes.lines())


def where_rows(folder):
    """([(kernel head, breakdown)], [(config, kernel head, why not
    measured)]) of the atlas's WHERE=1 labs (where/NAME/), oldest kernel
    first, each with its column head of the main table."""
    top = os.path.join(folder, WHERE_DIR)
    got = []
    for name in sorted(os.listdir(top)) if os.path.isdir(top) else []:
        d = os.path.join(top, name)
        if not os.path.isfile(os.path.join(d, "runs.csv")):
            continue
        rows, meta, _ = record.load(d)
        lab = meta.get("lab") or {}
        b = where.breakdown(where.load(d))
        for c, e in b.items():  # a site no kernel before 7.2 hits: its runs say mismatch
            e["status"] = ", ".join(sorted({r["status"] for r in rows if r["config"] == c}))
        miss = where.unmeasured(rows)
        why = (lab.get("where") or {}).get("why") or f"no {where.WHERE_CSV}"
        for r in rows:  # measured, but not in the breakdown: no windows to read
            if (r["config"] not in b and r["config"] not in miss
                    and not kin.is_baseline(r["config"])):
                miss[r["config"]] = why if not b else "its runs or its baseline's have no window"
        got.append((release_key(lab.get("kernel")), f"{short_kernel(lab)} ({kernel_suite(lab)})",
                    b, miss))
    got.sort(key=lambda x: x[0])
    return ([(head, b) for _, head, b, _ in got if b],
            [(c, head, why) for _, head, _, miss in got for c, why in miss.items()])


def markdown(folder):
    with open(os.path.join(folder, ATLAS_FILE)) as f:
        own = json.load(f)
    guests, hst = load(folder)
    lines = ["# The atlas: what tracing costs, kernel by kernel", ""]
    lines += kernels_line(guests, hst, own)
    have = {kernel_suite(g["lab"]) for g in guests}
    missing = [k for k in own.get("kernels", []) if k not in have]
    if missing:
        lines += ["", "Not measured yet: " + ", ".join(missing)
                  + " (`make atlas ATLAS_KERNELS=+SUITE` adds one)."]
    lines += facts(guests, hst) + [""] + main_table(guests, hst) + sites_table(guests, hst)
    rows, missing = where_rows(folder)
    lines += where.section(rows, missing)
    if rows:  # (the same text whether or not matplotlib drew it: the golden test's)
        lines += ["", f"The steps as bars: [{where.PLOT}]({where.PLOT}) (drawn by the report "
                  "where matplotlib is installed)."]
    return "\n".join(lines) + "\n"


def write(folder):
    """FOLDER/README.md from its folders, and where_by_step.png; its text."""
    plot = os.path.join(folder, where.PLOT)
    if os.path.exists(plot):
        os.remove(plot)  # never a stale one
    where.plot(where_rows(folder)[0], folder)
    text = markdown(folder)
    with open(os.path.join(folder, README), "w") as f:
        f.write(text)
    return text


def report(folder, args):
    """scripts/report.py's for the atlas: its README.md written and its
    path printed; an exit status."""
    print(write(folder))
    return 0
