"""cgroups.py: a cgroup of the kit's own for a real program's processes,
so that a probe by path (a user's command, PostgreSQL's backends: every
process mapping the file) tells the workload's events from other
processes' (issue 58).

A run of a by-path workload moves its held target, and what it started
before the hold, into a cgroup v2 folder named after the run (its tag,
`kit<id>_<n>`, which leftovers.py knows), made below the kit's own
cgroup (so no controller the kit's group lacks, and the same CPU share;
at the hierarchy's top where the kit's own is a user's delegated subtree,
whose owner could move what is in it);
whatever they start after inherits it.  bpftrace keys its count by `cgroup` (the folder's inode,
what bpf_get_current_cgroup_id() gives), perf stat counts the event once
in that cgroup (-G NAME) and once in all, ftrace keeps its ring buffer to
the group's tasks (set_event_pid, following their forks); the rest of
the kernel's hits are other processes'.  Being in the group costs the
workload nothing measurable: the folder enables no controller, and the
untraced rows run in one too.  Where the machine has no cgroup2 mount (a
lab guest mounts none) there is no group, and a row says its count may
hold other processes' events.

What is still in a run's group when the run ends (a daemon the command
left) is stopped with it.  Nothing to run: measure/kit.py makes one per
run, leftovers.py removes a dead kit's.
"""
import errno
import os
import signal
import time

import mountinfo

CGROUP2 = "cgroup2"
REMOVE_LIMIT_S = 5.0  # for a folder kept busy by an exiting task


def mounts():
    """[(mount point, its root in the file system, type, super options)]
    of this process's mount table, each field decoded (mountinfo.py); []
    unread."""
    try:
        return mountinfo.read()
    except OSError:
        return []


def mount():
    """Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or
    /sys/fs/cgroup/unified on a hybrid host), by its file system type;
    None where it is not (a bind of a part of it, whose root is not "/",
    is passed over)."""
    return next((at for at, root, fstype, _ in mounts() if fstype == CGROUP2 and root == "/"),
                None)


def v1_mounted(controller):
    """Whether a cgroup v1 hierarchy holds CONTROLLER (a hybrid host's):
    perf's -G then names a group of that hierarchy, not of v2's."""
    return any(fstype == "cgroup" and controller in opts for _, _, fstype, opts in mounts())


class Group:
    """One cgroup of the kit's: made exclusively (a name already there is
    refused, never reused), given processes by pid, removed with any
    process still in it moved back to where the kit itself is."""

    def __init__(self, top, name):
        self.home = os.path.join(top, own_group().lstrip("/"))
        st = os.stat(self.home)
        if os.geteuid() == 0 and (st.st_uid != 0 or st.st_mode & 0o022):
            # a user's delegated subtree (root run from their session): its
            # owner could move or read what is in a group made there
            self.home = top
        self.path = os.path.join(self.home, name)
        self.name = os.path.relpath(self.path, top)  # perf stat -G's, from the mount
        os.mkdir(self.path, 0o755)  # (FileExistsError: not ours)
        self.id = os.stat(self.path).st_ino  # bpftrace's cgroup, cgroupid(PATH)

    def add(self, pids):
        """Moves each process of PIDS (its every thread) into the group; a
        pid gone meanwhile is passed over."""
        for pid in pids:
            try:
                with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
                    f.write(str(pid))
            except ProcessLookupError:
                pass

    def add_tree(self, root, below, tries=20):
        """ROOT and every process BELOW(ROOT) gives moved in, again until
        none is left out (one forked while the others moved: a snapshot
        misses it); False where TRIES did not settle it."""
        for _ in range(tries):
            want = {root, *below(root)}
            self.add(sorted(want))
            if want <= set(self.pids()) | {p for p in want if not os.path.exists(f"/proc/{p}")}:
                return True
        return False

    def pids(self):
        with open(os.path.join(self.path, "cgroup.procs")) as f:
            return [int(x) for x in f.read().split()]

    def remove(self):
        """The folder gone: what still runs in it (a command's daemon, which
        the run started and its cleanup did not stop) stopped first, as
        everything the kit starts is (cgroup.kill, else SIGKILL to each
        process in it, the group being the run's own), then removed."""
        stop(self.path)
        remove(self.path, self.home)


def stop(path, limit_s=REMOVE_LIMIT_S):
    """Every process in the cgroup folder PATH killed (cgroup.kill where the
    kernel has it, Linux 5.14 on; else SIGKILL each, again while any is
    left), until it is empty or LIMIT_S have passed."""
    end = time.monotonic() + limit_s
    kill = os.path.join(path, "cgroup.kill")
    while True:
        with open(os.path.join(path, "cgroup.procs")) as f:
            left = [int(x) for x in f.read().split()]
        if not left or time.monotonic() > end:
            return
        if os.path.exists(kill):
            with open(kill, "w") as f:
                f.write("1")
        else:
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        time.sleep(0.01)


def remove(path, home, limit_s=REMOVE_LIMIT_S):
    """Cgroup folder PATH removed, any process still in it moved to HOME
    (a cgroup folder) first; a task exiting, or one forked meanwhile, keeps
    it busy a moment (EBUSY): moved and tried again until LIMIT_S, then
    the error raised."""
    end = time.monotonic() + limit_s
    while os.path.isdir(path):
        with open(os.path.join(path, "cgroup.procs")) as f:
            left = f.read().split()
        for pid in left:
            try:
                with open(os.path.join(home, "cgroup.procs"), "w") as f:
                    f.write(pid)
            except ProcessLookupError:
                pass
        try:
            os.rmdir(path)
        except OSError as e:
            if e.errno != errno.EBUSY or time.monotonic() > end:
                raise
            time.sleep(0.01)


def named(match):
    """{name: path} of the cgroup folders anywhere in the hierarchy whose
    name MATCH(name) takes (leftovers.py: a dead kit's)."""
    top, out = mount(), {}
    for d, subs, _ in os.walk(top) if top else ():
        for n in subs:
            if match(n):
                out[n] = os.path.join(d, n)
    return out


def own_group():
    """This process's cgroup v2 path ("0::PATH" in /proc/self/cgroup)."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                return line[3:].strip()
    return "/"


def make(name):
    """A Group NAME, or (None, why) where there can be none here."""
    top = mount()
    if not top:
        return None, "the machine has no cgroup2 mount"
    try:
        return Group(top, name), ""
    except OSError as e:
        return None, f"could not make the cgroup {name}: {e.strerror or e}"
