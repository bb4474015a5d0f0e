"""silence.py: why a user's marker never fired.  A row whose tracer and
witness both saw 0 events is `never-fires` (record.never_fired); this
runs the user's WORKLOAD again, untraced, in a session of its own, and
looks every LOOK_S at the maps of each of its processes (the tree below
the command, by /proc/PID/task/TID/children) for TARGET, by device and
inode (or real path), not by name; a command so short that no look
caught it after its exec is run again, TRIES times at most.  What it can
tell:

- some process mapped TARGET: the marker's code never ran there, so the
  program needs its own switch (docs/real-programs.md lists the known
  ones: PHP's USE_ZEND_DTRACE=1, the JVM's -XX:+DTraceMethodProbes), or
  the workload never reaches the marked code;
- none did, but one mapped another file of the same name: another copy
  (the common case: a library from another prefix), named;
- none did: the processes it saw, by name;
- it saw no process: they ended within a look, each time.

A look is a guess only where it says so; nothing here changes a count.
Nothing to run: measure/kit.py calls why() once per command and TARGET.
"""
import os
import re
import shutil
import subprocess
import tempfile
import time

import procs

LOOK_S = 0.0005  # between two looks at the command's processes
LIMIT_S = 60  # the runs at most, in all; then the one running is killed
TRIES = 20  # runs at most, where none is seen mapping TARGET
SHOWN = 4  # processes named in the reason at most
_SAID = {}  # (target, command): the reason, once per kit


HEAD = "WORKLOAD run again, untraced, its processes' maps looked at"  # the words' start


def why(target, command, cwd, env=None):
    """Words for why COMMAND made TARGET's marker fire 0 times (cached)."""
    key = (target, tuple(command))
    if key not in _SAID:
        try:
            _SAID[key] = words(target, *watch(target, command, cwd, env))
        except OSError as e:  # TARGET gone meanwhile, /proc unreadable: said, never raised
            _SAID[key] = f"{HEAD}: it could not look ({e.filename or ''}: {e.strerror})"
    return _SAID[key]


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
    """Runs COMMAND until a run of it was looked at after its exec (a
    process looked at twice), or TRIES runs (a command of a few ms may end between two looks on a busy
    machine: its copy before the exec, this kit's own, is no look at it);
    returns ({pid:
    name} of the processes seen, {pid: name} of those that mapped TARGET,
    {path} of other files named as TARGET that they mapped, the runs, why
    it did not run or None)."""
    st = os.stat(target)
    real = os.path.realpath(target)
    mine, base = (st.st_dev, st.st_ino), os.path.basename(real)
    with open("/proc/self/cmdline", "rb") as f:
        me = f.read()
    seen, mapped, others, looks = {}, {}, set(), {}
    deadline, runs = time.monotonic() + LIMIT_S, 0
    ld = tempfile.mkdtemp(prefix="kit-silence-")  # (exclusive, 0700)
    # glibc's loader says what it loaded, each process in a file of its own
    # (a program's own stderr untouched): exact where a look came too late
    env = dict(os.environ if env is None else env, LD_DEBUG="files",
               LD_DEBUG_OUTPUT=os.path.join(ld, "ld"))
    try:
        while not mapped and runs < TRIES and time.monotonic() < deadline:
            runs += 1
            try:
                p = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
            except OSError as e:
                return seen, mapped, others, runs, f"{command[0]}: {e.strerror}"
            try:
                while running(p) and time.monotonic() < deadline:
                    look(p, me, mine, real, base, looks, mapped, others)
                    time.sleep(LOOK_S)
            finally:
                stop(p)
            loaded(ld, mine, real, base, looks, mapped, others)
            # a process looked at twice, or whose loader said what it loaded:
            # one look may have been in its exec, before its libraries
            seen = {pid: name for pid, (n, name) in looks.items() if n >= 2}
            if seen or mapped:
                break
    finally:
        shutil.rmtree(ld, ignore_errors=True)
    return seen, mapped, others, runs, None


LD_LINE = re.compile(r"^\s*(\d+):\s+(?:calling init: (.+)|file=\S+ \[\d+\];\s+needed by (.+) "
                     r"\[\d+\])$")


def loaded(ld, mine, real, base, looks, mapped, others):
    """What each process's loader said it loaded (LD_DEBUG=files: "calling
    init: PATH", "needed by PATH"), into LOOKS (counted as seen after its
    exec), MAPPED and OTHERS; its files removed."""
    for name in os.listdir(ld):
        path = os.path.join(ld, name)
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
        os.unlink(path)
        progs = {}  # pid: its program, the first that needed a library (a look may be older)
        for ln in lines:
            m = LD_LINE.match(ln)
            if not m:
                continue
            pid, lib = int(m.group(1)), m.group(2) or m.group(3)
            if m.group(3):
                progs.setdefault(pid, os.path.basename(m.group(3)))
            name = progs.get(pid) or looks.get(pid, (0, ""))[1] or f"pid {pid}"
            looks[pid] = (max(2, looks.get(pid, (0, ""))[0]), name)
            try:
                st = os.stat(lib)
                same = (st.st_dev, st.st_ino) == mine or os.path.realpath(lib) == real
            except OSError:
                continue
            if same:
                mapped[pid] = name
            elif os.path.basename(os.path.realpath(lib)) == base:
                others.add(os.path.realpath(lib))


def look(p, me, mine, real, base, looks, mapped, others):
    """One look at the maps of P's processes (not a copy of this process
    before its exec: ME, its command line); LOOKS: {pid: (looks, name)}."""
    for pid in procs.tree(p.pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read() == me:
                    continue
            with open(f"/proc/{pid}/comm") as f:
                name = f.read().strip()
            files = maps_files(pid)
        except OSError:  # ended, or a zombie's empty maps
            continue
        looks[pid] = (looks.get(pid, (0, ""))[0] + 1, name)
        # by device and inode; by its real path too, where maps shows
        # another device than stat (overlayfs, btrfs)
        if mine in files or real in files.values():
            mapped[pid] = name
        others |= {os.path.realpath(path) for key, path in files.items()
                   if key != mine and path != real and os.path.basename(path) == base}


def stop(p):
    """P's group killed, and the tree below it, then P reaped.  P is not
    reaped until then: its pid, and so its group's id, cannot be another
    process's meanwhile.  What it left in its group (`sh -c 'x &'`) goes
    with it, and a child that made a group of its own; nothing else."""
    procs.kill_group(p, [q for q in procs.tree(p.pid) if q != p.pid])
    p.wait()


def running(p):
    """P has not exited (it is not reaped here: WNOWAIT)."""
    return os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None


def names(procs):
    by = {}
    for pid, n in procs.items():
        by.setdefault(n, []).append(pid)
    shown = [f"{n} ({len(p)})" if len(p) > 1 else n for n, p in list(by.items())[:SHOWN]]
    return ", ".join(shown) + (f" and {len(by) - SHOWN} more" if len(by) > SHOWN else "")


def words(target, seen, mapped, others, runs, failed):
    head = f"{HEAD} ({runs} run{'s' * (runs != 1)})"
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
    return f"{head}: it saw none (they ended within {LOOK_S * 1000:g} ms each time)"
