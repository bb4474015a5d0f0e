"""lab/where.py: make lab WHERE=1's counts made readable.  The QEMU
plugin (src/plugin/where.c) wrote, for each window the target opened
around its timed loop, how many guest instructions ran at each kernel
address and in user space, tagged with the target's pid; here each
window is matched to the run that made it (the target's record in the
run's log names its pid), each kernel address named from the guest's
own /proc/kallsyms (read before the runs: the same boot, so the same
KASLR offsets), and the lot
written as where.csv beside runs.csv: a line per run and function, in
guest instructions (window totals, not yet per event; render/where.py
divides and subtracts).

An address in the modules' area is MODULE_AREA, never a module's symbol:
the code that runs there in a window is the tracer's own (a SystemTap
module, a JIT-compiled BPF program or trampoline), gone when the guest
ends, and on 7.x kernels modules share 2 MB execmem caches, so neither
/proc/modules (a module's size there counts parts that lie apart) nor
/proc/vmallocinfo (one area a cache) bounds a module's text: a gone stap
module's hits were named after sr_mod's exit_sr both ways on 7.2.

Nothing to run: lab/merge.py calls symbolise() for WHERE=1.
"""
import bisect
import csv
import os
import re

import record
from record.where import COLUMNS, KALLSYMS, MODULE_AREA, NO_SYMBOL, RAW, USER, WHERE_CSV  # noqa: F401

MODULES_START, MODULES_END = 0xffffffffa0000000, 0xffffffffff000000  # x86-64's module area
PID = re.compile(r'"format":"kit-target-record[^"]*".*?"pid":(\d+)')


def windows(path):
    """The plugin's windows, [{"pid", "user", "kernel", "marks", "counts":
    {address: count}}], and its closing line's facts ({} if it never
    closed: qemu was killed); ValueError at a line it cannot read."""
    out, done, cur = [], {}, None
    with open(path) as f:
        for n, ln in enumerate(f, 1):
            p = ln.split()
            try:
                if not p or p[0] == "#":
                    continue
                if p[0] == "window":
                    cur = {"pid": int(p[1]), "user": int(p[3]), "kernel": int(p[5]),
                           "marks": int(p[7]), "counts": {}}
                elif p[0] == "end" and cur:
                    out.append(cur)
                    cur = None
                elif p[0] == "done":
                    done = {k: int(v) for k, v in zip(p[1::2], p[2::2])}
                elif cur and len(p) == 2:
                    cur["counts"][int(p[0], 16)] = int(p[1])
                else:
                    raise ValueError
            except (IndexError, ValueError):
                raise ValueError(f"{os.path.basename(path)}:{n}: cannot read {ln.strip()[:60]!r}")
    return out, done


def check(wins, done):
    """Why the plugin's windows cannot be trusted, or None: it did not
    close (qemu killed), lost a write, saw a window open inside another (a
    second thread), a mark inside a window but CLOSE, or one pid twice."""
    if set(done) != {"windows", "overlaps", "addresses", "errors"}:
        return "the plugin never wrote its closing line whole (qemu was killed?)"
    if done.get("windows") != len(wins) or done.get("errors", 0) or done.get("overlaps", 0):
        return (f"the plugin's closing line says {done}; {len(wins)} windows read")
    bad = [w["pid"] for w in wins if w["marks"] != 1]
    if bad:
        return f"window {bad[0]} holds another mark than its CLOSE (a second thread?)"
    pids = [w["pid"] for w in wins]
    if len(set(pids)) != len(pids):
        return "one pid opened two windows"
    return None


class Symbols:
    """The guest kernel's text symbols, between _stext and _etext."""

    def __init__(self, kallsyms):
        syms = []
        with open(kallsyms) as f:
            for ln in f:
                p = ln.split()
                if len(p) == 3 and p[1] in "tTwW":  # the kernel's own (a module's has 4)
                    syms.append((int(p[0], 16), p[2]))
        own = dict((n, a) for a, n in syms)
        self.stext, self.etext = own.get("_stext", 0), own.get("_etext", 0)
        if not 0 < self.stext < self.etext:
            raise ValueError(f"{os.path.basename(kallsyms)} has no _stext and _etext "
                             "(addresses hidden: read as root?)")
        syms = sorted(x for x in syms if self.stext <= x[0] < self.etext)
        self.addrs, self.names = [a for a, _ in syms], [n for _, n in syms]

    def name(self, a):
        """A's function; MODULE_AREA above the kernel's text (KASLR puts the
        text anywhere up to the modules' area), NO_SYMBOL elsewhere."""
        if self.stext <= a < self.etext:
            return self.names[bisect.bisect_right(self.addrs, a) - 1]
        if max(MODULES_START, self.etext) <= a < MODULES_END:
            return MODULE_AREA
        return NO_SYMBOL


def run_pids(folder, rows):
    """{pid: row} for FOLDER's ROWS whose log holds the target's record;
    ValueError if two name one pid."""
    got = {}
    for r in rows:
        log = os.path.join(folder, "logs", record.log_name(r["config"], r["threads"], r["rep"],
                                                           witness=record.is_witness_run(r)))
        if not os.path.exists(log):
            continue
        with open(log, errors="replace") as f:
            m = PID.search(f.read())
        if m:
            if int(m.group(1)) in got:
                raise ValueError(f"two runs' targets had pid {m.group(1)}")
            got[int(m.group(1))] = r
    return got


def symbolise(folder):
    """FOLDER's where.csv from its logs/ (the plugin's windows, the guest's
    kallsyms), written only where every window can be trusted and every
    measured run has one: {"windows", "matched", "unmatched", "done"};
    ValueError saying why not."""
    logs = os.path.join(folder, "logs")
    wins, done = windows(os.path.join(logs, RAW))
    why = check(wins, done)
    if why:
        raise ValueError(why)
    syms = Symbols(os.path.join(logs, KALLSYMS))
    rows, _, _ = record.load(folder)
    measured = [r for r in rows if r.get("status") in record.MEASURED]
    by_pid = run_pids(folder, measured)
    if len(by_pid) != len(measured):
        raise ValueError(f"{len(measured) - len(by_pid)} measured runs' logs name no target pid")
    missing = set(by_pid) - {w["pid"] for w in wins}
    if missing:
        r = by_pid[min(missing)]
        raise ValueError(f"{len(missing)} measured runs have no window, {r['config']} "
                         f"rep {r['rep']} among them")
    tmp = os.path.join(folder, WHERE_CSV + ".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for win in wins:
            r = by_pid.get(win["pid"])
            if r is None:
                continue
            per = {USER: win["user"]}  # (even 0: a window with no count is still its run's)
            for a, n in win["counts"].items():
                s = syms.name(a)
                per[s] = per.get(s, 0) + n
            head = [r["config"], r["threads"], r["rep"], r["calls"] or r["iterations"],
                    r["wall_ns"], win["user"] + win["kernel"]]
            for s, n in sorted(per.items(), key=lambda kv: (-kv[1], kv[0])):
                w.writerow([*head, s, n])
    os.replace(tmp, os.path.join(folder, WHERE_CSV))
    return {"windows": len(wins), "matched": len(by_pid), "unmatched": len(wins) - len(by_pid),
            "done": done}
