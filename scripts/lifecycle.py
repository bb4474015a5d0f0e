#!/usr/bin/env python3
"""lifecycle.py: `make lifecycle`: what a probe costs before, after and
beside the traced program, on this machine's kernel, in ns of its clock
(in make lab's guests, `make lab LIFECYCLE=1`: of the guest's clock under
QEMU's -icount, UNIT=instructions, never set beside the host's).

    make lifecycle                              # PROBES=1,10,100,1000 PROCS=1,10,100
    make lifecycle PROBES=1,10 PROCS=1 TRACERS=ftrace
    python3 scripts/report.py results/latest    # the report again

Attach and detach (the lifecycle runs): for each tracer, PROCS held
targets of a sites-N build (src/builds.tsv: N distinct markers) are
started, the tracer attaches to every site by the binary's path, and the
kit times, from the tracer's start, until every site in every process
holds the breakpoint (read from the process's own memory, /proc/PID/mem:
the kernel writes int3 there when a uprobe is live); a process started
then says whether a late one is covered; every process fires every site
once and the tracer's count is checked; then, from the stop, until every
site in every process is back to its own byte, the tracer has exited and
uprobe_events holds nothing of the kit's.  A detach past DETACH_LIMIT_S
is killed, and its row says so.  Against the number of sites (PROBES, one
process) and of processes (PROCS, the 1-site build).

The bystanders: build/libkit-bystander.so's marker, probed in one process
(the traced one) in each way a tracer filters by pid (WAYS below), is timed
in another process that maps the library untraced: its cost per call
against the same process with no tracer at all, with Welch's interval,
and its own user and system time per call (where the trap's time goes).

Each cell's first cycle is a pilot, not counted: it fixes how many more
fit in CELL_S (at most REPEATS), so nothing it measured decides which
cycles count; a cell whose pilot took longer than CELL_S keeps the pilot
as its one cycle.  A cell of n >= 6 cycles gets the median's 95% interval
from order statistics (stats.median_ci); fewer, [min, max] with what it
holds (stats.median_ci says).  The folder, results/<stamp>-lifecycle/,
holds lifecycle.csv, bystander.csv, meta.json and logs/, and the report.
Needs root, tracefs, and the tracers (installed as make run does unless
NO_INSTALL=1; one that is missing is skipped, saying why).
"""
import csv
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import configs  # noqa: E402
import elfinfo  # noqa: E402
import host  # noqa: E402
import kitlock  # noqa: E402
import leftovers  # noqa: E402
import params  # noqa: E402
import record  # noqa: E402
from host import ROOT, Interrupted, say  # noqa: E402
from render.lifecycle import (BASELINE_WAY, BY_COLUMNS, BYSTANDER_CSV, KIND,  # noqa: E402
                              LC_COLUMNS, LIFECYCLE_CSV, clock)
from tracers import tracefs  # noqa: E402
from tracers.base import LIVE_LINE, TracerError  # noqa: E402
from tracers.stap import Stap as StapBackend  # noqa: E402

BUILD = os.path.join(ROOT, "build")
LIBRARY = os.path.join(BUILD, "libkit-bystander.so")
LIB_BUILD, LIB_MARKER = "lib", "lib_call"
INT3 = 0xCC
POLL_S = 0.002  # between two reads of every site
LIVE_LIMIT_S = 600  # s from a tracer's start to its probes live: past it the row fails
# s the kernel may take, once the tracer has exited or been killed, to take
# the breakpoints out: a killed tracer's perf events still unregister one by
# one as its files close (~0.1 s a probe here), so GONE_S + GONE_PER_SITE_S a
# site.  Past it, what is still int3 is said in the row.  (Seen on 6.18: a
# bpftrace killed mid-detach left one of 100 sites int3 in every held process
# for good, its uprobe gone; the kit's targets then end, taking it with them.)
GONE_S, GONE_PER_SITE_S = 5, 0.3
MAX_PROCS = 200
PROC_SITES = 1  # the sites-N build of the process sweep
# the guarded cell's build and its marker's provider: the sdt-guarded build's
# marker under its semaphore, 1 process and a late one (is it raised in each?)
GUARDED = ("sdt-guarded", "benchmark")
STOP_S = 10  # s a tracer has to detach once the kit is stopped (then killed)
END_S = 10  # s the held targets have to end once released, all together
TRACED_CALLS = 1000  # the bystander run's traced process: its calls, counted


def builds_used():
    """The builds of src/builds.tsv that make lifecycle runs (no configuration's)."""
    return {*site_builds().values(), LIB_BUILD, GUARDED[0]}


def site_builds():
    """{N: build name} of the sites-N builds (src/builds.tsv)."""
    return {int(m.group(1)): b for b in configs.builds()
            if (m := re.fullmatch(r"sites-(\d+)", b))}


