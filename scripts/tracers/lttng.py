"""lttng.py: the LTTng-UST tracepoint of the ust build, recorded into a
session of the kit's own: a flight recorder (`--snapshot`, overwrite
mode, snapshot taken when the target ends) or a normal session written
to disk.  Events are counted by babeltrace2's sink.utils.counter; events
the tracer discarded are read from `lttng stop`'s warning; the tracer's
CPU is its daemons' (consumers and session daemon, from /proc) between
start and stop.

The flight recorder is checked exactly, stream by stream (one per CPU):
a stream whose sub-buffers are not all full never wrapped, so every
event it got is in the snapshot; only where a stream is full may older
events have been overwritten.  So a snapshot that misses events while no
stream wrapped is a mismatch, and a gap inside what was kept (babeltrace2's
discarded events or packets) is a loss.

A session daemon is needed: one already running is used and left alone;
otherwise `lttng-sessiond --daemonize --no-kernel` is started in setup,
in a cgroup of the kit's own (`kit<id>_0`, cgroups.py), and stopped in
teardown with everything it spawned: its consumer daemons and run-as
helpers, which outlive a killed session daemon, are stopped as that
group's processes, never found by their name (a dead kit's group is
leftovers.py's).  Where no cgroup can be made (no cgroup2 mount), what
it spawned is followed by pid and start time from the kit's daemon down.
Every `lttng` command runs with --no-sessiond,
so the client never starts a daemon behind the kit's back; if the daemon
the kit started dies mid-matrix, the run in progress fails saying so and
the kit starts (and at the end stops) a new one for the runs after it.
"""
import os
import re
import shutil
import signal
import tempfile
from dataclasses import dataclass

import cgroups
import kitstate
from host import say, wait_for
from procs import live, proc_stat
from .base import LONG_TIMEOUT_S, Events, RunState, Tracer, TracerError

SUBBUF_SIZE, NUM_SUBBUF = "1M", 8
CHANNEL = ["--subbuf-size", SUBBUF_SIZE, "--num-subbuf", str(NUM_SUBBUF)]
DAEMON_STOP_S = 5  # for the session daemon the kit started to exit after SIGTERM


def daemons_cpu_ns(group=None):
    """(user, system) ns used so far by the LTTng daemons: the consumers,
    which move the tracepoints' buffers out of the traced process, and the
    session daemon: the processes of the kit's GROUP, else (a daemon the
    kit did not start) those the names say (read, nothing done to them)."""
    tick = 1e9 / os.sysconf("SC_CLK_TCK")
    daemons = ([(p, st[1]) for p in group.pids() if (st := proc_stat(p))] if group else
               live("lttng-consumerd") + live("lttng-sessiond"))
    return (sum(int(int(f[11]) * tick) for _, f in daemons),
            sum(int(int(f[12]) * tick) for _, f in daemons))


def sessiond_pids():
    """Live session daemons (a killed one may stay a zombie a while)."""
    return {pid for pid, _ in live("lttng-sessiond")}


def same_start(pid, start):
    """PID is alive (not a zombie) and the process that started at START."""
    st = proc_stat(pid)
    return bool(st) and st[1][0] != "Z" and st[1][19] == start


def family(pids):
    """{pid: start time} of the live processes below PIDS: the consumer
    daemons and run-as helpers a session daemon spawns, which outlive it
    when it is killed."""
    kids = {}
    for pid, f in live():
        kids.setdefault(int(f[1]), []).append((pid, f[19]))
    out, todo = {}, list(pids)
    while todo:
        for c, start in kids.get(todo.pop(), []):
            out[c] = start
            todo.append(c)
    return out


def count(trace_dir, log):
    """babeltrace2's counter over TRACE_DIR: {message kind: count}; the
    counter prints running totals as it goes, the last are final."""
    out = Tracer.sh(["babeltrace2", trace_dir, "-c", "sink.utils.counter"], log=log,
                    timeout=LONG_TIMEOUT_S, whole=False)
    counts = {}
    for n, kind in re.findall(r"^\s*(\d+) (\w[\w ]*?) messages?$", out, re.M):
        counts[kind] = int(n)
    if "Event" not in counts:
        raise TracerError("babeltrace2 counted no event messages")
    return counts


@dataclass
class State(RunState):
    """What one run of this back-end keeps between its verbs."""
    dir: str = None  # the session's output
    session: str = None  # the session's name, once created
    cpu0: tuple = None  # the daemons' (user, system) ns at start


