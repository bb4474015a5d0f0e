"""perf.py: `perf probe` on the SDT marker (or on single_trace's entry or
return), then `perf stat -e` (counted in the kernel) or `perf record -e`
(each event written to perf.data).

The event is the run's own, `TAG:TAG_MARKER` (TAG = kit<id>_<n>), never
perf's default `sdt_PROVIDER:MARKER`, which a user's own probe may hold:
perf 6.1 cannot rename an SDT event ("-a 'NAME=%sdt_p:m'" is refused:
"%sdt_p is not supported"), so the kit gives perf probe the marker's file
offset under its name, `-a 'TAG:TAG_MARKER=0xOFFSET v=%REG:u32'`.  Where
the marker has a semaphore (dtrace -G gives the kit's own marker one; a
real program's guarded marker), perf probe writes it into the line as
the reference counter, and only under its default name; the kernel
refuses a second uprobe at one site with another reference counter
(EINVAL: a user's own perf probe there would make the kit's fail), so
the kit writes the same uprobe_events line perf would, reference counter
included, under its own name (tracefs.add_uprobe, as ftrace does), and
perf stat or record takes that event.  The group is the run's before
anything runs, so detach removes every event in it (and nothing else) on
every path, whatever perf printed or named it (perf 6.1 names a return
probe EVENT__return): the event is read from uprobe_events, never from
perf probe's output.  perf's build-id cache is kept in
build/perf-buildid rather than the user's ~/.debug.

On a real program's row (attach "running", workloads.py) perf is started
beside the held target, `perf stat -p PID` (or record; `-a`, every
process, for a probe by path), its events opened disabled (-D -1) and
enabled through its control FIFO: its "ack" says they count, and the
target is released then.  On a probe by path the kernel's own hit
counter (uprobe_profile, the event's line) is a second count of the same
traps, in the same run, which the count must equal.

`perf record` (6.1 here) sometimes writes one ring-buffer record into
perf.data twice: byte-identical, same thread, argument and nanosecond
timestamp, at two file offsets (seen: 200001 and 200002 samples for
200000 calls), while `perf stat` and ftrace's uprobe_profile count the
same probe exactly, so the kernel fired once.  The back-end therefore
counts distinct (thread, timestamp, argument) samples from `perf script`
(the argument is the loop index, unique per thread) and says how many
duplicates perf wrote.
"""
import errno
import os
import re
import signal
import time
from dataclasses import dataclass

import cgroups
from . import ftrace, tracefs
from .attached import Process, tasks
from .base import LONG_TIMEOUT_S, Events, RunState, Tracer, TracerError, tool_error

MAX_EVENT_NAME = 63  # the kernel's MAX_EVENT_NAME_LEN (64) with its NUL
BUILDID_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                           "perf-buildid"))


@dataclass
class State(RunState):
    """What one run of this back-end keeps between its verbs."""
    group: str = None  # the run's own event group (run.tag), once anything may be in it
    event: str = None  # GROUP:EVENT, as uprobe_events holds it once made
    data: str = None  # perf's output file
    control: tuple = None  # the fds of perf's control and ack FIFOs (attach "running")


