"""lab/plugin.py: the atlas's QEMU TCG plugin (src/plugin/where.c),
which counts a guest's kernel instructions by address inside the
target's timed loop (make lab WHERE=1).  Debian's qemu-system-x86 has the
plugin interface built in but ships no plugin and no header, so the
header comes from Debian's qemu *source* package of the very version
installed (the plugin API must match the binary's): apt in a folder of
its own (its lists and cache there, deb-src lines for the suites of the
host's own apt sources; the host's apt state untouched:
debpkgs.source_download),
`apt-get source --download-only qemu=VERSION`, and qemu-plugin.h taken
out of the upstream tarball.  Cached in build/lab/plugin/VERSION/, the
plugin beside it named by the hash of what it is built from.  Needs
root, gcc, dpkg-query and the host's Debian mirror; and pkg-config and
libglib2.0-dev where the header includes glib.h (10.0's does, 7.2's not:
GLIB_PACKAGES, installed then as the lab installs its own tools; a
trixie host has neither by default).

Nothing to run: lab/steps.py calls plugin() for WHERE=1.
"""
import glob
import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile

import debpkgs
from host import ROOT, say
from .common import LAB_DIR, LabError, sh

PLUGIN_DIR = os.path.join(LAB_DIR, "plugin")
SOURCE = os.path.join(ROOT, "src", "plugin", "where.c")
MARKS = os.path.join(ROOT, "src", "plugin", "window.h")  # the target's marks, shared
HEADER = "qemu-plugin.h"  # include/qemu/qemu-plugin.h in the tarball
CFLAGS = ["-O2", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared"]
GLIB_PACKAGES = ("pkg-config", "libglib2.0-dev")  # glib.h and its flags (QEMU 9.0 on)


def qemu_source_version():
    """The source package version of the installed qemu-system-x86 (the
    binary's own may carry a +bN rebuild suffix the source has not)."""
    r = subprocess.run(["dpkg-query", "-W", "-f", "${source:Version}", "qemu-system-x86"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode or not r.stdout.strip():
        raise LabError("the plugin needs Debian's qemu-system-x86 (dpkg-query does not know it)")
    return r.stdout.strip()


def header(version, log):
    """qemu-plugin.h of Debian's qemu source package VERSION, cached."""
    d = os.path.join(PLUGIN_DIR, version.replace(":", "_"))
    got = os.path.join(d, HEADER)
    if os.path.exists(got):
        return got
    os.makedirs(d, exist_ok=True)
    say(f"lab: the plugin: qemu-plugin.h from Debian's qemu {version} source package (once)")
    with tempfile.TemporaryDirectory(dir=d) as tmp:
        try:
            debpkgs.source_download("qemu", version, tmp, log)
        except debpkgs.SourceError as e:
            raise LabError(f"the plugin's header: {e}") from e
        tars = [t for t in glob.glob(os.path.join(tmp, "qemu_*.orig.tar.*"))
                if not t.endswith(".asc")]
        if len(tars) != 1:
            raise LabError(f"the plugin's header: apt-get source qemu={version} brought "
                           f"{len(tars)} upstream tarballs, not 1")
        try:
            with tarfile.open(tars[0]) as t:
                member = next((x for x in t if x.name.endswith("/include/qemu/" + HEADER)),
                              None)
                if member is None:
                    raise LabError(f"the plugin's header: {os.path.basename(tars[0])} has no "
                                   f"include/qemu/{HEADER} (a qemu without the plugin API)")
                with t.extractfile(member) as f_in, open(got + ".tmp", "wb") as f_out:
                    shutil.copyfileobj(f_in, f_out)
        except (tarfile.TarError, OSError) as e:
            raise LabError(f"the plugin's header: cannot read {os.path.basename(tars[0])}: "
                           f"{e}") from e
    os.replace(got + ".tmp", got)
    return got


def glib_cflags(h, no_install):
    """gcc's flags for glib.h where the header H includes it, else none;
    GLIB_PACKAGES installed first where glib-2.0 is not known (unless
    NO_INSTALL)."""
    with open(h) as f:
        if "#include <glib.h>" not in f.read():
            return []
    if not shutil.which("pkg-config") or subprocess.run(
            ["pkg-config", "--exists", "glib-2.0"]).returncode:
        debpkgs.install("lab", list(GLIB_PACKAGES), no_install,
                        {p: "WHERE=1's plugin (its qemu-plugin.h includes glib.h)"
                         for p in GLIB_PACKAGES})
    try:
        r = subprocess.run(["pkg-config", "--cflags", "glib-2.0"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    except OSError as e:
        raise LabError(f"the plugin: its qemu-plugin.h includes glib.h: pkg-config: {e}") from e
    if r.returncode:
        raise LabError("the plugin: its qemu-plugin.h includes glib.h: wants libglib2.0-dev "
                       f"({r.stderr.strip()})")
    return r.stdout.split()


def plugin(log, no_install=False):
    """(the plugin's shared object, the qemu source version it was built
    for), named by its source's hash (a changed source is a new build,
    never a stale one); LabError saying why it cannot be built (what it
    needs installed first, unless NO_INSTALL)."""
    version = qemu_source_version()
    h = header(version, log)
    digest = hashlib.sha256(" ".join(CFLAGS).encode())
    for path in (SOURCE, MARKS, h):
        with open(path, "rb") as f:
            digest.update(f.read())
    so = os.path.join(os.path.dirname(h), f"where-{digest.hexdigest()[:12]}.so")
    if os.path.exists(so):
        return so, version
    sh(["gcc", *CFLAGS, *glib_cflags(h, no_install), "-I", os.path.dirname(h), "-o", so + ".tmp", SOURCE],
       log)
    os.replace(so + ".tmp", so)
    return so, version
