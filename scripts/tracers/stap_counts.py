"""stap_counts.py: what a SystemTap run counted, and what makes the
count one to trust.  stap.py's verbs start and stop the runs; this reads
what they leave: the module's procfs file (module runtime), stap's -o
file or the output of the stap beside the held target (bpf runtime), the
user's own script's line, or the module's probe hit report.  A room of
its own because a count is only as good as what is read around it:
stap's log is searched for skipped probes and errors, which make the run
an error rather than a quiet short count, and for the printf records
stapbpf lost, which the note says and the Events carry as dropped.  And
some rows would count wrong before they ran: a printf row on the bpf
runtime is sized (max_iter) so that stapbpf loses none, and a real
program's row whose marker has a semaphore nobody raises is skipped
(semaphore_problem) rather than counted as 0.

The hit report: a module built with -DSTP_ALIBI (stap-mark-alibi: every
handler skipped, the count too) or -t (STAP_TIMING=1: each handler timed)
prints, as it unloads, "----- probe hit report:" and a line per probe with
its hits (and with -t its cycles min/avg/max).  Two things hide it: stap
compiles it out of the module unless stap's own stdout is a terminal (it
defines STP_STDOUT_NOT_ATTY otherwise: found in SystemTap 5.6's generated
C), so such a module is built by `stap -p4` on a pseudo-terminal
(stap_preflight.on_a_tty()); and nobody reads a flight recorder's output when the module
unloads, so such a run is not flight-recorded: `staprun KO -c TARGET` runs
the target, the module's output joins the target's on stdout (the run's
log), and the hits decide the count.

Nothing to run: stap.py's events(), max_iter() and skip_reason() ask it.
"""
import os
import re

import semaphores
import workloads
from configs import SCRIPT_MODE
from .base import LOG_TAIL, Events, TracerError, script_events

HIT_REPORT = "----- probe hit report:"
# A hit report's line (the runtime's format: "PP, (LOCATION), hits: N,"
# then with -t "cycles: MINmin/AVGavg/MAXmax, variance: V," then the
# derivation, "from: ...mark("single_trace")" for the marker's probe, whose
# PP is the statement it resolved to): its hits, and with -t the unit
# (cycles, or nsecs) and min/avg/max.
HIT_LINE = re.compile(r'hits: (\d+),(?:\s*(\w+): (\d+)min/(\d+)avg/(\d+)max)?')
HIT_PROBE = '"single_trace")'  # on the line of the probe on single_trace
STAPBPF_PRINTF_EVENTS = 10000  # the most printf events a run on the bpf runtime (max_iter)
BPF_NOTE = "bpf runtime: argument not read (stap 4.8 BPF cannot read $v/$arg1); a constant printed instead"