def counts_of(name, allowed=None, lo=1, hi=None):
    """A comma list of whole numbers, each in ALLOWED (or LO..HI)."""
    want = (", ".join(map(str, sorted(allowed))) if allowed else f"{lo}..{hi}")

    def parse(text):
        try:
            got = [int(x) for x in text.split(",")]
        except ValueError:
            got = None
        if not got or any((x not in allowed) if allowed else not lo <= x <= hi for x in got):
            raise params.argparse.ArgumentTypeError(
                f"{name} '{text}' is not allowed: want comma-separated counts among {want}"
                + (" (the sites-N builds of src/builds.tsv)" if allowed else ""))
        return sorted(set(got))
    return parse


def names_of(name, allowed):
    def parse(text):
        got = [x for x in text.split(",") if x]
        if not got or any(x not in allowed for x in got):
            raise params.argparse.ArgumentTypeError(
                f"{name} '{text}' is not allowed: want comma-separated names among "
                + ", ".join(allowed))
        return list(dict.fromkeys(got))
    return parse


TRACERS = ("ftrace", "bpftrace", "perf", "stap")  # CLASSES below: a class each
BYSTANDER_ONLY = {"stap"}  # its target() is a bystander way; it runs no lifecycle sweep
Param = params.Param
PARAMS = [
    Param("PROBES", counts_of("PROBES", site_builds()), sorted(site_builds()),
          "probe sites, each count a sites-N build", ",".join(map(str, sorted(site_builds())))),
    Param("PROCS", counts_of("PROCS", lo=1, hi=MAX_PROCS), [1, 10, 100],
          f"held processes mapping the {PROC_SITES}-site build", "1,10,100"),
    Param("TRACERS", names_of("TRACERS", TRACERS), list(TRACERS),
          "the tracers of the lifecycle and bystander runs", ",".join(TRACERS)),
    Param("REPEATS", params.int_in("REPEATS", 1, 100), 6,
          "the most counted cycles of a cell (6 or more: a 95% interval of the median)"),
    Param("CELL_S", params.seconds_in("CELL_S", 0, 3600), 20.0,
          "a cell's counted cycles are as many as fit this, by its pilot (at most REPEATS)"),
    Param("DETACH_LIMIT_S", params.seconds_in("DETACH_LIMIT_S", 1, 3600), 300.0,
          "seconds a tracer may take to detach before it is killed (its row says so)"),
    Param("BY_CALLS", params.int_in("BY_CALLS", 1000, 10 ** 9), 200000,
          "the untraced process's calls in a bystander run"),
    Param("BY_RUNS", params.int_in("BY_RUNS", 2, 100), 5,
          "bystander runs of each way, and of the untraced process with no tracer before it"),
    params.BY_NAME["NO_INSTALL"],
    params.BY_NAME["LOCK_WAIT_S"],
]
NEEDS = {"bpftrace": "bpftrace", "perf": "linux-perf", "stap": "systemtap"}  # a tracer's command: its package


def parse_args(argv):
    p = params.Parser(prog="lifecycle.py", description=__doc__.split("\n\n")[0])
    params.add(p, PARAMS)
    p.add_argument("--results", default=os.path.join(ROOT, "results"), metavar="DIR")
    p.add_argument("--no-report", action="store_true", help="do not run scripts/report.py")
    p.add_argument("--no-bystanders", action="store_true", help="the lifecycle runs only")
    p.add_argument("--lab-modules", metavar="DIR", help="make lab's guests: the folder of the "
                   "modules the lab built beforehand, the stap way's among them")
    # make lab's guests alone: their clock (instructions under -icount), which
    # the report names; not a variable, so a host's run is never called so
    p.add_argument("--unit", choices=record.UNITS, default=record.NS, help=params.argparse.SUPPRESS)
    p.add_argument("--vars", action="store_true",
                   help="print the variables, one NAME=default a line, and exit (for make)")
    a = p.parse_args(argv)
    params.fill(a, PARAMS)
    return a