class Perf(Tracer):
    name = "perf"
    State = State
    attaches_running = True  # perf stat|record -p PID
    needs = {"perf": "linux-perf"}
    versions = ("perf",)

    def available(self):
        why = self.need_commands() or self.need_root()
        if why:
            return why
        if not tracefs.find() and not tracefs.can_mount():
            return "the kernel has no tracefs for perf probe (CONFIG_TRACING off?)"
        r = self.sh(["perf", "--version"], check=False, whole=False)
        if not r.startswith("perf version"):
            return "perf does not run here: " + (r.strip().splitlines() or ["?"])[-1]
        return None

    def path_problem(self, path):
        return tracefs.path_problem(path, "perf probe")

    def skip_reason(self, cfg, workload=None):
        return tracefs.sites_problem(cfg, "perf", workload)

    def setup(self, log):
        if not tracefs.MOUNTS.ensure():
            raise TracerError("could not mount tracefs at /sys/kernel/tracing")

    def perf(self, *args):
        return ["perf", "--buildid-dir", BUILDID_DIR, *args]

    @staticmethod
    def names(run):
        """(group, event): the run's own perf event, TAG:TAG_MARKER."""
        what = "single_trace" if run.cfg.probe in ("function", "return") else run.cfg.marker
        return run.tag, f"{run.tag}_{re.sub(r'[^A-Za-z0-9_]', '_', what)}"[:MAX_EVENT_NAME]

    def attach(self, run):
        group, event = self.names(run)
        if tracefs.group_events(group):  # not this run's: never touched
            raise TracerError(f"perf: uprobe_events already holds events of group {group}")
        # the group is the run's before anything is made: detach removes
        # every event in it on every path, whatever perf probe did or said
        run.state.group = group
        run.state.data = os.path.join(run.scratch, "perf.data")
        if run.cfg.probe in ("function", "return"):
            where = f"{group}:{event}=single_trace" + ("%return" if run.cfg.probe == "return"
                                                       else "")
        else:
            off, sem, fetch = tracefs.site(run, note_ref=True)
            if sem is not None:  # a reference counter: perf's own line, under the kit's name
                try:
                    spec = tracefs.add_uprobe(group, event, run.build, off, sem, fetch)
                except OSError as e:
                    raise TracerError(f"perf: {e.strerror or e}")
                with open(run.log, "a") as f:
                    f.write(f"uprobe_events: {spec} (perf probe's line for an SDT event, "
                            "under the run's name)\n")
                where = None
            else:
                where = f"{group}:{event}=0x{off:x}" + (f" {fetch}" if fetch else "")
        if where:
            os.makedirs(BUILDID_DIR, exist_ok=True)
            self.sh(self.perf("buildid-cache", "--add", run.build), log=run.log)
            status, out = self.sh(self.perf("probe", "-x", run.build, "-a", where),
                                  log=run.log, check=False, code=True)
            if status != 0:
                raise TracerError(self.add_failed(status, out, event))
        # the event as the kernel holds it (perf names a return probe
        # EVENT__return), read from uprobe_events, not from perf's words
        made = tracefs.group_events(group)
        if len(made) != 1:
            raise TracerError(f"perf: uprobe_events holds {len(made)} events of group {group}, "
                              f"not 1: {', '.join(made) or 'none'}")
        run.state.event = f"{group}:{made[0]}"
        if run.cfg.attach == "running":
            self.start_running(run)

    def start_running(self, run):
        """perf beside the held target, its events enabled through its
        control FIFO and live at its ack (perf opens both FIFOs read-write
        and non-blocking, so "enable" can wait in the FIFO before it runs)."""
        ctl, ack = (os.path.join(run.scratch, f) for f in ("perf.ctl", "perf.ack"))
        for f in (ctl, ack):
            os.mkfifo(f)
        fds = run.state.control = [os.open(ctl, os.O_RDWR)]  # (detach closes what is open)
        fds.append(os.open(ack, os.O_RDONLY | os.O_NONBLOCK))
        os.write(fds[0], b"enable\n")
        heard = []

        def acked(_live):
            try:
                heard.append(os.read(run.state.control[1], 64))
            except BlockingIOError:
                pass
            return b"ack" in b"".join(heard)
        who = ["-a"] if run.workload.by_path else ["-p", str(run.target_pid)]
        self.start_live(run, [*self.command(run), *who, "-D", "-1",
                              "--control", f"fifo:{ctl},{ack}"], acked)

    @staticmethod
    def add_failed(code, out, event):
        """Why `perf probe -a` of EVENT failed: its exit status as perf's
        errno (it exits with -errno: 239 is EEXIST), its own error line
        (tool_error), and, where it says the event already exists, what
        uprobe_events held under that name just after (seen here now and
        then on the sdt-nop10 site in default runs, never in 540 runs of
        the site configurations alone:
        docs/findings/2026-12-01-perf-probe-eexist.md)."""
        name = errno.errorcode.get(256 - code, "") if 0 < code < 256 else ""
        said = tool_error(out)
        why = f"perf probe failed (exit {code}{': ' + name if name else ''})"
        why += f": {said}" if said else ""
        if "already exists" in out:
            held = tracefs.uprobes_named(event)
            why += ("; uprobe_events then held: " + " / ".join(held) if held else
                    "; uprobe_events held no such event just after")
        return why

    @staticmethod
    def command(run):
        """perf stat or record on the run's event, before its target."""
        ev = run.state.event
        if run.cfg.mode == "stat":
            # by path: the event counted twice, in the workload's cgroup
            # (-G applies to the events before it) and in all (cgroups.py)
            apart = ["-G", run.group.name, "-e", ev] if by_cgroup(run) else []
            return ["perf", "stat", "-x,", "-e", ev, *apart, "-o", run.state.data + ".stat"]
        # a probe body's row (configs.BODIES): its own arguments (-g, -m N)
        return ["perf", "record", "-q", "-e", ev, *run.cfg.body.split(), "-o", run.state.data]

    def wrap(self, run, cmd):
        return cmd if run.cfg.attach == "running" else [*self.command(run), "--", *cmd]

    def events(self, run):
        live = self.stop_live(run)
        # perf ends by the signal it was stopped with once it has written
        # its counts (it raises it again on itself at exit)
        if live and live.status not in (0, -signal.SIGINT):
            raise TracerError(f"perf {run.cfg.mode} -p exited with status {live.status}")
        data = run.state.data
        if run.cfg.mode == "stat":
            with open(data + ".stat") as f:
                text = f.read()
            with open(run.log, "a") as f:
                f.write(text)
            grouped = by_cgroup(run)
            counts = stat_counts(text, run.state.event, grouped)
            if None not in counts:
                raise TracerError("perf stat printed no count for the event")
            note = "counted in the kernel (perf stat" + (
                " beside the held target, enabled at its gate)" if live else ")")
            seen, others = counts[None], None
            if grouped:
                if run.group.name not in counts:
                    raise TracerError(f"perf stat printed no count in the cgroup {run.group.name}")
                seen, others = counts[run.group.name], counts[None] - counts[run.group.name]
                note += f"; the workload's in its cgroup (-G {run.group.name}), the rest apart"
            also = None
            if run.workload and run.workload.by_path:  # perf stat -a: every trap, as the kernel's
                also, said = tracefs.profile_witness(run.state.event.split(":")[1], run.build,
                                                     run.threads)
                note += f"; {said}"
            return Events(seen, 0, note, also=also, tracer_cpu_ns=live and live.cpu_ns,
                          others=others, apart=others is not None)
        out = self.sh(["perf", "report", "-i", data, "--stats"], log=run.log, whole=False)
        m = re.search(r"SAMPLE events:\s+(\d+)", out)
        if not m:
            raise TracerError("perf report --stats shows no SAMPLE events")
        distinct = self.distinct_samples(data)
        size = os.path.getsize(data)
        os.unlink(data)  # tens of MB to GB; the count is what we keep
        note = f"perf.data was {size} bytes"
        dup = int(m.group(1)) - distinct
        if dup:
            note += (f"; perf record wrote {dup} duplicate samples (same thread, timestamp and "
                     f"argument), counted once: {m.group(1)} records, {distinct} events")
        return Events(distinct, self.lost_samples(out, run.state.event), note,
                      tracer_cpu_ns=live and live.cpu_ns)

    @staticmethod
    def lost_samples(stats, event):
        """The samples of EVENT perf record lost (its buffer full), from
        `perf report --stats`: the event's own LOST_SAMPLES line, the sum
        of its PERF_RECORD_LOST records.  Not the aggregated `LOST events`,
        which counts those records (2 records can hold 1150 samples)."""
        mine = stats.split(f"{event} stats:", 1)
        m = re.search(r"LOST_SAMPLES events:\s+(\d+)", mine[1]) if len(mine) == 2 else None
        if m:
            return int(m.group(1))
        if re.search(r"^\s*LOST events:\s+[1-9]", stats, re.M):
            raise TracerError("perf record lost samples, and perf report --stats does not say "
                              "how many")
        return 0

    @classmethod
    def distinct_samples(cls, data):
        """Distinct (thread, timestamp, argument) samples in DATA."""
        out = cls.sh(["perf", "script", "-i", data, "-F", "tid,time,trace", "--ns"],
                     timeout=LONG_TIMEOUT_S, stderr=False, whole=False)
        return cls.distinct(out)

    @staticmethod
    def distinct(script):
        """Samples in SCRIPT (perf script's "tid time trace" lines) that are
        not another's copy: perf record writes some twice, the same thread,
        timestamp and argument (a finding)."""
        return len(set(script.splitlines()))

    def detach(self, run):
        try:
            self.stop_live(run)  # (perf first: its event is busy while it runs)
        finally:
            for fd in run.state.take("control") or ():
                os.close(fd)
            group = run.state.group
            run.state.event = None
            if group:  # the run's own group: everything in it, whatever perf printed
                try:
                    if tracefs.group_events(group):
                        self.sh(self.perf("probe", "-d", f"{group}:*"), log=run.log,
                                check=False)
                finally:  # perf hung or failed: the lines go through tracefs all the same
                    for event in tracefs.group_events(group):
                        tracefs.remove_uprobe(group, event)
                left = tracefs.group_events(group)
                if left:  # kept in run.state: the cleanup's second detach tries again
                    raise TracerError(f"perf probe -d {group}:* left {', '.join(left)} defined")
                run.state.group = None


