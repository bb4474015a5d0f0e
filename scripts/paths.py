"""paths.py: which path a probe took in a run, shown rather than assumed.

An entry or marker probe is either trapped (int3; the kernel then
emulates the instruction, or single-steps it in the "[uprobes]" area it
maps into the process) or, on Linux >= 6.18 for some sites, optimised
into a call through a "[uprobes-trampoline]" mapping after its first hit.
The target lists those mappings when its threads are done (its record's
uprobe_maps).  A return probe returns through the "[uprobes]" trampoline,
which on x86-64 Linux >= 6.11 makes the uretprobe syscall instead of
trapping: UretprobeSyscalls counts that syscall, for the target's own
threads, in a tracing instance of its own during the run.

Nothing to run: run.py uses entry_path() and UretprobeSyscalls.
"""
import os

from tracers import tracefs
from tracers.base import TracerError

TRAMPOLINE = "[uprobes-trampoline]"
XOL = "[uprobes]"
URETPROBE_EVENT = "syscalls/sys_enter_uretprobe"


def entry_path(maps, seen):
    """The path of an entry or marker probe, from the target's uprobe
    mappings and the events the tracer SEEN (None: it cannot count)."""
    if TRAMPOLINE in maps:
        return "optimised: a call through [uprobes-trampoline] (after the first hit's trap)"
    if XOL in maps:
        return "trap: int3, the instruction single-stepped out of line in [uprobes]"
    if seen == 0:
        return "none: the probe never fired"
    return "trap: int3, the instruction emulated (no [uprobes] mapping)"


class UretprobeSyscalls:
    """Counts the uretprobe syscalls of the run's target (by its command
    name) between attach and detach, which the Supervisor undoes like a
    back-end's."""
    name = "uretprobe-syscalls"

    def __init__(self, run):
        self.counter = None
        self.comm = os.path.basename(run.build)
        self.inst = f"{run.tag}_path"

    def attach(self, run):
        if not tracefs.MOUNTS.ensure():
            raise TracerError("could not mount tracefs to watch the uretprobe syscall")
        c = tracefs.EventCounter(self.inst, URETPROBE_EVENT, self.comm)
        if c.available():  # a kernel without the syscall (< 6.11, not x86-64) has no event
            self.counter = c
            c.start()

    def path(self):
        if self.counter is None:
            return "trap: this kernel has no uretprobe syscall (no sys_enter_uretprobe event)"
        n = self.counter.count()
        if n:
            return f"uretprobe syscall ({n} calls seen)"
        return "trap: no uretprobe syscall was made"

    def detach(self, run):
        if self.counter:
            self.counter.stop()
