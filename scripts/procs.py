"""procs.py: the processes under /proc, read and stopped by what the kit
knows of them (a pid it started, its tree, its group, its session, its
owner, never a name): a process's stat fields, the live ones, a tree
below a pid, SIGKILL to a group and what is left below it.  A room of its
own beside host.py, importing nothing of the kit, so that host.py's
command runner, silence.py's looks, the lock, the clusters' cleanup and
the back-ends share one walk of a process tree.

Nothing to run: `import procs`.
"""
import os
import signal
import time


def proc_stat(pid):
    """(comm, fields after comm) of /proc/PID/stat, or None if it is gone.
    fields[0] is the state, [1] ppid, [2] pgrp, [3] session, [11] utime,
    [12] stime (clock ticks)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()


def pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def live(comm=None):
    """[(pid, fields)] of the live processes (zombies excluded), only
    those named COMM if given; fields as proc_stat gives them."""
    out = []
    for pid in pids():
        st = proc_stat(pid)
        if st and st[1][0] != "Z" and comm in (None, st[0]):
            out.append((pid, st[1]))
    return out


def tree(root):
    """ROOT and the pids below it (children, theirs, ..., zombies too), by
    the kernel's children lists (/proc/PID/task/TID/children: quick, for
    silence.py's looks every half millisecond), or by every process's
    parent link where this kernel keeps no such lists (CONFIG_PROC_CHILDREN
    off); whatever their session."""
    kids = None
    if not os.path.exists(f"/proc/self/task/{os.getpid()}/children"):
        kids = {}
        for pid in pids():
            st = proc_stat(pid)
            if st:
                kids.setdefault(int(st[1][1]), []).append(pid)
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        if kids is not None:
            todo += kids.get(pid, [])
            continue
        try:
            for t in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{t}/children") as f:
                    todo += [int(k) for k in f.read().split()]
        except OSError:  # gone meanwhile
            pass
    return out


def below(root):
    """The live pids below process ROOT (tree's, zombies left out)."""
    return [pid for pid in tree(root)[1:] if (proc_stat(pid) or ("", "Z"))[1][0] != "Z"]


def kill_group(p, pids=()):
    """SIGKILL to each of PIDS, then to P's process group (P a Popen that
    leads one, not yet reaped: its pid, so its group's id, is still its)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:  # gone meanwhile
            pass
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        pass


def kill_all(which, seconds=10):
    """SIGKILL to every live process WHICH(pid, fields) picks (by what the
    kit knows of it: its session, its working directory; never its name),
    again until none is left or SECONDS pass; the pids killed."""
    killed, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        left = [pid for pid, fields in live() if which(pid, fields)]
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    return list(dict.fromkeys(killed))


def uid_of(pid):
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None
