"""record.py: the one home of a run's row, shared by the runner (run.py,
which writes results/<stamp>/runs.csv) and the report (report.py, which
reads it): the columns, the statuses and what each means, and the verdict
that turns what a tracer saw into a status.

Nothing to run; `python3 scripts/record.py` prints the statuses.
"""
from dataclasses import dataclass

# meta.json's "format_version": 2 added the columns sized_by and pinned
# and the status `dropped`; a folder without them (version 1) still reads.
FORMAT_VERSION = 2

COLUMNS = [
    "started", "config", "build", "tracer", "probe", "action", "threads", "iterations", "rep",
    "status", "reason", "events_expected", "events_seen", "events_dropped", "wall_ns",
    "thread_wall_ns", "thread_user_ns", "thread_sys_ns", "thread_cpu_ns", "process_user_ns",
    "process_sys_ns", "tracer_user_ns", "tracer_sys_ns", "runtime", "sized_by", "pinned", "note",
]
# What a row must have for the report to read it at all.
REQUIRED = ["config", "threads", "iterations", "rep", "status", "thread_wall_ns"]

# Every status a row can have, and what it means; the order is the report's.
STATUSES = {
    "ok": "the tracer saw exactly the events expected",
    "dropped": "the tracer said it lost events (its own drop counter): it did not keep up",
    "overwritten": "a flight recorder whose buffer wrapped kept only the newest events, "
                   "with no gap among those it kept",
    "unverified": "the configuration cannot count its events (e.g. -DSTP_ALIBI)",
    "mismatch": "the tracer saw a different number of events than expected, and said "
                "nothing of a loss",
    "failed": "the run did not complete (the reason says why); its times are not used",
    "skipped": "the configuration cannot run here (the reason says why)",
}
# Statuses whose times are measurements (the target ran to its end).
MEASURED = ("ok", "dropped", "overwritten", "unverified", "mismatch")


@dataclass
class Events:
    """What a tracer back-end reports after a run (tracers/__init__.py)."""
    seen: int = None  # events the tracer counted (None: it cannot count)
    dropped: int = 0  # events it said it lost
    note: str = ""
    wrapped: bool = None  # a flight recorder's buffer wrapped (True), did not (False)
    tracer_cpu_ns: tuple = None  # (user, system) of a daemon the back-end measured itself
    runtime: str = ""  # the tracer's runtime, where it has several (SystemTap)


def expected_events(tracer, expect, threads, iterations):
    """Events the tracer must see: None where nothing is attached or the
    configuration cannot count (expect 'unverifiable')."""
    if tracer == "none":
        return None
    return {"all": threads * iterations, "none": 0}.get(expect)


def verdict(tracer, expected, ev, overwrite=False):
    """(status, reason) of a completed run from what its tracer saw."""
    if tracer == "none":
        return "ok", ""
    if expected is None:
        return "unverified", ev.note or "this configuration cannot count its events"
    if ev.dropped:
        return "dropped", (f"the tracer lost {ev.dropped} events "
                           f"(saw {ev.seen} of {expected})")
    if ev.seen == expected:
        return "ok", ""
    if overwrite and ev.wrapped and ev.seen is not None and 0 < ev.seen < expected:
        return "overwritten", f"flight recorder kept the newest {ev.seen} of {expected} events"
    if overwrite and ev.wrapped is False:
        return "mismatch", (f"the tracer saw {ev.seen} events, expected {expected}, and its "
                            "buffer never wrapped, so none may be missing")
    return "mismatch", f"the tracer saw {ev.seen} events, expected {expected}"


def split_ns(text):
    """A per-thread column ('12;34') as ints."""
    return [int(x) for x in text.split(";") if x != ""] if text else []


def join_ns(values):
    return ";".join(str(v) for v in values)


if __name__ == "__main__":
    for s, what in STATUSES.items():
        print(f"{s:<12} {what}")