class Lttng(Tracer):
    name = "lttng"
    uprobes = False
    State = State
    needs = {"lttng": "lttng-tools", "lttng-sessiond": "lttng-tools",
             "babeltrace2": "babeltrace2"}
    versions = ("lttng", "babeltrace2")

    def __init__(self):
        self.started = set()
        self.helpers = {}  # pid: start time, of what the daemons the kit started spawned
        self.group = None  # the cgroup its daemons run in (cgroups.Group), once one started
        self.log = None

    def skip_reason(self, cfg, workload=None):
        if cfg.workload:
            return ("LTTng-UST records the tracepoints a program was built with (its own "
                    "provider, lttng_ust_tracepoint()); a program someone else built has SDT "
                    "markers, which LTTng does not attach to")
        return None

    def available(self):
        return self.need_commands()

    def setup(self, log):
        self.log = log
        if sessiond_pids():
            return
        self.start_daemon(say)

    def start_daemon(self, say):
        if self.group is None:
            self.group, why = cgroups.make(kitstate.run_tag(kitstate.kit_id(os.getpid()), 0))
        before = sessiond_pids()
        cmd = ["lttng-sessiond", "--daemonize", "--no-kernel"]
        if self.group:  # the shell joins the group, then becomes the daemon
            cmd = ["sh", "-c", 'echo $$ > "$1" && shift && exec "$@"', "sh",
                   os.path.join(self.group.path, "cgroup.procs"), *cmd]
        self.sh(cmd, log=self.log)
        new = ({p for p in self.group.pids() if (proc_stat(p) or ("",))[0] == "lttng-sessiond"}
               if self.group else sessiond_pids() - before) - self.started
        self.started |= new
        say(f"lttng: started lttng-sessiond (pid {' '.join(map(str, sorted(new)))}); "
            "it is stopped at the end")

    def teardown(self):
        self.helpers.update(family(self.started))
        for pid in self.started:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            wait_for(lambda: pid not in sessiond_pids(), DAEMON_STOP_S)
        self.started = set()
        if self.group:  # what they spawned and left: the group's processes
            group, self.group, self.helpers = self.group, None, {}
            group.remove()
            return
        # no group: what they spawned and left (a daemon killed mid-run leaves its
        # consumer daemon running), the same pid started at the same time
        for sig in (signal.SIGTERM, signal.SIGKILL):
            left = [pid for pid, start in self.helpers.items() if same_start(pid, start)]
            for pid in left:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            if not left or wait_for(lambda: not any(same_start(p, self.helpers[p])
                                                    for p in left), DAEMON_STOP_S):
                break
        self.helpers = {}

    def lttng(self, run, *args):
        return self.sh(["lttng", "--no-sessiond", *args], log=run.log)

    def attach(self, run):
        if self.started and not self.started & sessiond_pids():
            # The daemon the kit started died (the run it was in failed
            # saying so): start another, which teardown stops too.
            self.started = set()
            with open(run.log, "a") as f:
                self.start_daemon(lambda m: f.write(f"{m} (the one before died)\n"))
        out = run.state.dir = os.path.join(run.scratch, "lttng-trace")
        snap = run.cfg.mode == "snapshot"
        self.lttng(run, "create", run.tag, "--output", out, *(["--snapshot"] if snap else []))
        run.state.session = run.tag
        self.lttng(run, "enable-channel", "-u", "-s", run.tag, *CHANNEL,
                   *(["--overwrite"] if snap else []), "kitch")
        self.lttng(run, "enable-event", "-u", "-s", run.tag, "-c", "kitch",
                   "benchmark:single_trace")
        self.lttng(run, "start", run.tag)
        self.helpers.update(family(self.started))  # its consumer daemon is there now
        run.state.cpu0 = daemons_cpu_ns(self.group)

    def events(self, run):
        stop = self.lttng(run, "stop", run.tag)
        u0, s0 = run.state.take("cpu0")
        u1, s1 = daemons_cpu_ns(self.group)
        discarded = sum(int(x) for x in re.findall(r"(\d+) events? (?:were|was) discarded", stop))
        cpu = (u1 - u0, s1 - s0)
        # Its loss in one unit, events: `lttng stop`'s count of discarded
        # events; babeltrace2's "Discarded event" is a count of messages
        # (each standing for some events), said beside it, never added.
        if run.cfg.mode != "snapshot":
            c = count(run.state.dir, run.log)
            msgs = c.get("Discarded event", 0)
            return Events(c["Event"], discarded,
                          f"babeltrace2 saw {msgs} discarded-events messages" if msgs else "",
                          tracer_cpu_ns=cpu)
        self.lttng(run, "snapshot", "record", "-s", run.tag)
        seen, full, streams, gaps = 0, 0, 0, 0
        for d, _, files in os.walk(run.state.dir):
            for f in sorted(files):
                if f.startswith("kitch_"):
                    c = self.count_stream(d, f, run.log)
                    seen += c["Event"]
                    streams += 1
                    full += c.get("Packet beginning", 0) >= NUM_SUBBUF
                    gaps += c.get("Discarded event", 0) + c.get("Discarded packet", 0)
        note = (f"flight recorder: {full} of {streams} per-CPU streams full "
                f"({NUM_SUBBUF} x {SUBBUF_SIZE} sub-buffers each); "
                + ("older events overwritten there" if full else "nothing overwritten"))
        if gaps:
            note += (f"; {gaps} discarded-events/packets messages inside the snapshot (gaps "
                     "among the events it kept)")
        # a snapshot with gaps inside is no clean flight recorder: not `overwritten`
        return Events(seen, discarded, note, wrapped=None if gaps else full > 0,
                      tracer_cpu_ns=cpu)

    @staticmethod
    def count_stream(d, stream, log):
        """Counts of one stream file of the trace in D (with its metadata)."""
        with tempfile.TemporaryDirectory(prefix="kit-stream-") as one:
            for f in ("metadata", stream):
                os.symlink(os.path.join(d, f), os.path.join(one, f))
            return count(one, log)

    def detach(self, run):
        s = run.state.take("session")
        if s:
            self.sh(["lttng", "--no-sessiond", "destroy", s], log=run.log, check=False)
        d = run.state.take("dir")
        if d:
            shutil.rmtree(d, ignore_errors=True)


BACKEND = Lttng()
