"""lifecycle/inputs.py: make lifecycle's inputs, each range-checked
(params.Param), and what they need here: the tracers' commands
(installed as make run installs them) and the builds.  make lab
LIFECYCLE=1 hands the same inputs to its guests (lab/inputs.py,
lab/init.py).

Nothing to run: scripts/lifecycle's wing.
"""
import os

import debpkgs
import kitlock
import leftovers
import params
import record
import trusted
from host import ROOT, say
from tracers import ATTACHED, BACKENDS
from .cells import lifecycle_cells
from .sites import LIB_BUILD, PROC_SITES, Targets, site_builds

MAX_PROCS = 200


def counts_of(name, allowed=None, lo=1, hi=None):
    """A comma list of whole numbers, each in ALLOWED (or LO..HI)."""
    want = (", ".join(map(str, sorted(allowed))) if allowed else f"{lo}..{hi}")

    def parse(text):
        try:
            got = [int(x) for x in text.split(",")]
        except ValueError:
            got = None
        if not got or any((x not in allowed) if allowed else not lo <= x <= hi for x in got):
            raise params.argparse.ArgumentTypeError(
                f"{name} '{text}' is not allowed: want comma-separated counts among {want}"
                + (" (the sites-N builds of src/builds.tsv)" if allowed else ""))
        return sorted(set(got))
    return parse


def names_of(name, allowed):
    def parse(text):
        got = [x for x in text.split(",") if x]
        if not got or any(x not in allowed for x in got):
            raise params.argparse.ArgumentTypeError(
                f"{name} '{text}' is not allowed: want comma-separated names among "
                + ", ".join(allowed))
        return list(dict.fromkeys(got))
    return parse


TRACERS = tuple(ATTACHED)  # the back-ends' Attached classes (tracers/attached.py)
BYSTANDER_ONLY = {n for n, a in ATTACHED.items() if not a.SWEEPS}  # (a bystander way only)
Param = params.Param
PARAMS = [
    Param("PROBES", counts_of("PROBES", site_builds()), sorted(site_builds()),
          "probe sites, each count a sites-N build", ",".join(map(str, sorted(site_builds())))),
    Param("PROCS", counts_of("PROCS", lo=1, hi=MAX_PROCS), [1, 10, 100],
          f"held processes mapping the {PROC_SITES}-site build", "1,10,100"),
    Param("TRACERS", names_of("TRACERS", TRACERS), list(TRACERS),
          "the tracers of the lifecycle and bystander runs", ",".join(TRACERS)),
    Param("REPEATS", params.int_in("REPEATS", 1, 100), 6,
          "the most counted cycles of a cell (6 or more: a 95% interval of the median)"),
    Param("CELL_S", params.seconds_in("CELL_S", 0, 3600), 20.0,
          "a cell's counted cycles are as many as fit this, by its pilot (at most REPEATS)"),
    Param("DETACH_LIMIT_S", params.seconds_in("DETACH_LIMIT_S", 1, 3600), 300.0,
          "seconds a tracer may take to detach before it is killed (its row says so)"),
    Param("BY_CALLS", params.int_in("BY_CALLS", 1000, 10 ** 9), 200000,
          "the untraced process's calls in a bystander run"),
    Param("BY_RUNS", params.int_in("BY_RUNS", 2, 100), 5,
          "bystander runs of each way, and of the untraced process with no tracer before it"),
    params.BY_NAME["NO_INSTALL"],
    params.BY_NAME["LOCK_WAIT_S"],
]


def parse_args(argv, description):
    p = params.Parser(prog="lifecycle.py", description=description)
    params.add(p, PARAMS)
    p.add_argument("--results", default=os.path.join(ROOT, "results"), metavar="DIR")
    p.add_argument("--no-report", action="store_true", help="do not run scripts/report.py")
    p.add_argument("--no-bystanders", action="store_true", help="the lifecycle runs only")
    p.add_argument("--lab-modules", metavar="DIR", help="make lab's guests: the folder of the "
                   "modules the lab built beforehand, the stap way's among them")
    # make lab's guests alone: their clock (instructions under -icount), which
    # the report names; not a variable, so a host's run is never called so
    p.add_argument("--unit", choices=record.UNITS, default=record.NS, help=params.argparse.SUPPRESS)
    p.add_argument("--vars", action="store_true",
                   help="print the variables, one NAME=default a line, and exit (for make)")
    a = p.parse_args(argv)
    params.fill(a, PARAMS)
    return a


# -- main ------------------------------------------------------------------------
def available(name):
    """Why tracer NAME cannot run here, or None (its back-end's missing(),
    then its Attached's own answer where it has one: libbpf's loader)."""
    return next((f"no {cmd} (Debian package {pkg})"
                 for cmd, pkg in BACKENDS[name].missing().items()), None) or \
        getattr(ATTACHED[name], "unavailable", lambda: None)()


def prepare(args):
    """The lock, a killed kit's leftovers swept, the tracers installed and
    the builds made; False (said) where a build the run needs is missing."""
    kitlock.lock("lifecycle", args.lock_wait_s)
    leftovers.sweep("lifecycle")  # a killed kit's, before anything is attached
    debpkgs.install("lifecycle", sorted({p for t in args.tracers
                                      for p in BACKENDS[t].missing().values()}),
                 args.no_install)
    if not trusted.make_all("lifecycle"):
        return False
    sweeps = any(t not in BYSTANDER_ONLY for t in args.tracers)
    needed = sorted({b for _, b, *_ in (lifecycle_cells(args) if sweeps else ())} | {LIB_BUILD})
    unbuilt = [b for b in needed if not os.path.exists(Targets(b).binary)]
    Targets.ALL.clear()
    if unbuilt:
        say(f"lifecycle: not built: {', '.join(unbuilt)} (they need <sys/sdt.h> and "
            "dtrace: Debian package systemtap-sdt-dev); nothing was attached")
        return False
    return True
