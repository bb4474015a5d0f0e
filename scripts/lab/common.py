"""lab/common.py: what every room of the lab's wing shares: where the
lab keeps its cache (LAB_DIR), the kit's place in a guest (GUEST_KIT)
and the init that mounts it there (BOOT_INIT), a suite's timings file,
the thread counts a guest runs, the lab's one error (LabError: the one
line the user sees) and its command runner (sh).

Nothing to run: the other rooms import it.
"""
import os

from host import ROOT
from tracers import stap_build

LAB_DIR = os.path.join(ROOT, "build", "lab")
# A suite's guest timings, one file a unit (the runner's --timings; kept
# in LAB_DIR/SUITE between labs, carried into and out of each guest).
TIMINGS = "timings-{}.json"
PREFLIGHT = "preflight.json"  # LAB_DIR/SUITE's: the pre-flight's answers for its root file system
ROOTFS_OK = "rootfs.ok"  # LAB_DIR/SUITE's: the package list its root file system was made with
GUEST_KIT = "/kit"
# a suite's base image's first init (lab/init-boot.sh): the kit's own drive
# (KIT_DRIVE: qemu's second -drive, lab/qemu.py) mounted at GUEST_KIT, then
# the init the kernel's command line names (INIT_ARG=); where it cannot,
# its one line (opening BOOT_SAYS) and the guest powers off
BOOT_INIT, KIT_DRIVE, INIT_ARG, BOOT_SAYS = "/kit-boot.sh", "/dev/vdb", "kit_init", "KIT-BOOT:"
# A lab's folder, results/<stamp>LAB_TOP/; WHERE=1's apart (a kernel's lab
# and its WHERE=1 lab may start in the same second: make atlas)
LAB_TOP, WHERE_TOP = "-lab", "-where-lab"
LAB_THREADS = (1, 2)  # the thread counts a guest runs
WHERE_THREADS = (1,)  # WHERE=1's: one window at a time (src/plugin/where.c)


class LabError(Exception):
    """A step failed; the message is the one line the user sees."""


def sh(cmd, log, timeout=600, **kw):
    """Runs CMD (a list) in a process group of its own, its output appended
    to LOG; LabError with the line of its output that says what failed
    (stap_preflight.first_error) if it does.  Stopped early (its time limit, Ctrl-C,
    SIGTERM), the whole group gets SIGTERM, then SIGKILL after STOP_GRACE_S:
    mmdebstrap's children hold mounts that only its own clean-up removes."""
    why = stap_build.failure(cmd, log, timeout, **kw)
    if why:
        raise LabError(why)
