"""base.py: what every tracer back-end shares (see tracers/__init__.py)."""
import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass

import host
import procs
import kitstate
import userscript
from record import Events  # noqa: F401  (what events() returns)

TOOL_TIMEOUT_S = 120  # a tracer's command that sets up or tears down
LONG_TIMEOUT_S = 600  # one that compiles, or reads a whole run's data
LOG_TAIL = 4096  # bytes of a tracer's output copied to the log, or read for its count
LIVE_POLL_S = 0.005  # a live tracer's readiness, looked at this often
LIVE_LINE = "kit: probes live"  # what a live tracer's begin probe prints (start_live)


class TracerError(Exception):
    """A tracer could not attach, count or detach; the message says why."""


# A line that says what failed: a tool's own "ERROR:", "Error:", "error:",
# "Semantic error", "FATAL" (bpftrace, bcc, perf, stap, lttng), not a line
# that only points at a column (bpftrace's "~~~~" or "^").
ERROR_LINE = re.compile(r"\b(error|fatal)\b", re.I)
WORDLESS = re.compile(r"^[^A-Za-z0-9]*$")


def tool_error(text, noise=()):
    """The line of a tool's output TEXT that says why it failed, for a row's
    reason: its first error line, else its last line with a word in it; no
    caret line, no blank line, no command echo ("$ ..."), nothing that holds
    one of NOISE (what it prints on every run).  "" where there is none."""
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if not WORDLESS.match(ln) and not ln.startswith("$ ")
             and not any(n in ln for n in noise)]
    said = [i for i, ln in enumerate(lines) if ERROR_LINE.search(ln)]
    if not said:
        return lines[-1] if lines else ""
    i = said[0]
    if lines[i].endswith(":") and i + 1 < len(lines):  # perf's "Error:", its words below
        return f"{lines[i]} {lines[i + 1]}"
    return lines[i]


@dataclass
class Live:
    """A tracer's own process started beside a target that is already
    running (attach "running", configs.ATTACH): its pid, the file its
    stdout goes to (and its stderr, where not the run's log), and once it
    has ended, its exit status and CPU."""
    proc: subprocess.Popen
    out: str
    status: int = None
    cpu_ns: tuple = None  # (user, system)
    err: str = None  # its stderr's own file (a user's script's: the log holds the workload's)
    early: bool = False  # it ended by itself while the target ran (Tracer.live_ended)

    def printed(self, what):
        """It has printed WHAT (its ready line) on its stdout."""
        with open(self.out, errors="replace") as f:
            return what in f.read()


@dataclass
class RunState:
    """A back-end's own record of one run (run.state), kept between its
    verbs; each back-end subclasses it with its fields."""
    live: Live = None  # its own process beside a running target (start_live)

    def take(self, field):
        """The field's value, cleared: detach undoes a thing only once."""
        value = getattr(self, field)
        setattr(self, field, None)
        return value


