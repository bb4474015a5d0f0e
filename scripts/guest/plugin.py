"""guest/plugin.py: the atlas's QEMU TCG plugin (src/plugin/where.c),
which counts a guest's kernel instructions by address inside the
target's timed loop (make lab WHERE=1).  Debian's qemu-system-x86 has the
plugin interface built in but ships no plugin and no header, so the
header comes from Debian's qemu *source* package of the very version
installed (the plugin API must match the binary's): a private apt list
with a deb-src line for the host's own suite (its own lists untouched),
`apt-get source --download-only qemu=VERSION`, and qemu-plugin.h taken out
of the upstream tarball.  Cached in build/lab/plugin/VERSION/, the plugin
beside it named by its source's hash.  Needs root (apt's lists), gcc, xz,
dpkg-query and the host's Debian mirror.

Nothing to run: guest/steps.py calls plugin() for WHERE=1.
"""
import glob
import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile

from host import ROOT, say
from .common import LAB_DIR, LabError, sh

PLUGIN_DIR = os.path.join(LAB_DIR, "plugin")
SOURCE = os.path.join(ROOT, "src", "plugin", "where.c")
HEADER = "qemu-plugin.h"  # include/qemu/qemu-plugin.h in the tarball
CFLAGS = ["-O2", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared"]


def qemu_source_version():
    """The source package version of the installed qemu-system-x86 (the
    binary's own may carry a +bN rebuild suffix the source has not)."""
    r = subprocess.run(["dpkg-query", "-W", "-f", "${source:Version}", "qemu-system-x86"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode or not r.stdout.strip():
        raise LabError("the plugin needs Debian's qemu-system-x86 (dpkg-query does not know it)")
    return r.stdout.strip()


def host_suite():
    with open("/etc/os-release") as f:
        m = re.search(r"^VERSION_CODENAME=(\w+)", f.read(), re.M)
    if not m:
        raise LabError("the plugin's header: /etc/os-release names no Debian suite")
    return m.group(1)


def header(version, log):
    """qemu-plugin.h of Debian's qemu source package VERSION, cached."""
    d = os.path.join(PLUGIN_DIR, version.replace(":", "_"))
    got = os.path.join(d, HEADER)
    if os.path.exists(got):
        return got
    from .suite import mirror  # (suite.py imports this wing's rooms)
    m = mirror()
    if not m:
        raise LabError("the plugin's header: no Debian mirror in the host's apt sources")
    os.makedirs(d, exist_ok=True)
    suite = host_suite()
    say(f"lab: the plugin: qemu-plugin.h from Debian's qemu {version} source package (once)")
    with tempfile.TemporaryDirectory(dir=d) as tmp:
        lists = os.path.join(tmp, "lists")
        os.makedirs(os.path.join(lists, "partial"))
        src = os.path.join(tmp, "sources.list")
        with open(src, "w") as f:
            f.write("".join(f"deb-src {m} {s} main\n" for s in (suite, f"{suite}-updates")))
        apt = ["apt-get", "-q", "-o", f"Dir::Etc::SourceList={src}",
               "-o", "Dir::Etc::SourceParts=/nonexistent", "-o", f"Dir::State::Lists={lists}"]
        sh([*apt, "update"], log, timeout=300)
        sh([*apt, "source", "--download-only", f"qemu={version}"], log, timeout=900, cwd=tmp)
        tars = glob.glob(os.path.join(tmp, "qemu_*.orig.tar.*"))
        if not tars:
            raise LabError(f"the plugin's header: apt-get source qemu={version} brought no "
                           "upstream tarball")
        with tarfile.open(tars[0]) as t:
            member = next((x for x in t if x.name.endswith("/include/qemu/" + HEADER)), None)
            if member is None:
                raise LabError(f"the plugin's header: {os.path.basename(tars[0])} has no "
                               f"include/qemu/{HEADER} (a qemu without the plugin API)")
            with t.extractfile(member) as f_in, open(got + ".tmp", "wb") as f_out:
                shutil.copyfileobj(f_in, f_out)
    os.replace(got + ".tmp", got)
    return got


def plugin(log):
    """(the plugin's shared object, the qemu source version it was built
    for), named by its source's hash (a changed source is a new build,
    never a stale one); LabError saying why it cannot be built."""
    version = qemu_source_version()
    h = header(version, log)
    with open(SOURCE, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    so = os.path.join(os.path.dirname(h), f"where-{digest}.so")
    if os.path.exists(so):
        return so, version
    sh(["gcc", *CFLAGS, "-I", os.path.dirname(h), "-o", so + ".tmp", SOURCE], log)
    os.replace(so + ".tmp", so)
    return so, version
