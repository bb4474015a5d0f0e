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
import time
from dataclasses import dataclass

from bodies import FTRACE_STACKS

from . import tracefs
from .attached import tasks
from .base import Events, RunState, Tracer, TracerError
import host
import kernel

def tasks_or_none(pid):
    """PID's thread ids, or none where it ended meanwhile."""
    try:
        return tasks(pid)
    except OSError:
        return []


MAX_FILTERED_THREADS = 100  # 'common_pid == N || ' a thread: within ftrace's page


@dataclass
class State(RunState):
    """What one run of this back-end keeps between its verbs."""
    event: bool = None  # added its uprobe event
    instance: str = None  # its tracefs instance


STACK_ENTRIES = 2  # a stack body's ring entries an event: the event and its stack


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

    def path_problem(self, path):
        return tracefs.path_problem(path, "ftrace")

    def skip_reason(self, cfg, workload=None):
        return tracefs.sites_problem(cfg, "ftrace", workload)

    def setup(self, log):
        if not tracefs.MOUNTS.ensure():
            raise TracerError("could not mount tracefs at /sys/kernel/tracing")
        if not os.path.exists(os.path.join(tracefs.find(), "uprobe_events")):
            raise TracerError("tracefs has no uprobe_events (CONFIG_UPROBE_EVENTS off?)")

    @staticmethod
    def event(run):
        return f"{run.tag}_single_trace"

    def attach(self, run):
        off, sem, fetch = tracefs.site(run)
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
            if run.group:  # by path: the ring keeps the workload's tasks, and their forks'
                tracefs.write(os.path.join(inst, "options", "event-fork"), "1")
                self.keep_tasks(inst, run.group)
            if run.cfg.body == FTRACE_STACKS[0]:  # probe bodies (configs.BODIES)
                tracefs.write(os.path.join(ev, "trigger"), "stacktrace")
            elif run.cfg.body == FTRACE_STACKS[1]:
                tracefs.write(os.path.join(inst, "options", "userstacktrace"), "1")
            tracefs.write(os.path.join(ev, "enable"), "1")
        except OSError as e:
            if e.errno == kernel.REFUSED_ERRNO:
                raise TracerError(f"ftrace: the kernel refused the probe: error {e.errno} "
                                  "(ENOTSUPP: it cannot probe the instruction at the site)")
            raise TracerError(f"ftrace: {e.strerror or e}")
        with open(run.log, "a") as f:
            f.write(f"uprobe_events: {spec}\ninstance: {inst} (overwrite)"
                    + dict(zip(FTRACE_STACKS, (", a stacktrace trigger", ", options/"
                                               "userstacktrace"))).get(run.cfg.body, "")
                    + (", filtered on the target's threads" if run.workload
                       and not run.workload.by_path else "")
                    + (f", set_event_pid: the cgroup {run.group.name}'s tasks and their forks"
                       if run.group else "")
                    + "\n")

    @staticmethod
    def keep_tasks(inst, group):
        """Instance INST's ring keeps GROUP's tasks (set_event_pid), written
        again until no task is left out: one forked before the write, which
        event-fork did not see, is in the next read."""
        for _ in range(20):
            want = {t for p in group.pids() for t in tasks_or_none(p)}
            tracefs.write(os.path.join(inst, "set_event_pid"), " ".join(map(str, sorted(want))))
            with open(os.path.join(inst, "set_event_pid")) as f:
                kept = {int(x) for x in f.read().split()}
            now = {t for p in group.pids() for t in tasks_or_none(p)}
            if now <= kept:
                return
        raise TracerError("ftrace: the workload's tasks kept forking while set_event_pid was "
                          "written")

    def events(self, run):
        """The events the instance's ring buffer recorded (entries +
        overrun, per CPU: exact in overwrite mode), beside uprobe_profile's
        hits, which say the handler ran, not that the event was kept; the
        two must agree (tracefs.profile_witness: where the hit counter is
        exact)."""
        stats = tracefs.ring_stats(run.state.instance)
        recorded = tracefs.written(stats)
        lost = stats["dropped events"] + stats["commit overrun"]
        # a stack body (configs.BODIES) writes a second entry an event, the
        # stack; the hit counter (profile_witness) checks the halving
        per = STACK_ENTRIES if run.cfg.body in FTRACE_STACKS else 1
        if recorded % per or lost % per:
            raise TracerError(f"ftrace: the ring buffer took {recorded} entries and lost {lost}, "
                              f"not {per} an event")
        recorded, lost = recorded // per, lost // per
        try:
            also, said = tracefs.profile_witness(self.event(run), run.build, run.threads)
        except TracerError as e:
            raise TracerError(f"ftrace: {e}")
        note = (f"{recorded} events recorded" + (f" (each with its stack, {per} entries)"
                                                  if per > 1 else "")
                + f" ({stats['overrun']} overwritten in the flight "
                f"recorder, counted), {said}")
        if run.workload and not run.workload.by_path:
            also = None
            note += (f"; the ring buffer keeps the target's threads only, while the hits count every "
                     f"process mapping {run.build}, so the recorded events decide")
        others = None
        if run.group:
            # the ring keeps the workload's tasks (set_event_pid), the hit
            # counter every process's: the rest of the hits are others'
            # (the split rests on set_event_pid; the counter cannot say whose)
            note += "; the ring buffer keeps the workload's tasks (set_event_pid)"
            if also:
                others = max(0, also[1] - recorded - lost)
                note += ", the rest of the hits are other processes'"
        return Events(recorded, lost, note, also=also, others=others, apart=bool(run.group))

    def detach(self, run):
        if run.state.instance:  # kept until removed: if this raises, cleanup tries again
            tracefs.remove_instance(run.state.instance, f"{run.tag}/{self.event(run)}")
            run.state.take("instance")
        if run.state.take("event"):
            tracefs.remove_uprobe(run.tag, self.event(run))


