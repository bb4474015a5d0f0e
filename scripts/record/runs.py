"""record/runs.py: the row's one author, and the one home of a results
folder, shared by the runner (measure/, which writes results/<stamp>/),
the lab (lab/, which appends a guest's rows) and the report (render/,
which reads them): the columns, the statuses and what each means, the
target's record and its format, the row builders (a measured, a skipped
and a failed run's row), and the folder's writer (Folder) and reader
(load).  The verdict that turns what a tracer saw into a status is
record/verdicts.py's: it reads none of this, and the statuses it gives
are said here, once.

Nothing to run; `python3 scripts/record` prints the statuses.
"""
import csv
import datetime
import json
import os
from dataclasses import dataclass

import host

# meta.json's "format_version": 2 added the columns sized_by and pinned
# and the status `dropped`; 3 moved meta's "stap" into "tracers" (one line
# per back-end); 4 added rate, calls, pacing, late, machine_busy_ns,
# machine_source and proc_stat_busy_ns (a row without a rate is a
# tight-loop row), corrupted and path, and the status `corrupted`; 5 added
# unit (what the target's clock counted: ns, or guest instructions under
# QEMU's -icount; a row without it is ns); 6 added stopped (on a cell's
# last run: why it ran no more); 7 added attach (configs.ATTACH: the
# order of probe and target; a row without it is "before"), fork_calls and
# fork_corrupted (the parent's calls before a fork, and of them those whose
# canary changed); 8 added meta's "stopping" (how cells stopped: Stein's two
# stages from a pilot of MIN_RUNS (see 9), or RUNS fixed; the report's interval
# follows it, and a folder without it is read with the plain t interval);
# 9 added its "pilot_s" and "pilots" (each tight-loop cell's pilot, PILOT_S:
# "config/threads": runs; a cell not named there piloted "pilot" runs);
# 10 added workload (a real program's own figures of the run, a JSON
# object: pgbench's tps, latency_ms); 12 added events_others (a probe by
# path's hits in processes not the workload's, counted apart from
# events_seen: cgroups.py; empty where the tracer cannot tell them apart);
# 13 added meta's "script" (a run of a user's SCRIPT: userscript.record),
# its copy and its runs' output (logs/*.script.out).
# 14 added meta's "kind" (record/: each writer's stamp; this one's KIND).
# 15 added the witness run (rep 0, sized_by WITNESS_RUN: is_witness_run).
# Older folders still read.
FORMAT_VERSION = 15
KIND = "runs"  # meta.json's "kind" (record.kind_of)
RUNS_CSV = "runs.csv"

COLUMNS = [
    "started", "config", "build", "tracer", "probe", "action", "threads", "iterations", "rep",
    "status", "reason", "events_expected", "events_seen", "events_dropped", "wall_ns",
    "thread_wall_ns", "thread_user_ns", "thread_sys_ns", "thread_cpu_ns", "process_user_ns",
    "process_sys_ns", "tracer_user_ns", "tracer_sys_ns", "runtime", "sized_by", "pinned", "note",
    "rate", "calls", "pacing", "late", "machine_busy_ns", "machine_source", "proc_stat_busy_ns",
    "corrupted", "path", "unit", "stopped", "attach", "fork_calls", "fork_corrupted",
    "workload", "events_others",
]
# What the target's own clock counts (a row's and meta.json's "unit"): host
# nanoseconds, or guest instructions (make lab under QEMU's -icount
# shift=0, where the guest's clock advances 1 ns per instruction).  The two
# are never put in one column, plot or comparison.
UNITS = (NS, INSTRUCTIONS) = ("ns", "instructions")
DEFAULT_UNIT = NS


def timed_for_real(meta):
    """A folder's times are measurements (the host, or a guest under
    KVM): False for a lab guest under TCG, whose clock is emulated (its
    figures are instructions under -icount, else only counts and statuses
    are shown), and whose figures are never drawn or set beside another's."""
    return (meta.get("lab") or {}).get("accel", "kvm") == "kvm"


# A witness run's sized_by: a run of a tracer that counts with the
# kernel's help at a cost no timed run carries (Tracer.witness_run), added
# after a real program's cell whose timed runs nothing witnessed; rep 0,
# never timed, never a warm-up: its count, the kernel's, witnesses the
# timed runs of its family (measure/witness.py).
WITNESS_RUN = "witness run: untimed, the kernel counting"


def is_witness_run(row):
    """ROW (as read, or as written) is a witness run (WITNESS_RUN)."""
    return str(row.get("rep")) == "0" and (row.get("sized_by") or "").startswith(WITNESS_RUN)


