"""bpftrace.py: `bpftrace -c TARGET` with a uprobe on single_trace's entry
or a usdt probe on its marker, counting only or storing a timestamp and
the argument per event.  Counts use count(), a per-CPU map, so threads
do not contend and no update is lost.  bpftrace writes to its own file
(-o) so the target's JSON record stays alone on stdout.

On a real program's row (attach "running", workloads.py) bpftrace is
started beside the held target, `bpftrace -p PID`, as a user attaches to a
program that runs already: bcc attaches its usdt probe for that process
alone and raises the marker's semaphore there.  Its probes are live when
its BEGIN probe has printed (bpftrace fires BEGIN after attaching every
other probe; its stdout, a file, is written at once, where -o's is kept in
a buffer until it exits); the target is released then, and bpftrace is
stopped with SIGINT, as at a terminal, once the target has ended.
"""
import os
import re
import time
from dataclasses import dataclass

import userscript
from bodies import BPF_PRINTF
from configs import SCRIPT_MODE

from . import tracefs
from .attached import LIVE_LIMIT_S, POLL_S, Process, TracerGone, held_links
from .base import (LIVE_LINE, LOG_TAIL, Events, RunState, Tracer, TracerError, script_events,
                   start_script)

COUNT = "@events = count();"
# A by-path probe's count keyed by the process's cgroup v2 id (the same
# per-CPU map, one more helper call an event): the workload's cgroup's
# (cgroups.py) apart from every other process's.
BY_CGROUP = "@events[cgroup] = count();"
HANDLERS = {
    "nothing": "",  # the trap and an empty program: no count to check
    "count": COUNT,
    # (a return probe's record keeps the return value's register, retval)
    "record-return": f"@ts[tid] = nsecs; @arg[tid] = retval; {COUNT}",
    "record": f"@ts[tid] = nsecs; @arg[tid] = arg0; {COUNT}",
}


PRINTF_WITNESS = "events bpftrace counted in the kernel (@events)"
# A line a printf body (bodies.BODIES) printed: the event's argument
PRINTED = re.compile(r"^\d+$")


@dataclass
class State(RunState):
    """What one run of this back-end keeps between its verbs."""
    out: str = None  # bpftrace's -o file