# -- a process's own bytes -------------------------------------------------------
class Sites:
    """Where the sites of BINARY lie in each process that maps it, and the
    byte each holds now (int3 where a uprobe is live)."""

    def __init__(self, binary, names=None, provider="kit"):
        self.binary, self.provider = os.path.realpath(binary), provider
        elf = elfinfo.Elf(self.binary)
        notes = [n for n in elf.sdt_notes() if n.provider == provider
                 and (names is None or n.name in names)]
        self.offsets = {n.name: elf.file_offset(n.pc) for n in notes}
        # a guarded marker's semaphore, as a file offset (the kernel's
        # reference counter: uprobe_events' "(0x...)"), else None
        self.semaphores = {n.name: elf.file_offset(n.semaphore) if n.semaphore else None
                           for n in notes}
        self.original = {n: elf.data[o] for n, o in self.offsets.items()}
        self._addr = {}  # pid: {name: address}

    def mapped_at(self, pid, offsets, executable):
        """{name: address in PID} of OFFSETS ({name: file offset}) in the
        binary's mappings (EXECUTABLE: those alone, where uprobes write);
        names no mapping holds are left out."""
        maps = []
        with open(f"/proc/{pid}/maps") as f:
            for ln in f:
                cols = ln.split()
                if len(cols) >= 6 and (not executable or "x" in cols[1]) and \
                        os.path.realpath(cols[5]) == self.binary:
                    lo, hi = (int(x, 16) for x in cols[0].split("-"))
                    maps.append((lo, hi, int(cols[2], 16)))
        return {name: lo + off - moff for name, off in offsets.items()
                for lo, hi, moff in maps if moff <= off < moff + hi - lo}

    def semaphore(self, pid, name):
        """The value of NAME's semaphore (2 bytes) in PID's memory, from the
        binary's mapping that holds its file offset; None if it has none."""
        off = self.semaphores.get(name)
        if off is None:
            return None
        at = self.mapped_at(pid, {name: off}, executable=False)
        if name not in at:
            raise RuntimeError(f"pid {pid} maps no page of {self.binary} at its semaphore")
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as m:
            m.seek(at[name])
            return int.from_bytes(m.read(2), "little")

    def addresses(self, pid):
        if pid not in self._addr:
            got = self.mapped_at(pid, self.offsets, executable=True)
            if len(got) != len(self.offsets):
                return None  # not mapped yet
            self._addr[pid] = got
        return self._addr[pid]

    def trapped(self, pid):
        """How many of the sites hold int3 in PID (None: not mapped)."""
        addr = self.addresses(pid)
        if addr is None:
            return None
        n = 0
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as f:
            for name, a in addr.items():
                f.seek(a)
                b = f.read(1)[0]
                if b == INT3:
                    n += 1
                elif b != self.original[name]:
                    raise RuntimeError(f"{name} in pid {pid} holds {b:#x}, neither its own "
                                       f"byte {self.original[name]:#x} nor int3")
        return n


