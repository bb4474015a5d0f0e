"""silence.py: why a user's marker never fired.  A row whose tracer and
witness both saw 0 events is `never-fires` (record.never_fired); this
runs the user's WORKLOAD once more, untraced, in a session of its own,
and looks every LOOK_S at the maps of each of its processes (the tree
below the command, by /proc/PID/task/TID/children) for TARGET, by device
and inode, not by name.  What it can tell:

- some process mapped TARGET: the marker's code never ran there, so the
  program needs its own switch (docs/real-programs.md lists the known
  ones: PHP's USE_ZEND_DTRACE=1, the JVM's -XX:+DTraceMethodProbes), or
  the workload never reaches the marked code;
- none did, but one mapped another file of the same name: another copy
  (the common case: a library from another prefix), named;
- none did: the processes it saw, by name;
- it saw no process: they ended within a look.

A look is a guess only where it says so; nothing here changes a count.
Nothing to run: measure/kit.py calls why() once per command and TARGET.
"""
import os
import signal
import subprocess
import time

LOOK_S = 0.0005  # between two looks at the command's processes
LIMIT_S = 60  # the one more run at most; then it is killed
SHOWN = 4  # processes named in the reason at most
_SAID = {}  # (target, command): the reason, once per kit


HEAD = "WORKLOAD run once more, untraced, its processes' maps looked at"  # the words' start


def why(target, command, cwd, env=None):
    """Words for why COMMAND made TARGET's marker fire 0 times (cached)."""
    key = (target, tuple(command))
    if key not in _SAID:
        try:
            _SAID[key] = words(target, *watch(target, command, cwd, env))
        except OSError as e:  # TARGET gone meanwhile, /proc unreadable: said, never raised
            _SAID[key] = f"{HEAD}: it could not look ({e.filename or ''}: {e.strerror})"
    return _SAID[key]


def tree(root):
    """ROOT and the pids below it, by the kernel's children lists."""
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        try:
            for t in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{t}/children") as f:
                    todo += [int(k) for k in f.read().split()]
        except OSError:  # gone meanwhile
            pass
    return out


def maps_files(pid):
    """{(dev, inode): path} of the files PID maps: each maps line is
    address, perms, offset, dev (major:minor, hex), inode, path."""
    out = {}
    with open(f"/proc/{pid}/maps") as f:
        for ln in f:
            parts = ln.split(None, 5)
            if len(parts) < 6 or parts[4] == "0":
                continue
            major, minor = (int(x, 16) for x in parts[3].split(":"))
            out[(os.makedev(major, minor), int(parts[4]))] = parts[5].rstrip("\n")
    return out


def watch(target, command, cwd, env):
    """Runs COMMAND once and returns ({pid: name} of the processes seen,
    {pid: name} of those that mapped TARGET, {path} of other files named
    as TARGET that they mapped, why it did not run or None)."""
    st = os.stat(target)
    real = os.path.realpath(target)
    mine, base = (st.st_dev, st.st_ino), os.path.basename(real)
    seen, mapped, others = {}, {}, set()
    try:
        p = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    except OSError as e:
        return seen, mapped, others, f"{command[0]}: {e.strerror}"
    deadline = time.monotonic() + LIMIT_S
    try:
        while running(p) and time.monotonic() < deadline:
            for pid in tree(p.pid):
                try:
                    with open(f"/proc/{pid}/comm") as f:
                        name = f.read().strip()
                    files = maps_files(pid)
                except OSError:  # ended, or a zombie's empty maps
                    continue
                seen[pid] = name
                # by device and inode; by its real path too, where maps
                # shows another device than stat (overlayfs, btrfs)
                if mine in files or real in files.values():
                    mapped[pid] = name
                others |= {path for key, path in files.items()
                           if key != mine and path != real and os.path.basename(path) == base}
            time.sleep(LOOK_S)
    finally:
        # The command is not reaped until its group is killed: its pid, and
        # so its group's id, cannot be another process's meanwhile.  What it
        # left behind in its group (`sh -c 'x &'`) goes with it, and the
        # tree below it where it still runs (a child that made a group of
        # its own); nothing else.
        for pid in [q for q in tree(p.pid) if q != p.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        p.wait()
    return seen, mapped, others, None


def running(p):
    """P has not exited (it is not reaped here: WNOWAIT)."""
    return os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None


def names(procs):
    by = {}
    for pid, n in procs.items():
        by.setdefault(n, []).append(pid)
    shown = [f"{n} ({len(p)})" if len(p) > 1 else n for n, p in list(by.items())[:SHOWN]]
    return ", ".join(shown) + (f" and {len(by) - SHOWN} more" if len(by) > SHOWN else "")


def words(target, seen, mapped, others, failed):
    head = HEAD
    if failed:
        return f"{head}: it did not start ({failed})"
    if mapped:
        return (f"{head}: {len(mapped)} of its {len(seen)} processes mapped {target} "
                f"({names(mapped)}), yet the marker's code never ran: the program may need "
                "its own switch, or the command never reaches it (docs/real-programs.md)")
    if others:
        return (f"{head}: none of its {len(seen)} processes ({names(seen)}) mapped {target}, "
                f"but another copy: {', '.join(sorted(others))} (name that one as TARGET)")
    if seen:
        return f"{head}: none of its {len(seen)} processes ({names(seen)}) mapped {target}"
    return f"{head}: it saw none (they ended within {LOOK_S * 1000:g} ms)"
