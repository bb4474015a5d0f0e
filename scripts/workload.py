"""workload.py: what every real program run as the kit's target is: the
Workload base, its fields (what a row of workloads.py's table fills in)
and its verbs, each doing what a program with nothing of its own to make
or remove wants.  A room apart from the table so that a program with a
room of its own (pgcluster.py: PostgreSQL's) builds on it without
importing the table that names it: no import circle.

Nothing to run: workloads.py and pgcluster.py subclass it.
"""
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Workload:
    """A program someone else wrote, run as the kit's target, and its verbs:
    unavailable() (why it cannot run here, one line), prepare() (what its
    command needs made first: the extra arguments), cleanup() (what a run
    left, removed whatever happened), and its own count of each marker, in
    its record's "fired" (where it keeps none, a tracer's count is
    unverified)."""
    name: str
    program: str  # the ELF file whose markers are probed
    argv: tuple  # the command before the kit's --threads, --iterations, ...
    provider: str  # the markers' provider
    package: str  # the Debian package of PROGRAM
    description: str
    # The probe is on every process mapping PROGRAM (a server's backends,
    # started after the attach), not on the held target's own threads.
    by_path: bool = False
    warmup_iter: int = None  # a warm-up's calls (transactions) a thread; None: sizing's
    hold_timeout: float = 30.0  # s for its target to reach its gate (a cluster is made first)
    max_iter: int = 10 ** 9  # the most calls a thread makes in a run (QUICK's ITER too)
    floor_iter: int = None  # the fewest a sized run makes (None: sizing.FLOOR_ITER)
    marker: str = ""  # the marker every row of the family probes, where the rows leave it open
    command: tuple = ()  # a user's command (Command)
    counted: str = ""  # how it counts its markers (each traced row's note says)
    needs: tuple = ()  # (command, package) beside PROGRAM
    call: str = "call"  # what one of its ITER calls a thread is
    threads_are: str = ""  # what its THREADS are, where more than 1 share something
    serial: bool = False  # its threads take turns (one runs at a time)
    # make lab runs its rows: its program comes with the guests' root file
    # system (python3 does; PostgreSQL would add ~60 MB a suite)
    in_lab: bool = False
    # its own figures a run (its record's "workload": the column of that
    # name) that the report sets out with intervals: (key, header with unit,
    # a rate: averaged as its inverse, stats.own_figures)
    figures: tuple = ()

    def bystanders(self):
        """Processes not the kit's that its by-path probes would count."""
        return []

    def why_silent(self):
        """What the kit can find of why its marker never fired ('': nothing
        to look at beyond the count)."""
        return ""

    def timing_key(self):
        """What its rows' timings are kept under beside their names ('':
        the name says it all)."""
        return ""

    def raises_at_exec(self):
        """Whether the runner can raise its markers' semaphores in each of
        its processes as it maps PROGRAM (exec_env), where none exists
        before the attach."""
        return False

    def semaphore_holders(self, target_pid):
        """The processes whose markers' semaphores the runner raises
        (through /proc/PID/mem) before the calls, where a row names them
        and its tracer does not raise them: the held target itself."""
        return [target_pid]

    def elsewhere(self, marker):
        """Where it is unavailable: what else here has MARKER ('; ...'), or ''."""
        return ""

    def unavailable(self):
        """Why it cannot run here at all (before any marker), or None."""
        if not os.path.exists(self.program):
            return f"{self.program} not found (Debian package {self.package})"
        for c, pkg in self.needs:
            if not os.path.exists(c):
                return f"{c} not found (Debian package {pkg})"
        return None

    def missing(self):
        """The Debian packages of what it needs that this machine lacks."""
        return sorted({pkg for path, pkg in ((self.program, self.package), *self.needs)
                       if pkg and not os.path.exists(path)})  # (a user's program: no package)

    def prepare(self, scratch):
        """The extra arguments of one run's command, with what they name
        made under SCRATCH (a folder of the run's own)."""
        return []

    def cleanup(self, scratch, log):
        """Removes what a run left (its processes, memory, folders), on
        every path, killed runs too; LOG gets a line per thing removed."""

    def teardown(self, kit_scratch):
        """Removes what the kit's runs shared (made by prepare), at its end."""