class Bpftrace(Tracer):
    name = "bpftrace"
    State = State
    attaches_running = True  # bpftrace -p PID
    needs = {"bpftrace": "bpftrace"}
    versions = ("bpftrace",)
    # bpftrace (0.11 to at least Debian's 0.17, bpftrace PR 1238) starts a
    # -c child under PTRACE_TRACEME when its script has a usdt probe, so
    # the child stops after execve with its binary mapped, and only then
    # attaches (bcc, a uprobe for that pid: "to PID: N" in its errors).  The
    # kernel sees a probe registered on a mapped binary, as in "running":
    # a site uprobe_init_insn() rejects is refused (error 524), where
    # ftrace and perf, registered before the binary is mapped, never fire.
    # bpftrace 0.17 prints this on every run here, traced fine or not; a
    # failure's reason quotes bcc's own lines instead: "cannot attach
    # uprobe, Invalid argument" (its tracefs fallback's name over the
    # kernel's 64 characters), "open(.../uprobe_events): No such file"
    # (no tracefs), or "perf_event_open(...): Unknown error 524".
    log_noise = ("couldn't set RLIMIT_MEMLOCK",)
    marker_order = "running"
    marker_order_why = ("bpftrace -c holds its child under ptrace after execve and attaches "
                        "usdt probes to the mapped binary")

    def available(self):
        return self.need_commands() or self.need_root()

    @staticmethod
    def quoted(path):
        """PATH in bpftrace's grammar: a quoted string (unquoted, a `+` or a
        `-` in it is an operator: "syntax error, unexpected ++" on
        libstdc++.so.6); path_problem() refuses what a quote cannot hold."""
        return f'"{path}"'

    def path_problem(self, path):
        bad = sorted({c for c in path if c == '"' or c == "\\" or not c.isprintable()})
        if bad:
            return (f"bpftrace cannot name {path!r} in a probe: its quoted path holds no "
                    f"{' or '.join(repr(c) for c in bad)}")
        return None

    @classmethod
    def program(cls, run):
        path = cls.quoted(run.build)
        if run.workload:
            probe = f"usdt:{path}:{run.workload.provider}:{run.cfg.marker}"
            body = HANDLERS[run.cfg.action]
            if run.group:  # by path: the count keyed by cgroup, the workload's apart
                body = body.replace(COUNT, BY_CGROUP)
            return f'BEGIN {{ printf("{LIVE_LINE}\\n"); }} {probe} {{ {body} }}'
        if run.cfg.probe == "function":
            probe = f"uprobe:{path}:single_trace"
        elif run.cfg.probe == "return":
            probe = f"uretprobe:{path}:single_trace"
        else:
            probe = f"usdt:{path}:benchmark:single_trace"
        # a probe body's row (bodies.BODIES): its own statements
        return f"{probe} {{ {run.cfg.body or HANDLERS[run.cfg.action]} }}"

    def attach(self, run):
        if run.cfg.attach != "running":
            return  # wrap() runs it, with the target
        if run.cfg.mode == SCRIPT_MODE:  # the user's own, as written (userscript.py)
            prog = userscript.runnable(run.cfg.script, self.name, run.scratch, LIVE_LINE)
            start_script(self, run, ["bpftrace", prog], prog)
            return
        pid = [] if run.workload.by_path else ["-p", str(run.target_pid)]
        self.start_live(run, ["bpftrace", *pid, "-e", self.program(run)],
                        lambda live: live.printed(LIVE_LINE))

    def wrap(self, run, cmd):
        if run.cfg.attach == "running":
            return cmd
        if any(" " in c for c in cmd):
            raise TracerError("bpftrace -c splits its command at spaces; move the kit to a "
                              "path without spaces")
        run.state.out = run.scratch + "/bpftrace.out"
        run.env.update(e.split("=", 1) for e in run.cfg.env)  # (bpftrace's, and the target's)
        return ["bpftrace", "-o", run.state.out, "-e", self.program(run),
                "-c", " ".join(cmd)]

    def events(self, run):
        live = self.stop_live(run)
        if run.cfg.mode == SCRIPT_MODE:
            return script_events(self, run, live)
        out, printed = self.read_out(live.out if live else run.state.out)
        with open(run.log, "a") as f:
            f.write(out[-LOG_TAIL:])
        nothing = not HANDLERS[run.cfg.action]
        others = None
        if run.group and not nothing:
            # @events[CGROUP ID]: N, a line per cgroup that fired; an empty
            # keyed map prints nothing (no event anywhere: its exit status,
            # checked below, says it ended as asked)
            by = {int(k): int(v) for k, v in re.findall(r"^@events\[(\d+)\]: (\d+)$", out, re.M)}
            seen, others = by.pop(run.group.id, 0), sum(by.values())
        else:
            m = re.search(r"^@events: (\d+)$", out, re.M)
            if not m and not nothing:
                raise TracerError("bpftrace printed no @events count")
            seen = int(m.group(1)) if m else None
        lost = sum(int(x) for x in re.findall(r"Lost (\d+) events", out))
        if not live:
            if BPF_PRINTF not in run.cfg.body:
                return Events(seen, lost)
            # a printf body: what reached bpftrace's output, beside its count
            # and what it said it lost (perf buffer or ring buffer)
            return Events(printed, lost, f"{printed} printf lines reached its output file, "
                                         f"{lost} events it said lost",
                          also=(PRINTF_WITNESS, seen))
        if live.status != 0:
            raise TracerError(f"bpftrace -p exited with status {live.status} at its SIGINT")
        how = "every process mapping it" if run.workload.by_path else f"-p {run.target_pid}"
        return Events(seen, lost, ("its probe records nothing, so nothing counts its events; "
                                   if nothing else "") + f"bpftrace on {how}, started beside "
                      "the held target; its probes live at its BEGIN" + (
                          f"; its count keyed by cgroup (the workload's is {run.group.id})"
                          if others is not None else ""),
                      tracer_cpu_ns=live.cpu_ns, others=others,
                      apart=others is not None)

    @staticmethod
    def read_out(path):
        """(bpftrace's output less a printf body's lines, how many of those
        there were): a printf of every event writes millions of lines (the
        body rows': a number each), read a line at a time and counted;
        the file is removed (its count is what the kit keeps)."""
        kept, printed = [], 0
        with open(path, errors="replace") as f:
            for line in f:
                if PRINTED.match(line):
                    printed += 1
                else:
                    kept.append(line)
        if printed:
            os.unlink(path)
        return "".join(kept), printed

    def detach(self, run):
        self.stop_live(run)


