"""tracefs.py: the kernel's tracing file system, shared by the ftrace and
perf back-ends: finding or mounting it, adding and removing uprobe events,
and reading their exact hit counts from uprobe_profile."""
import os
import platform
import re
import subprocess

CANDIDATES = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")

# The register that holds a function's first argument at entry, as
# uprobe_events spells it.
FIRST_ARG = {"x86_64": "%di", "aarch64": "%x0"}


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


def uprobe_defined(group, event):
    t = find()
    if not t:
        return False
    with open(os.path.join(t, "uprobe_events")) as f:
        return any(re.match(rf"^[pr]:{re.escape(group)}/{re.escape(event)}\s", ln) for ln in f)


def remove_uprobe(group, event):
    if uprobe_defined(group, event):
        write(os.path.join(find(), "uprobe_events"), f"-:{group}/{event}")


def hits(event, binary):
    """Exact hit count of the uprobe event named EVENT on BINARY, from
    uprobe_profile (`  FILE EVENT HITS` a line; the group is not shown, so
    the kit gives its events names no one else uses).  None if absent."""
    with open(os.path.join(find(), "uprobe_profile")) as f:
        for ln in f:
            parts = ln.split()
            if len(parts) >= 3 and parts[-2] == event and " ".join(parts[:-2]) == binary:
                return int(parts[-1])
    return None


def first_arg_fetch(sdt_args=None):
    """A fetch argument `v=REG:u32` for the marker's argument (from its
    stapsdt note, e.g. `4@%edi`) or for a function's first argument."""
    if sdt_args:
        m = re.match(r"-?\d+@%?([a-z0-9]+)$", sdt_args.strip())
        if not m:
            return ""
        reg = m.group(1)
        if platform.machine() == "x86_64":
            reg = re.sub(r"^[er]?([a-z]{2})$", r"\1", reg)
        return f"v=%{reg}:u32"
    reg = FIRST_ARG.get(platform.machine())
    return f"v={reg}:u32" if reg else ""


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
        n = 0
        percpu = os.path.join(self.inst, "per_cpu")
        for cpu in os.listdir(percpu):
            with open(os.path.join(percpu, cpu, "stats")) as f:
                stats = f.read()
            n += sum(int(x) for x in re.findall(r"^(?:entries|overrun): (\d+)", stats, re.M))
        return n

    def stop(self):
        if os.path.isdir(self.inst):
            en = os.path.join(self.inst, "events", self.event, "enable")
            if os.path.exists(en):
                write(en, "0")
            os.rmdir(self.inst)
