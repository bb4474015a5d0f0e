"""uftrace.py: `uftrace record` of the -pg build (every function's entry
and exit, through mcount); single_trace's calls are counted from
`uftrace report`.

uftrace's buffers are POSIX shared memory, /dev/shm/uftrace-SID-TID-N, SID
the session libmcount made in the target (the data folder names it:
sid-SID.map, task.txt's SESS line).  uftrace unlinks them when it ends
well; killed (a hang past the time limit, Ctrl-C, the suite's fault
tests) it cannot, and they stayed: 344 such files of the kit's were found
here on 2026-12-02, 128 KiB each.  detach removes its session's.
"""
import glob
import os
import re
import shutil
from dataclasses import dataclass

from .base import LONG_TIMEOUT_S, Events, RunState, Tracer, TracerError
from host import SHM


@dataclass
class State(RunState):
    """What one run of this back-end keeps between its verbs."""
    dir: str = None  # uftrace's data folder


class Uftrace(Tracer):
    name = "uftrace"
    uprobes = False
    State = State
    needs = {"uftrace": "uftrace"}
    versions = ("uftrace",)

    def skip_reason(self, cfg, workload=None):
        if cfg.workload:
            return ("uftrace records a program's functions (a -pg build's mcount calls, or "
                    "functions it patches); it has no way to attach to an SDT marker")
        return None

    def wrap(self, run, cmd):
        d = run.state.dir = run.scratch + "/uftrace.data"
        return ["uftrace", "record", "--no-pager", "-d", d, *cmd]

    def events(self, run):
        d = run.state.dir
        out = self.sh(["uftrace", "report", "--no-pager", "-d", d], log=run.log,
                      timeout=LONG_TIMEOUT_S, whole=False)
        # Columns: total time, self time (each "N unit"), calls, function.
        m = re.search(r"\s(\d+)\s+single_trace\s*$", out, re.M)
        if not m:
            raise TracerError("uftrace report has no single_trace row")
        return Events(int(m.group(1)), 0, "uftrace reports no drop counter")

    def detach(self, run):
        d = run.state.take("dir")
        if d:
            for sid in self.sessions(d):
                for f in glob.glob(os.path.join(SHM, f"uftrace-{sid}-*")):
                    try:
                        os.unlink(f)
                    except FileNotFoundError:
                        pass
            shutil.rmtree(d, ignore_errors=True)

    @staticmethod
    def sessions(d):
        """The session ids uftrace's data folder D names (its buffers')."""
        sids = {m.group(1) for f in glob.glob(os.path.join(d, "sid-*.map"))
                if (m := re.fullmatch(r"sid-([0-9a-f]+)\.map", os.path.basename(f)))}
        try:
            with open(os.path.join(d, "task.txt")) as f:
                sids |= set(re.findall(r"^SESS .* sid=([0-9a-f]+) ", f.read(), re.M))
        except OSError:
            pass
        return sids


BACKEND = Uftrace()
