"""lab/merge.py: the guests' results folders brought back into one,
results/<stamp>-lab/SUITE/: each guest's folder read out of its image
(guest_folder), the first taken whole and the others' rows added but for
their baselines, the guests' logs, consoles and timings kept, the cells
no guest reached skipped saying why, the lab's facts in meta.json "lab"
(bring_back); and a folder of skipped rows where no guest ran at all
(skipped_folder).  With LIFECYCLE=1 the one guest's make lifecycle folder
is taken whole (bring_back_lifecycle), or, where it wrote none, a
lifecycle folder that says why (lifecycle_folder).

Nothing to run: lab/steps.py calls it.
"""
import csv
import glob
import os
import shutil

import configs
import host
import kin
import record
from host import say
from measure import plan
from record.lifecycle import KIND
from record import where

from . import where as symbols
from .common import TIMINGS, LabError


def guest_folder(suite, g, why):
    """The results folder G's runner wrote, out of its kit's drive (WHY: it did
    not finish, so its file system's journal is replayed first, and it
    may have written none); LabError saying why there is none."""
    if why and not g.reached:
        raise LabError(why)
    if why:
        say(f"lab: {g.name}: {why}; keeping the rows it wrote")
    got = suite.fetch(g.img, replay=bool(why))
    inner = [d for d in glob.glob(os.path.join(got, "2*")) if os.path.isdir(d)]
    if len(inner) == 1:
        return got, inner[0]
    last = ""
    if os.path.exists(os.path.join(got, "lab-run.log")):
        with open(os.path.join(got, "lab-run.log"), errors="replace") as f:
            last = ([ln.strip() for ln in f if ln.strip()] or [""])[-1]
    raise LabError(why or f"the guest's runner wrote {len(inner)} results folders, "
                   "not 1" + (f": {last}" if last else ""))


def bring_back(suite, ended, extra):
    """The guests' results folders become one, results/<stamp>-lab/SUITE/,
    with the lab's facts in its meta.json.  ENDED: [(guest, why it did not
    finish, or None)].  The first guest's folder is taken whole; the
    others' rows are added but for their baselines (each guest's own
    yardstick, kept in logs/runs-K.csv), so every cell is measured against
    one baseline.  A cell a guest did not reach is a skipped row saying
    why; LabError if no guest wrote a folder."""
    got, failed = [], []
    for g, why in ended:
        try:
            got.append((g, why, *guest_folder(suite, g, why)))
        except LabError as e:
            failed.append((g, str(e)))
    if not got:
        raise LabError(failed[0][1])
    first = got[0][3]
    shutil.copytree(first, suite.out)
    folder = record.Folder.reopen(suite.out)
    timings = {}
    left = None  # the kit_ modules lsmod listed in the guests at the end
    have = {(r["config"], str(r["threads"])) for r in record.load(suite.out)[0]}  # the first's
    for g, why, res, inner in got:
        if inner != first:
            have |= add_rows(folder, g, inner, have)
        left = keep_logs(folder.logs, g, res, timings, left)
    for g, *_ in got + failed:
        with open(os.path.join(folder.logs, f"console{g.sfx}.log"), "w") as f:
            f.write(g.text())
    # what sizes the next lab's runs; not WHERE=1's, whose runs are of a
    # fixed size (WHERE_ITER), and which may end beside a lab of the suite
    for name, cells in ({} if suite.plugin else timings).items():
        path = os.path.join(suite.dir, name)
        host.write_json(path, dict(plan.load(path), **cells))
    folder.meta["lab"] = dict(extra, modules_left=left)
    if len(ended) > 1:
        folder.meta["lab"]["guests"] = [{"guest": g.name, "configs": [c.name for c in g.cfgs],
                                         "unfinished": why} for g, why in ended]
    skip_unrun(suite, folder, [(g, why) for g, why, *_ in got if why] + failed, got[0][0])
    folder.close()
    if suite.plugin:
        where_counts(suite)
    return suite.out


def where_counts(suite):
    """WHERE=1: the plugin's output moved into the folder's logs/ and made
    where.csv (lab/where.py), what it found said in meta.json "lab"."""
    raw = suite.plugin[1]
    meta, _ = record.read_meta(suite.out)
    got = {"windows": 0, "why": "where.csv not made: the plugin wrote nothing (qemu did not "
                                "load it?)"}
    if os.path.exists(raw):
        shutil.move(raw, os.path.join(suite.out, "logs", where.RAW))
        try:
            got = symbols.symbolise(suite.out)
        except (OSError, ValueError, record.BadInput) as e:
            got = {"windows": 0, "why": f"where.csv not made: {e}"}
    say(f"lab: {suite.name}: " + (got["why"] if "why" in got else
                                  f"the plugin's windows: {got['matched']} of {got['windows']} "
                                  "matched to runs, where.csv written"))
    meta.setdefault("lab", {}).setdefault("where", {}).update(got)
    host.write_json(os.path.join(suite.out, "meta.json"), meta)