class Attached(Process):
    """make lifecycle's (attached.py): the kit's own uprobe_events lines (as perf probe writes them), opened
    by `perf stat -a` as tracepoints: a perf event per probe and CPU; with a
    pid, `perf stat -p`, and the kernel's filter keeps the breakpoint out
    of every other process."""
    name, path = "perf", "perf-event uprobe per probe and CPU (perf stat)"

    def __init__(self, kit, binary, sites, pid_filter=None, by_tid=False):
        self.kit, self.sites, self.pid_filter, self.by_tid = kit, sites, pid_filter, by_tid
        self.events = ftrace.Attached(kit, binary, sites)
        self.control, self.heard, self.stat = [], [], None

    def start(self):
        """perf stat with its events opened disabled (-D -1) and enabled
        through its control FIFO: the breakpoints are in place at the open,
        before the events count (seen: 1,000 probes, every count 0 where the
        targets were released at the breakpoints), so it is live at its ack."""
        t0 = time.monotonic()
        self.events.define()
        self.stat = self.kit.log("perf-stat")
        ctl, ack = self.stat + ".ctl", self.stat + ".ack"
        for f in (ctl, ack):
            os.mkfifo(f)
        self.control.append(os.open(ctl, os.O_RDWR))
        self.control.append(os.open(ack, os.O_RDONLY | os.O_NONBLOCK))
        os.write(self.control[0], b"enable\n")  # waits in the FIFO until perf reads it
        who = (["-t", ",".join(map(str, tasks(self.pid_filter)))] if self.by_tid
               else ["-p", str(self.pid_filter)] if self.pid_filter else ["-a"])
        self.spawn(["perf", "stat", "-x,", "--no-big-num", "-o", self.stat, *who,
                    "-e", f"{self.events.group}:*", "-D", "-1", "--control", f"fifo:{ctl},{ack}"],
                   self.kit.log("perf"))
        return time.monotonic() - t0

    def ready(self):
        try:
            self.heard.append(os.read(self.control[1], 64))
        except BlockingIOError:
            pass
        return b"ack" in b"".join(self.heard)

    def counts(self):
        got = {}
        with open(self.stat, errors="replace") as f:
            for ln in f:
                cols = ln.strip().split(",")
                if len(cols) > 2 and cols[2].startswith(self.events.group + ":"):
                    got[cols[2].split(":", 1)[1]] = int(cols[0]) if cols[0].isdigit() else 0
        return {n: got.get(self.events.event(n), 0) for n in self.sites.offsets}

    def stop(self, limit):
        try:
            return Process.stop(self, limit)  # perf is gone after it, whatever happened
        finally:
            for fd in self.control:
                os.close(fd)
            self.control = []
            for f in ((self.stat + ".ctl", self.stat + ".ack") if self.stat else ()):
                if os.path.exists(f):
                    os.remove(f)
            self.events.stop(limit)


def by_cgroup(run):
    """Whether perf stat counts RUN's event in the workload's cgroup: where
    it has one, and no cgroup v1 hierarchy holds perf_event (perf -G would
    look for the group there: a hybrid host's)."""
    return bool(run.group) and not cgroups.v1_mounted("perf_event")


def stat_counts(text, event, grouped=False):
    """{cgroup or None: count} of EVENT in perf stat -x,'s TEXT, read by
    meaning: a line is count, unit, event, then (where -G was GROUPED) the
    cgroup's name, empty for the count in all, then its running time and
    share."""
    out = {}
    for line in text.splitlines():
        f = line.split(",")
        if len(f) > 3 and f[2] == event and f[0].isdigit():
            out[(f[3] or None) if grouped else None] = int(f[0])
    return out


BACKEND = Perf()
