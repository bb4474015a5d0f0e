"""tracers: one back-end per tracer, all with the same verbs.

    params()         its own inputs (params.Param), e.g. STAP_RUNTIME
    choose(args)     settle how it runs (a runtime), before anything is
                     attached; TracerError if told to run a way it cannot
    describe()       a line for the report's environment, or None
    available()      None if it can run here, else a one-line reason
    skip_reason(cfg, workload=None)  why one configuration cannot run here (WORKLOAD: its
                     real program's, as the run holds it), or None
    setup(log)       once before the matrix: mounts, daemons (only if missing)
    attach(run)      before the target starts: define probes, start sessions
    wrap(run, cmd)   the command line that starts the target (a tracer such
                     as `bpftrace -c` starts the target itself)
    watch(run, pid)  while the target runs, until True: learn the tracer's pid
    events(run)      after the target ended: an Events (record.py): seen,
                     dropped, note; a flight recorder's wrap; a daemon's CPU
    detach(run)      remove what attach made; safe to call twice
    teardown()       undo what setup did, and only that

Class attributes: name, needs ({program: Debian package}), versions
(programs whose --version meta.json records), attaches (False only for
the baselines' `none`), uprobes (its probes are uprobes, so rows say which
path they took), State (its run.state dataclass).

Every back-end names what it creates after run.tag (unique to the run),
so detach removes exactly what it made and nobody else's probes.

make lifecycle's verbs (attach by a binary's path to every process that
maps it, detach, count: attached.py says them) are a class `Attached` in
the back-ends that have them, ATTACHED below (SystemTap's in
stap_attached.py, beside its run verbs).
"""
from .base import Events, RunState, Tracer, TracerError  # noqa: F401
from . import none, ftrace, perf, bpftrace, libbpf, lttng, uftrace, stap, stap_attached

BACKENDS = {m.BACKEND.name: m.BACKEND
            for m in (none, ftrace, perf, bpftrace, libbpf, lttng, uftrace, stap)}
# make lifecycle's tracers, in its order (its default TRACERS)
ATTACHED = {m.Attached.name: m.Attached for m in (ftrace, bpftrace, perf, stap_attached, libbpf)}


def get(name):
    return BACKENDS[name]


def marker_orders():
    """{tracer: (order, why)} for the back-ends whose marker probe on a
    "before" row meets the target in another order (kernel.check)."""
    return {n: (b.marker_order, b.marker_order_why) for n, b in BACKENDS.items()
            if b.marker_order != "before"}


def own_params():
    """The back-ends' own variables (params.Param rows), beside params.PARAMS
    in make run's arguments (params.parse_args's EXTRA)."""
    return [p for t in BACKENDS.values() for p in t.params()]


__all__ = ["ATTACHED", "BACKENDS", "get", "marker_orders", "own_params", "Events", "RunState", "Tracer", "TracerError"]
