"""libbpf.py: the floor under every BPF tracer (issue 68): a probe
attached by libbpf itself, as production agents attach (bcc's
libbpf-tools, libbpf-rs programs), with nothing of a front end's own.
Its programs are the kit's C (src/libbpf/kit.bpf.c), loaded and attached
by build/kit-libbpf (src/libbpf/loader.c, its skeleton from `bpftool gen
skeleton`), which make builds where clang, bpftool, libbpf's headers and
the kernel's BTF are here.

The loader is started beside the target as a user starts an agent: on the
kit's loop before the target starts, on every process that maps the
build (bpf_program__attach_usdt with pid -1; the kit runs one target at
a time); on a real program (attach "running") beside the held target,
that process alone, or by path every process mapping the program with
the workload's cgroup counted apart in BPF (the user-* rows).  libbpf
reads the marker's note itself, and gives the kernel the semaphore's
reference counter.  Its probes are live when it prints LIVE_LINE; at
SIGINT it detaches and prints its per-CPU counts ("name: value" a line),
read here by name.  Its link, maps and programs are file descriptors: a
SIGKILLed loader leaves nothing attached (tests/test_libbpf.py).

Its count of a real program's marker is its own; where the program keeps
none and no other tracer's run witnessed it, the runner adds a witness
run (Tracer.witness_run, record.WITNESS_RUN), never timed: beside the
loader, a uprobe event of the kit's own on the same site, which the kit
places from the marker's note (tracefs.UprobeCounter: its ring counts
every trap, as ftrace's does beside its hits), and the loader with
--witness, the kernel counting the program's runs and skipped runs
(BPF_ENABLE_STATS, which times every BPF program's runs while held).

Which program a row loads is its body (the body table's rows,
bodies.BODIES["libbpf"]) or its mode (the rows in configs.CONFIGS).
make lifecycle's (Attached, attached.py's verbs): one program attached to
each of N sites (sdt_site, a site's index its USDT cookie, a count a
site), by path, or to one process (its bystander way: the kernel's own
filter, no test in the program).
"""
import os
import re
import time
from dataclasses import dataclass

import host
from bodies import BUFFERED
from elfinfo import Elf

from . import tracefs
from .attached import LIVE_LIMIT_S, POLL_S, Process, TracerGone, held_links
from .base import LIVE_LINE, Events, RunState, Tracer, TracerError

LOADER = os.path.join(host.ROOT, "build", "kit-libbpf")
BTF = "/sys/kernel/btf/vmlinux"  # (the Makefile's BTF)
UPROBE_NOP = "uprobe_nop"  # the raw uprobe on the marker's nop, no USDT spec
COUNT = "sdt_count"  # the count: a row with neither body nor mode loads it
# BUFFERED's programs record each event into a buffer the loader reads:
# what reached the loader is the row's count, what had no room its losses,
# and the program's own count must equal the two (Events.also).
COUNTED_IN_BPF = "events its BPF program counted (a per-CPU map)"
# A witness run's counts beside the program's: the traps of a uprobe event
# of the kit's own on the same site (tracefs.UprobeCounter: placed from
# the marker's note by the kit, not by libbpf), and the kernel's count of
# the program's runs and of those it skipped (loader --witness).
SITE_TRAPS = "traps of the kit's own uprobe event on the same site, in its ring"
KERNEL_RUNS = "its BPF program's runs and skipped runs, which the kernel counted"
COUNTS = re.compile(r"^(\w+): (\d+)$", re.M)
SITE = "sdt_site"  # make lifecycle's program: a count a site (Attached)
SITE_COUNTS = re.compile(r"^site (\w+): (\d+)$", re.M)


DESCRIBED = " (build/kit-libbpf)"  # after the loader's --version line in describe()
HELD = "it held "  # a row's note: the links the loader held (State.links), read back by held()


def held(note):
    """The links a libbpf row's NOTE says its loader held ("perf link (1),
    perf_event (1)"; "uprobe_multi link (1)"), or None."""
    m = re.search(re.escape(HELD) + r"([^;]+)", note or "")
    return m.group(1).strip() if m else None