def log_name(config, threads, rep, paced="", witness=False):
    """A run's log's name in its folder's logs/ (measure/kit.py writes
    it, lab/where.py reads it): PACED its rate's suffix, WITNESS a witness
    run's (whose rep 0 a warm-up's log has)."""
    return f"{config}-t{threads}{paced}-{'witness' if witness else f'r{rep}'}.log"


# What a row must have for the report to read it at all.
REQUIRED = ["config", "threads", "iterations", "rep", "status", "thread_wall_ns"]

# Every status a row can have, and what it means; the order is the report's.
STATUSES = {
    "ok": "the tracer saw exactly the events expected",
    "agreed": "the program keeps no count, and the tracer's equals an independent witness's "
              "exactly: the kernel's hit counter in the same run, or every other tracer's "
              "count of the same command, or a witness run's, whose count the kernel's "
              "witnessed (WITNESS_RUN; the reason names it); it shows that no event was "
              "lost between the trap and the tracer, not that the site is the one meant "
              "(a probe by path's hits in other processes are counted apart, events_others; "
              "where any fired, the hit counter witnesses nothing)",
    "dropped": "the tracer said it lost events (its own drop counter), and what it saw and "
               "lost add up to every event: it did not keep up",
    "overwritten": "a flight recorder whose buffer wrapped kept only the newest events, "
                   "with no gap among those it kept",
    "unverified": "the configuration cannot count its events (a configuration whose expect is 'unverifiable')",
    "mismatch": "the tracer saw a different number of events than expected, and said "
                "nothing of a loss, or a loss that does not add up to every event",
    "corrupted": "the probe changed the program's data: calls whose red-zone sentinel was "
                 "overwritten (canary builds); whatever it counted, the site is unsafe here",
    "never-fires": "a real program's marker fired in none of the run's calls: the tracer saw "
                   "0 events and so did its witness (the program's own count, the kernel's "
                   "hit counter or the other tracers); a finding, never agreement, and never "
                   "priced per event (the reason says what the kit found of why)",
    "failed": "the run did not complete (the reason says why); its times are not used",
    "skipped": "the configuration cannot run here (the reason says why)",
}
# Statuses whose times are measurements (the target ran to its end).
MEASURED = ("ok", "agreed", "dropped", "overwritten", "unverified", "mismatch", "corrupted",
            "never-fires")
# Statuses that lost no event: what "lossless" means everywhere in the kit
# (the report's lossless limits, docs/results-format.md).  `overwritten` is lossless in this
# sense and in no other: the flight recorder took every event (no drop
# counter moved, no gap among those it kept) and then, by design, kept only
# the newest, so the older ones were recorded but are not there to count.
# It is never `ok`, which alone means every event was seen and counted.
LOSSLESS = ("ok", "agreed", "overwritten")
# Statuses that are a finding about the probe rather than a cost to quote.
FINDINGS = ("mismatch", "corrupted", "never-fires")


# The target's record (src/benchmark.c's RECORD_FORMAT, its first field):
# the runner takes the one line of the target's stdout that opens with it.
TARGET_FORMAT = "kit-target-record/1"
TARGET_RECORD_START = '{"format":'


def target_record(text):
    """(the target's record, None) from TEXT, the target's stdout (with
    whatever a tracer printed there), or (None, why not)."""
    recs = [ln for ln in text.splitlines() if ln.startswith(TARGET_RECORD_START)]
    if len(recs) != 1:
        return None, f"the target printed {len(recs)} records, not 1"
    try:
        rec = json.loads(recs[0])
    except json.JSONDecodeError as e:
        return None, f"the target's record is not JSON ({e})"
    if rec.get("format") != TARGET_FORMAT:
        return None, (f"the target's record is of format {rec.get('format')!r}, not "
                      f"{TARGET_FORMAT!r} (a stale build? make)")
    return rec, None


@dataclass
class Timing:
    """What one run tells the runner beside its row, never written: the
    seconds from its attach to its detach, and its slowest thread's loop
    (None where the target did not finish)."""
    elapsed_s: float = 0.0
    max_thread_wall_ns: int = None


def identity(cfg, threads, **kw):
    """The fields that name a row's cell: CFG's, THREADS, and KW."""
    return dict(config=cfg.name, build=cfg.build, tracer=cfg.tracer, probe=cfg.probe,
                action=cfg.action, threads=threads, **kw)


def skipped_row(cfg, threads, reason):
    """A configuration that cannot run here, at THREADS: a row."""
    return identity(cfg, threads, status="skipped", reason=reason)


def failed_row(cfg, threads, reason, **kw):
    """A run that did not complete (REASON): a row whose times are not used."""
    return identity(cfg, threads, status="failed", reason=reason, **kw)