class Targets:
    """Held targets of BUILD (--hold --linger, 1 thread, CALLS calls each),
    started in a session of their own; stop() ends them all, whatever
    state they are in (it closes their stdin, then kills what is left)."""

    ALL = []  # every Targets made: Kit.cleanup ends what is left of each

    def __init__(self, build, calls=1):
        self.binary = os.path.join(BUILD, f"benchmark-{build}")
        self.calls, self.procs = calls, []
        Targets.ALL.append(self)

    def start(self, n=1):
        new = []
        for _ in range(n):
            p = subprocess.Popen([self.binary, "--threads", "1", "--iterations", str(self.calls),
                                  "--hold", "--linger", "--quiet"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, start_new_session=True,
                                 preexec_fn=host.default_signals)
            self.procs.append(p)
            new.append(p)
        return new

    def mapped(self, sites, procs):
        """Waits until each of PROCS maps the binary (it is held then)."""
        for p in procs:
            if not host.wait_for(lambda: p.poll() is not None or sites.addresses(p.pid), 10):
                raise RuntimeError(f"target {p.pid} did not map {self.binary} in 10 s")
            if p.poll() is not None:
                raise RuntimeError(f"target {p.pid} ended before its release ({p.returncode})")

    def release(self, procs):
        """Each of PROCS makes its calls: its record, read back."""
        recs = []
        for p in procs:
            p.stdin.write(b"x")
            p.stdin.flush()
        for p in procs:
            recs.append(record.target_record(p.stdout.readline().decode())[0])
        return recs

    def end(self, procs):
        """PROCS end: their stdin closed (the release from --linger), then
        one shared deadline, then SIGKILL to each one's own session."""
        with host.deferred():
            for p in procs:
                if p.stdin and not p.stdin.closed:
                    try:
                        p.stdin.close()
                    except BrokenPipeError:  # it is gone already
                        pass
            deadline = time.monotonic() + END_S
            for p in procs:
                try:
                    p.wait(timeout=max(0.01, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    p.wait()
                if p.stdout:
                    p.stdout.close()
                self.procs.remove(p)

    def stop(self):
        self.end(list(self.procs))


def wait_sites(sites, pids, want, limit):
    """Seconds until every site of every pid reads WANT (all: int3, or
    none), polling; None past LIMIT."""
    t0 = time.monotonic()
    total = len(sites.offsets)
    while True:
        host.check_signalled()
        if all(sites.trapped(pid) == (total if want else 0) for pid in pids):
            return time.monotonic() - t0
        if time.monotonic() - t0 > limit:
            return None
        time.sleep(POLL_S)


def tasks(pid):
    """The thread ids of PID (a held target's threads all exist)."""
    return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))


def session_of(pid):
    """PID's session id, or None where it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[4])
    except (OSError, IndexError, ValueError):
        return None


def held_links(pid):
    """What process PID holds to the kernel, from its fds: {"perf_event":
    n, and each BPF link's link_type (uprobe_multi, perf_event, ...): n}."""
    got = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            what = os.readlink(f"/proc/{pid}/fd/{fd}")
            if what == "anon_inode:[perf_event]":
                kind = "perf_event"
            elif what == "anon_inode:bpf_link":
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    m = re.search(r"^link_type:\s*(\S+)", f.read(), re.M)
                kind = f"{m.group(1) if m else '?'} link"
            else:
                continue
        except OSError:  # closed meanwhile
            continue
        got[kind] = got.get(kind, 0) + 1
    return got


def vm_hwm_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            m = re.search(r"^VmHWM:\s+(\d+) kB", f.read(), re.M)
        return int(m.group(1)) if m else None
    except OSError:
        return None


# -- the tracers -----------------------------------------------------------------
class TracerGone(Exception):
    """The tracer could not attach or ended early: its reason."""


class Ftrace:
    """uprobe_events lines in a group of the kit's own, enabled together
    (the top buffer is untouched: a kit instance holds the events)."""
    name, path = "ftrace", "trace_uprobe (uprobe_events)"

    def __init__(self, kit, binary, sites, pid_filter=None, pid_only=False):
        self.kit, self.binary, self.sites = kit, binary, sites
        self.group = leftovers.lifecycle_group(os.getpid())
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


class Process:
    """A tracer that is a process of its own: started in a session of its
    own, stopped with SIGINT as at a terminal, killed past the limit."""
    proc = None
    out = None

    def ready(self):
        """The tracer says it records (beyond its breakpoints being in place)."""
        return True

    def stop(self, limit):
        """None, or why it was killed; it is gone when this returns or raises."""
        if not self.proc or self.proc.poll() is not None:
            return None
        try:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=limit)
            return None
        except subprocess.TimeoutExpired:
            self.kill()
            return f"{self.name} did not detach in {limit:g} s (DETACH_LIMIT_S): killed"
        finally:
            self.kill()  # (Ctrl-C during its wait: it goes too)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()

    def spawn(self, cmd, log, env=None, cwd=None):
        self.out = log
        self.proc = subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT,
                                     start_new_session=True, env=env, cwd=cwd,
                                     preexec_fn=host.default_signals)

    def said(self):
        with open(self.out, errors="replace") as f:
            return f.read()

    def gone_why(self):
        if self.proc.poll() is not None:
            tail = [ln for ln in self.said().splitlines() if ln.strip()][-3:]
            raise TracerGone(f"{self.name} exited ({self.proc.returncode}) before its probes "
                             "were live: " + " | ".join(tail))


class Bpftrace(Process):
    """usdt probes by the binary's path, a count per probe.  Its attach
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


class Perf(Process):
    """The kit's own uprobe_events lines (as perf probe writes them), opened
    by `perf stat -a` as tracepoints: a perf event per probe and CPU; with a
    pid, `perf stat -p`, and the kernel's filter keeps the breakpoint out
    of every other process."""
    name, path = "perf", "perf-event uprobe per probe and CPU (perf stat)"

    def __init__(self, kit, binary, sites, pid_filter=None, by_tid=False):
        self.kit, self.sites, self.pid_filter, self.by_tid = kit, sites, pid_filter, by_tid
        self.events = Ftrace(kit, binary, sites)
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


STAP_MODULE = "kit_by_lib"  # make lab's guests: the stap way's module, built beforehand


def stap_script(library, marker):
    """The stap way's script: MARKER of LIBRARY, counted where pid() is target()."""
    return (f'global n; probe begin {{ printf("{LIVE_LINE}\\n") }} '
            f'probe process("{library}").mark("{marker}") '
            '{ if (pid() == target()) n++ } probe end { printf("kit-counted %d\\n", n) }')


