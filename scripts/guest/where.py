"""guest/where.py: make lab WHERE=1's counts made readable.  The QEMU
plugin (src/plugin/where.c) wrote, for each window the target opened
around its timed loop, how many guest instructions ran at each kernel
address and in user space, tagged with the target's pid; here each
window is matched to the run that made it (the target's record in the
run's log names its pid), each address named from the guest's own
/proc/kallsyms and /proc/vmallocinfo (read as the guest ended: the same
boot, so the same KASLR offsets), and the lot written as where.csv beside
runs.csv: a line per run and function, in guest instructions (window
totals, not yet per event; render/where.py divides and subtracts).

An address in the modules' area that no vmalloc area still held at the
end (or one whose nearest symbol lies in another area) was a tracer's own
code, gone by then: a SystemTap module or a JIT-compiled BPF program
(MODULE_AREA).  /proc/modules cannot tell: a module's size there counts
its text, data and init parts, which lie apart, so a span from its base
covers other modules' text (a gone stap module's hits were named after
sr_mod's exit_sr so, on 7.2).

Nothing to run: guest/merge.py calls symbolise() for WHERE=1.
"""
import bisect
import csv
import os
import re

import record

WHERE_CSV = "where.csv"
RAW = "where-raw.txt"  # the plugin's own output, kept in logs/
KALLSYMS, VMALLOC = "kallsyms.txt", "vmallocinfo.txt"  # the guest's, in logs/
COLUMNS = ["config", "threads", "rep", "calls", "wall", "window", "function", "instructions"]
USER = "[user space]"  # every user-space instruction: the program, an XOL slot, a trampoline
MODULE_AREA = "[a module or BPF program gone at the end]"
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
    """The guest kernel's text symbols and its vmalloc areas at the end."""

    def __init__(self, kallsyms, vmalloc):
        syms = []
        with open(kallsyms) as f:
            for ln in f:
                p = ln.split()
                if len(p) >= 3 and p[1] in "tTwW" and int(p[0], 16):
                    syms.append((int(p[0], 16), p[2]))
        syms.sort()
        self.addrs, self.names = [a for a, _ in syms], [n for _, n in syms]
        self.etext = dict((n, a) for a, n in syms).get("_etext", MODULES_START)
        self.areas = []  # (start, end) of each vmalloc area held at the end
        with open(vmalloc) as f:
            for ln in f:
                m = re.match(r"0x([0-9a-f]+)-0x([0-9a-f]+)\s", ln)
                if m:
                    self.areas.append((int(m.group(1), 16), int(m.group(2), 16)))
        self.areas.sort()

    def area(self, a):
        i = bisect.bisect_right(self.areas, (a, float("inf"))) - 1
        return self.areas[i] if i >= 0 and self.areas[i][0] <= a < self.areas[i][1] else None

    def name(self, a):
        i = bisect.bisect_right(self.addrs, a) - 1
        if MODULES_START <= a < MODULES_END:
            held = self.area(a)
            if not held or i < 0 or self.addrs[i] < held[0]:
                return MODULE_AREA
            return self.names[i]
        if i < 0 or a >= self.etext:
            return NO_SYMBOL
        return self.names[i]


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
    syms = Symbols(os.path.join(logs, KALLSYMS), os.path.join(logs, VMALLOC))
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

