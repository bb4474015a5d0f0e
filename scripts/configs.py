"""configs.py: the kit's configurations, one row each.  `scripts/run.py
--list` prints this table; CONFIGS=... picks rows by name or pattern.

Columns: name, build (build/benchmark-BUILD, src/builds.tsv), tracer
(scripts/tracers/), probe (where: function entry or return, marker,
marker with its semaphore raised, marker with the semaphore left off, or
an LTTng-UST tracepoint), action (what the probe does: nothing, count only, or record
a timestamp and the argument), mode (tracer-specific), script (stap),
expect (all events, none, or unverifiable), overwrite (a flight
recorder), attach (the order of probe and target, ATTACH below) and a
one-line description.

One table of every configuration, whose order `--list`, the matrix and
the report follow, kept whole and kept to itself: what the kit asks of
its rows (a row's baseline, the rows a choice needs beside it, each
tracer's twin in the tight loop) is kin.py's, and the builds' own table
(src/builds.tsv) is read by builds.py.
"""
from dataclasses import dataclass

from bodies import BODIES, BODY_BUILD, BUFFERED, STAP_PRINTING
from builds import builds


@dataclass(frozen=True)
class Config:
    name: str
    build: str
    tracer: str
    probe: str = ""  # function | return | marker | marker-semaphore | marker-noref | tracepoint
    action: str = ""  # nothing | count | record
    mode: str = ""  # perf: stat | record; lttng: snapshot | disk; stap: alibi
    script: str = ""
    expect: str = "all"  # all: threads x iterations events; none: 0 events
    overwrite: bool = False  # a flight recorder keeps only the newest events
    attach: str = "before"  # a key of ATTACH
    description: str = ""
    # A program someone else wrote (workloads.py) in place of the kit's
    # target, the marker its probe is on, the row it is measured against,
    # and the markers whose semaphores the runner raises in the held
    # target through /proc/PID/mem (a listener's price, with or without a probe).
    workload: str = ""
    marker: str = "single_trace"
    baseline: str = ""  # "": BASELINE
    semaphores: tuple = ()
    default: bool = True  # in the default run (else only where CONFIGS names it)
    # The probe-body axis (bodies.py): what the back-end's probe does
    # besides its count, in its own terms (bpftrace: the handler's
    # statements; perf: `perf record`'s arguments; ftrace: one of
    # bodies.FTRACE_STRING, FTRACE_STACKS), the tracer's environment, and
    # the row on the same build whose price this one's body is priced beside.
    body: str = ""
    env: tuple = ()
    beside: str = ""

    @property
    def against(self):
        """The configuration this one is measured against."""
        return self.baseline or BASELINE

    @property
    def idle(self):
        """An idle-* row: a build's markers in the kit's loop, nothing attached."""
        return self.tracer == "none" and not self.workload and self.name != BASELINE


# The orders of probe and target.  Only a back-end that attaches by
# itself, without wrapping the target's command (ftrace), can attach to a
# process that is already running.
FORK_CALLS = 1000  # --fork: the parent's calls, which the probe sees as well
ATTACH = {
    "before": "the probe is attached, then the target starts (every other row)",
    "running": "the target starts, maps its binary and holds its threads at their start "
               "gate (--hold); the probe is attached to it; then the threads are released",
    "fork": f"the probe is attached; the target calls single_trace() {FORK_CALLS} times (a probe "
            "optimised on its first hit is then optimised), forks, and its child is measured",
}


# The marker sites the canary runs check (each has a BUILD-canary build);
# PAGE_SITES only with ftrace (they differ from their kin only where a
# kernel optimises the 10-byte nop).
SITES = ("sdt", "sdt-nop5", "sdt-nop10", "sdt-nop10-at1")
PAGE_SITES = ("sdt-nop10-at1-page",)

C = Config
# The tracers that probe a real program by path, every process mapping it
# (the postgres-* and user-* rows): (tracer, mode, how, in words).
BY_PATH = (("ftrace", "", "uprobe_events probe"), ("bpftrace", "", "bpftrace usdt { count }"),
           ("libbpf", "", "libbpf usdt { count }, by cgroup"), ("perf", "stat", "perf stat -a"),
           ("stap", "", "stap process(PATH).mark(NAME) { count }"))