class Tracer:
    name = "?"
    needs = {}  # program it needs on PATH -> the Debian package providing it
    versions = ()  # programs whose --version meta.json records
    attaches = True  # False for the baselines' "tracer" (nothing attached)
    # It can attach to a target that is already running (attach "running"):
    # by itself (ftrace), or by starting its own process beside the target
    # (start_live).  A back-end that only wraps the target's command cannot.
    attaches_running = False
    uprobes = True  # its probes are uprobes (so the row says which path they took)
    # The order (configs.ATTACH) in which its marker probe really meets the
    # target on a "before" row, where that differs, and why (kernel.check).
    marker_order = "before"
    marker_order_why = ""
    log_noise = ()  # what it prints on every run, failed or not: never a failure's reason
    # It can count a run's events with the kernel as its witness at a cost
    # no timed run may carry (libbpf: BPF_ENABLE_STATS), in a witness run
    # (record.WITNESS_RUN) that the runner adds where a real program's
    # timed runs of it had no witness (measure/matrix.py); Run.witness says
    # which run that is.
    witness_run = False
    State = RunState

    def witness_problem(self, cfg, workload):
        """Why a witness run of CFG on WORKLOAD could witness nothing, or None."""
        return None

    def raises_semaphores(self):
        """Whether its probe on a marker raises the marker's semaphore (the
        kernel's reference counter), so the runner need not."""
        return True

    def params(self):
        """Its own inputs (params.Param), beside the runner's."""
        return []

    def choose(self, args):
        """Settles how it will run, from its inputs, before anything is
        attached: a line to say, or None; raises TracerError when told to
        run a way it cannot here (the runner exits 2)."""
        return None

    def describe(self):
        """A line for the report's environment (meta.json "tracers"), or None."""
        return None

    def available(self):
        return self.need_commands()

    def skip_reason(self, cfg, workload=None):
        """Why this one configuration cannot run here, or None.  WORKLOAD:
        its real program's workload as the run holds it (a user's: its
        TARGET; workloads.get(name, args)), else the registry's."""
        return None

    def max_iter(self, cfg, threads):
        """(the most calls a thread that this tracer keeps up with, why) for
        CFG at THREADS, where it has a known limit; None where it has none."""
        return None

    def path_problem(self, path):
        """Why this tracer's probe spec cannot hold the program's PATH (a
        user's TARGET), naming the tracer and the character, or None.  Any
        character the kernel takes in a file name is fine unless the
        tracer's grammar truly cannot hold it."""
        bad = sorted({c for c in path if not c.isprintable()})
        if bad:
            return (f"{self.name} cannot name {path!r}: a probe spec holds no "
                    f"{' or '.join(repr(c) for c in bad)}")
        return None

    def setup(self, log):
        """LOG: the kit's own log file."""

    def attach(self, run):
        pass

    def wrap(self, run, cmd):
        return cmd

    def watch(self, run, pgid):
        """Called while the run's process group runs, until it returns
        True: a back-end that must learn its tracer's pid does it here."""
        return True

    def live_watched(self, run):
        """Whether its own process (start_live) runs, not yet seen to end:
        the wait for the target looks at it each turn (live_ended)."""
        live = getattr(getattr(run, "state", None), "live", None)
        return live is not None and live.status is None and not live.early

    def live_ended(self, run):
        """Whether its own process (start_live) has ended by now, where it
        was not seen so before: the wait for the target (measure/supervise.py)
        looks here first, then at the target, and one that ended while the
        target still ran ended by itself (Live.early: a user's script's
        exit())."""
        return self.live_watched(run) and bool(os.waitid(
            os.P_PID, run.state.live.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT))

    def events(self, run):
        """An Events (record.py): seen, dropped, note, and what else the
        back-end knows (a flight recorder's wrap, a daemon's CPU)."""
        raise NotImplementedError

    def detach(self, run):
        pass

    def teardown(self):
        pass

    # Helpers for the back-ends.
    def start_live(self, run, cmd, ready, env=None, timeout=TOOL_TIMEOUT_S, err=None):
        """Starts CMD (the tracer, pointed at run.target_pid) in a session
        of its own, its stdout to a scratch file and its stderr to the
        run's log (or to ERR, a file of its own, which stop_live adds to
        the log), and waits until READY(live) says its probes are live;
        TracerError (the tracer stopped) if it ends first or takes TIMEOUT
        seconds (one that compiles first: LONG_TIMEOUT_S).  Kept in run.state.live for stop_live(), which
        detach calls too: no path leaves it running."""
        out = os.path.join(run.scratch, f"{self.name}.out")
        with host.deferred(), open(out, "w") as o, open(run.log, "a") as log, \
                (open(err, "w") if err else contextlib.nullcontext(log)) as e:
            log.write("$ " + " ".join(cmd) + "\n")
            log.flush()
            try:
                p = subprocess.Popen(cmd, stdout=o, stderr=e, stdin=subprocess.DEVNULL, env=env,
                                     cwd=host.ROOT, start_new_session=True,
                                     preexec_fn=host.default_signals)
            except OSError as x:
                raise TracerError(f"{cmd[0]}: {x.strerror}")
            live = run.state.live = Live(p, out, err=err)
            run.pids.add(p.pid)
            kitstate.tracer(p.pid)  # (a SIGKILLed kit's: stopped by the next, leftovers.py)
        deadline = time.monotonic() + timeout
        while not ready(live):
            host.check_signalled()
            ended = os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if ended or time.monotonic() > deadline:
                self.stop_live(run)
                why = (f"exited with status {live.status}" if ended else
                       f"had no probe live after {timeout} s")
                with open(err or run.log, errors="replace") as f:  # from its own command on
                    text = f.read()
                said = tool_error(text if err else text.rpartition("$ " + " ".join(cmd))[2],
                                  self.log_noise)
                raise TracerError(f"{os.path.basename(cmd[0])} {why} before its probes were "
                                  "live" + (f": {said}" if said else ""))
            time.sleep(LIVE_POLL_S)
        return live

    def stop_live(self, run, sig=signal.SIGINT):
        """Stops the live tracer (SIG to the process the kit started, the
        way its user stops it; SIGKILL to its session after TOOL_TIMEOUT_S)
        and reaps it, its CPU kept; what it started and left is killed
        too, so that what they left in the kernel can be removed (their
        pids are dead).  The Live, or None if none was started.  Not SIG to
        the whole session: stap passes it on to stapbpf itself, and with a
        second copy stapbpf now and then (1 run in 50 here) killed itself
        and stap by SIGKILL, its uprobe left in uprobe_events."""
        live = run.state.live
        if live is None or live.status is not None:
            return live
        p = live.proc
        with host.deferred():
            pid, st, ru = os.wait4(p.pid, os.WNOHANG)  # perf stat -p ends with its target
            deadline = time.monotonic() + TOOL_TIMEOUT_S
            if not pid:
                os.kill(p.pid, sig)  # its pid, never a name
            while not pid:
                time.sleep(LIVE_POLL_S)
                pid, st, ru = os.wait4(p.pid, os.WNOHANG)
                if not pid and time.monotonic() > deadline:
                    os.kill(p.pid, signal.SIGKILL)  # hung: the rest of its session below
                    deadline = float("inf")
            p.returncode = live.status = os.waitstatus_to_exitcode(st)
            live.cpu_ns = (int(ru.ru_utime * 1e9), int(ru.ru_stime * 1e9))
            # what it started and left, in its session
            procs.kill_all(lambda _pid, f: int(f[3]) == p.pid, TOOL_TIMEOUT_S)
            if live.err:  # its own words, in the log as every tracer's are
                with open(run.log, "ab") as log:
                    userscript.cut(live.err, log)
        return live

    def missing(self):
        """{program: package} of what it needs and this machine lacks."""
        return {c: p for c, p in self.needs.items() if not shutil.which(c)}

    def need_commands(self):
        for c, p in self.missing().items():
            return f"{c} not found (Debian package {p})"
        return None

    @staticmethod
    def need_root():
        return None if os.geteuid() == 0 else "needs root (uprobes and tracefs are root-only)"

    @staticmethod
    def sh(cmd, log=None, check=True, timeout=TOOL_TIMEOUT_S, env=None, stderr=True,
           whole=True, code=False):
        """Run CMD (a list, never a shell string); its output (with its
        stderr, unless not STDERR) goes to LOG (appended) and is returned.
        WHOLE (a tool that sets up or tears down: it would leak what it was
        making) is never cut in half by a signal; a tool that only reads
        out what a run recorded is run with whole=False and stops at once.
        A failure raises TracerError with the command's last line of output
        (unless not CHECK); with CODE, (exit status, output) is returned."""
        try:
            status, out = host.run(cmd, timeout=timeout, log=log, env=env, stderr=stderr,
                                   whole=whole)
        except host.Timeout:
            raise TracerError(f"{cmd[0]} hung for {timeout} s")
        except OSError as e:
            raise TracerError(f"{cmd[0]}: {e.strerror}")
        if check and status != 0:
            said = tool_error(out)
            raise TracerError(f"{os.path.basename(cmd[0])} failed (exit {status})"
                              + (f": {said}" if said else ""))
        return (status, out) if code else out


