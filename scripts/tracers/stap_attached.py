"""tracers/stap_attached.py: SystemTap's make lifecycle verbs
(attached.py), a bystander way only (stap -x PID, the traced process
picked by a pid test on target()), and the script and module name make
lab's guests build beforehand (lab/modules.py).  Beside stap.py, whose
run verbs fill its room.

Nothing to run.
"""
import os
import re
import subprocess
import time

from host import say
from .attached import Process, TracerGone, session_of
from .base import LIVE_LINE, TracerError
from .stap import Stap
from . import tracefs

STAP_MODULE = "kit_by_lib"  # make lab's guests: the stap way's module, built beforehand


def stap_script(library, marker):
    """The stap way's script: MARKER of LIBRARY, counted where pid() is target()."""
    return (f'global n; probe begin {{ printf("{LIVE_LINE}\\n") }} '
            f'probe process("{library}").mark("{marker}") '
            '{ if (pid() == target()) n++ } probe end { printf("kit-counted %d\\n", n) }')


class Attached(Process):
    """make lifecycle's (attached.py): SystemTap, the traced process picked by a pid test on target()
    (stap -x PID): a bystander way only.  On the host, on the runtime its
    back-end picks (tracers/stap.py: module where modules build and load,
    else bpf), its module named the kit's own, unloaded if a killed stap
    leaves it.  In make lab's guests (--lab-modules), the module the lab
    built beforehand in the chroot, loaded with `staprun -x PID`, or, where
    it could not be built, why not."""
    name = "stap"
    SWEEPS = False  # its target() is a bystander way; it runs no lifecycle sweep

    def __init__(self, kit, binary, sites, pid_filter=None):
        self.kit, self.sites, self.pid_filter = kit, sites, pid_filter
        self.prebuilt = kit.args.lab_modules
        if self.prebuilt:
            ko = os.path.join(self.prebuilt, STAP_MODULE + ".ko")
            if not os.path.exists(ko):
                why = os.path.join(self.prebuilt, STAP_MODULE + ".why")
                raise TracerGone("no module built beforehand for this guest: " + (
                    open(why).read().strip() if os.path.exists(why) else f"no {ko}"))
            self.ko, self.module, self.path = ko, STAP_MODULE, "module runtime (built beforehand)"
            return
        self.be = Stap()
        why = self.be.pick()
        if why:
            raise TracerGone(f"stap cannot run here: {why}")
        self.path = f"{self.be.runtime} runtime"
        self.module = f"kit_by_{os.getpid()}"

    def start(self):
        t0 = time.monotonic()
        if self.prebuilt:
            self.spawn(["staprun", "-x", str(self.pid_filter), self.ko], self.kit.log("stap"))
            return time.monotonic() - t0
        try:
            self.be.setup(self.kit.log("stap-setup"))
        except TracerError as e:
            raise TracerGone(f"stap: {e}") from e
        script = stap_script(self.sites.binary, next(iter(self.sites.offsets)))
        # in the folder's logs/: where the runtime leaves MODULE.bo or .ko (removed at stop)
        self.spawn(["stap", *self.be.base_flags(), "-m", self.module, "-x",
                    str(self.pid_filter), "-e", script], self.kit.log("stap"), self.be.env(),
                   cwd=self.kit.logs)
        return time.monotonic() - t0

    def ready(self):
        if LIVE_LINE not in self.said():
            return False
        # its session's processes (stapbpf names its uprobes after its own
        # pid, and leaves them if it is killed): all the kit's, in the
        # session it was started in
        self.session = [int(d) for d in os.listdir("/proc") if d.isdigit()
                        and session_of(int(d)) == self.proc.pid]
        return True

    def counts(self):
        m = re.search(r"^kit-counted (\d+)$", self.said(), re.M)
        return {n: int(m.group(1)) if m else 0 for n in self.sites.offsets}

    def stop(self, limit):
        try:
            return Process.stop(self, limit)
        finally:  # a killed staprun leaves its module loaded: the kit's own name
            if self.proc:  # what a killed stapbpf leaves in uprobe_events, by its pid
                tracefs.remove_leftovers(self.sites.binary,
                                         [self.proc.pid, *getattr(self, "session", [])],
                                         self.kit.tracefs)
            for ext in (".bo", ".ko"):
                junk = os.path.join(self.kit.logs, self.module + ext)
                if os.path.exists(junk):
                    os.remove(junk)
            for cmd in (["staprun", "-d", self.module], ["rmmod", self.module]):
                if not os.path.isdir(f"/sys/module/{self.module}"):
                    break
                try:
                    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   timeout=60)
                except (OSError, subprocess.TimeoutExpired) as e:
                    say(f"lifecycle: stap: {cmd[0]} of {self.module}: {e}")
