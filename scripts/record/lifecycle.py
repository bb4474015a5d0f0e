"""record/lifecycle.py: make lifecycle's folder (results/<stamp>-lifecycle/,
and a make lab LIFECYCLE=1 suite's): meta.json stamped KIND, lifecycle.csv
(a row per attach and detach cycle) and bystander.csv (a row per run of
the untraced process under a way), their columns, and the clock its
figures are of (by meta.json's unit).  Written by lifecycle/kit.py (and
lab/merge.py for a guest), read by render/lifecycle.py.

Nothing to run.
"""
import csv
import os

from record.runs import INSTRUCTIONS, NS

KIND = "lifecycle"  # meta.json's "kind"
LIFECYCLE_CSV, BYSTANDER_CSV = "lifecycle.csv", "bystander.csv"
LC_COLUMNS = ["tracer", "path", "sweep", "sites", "procs", "cycle", "counted", "status",
              "reason", "startup_s", "attach_s", "detach_s", "tracer_kb", "late_covered",
              "semaphore"]
BY_COLUMNS = ["way", "tracer", "run", "status", "reason", "trap_in_untraced", "traced_counted",
              "calls", "wall_ns", "user_ns", "sys_ns"]
BASELINE_WAY = "untraced"
# The folders' clocks, by where they ran (clock()): (a time's unit, its
# thousandth, a call's unit, the plots' axis, what the clock is)
HOST_CLOCK = ("s", "ms", "ns", "host clock", "Every figure is ns (seconds) of this host's clock.")
ICOUNT_CLOCK = ("guest s", "guest ms", "instructions", "guest clock, -icount",
                "Every figure is of the **guest's clock** under QEMU's -icount shift=0 on one "
                "vCPU: while the guest runs it advances 1 ns a guest instruction; while it "
                "idles (a grace period waited, a sleep) it jumps to the guest's next timer.  "
                "So a time here (guest s) is instructions plus the timers waited, and a "
                "call's cost is in instructions: neither is ever set beside the host's ns.")
KVM_CLOCK = ("guest s", "guest ms", "guest ns", "guest clock, KVM",
             "Every figure is ns (seconds) of the guest's clock under KVM: real time, on the "
             "guest's kernel, never set beside the host's.")
NO_CLOCK = ("-", "-", "-", "-", "No figures: the guest wrote no lifecycle folder.")


def clock(meta):
    """The clock of META's folder: the host's; a make lab guest's under
    -icount (unit instructions) or KVM (ns); none where the guest wrote
    nothing (lifecycle_folder's)."""
    unit = meta.get("unit")
    if unit == INSTRUCTIONS:  # (also the guest's own run, before the lab adds "lab")
        return ICOUNT_CLOCK
    if not meta.get("lab"):
        return HOST_CLOCK
    return KVM_CLOCK if unit == NS else NO_CLOCK


def rows_of(folder, name):
    """The rows of FOLDER's table NAME (LIFECYCLE_CSV, BYSTANDER_CSV); [] if none."""
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))
