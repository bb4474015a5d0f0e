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


def why(target, command, cwd, env=None):
    """Words for why COMMAND made TARGET's marker fire 0 times (cached)."""
    key = (target, tuple(command))
    if key not in _SAID:
        _SAID[key] = words(target, *watch(target, command, cwd, env))
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
    mine, base = (st.st_dev, st.st_ino), os.path.basename(os.path.realpath(target))
    seen, mapped, others = {}, {}, set()
    try:
        p = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    except OSError as e:
        return seen, mapped, others, f"{command[0]}: {e.strerror}"
    deadline = time.monotonic() + LIMIT_S
    try:
        while p.poll() is None and time.monotonic() < deadline:
            for pid in tree(p.pid):
                try:
                    with open(f"/proc/{pid}/comm") as f:
                        name = f.read().strip()
                    files = maps_files(pid)
                except OSError:  # ended, or a zombie's empty maps
                    continue
                seen[pid] = name
                if mine in files:
                    mapped[pid] = name
                others |= {path for key, path in files.items()
                           if key != mine and os.path.basename(path) == base}
            time.sleep(LOOK_S)
    finally:
        for pid in reversed(tree(p.pid)):  # by pid: what this started, nothing else
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        p.wait()
    return seen, mapped, others, None


def names(procs):
    by = {}
    for pid, n in procs.items():
        by.setdefault(n, []).append(pid)
    shown = [f"{n} ({len(p)})" if len(p) > 1 else n for n, p in list(by.items())[:SHOWN]]
    return ", ".join(shown) + (f" and {len(by) - SHOWN} more" if len(by) > SHOWN else "")


def words(target, seen, mapped, others, failed):
    head = "WORKLOAD run once more, untraced, its processes' maps looked at"
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
