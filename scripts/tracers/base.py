"""base.py: what every tracer back-end shares (see tracers/__init__.py)."""
import os
import shutil
from dataclasses import dataclass

import host
from record import Events  # noqa: F401  (what events() returns)

TOOL_TIMEOUT_S = 120  # a tracer's command that sets up or tears down
LONG_TIMEOUT_S = 600  # one that compiles, or reads a whole run's data
LOG_TAIL = 4096  # bytes of a tracer's output copied to the log, or read for its count


class TracerError(Exception):
    """A tracer could not attach, count or detach; the message says why."""


@dataclass
class RunState:
    """A back-end's own record of one run (run.state), kept between its
    verbs; each back-end subclasses it with its fields."""

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
    uprobes = True  # its probes are uprobes (so the row says which path they took)
    # The order (configs.ATTACH) in which its marker probe really meets the
    # target on a "before" row, where that differs, and why (kernel.check).
    marker_order = "before"
    marker_order_why = ""
    log_noise = ()  # what it prints on every run, failed or not: never a failure's reason
    State = RunState

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

    def skip_reason(self, cfg):
        """Why this one configuration cannot run here, or None."""
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

    def events(self, run):
        """An Events (record.py): seen, dropped, note, and what else the
        back-end knows (a flight recorder's wrap, a daemon's CPU)."""
        raise NotImplementedError

    def detach(self, run):
        pass

    def teardown(self):
        pass

    # Helpers for the back-ends.
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
            last = [ln for ln in out.splitlines() if ln.strip()]
            raise TracerError(f"{os.path.basename(cmd[0])} failed (exit {status})"
                              + (f": {last[-1].strip()}" if last else ""))
        return (status, out) if code else out