@dataclass
class State(RunState):
    """What one run of this back-end keeps between its verbs."""
    # the attach path libbpf took, read from the loader's fds once live: a
    # perf_event uprobe, or (libbpf 1.5+ on Linux 6.6+, USDT) a uprobe_multi link
    links: str = ""
    counter: object = None  # a witness run's tracefs.UprobeCounter, until detach
    # its ring's events before the loader started, once it was live, before
    # its SIGINT and after it ended: every trap counted in the loader's window
    traps: list = None


class Libbpf(Tracer):
    name = "libbpf"
    State = State
    attaches_running = True  # the loader, started beside the held target
    witness_run = True  # beside its count: the site's traps, and its runs (count_traps, --witness)
    needs = {}  # (its build's: make's needs, clang, bpftool and libbpf-dev)

    def available(self):
        if not os.access(LOADER, os.X_OK):
            return (f"{os.path.relpath(LOADER, host.ROOT)} was not built (see make's message: "
                    "clang, bpftool, libbpf-dev and a kernel with BTF)")
        if not os.path.exists(BTF):  # (a guest's kernel: the loader built on the host)
            return f"this kernel has no BTF ({BTF}): libbpf cannot relocate the kit's programs"
        return self.need_root()

    def describe(self):
        if self.available():
            return None
        status, out = host.run([LOADER, "--version"], timeout=10)
        return f"{out.strip()}{DESCRIBED}" if status == 0 else None

    @staticmethod
    def version_of(described):
        """The library's version in a describe() line (meta.json's
        tracers): "libbpf 1.7 (build/kit-libbpf)" -> "1.7"; "" if none."""
        return (described or "").removesuffix(DESCRIBED).removeprefix("libbpf ")

    @staticmethod
    def program(cfg):
        return cfg.body or cfg.mode or COUNT

    def skip_reason(self, cfg, workload=None):
        if self.program(cfg) == UPROBE_NOP and cfg.workload:
            return "a raw uprobe on a marker's nop is the kit's own loop's row alone"
        return None

    @staticmethod
    def probe(run):
        """The loader's probe argument: PROVIDER:NAME, or +OFFSET (hex) of
        the marker's nop in the file for the raw uprobe."""
        provider = run.workload.provider if run.workload else "benchmark"
        marker = run.cfg.marker if run.workload else "single_trace"
        if Libbpf.program(run.cfg) != UPROBE_NOP:
            return f"{provider}:{marker}"
        elf = Elf(run.build)
        notes = [n for n in elf.sdt_notes() if (n.provider, n.name) == (provider, marker)]
        if len(notes) != 1:
            raise TracerError(f"{run.build}: {len(notes)} {provider}:{marker} markers, "
                              "where the raw uprobe takes one")
        return f"+{elf.file_offset(notes[0].pc):x}"

    def witness_problem(self, cfg, workload):
        """The witness's uprobe event puts one uprobe on one site of a
        program by path (tracefs.UprobeCounter counts every process's traps,
        so a loader on one process has no witness in it)."""
        if not workload.by_path:
            return f"{workload.name} is probed in one process, and the witness counts every one's"
        return (tracefs.path_problem(workload.program, "the witness's uprobe event")
                or tracefs.sites_problem(cfg, "the witness's uprobe event", workload))

    def count_traps(self, run):
        """A witness run's kernel count of the site's traps, started before
        the loader (tracefs.UprobeCounter)."""
        if not tracefs.MOUNTS.ensure():
            raise TracerError("a witness run counts the site's traps through tracefs, which "
                              "could not be mounted")
        off, sem, _ = tracefs.site(run, note_ref=True)  # (the reference counter libbpf gives)
        run.state.counter = tracefs.UprobeCounter(run.tag, f"{run.tag}_witness", run.build,
                                                  off, sem)
        try:
            run.state.counter.start()
        except OSError as e:
            raise TracerError(f"the witness's uprobe event: {e.strerror or e}")
        run.state.traps = [run.state.counter.count()[0]]
        with open(run.log, "a") as f:
            f.write(f"witness: uprobe_events: {run.state.counter.spec}, instance "
                    f"{run.state.counter.inst} (overwrite)\n")

    def attach(self, run):
        if run.witness:
            self.count_traps(run)
        running = run.cfg.attach == "running"
        pid = -1 if not running or run.workload.by_path else run.target_pid
        cmd = [LOADER, *(["--witness"] if run.witness else []), self.program(run.cfg),
               run.build, self.probe(run), str(pid), str(run.group.id if run.group else 0)]
        live = self.start_live(run, cmd, lambda live: live.printed(LIVE_LINE))
        try:
            held = held_links(live.proc.pid)
        except OSError:  # (ended meanwhile: events() says so)
            held = {}
        run.state.links = ", ".join(f"{k} ({n})" for k, n in sorted(held.items()))
        if run.witness:
            run.state.traps.append(run.state.counter.count()[0])

    def events(self, run):
        if run.witness and run.state.live and run.state.live.status is None:
            run.state.traps.append(run.state.counter.count()[0])
        live = self.stop_live(run)
        if live is None:
            raise TracerError("the loader never started")
        with open(live.out, errors="replace") as f:
            out = f.read()
        with open(run.log, "a") as f:
            f.write(out)
        if live.early:  # (ended while the target ran: its counts are a part's)
            raise TracerError(f"kit-libbpf ended while the target still ran (status "
                              f"{live.status}): its counts would be a part's")
        if live.status != 0:
            raise TracerError(f"kit-libbpf exited with status {live.status} at its SIGINT")
        got = {k: int(v) for k, v in COUNTS.findall(out)}
        missing = [k for k in ("events", "others", "lost", "records",
                               *(("runs", "recursion_misses") if run.witness else ()))
                   if k not in got]
        if missing:
            raise TracerError(f"kit-libbpf printed no {', '.join(missing)} count")
        prog = self.program(run.cfg)
        whom = ("every process mapping it" if run.cfg.attach != "running" or run.workload.by_path
                else f"pid {run.target_pid}")
        note = f"libbpf, {prog} on {whom}" + (
            f"; {HELD}{run.state.links}" if run.state.links else "") + (
            f"; other cgroups' events counted apart (the workload's is {run.group.id})"
            if run.group else "")
        if prog == "sdt_arg":
            note += f"; its arguments summed to {got.get('arg_sum', 0)}"
        others = got["others"] if run.group else None
        if run.witness:
            if prog in BUFFERED:  # (its records are a second count of its own)
                raise TracerError(f"a witness run counts with {COUNT}'s program, not {prog}'s")
            traps = run.state.counter.count()
            return self.witnessed(got, others, note, live, traps, run.state.traps + [traps[0]])
        if prog in BUFFERED:
            note += (f"; {got['records']} records reached the loader, {got['lost']} had no room"
                     + (f", the perf buffer said {got['lost_samples']} dropped"
                        if got.get("lost_samples") else ""))
            return Events(got["records"], got["lost"], note, tracer_cpu_ns=live.cpu_ns,
                          also=(COUNTED_IN_BPF, got["events"] + (others or 0)), others=others,
                          apart=others is not None)
        if got["lost"]:  # a map body whose map was full: its entries refused, the count whole
            note += f"; {got['lost']} map entries refused (full)"
        return Events(got["events"], 0, note, tracer_cpu_ns=live.cpu_ns, others=others,
                      apart=others is not None)

    @staticmethod
    def witnessed(got, others, note, live, traps, window):
        """A witness run's Events: the program's count (the runs the kernel
        skipped, recursion_misses, counted lost), and beside it as its
        witness the traps of the kit's own uprobe event on the site
        (TRAPS: tracefs.UprobeCounter.count() at the end), every process's,
        where all fell in the loader's window (WINDOW: the ring's events
        before the loader, once live, before its SIGINT, after it ended;
        else no witness: the row says how many fell outside); where the
        kernel's count of the program's runs and skipped runs is not the
        program's count, that count instead (a mismatch)."""
        skipped, (trapped, dropped, hits) = got["recursion_misses"], traps
        if dropped:
            raise TracerError(f"the witness's uprobe event's ring dropped {dropped} events: "
                              "its count of the site's traps is no count")
        outside = (window[1] - window[0] + window[3] - window[2]) if len(window) == 4 else None
        trapped -= window[0]
        note += (f"; the kernel ran its program {got['runs']} times"
                 + (f" and skipped it {skipped} times" if skipped else "")
                 + f" (BPF_ENABLE_STATS); the kit's own uprobe event on the site counted "
                 f"{trapped} traps in its ring" + (f", {hits} hits" if hits is not None else ""))
        ran = got["runs"] + skipped
        also = (SITE_TRAPS, trapped) if ran == got["events"] + skipped + (others or 0) else (
            KERNEL_RUNS, ran)
        if outside != 0 and also[0] == SITE_TRAPS:  # (the loader saw none of those)
            also = None
            note += (f"; {outside} of the traps fell while the loader was not attached, so "
                     "they witness nothing" if outside else "; the loader's window was not read")
        return Events(got["events"], skipped, note, tracer_cpu_ns=live.cpu_ns, also=also,
                      others=others, apart=others is not None)

    def detach(self, run):
        self.stop_live(run)
        if run.state.counter:  # (kept until stopped: if this raises, cleanup tries again)
            run.state.counter.stop()
            run.state.take("counter")


