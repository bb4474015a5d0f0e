"""tracers: one back-end per tracer, all with the same verbs.

    available()      None if it can run here, else a one-line reason
    setup(kit)       once before the matrix: mounts, daemons (only if missing)
    attach(run)      before the target starts: define probes, start sessions
    wrap(run, cmd)   the command line that starts the target (a tracer such
                     as `bpftrace -c` starts the target itself)
    events(run)      after the target ended: an Events (record.py): seen,
                     dropped, note; a flight recorder's wrap; a daemon's CPU
    detach(run)      remove what attach made; safe to call twice
    teardown()       undo what setup did, and only that

Every back-end names what it creates after run.tag (unique to the run),
so detach removes exactly what it made and nobody else's probes.
"""
from .base import Events, Tracer, TracerError  # noqa: F401
from . import none, ftrace, perf, bpftrace, lttng, uftrace, stap

BACKENDS = {m.BACKEND.name: m.BACKEND for m in (none, ftrace, perf, bpftrace, lttng, uftrace, stap)}


def get(name):
    return BACKENDS[name]


__all__ = ["BACKENDS", "get", "Events", "Tracer", "TracerError"]
