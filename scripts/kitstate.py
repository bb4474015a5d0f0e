"""kitstate.py: what only a kit writes about itself, in a folder only root
may write, so that the next kit knows a dead kit's leftovers by more than
a hex-looking word in a name (issue 56).

Each root kit that sweeps (make run, make lifecycle) registers itself in
STATE (/run/usdt-tracing-kit.d, root's, 0700, made without following a
link): a file named after its id (kit_id: its pid and pid namespace, as its names carry it)
holding its pid, its start time (so a pid the kernel gave to a new process
is not the kit), its pid namespace (tracefs is the kernel's, /proc the
namespace's: a kit never judges another namespace's kit) and the tracers
it started by path (bpftrace, perf stat -a, stap), each with its start
time.  A kit that ends in any way but SIGKILL removes its file, unless
its own cleanup failed (keep(): a detach, a teardown, its last sweep):
then the file stays, as a killed kit's would, for the next kit to sweep
what it left.  The next kit finds a file whose kit is dead, removes what that kit's names left
(leftovers.py), stops the tracers it lists that still run (the same pid
and start time, SIGTERM then SIGKILL), and removes the file.  A name with
no file behind it (a user's own `kitface_1`) is never the kit's.

KIT_STATE names another folder (the tests'); without root nothing is
written (a kit without root attaches nothing and sweeps nothing).

Nothing to run: `import kitstate; kitstate.register()`.
"""
import json
import os
import stat

from procs import proc_stat

STATE = os.environ.get("KIT_STATE") or "/run/usdt-tracing-kit.d"
_mine = {}  # this process's record, once registered


def start_time(pid):
    """PID's start time (clock ticks after boot), or None where it is gone
    (a zombie is gone)."""
    st = proc_stat(pid)
    return st[1][19] if st and st[1][0] != "Z" else None


def pid_ns(pid="self"):
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def run_tag(kid, serial):
    """The name of the SERIAL-th run of the kit whose id is KID (kit_id):
    every name it makes for that run (leftovers.py knows them); 0 is the
    kit's own, not a run's (its LTTng session daemon's cgroup)."""
    return f"kit{kid}_{serial}"


def kit_id(pid):
    """The id of the kit whose process is PID (in this pid namespace), in
    every name it makes: the pid in hex, `n`, the pid namespace's inode in
    hex.  A kit in a container (another pid namespace over the same
    kernel's tracefs and cgroups) may have the same pid as a dead kit here,
    never the same id: its names are never taken for the dead kit's."""
    return f"{pid:x}n{os.stat('/proc/self/ns/pid').st_ino:x}"


def folder():
    """STATE's descriptor where it is root's alone (made so if missing),
    else None (no root, or someone else's: then nothing is believed)."""
    if os.geteuid() != 0:
        return None
    try:
        os.mkdir(STATE, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        fd = os.open(STATE, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    st = os.fstat(fd)
    if st.st_uid != 0 or st.st_mode & 0o077:
        os.close(fd)
        return None
    return fd


def write(name, rec):
    fd = folder()
    if fd is None:
        return
    try:
        tmp = f".{name}.{os.getpid()}.tmp"
        f = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                    0o600, dir_fd=fd)
        with os.fdopen(f, "w") as out:
            json.dump(rec, out)
        os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)


def register(kid):
    """This process, the kit KID (kit_id), in STATE."""
    _mine.update(id=kid, pid=os.getpid(), start=start_time(os.getpid()), pidns=pid_ns(),
                 tracers=[])
    write(kid, _mine)


def tracer(pid):
    """A tracer this kit started (by path: it would outlive a SIGKILLed kit
    and trace the next kit's runs): noted with its start time."""
    if not _mine or _mine["pid"] != os.getpid():
        return
    _mine["tracers"] = [[p, t] for p, t in _mine["tracers"] if start_time(p) == t]
    _mine["tracers"].append([pid, start_time(pid)])
    write(_mine["id"], _mine)


def keep(why):
    """This kit's own cleanup failed (WHY, in words): its record stays in
    STATE when it ends (unregister leaves it, WHY in it), so that the next
    kit, finding it dead, sweeps what it left (leftovers.py) as it would a
    killed kit's."""
    if not _mine or _mine["pid"] != os.getpid():
        return
    _mine["left"] = [*_mine.get("left", []), why]
    write(_mine["id"], _mine)


def unregister():
    """This kit's record removed as it ends (atexit), unless its cleanup
    failed (keep)."""
    if not _mine or _mine["pid"] != os.getpid() or _mine.get("left"):
        return
    forget(_mine["id"])
    _mine.clear()


def forget(kid):
    fd = folder()
    if fd is None:
        return
    try:
        os.unlink(kid, dir_fd=fd)
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)


def dead():
    """{id: record} of the registered kits of this pid namespace that are
    gone (no process with that pid and start time)."""
    fd = folder()
    if fd is None:
        return {}
    out = {}
    try:
        for name in os.listdir(fd):
            if name.startswith("."):
                continue
            try:
                f = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                with os.fdopen(f) as inp:
                    if not stat.S_ISREG(os.fstat(inp.fileno()).st_mode):
                        continue
                    rec = json.load(inp)
                pid, start, ns = int(rec["pid"]), rec["start"], rec["pidns"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if ns == pid_ns() and name == kit_id(pid) and start_time(pid) != start:
                out[name] = rec
    finally:
        os.close(fd)
    return out
