"""lab/mounts.py: what the lab mounts on the host, always undone: the
chroot's /proc and /dev for a step (Mounts), and whatever an interrupted
mmdebstrap or chroot step left under a folder (unmount_under).  Needs
root and mount/umount.

Nothing to run: lab/modules.py and lab/suite.py use it.
"""
import os
import subprocess


def unmount_under(path):
    """Unmounts whatever is still mounted under PATH, deepest first (lazily
    where busy): what an interrupted mmdebstrap or chroot step left."""
    with open("/proc/mounts") as f:
        mounts = [ln.split()[1] for ln in f if ln.split()[1].startswith(path.rstrip("/") + "/")]
    for m in sorted(mounts, key=len, reverse=True):
        if subprocess.run(["umount", m], stderr=subprocess.DEVNULL).returncode != 0:
            subprocess.run(["umount", "-l", m], stderr=subprocess.DEVNULL)


class Mounts:
    """The chroot's /proc and /dev, mounted for a step and always undone."""

    def __init__(self, rootfs):
        self.rootfs, self.done = rootfs, []

    def __enter__(self):
        for src, dst, args in (("proc", "proc", ["-t", "proc"]), ("/dev", "dev", ["--bind"])):
            path = os.path.join(self.rootfs, dst)
            os.makedirs(path, exist_ok=True)
            subprocess.run(["mount", *args, src, path], check=True)
            self.done.append(path)
        return self

    def __exit__(self, *exc):
        for path in reversed(self.done):
            if subprocess.run(["umount", path]).returncode != 0:
                subprocess.run(["umount", "-l", path])
        self.done = []
