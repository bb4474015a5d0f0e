"""record/verdicts.py: the verdict, what a run's tracer saw (Events,
each back-end's report) set against what its target made, turned into
the row's status and reason (record/runs.py's STATUSES say what each
means): the runner judges each run here (measure/kit.py), and the
witnesses judge again a count the program keeps none of
(measure/witness.py).  Its words (OTHERS, NEVER_HEAD, SAME_RUN) are the
ones the report and the witnesses read back.

Apart from runs.py, the row's columns and its folder, because it reads
neither: counts in, a status out, every case written out beside
tests/test_record.py.  Its names are `record`'s own, as runs.py's are.

Nothing to run.
"""
from dataclasses import dataclass


@dataclass
class Events:
    """What a tracer back-end reports after a run (tracers/__init__.py)."""
    seen: int = None  # events the tracer counted (None: it cannot count)
    dropped: int = 0  # events it said it lost
    note: str = ""
    wrapped: bool = None  # a flight recorder's buffer wrapped (True), did not (False)
    tracer_cpu_ns: tuple = None  # (user, system) of a daemon the back-end measured itself
    runtime: str = ""  # the tracer's runtime, where it has several (SystemTap)
    # A second count of the same events by the same tracer, (what, n), that
    # must equal seen + dropped + others (ftrace: uprobe_profile's hits beside the
    # events its ring buffer recorded); None where there is none to trust.
    also: tuple = None
    # A probe by path's hits in other processes than the workload's (its
    # cgroup's, cgroups.py), counted apart from SEEN; None where not counted.
    others: int = None
    apart: bool = False  # SEEN is the workload's events alone (by path: its cgroup's)


def expected_events(attached, expect, calls):
    """Events the tracer must see of the CALLS the target made: None where
    nothing is ATTACHED or the configuration cannot count (expect
    'unverifiable')."""
    if not attached:
        return None
    return {"all": calls, "none": 0}.get(expect)


def verdict(attached, expected, ev, overwrite=False, corrupted=0, calls=None, real=False):
    """(status, reason) of a completed run from what its tracer saw, and
    from the target's red-zone canary (CORRUPTED of CALLS calls); a REAL
    program's (kin.real) marker that its tracer and its witness both
    saw fire 0 times is `never-fires` (never_fired), not `ok` or `agreed`."""
    status, reason = count_verdict(attached, expected, ev, overwrite, corrupted, calls)
    whose = (f"{SAME_RUN} ({ev.also[0]})" if expected is None and ev.also
             else "the program's own count")
    return never_fired(status, reason, ev.seen, ev.dropped, whose, real)


OTHERS = "hits from other processes"  # a probe by path's, not the workload's (Events.others)
NEVER_HEAD = "0 events: the marker never fired (nor did "  # + whose count, " count any)"


def never_fired(status, reason, seen, dropped, whose, real=True):
    """STATUS and REASON, or `never-fires` where a REAL program's count was
    checked (ok, agreed) and was 0, by the tracer and by WHOSE count (the
    witness's words): zero is a finding, not agreement."""
    if real and status in ("ok", "agreed") and seen == 0 and not dropped:
        return "never-fires", f"{NEVER_HEAD}{whose} count any)"
    return status, reason


def count_verdict(attached, expected, ev, overwrite=False, corrupted=0, calls=None):
    if corrupted:
        return "corrupted", (f"{corrupted} of {calls} calls had their red-zone sentinel "
                             "overwritten while probed")
    if not attached:
        return "ok", ""
    also = ev.also
    if also is not None and ev.others and ev.seen is not None:
        # The hit counter counts every process's traps: with other
        # processes' among them it cannot witness the workload's count
        # (their split is the tracer's own); it can only bound it.
        if ev.seen + ev.dropped + ev.others > also[1]:
            return "mismatch", (f"the tracer counted {ev.seen} of the workload's events"
                                + (f", {ev.dropped} lost" if ev.dropped else "")
                                + f" and {ev.others} {OTHERS}: more than the {also[1]} "
                                f"{also[0]}")
        if expected is None:
            return "unverified", (f"{also[1]} {also[0]} hold {ev.others} {OTHERS} too, so the "
                                  "kernel's counter cannot witness the workload's "
                                  f"{ev.seen} events")
        also = None
    if also is not None and ev.seen is not None and also[1] != ev.seen + ev.dropped:
        return "mismatch", (f"the tracer's counts disagree: {ev.seen} events recorded"
                            + (f" and {ev.dropped} lost" if ev.dropped else "")
                            + f", {also[1]} {also[0]}"
                            + (f"; expected {expected}" if expected is not None else ""))
    if expected is None and also is not None and ev.seen is not None:
        # no count of the program's: the kernel's own, in the same run, is the witness
        return witnessed(ev.seen, ev.dropped, also[1], f"{SAME_RUN} ({also[0]})")
    if expected is None:  # (its loss said first, where its note does not say it)
        said = f"the tracer said it lost {ev.dropped} events" if ev.dropped else ""
        note = ev.note or "this configuration cannot count its events"
        return "unverified", (f"{said}; {note}" if said and "lost" not in note else note)
    if ev.dropped:
        # Its loss is a count that must add up: what it saw and what it
        # says it lost are every event, or neither number can be trusted.
        if ev.seen is not None and ev.seen + ev.dropped == expected:
            return "dropped", (f"the tracer lost {ev.dropped} events "
                               f"(saw {ev.seen} of {expected})")
        total = None if ev.seen is None else ev.seen + ev.dropped
        return "mismatch", (f"the tracer saw {ev.seen} events and said it lost {ev.dropped}: "
                            + (f"{total} of {expected}" if total is not None else "no count")
                            + (", more than were made" if total and total > expected else
                               ", so some went unaccounted" if total is not None else "")
                            + (" (its flight recorder wrapped too)" if overwrite and ev.wrapped
                               else ""))
    if ev.seen == expected:
        return "ok", ""
    if overwrite and ev.wrapped and ev.seen is not None and 0 < ev.seen < expected:
        return "overwritten", f"flight recorder kept the newest {ev.seen} of {expected} events"
    if overwrite and ev.wrapped is False:
        return "mismatch", (f"the tracer saw {ev.seen} events, expected {expected}, and its "
                            "buffer never wrapped, so none may be missing")
    return "mismatch", f"the tracer saw {ev.seen} events, expected {expected}"


SAME_RUN = "the kernel's hit counter in the same run"  # a same-run witness's words


def kernel_witnessed(row):
    """ROW (as read) was agreed with its kernel's hit counter in its run
    (0 events of both: never-fires, witnessed all the same)."""
    return (row["status"] == "agreed" and row["reason"].startswith(f"agreed with {SAME_RUN}")
            or row["status"] == "never-fires" and row["reason"].startswith(NEVER_HEAD + SAME_RUN))


def witnessed(seen, dropped, count, witness):
    """(status, reason) of a count SEEN (+ DROPPED) where the program keeps
    none and a WITNESS (words: whose count, where) counted COUNT of the
    same events: agreed, dropped (what it saw and lost add up to it) or a
    mismatch."""
    if seen + dropped != count:
        return "mismatch", (f"the tracer saw {seen} events"
                            + (f" and said it lost {dropped}" if dropped else "")
                            + f", where {witness} says {count}")
    if dropped:
        return "dropped", f"the tracer lost {dropped} events (saw {seen} of the {count} " \
                          f"{witness} says)"
    return "agreed", f"agreed with {witness}: {count} events"
