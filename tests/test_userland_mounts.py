"""The mount table read whole (scripts/mountinfo.py) and what is mounted
undone: the userland's cleanup (tests/userland.py) and the lab's root
file system's (lab/suite.py) under a path with a space, never removing
through a mount (the chroots bind the host's /dev; /proc/mounts writes a
space as \\040, so a cleanup comparing that text unmounted nothing and
rmtree walked into the host's devtmpfs); cgroups.py's table decoded the
same way; lab.mounts.Mounts undoing its first mount when its second
fails.  Here a tmpfs of the test's own, holding a marker and a tmpfs of
its own below (/dev/shm's stand-in), stands in for the host's /dev:
bound into a made-up tree, never the host's.

    python3 tests/run_tests.py --tier check,host test_userland_mounts

The mountinfo reading and Mounts (its commands stood in for) are a
check; the rest mounts (the host tier, root).
"""
import os
import shutil
import subprocess
import tempfile
import unittest
from unittest import mock

from kit_test import not_a_check, unavailable
import cgroups
import mountinfo
import userland
from lab import mounts as lab_mounts
from lab import suite


class Mountinfo(unittest.TestCase):
    """/proc/self/mountinfo's escapes (\\040 space, \\011 tab, \\012 newline,
    \\134 backslash) undone; a sibling with a longer name is not below."""

    INFO = (b"23 26 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw\n"
            b"90 26 0:50 / /srv/a\\040b/work/dev rw - devtmpfs devtmpfs rw\n"
            b"91 90 0:51 / /srv/a\\040b/work/dev/shm rw - tmpfs tmpfs rw\n"
            b"92 26 0:52 / /srv/a\\040b/work/t\\011a\\012b\\134c rw - tmpfs x rw\n"
            b"93 26 0:53 / /srv/a\\040b/workshop rw - tmpfs tmpfs rw\n"
            b"94 26 0:54 / /srv/a\\040b/work/caf\xc3\xa9 rw - tmpfs tmpfs rw\n")

    def test_points_decoded(self):
        self.assertEqual(mountinfo.mount_points(self.INFO),
                         ["/dev", "/srv/a b/work/dev", "/srv/a b/work/dev/shm",
                          "/srv/a b/work/t\ta\nb\\c", "/srv/a b/workshop", "/srv/a b/work/café"])

    def test_mounted_below_a_path_with_a_space(self):
        with tempfile.NamedTemporaryFile("wb", suffix=".mountinfo") as f:
            f.write(self.INFO)
            f.flush()
            self.assertEqual(mountinfo.mounted_below("/srv/a b/work", f.name),
                             ["/srv/a b/work/dev/shm", "/srv/a b/work/t\ta\nb\\c",
                              "/srv/a b/work/café", "/srv/a b/work/dev"])
            self.assertEqual(mountinfo.mounted_below("/srv/a b/work/dev/", f.name),
                             ["/srv/a b/work/dev/shm", "/srv/a b/work/dev"])
            self.assertEqual(mountinfo.mounted_below("/srv/a b/nothing", f.name), [])

    def test_every_field_decoded(self):
        # the root in the file system, the type and each super option too
        info = (b"30 26 0:27 /a\\040b /sys/fs/cgroup\\040x rw shared:9 - cgroup2 cgroup2 "
                b"rw,nsdelegate\n"
                b"31 26 0:28 / /c rw - cgroup cgroup rw,cpu,cpuacct,x\\054y\n"
                b"32 26 0:29 / /t rw - tmpfs  rw\n")
        self.assertEqual(mountinfo.parse(info), [
            ("/sys/fs/cgroup x", "/a b", "cgroup2", ["rw", "nsdelegate"]),
            ("/c", "/", "cgroup", ["rw", "cpu", "cpuacct", "x,y"]),
            ("/t", "/", "tmpfs", ["rw"])])

    def test_cgroups_reads_it_decoded(self):
        info = (b"30 26 0:27 / /sys/fs/cgroup\\040x rw - cgroup2 cgroup2 rw\n"
                b"31 26 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu,cpuacct\n")
        with tempfile.NamedTemporaryFile("wb", suffix=".mountinfo") as f:
            f.write(info)
            f.flush()
            with mock.patch.object(mountinfo, "MOUNTINFO", f.name):
                self.assertEqual(cgroups.mount(), "/sys/fs/cgroup x")
                self.assertTrue(cgroups.v1_mounted("cpu"))
                self.assertFalse(cgroups.v1_mounted("memory"))
        with mock.patch.object(mountinfo, "MOUNTINFO", "/nonexistent/mountinfo"):
            self.assertEqual(cgroups.mounts(), [])


