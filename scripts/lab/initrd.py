"""lab/initrd.py: make lab's own initramfs, one per suite and kernel:
/init (src/lab/initrd.c, built static here), /dev/console and the
modules the guest's root needs (virtio_pci, virtio_blk and ext4, with
what modprobe loads before them, in its order, decompressed).

Why: Debian's initramfs (dracut with systemd, some 40 MB) took about 30
of a guest's 45 s to userspace under TCG, on every boot (tests/test_lab*.py
boot some twenty).  The guest's init then runs as it did after dracut's
switch_root: root mounted read-write, /dev a devtmpfs.  Where this one
cannot be made (no static C library, a module modprobe does not list),
the lab says why in one line and boots Debian's own.  Seen booting:
sid's 7.2 and trixie-backports' 7.3 (virtio_pci built in, modules .ko.xz)
and bookworm's 6.1 (virtio_pci and virtio modules, .ko plain).

Cached in build/lab/SUITE/ beside the root file system, made anew when
that or src/lab/initrd.c is newer.  Nothing to run: lab/steps.py calls
lean().
"""
import gzip
import lzma
import os
import shlex
import stat
import subprocess
import tempfile

from host import ROOT
from .common import ROOTFS_OK, LabError, sh

SOURCE = os.path.join(ROOT, "src", "lab", "initrd.c")
CFLAGS = ["-static", "-O2", "-Wall", "-Wextra", "-Werror"]
# the guest's root: qemu's if=virtio drive (on its PCI bus: a module on
# bookworm's 6.1, built in since), mkfs.ext4's image
NEEDED = ("virtio_pci", "virtio_blk", "ext4")
SAYS = "KIT-INITRD:"  # how src/lab/initrd.c's failures open, on the console
DECOMPRESS = {".xz": lzma.decompress, ".gz": gzip.decompress, ".ko": lambda b: b}


def name(rel):
    """The file name of kernel REL's initramfs (meta.json's lab.initramfs)."""
    return f"initrd-kit-{rel}.cpio"


def cached(suite_dir, rel):
    """The initramfs made for kernel REL in SUITE_DIR (build/lab/SUITE), if
    it is newer than all it is made from (a root file system being rebuilt
    has no rootfs.ok: none then); else None."""
    out = os.path.join(suite_dir, name(rel))
    sources = [SOURCE, os.path.abspath(__file__), os.path.join(suite_dir, ROOTFS_OK)]
    if os.path.exists(out) and all(os.path.exists(s) and os.path.getmtime(out)
                                   >= os.path.getmtime(s) for s in sources):
        return out
    return None


def lean(suite, rel):
    """The initramfs for SUITE's kernel REL (a path), made where it is
    missing or older than its sources; LabError says why it cannot be."""
    got = cached(suite.dir, rel)
    if got:
        return got
    out = os.path.join(suite.dir, name(rel))
    try:
        make(suite, rel, out)
    except (OSError, ValueError, EOFError, lzma.LZMAError) as e:  # a module unreadable...
        raise LabError(f"{type(e).__name__}: {e}") from e
    finally:
        if os.path.exists(out + ".tmp"):
            os.unlink(out + ".tmp")
    return out


def make(suite, rel, out):
    with tempfile.TemporaryDirectory(prefix="initrd-", dir=suite.dir) as tmp:
        init = os.path.join(tmp, "init")
        sh(["cc", *CFLAGS, "-o", init, SOURCE], suite.log)
        with open(init, "rb") as f:
            entries = [("dev", stat.S_IFDIR | 0o755, b"", 0), ("proc", stat.S_IFDIR | 0o755, b"", 0),
                       ("root", stat.S_IFDIR | 0o755, b"", 0),
                       ("dev/console", stat.S_IFCHR | 0o600, b"", os.makedev(5, 1)),
                       ("init", stat.S_IFREG | 0o755, f.read(), 0),
                       ("modules", stat.S_IFDIR | 0o755, b"", 0)]
        for i, path in enumerate(modules(suite.rootfs, rel, suite.log)):
            mod, ext = os.path.splitext(os.path.basename(path))
            with open(os.path.join(suite.rootfs, path.lstrip("/")), "rb") as f:
                data = DECOMPRESS[ext](f.read())
            entries.append((f"modules/{i:03d}-{mod.removesuffix('.ko')}.ko",
                            stat.S_IFREG | 0o644, data, 0))
        with open(out + ".tmp", "wb") as f:
            f.write(newc(entries))
        os.replace(out + ".tmp", out)


def modules(rootfs, rel, log):
    """The module files (paths in ROOTFS) that NEEDED loads, in the order
    modprobe loads them (its --show-depends, softdeps included, in a
    chroot of ROOTFS); LabError for what this initramfs cannot load."""
    cmd = ["chroot", rootfs, "modprobe", "-a", "--show-depends", "-S", rel, *NEEDED]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with open(log, "a") as f:
        f.write(f"$ {shlex.join(cmd)}\n{r.stdout}{r.stderr}")
    if r.returncode:
        raise LabError(f"modprobe --show-depends {' '.join(NEEDED)} failed: "
                       f"{(r.stderr.strip().splitlines() or ['no output'])[-1]}")
    return load_order(r.stdout)


def load_order(said):
    """The module files modprobe --show-depends SAID it would load, in its
    order, each once; LabError for what this initramfs cannot load."""
    got = []
    for ln in said.splitlines():
        w = ln.split()
        if not w or w[0] == "builtin":  # (built into the kernel: nothing to load)
            continue
        if w[0] != "insmod" or len(w) < 2:
            raise LabError(f"modprobe --show-depends said '{ln.strip()}', not insmod or builtin")
        if len(w) > 2:
            raise LabError(f"modprobe gives {w[1]} options ({' '.join(w[2:])}), which this "
                           "initramfs does not pass")
        if os.path.splitext(w[1])[1] not in DECOMPRESS:
            raise LabError(f"{w[1]}: a module compression this initramfs does not unpack")
        if w[1] not in got:
            got.append(w[1])
    return got  # (empty where all are built in)


def newc(entries):
    """A cpio archive in the kernel's initramfs format (newc, "070701"),
    of ENTRIES (name, mode, data, rdev), then its trailer."""
    out = bytearray()

    def pad():
        out.extend(b"\0" * (-len(out) % 4))
    for ino, (name, mode, data, rdev) in enumerate([*entries, ("TRAILER!!!", 0, b"", 0)], 1):
        raw = name.encode() + b"\0"
        fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, os.major(rdev), os.minor(rdev),
                  len(raw), 0]
        out.extend(b"070701" + b"".join(b"%08X" % x for x in fields) + raw)
        pad()
        out.extend(data)
        pad()
    return bytes(out)