class Stap(Process):
    """SystemTap, the traced process picked by a pid test on target()
    (stap -x PID): a bystander way only.  On the host, on the runtime its
    back-end picks (tracers/stap.py: module where modules build and load,
    else bpf), its module named the kit's own, unloaded if a killed stap
    leaves it.  In make lab's guests (--lab-modules), the module the lab
    built beforehand in the chroot, loaded with `staprun -x PID`, or, where
    it could not be built, why not."""
    name = "stap"

    def __init__(self, kit, binary, sites, pid_filter=None):
        self.kit, self.sites, self.pid_filter = kit, sites, pid_filter
        self.prebuilt = kit.args.lab_modules
        if self.prebuilt:
            ko = os.path.join(self.prebuilt, STAP_MODULE + ".ko")
            if not os.path.exists(ko):
                why = os.path.join(self.prebuilt, STAP_MODULE + ".why")
                raise TracerGone("no module built beforehand for this guest: " + (
                    open(why).read().strip() if os.path.exists(why) else f"no {ko}"))
            self.ko, self.module, self.path = ko, STAP_MODULE, "module runtime (built beforehand)"
            return
        self.be = StapBackend()
        why = self.be.pick()
        if why:
            raise TracerGone(f"stap cannot run here: {why}")
        self.path = f"{self.be.runtime} runtime"
        self.module = f"kit_by_{os.getpid()}"

    def start(self):
        t0 = time.monotonic()
        if self.prebuilt:
            self.spawn(["staprun", "-x", str(self.pid_filter), self.ko], self.kit.log("stap"))
            return time.monotonic() - t0
        try:
            self.be.setup(self.kit.log("stap-setup"))
        except TracerError as e:
            raise TracerGone(f"stap: {e}") from e
        script = stap_script(self.sites.binary, next(iter(self.sites.offsets)))
        # in the folder's logs/: where the runtime leaves MODULE.bo or .ko (removed at stop)
        self.spawn(["stap", *self.be.base_flags(), "-m", self.module, "-x",
                    str(self.pid_filter), "-e", script], self.kit.log("stap"), self.be.env(),
                   cwd=self.kit.logs)
        return time.monotonic() - t0

    def ready(self):
        if LIVE_LINE not in self.said():
            return False
        # its session's processes (stapbpf names its uprobes after its own
        # pid, and leaves them if it is killed): all the kit's, in the
        # session it was started in
        self.session = [int(d) for d in os.listdir("/proc") if d.isdigit()
                        and session_of(int(d)) == self.proc.pid]
        return True

    def counts(self):
        m = re.search(r"^kit-counted (\d+)$", self.said(), re.M)
        return {n: int(m.group(1)) if m else 0 for n in self.sites.offsets}

    def stop(self, limit):
        try:
            return Process.stop(self, limit)
        finally:  # a killed staprun leaves its module loaded: the kit's own name
            if self.proc:  # what a killed stapbpf leaves in uprobe_events, by its pid
                tracefs.remove_leftovers(self.sites.binary,
                                         [self.proc.pid, *getattr(self, "session", [])],
                                         self.kit.tracefs)
            for ext in (".bo", ".ko"):
                junk = os.path.join(self.kit.logs, self.module + ext)
                if os.path.exists(junk):
                    os.remove(junk)
            for cmd in (["staprun", "-d", self.module], ["rmmod", self.module]):
                if not os.path.isdir(f"/sys/module/{self.module}"):
                    break
                try:
                    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   timeout=60)
                except (OSError, subprocess.TimeoutExpired) as e:
                    say(f"lifecycle: stap: {cmd[0]} of {self.module}: {e}")


CLASSES = {"ftrace": Ftrace, "bpftrace": Bpftrace, "perf": Perf, "stap": Stap}


# -- the kit ---------------------------------------------------------------------
class Kit:
    def __init__(self, args):
        self.args = args
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        os.makedirs(args.results, exist_ok=True)
        self.dir, n = os.path.join(args.results, f"{stamp}-lifecycle"), 1
        while os.path.exists(self.dir):
            n += 1
            self.dir = os.path.join(args.results, f"{stamp}-lifecycle-{n}")
        self.logs = os.path.join(self.dir, "logs")
        os.makedirs(self.logs)
        self.meta = {"started": record.now(), "kind": KIND, "unit": args.unit,
                     "kernel": os.uname().release,
                     "inputs": {p.name: getattr(args, p.dest) for p in PARAMS},
                     "tracers": {}, "skipped": {}}
        self.write_meta()
        self.tables = {}
        for name, cols in ((LIFECYCLE_CSV, LC_COLUMNS), (BYSTANDER_CSV, BY_COLUMNS)):
            f = open(os.path.join(self.dir, name), "w", newline="")
            w = csv.DictWriter(f, cols)
            w.writeheader()
            f.flush()
            self.tables[name] = (f, w)
        latest = os.path.join(args.results, "latest")
        if os.path.islink(latest) or not os.path.exists(latest):
            tmp = latest + f".{os.getpid()}"
            os.symlink(os.path.basename(self.dir), tmp)
            os.replace(tmp, latest)
        self.tracefs, self.live = None, []  # the tracers started and not yet stopped

    def log(self, name):
        """A new log file for NAME: NAME-K.log, K counting up."""
        self.logged = getattr(self, "logged", 0) + 1
        return os.path.join(self.logs, f"{name}-{self.logged}.log")

    def write_meta(self):
        host.write_json(os.path.join(self.dir, "meta.json"), self.meta)

    def write(self, table, row):
        f, w = self.tables[table]
        w.writerow({k: ("" if v is None else v) for k, v in row.items()})
        f.flush()
        os.fsync(f.fileno())

    def close(self):
        for f, _ in self.tables.values():
            f.close()
        self.meta["ended"] = record.now()
        self.write_meta()

    def tracer(self, name, binary, sites, **kw):
        t = CLASSES[name](self, binary, sites, **kw)
        self.live.append(t)
        return t

    def stop_tracer(self, t, limit):
        """T stopped; it leaves the kit's list only once its stop succeeded
        (else Kit.cleanup tries again).  A signal meanwhile: a short limit."""
        why = t.stop(STOP_S if host.SIGNALLED else limit)
        self.live.remove(t)
        return why

    def cleanup(self):
        """Every tracer and held target of the kit's still there, each tried
        whatever the others did."""
        for t in list(self.live):
            try:
                self.stop_tracer(t, STOP_S)
            except Exception as e:  # noqa: BLE001 (the next one is still undone)
                say(f"lifecycle: {t.name}: could not undo its probes: {e}")
        for targets in Targets.ALL:
            targets.stop()