def add_rows(folder, g, inner, have=()):
    """Guest G's rows (its folder INNER) added to FOLDER but for the
    baselines' cells FOLDER already HAS, (config, threads) (the kit's, a
    real program's untraced row: each cell is measured against one), its
    runs.csv kept whole as logs/runs-K.csv, its logs added (the first
    guest's win) and its skips and tracers merged; the cells it added."""
    added = set()
    with open(os.path.join(inner, "runs.csv"), newline="") as f:
        for row in csv.DictReader(f):
            cell = (row["config"], str(row["threads"]))
            if not (kin.is_baseline(row["config"]) and cell in have):
                folder.write(row)
                added.add(cell)
    shutil.copy(os.path.join(inner, "runs.csv"), os.path.join(folder.logs, f"runs{g.sfx}.csv"))
    for log in glob.glob(os.path.join(inner, "logs", "*")):
        dst = os.path.join(folder.logs, os.path.basename(log))
        if not os.path.exists(dst) and os.path.isfile(log):
            shutil.copy(log, dst)
    other, why = record.read_meta(inner)
    if why:
        say(f"lab: {g.name}: {why}")
    for key in ("skipped", "tracers"):
        folder.meta[key] = dict(other.get(key) or {}, **(folder.meta.get(key) or {}))
    return added


def keep_logs(logs, g, res, timings, left):
    """Guest G's own timings (of its cells, into TIMINGS by file name), its
    runner's log and list of modules left (RES: what it wrote) kept in
    the folder LOGS; LEFT with the modules it listed added."""
    for t in glob.glob(os.path.join(res, TIMINGS.format("*"))):  # each guest's own cells
        theirs = plan.load(t)
        mine = {c.name: theirs[c.name] for c in g.cfgs if c.name in theirs}
        timings.setdefault(os.path.basename(t), {}).update(mine)
    for name in ("lab-run.log", "modules-left.txt", where.KALLSYMS):
        if os.path.exists(os.path.join(res, name)):
            base, ext = os.path.splitext(name)  # (kallsyms: WHERE=1's one guest's, as where.py reads it)
            sfx = "" if name == where.KALLSYMS else g.sfx
            shutil.copy(os.path.join(res, name), os.path.join(logs, base + sfx + ext))
    if os.path.exists(os.path.join(res, "modules-left.txt")):
        with open(os.path.join(res, "modules-left.txt")) as f:
            left = (left or []) + [ln.split()[0] for ln in f if ln.strip()]
    return left


def skip_unrun(suite, folder, unfinished, keeper):
    """Skipped rows in FOLDER for each cell an UNFINISHED guest ([(guest,
    why)]) did not reach (the baseline only for KEEPER, whose baseline the
    folder has), and for what could not be built (suite.unbuilt)."""
    ran = {(r["config"], r["threads"]) for r in record.load(suite.out)[0]}
    if unfinished:
        folder.meta["lab"]["unfinished"] = unfinished[0][1]
    for g, why in unfinished:
        for c in g.cfgs:
            if c.name == configs.BASELINE and g is not keeper:
                continue  # the folder's baseline is another guest's
            left = [n for n in suite.threads if (c.name, n) not in ran]
            folder.skipped(c, left, f"lab: {why}: not run")
            ran |= {(c.name, n) for n in left}  # a family's baseline: in several guests
    if suite.unbuilt:  # skipped rows for what could not be built, as runs.csv's own
        for c in suite.configs():
            if c.name in suite.unbuilt:
                folder.skipped(c, suite.threads, suite.unbuilt[c.name])
        folder.meta["skipped"] = dict(folder.meta.get("skipped") or {}, **suite.unbuilt)


def bring_back_lifecycle(suite, g, why, extra):
    """Guest G's make lifecycle folder (WHY: it did not finish) as
    results/<stamp>-lab/SUITE/, its console and runner's log in logs/, the
    lab's facts in its meta.json "lab"; LabError if it wrote none."""
    got, inner = guest_folder(suite, g, why)
    shutil.copytree(inner, suite.out)
    logs = os.path.join(suite.out, "logs")
    os.makedirs(logs, exist_ok=True)
    left = keep_logs(logs, g, got, {}, None)
    with open(os.path.join(logs, f"console{g.sfx}.log"), "w") as f:
        f.write(g.text())
    meta, _ = record.read_meta(suite.out)  # ({} where the guest died before writing it)
    meta.setdefault("kind", KIND)
    meta.setdefault("unit", record.INSTRUCTIONS if g.icount else record.NS)
    meta.setdefault("kernel", extra.get("kernel"))
    meta["lab"] = dict(extra, modules_left=left, **({"unfinished": why} if why else {}))
    host.write_json(os.path.join(suite.out, "meta.json"), meta)
    return suite.out


def lifecycle_folder(suite, reason, extra):
    """A make lifecycle folder for SUITE with no rows: REASON, in meta.json."""
    os.makedirs(os.path.join(suite.out, "logs"), exist_ok=True)
    host.write_json(os.path.join(suite.out, "meta.json"), {
        "kind": KIND, "started": record.now(), "kernel": extra.get("kernel"),
        "failed": reason, "lab": dict(extra, suite=suite.name, preflight=extra.get(
            "preflight", reason))})
    return suite.out


def skipped_folder(suite, reason, extra):
    """A results folder of skipped rows for SUITE: REASON for every row."""
    folder = record.Folder(os.path.dirname(suite.out), name=suite.slug)
    for c in suite.configs():
        folder.skipped(c, suite.threads, reason)
    folder.meta["lab"] = dict(extra, suite=suite.name, preflight=reason)
    folder.close()
    return folder.dir