class Attached:
    """make lifecycle's (attached.py): uprobe_events lines in a group of the
    kit's own, enabled together (the top buffer is untouched: a kit
    instance holds the events)."""
    name, path = "ftrace", "trace_uprobe (uprobe_events)"
    COUNTS_LIVE = True  # the hit counts and the ring are the events' and instance's: stop removes them
    SWEEPS = True

    @staticmethod
    def version():
        return host.first_line(["uname", "-r"])  # ftrace is its kernel's

    def total(self):
        return self.recorded()

    def __init__(self, kit, binary, sites, pid_filter=None, pid_only=False):
        self.kit, self.binary, self.sites = kit, binary, sites
        self.group = kit.group
        self.pid_filter, self.pid_only = pid_filter, pid_only
        self.defined = []
        self.inst = os.path.join(kit.tracefs, "instances", self.group)

    def start(self):
        t0 = time.monotonic()
        os.mkdir(self.inst)
        tracefs.write(os.path.join(self.inst, "buffer_size_kb"), "64")
        self.define()
        ev = os.path.join(self.inst, "events", self.group)
        if self.pid_filter:  # common_pid is a thread's id: one test per thread
            test = " || ".join(f"common_pid == {t}" for t in
                               ([self.pid_filter] if self.pid_only else tasks(self.pid_filter)))
            for name in self.defined:
                tracefs.write(os.path.join(ev, self.event(name), "filter"), test)
        startup = time.monotonic() - t0
        tracefs.write(os.path.join(ev, "enable"), "1")
        return startup

    def event(self, site):
        """SITE's event: uprobe_profile shows no group, so the name is the kit's own."""
        return f"k{os.getpid()}_{site}"

    def define(self):
        """The events defined, not enabled (perf opens them so)."""
        for name, off in self.sites.offsets.items():
            self.defined.append(name)  # first: a line half-added is still removed
            tracefs.add_uprobe(self.group, self.event(name), self.sites.binary, off,
                               semaphore=self.sites.semaphores.get(name))

    def counts(self):
        return {n: tracefs.hits(self.event(n), self.sites.binary) for n in self.defined}

    def ready(self):
        return True  # its enable's write returned: every event records

    def recorded(self):
        return tracefs.written(tracefs.ring_stats(self.inst))

    def stop(self, limit):
        """Every line of the kit's group removed, each tried whatever the
        others did; the first error raised once all were tried."""
        errors = []
        en = os.path.join(self.inst, "events", self.group, "enable")
        if self.defined and os.path.exists(en):
            try:
                tracefs.write(en, "0")
            except OSError as e:
                errors.append(e)
        events = os.path.join(self.kit.tracefs, "uprobe_events")
        for name in list(self.defined):
            try:
                tracefs.write(events, f"-:{self.group}/{self.event(name)}")
            except FileNotFoundError:  # never added (its add failed)
                pass
            except OSError as e:
                errors.append(e)
                continue
            self.defined.remove(name)
        if os.path.isdir(self.inst):
            try:
                tracefs.remove_instance(self.inst, self.group)
            except OSError as e:
                errors.append(e)
        if errors:
            raise errors[0]
        return None


BACKEND = Ftrace()
