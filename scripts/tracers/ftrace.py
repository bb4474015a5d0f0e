"""ftrace.py: the kernel's own uprobe events, through tracefs alone.

The probe is `p:TAG/TAG_single_trace PATH:OFFSET[(SEMAPHORE)] v=REG:u32`
(a return probe: `r:` at the function, nothing fetched) in uprobe_events (TAG is the run's own name, in the event's name too:
uprobe_profile shows only the name, and Linux 6.18 here refuses a second
event of one name in any group), enabled in a tracing instance of the
kit's own whose ring buffer is in overwrite mode: the kernel's flight
recorder.  For the guarded marker the kernel raises the semaphore through
the reference counter offset; the `noref` probe leaves it off on purpose,
and must see 0 events.  Events are counted twice, and the two must
agree: those the ring buffer took (entries + overwritten + read, exact)
and uprobe_profile's hits, the line of this event name on this binary and
no other (see events()); ring-buffer drops count as lost.
"""
import os
from dataclasses import dataclass

from . import tracefs
from .base import Events, RunState, Tracer, TracerError
import kernel
from elfinfo import Elf

MAX_FILTERED_THREADS = 100  # 'common_pid == N || ' a thread: within ftrace's page


@dataclass
class State(RunState):
    """What one run of this back-end keeps between its verbs."""
    event: bool = None  # added its uprobe event
    instance: str = None  # its tracefs instance


class Ftrace(Tracer):
    name = "ftrace"
    State = State
    attaches_running = True  # by itself, through tracefs

    def available(self):
        why = self.need_root()
        if why:
            return why
        if not tracefs.find() and not tracefs.can_mount():
            return "the kernel has no tracefs (CONFIG_TRACING off?)"
        return None

    def setup(self, log):
        if not tracefs.MOUNTS.ensure():
            raise TracerError("could not mount tracefs at /sys/kernel/tracing")
        if not os.path.exists(os.path.join(tracefs.find(), "uprobe_events")):
            raise TracerError("tracefs has no uprobe_events (CONFIG_UPROBE_EVENTS off?)")

    @staticmethod
    def site(run):
        """(file offset, semaphore file offset or None, fetch arg) of the
        probe that run.cfg.probe names."""
        elf = Elf(run.build)
        if run.cfg.probe == "return":  # nothing to fetch: the function returns void
            return elf.file_offset(elf.symbol("single_trace")), None, ""
        if run.cfg.probe == "function":
            return elf.file_offset(elf.symbol("single_trace")), None, tracefs.first_arg_fetch()
        notes = [n for n in elf.sdt_notes() if n.name == run.cfg.marker]
        if not notes:
            raise TracerError(f"{run.build}: no SDT marker {run.cfg.marker}")
        n = notes[0]
        sem = None
        if run.cfg.probe == "marker-semaphore" and (n.semaphore or not run.workload):
            if not n.semaphore:  # (a real program's marker may have none: then none)
                raise TracerError(f"{run.build}: the marker has no semaphore")
            sem = elf.file_offset(n.semaphore)
        return elf.file_offset(n.pc), sem, tracefs.first_arg_fetch(n.args)

    @staticmethod
    def event(run):
        return f"{run.tag}_single_trace"

    def attach(self, run):
        off, sem, fetch = self.site(run)
        group = run.tag
        try:
            spec = tracefs.add_uprobe(group, self.event(run), run.build, off, sem, fetch,
                                      ret=run.cfg.probe == "return")
            run.state.event = True
            inst = os.path.join(tracefs.find(), "instances", group)
            os.mkdir(inst)
            run.state.instance = inst
            tracefs.write(os.path.join(inst, "options", "overwrite"), "1")
            ev = os.path.join(inst, "events", group, self.event(run))
            if run.workload and not run.workload.by_path:  # a shared program, which other
                # processes map too: the held target's threads only (all before its gate)
                tids = sorted(os.listdir(f"/proc/{run.target_pid}/task"), key=int)
                if len(tids) > MAX_FILTERED_THREADS:
                    raise TracerError(f"ftrace: {len(tids)} threads: the filter on the target's "
                                      f"threads holds {MAX_FILTERED_THREADS} (a page)")
                tracefs.write(os.path.join(ev, "filter"),
                              " || ".join(f"common_pid == {t}" for t in tids))
            tracefs.write(os.path.join(ev, "enable"), "1")
        except OSError as e:
            if e.errno == kernel.REFUSED_ERRNO:
                raise TracerError(f"ftrace: the kernel refused the probe: error {e.errno} "
                                  "(ENOTSUPP: it cannot probe the instruction at the site)")
            raise TracerError(f"ftrace: {e.strerror or e}")
        with open(run.log, "a") as f:
            f.write(f"uprobe_events: {spec}\ninstance: {inst} (overwrite)"
                    + (", filtered on the target's threads" if run.workload
                       and not run.workload.by_path else "")
                    + "\n")

    def events(self, run):
        """The events the instance's ring buffer recorded (entries +
        overrun, per CPU: exact in overwrite mode), beside uprobe_profile's
        hits, which say the handler ran, not that the event was kept; the
        two must agree.  Before Linux 6.12 the hit counter is a plain
        increment shared by all CPUs (made per-CPU by 10cdb82aa77f,
        "uprobes: turn trace_uprobe's nhit counter to be per-CPU one"), so
        with 2+ threads it may lose hits: there only the recorded events
        decide, and the note gives the hits."""
        hits = tracefs.hits(self.event(run), run.build)
        if hits is None:
            raise TracerError(f"ftrace: {self.event(run)} on {run.build} is missing from "
                              "uprobe_profile")
        stats = tracefs.ring_stats(run.state.instance)
        recorded = tracefs.written(stats)
        lost = stats["dropped events"] + stats["commit overrun"]
        note = (f"{recorded} events recorded ({stats['overrun']} overwritten in the flight "
                f"recorder, counted), {hits} hits in uprobe_profile")
        also = ("hits in uprobe_profile", hits)
        if run.workload and not run.workload.by_path:
            also = None
            note += (f"; the ring buffer keeps the target's threads only, while the hits count every "
                     f"process mapping {run.build}, so the recorded events decide")
        elif run.threads > 1 and tracefs.kernel_version() < (6, 12):
            also = None
            note += (f"; before Linux 6.12 the hit counter is not exact with {run.threads} "
                     "threads (10cdb82aa77f), so the recorded events decide")
        return Events(recorded, lost, note, also=also)

    def detach(self, run):
        if run.state.instance:  # kept until removed: if this raises, cleanup tries again
            tracefs.remove_instance(run.state.instance, f"{run.tag}/{self.event(run)}")
            run.state.take("instance")
        if run.state.take("event"):
            tracefs.remove_uprobe(run.tag, self.event(run))


BACKEND = Ftrace()