class Attached(Process):
    """make lifecycle's (attached.py): usdt probes by the binary's path, a count per probe.  Its attach
    path is read from what it holds (held_links), not assumed: bpftrace
    0.17 (bcc) attaches each as a perf-event uprobe with its own program;
    a newer one may take one uprobe_multi link where the kernel has it."""
    name, path = "bpftrace", "perf-event uprobe per probe"

    def __init__(self, kit, binary, sites, pid_filter=None, by_pid=False):
        self.kit, self.sites = kit, sites
        self.pid_filter, self.by_pid = pid_filter, by_pid
        names = sorted(sites.offsets)
        self.glob = names[0] if len(names) == 1 else "site_*"
        self.attaching = None

    def start(self):
        test = f"/pid == {self.pid_filter}/ " if self.pid_filter and not self.by_pid else ""
        # BEGIN fires once every other probe is attached and enabled
        prog = (f'BEGIN {{ printf("{LIVE_LINE}\\n"); }} '
                f"usdt:{self.sites.binary}:{self.sites.provider}:{self.glob} {test}"
                "{ @[probe] = count(); }")
        n = len(self.sites.offsets) + 10
        env = dict(os.environ, BPFTRACE_MAX_PROBES=str(n), BPFTRACE_MAX_BPF_PROGS=str(n))
        cmd = ["bpftrace", *(["-p", str(self.pid_filter)] if self.by_pid else []), "-e", prog]
        t0 = time.monotonic()
        self.spawn(cmd, self.kit.log("bpftrace"), env)
        # bpftrace 0.17 and 0.23 say "Attaching N probes..." once compiled
        # and loaded, before the attach: its start-up; 0.27.1 says only
        # "Attached N probes" after it, so there the start-up is not told
        # apart (None).
        while not (said := re.search(r"^Attach(ing|ed) \d+ probe", self.said(), re.M)):
            self.gone_why()
            if time.monotonic() - t0 > LIVE_LIMIT_S:
                raise TracerGone(f"bpftrace said nothing of attaching in {LIVE_LIMIT_S} s")
            time.sleep(POLL_S)
        return time.monotonic() - t0 if said.group(1) == "ing" else None

    def ready(self):
        return LIVE_LINE in self.said()

    def taken(self):
        """The attach path it took, from its fds once live."""
        held = held_links(self.proc.pid)
        if held.get("uprobe_multi link"):
            return f"uprobe_multi link ({held['uprobe_multi link']} held)"
        return f"{self.path} ({held.get('perf_event', 0)} perf events held)"

    def stop(self, limit):
        try:
            return Process.stop(self, limit)
        finally:  # what bcc leaves in uprobe_events when it fails or is killed
            if self.proc:
                tracefs.remove_leftovers(self.sites.binary, [self.proc.pid], self.kit.tracefs)

    def counts(self):
        """After stop(): its maps, printed as it ended."""
        got = {}
        for m in re.finditer(rf"^@\[usdt:[^\]]*:{self.sites.provider}:(\w+)\]: (\d+)$",
                             self.said(), re.M):
            got[m.group(1)] = int(m.group(2))
        return {n: got.get(n, 0) for n in self.sites.offsets}


BACKEND = Bpftrace()
