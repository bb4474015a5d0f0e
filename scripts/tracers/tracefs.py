"""tracefs.py: the kernel's tracing file system, shared by the ftrace and
perf back-ends: finding or mounting it, adding and removing uprobe events,
and reading their exact hit counts from uprobe_profile."""
import contextlib
import errno
import os
import platform
import re
import subprocess
import tempfile
import time

from bodies import FTRACE_STRING
from elfinfo import Elf
from private import Private
from .base import TracerError

CANDIDATES = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")

# The register that holds a function's first argument at entry, as
# uprobe_events spells it.
FIRST_ARG = {"x86_64": "%di", "aarch64": "%x0"}

# An instance is busy while any process holds one of its files open; a
# write of "0" to a uprobe event's enable holds it until the kernel's
# unregister has synchronised, which can outlast the target's run.  Its
# removal waits this long for such a holder to let go.
INSTANCE_BUSY_S = 5.0


def find():
    for d in CANDIDATES:
        if os.path.exists(os.path.join(d, "uprobe_events")):
            return d
    return None


def can_mount(fstype="tracefs"):
    """Whether the kernel knows FSTYPE (so setup could mount it); mounts nothing."""
    with open("/proc/filesystems") as f:
        return any(ln.split()[-1] == fstype for ln in f if ln.strip())


