"""guest/where.py: make lab WHERE=1's counts made readable.  The QEMU
plugin (src/plugin/where.c) wrote, for each window the target opened
around its timed loop, how many guest instructions ran at each kernel
address and in user space, tagged with the target's pid; here each
window is matched to the run that made it (the target's record in the run's log names its pid),
each kernel address named from the guest's own /proc/kallsyms (read as
the guest ended: the same boot, so the same KASLR offsets), and the lot
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

Nothing to run: guest/merge.py calls symbolise() for WHERE=1.
"""
import bisect
import csv
import os
import re

import record

WHERE_CSV = "where.csv"
RAW = "where-raw.txt"  # the plugin's own output, kept in logs/
KALLSYMS = "kallsyms.txt"  # the guest's, in logs/
COLUMNS = ["config", "threads", "rep", "calls", "wall", "window", "function", "instructions"]
USER = "[user space]"  # every user-space instruction: the program, an XOL slot, a trampoline
MODULE_AREA = "[module area: the tracer's module or BPF program]"
NO_SYMBOL = "[kernel: no symbol]"
MODULES_START, MODULES_END = 0xffffffffa0000000, 0xffffffffff000000  # x86-64's module area
PID = re.compile(r'"format":"kit-target-record[^"]*".*?"pid":(\d+)')


def windows(path):
    """The plugin's windows: [(pid, user, kernel, {address: count})], and
    its closing line's facts ({} if it never closed: qemu was killed)."""
    out, done, cur = [], {}, None
    with open(path) as f:
        for ln in f:
            p = ln.split()
            if not p or p[0] == "#":
                continue
            if p[0] == "window":
                cur = (int(p[1]), int(p[3]), int(p[5]), {})
            elif p[0] == "end" and cur:
                out.append(cur)
                cur = None
            elif p[0] == "done":
                done = {k: int(v) for k, v in zip(p[1::2], p[2::2])}
            elif cur:
                cur[3][int(p[0], 16)] = int(p[1])
    return out, done


class Symbols:
    """The guest kernel's text symbols, and where its text ends."""

    def __init__(self, kallsyms):
        syms = []
        with open(kallsyms) as f:
            for ln in f:
                p = ln.split()
                if (len(p) == 3 and p[1] in "tTwW" and int(p[0], 16)
                        and not MODULES_START <= int(p[0], 16) < MODULES_END):
                    syms.append((int(p[0], 16), p[2]))
        syms.sort()
        self.addrs, self.names = [a for a, _ in syms], [n for _, n in syms]
        self.etext = dict((n, a) for a, n in syms).get("_etext", MODULES_START)

    def name(self, a):
        if MODULES_START <= a < MODULES_END:
            return MODULE_AREA
        i = bisect.bisect_right(self.addrs, a) - 1
        return NO_SYMBOL if i < 0 or a >= self.etext else self.names[i]


def run_pids(folder, rows):
    """{pid: row} for FOLDER's tight-loop rows whose log holds the target's record."""
    got = {}
    for r in rows:
        log = os.path.join(folder, "logs", f"{r['config']}-t{r['threads']}-r{r['rep']}.log")
        if not os.path.exists(log):
            continue
        with open(log, errors="replace") as f:
            m = PID.search(f.read())
        if m:
            got[int(m.group(1))] = r
    return got


def symbolise(folder):
    """FOLDER's where.csv from its logs/ (the plugin's windows, the guest's
    kallsyms and modules): {"windows", "matched", "unmatched", "done"}."""
    logs = os.path.join(folder, "logs")
    wins, done = windows(os.path.join(logs, RAW))
    syms = Symbols(os.path.join(logs, KALLSYMS))
    rows, _, _ = record.load(folder)
    by_pid = run_pids(folder, [r for r in rows if r.get("status") in record.MEASURED])
    matched = 0
    tmp = os.path.join(folder, WHERE_CSV + ".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for pid, user, kern, counts in wins:
            r = by_pid.get(pid)
            if r is None:
                continue
            matched += 1
            per = {USER: user} if user else {}
            for a, n in counts.items():
                s = syms.name(a)
                per[s] = per.get(s, 0) + n
            head = [r["config"], r["threads"], r["rep"], r["calls"] or r["iterations"],
                    r["wall_ns"], user + kern]
            for s, n in sorted(per.items(), key=lambda kv: (-kv[1], kv[0])):
                w.writerow([*head, s, n])
    os.replace(tmp, os.path.join(folder, WHERE_CSV))
    return {"windows": len(wins), "matched": matched, "unmatched": len(wins) - matched,
            "done": done}