def undo(kit, t, *targets):
    """Tracer T (if the kit still has it) stopped, then TARGETS ended,
    whatever the stop did; no signal cuts it in half."""
    with host.deferred():
        try:
            if t in kit.live:
                kit.stop_tracer(t, kit.args.detach_limit_s)
        finally:
            for x in targets:
                x.stop()


def cycle(kit, name, sweep, build, nsites, nprocs, index):
    """One attach, fire and detach of NAME on the NSITES sites of BUILD in
    NPROCS held targets: its row."""
    targets = Targets(build)
    row = dict(tracer=name, path=CLASSES[name].path, sweep=sweep, sites=nsites, procs=nprocs,
               cycle=index, status="ok")
    t = None
    try:
        procs = targets.start(nprocs)
        sites = Sites(targets.binary, provider=GUARDED[1] if build == GUARDED[0] else "kit")
        targets.mapped(sites, procs)
        pids = [p.pid for p in procs]
        t = kit.tracer(name, targets.binary, sites)
        t0 = time.monotonic()
        row["startup_s"] = t.start()
        while True:
            if all(sites.trapped(pid) == nsites for pid in pids) and t.ready():
                break
            if isinstance(t, Process):
                t.gone_why()
            if time.monotonic() - t0 > LIVE_LIMIT_S:
                raise TracerGone(f"its probes were not live in {LIVE_LIMIT_S} s")
            host.check_signalled()
            time.sleep(POLL_S)
        row["attach_s"] = time.monotonic() - t0
        if isinstance(t, Process):
            row["tracer_kb"] = vm_hwm_kb(t.proc.pid)
        if isinstance(t, Bpftrace):
            row["path"] = t.taken()
        late = targets.start(1)
        targets.mapped(sites, late)
        row["late_covered"] = "yes" if sites.trapped(late[0].pid) == nsites else "no"
        marker = next(iter(sites.offsets))
        if sites.semaphores[marker] is not None:  # a guarded marker: raised in each?
            row["semaphore"] = "/".join(str(sites.semaphore(p.pid, marker))
                                        for p in (procs[0], late[0]))
        everyone = procs + late
        recs = targets.release(everyone)
        if any(r is None for r in recs):
            raise TracerGone("a target ended without its record")
        before = t.counts() if name == "ftrace" else None
        t1 = time.monotonic()
        killed = kit.stop_tracer(t, kit.args.detach_limit_s)
        limit = GONE_S + GONE_PER_SITE_S * nsites
        gone = wait_sites(sites, [p.pid for p in everyone], False, limit)
        if gone is None:
            left = sum(sites.trapped(p.pid) for p in everyone)
            why = (f"{left} breakpoints of {nsites} sites x {len(everyone)} processes still int3 "
                   f"{limit:g} s after the tracer {'was killed' if killed else 'stopped'} "
                   "(each would stop its process with SIGTRAP)")
            raise TracerGone(f"{killed}; {why}" if killed else why)
        row["detach_s"] = time.monotonic() - t1
        if killed:
            row.update(status="killed", reason=killed)
        got = before or t.counts()
        want = len(everyone) if row["late_covered"] == "yes" else nprocs
        bad = {n: c for n, c in got.items() if c != want}
        row["counted"] = "ok" if not bad else "mismatch"
        if bad and row["status"] == "ok":
            row.update(status="mismatch", reason=f"{len(bad)} of {nsites} sites counted other than "
                       f"{want}: e.g. {next(iter(bad))}={next(iter(bad.values()))}")
    except TracerGone as e:
        row.update(status="killed" if "(DETACH_LIMIT_S): killed" in str(e) else "failed",
                   reason=str(e))
    except (OSError, RuntimeError) as e:  # a target that died, a write refused
        row.update(status="failed", reason=f"{type(e).__name__}: {e}")
    finally:
        undo(kit, t, targets)
    return row