class LabMounts(unittest.TestCase):
    """lab.mounts.Mounts with mount and umount stood in for: its second
    mount failing undoes the first, and the failure is raised."""

    def test_a_failed_second_mount_undoes_the_first(self):
        ran = []

        def run(cmd, check=False, **kw):
            ran.append(cmd)
            if cmd[0] == "mount" and cmd[-1].endswith("/dev") and check:
                raise subprocess.CalledProcessError(32, cmd)
            return subprocess.CompletedProcess(cmd, 0)
        with tempfile.TemporaryDirectory(prefix="kit lab mounts ") as root:
            m = lab_mounts.Mounts(root)
            with mock.patch.object(lab_mounts.subprocess, "run", run):
                with self.assertRaises(subprocess.CalledProcessError):
                    with m:
                        self.fail("the second mount failed: no step")
            proc, dev = os.path.join(root, "proc"), os.path.join(root, "dev")
            self.assertEqual(ran, [["mount", "-t", "proc", "proc", proc],
                                   ["mount", "--bind", "/dev", dev], ["umount", proc]])
            self.assertEqual(m.done, [])


class Cleanup(unittest.TestCase):
    """A tree under a folder with a space, the test's tmpfs ('host'), with
    a marker and a tmpfs below it ('host'/shm), --rbind-mounted at its dev
    (a slave, as the chroot's), stands for the chroot with the host's /dev."""

    tier = "host"

    def setUp(self):
        not_a_check(self, "root")
        if os.geteuid() != 0:
            unavailable(self, "needs root: mounts a tmpfs of its own (the host's /dev's "
                              "stand-in)")
        self.top = tempfile.mkdtemp(prefix="kit userland mounts ")
        self.host = os.path.join(self.top, "host dev")
        self.shm = os.path.join(self.host, "shm")
        self.work = os.path.join(self.top, "user land", "trixie", "work")  # (chroot()'s)
        self.dev = os.path.join(self.work, "dev")
        self.mounted = []  # what this test mounted, undone in tearDown
        self.addCleanup(self.undo)
        os.makedirs(self.host)
        self.mount("-t", "tmpfs", "-o", "size=1m", "kit-test-host-dev", self.host)
        os.mkdir(self.shm)
        self.mount("-t", "tmpfs", "-o", "size=1m", "kit-test-host-shm", self.shm)
        for d in (self.host, self.shm):
            with open(os.path.join(d, "marker"), "w") as f:
                f.write("the host's\n")
        os.makedirs(os.path.join(self.work, "etc"))
        with open(os.path.join(self.work, "etc", "passwd"), "w") as f:
            f.write("root:x:0:0::/root:/bin/sh\n")
        self.log = os.path.join(self.top, "log")

    def mount(self, *args):
        subprocess.run(["mount", *args], check=True)
        self.mounted.append(args[-1])

    def bind_dev(self):
        os.makedirs(self.dev, exist_ok=True)
        self.mount("--rbind", self.host, self.dev)
        subprocess.run(["mount", "--make-rslave", self.dev], check=True)

    def undo(self):
        """Whatever this test mounted, unmounted (lazily: the whole of a
        bind at once), latest first; its folder removed only when none is
        mounted any more."""
        for m in reversed(self.mounted):
            subprocess.run(["umount", "-l", m], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        left = [m for m in self.mounted if os.path.ismount(m)]
        if left:
            self.fail(f"still mounted after the test: {left} (left {self.top} in place)")
        shutil.rmtree(self.top)

    def assert_host_intact(self):
        for d in (self.host, self.shm):
            self.assertTrue(os.path.ismount(d), f"{d} was unmounted")
            self.assertTrue(os.path.exists(os.path.join(d, "marker")),
                            f"{d}/marker removed through the chroot's mount")

    def test_chroot_clears_a_killed_runs_work(self):
        # a killed run's copy, the host's dev still bound in it: entering
        # chroot() again unmounts it and removes the copy, the host's tmpfs
        # left whole (no base here, so it then stops at the copy)
        self.bind_dev()
        with mock.patch.object(userland, "TOP", os.path.join(self.top, "user land")):
            with self.assertRaisesRegex(RuntimeError, "could not copy the trixie base"):
                with userland.chroot("trixie", self.log):
                    self.fail("no base: no chroot")
        self.assert_host_intact()
        self.assertFalse(os.path.ismount(self.dev), "the chroot's dev still mounted")
        self.assertFalse(os.path.lexists(self.work))

    def test_mounts_undone_exactly(self):
        binds = [(["--rbind", self.host], "dev"), (["-t", "tmpfs", "kit-test-proc"], "proc")]
        with userland.ChrootMounts(self.work, binds, self.log) as m:
            self.mounted += m.done  # (undone here, should it leave them)
            self.assertTrue(os.path.exists(os.path.join(self.dev, "shm", "marker")))
            self.assertEqual(mountinfo.mounted_below(self.work),
                             [os.path.join(self.dev, "shm"), os.path.join(self.work, "proc"),
                              self.dev])
        self.assertEqual(mountinfo.mounted_below(self.work), [])
        self.assert_host_intact()
        mountinfo.remove(self.work)
        self.assertFalse(os.path.lexists(self.work))

    def test_remove_refused_while_mounted(self):
        self.bind_dev()
        with self.assertRaises(mountinfo.Refused) as e:
            mountinfo.remove(os.path.join(self.top, "user land"))
        self.assertIn("still mounted", str(e.exception))
        self.assertIn(self.dev, str(e.exception))
        self.assertTrue(os.path.ismount(self.dev))
        self.assert_host_intact()
        self.assertTrue(os.path.exists(os.path.join(self.work, "etc", "passwd")))

    def test_lab_clears_a_root_file_system(self):
        # lab/suite.py's clear (lab/rootfs.py's make: the old root file system, a
        # killed build's): what is mounted below unmounted, the tree gone,
        # the host's tmpfs left whole
        self.bind_dev()
        suite.clear(self.work)
        self.assertFalse(os.path.ismount(self.dev), "the root file system's dev still mounted")
        self.assertFalse(os.path.lexists(self.work))
        self.assert_host_intact()

    def test_lab_says_a_refusal_in_its_line(self):
        self.bind_dev()
        with mock.patch.object(mountinfo, "unmount_below", lambda path: None):
            with self.assertRaisesRegex(suite.LabError, "still mounted there"):
                suite.clear(self.work)
        self.assertTrue(os.path.ismount(self.dev))
        self.assert_host_intact()

    def test_remove_never_crosses_a_mount(self):
        # the mount table read wrong (here: an empty one), the removal still
        # stops at the folder on another file system, named
        self.bind_dev()
        empty = os.path.join(self.top, "mountinfo")
        open(empty, "w").close()
        with self.assertRaisesRegex(mountinfo.Refused, "another file system is mounted "
                                    "there") as e:
            mountinfo.remove(self.work, mountinfo=empty)
        self.assertIn(self.dev, str(e.exception))
        self.assertTrue(os.path.ismount(self.dev))
        self.assert_host_intact()


if __name__ == "__main__":
    unittest.main()
