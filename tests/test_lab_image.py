"""make lab's guest image and its boot (scripts/lab/suite.py, rootfs.py,
initrd.py, qemu.py): the kit put in a guest's root file system without
build/'s own root file systems (`PutKit`); a suite's base image made once, without
the kit (`BaseImage`); the package lists read from make hold
package names only, under make -C too (`WordLists`); a root file system
rebuilt for another package list fails in mmdebstrap, for real, and
keeps the cached one (`FailedRebuild`); the kit's own initramfs: its
modules in modprobe's order, its newc archive byte for byte, Debian's
booted once more where it stopped a guest, its /init's failure line the
reason (`Initramfs`); KVM's failure remembered for this host only
(`KvmVerdict`).

    make test TESTS=test_lab_image

FailedRebuild (the guests tier) needs root, mmdebstrap and the host's
Debian mirror (skipped with the reason otherwise); the rest needs
python3 alone.
"""
import os
import re
import shutil
import subprocess
import tempfile
import types
import unittest
from unittest import mock

from kit_test import need_root, unavailable
import host
from lab import common, rootfs, suite
from lab import initrd as guest_initrd
from lab import qemu as guest_qemu


class PutKit(unittest.TestCase):
    """The kit put in a guest's root file system leaves build/'s own root
    file systems out (host.ROOT_FILE_SYSTEMS): make test-userland's trixie
    root, copied in with its /dev/full read as a file, filled the disk
    (74 GB, 2026-12-05); its builds and sources go in, make lab's wing
    (scripts/lab/, which scripts/lava imports in the guest) too."""

    def test_no_root_file_system_inside(self):
        with tempfile.TemporaryDirectory() as repo, tempfile.TemporaryDirectory() as rootfs:
            for f in ("src/benchmark.c", "build/benchmark-sdt", "build/userland/trixie/x",
                      "build/lab/sid/rootfs/y", "results/z", "scripts/lab/suite.py"):
                os.makedirs(os.path.dirname(os.path.join(repo, f)), exist_ok=True)
                open(os.path.join(repo, f), "w").close()
            old = suite.ROOT
            suite.ROOT = repo
            try:
                suite.put_kit(rootfs, repo, timings=[])
            finally:
                suite.ROOT = old
            kit = os.path.join(rootfs, common.GUEST_KIT.lstrip("/"))
            got = sorted(os.path.relpath(os.path.join(d, f), kit)
                         for d, _, fs in os.walk(kit) for f in fs)
        self.assertEqual(got, ["build/benchmark-sdt", "scripts/lab/suite.py", "src/benchmark.c"])


