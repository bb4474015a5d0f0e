"""witness.py: counts that check themselves where the program keeps none.

A real program's row (the python-*, postgres-* and user-* families,
workloads.py) is checked against the program's own count of its marker
where it keeps one.  Where it keeps none, three witnesses that need no
help from the program:

1. The kernel's hit counter, in the same run (record.verdict): ftrace's
   and perf's events are uprobe events, and uprobe_profile counts each
   one's traps.  A count equal to it is `agreed`.
2. The other tracers, across runs (this file, once the matrix is done):
   where every run the kernel witnessed (1) saw the same number of events
   a call (a call: one run of a user's command, a transaction, ...), k,
   a row no kernel counter witnesses (bpftrace's, SystemTap's) must have
   seen k x its calls; equal, it is `agreed` with those tracers; else a
   `mismatch` that gives every number.  Where the witnessed runs saw
   different numbers a call, the workload itself varies from run to run
   (PostgreSQL's lwlock__acquire; a JVM's start-up), no other run can
   witness this one, and the row stays `unverified`, saying so.
3. A tracer's witness run (record.WITNESS_RUN): where a real program's
   timed runs had neither, the runner runs one more of a tracer whose
   count the kernel can witness at a cost no timed run may carry (libbpf:
   a uprobe event of the kit's own on the same site counting its traps,
   tracers/libbpf.py), untimed, after the cell's rounds
   (measure/matrix.py); its count, equal to the traps, witnesses the
   family's timed runs as (2)'s do, where at least MIN_PEERS of the row's
   own configuration's timed runs agree among themselves (one run cannot
   say the workload holds).

The rule is exact, never "within some %": a workload that varies gets no
cross-run witness at all (tests/test_witness.py: a varying one, a fixed
one, a tracer that miscounts by one event).

Nothing to run: measure/matrix.py calls judge() on the folder's rows.
"""
from fractions import Fraction

import configs
import record
import workloads



def family(row):
    """(workload, marker, threads) of ROW's configuration, or None (not a
    real program's row, or a name the table no longer has).  By thread
    count: a workload's events a call may depend on it (PostgreSQL's
    lwlock__acquire: ~146 a transaction at 1 client, ~110 at 2)."""
    c = configs.BY_NAME.get(row["config"])
    return (c.workload, c.marker, row["threads"]) if c and c.workload else None


def count(text):
    return record.num(text)


def judge(rows, inputs=None):
    """{index in ROWS: (status, reason, events expected)} for the rows the
    other tracers' counts witness; ROWS are a folder's runs.csv rows (as
    read, strings), none changed here.  Only timed runs and witness runs
    witness (a warm-up is judged, never a witness).  A row found never-fires gets its
    workload's why_silent() words (INPUTS: the run's, which hold a user's
    workload), which may run the user's command once more (silence.py)."""
    out = {}
    by_family = {}
    for i, r in enumerate(rows):
        f = family(r)
        if f:
            by_family.setdefault(f, []).append(i)
    for f, idx in by_family.items():
        kernel = [rows[i] for i in idx if record.kernel_witnessed(rows[i])
                  and count(rows[i]["calls"]) and timed_or_witness(rows[i])]
        call = workloads.get(f[0]).call
        # the runs that told the workload's events apart from other
        # processes' (cgroups.py), and the most hits of others one counted
        apart = [rows[i] for i in idx if count(rows[i].get("events_others")) is not None
                 and count(rows[i]["calls"]) and count(rows[i]["rep"])
                 and rows[i]["status"] in (*record.LOSSLESS, "unverified")]
        most = max((count(w["events_others"]) for w in apart), default=0)
        for i in idx:
            r = rows[i]
            seen, calls = count(r["events_seen"]), count(r["calls"])
            if r["status"] == "unverified" and seen is None and calls and is_script(r):
                out[i] = script(r, calls, apart if most else kernel, call)
                continue
            if r["status"] != "unverified" or seen is None or not calls:
                continue
            theirs = [w for w in apart if w["tracer"] != r["tracer"]]
            if most and count(r.get("events_others")) is None:  # (this run's, not its class's)
                out[i] = mixed(r, seen, calls, theirs, most, call)
                continue
            if most:  # others fired: the kernel's counter witnesses nothing; counts apart may
                if len({w["tracer"] for w in theirs}) < APART_WITNESSES:
                    continue
                out[i] = against(r, seen, calls, theirs, call, apart_words(most))
            else:
                others = [w for w in kernel if w["tracer"] != r["tracer"]
                          or record.is_witness_run(w)]
                if not others:
                    continue
                # a witness run is one run: the row's own config's timed runs say
                # whether the workload's count holds from run to run
                peers = [rows[j] for j in idx if rows[j]["config"] == r["config"]
                         and count(rows[j]["rep"]) and count(rows[j]["calls"])
                         and count(rows[j]["events_seen"]) is not None]
                out[i] = against(r, seen, calls, others, call, peers=peers if any(
                    map(record.is_witness_run, others)) else None)
            silent = out[i][0] == "never-fires" and workloads.get(f[0], inputs).why_silent()
            if silent:
                out[i] = (out[i][0], out[i][1] + "; " + silent,
                          out[i][2])
    return out


# Where other processes fired the marker, a run's count of the workload's
# own events (counted apart: by task, by cgroup) is witnessed by the other
# tracers' counts apart, where those of at least this many other tracers
# agree exactly on one number a call (with the run's own, three ways).
APART_WITNESSES = 2
# Where witness runs are a row's only witnesses, its configuration's timed
# runs that must agree among themselves, at least (one run agrees with
# itself: it cannot say the workload holds).
MIN_PEERS = 2
KERNEL_WORDS = "each equal to the kernel's hit counter"