def lifecycle_cells(args):
    """(sweep, build, sites, processes) of each cell."""
    for n in args.probes:
        yield "sites", site_builds()[n], n, 1
    for n in args.procs:
        yield "procs", site_builds()[PROC_SITES], PROC_SITES, n
    yield "guarded", GUARDED[0], 1, 1


def run_cell(kit, name, sweep, build, nsites, nprocs):
    """A cell: its pilot, then as many cycles as fit CELL_S (REPEATS at most)."""
    pilot = cycle(kit, name, sweep, build, nsites, nprocs, 0)
    kit.write(LIFECYCLE_CSV, pilot)
    if pilot["status"] not in ("ok", "mismatch"):
        say(f"lifecycle: {name} {sweep} {nsites} sites x {nprocs}: {pilot['status']}: "
            f"{pilot['reason']}")
        return
    took = pilot["attach_s"] + pilot["detach_s"]
    more = min(kit.args.repeats, int(kit.args.cell_s // took) if took > 0 else kit.args.repeats)
    for i in range(1, more + 1):
        kit.write(LIFECYCLE_CSV, cycle(kit, name, sweep, build, nsites, nprocs, i))
    tu = clock(kit.meta)[0]
    say(f"lifecycle: {name:8} {nsites:5} {'guarded ' if sweep == 'guarded' else ''}sites x "
        f"{nprocs:3} processes: attach "
        f"{pilot['attach_s']:.3f} {tu}, detach {pilot['detach_s']:.3f} {tu} (pilot), "
        f"{more} more cycles")


# -- the bystanders --------------------------------------------------------------
# (way, tracer, how it filters on the traced pid); each way's baseline, the
# same untraced process with no tracer (BASELINE_WAY), runs just before it.
WAYS = [
    ("ftrace common_pid filter (each thread)", "ftrace", {}),
    # what a user may write first: the process's pid, which is its main
    # thread's id only (the target's calls are on another thread)
    ("ftrace common_pid == PID", "ftrace", {"pid_only": True}),
    ("perf stat -p", "perf", {}),
    ("perf stat -t (each thread)", "perf", {"by_tid": True}),
    ("bpftrace /pid == P/", "bpftrace", {}),
    ("bpftrace -p", "bpftrace", {"by_pid": True}),
    ("stap target() (stap -x PID)", "stap", {}),
]


def bystander_way(kit, way, name, kw):
    """BY_RUNS runs of the untraced process while NAME traces the other
    one its way (or no tracer: "untraced")."""
    traced, untraced = Targets(LIB_BUILD, TRACED_CALLS), Targets(LIB_BUILD, kit.args.by_calls)
    sites = Sites(LIBRARY, {LIB_MARKER})
    t, counted, rows = None, None, []
    try:
        if name:
            tp = traced.start(1)
            traced.mapped(sites, tp)
            t = kit.tracer(name, LIBRARY, sites, pid_filter=tp[0].pid, **kw)
            t.start()
            if wait_sites(sites, [tp[0].pid], True, LIVE_LIMIT_S) is None or not \
                    host.wait_for(t.ready, LIVE_LIMIT_S):
                if isinstance(t, Process):
                    t.gone_why()
                raise TracerGone("its probe was not live in the traced process")
            recs = traced.release(tp)
            if recs[0] is None:
                raise TracerGone("the traced process ended without its record")
        for i in range(kit.args.by_runs):
            up = untraced.start(1)
            untraced.mapped(sites, up)
            trap = sites.trapped(up[0].pid) == 1
            rec = untraced.release(up)[0]
            untraced.end(up)
            if rec is None:
                raise TracerGone("the untraced process ended without its record")
            th = rec["per_thread"][0]
            rows.append(dict(way=way, tracer=name or "", run=i, status="ok",
                             trap_in_untraced="yes" if trap else "no", calls=th["calls"],
                             wall_ns=th["wall_ns"], user_ns=th["user_ns"], sys_ns=th["sys_ns"]))
        if t:
            if name == "ftrace":
                counted = t.recorded()
                killed = kit.stop_tracer(t, kit.args.detach_limit_s)
            else:
                killed = kit.stop_tracer(t, kit.args.detach_limit_s)
                counted = sum(t.counts().values())
            for r in rows:
                r["traced_counted"] = counted
                if killed:
                    r.update(status="killed", reason=killed)
                elif counted != TRACED_CALLS:
                    r.update(status="mismatch", reason=f"the traced process made {TRACED_CALLS} "
                             f"calls and {name} counted {counted}")
    except (TracerGone, OSError, RuntimeError) as e:
        why = str(e) if isinstance(e, TracerGone) else f"{type(e).__name__}: {e}"
        rows = [dict(way=way, tracer=name or "", run=0, status="failed", reason=why)]
    finally:
        undo(kit, t, traced, untraced)
    for r in rows:
        kit.write(BYSTANDER_CSV, r)
    return rows


def bystanders(kit, tracers):
    for way, name, kw in WAYS:
        if name not in tracers:
            continue
        bystander_way(kit, BASELINE_WAY, None, {})  # the same process, no tracer, just before
        rows = bystander_way(kit, way, name, kw)
        ok = [r for r in rows if r["status"] == "ok"]
        if ok:
            per = sum(r["wall_ns"] for r in ok) / sum(r["calls"] for r in ok)
            say(f"lifecycle: bystander, {way}: {per:.1f} {clock(kit.meta)[2]} a call in the "
                "untraced process "
                f"(trap there: {ok[0]['trap_in_untraced']})")
        else:
            say(f"lifecycle: bystander, {way}: {rows[0]['status']}: {rows[0].get('reason')}")


# -- main ------------------------------------------------------------------------
def available(name):
    """Why tracer NAME cannot run here, or None (NEEDS: its command, its package)."""
    if name in NEEDS and not shutil.which(name):
        return f"no {name} (Debian package {NEEDS[name]})"
    return None


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.vars:
        print("\n".join(params.defaults(PARAMS)))
        return 0
    if os.geteuid() != 0:
        print("lifecycle: needs root (it defines uprobes and reads other processes' memory)",
              file=sys.stderr)
        return 2
    if os.uname().machine != "x86_64":  # a live site reads as int3, x86's breakpoint
        print(f"lifecycle: runs on x86_64 only (this is {os.uname().machine}): it reads a live "
              "probe as int3 in the process's memory", file=sys.stderr)
        return 2
    kit = None
    with host.stoppable():
        try:
            kitlock.lock("lifecycle", args.lock_wait_s)
            leftovers.sweep("lifecycle")  # a killed kit's, before anything is attached
            missing = sorted({NEEDS[t] for t in args.tracers
                              if available(t)})
            host.install("lifecycle", missing, args.no_install)
            if not host.make_all("lifecycle"):
                return 1
            sweeps = any(t not in BYSTANDER_ONLY for t in args.tracers)
            needed = sorted({b for _, b, *_ in (lifecycle_cells(args) if sweeps else ())}
                            | {LIB_BUILD})
            unbuilt = [b for b in needed if not os.path.exists(Targets(b).binary)]
            Targets.ALL.clear()
            if unbuilt:
                say(f"lifecycle: not built: {', '.join(unbuilt)} (they need <sys/sdt.h> and "
                    "dtrace: Debian package systemtap-sdt-dev); nothing was attached")
                return 1
            kit = Kit(args)
            kit.tracefs = tracefs.MOUNTS.ensure()
            if not kit.tracefs:
                say("lifecycle: no tracefs here (not mountable): nothing can attach")
                return 1
            tracers = []
            for name in args.tracers:
                why = available(name)
                if why:
                    say(f"lifecycle: {name}: skipped: {why}")
                    kit.meta["skipped"][name] = why
                else:
                    tracers.append(name)
                    kit.meta["tracers"][name] = host.first_line(
                        [name, "--version"] if name != "ftrace" else ["uname", "-r"])
            kit.write_meta()
            t0 = time.monotonic()
            for name in [t for t in tracers if t not in BYSTANDER_ONLY]:
                for cell in lifecycle_cells(args):
                    run_cell(kit, name, *cell)
            kit.meta["lifecycle_s"] = round(time.monotonic() - t0, 1)
            t0 = time.monotonic()
            if not args.no_bystanders:
                bystanders(kit, tracers)
            kit.meta["bystander_s"] = round(time.monotonic() - t0, 1)
        except Interrupted as e:
            say(f"lifecycle: stopped ({e.args[0] if e.args else 'SIGINT'}); undoing its probes")
            if kit:
                kit.meta["interrupted"] = e.args[0] if e.args else "SIGINT"
            return 130
        except Exception as e:  # the kit's own fault: said, in meta.json too, and undone
            say(f"lifecycle: failed: {type(e).__name__}: {e}; undoing its probes")
            if kit:
                kit.meta["failed"] = f"{type(e).__name__}: {e}"
            return 1
        finally:
            with host.deferred():
                if kit:
                    kit.cleanup()
                    kit.close()
                tracefs.MOUNTS.release()
    say(f"lifecycle: results in {os.path.relpath(kit.dir, ROOT)}")
    if not args.no_report:
        subprocess.run([sys.executable, os.path.join(HERE, "report.py"), kit.dir])
    return 0


if __name__ == "__main__":
    sys.exit(main())
