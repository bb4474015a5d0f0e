"""record/where.py: make lab WHERE=1's where.csv, beside a suite's
runs.csv: a run's guest instructions by kernel function, a row per
(config, threads, rep, window, function), counted by QEMU's TCG plugin
(src/plugin/where.c) and named by the guest's /proc/kallsyms.  Written by
lab/where.py (symbolise), read by render/where.py (the atlas's steps).
The plugin's own output and the guest's symbols stay in logs/.

Nothing to run.
"""
WHERE_CSV = "where.csv"
RAW = "where-raw.txt"  # the plugin's own output, kept in logs/
KALLSYMS = "kallsyms.txt"  # the guest's, in logs/
COLUMNS = ["config", "threads", "rep", "calls", "wall", "window", "function", "instructions"]
USER = "[user space]"  # every user-space instruction: the program, an XOL slot, a trampoline
MODULE_AREA = "[module area: the tracer's module or BPF program]"
NO_SYMBOL = "[kernel: no symbol]"