def apart_words(most):
    """How runs that counted apart witness: the words."""
    return (f"each counting the workload's apart from other processes', which fired the "
            f"marker too (up to {most} {record.OTHERS} in a run)")


def is_script(r):
    """R is a user's script's run (configs.SCRIPT_MODE): no count of its own."""
    return getattr(configs.BY_NAME.get(r["config"]), "mode", "") == configs.SCRIPT_MODE


def script(r, calls, witnesses, call):
    """(status, reason, events expected) of a user's script's run R, in
    CALLS calls, which counts nothing for the kit: the workload's events
    are the WITNESSES' (the runs the kernel's hit counter witnessed, or,
    where other processes fired the marker, the runs that counted the
    workload's apart), where they agree on a number a call; always
    `unverified` (no count of its own to agree)."""
    counts = {per_call(w) for w in witnesses if w["tracer"] != r["tracer"] or not is_script(w)}
    if len(counts) != 1 or (min(counts) * calls).denominator != 1:
        return "unverified", r["reason"] + (
            "; no witness counted the workload's events" if not counts else
            f"; the witnesses' counts a {call} vary, so its events are not known"), None
    k = min(counts)
    expected = int(k * calls)
    by = ", ".join(sorted({whose(w) for w in witnesses}))
    return "unverified", r["reason"] + (f"; the workload made {expected} events, {k} a {call} "
                                        f"by {by} in each of their runs"), expected


def mixed(r, seen, calls, apart, most, call):
    """(status, reason, events expected) of row R, SEEN events in CALLS
    calls, whose tracer counts every process mapping the file, where other
    processes fired the marker during the family's runs (up to MOST hits
    counted apart in one) and the runs APART counted the workload's own:
    never `agreed` (its count may hold theirs); the workload's events are
    APART's where those agree on a number a call."""
    counts = {per_call(w) for w in apart}
    said = (f"{r['tracer']} counts every process mapping it, and other processes fired the "
            f"marker during this family's runs (up to {most} {record.OTHERS} in a run that "
            "counted them apart)")
    if len(counts) != 1 or min(counts) * calls != int(min(counts) * calls):
        return "unverified", f"{said}: its {seen} events may hold theirs", None
    expected = int(min(counts) * calls)
    tracers = ", ".join(sorted({w["tracer"] for w in apart}))
    if seen < expected:
        return "mismatch", (f"the tracer saw {seen} events in {calls} {call}s, fewer than the "
                            f"workload's own {expected} by {tracers}"), expected
    return "unverified", (f"{said}: {seen} events, {seen - expected} more than the "
                          f"workload's own {expected} by {tracers}"), expected


def timed_or_witness(r):
    """R is a timed run, or a witness run (record.WITNESS_RUN): the runs
    that witness (a warm-up is judged, never a witness)."""
    return bool(count(r["rep"])) or record.is_witness_run(r)


def per_call(w):
    """Run W's events (seen and lost) a call."""
    return Fraction(count(w["events_seen"]) + (count(w["events_dropped"]) or 0),
                    count(w["calls"]))


def whose(w):
    """Run W's witness, in words: its tracer, or its tracer's witness run."""
    return f"{w['tracer']}'s witness run" if record.is_witness_run(w) else w["tracer"]


def against(r, seen, calls, others, call, how=KERNEL_WORDS, peers=None):
    """(status, reason, events expected) of row R (SEEN events in CALLS
    calls) against the runs OTHERS of other tracers (or a witness run),
    witnessed HOW (by the kernel's hit counter in their run, or counting
    apart: apart_words).  PEERS: the timed runs of R's own configuration,
    where a witness run is among OTHERS: counts that differ among them
    (a workload that varies) leave R unverified, as witnesses' would, and
    so do fewer than MIN_PEERS of them beside witness runs alone."""
    counts, own = {per_call(w) for w in others}, {per_call(w) for w in peers or ()}
    tracers = ", ".join(sorted({whose(w) for w in others}))
    if peers is not None and len(peers) < MIN_PEERS and all(map(record.is_witness_run, others)):
        return ("unverified", r["reason"] + (
            f"; {r['config']} ran {len(peers)} timed run here, and a witness run beside one run "
            "cannot say that the workload's count holds from run to run"), None)
    for got, whose_, then in ((counts, "the workload's count", f"in the {len(others)} runs of "
                               f"{tracers}, {how}), so no other run can witness this one"),
                              (own, f"{r['config']}'s own count", f"in its {len(peers or ())} "
                               "timed runs), so no witness run can witness them")):
        if len(got) > 1:
            return ("unverified", r["reason"] + (
                f"; {whose_} varies from run to run ({float(min(got)):g} to "
                f"{float(max(got)):g} events a {call} {then}"), None)
    k = min(counts)  # (the only one)
    where, how = (("in its one run", how.removeprefix("each ")) if len(others) == 1 else
                  (f"in each of their {len(others)} runs", how))
    witness = f"{tracers} ({k} events a {call} {where}, {how})"
    expected = k * calls
    if expected.denominator != 1:
        return ("mismatch", f"the tracer saw {seen} events in {calls} {call}s, where {witness} "
                f"says {float(expected):g}", None)
    dropped = count(r["events_dropped"]) or 0
    status, reason = record.never_fired(*record.witnessed(seen, dropped, int(expected), witness),
                                        seen, dropped, witness)
    return status, reason, int(expected)
