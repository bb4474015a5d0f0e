"""owncopy.py: a private copy of a program that only the workload's
processes map, so that a probe on it counts their events alone.

A uprobe is set on an inode: a probe on a program by path (the user-stap
row's stp/mark-by-path.stp) fires in every process that maps the file,
the workload's and any other's (a bystander throwing through the same
libstdc++ during the run: SystemTap counted 102,000 a run for the
workload's 100,000).  The workload's command, started under `unshare
--mount` with a copy of the program bind-mounted over its path, and
everything it starts, maps the copy, whose inode no other process maps: a
probe on the copy counts the workload's events and nothing else, and the
kernel's hit counter on it too.  The mount lives in the workload's own
mount namespace (unshare's propagation: private, so the host never sees
it) and goes with its last process; the copy lies in the run's scratch
folder (root's, 0700), removed with it.

Nothing to run: tracers/stap.py wraps a by-path workload's command with it.
"""
import os
import shutil

# The command's first step in its own mount namespace: the copy over the
# program's path, then the command itself (exec: the same pid, so the kit's
# held target is still the workload's own process).
BIND = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'


def make(program, scratch):
    """(the copy's path, the path it covers): PROGRAM's file (its links
    followed: the loader opens the file they lead to) copied into a new
    folder under SCRATCH."""
    real = os.path.realpath(program)
    folder = os.path.join(scratch, "own-copy")
    os.mkdir(folder, 0o755)
    copy = os.path.join(folder, os.path.basename(real))
    shutil.copyfile(real, copy)
    os.chmod(copy, 0o755)
    return copy, real


def wrap(cmd, copy, real):
    """CMD started in a mount namespace of its own where COPY covers REAL."""
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", BIND, "sh", copy, real,
            *cmd]