def start_script(tracer, run, cmd, script, ready=None, env=None):
    """Starts CMD, which runs SCRIPT (a copy of the user's, userscript.runnable)
    beside the held target, as start_live does (READY: its live line printed,
    by default), its stderr to a file of its own (what it says it lost is
    read from its own output alone: the run's log holds the workload's
    too); a failure's words name the user's script, not the copy."""
    try:
        tracer.start_live(run, cmd, ready or (lambda live: live.printed(LIVE_LINE)), env=env,
                          timeout=LONG_TIMEOUT_S,
                          err=os.path.join(run.scratch, f"{tracer.name}.err"))
    except TracerError as e:
        raise TracerError(str(e).replace(script, run.cfg.script)) from None


EXITED_EARLY = "your script exited before the workload ended"  # a script row's failure


def script_events(tracer, run, live):
    """A user's script's run (configs.SCRIPT_MODE, userscript.py): its
    output kept beside the run's log, what it said it lost (its own
    output: stdout and stderr); no count of its own (the marker's events
    are the program's count or the witnesses', measure/witness.py).  A
    script that ended by itself while the workload ran (Live.early: an
    exit(), an interval that exits) traced part of the run: the run fails."""
    if live is None:
        raise TracerError(f"{tracer.name} never started the script")
    if live.early:
        raise TracerError(f"{EXITED_EARLY} ({tracer.name} ended by itself, status "
                          f"{live.status}): its times would be a part's, not the run's")
    if live.status not in (0, -signal.SIGINT):
        raise TracerError(f"{tracer.name} exited with status {live.status} at its SIGINT")
    lost, kept = userscript.keep(live.out, live.err, run.log, tracer.name)
    return Events(None, lost, f"your SCRIPT, run by {tracer.name} as written; its output kept "
                  f"in logs/{kept}; it counts its events itself, not for the kit"
                  + (f"; it said it lost {lost} events" if lost else ""),
                  tracer_cpu_ns=live.cpu_ns)
