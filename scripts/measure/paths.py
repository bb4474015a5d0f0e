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

Which optimisation the kernel has at all is asked of the kernel itself:
the uprobe syscall (x86-64 number 336), called from outside a trampoline,
fails with an errno that names it (libbpf's features.c asks the same):
uprobe_optimisation().

Nothing to run: run.py uses entry_path(), UretprobeSyscalls and
uprobe_optimisation().
"""
import ctypes
import errno
import os
import platform

import kernel
from tracers import tracefs
from tracers.base import TracerError

TRAMPOLINE = "[uprobes-trampoline]"
XOL = "[uprobes]"
URETPROBE_EVENT = "syscalls/sys_enter_uretprobe"


UPROBE_SYSCALL = {"x86_64": 336}
def uprobe_optimisation():
    """(errno name, site optimised, meaning) from the kernel's answer to
    the uprobe syscall; ("unknown", None, why) for an answer not in
    kernel.OPTIMISATION, never a guess."""
    nr = UPROBE_SYSCALL.get(platform.machine())
    if nr is None:
        return "unknown", None, f"no uprobe syscall is known on {platform.machine()}"
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr))
    name = errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno())) if r == -1 else \
        f"returned {r}"
    if name in kernel.OPTIMISATION:
        return (name, *kernel.OPTIMISATION[name])
    return "unknown", None, f"the uprobe syscall answered {name}, which no known kernel does"


# Whether return probes return through the uretprobe syscall (x86-64,
# Linux >= 6.11), from the kernel's own symbol table: calling the syscall
# to ask would kill the caller (outside the trampoline it sends SIGILL).
URETPROBE_SYMBOL = "__x64_sys_uretprobe"
URETPROBE = {
    "yes": "a return probe returns through the uretprobe syscall (Linux 6.11 and later, x86-64)",
    "no": "a return probe traps (int3) on the way back: this kernel has no uretprobe syscall",
}


def uretprobe_syscall(kallsyms="/proc/kallsyms"):
    """(yes|no, meaning) from KALLSYMS; ("unknown", why) where it cannot be
    read or this is not x86-64."""
    if platform.machine() != "x86_64":
        return "unknown", f"no uretprobe syscall is known on {platform.machine()}"
    try:
        with open(kallsyms) as f:
            found = any(ln.rstrip("\n").endswith(" " + URETPROBE_SYMBOL) for ln in f)
    except OSError as e:
        return "unknown", f"{kallsyms}: {e.strerror}"
    answer = "yes" if found else "no"
    return answer, URETPROBE[answer]


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