STAP_BY_PATH = "stp/mark-by-path.stp"  # the stap rows' script, by path
# The configuration every other is measured against (the first row).
BASELINE = "baseline"
PYTHON_BASELINE = "python-untraced"  # the python-* rows' own
PG_BASELINE = "postgres-untraced"  # the postgres-* rows' own
PYGC_BASELINE = "python-gc-untraced"  # the python-gc-* rows' own
USER_BASELINE = "user-untraced"  # the user-* rows' own


def body_rows():
    """The probe-body axis' rows, from bodies.BODIES (on the body build's
    marker: a string argument, a chain of frames, frame pointers):
    TRACER-body-NAME, each but the first of its back-end priced beside
    that first, and not in the default run (CONFIGS='*-body-*' names
    them)."""
    rows = [C(f"idle-{BODY_BUILD}", BODY_BUILD, "none", default=False,
              description=f"{builds()[BODY_BUILD].description}; nothing attached")]
    for tracer, table in BODIES.items():
        bodies = table
        first = f"{tracer}-body-{bodies[0][0]}"
        for name, body, env, what in bodies:
            me = f"{tracer}-body-{name}"
            kw = dict(env=env, beside="" if me == first else first, default=False,
                      description=f"body: {what}")
            if tracer == "bpftrace":
                rows.append(C(me, BODY_BUILD, tracer, "marker", "count" if body else "nothing",
                              body=body, expect="all" if body else "unverifiable", **kw))
            elif tracer == "stap":
                rows.append(C(me, BODY_BUILD, tracer, "marker",
                              "record" if name in STAP_PRINTING else "count", script=body, **kw))
            elif tracer == "libbpf":  # its body: the program the loader loads
                rows.append(C(me, BODY_BUILD, tracer, "marker",
                              "record" if body in BUFFERED else "count", body=body, **kw))
            elif tracer == "perf":
                mode = "stat" if name == "stat" else "record"
                rows.append(C(me, BODY_BUILD, tracer, "marker", "count" if mode == "stat"
                              else "record", mode, body=body, **kw))
            else:
                rows.append(C(me, BODY_BUILD, tracer, "marker", "record", body=body, **kw))
    return rows


# Your own script (make run SCRIPT=..., userscript.py): run as written
# beside the untraced run, by the tracer its file's ending names, on the
# kit's marker (the sdt build, whose marker fires once a call) or, with
# TARGET, on your program; attached to the held target, so its probes are
# live before the first call.  Nothing counts its events but the
# program's own count or the witnesses (measure/witness.py); the run
# hands its path to the row (measure/kit.py's Run).
SCRIPT_KINDS = {".bt": "bpftrace", ".stp": "stap"}
SCRIPT_MODE = "script"  # a script row's mode
# On a user's program, the rows whose counts the kernel's hit counter
# witnesses in their own runs: they count the workload's events a call
# for the script's row (measure/witness.py).
SCRIPT_WITNESSES = ("user-ftrace", "user-perf")


def script_row(tracer, user):
    """The name of the row that runs a script of TRACER's: on a user's
    program (USER) or on the kit's marker."""
    return f"{'user-' if user else ''}script-{tracer}"


def by_path_stap(tracer, semaphores):
    """A by-path row's stap fields: its script and the SEMAPHORES the
    runner raises (SystemTap's bpf runtime raises none), or none."""
    return dict(script=STAP_BY_PATH, semaphores=semaphores) if tracer == "stap" else {}