def target_fields(rec):
    """The columns the target's record REC fills, and its slowest
    thread's wall time (ns, for the Timing)."""
    pt = rec["per_thread"]
    fields = {f"thread_{k}": join_ns(t[k] for t in pt) for k in ("wall_ns", "user_ns", "sys_ns",
                                                                 "cpu_ns")}
    fields.update((k, rec[k]) for k in ("wall_ns", "process_user_ns", "process_sys_ns",
                                        "machine_busy_ns", "machine_source", "proc_stat_busy_ns"))
    fields["corrupted"] = sum(t["corrupted"] for t in pt)
    fields["calls"] = sum(t["calls"] for t in pt)
    if rec["pacing"]:
        fields["pacing"] = "{method}, batches of {batch}".format(**rec["pacing"])
        fields["late"] = sum(t["late"] for t in pt)
    if rec.get("fork"):  # the parent's calls before the fork were probed too
        fields["fork_calls"], fields["fork_corrupted"] = rec["fork"]["calls"], rec["fork"]["corrupted"]
    return fields, max(t["wall_ns"] for t in pt)


def paced_rate(row):
    """A row's requested calls/s per thread, or None for a tight-loop row."""
    return num(row.get("rate"))


def split_ns(text):
    """A per-thread column ('12;34') as ints."""
    return [int(x) for x in text.split(";") if x != ""] if text else []


def join_ns(values):
    return ";".join(str(v) for v in values)


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class Folder:
    """A new results folder under RESULTS: runs.csv (each row on disk as
    soon as it is written), meta.json, logs/, and the `latest` link.  Its
    name is the UTC stamp, or NAME (make lab's per-suite folders, which
    `latest` does not follow)."""

    def __init__(self, results, name=None, unit=DEFAULT_UNIT):
        stamp = name or datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        os.makedirs(results, exist_ok=True)
        d, n = os.path.join(results, stamp), 1
        while True:
            try:
                os.mkdir(d)
                break
            except FileExistsError:
                n += 1
                d = os.path.join(results, f"{stamp}-{n}")
        self.dir = d
        self.logs = os.path.join(d, "logs")
        os.mkdir(self.logs)
        self.unit = unit  # every row's, and meta.json's
        self.meta = {"kind": KIND, "started": now(), "format_version": FORMAT_VERSION,
                     "unit": unit}
        self._file = open(os.path.join(d, RUNS_CSV), "w", newline="")
        self._csv = csv.DictWriter(self._file, COLUMNS)
        self._csv.writeheader()
        self._file.flush()
        os.fsync(self._file.fileno())  # a guest killed early: a header, not an empty file
        self.write_meta()
        latest = os.path.join(results, "latest")
        if name is None and (os.path.islink(latest) or not os.path.exists(latest)):
            tmp = latest + f".{os.getpid()}"
            os.symlink(os.path.basename(d), tmp)
            os.replace(tmp, latest)

    @classmethod
    def reopen(cls, d):
        """The results folder D that a runner wrote (a guest's, copied out),
        opened for more rows (appended to its runs.csv) and its meta."""
        self = cls.__new__(cls)
        self.dir, self.logs = d, os.path.join(d, "logs")
        self.meta, why = read_meta(d)
        if why:  # the unit is then its rows' (a guest's may be instructions)
            host.say(f"kit: {why}")
            self.meta["torn"] = why  # its environment and inputs are lost, and it says so
            with open(os.path.join(d, RUNS_CSV), newline="") as f:
                units = [r.get("unit") for r in csv.DictReader(f)]
            self.meta["unit"] = next((u for u in units if u in UNITS), DEFAULT_UNIT)
        self.unit = self.meta.get("unit", DEFAULT_UNIT)
        self._file = open(os.path.join(d, RUNS_CSV), "a", newline="")
        self._csv = csv.DictWriter(self._file, COLUMNS)
        return self

    def skipped(self, cfg, threads, reason):
        """Configuration CFG's row at each of THREADS: skipped for REASON."""
        for n in threads:
            self.write(skipped_row(cfg, n, reason))

    def write(self, row):
        """ROW (a dict of COLUMNS) on disk before this returns."""
        row = dict(row)
        row.setdefault("started", now())
        row.setdefault("unit", self.unit)
        self._csv.writerow({k: ("" if v is None else v) for k, v in row.items()})
        self._file.flush()
        os.fsync(self._file.fileno())

    def write_meta(self):
        host.write_json(os.path.join(self.dir, "meta.json"), self.meta)

    def rejudge(self, judge):
        """Rewrites runs.csv with the statuses JUDGE(rows) gives ({index:
        (status, reason, events expected or None)}; the rows as read,
        strings): every row kept, the new file in place of the old at
        once (os.replace), or the old one left whole; the file open for
        more rows again whatever happened.  The rows changed."""
        self._file.close()
        path = os.path.join(self.dir, RUNS_CSV)
        tmp = path + f".{os.getpid()}"
        try:
            with open(path, newline="") as f:
                rows = list(csv.DictReader(f))
            changes = judge(rows)
            for i, (status, reason, expected) in changes.items():
                rows[i].update(status=status, reason=reason)
                if expected is not None:
                    rows[i]["events_expected"] = expected
            if changes:
                with host.deferred(), open(tmp, "w", newline="") as f:
                    w = csv.DictWriter(f, COLUMNS)
                    w.writeheader()
                    w.writerows(rows)
                    f.flush()
                    os.fsync(f.fileno())
                    os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
            self._file = open(path, "a", newline="")
            self._csv = csv.DictWriter(self._file, COLUMNS)
        return len(changes)

    def close(self):
        if not self._file.closed:
            self.write_meta()
            self._file.close()


