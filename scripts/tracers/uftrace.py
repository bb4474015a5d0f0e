"""uftrace.py: `uftrace record` of the -pg build (every function's entry
and exit, through mcount); single_trace's calls are counted from
`uftrace report`."""
import re
import shutil
from dataclasses import dataclass

from .base import LONG_TIMEOUT_S, Events, RunState, Tracer, TracerError


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
            shutil.rmtree(d, ignore_errors=True)


BACKEND = Uftrace()