CONFIGS = [
    # Baselines first: nothing attached.  `baseline` is what every other
    # row is measured against; the idle-* rows are each build's own cost
    # with no tracer (a marker's nop, a semaphore test, -pg's mcount calls).
    C(BASELINE, "plain", "none", description="bare call, nothing in single_trace"),
    *[C(f"idle-{b.name}", b.name, "none", description=f"{b.description}; nothing attached")
      for b in builds().values() if b.idle and b.name != "plain"],

    # ftrace uprobe_events, recorded into the kit's own overwrite-mode buffer.
    C("ftrace-function", "plain", "ftrace", "function", "record",
      description="uprobe on single_trace's entry (a 1-byte ret)"),
    C("ftrace-sdt", "sdt", "ftrace", "marker", "record",
      description="uprobe on the SDT marker (1-byte nop)"),
    C("ftrace-sdt-guarded", "sdt-guarded", "ftrace", "marker-semaphore", "record",
      description="uprobe on the guarded marker, semaphore raised by the kernel's ref counter"),
    C("ftrace-sdt-guarded-noref", "sdt-guarded", "ftrace", "marker-noref", "record",
      expect="none",
      description="the guarded marker WITHOUT the ref counter: the guard stays off, 0 events"),
    C("ftrace-sdt-nop5", "sdt-nop5", "ftrace", "marker", "record",
      description="uprobe on the 5-byte nop marker (optimised on Linux >= 6.18)"),

    # perf on the SDT marker: the uprobe perf probe makes, under the run's
    # name (tracers/perf.py).
    C("perf-stat-sdt", "sdt", "perf", "marker", "count", "stat",
      description="perf's uprobe on the marker, under the run's name, + perf stat -e "
                  "(counted in the kernel)"),
    C("perf-record-sdt", "sdt", "perf", "marker", "record", "record",
      description="perf's uprobe on the marker, under the run's name, + perf record -e "
                  "(every event to perf.data)"),

    # bpftrace, counting only or storing a timestamp and the argument.
    C("bpftrace-function-count", "plain", "bpftrace", "function", "count",
      description="uprobe:single_trace { count }"),
    C("bpftrace-function-store", "plain", "bpftrace", "function", "record",
      description="uprobe:single_trace { store nsecs and arg0 }"),
    C("bpftrace-sdt-count", "sdt", "bpftrace", "marker", "count",
      description="usdt marker { count }"),
    C("bpftrace-sdt-store", "sdt", "bpftrace", "marker", "record",
      description="usdt marker { store nsecs and arg0 }"),
    C("bpftrace-nop5-count", "sdt-nop5", "bpftrace", "marker", "count",
      description="usdt on the 5-byte nop marker { count }"),
    C("bpftrace-nop5-store", "sdt-nop5", "bpftrace", "marker", "record",
      description="usdt on the 5-byte nop marker { store nsecs and arg0 }"),

    # libbpf (tracers/libbpf.py): the kit's own BPF programs, attached by
    # libbpf as production agents attach; the floor under bpftrace and
    # stapbpf (the answers price each above libbpf-sdt-count, the one in
    # the default run; CONFIGS='libbpf-*' names the others).
    C("libbpf-sdt-count", "sdt", "libbpf", "marker", "count", "sdt_count",
      description="libbpf usdt on the marker { a per-CPU count }: the BPF floor"),
    C("libbpf-uprobe-nop", "sdt", "libbpf", "marker", "count", "uprobe_nop", default=False,
      description="libbpf raw uprobe on the marker's nop { count }, no USDT spec"),
    C("libbpf-sdt-arg", "sdt", "libbpf", "marker", "record", "sdt_arg", default=False,
      description="libbpf usdt { count; the argument read (bpf_usdt_arg) and summed }"),
    C("libbpf-sdt-guarded", "sdt-guarded", "libbpf", "marker-semaphore", "count", "sdt_count",
      default=False, description="libbpf usdt on the guarded marker (the kernel's reference counter) { count }"),

    # LTTng-UST.
    C("lttng-flight", "ust", "lttng", "tracepoint", "record", "snapshot", overwrite=True,
      description="tracepoint into a snapshot (flight-recorder, overwrite) session"),
    C("lttng-disk", "ust", "lttng", "tracepoint", "record", "disk",
      description="tracepoint into a normal session written to disk"),

    # uftrace.
    C("uftrace", "pg", "uftrace", "function", "record",
      description="uftrace record of the -pg build (every entry and exit)"),

    # SystemTap, the 2011 experiment (stp/).
    C("stap-function-time", "sdt", "stap", "function", "record", script="stp/function-time.stp",
      description="process.function, printf gettimeofday_ns() and $v (the 2011 probe)"),
    C("stap-function", "sdt", "stap", "function", "record", script="stp/function.stp",
      description="process.function, printf $v (no gettimeofday_ns)"),
    C("stap-mark-time", "sdt", "stap", "marker", "record", script="stp/mark-time.stp",
      description="process.mark, printf gettimeofday_ns() and $arg1 (the 2011 probe)"),
    C("stap-mark", "sdt", "stap", "marker", "record", script="stp/mark.stp",
      description="process.mark, printf $arg1 (no gettimeofday_ns)"),
    C("stap-mark-empty", "sdt", "stap", "marker", "count", script="stp/mark-empty.stp",
      description="process.mark, count only: the trap without a handler's work"),
    C("stap-mark-alibi", "sdt", "stap", "marker", "count", "alibi", script="stp/mark-empty.stp",
      description="process.mark with -DSTP_ALIBI (module runtime only): no handler runs; "
      "counted from the module's probe hit report"),

    # Return probes beside the entry probes above.
    C("ftrace-function-return", "plain", "ftrace", "return", "record",
      description="uretprobe (r:) on single_trace's return"),
    C("bpftrace-function-return", "plain", "bpftrace", "return", "count",
      description="uretprobe:single_trace { count }"),
    C("perf-stat-function-return", "plain", "perf", "return", "count", "stat",
      description="perf probe single_trace%return + perf stat -e"),
    C("stap-function-return", "sdt", "stap", "return", "count",
      script="stp/function-return.stp",
      description="process.function.return, count only"),

    # Function entry on first instructions of other kinds than plain's `ret`.
    *[C(f"{t}-fentry-{kind}", f"fentry-{kind}", t, "function", "count",
        description=f"{what} on single_trace's entry, a `{insn}`")
      for kind, insn in (("nop", "nop"), ("push", "push %rbx"))
      for t, what in (("ftrace", "uprobe_events probe"), ("bpftrace", "uprobe { count }"))],

    # The marker's expensive argument, attached (the idle-sdt-expensive*
    # rows above are the same builds with nothing attached).
    C("ftrace-expensive", "sdt-expensive", "ftrace", "marker", "record",
      description="uprobe on the marker whose argument costs a strlen and a hash"),
    C("ftrace-expensive-guarded", "sdt-expensive-guarded", "ftrace", "marker-semaphore",
      "record", description="the same under its semaphore, raised by the kernel"),

    # Probe-site safety: each marker site inside the red-zone canary
    # (src/trace/canary.h), probed by each tracer that can probe it.  A
    # run whose sentinel changed is `corrupted`; the row says which path
    # the probe took (trap or optimised call).
    *[C(f"site-{site}-{t}", f"{site}-canary", t, "marker", "count", mode,
        description=f"{what} on the {site} site, red-zone canary checked")
      for site in SITES
      for t, mode, what in (("ftrace", "", "uprobe_events probe"),
                            ("bpftrace", "", "usdt { count }"),
                            ("perf", "stat", "perf's uprobe + perf stat"))],
    *[C(f"site-{site}-ftrace", f"{site}-canary", "ftrace", "marker", "count",
        description=f"uprobe_events probe on the {site} site (its 10-byte nop across a 4 KiB "
        "page), red-zone canary checked")
      for site in PAGE_SITES],
    # The same sites in the other orders (ATTACH): attached to a running
    # target, and in a child forked after the probe fired.
    *[C(f"site-{site}-ftrace-{order}", f"{site}-canary", "ftrace", "marker", "count",
        attach=order, description=f"uprobe_events probe on the {site} site, "
        + ("attached to the running target" if order == "running" else
           f"in a child forked after {FORK_CALLS} calls") + ", red-zone canary checked")
      for order in ("running", "fork") for site in SITES + PAGE_SITES],

    # Real programs (workloads.py): Debian's CPython 3.11 making ITER calls a
    # thread, measured against itself untraced.  On 3.11 function__entry is
    # reached only with the `line` marker's semaphore raised (python/cpython
    # #98894; docs/findings/2026-12-02-python311-function-entry-needs-line.md),
    # so both rows that listen raise it, and the semaphores row prices that
    # with no probe at all.
    C(PYTHON_BASELINE, "python", "none", workload="python", marker="function__entry",
      baseline=PYTHON_BASELINE, attach="running",
      description="CPython 3.11, ITER calls of a one-line function a thread; nothing raised"),
    C("python-semaphores", "python", "none", workload="python", marker="function__entry",
      baseline=PYTHON_BASELINE, attach="running", semaphores=("function__entry", "line"),
      description="the same, the function__entry and line semaphores raised through "
                  "/proc/PID/mem; no probe"),
    C("python-ftrace-entry", "python", "ftrace", "marker-semaphore", "record",
      workload="python", marker="function__entry", baseline=PYTHON_BASELINE,
      attach="running", semaphores=("line",),
      description="uprobe on python:function__entry (the kernel raising its semaphore), "
                  "line's raised through /proc/PID/mem, events of the target's pid"),
    C("python-bpftrace-entry", "python", "bpftrace", "marker-semaphore", "count",
      workload="python", marker="function__entry", baseline=PYTHON_BASELINE,
      attach="running", semaphores=("line",),
      description="bpftrace -p PID, usdt python:function__entry { count }; line's semaphore "
                  "raised through /proc/PID/mem"),
    # What an attached probe costs when it records nothing: the trap and an
    # empty BPF program, beside python-semaphores (no probe) and the rows
    # that count; nothing counts its events, so it is unverified.  Not in
    # the default run (a bpftrace start a run, and the default's 5 minutes
    # are spent): CONFIGS='python-*' runs it.
    C("python-bpftrace-empty", "python", "bpftrace", "marker-semaphore", "nothing",
      workload="python", marker="function__entry", baseline=PYTHON_BASELINE,
      attach="running", semaphores=("line",), expect="unverifiable", default=False,
      description="bpftrace -p PID, usdt python:function__entry { } (a probe that records "
                  "nothing); line's semaphore raised through /proc/PID/mem"),
    C("python-perf-entry", "python", "perf", "marker-semaphore", "count", "stat",
      workload="python", marker="function__entry", baseline=PYTHON_BASELINE,
      attach="running", semaphores=("line",),
      description="perf's uprobe at python:function__entry (its reference counter) under the "
                  "run's name, perf stat -p PID; line's semaphore raised through /proc/PID/mem"),
    # function__return: each call's return, and past the gate one more a
    # thread (its work() returning) and the main module's at exit
    # (calls.py's "fired").  Not in the default run (its 5 minutes).
    *[C(f"python-{t}-return", "python", t, "marker-semaphore", "count", mode,
        workload="python", marker="function__return", baseline=PYTHON_BASELINE,
        attach="running", semaphores=("line",), default=False,
        description=f"{how} at python:function__return, the target's process; line's "
                    "semaphore raised through /proc/PID/mem")
      for t, mode, how in (("ftrace", "", "uprobe_events probe"),
                           ("bpftrace", "", "bpftrace -p PID, usdt { count }"),
                           ("perf", "stat", "perf stat -p PID"))],
    # LTTng-UST and uftrace cannot attach to a marker in a binary they did
    # not build: their back-ends skip the rows, saying why.
    C("python-lttng-entry", "python", "lttng", "tracepoint", "record", workload="python",
      marker="function__entry", baseline=PYTHON_BASELINE, attach="running",
      description="LTTng-UST at python:function__entry: a skipped row, saying why not"),
    C("python-uftrace-entry", "python", "uftrace", "function", "record", workload="python",
      marker="function__entry", baseline=PYTHON_BASELINE, attach="running",
      description="uftrace at python:function__entry: a skipped row, saying why not"),
    # SystemTap 4.8's bpf runtime raises no semaphore (0 events with line's
    # alone): the runner raises both.
    C("python-stap-entry", "python", "stap", "marker", "count", script="stp/python-entry.stp",
      workload="python", marker="function__entry", baseline=PYTHON_BASELINE,
      attach="running", semaphores=("function__entry", "line"),
      description="stap -x PID, process.mark(\"function__entry\") { count } (stp/"
                  "python-entry.stp); both semaphores raised through /proc/PID/mem"),

    # The release's own CPython (workloads.py's pygc: 3.11 on Debian 12, 3.13
    # on 13): 3.12 dropped function__entry and the line markers, so these rows
    # probe gc__start, which every CPython since 3.6 keeps, under a workload
    # whose every call is one collection (calls.py --gc); its semaphore is
    # raised as the python-* rows' are (SystemTap's bpf runtime raises none).
    C(PYGC_BASELINE, "pygc", "none", workload="pygc", marker="gc__start",
      baseline=PYGC_BASELINE, attach="running",
      description="the release's CPython, ITER calls of gc.collect(0) a thread; nothing "
                  "raised"),
    *[C(f"python-gc-{t}", "pygc", t, "marker-semaphore", "count", mode, workload="pygc",
        marker="gc__start", baseline=PYGC_BASELINE, attach="running",
        description=f"{how} at python:gc__start, the target's process")
      for t, mode, how in (("ftrace", "", "uprobe_events probe (the kernel raising its "
                                          "semaphore), events of the target's pid"),
                           ("bpftrace", "", "bpftrace -p PID, usdt { count }"),
                           ("perf", "stat", "perf stat -p PID"))],
    C("python-gc-stap", "pygc", "stap", "marker", "count", script="stp/python-gc.stp",
      workload="pygc", marker="gc__start", baseline=PYGC_BASELINE, attach="running",
      semaphores=("gc__start",),
      description="stap -x PID, process.mark(\"gc__start\") { count } (stp/python-gc.stp); "
                  "its semaphore raised through /proc/PID/mem"),

    # The release's PostgreSQL (workloads.py; 15 on Debian 12, 17 on 13): a throwaway cluster, pgbench's clients
    # (THREADS) each running ITER transactions; probes by path, on every
    # backend, started after the attach.  query__start is checked against
    # pg_stat_statements; lwlock__acquire, of which the server keeps no
    # count, is unverified, its tracers' counts set side by side.  Its
    # markers are guarded (lwlock__acquire's is read: ftrace without the
    # reference counter sees 0), so every probe raises the semaphore.  A
    # run is a cluster started and stopped (0.3-0.4 s beside its
    # transactions): even the baseline and one tracer took the default run
    # from ~4 min 56 s to 5 min 21 s here, past its 5 minutes, so the family
    # runs where CONFIGS names it (CONFIGS='postgres-*').
    C(PG_BASELINE, "postgres", "none", workload="postgres", marker="query__start",
      baseline=PG_BASELINE, attach="running", default=False,
      description="the release's PostgreSQL, pgbench -M simple, THREADS clients x ITER transactions"),
    *[C(f"postgres-{t}-{what}", "postgres", t, "marker-semaphore", "count", mode,
        workload="postgres", marker=marker, baseline=PG_BASELINE, attach="running",
        default=False, description=f"{how} on postgresql:{marker}, every backend"
        + ("; its semaphore raised in the postmaster, whose backends inherit it"
           if t == "stap" else ""),
        **by_path_stap(t, (marker,)))
      for what, marker in (("query", "query__start"), ("lwlock", "lwlock__acquire"))
      for t, mode, how in BY_PATH],

    # The probe-body axis (bodies.py, body_rows above).
    *body_rows(),

    # Your own script (SCRIPT_KINDS above): on the kit's marker.
    *[C(script_row(t, False), "sdt", t, "marker", "nothing", SCRIPT_MODE, attach="running",
        expect="unverifiable", default=False,
        description=f"your SCRIPT ({ext}), run by {t} as written, beside the held target "
                    "(the sdt build; its marker fires once a call)")
      for ext, t in SCRIPT_KINDS.items()],

    # A user's program (make run TARGET=... PROBE=provider:name WORKLOAD='...'):
    # the marker is PROBE's (workloads.user), probed by path, its
    # semaphore raised where it has one (SystemTap's bpf runtime raises none:
    # for user-stap glibc's loader raises it in each of the command's
    # processes, Command.exec_env); the command keeps no count,
    # so each tracer's count is checked against witnesses
    # (measure/witness.py).  Only where TARGET is given.
    C(USER_BASELINE, "user", "none", workload="user", marker="", baseline=USER_BASELINE,
      attach="running", default=False, description="your WORKLOAD, nothing attached"),
    *[C(f"user-{t}", "user", t, "marker-semaphore", "count", mode, workload="user", marker="",
        baseline=USER_BASELINE, attach="running", default=False,
        description=f"{how} on your PROBE, every process mapping TARGET",
        **by_path_stap(t, ()))
      for t, mode, how in BY_PATH],
    # ... and your own script on it (SCRIPT_KINDS above).
    *[C(script_row(t, True), "user", t, "marker", "nothing", SCRIPT_MODE, workload="user",
        marker="", baseline=USER_BASELINE, attach="running", expect="unverifiable",
        default=False, description=f"your SCRIPT ({ext}), run by {t} as written, while your "
                                   "WORKLOAD runs")
      for ext, t in SCRIPT_KINDS.items()],
]

BY_NAME = {c.name: c for c in CONFIGS}