def max_iter(be, cfg, threads):
    """stapbpf loses perf records when a tight loop prints faster than it
    reads them, and then aborts ("printf already started"): on this
    kind of machine 0 of 24 printf runs failed at 10,000 calls a thread
    at 1 and 2 threads, 1 of 12 at 2 threads and 30,000, 4 of 12 at 2
    threads and QUICK's 100,000 (2026-12-05, docs/findings/
    2026-12-05-stapbpf-printf-in-quick.md); and later 1 of 2 at 1 thread
    and 20,000 in a fresh clone's QUICK run (lost 302, then the abort).
    So a printf row on the bpf runtime makes at most
    STAPBPF_PRINTF_EVENTS calls in all: no CPU's buffer gets more than
    the 10,000 that never failed."""
    if be.runtime != "bpf" or cfg.action != "record":
        return None
    return (max(1, STAPBPF_PRINTF_EVENTS // threads),
            f"at most {STAPBPF_PRINTF_EVENTS:,} printed events a run on stap's bpf runtime "
            "(stapbpf loses records, then aborts, past it)")


def semaphore_problem(be, cfg, w=None):
    """Why a real program's row cannot count its marker here: the bpf
    runtime raises no semaphore (0 of 200,000 python calls with one
    left down), the marker has one, and the row names none for the
    runner to raise, nor can the workload's processes raise it as they
    map the program (a user's command's do: Command.exec_env).  None
    where it can."""
    w = w or (workloads.get(cfg.workload) if cfg.workload else None)
    if be.runtime != "bpf" or not w or not w.program:
        return None
    marker = w.marker or cfg.marker
    try:
        note = semaphores.markers(w.program).get(marker)
    except (OSError, ValueError):
        return None  # (the workload's own check says why)
    if note and note.semaphore and marker not in cfg.semaphores and not w.raises_at_exec():
        return (f"SystemTap's bpf runtime raises no marker's semaphore, {w.provider}:"
                f"{marker} in {w.program} has one, and the processes it fires in start after "
                "the attach, each from an exec, so the kit has none to raise it in "
                "(ftrace, perf and bpftrace raise it themselves)")
    return None


def hit_report(be, run):
    """Events from the module's hit report (BE.reports()), which staprun
    wrote to the run's stdout, copied to its log."""
    with open(run.log) as f:
        text = f.read()
    if HIT_REPORT not in text:
        raise TracerError("the module printed no probe hit report")
    lines = [ln for ln in text[text.rindex(HIT_REPORT):].splitlines() if HIT_PROBE in ln]
    m = HIT_LINE.search(lines[0]) if lines else None
    note = f"module runtime, flags {run.state.flags}; counted from the probe hit report"
    if run.cfg.mode == "alibi":
        note += " (-DSTP_ALIBI: no handler ran)"
    if m is None:  # an alibi probe that never fired has no line
        return Events(0, 0, note + "; no line for single_trace's probe",
                      runtime=be.runtime)
    if m.group(2):
        note += (f"; the handler's own {m.group(2)} a hit (stap -t): {m.group(3)} min, "
                 f"{m.group(4)} avg, {m.group(5)} max")
    return Events(int(m.group(1)), 0, note, runtime=be.runtime)


def events(be, run):
    """What the run of BE (stap.py's back-end) counted: its Events, or
    TracerError where stap's log says the count cannot be trusted."""
    if be.reports(run.cfg):
        return hit_report(be, run)
    if be.runtime == "module":
        mod = run.state.module
        with open(f"/proc/systemtap/{mod}/events") as f:
            text = f.read()
        note = f"module runtime, flags {run.state.flags}"
    else:
        live = be.stop_live(run)  # (its cpu_ns in the Events below)
        if run.cfg.mode == SCRIPT_MODE:
            return script_events(be, run, live)
        out = live.out if live else run.state.out
        with open(out) as f:
            f.seek(max(0, os.path.getsize(out) - LOG_TAIL))
            text = f.read()
        os.unlink(out)  # one line per event; the count is kept
        note = BPF_NOTE if run.cfg.action == "record" else "bpf runtime"
        if live:
            if live.status != 0:
                raise TracerError(f"stap -x exited with status {live.status} at its SIGINT")
            note += (f"; stap on every process mapping {'its copy' if run.own_copy else 'it'}"
                     if run.workload.by_path else
                     f"; stap -x {run.target_pid}") + ", started beside the held target"
    if run.own_copy:  # (so no other process's hit is in its count: others 0)
        note += (f"; its probe on a copy of {run.build} that only the workload's processes "
                 "map (owncopy.py): their events alone")
    with open(run.log) as f:
        log = f.read()
    skipped = sum(int(x) for x in re.findall(r"skipped probes: (\d+)", log))
    # bpf: printf output that did not reach stapbpf (the count is exact).
    lost = sum(int(x) for x in re.findall(r"lost (\d+) perf_events", log))
    if skipped:
        raise TracerError(f"stap skipped {skipped} probes")
    if re.search(r"^ERROR:", log, re.M):
        raise TracerError("stap reported an error: " +
                          re.search(r"^ERROR:.*$", log, re.M).group(0))
    m = re.search(r"events: (\d+)", text)
    if not m:
        raise TracerError("stap printed no event count")
    count = int(m.group(1))
    if lost:
        # the probe's own count is exact; of its records LOST never
        # arrived: seen is what arrived, and seen + lost is the count
        note += (f"; {lost} printf records lost on the way to stapbpf, of the {count} "
                 "the probe counted")
    live = run.state.live
    return Events(count - lost, lost, note, runtime=be.runtime,
                  tracer_cpu_ns=live and live.cpu_ns, apart=bool(run.own_copy),
                  others=0 if run.own_copy else None)