class BadInput(Exception):
    """A results folder that cannot be read; the message names it."""


def load(folder):
    """(rows, meta, warnings) of one results folder; threads, iterations
    and rep as ints (None where unreadable)."""
    warnings = []
    if not os.path.isdir(folder):
        raise BadInput(f"{folder}: no such results folder")
    path = os.path.join(folder, RUNS_CSV)
    if not os.path.exists(path):
        raise BadInput(f"{path}: missing (is {folder} a results folder of `make run`?)")
    with open(path, newline="") as f:
        # csv reads the file itself: a reason may hold a line break, a form
        # feed or U+2028, which str.splitlines() would take for line ends
        reader = csv.reader(f)
        header = next(reader, None)
        if not header:
            raise BadInput(f"{path}: empty (not even a header line)")
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise BadInput(f"{path}: missing columns {', '.join(missing)}")
        unknown = [c for c in header if c not in COLUMNS]
        if unknown:
            warnings.append(f"{path}: unknown columns ignored: {', '.join(unknown)}")
        rows = [r for rec in reader if (r := row_of(path, reader.line_num, header, rec,
                                                    warnings))]
    if not rows:
        warnings.append(f"{path}: no runs recorded")
    meta, why = read_meta(folder)
    if why:
        warnings.append(why)
    if meta.get("torn"):  # a guest's, rewritten by the lab's merge (Folder.reopen)
        warnings.append(f"{os.path.join(folder, 'meta.json')} was torn when the lab merged it "
                        f"({meta['torn']}); the environment and the inputs are unknown")
    if isinstance(meta.get("stap"), dict):  # format 2: SystemTap's runtime in its own key
        s = meta.pop("stap")
        meta.setdefault("tracers", {})["stap"] = (
            f"SystemTap runtime: {s.get('runtime')} ({s.get('why')}); flags: {s.get('flags')}")
    return rows, meta, warnings


def read_meta(folder):
    """(FOLDER's meta.json as a dict, None) or ({}, why it cannot be read):
    a run killed early, or a guest killed before its disk had the file,
    leaves it missing or torn, and its rows are still worth reading."""
    mpath = os.path.join(folder, "meta.json")
    try:
        with open(mpath) as f:
            meta = json.load(f)
    except FileNotFoundError:
        return {}, f"{mpath}: missing; the environment is unknown"
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        return {}, f"{mpath}: not valid JSON ({e}); the environment is unknown"
    if not isinstance(meta, dict):
        return {}, f"{mpath}: not a JSON object; the environment is unknown"
    return meta, None


def row_of(path, i, header, rec, warnings):
    """Line I's fields REC as a row (threads, iterations and rep as ints),
    or None, said in WARNINGS, where it cannot be read."""
    if len(rec) != len(header):
        warnings.append(f"{path}: line {i} has {len(rec)} fields, not {len(header)} "
                        "(truncated?); ignored")
        return None
    r = dict(zip(header, rec))
    for k in ("threads", "iterations", "rep"):
        r[k] = num(r[k])
    r["unit"] = r.get("unit") or DEFAULT_UNIT
    if r["status"] in MEASURED and (not r["threads"] or not r["iterations"]
                                    or len(split_ns(r["thread_wall_ns"])) != r["threads"]):
        warnings.append(f"{path}: line {i} ({r['config']}) has unreadable timings; ignored")
        return None
    return r


def num(text):
    """TEXT as an int, or None."""
    try:
        return int(text)
    except (TypeError, ValueError):
        return None