class BaseImage(unittest.TestCase):
    """A suite's base image (Suite.base_image): its root file system
    without the kit, the first init (BOOT_INIT) and an empty /kit where
    that init mounts the kit's own drive; made once, again only for a
    root file system made anew (rootfs.ok), another first init, or an
    image written since (a guest's qemu without snapshot=on).  Needs
    e2fsprogs (mkfs.ext4, debugfs; Debian's required set), not root."""

    def ls(self, img, path):
        r = subprocess.run(["debugfs", "-R", f"ls -l {path}", img], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, check=True)
        return sorted(ln.split()[-1] for ln in r.stdout.splitlines()
                      if ln.split() and ln.split()[-1] not in (".", ".."))

    def test_made_once_without_the_kit(self):
        if not (shutil.which("mkfs.ext4") and shutil.which("debugfs")):
            self.skipTest(unavailable("mkfs.ext4 and debugfs (Debian package e2fsprogs)"))
        with tempfile.TemporaryDirectory() as d:
            s = types.SimpleNamespace(name="sid", dir=d, rootfs=os.path.join(d, "rootfs"),
                                      base=os.path.join(d, suite.BASE), log=os.path.join(d, "log"))
            s.kit = os.path.join(s.rootfs, common.GUEST_KIT.lstrip("/"))
            base_image = types.MethodType(suite.Suite.base_image, s)
            self.enterContext(mock.patch.object(suite, "say"))  # (its lines: the lab's output)
            for f in ("etc/os-release", "kit/build/benchmark-sdt", "kit-init-1.sh"):
                os.makedirs(os.path.dirname(os.path.join(s.rootfs, f)), exist_ok=True)
                open(os.path.join(s.rootfs, f), "w").close()
            with open(os.path.join(d, "rootfs.ok"), "w") as f:
                f.write("gcc make\n")
            base_image()
            self.assertEqual(self.ls(s.base, "/"), ["etc", "kit", "kit-boot.sh", "lost+found"])
            self.assertEqual(self.ls(s.base, "/kit"), [])
            made = os.stat(s.base).st_ino
            base_image()  # the same root file system: the same image
            self.assertEqual(os.stat(s.base).st_ino, made)
            os.utime(os.path.join(d, "rootfs.ok"), ns=(1, 1))  # a root file system made anew
            base_image()
            self.assertNotEqual(os.stat(s.base).st_ino, made)
            made = os.stat(s.base).st_ino
            os.utime(s.base)  # written since it was made (a guest without snapshot=on)
            base_image()
            self.assertNotEqual(os.stat(s.base).st_ino, made)
            self.assertEqual(sorted(os.listdir(d)), ["base.img", "base.img.ok", "log", "rootfs",
                                                     "rootfs.ok"])


class WordLists(unittest.TestCase):
    """The package lists the kit reads from make (the guests' packages,
    the builds' needs) hold package names only, also when the kit runs
    under a make started with -C, whose MAKEFLAGS carry w: its "Entering
    directory" lines once went into the guests' package list, the root
    file system was rebuilt for packages named 'Leaving' and 'make[1]:',
    and mmdebstrap failed with the cached one already gone."""

    def test_under_make_dash_c(self):
        name = re.compile(r"[a-z0-9][a-z0-9+.-]+")
        old = os.environ.get("MAKEFLAGS")
        os.environ["MAKEFLAGS"] = "w"  # what make -C DIR passes its children
        try:
            lists = {"packages": rootfs.packages(), "needs": sorted(host.build_needs())}
        finally:
            if old is None:
                del os.environ["MAKEFLAGS"]
            else:
                os.environ["MAKEFLAGS"] = old
        for what, words in lists.items():
            with self.subTest(what):
                self.assertEqual([w for w in words if not name.fullmatch(w)], [])
        self.assertIn("linux-image-amd64", lists["packages"])


class FailedRebuild(unittest.TestCase):
    tier = "guests"  # (mmdebstrap, the mirror)

    def test_a_failed_rebuild_keeps_the_cache(self):
        """A root file system rebuilt for another package list (one Debian
        has no such package in) fails in mmdebstrap, for real, and leaves
        the cached one and its list as they were."""
        need_root(self)
        if not shutil.which("mmdebstrap"):
            unavailable(self, "lab: mmdebstrap is not installed")
        with tempfile.TemporaryDirectory() as tmp:
            s = suite.Suite("sid", None, tmp, os.path.join(tmp, "lab.log"))
            s.dir = os.path.join(tmp, "sid")
            s.rootfs = os.path.join(s.dir, "rootfs")
            os.makedirs(os.path.join(s.rootfs, "lib", "modules", "6.1.0-kit"))
            with open(os.path.join(s.dir, "rootfs.ok"), "w") as f:
                f.write("linux-image-amd64\n")
            real = rootfs.packages
            rootfs.packages = lambda: ["linux-image-amd64", "kit-no-such-package"]
            try:
                with self.assertRaises(suite.LabError) as e:
                    rootfs.make(s)
                self.assertIn("mmdebstrap", str(e.exception))  # it ran, and failed
            finally:
                rootfs.packages = real
            kept = os.path.join(s.rootfs, "lib", "modules")
            self.assertTrue(os.path.isdir(kept), "the cached root file system was removed")
            self.assertEqual(os.listdir(kept), ["6.1.0-kit"])
            with open(os.path.join(s.dir, "rootfs.ok")) as f:
                self.assertEqual(f.read(), "linux-image-amd64\n")
            self.assertFalse(os.path.exists(s.rootfs + ".tmp"))


