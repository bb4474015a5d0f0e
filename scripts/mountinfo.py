"""mountinfo.py: the mount table, read whole and decoded, and a folder
removed never through a mount.  /proc/self/mountinfo writes a space, tab,
newline or backslash in a path as \\ooo (octal: \\040, \\011, \\012,
\\134); every field here has them undone, so a checkout under a path
with a space finds what is mounted below it.  What is mounted below a
folder is unmounted deepest first (each made a slave first: an unmount
there never reaches the host's mounts it was bound from), and the folder
is removed only where nothing is mounted at or below it, and never
through a mount point (a folder on another file system than its top's
stops the removal, named): the host's /dev bound into a chroot is not
emptied.  On the ground floor: imports nothing of the kit.

Nothing to run: cgroups.py, lab/suite.py and tests/userland.py use it
(tests/test_userland_mounts.py tests it).
"""
import os
import re
import stat
import subprocess

MOUNTINFO = "/proc/self/mountinfo"
ESCAPE = re.compile(rb"\\([0-7]{3})")


class Refused(RuntimeError):
    """A removal refused: something is mounted there (the message names it)."""


def decode(field):
    """One field of a mountinfo line (bytes) as text: its \\ooo undone."""
    return os.fsdecode(ESCAPE.sub(lambda m: bytes([int(m.group(1), 8)]), field))


def parse(data):
    """[(mount point, its root in the file system, type, [super options])]
    of DATA, a mountinfo's bytes, each field decoded; the fields after the
    optional ones are found by the " - " separator (a path's spaces are
    escaped, so it is the only one)."""
    out = []
    for line in data.splitlines():
        left, sep, right = line.partition(b" - ")
        fields, after = left.split(b" "), right.split(b" ")
        if sep and len(fields) > 4 and len(after) >= 3:
            out.append((decode(fields[4]), decode(fields[3]), decode(after[0]),
                        [decode(o) for o in after[2].split(b",")]))
    return out


def read(mountinfo=None):
    """parse() of MOUNTINFO (default: this process's)."""
    with open(mountinfo or MOUNTINFO, "rb") as f:
        return parse(f.read())


def mount_points(data):
    """The mount points of DATA, a mountinfo's bytes, as paths."""
    return [m[0] for m in parse(data)]


def mounted_below(path, mountinfo=None):
    """What is mounted at PATH or below it (PATH's symlinks resolved), deepest
    first, once per mount (two stacked on one point: twice)."""
    top = os.path.realpath(path)
    return sorted((m[0] for m in read(mountinfo)
                   if m[0] == top or m[0].startswith(top.rstrip("/") + "/")),
                  key=len, reverse=True)


def unmount_below(path):
    """Unmounts whatever is mounted at PATH or below (what a killed run, or
    a step in a chroot, left), deepest first, lazily where busy; each made
    a slave first, so that no unmount there reaches the host's mounts it
    was bound from."""
    points = mounted_below(path)
    for m in reversed(points):
        subprocess.run(["mount", "--make-rslave", m], stderr=subprocess.DEVNULL)
    for m in points:
        if subprocess.run(["umount", m], stderr=subprocess.DEVNULL).returncode != 0:
            subprocess.run(["umount", "-l", m], stderr=subprocess.DEVNULL)


def remove(path, mountinfo=None):
    """Removes PATH, refused (Refused, naming it) while anything is mounted
    at or below it, and never through a mount point: a folder on another
    file system than PATH's (st_dev) stops it, named."""
    if not os.path.lexists(path):
        return
    still = mounted_below(path, mountinfo)
    if still:
        raise Refused(f"not removing {path}: still mounted there: {', '.join(still)}")
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(path)
        return
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        _empty(fd, path, st.st_dev)
    finally:
        os.close(fd)
    os.rmdir(path)


def _empty(fd, where, dev):
    """Empties the folder FD (WHERE, for the message), every folder in it on
    DEV, by file descriptors (a folder swapped for a link is not followed)."""
    with os.scandir(fd) as it:
        entries = list(it)
    for e in entries:
        if not e.is_dir(follow_symlinks=False):
            os.unlink(e.name, dir_fd=fd)
            continue
        sub = os.open(e.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        try:
            if os.fstat(sub).st_dev != dev:
                raise Refused(f"not removing {os.path.join(where, e.name)}: another "
                              "file system is mounted there")
            _empty(sub, os.path.join(where, e.name), dev)
        finally:
            os.close(sub)
        os.rmdir(e.name, dir_fd=fd)


def clear(path):
    """PATH gone, and whatever was mounted at or below it unmounted first."""
    unmount_below(path)
    remove(path)
