"""lab/mounts.py: the chroot's /proc and /dev, mounted on the host for a
step and always undone (Mounts), also where a later mount failed; what an
interrupted mmdebstrap or chroot step left mounted under a folder is
mountinfo.clear's.  Needs root and mount/umount.

Nothing to run: lab/modules.py and tests/userland.py use it.
"""
import os
import subprocess
import sys


class Mounts:
    """BINDS in ROOTFS ([(mount's arguments, the path in ROOTFS)]; default:
    the chroot's /proc and /dev), each path recorded as it is mounted and
    those exactly undone on leaving, latest first, lazily where busy; a
    mount that fails undoes those before it."""

    BINDS = [(["-t", "proc", "proc"], "proc"), (["--bind", "/dev"], "dev")]

    def __init__(self, rootfs, binds=None):
        self.rootfs, self.done = rootfs, []
        self.binds = self.BINDS if binds is None else binds

    def mount(self, args, path):
        """Mounts at PATH with mount's ARGS; raises where it fails."""
        subprocess.run(["mount", *args, path], check=True)

    def __enter__(self):
        try:
            for args, dst in self.binds:
                path = os.path.join(self.rootfs, dst)
                os.makedirs(path, exist_ok=True)
                self.mount(args, path)
                self.done.append(path)
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(self, *exc):
        for path in reversed(self.done):
            if subprocess.run(["umount", path]).returncode != 0:
                subprocess.run(["umount", "-l", path])
        self.done = []