class Mount:
    """Mounts tracefs (or debugfs) when it is not mounted, and unmounts it
    again at the end only if this kit mounted it."""

    def __init__(self):
        self.mounted = []

    def ensure(self, fstype="tracefs", where="/sys/kernel/tracing"):
        if fstype == "tracefs" and find():
            return find()
        if fstype == "debugfs" and os.path.ismount(where):
            return where
        if os.geteuid() != 0:
            return None
        try:
            r = subprocess.run(["mount", "-t", fstype, "nodev", where],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        except OSError:  # no mount(8) at all (a minimal system): the caller says why
            return None
        if r.returncode != 0:
            return None
        self.mounted.append(where)
        return find() if fstype == "tracefs" else where

    def release(self):
        while self.mounted:
            subprocess.run(["umount", self.mounted.pop()], stderr=subprocess.DEVNULL)


MOUNTS = Mount()


@contextlib.contextmanager
def private():
    """Yields a tracefs folder to read and write: the mounted one, or a
    private mount made here and removed on leaving (so an unmounted
    tracefs cannot hide what uprobe_events holds); None if neither can be
    had (not root, no tracefs)."""
    t = find()
    if t or os.geteuid() != 0 or not can_mount():
        yield t
        return
    held = Private.make(tempfile.gettempdir(), "kit-tracefs-")  # (private.py)
    d = held.path
    try:
        ok = subprocess.run(["mount", "-t", "tracefs", "nodev", d], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL).returncode == 0
    except OSError:  # no mount(8)
        ok = False
    try:
        yield d if ok else None
    finally:
        if ok:
            subprocess.run(["umount", d], stderr=subprocess.DEVNULL)
        if held.same():  # (rmdir, never rmtree: a mount that stayed is not emptied)
            os.rmdir(d)
        held.close()


def write(path, text):
    # One write(2) with O_APPEND and no seek: tracefs control files refuse
    # the lseek that Python's buffered append mode does.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, (text + "\n").encode())
    finally:
        os.close(fd)


def add_uprobe(group, event, binary, offset, semaphore=None, fetch="", ret=False):
    """Defines p:GROUP/EVENT (r: with RET, a return probe) at OFFSET."""
    t = find()
    ref = f"(0x{semaphore:x})" if semaphore else ""
    spec = f"{'r' if ret else 'p'}:{group}/{event} {binary}:0x{offset:x}{ref}"
    if fetch:
        spec += " " + fetch
    try:
        write(os.path.join(t, "uprobe_events"), spec)
    except OSError as e:
        raise OSError(e.errno, f"uprobe_events refused '{spec}': {e.strerror}")
    return spec


def path_problem(path, who):
    """Why a uprobe_events line cannot name PATH (WHO writes it), or None:
    the kernel splits the line at white space (trace_uprobe's argv_split),
    so a path with a space, a tab or a line end in it cannot be probed."""
    bad = sorted({c for c in path if c.isspace() or not c.isprintable()})
    if bad:
        return (f"{who} cannot name {path!r}: uprobe_events splits its line at white space "
                f"and holds no {' or '.join(repr(c) for c in bad)}")
    return None


def uprobe_defined(group, event):
    t = find()
    if not t:
        return False
    with open(os.path.join(t, "uprobe_events")) as f:
        return any(re.match(rf"^[pr]:{re.escape(group)}/{re.escape(event)}\s", ln) for ln in f)


def group_events(group):
    """The names of the uprobe events of GROUP in uprobe_events."""
    t = find()
    if not t:
        return []
    with open(os.path.join(t, "uprobe_events")) as f:
        return [m.group(1) for ln in f
                if (m := re.match(rf"^[pr]:{re.escape(group)}/(\S+)\s", ln))]


def uprobes_named(event):
    """The uprobe_events lines defining an event called EVENT, in any group."""
    t = find()
    if not t:
        return []
    with open(os.path.join(t, "uprobe_events")) as f:
        return [ln.strip() for ln in f if re.match(rf"^[pr]:[^/\s]+/{re.escape(event)}\s", ln)]


def remove_uprobe(group, event):
    if uprobe_defined(group, event):
        write(os.path.join(find(), "uprobe_events"), f"-:{group}/{event}")


# What tracers leave in uprobe_events when they die or fail to attach,
# named after the leaving process's pid: bcc (under bpftrace) makes
# p:uprobes/p_<mangled path>_0x<offset>_<n>_bcc_<pid> and removes it only
# when the attach succeeds and it detaches cleanly (a failed attach, error
# 524, leaves it); stapbpf makes p:uprobes/stapprobe_<pid>_<n> and leaves
# them when it crashes.
LEFTOVERS = (r"[pr]_\S*_bcc_{pid}", r"stapprobe_{pid}_\d+")
SPEC = re.compile(r"^[pr]:(\S+)/(\S+) (\S+):0x[0-9a-f]+", re.M)


def leftovers(text, binary, pids):
    """[(group, event)] in uprobe_events TEXT that one of the dead tracer
    processes PIDS left on BINARY (by LEFTOVERS' names), and nothing
    else: another's probe, even on the kit's own binary, is not touched."""
    names = [re.compile(f"^{p.format(pid=pid)}$") for pid in pids for p in LEFTOVERS]
    real = os.path.realpath(binary)
    return [(g, e) for g, e, path in SPEC.findall(text)
            if os.path.realpath(path) == real and any(n.match(e) for n in names)]


def remove_leftovers(binary, pids, t=None):
    """Removes what dead tracer processes PIDS left on BINARY (leftovers());
    returns the events removed.  T: a tracefs folder (private())."""
    t = t or find()
    if not t or not pids:
        return []
    with open(os.path.join(t, "uprobe_events")) as f:
        left = leftovers(f.read(), binary, pids)
    for group, event in left:
        write(os.path.join(t, "uprobe_events"), f"-:{group}/{event}")
    return [f"{g}/{e}" for g, e in left]


def hits(event, binary):
    """Exact hit count of the uprobe event named EVENT on BINARY, from
    uprobe_profile (`  FILE EVENT HITS` a line; the group is not shown, so
    the kit gives its events names no one else uses).  FILE is the path
    that defined it (perf probe writes the real path, a user a symlink's),
    so the two are compared as real paths.  None if absent."""
    real = os.path.realpath(binary)
    with open(os.path.join(find(), "uprobe_profile")) as f:
        for ln in f:
            parts = ln.split()
            if len(parts) >= 3 and parts[-2] == event and \
                    os.path.realpath(" ".join(parts[:-2])) == real:
                return int(parts[-1])
    return None


WITNESS = "hits in uprobe_profile"  # the kernel's own count of a uprobe event's traps


def profile_witness(event, binary, threads):
    """(the kernel's hit count of EVENT on BINARY as an Events.also
    witness, or None; what the note says of it).  Before Linux 6.12 the
    hit counter is a plain increment shared by all CPUs (made per-CPU by
    10cdb82aa77f, "uprobes: turn trace_uprobe's nhit counter to be per-CPU
    one"), so with 2+ threads it may lose hits: no witness there."""
    n = hits(event, binary)
    if n is None:
        raise TracerError(f"{event} on {binary} is missing from uprobe_profile")
    if threads > 1 and kernel_version() < (6, 12):
        return None, (f"{n} {WITNESS}; before Linux 6.12 the hit counter is not exact with "
                      f"{threads} threads (10cdb82aa77f), so it is no witness")
    return (WITNESS, n), f"{n} {WITNESS}"


def site(run, note_ref=False):
    """(file offset, semaphore file offset or None, fetch arg) of the
    probe that run.cfg.probe names on run.build (ftrace's, and perf's by
    offset); TracerError where the binary has no such marker.  NOTE_REF:
    the marker's semaphore as its reference counter wherever the note has
    one (as perf probe does for an SDT event: the kernel refuses, EINVAL,
    a second uprobe at one site with another reference counter, so a
    user's own perf probe there and the kit's must agree)."""
    elf = Elf(run.build)
    if run.cfg.probe == "return":  # nothing to fetch: the function returns void
        return elf.file_offset(elf.symbol("single_trace")), None, ""
    if run.cfg.probe == "function":
        return elf.file_offset(elf.symbol("single_trace")), None, first_arg_fetch()
    provider = run.workload.provider if run.workload else "benchmark"
    notes = [n for n in elf.sdt_notes() if (n.provider, n.name) == (provider, run.cfg.marker)]
    if len(notes) != 1:
        raise TracerError(f"{run.build}: {len(notes) or 'no'} sites of SDT marker "
                          f"{provider}:{run.cfg.marker}" + (", not 1" if notes else ""))
    n, = notes
    sem = None
    if note_ref and n.semaphore:
        sem = elf.file_offset(n.semaphore)
    elif run.cfg.probe == "marker-semaphore" and (n.semaphore or not run.workload):
        if not n.semaphore:  # (a real program's marker may have none: then none)
            raise TracerError(f"{run.build}: the marker has no semaphore")
        sem = elf.file_offset(n.semaphore)
    fetch = first_arg_fetch(n.args)
    if run.cfg.body == FTRACE_STRING:  # a probe body's row (configs.BODIES): the string too
        fetch += " " + string_fetch(n.args, 1)
    return elf.file_offset(n.pc), sem, fetch


def sites_problem(cfg, who, w=None):
    """Why WHO (ftrace, perf), which puts one uprobe on one site, cannot
    probe a real program's row CFG: its marker has several sites in the
    program (Debian's postgres: sort__start 4, lwlock__wait__start 3), and
    one site's count is not the marker's, which bpftrace and SystemTap
    count at every site.  W: the row's workload as the run holds it
    (Tracer.skip_reason's).  None where it has one (or none to say)."""
    import workloads  # (the rows of a real program only)
    w = w or (workloads.get(cfg.workload) if cfg.workload else None)
    if not w or not w.program:
        return None
    marker = w.marker or cfg.marker
    try:
        n = sum((x.provider, x.name) == (w.provider, marker)
                for x in Elf(w.program).sdt_notes())
    except (OSError, ValueError):
        return None  # (the workload's own check says why)
    if n > 1:
        return (f"{w.provider}:{marker} has {n} sites in {w.program}, and {who} puts one uprobe "
                "on one site a run: the kit does not yet make one event a site")
    return None


def first_arg_fetch(sdt_args=None):
    """A fetch argument `v=REG:u32` for the marker's argument (from its
    stapsdt note, e.g. `4@%edi`; the first where it has several) or for a
    function's first argument."""
    if sdt_args:
        reg = sdt_register(sdt_args, 0)
        return f"v={reg}:u32" if reg else ""
    reg = FIRST_ARG.get(platform.machine())
    return f"v={reg}:u32" if reg else ""


def sdt_register(sdt_args, i):
    """The register (`%di`, as uprobe_events names it) that holds the
    marker's argument I in its stapsdt note's SDT_ARGS (`4@%esi 8@%rax`),
    or None where it is not in a register (memory, a constant)."""
    args = sdt_args.split()
    m = re.match(r"-?\d+@%?([a-z0-9]+)$", args[i]) if i < len(args) else None
    if not m:
        return None
    reg = m.group(1)
    if platform.machine() == "x86_64":
        reg = re.sub(r"^[er]?([a-z]{2})$", r"\1", reg)
    return f"%{reg}"


def string_fetch(sdt_args, i):
    """A fetch argument `s=+0(REG):string` for the marker's argument I, a
    pointer to a string (the body build's, configs.BODIES); TracerError
    where the note does not hold it in a register."""
    reg = sdt_register(sdt_args, i)
    if not reg:
        raise TracerError(f"the marker's argument {i + 1} ({sdt_args!r}) is not in a register: "
                          "no string fetch for it")
    return f"s=+0({reg}):string"


def ring_stats(instance):
    """An instance's ring buffer counts summed over its CPUs: entries (in
    the buffer now), overrun (overwritten) and read events (consumed by a
    reader): together every event written; dropped events and commit
    overrun: never written."""
    keys = ("entries", "overrun", "read events", "dropped events", "commit overrun")
    total = dict.fromkeys(keys, 0)
    percpu = os.path.join(instance, "per_cpu")
    for cpu in os.listdir(percpu):
        with open(os.path.join(percpu, cpu, "stats")) as f:
            text = f.read()
        for k in keys:
            m = re.search(rf"^{k}: (\d+)", text, re.M)
            total[k] += int(m.group(1)) if m else 0
    return total


def written(stats):
    """Every event a ring buffer took, from ring_stats()."""
    return stats["entries"] + stats["overrun"] + stats["read events"]


def kernel_version():
    """The running kernel's (major, minor)."""
    m = re.match(r"(\d+)\.(\d+)", platform.release())
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def remove_instance(inst, event):
    """Disables EVENT ("group/name") in the tracing instance INST and
    removes INST, waiting up to INSTANCE_BUSY_S while another process
    holds one of its files."""
    if not os.path.isdir(inst):
        return
    en = os.path.join(inst, "events", event, "enable")
    if os.path.exists(en):
        write(en, "0")
    trig = os.path.join(inst, "events", event, "trigger")
    if os.path.exists(trig):  # a trigger the kit set (a probe body's stacktrace)
        with open(trig) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    write(trig, "!" + line.split(":")[0].split()[0])
    end = time.monotonic() + INSTANCE_BUSY_S
    while True:
        try:
            os.rmdir(inst)
            return
        except OSError as e:
            if e.errno != errno.EBUSY or time.monotonic() > end:
                raise
        time.sleep(0.05)


class UprobeCounter:
    """The kernel's own count of a site's traps beside another tracer's
    probe on it (a libbpf witness run: tracers/libbpf.py): a uprobe event
    of the kit's, GROUP/EVENT at OFFSET of BINARY (SEMAPHORE its reference
    counter, as the other's must be: the kernel refuses two at one site),
    enabled in a tracing instance of its own (GROUP) in overwrite mode,
    whose ring's events (entries + overrun, per CPU: exact) are every trap
    of every process mapping BINARY; uprobe_profile's hits beside them.
    start(), count() after the traps, stop() always (what start made)."""

    def __init__(self, group, event, binary, offset, semaphore=None):
        self.group, self.event, self.binary = group, event, binary
        self.offset, self.semaphore = offset, semaphore
        self.inst, self.spec = os.path.join(find(), "instances", group), None

    def start(self):
        self.spec = add_uprobe(self.group, self.event, self.binary, self.offset, self.semaphore)
        os.mkdir(self.inst)
        write(os.path.join(self.inst, "options", "overwrite"), "1")
        write(os.path.join(self.inst, "buffer_size_kb"), "64")
        write(os.path.join(self.inst, "events", self.group, self.event, "enable"), "1")

    def count(self):
        """(events its ring took, events it dropped, uprobe_profile's hits or None)."""
        stats = ring_stats(self.inst)
        return (written(stats), stats["dropped events"] + stats["commit overrun"],
                hits(self.event, self.binary))

    def stop(self):
        remove_instance(self.inst, f"{self.group}/{self.event}")
        remove_uprobe(self.group, self.event)  # (if defined: a signal may have come between
        self.spec = None                       # the kernel's taking it and start()'s return)


class EventCounter:
    """Counts a kernel event (e.g. syscalls/sys_enter_uretprobe) fired by
    tasks named COMM, exactly, in a tracing instance of its own (NAME) with
    a small overwrite buffer: entries + overrun is every event recorded.
    start() before the run, count() after, stop() always."""

    def __init__(self, name, event, comm):
        self.inst = os.path.join(find(), "instances", name)
        self.event, self.comm = event, comm[:15]  # the kernel's comm is 15 bytes

    def available(self):
        return os.path.isdir(os.path.join(find(), "events", self.event))

    def start(self):
        os.mkdir(self.inst)
        ev = os.path.join(self.inst, "events", self.event)
        write(os.path.join(self.inst, "buffer_size_kb"), "64")
        write(os.path.join(ev, "filter"), f'comm == "{self.comm}"')
        write(os.path.join(ev, "enable"), "1")

    def count(self):
        return written(ring_stats(self.inst))

    def stop(self):
        remove_instance(self.inst, self.event)