class Initramfs(unittest.TestCase):
    """The kit's own initramfs (lab/initrd.py): the modules in
    modprobe's order, what it cannot load refused (Debian's is booted
    then), the kernel's newc archive byte for byte, and its /init's
    failure line as the reason a guest stopped."""
    SAID = ("builtin virtio_pci\n"
            "insmod /lib/modules/7.2.13/kernel/drivers/block/virtio_blk.ko.xz \n"
            "insmod /lib/modules/7.2.13/kernel/crypto/crc32c-cryptoapi.ko.xz \n"
            "builtin crc32c\n"
            "insmod /lib/modules/7.2.13/kernel/fs/jbd2/jbd2.ko.xz \n"
            "insmod /lib/modules/7.2.13/kernel/crypto/crc32c-cryptoapi.ko.xz \n"
            "insmod /lib/modules/7.2.13/kernel/fs/ext4/ext4.ko \n")

    def test_load_order(self):
        self.assertEqual([os.path.basename(p) for p in guest_initrd.load_order(self.SAID)],
                         ["virtio_blk.ko.xz", "crc32c-cryptoapi.ko.xz", "jbd2.ko.xz", "ext4.ko"])
        for said, why in (("insmod /m/ext4.ko.xz errors=panic\n", "options (errors=panic)"),
                          ("insmod /m/ext4.ko.zst\n", "compression this initramfs does not"),
                          ("softdep ext4 pre: crc32c\n", "said 'softdep ext4 pre: crc32c'")):
            with self.subTest(said=said), self.assertRaisesRegex(common.LabError, re.escape(why)):
                guest_initrd.load_order(said)

    def test_newc_archive(self):
        """Each entry's 110-byte header (magic 070701, 13 fields of 8 hex
        digits), its name with a NUL, its data, each padded to 4 bytes,
        then TRAILER!!!: read back by hand here."""
        entries = [("dev", 0o40755, b"", 0), ("dev/console", 0o20600, b"", os.makedev(5, 1)),
                   ("init", 0o100755, b"#!x\n", 0), ("modules/00-a.ko", 0o100644, b"12345", 0)]
        raw, got, at = guest_initrd.newc(entries), [], 0
        while True:
            self.assertEqual(raw[at:at + 6], b"070701")
            f = [int(raw[at + 6 + 8 * i:at + 14 + 8 * i], 16) for i in range(13)]
            name = raw[at + 110:at + 110 + f[11] - 1].decode()
            self.assertEqual(raw[at + 110 + f[11] - 1], 0)  # the name's NUL
            at = (at + 110 + f[11] + 3) // 4 * 4
            data = raw[at:at + f[6]]
            at = (at + f[6] + 3) // 4 * 4
            if name == "TRAILER!!!":
                break
            got.append((name, f[1], data, os.makedev(f[9], f[10])))
        self.assertEqual(got, entries)
        self.assertEqual(at, len(raw))

    def test_a_second_boot_on_debians(self):
        """A guest whose kit's initramfs stopped it (its KIT-INITRD line) is
        booted once more on Debian's own, said in the line; one stopped
        otherwise is booted again as it was."""
        class Fake:
            def __init__(self, suite, console):
                self.suite, self.console, self.name, self.booted = suite, console, "sid", []
                self.reached, self.exited_early = False, True

            def start(self, accel, limit):
                self.booted.append(self.suite.initrd)

            def text(self):
                return self.console
        for console, second in (("KIT-INITRD: cannot mount /dev/vda: No such device\n",
                                 "debian.img"),
                                ("Kernel panic - not syncing: in sched_clock_cpu\n", "kit.cpio")):
            with self.subTest(console=console):
                s = types.SimpleNamespace(initrd="kit.cpio", debian_initrd="debian.img",
                                          name="sid", images=lambda g: None,
                                          release=lambda: None)
                g = Fake(s, console)
                s.tcg = [g]
                args = types.SimpleNamespace(accel="tcg", icount=True)
                watch, said = guest_qemu.watch, []
                guest_qemu.watch, real_say = (lambda gs: None), guest_qemu.say
                guest_qemu.say = said.append
                try:
                    guest_qemu.boot_guests(s, 60, args, {})
                finally:
                    guest_qemu.watch, guest_qemu.say = watch, real_say
                self.assertEqual(g.booted, ["kit.cpio", second])
                self.assertEqual(s.initrd, second)
                self.assertEqual("booting Debian's own initramfs" in said[-1],
                                 second == "debian.img", said)

    def test_its_failure_is_the_reason(self):
        console = ("\x1b[2J[    2.10] Run /init as init process\n"
                   "[    2.30] KIT-INITRD: cannot mount /dev/vda: No such device\n"
                   "[    2.31] Kernel panic - not syncing: Attempted to kill init!\n")
        self.assertEqual(guest_qemu.stopped_why(console),
                         "KIT-INITRD: cannot mount /dev/vda: No such device")
        self.assertEqual(guest_qemu.stopped_why(console.replace("KIT-INITRD:", "other:")),
                         "Kernel panic - not syncing: Attempted to kill init!")


    def test_the_base_images_init_stops_the_lab(self):
        """The base image's first init, where the kit's drive did not mount
        (or holds no init): its line is the reason, the lab stops on it
        (no second boot, no verdict on KVM), and its text names the drive
        and argument qemu gives it (common's one home)."""
        from lab import init as guest_init
        text = guest_init.boot_script()
        for fact in (common.KIT_DRIVE, f" {common.INIT_ARG}=", common.BOOT_SAYS):
            self.assertIn(fact, text)
        self.assertNotIn("@", text.replace("@kit", ""))  # every name filled
        console = ("[    2.31] KIT-BOOT: the kit's drive (/dev/vdb) did not mount at /kit, or "
                   "holds no init '/kit/kit-init.sh'\n[    2.40] reboot: Power down\n")
        g = types.SimpleNamespace(name="sid/1", reached=False, text=lambda: console)
        with self.assertRaisesRegex(common.LabError, r"^sid/1: KIT-BOOT: the kit's drive"):
            guest_qemu.booted([g])
        guest_qemu.booted([types.SimpleNamespace(name="sid/1", reached=True, text=lambda: console)])


class KvmVerdict(unittest.TestCase):
    def test_remembered_for_this_host_only(self):
        """KVM's failure is kept (build/lab/kvm.json) for the host it was
        found on, so the next lab does not spend BOOT_S finding it again;
        on another kernel, CPU or qemu it is tried anew."""
        old = guest_qemu.KVM_VERDICT
        with tempfile.TemporaryDirectory() as d:
            guest_qemu.KVM_VERDICT = os.path.join(d, "kvm.json")
            try:
                self.assertIsNone(guest_qemu.kvm_known())  # never tried
                host.write_json(guest_qemu.KVM_VERDICT,
                                {"host": guest_qemu.kvm_host(), "why": "no BIOS"})
                self.assertRegex(guest_qemu.kvm_known(), r"^no BIOS; found by a lab before on this "
                                 r"host \(.*kvm\.json, removed by make clean; ACCEL=kvm tries")
                host.write_json(guest_qemu.KVM_VERDICT, {"host": ["another", "host", "qemu"],
                                                         "why": "no BIOS"})
                self.assertIsNone(guest_qemu.kvm_known())
            finally:
                guest_qemu.KVM_VERDICT = old


if __name__ == "__main__":
    unittest.main()