BACKEND = Libbpf()


class Attached(Process):
    """make lifecycle's (attached.py): the loader's sdt_site attached by
    libbpf to each site of the binary by its path (a link a site: libbpf
    1.1 here takes a perf_event uprobe each; where libbpf and the kernel
    have it, a uprobe_multi link each), or with PID_FILTER to that process
    alone (bpf_program__attach_usdt's pid: the kernel's filter); a count a
    site, printed as it ends."""
    name, path = "libbpf", "perf-event uprobe per probe (libbpf)"

    def __init__(self, kit, binary, sites, pid_filter=None):
        self.kit, self.sites, self.pid_filter = kit, sites, pid_filter

    @classmethod
    def version(cls):
        return host.first_line([LOADER, "--version"])

    @staticmethod
    def unavailable():
        """Why the loader cannot run here (its back-end's answer), or None."""
        return BACKEND.available()

    def start(self):
        names = ",".join(sorted(self.sites.offsets))
        self.spawn([LOADER, SITE, self.sites.binary, f"{self.sites.provider}:{names}",
                    str(self.pid_filter or -1)], self.kit.log("libbpf"))
        t0 = time.monotonic()
        while not self.ready():  # (it says nothing between its load and its attach)
            self.gone_why()
            if time.monotonic() - t0 > LIVE_LIMIT_S:
                raise TracerGone(f"kit-libbpf was not live in {LIVE_LIMIT_S} s")
            time.sleep(POLL_S)
        return None

    def ready(self):
        return LIVE_LINE in self.said()

    def taken(self):
        """The attach path it took, from its fds once live."""
        held = held_links(self.proc.pid)
        kinds = sorted(k for k in held if k.endswith(" link"))
        return ", ".join(f"{k} ({held[k]} held)" for k in kinds) or self.path

    def counts(self):
        """After stop(): a count a site, as it printed them; TracerGone
        where it ended by itself without them (a failed detach or read:
        its own words), never 0s read from nothing.  (Killed past the
        limit, it printed none: its row says it was killed.)"""
        got = {n: int(c) for n, c in SITE_COUNTS.findall(self.said())}
        if self.proc.returncode >= 0 and (self.proc.returncode or not got):
            tail = [ln for ln in self.said().splitlines() if ln.strip()][-3:]
            raise TracerGone(f"kit-libbpf exited ({self.proc.returncode}) without its counts: "
                             + " | ".join(tail))
        return {n: got.get(n, 0) for n in self.sites.offsets}
