"""workloads.py: programs someone else wrote, run as the kit's target: each
workload names the binary its markers are in, the command that runs it
(printing the kit's target record, as build/benchmark-* does), and what it
needs here: Python, PostgreSQL, and a user's TARGET/PROBE/WORKLOAD (the
python-*, postgres-* and user-* configurations, configs.py).

Nothing to run: measure/kit.py starts a workload's command where a
configuration names one (the markers' semaphores raised by semaphores.py
where a row wants them).  The workloads' table and the verbs a run asks
of whichever program its row names (get, unavailable, wait_held) are read
here; what every workload is, the Workload base, is workload.py's, and
PostgreSQL's cluster folders and their cleanup are pgcluster.py's, so
that a dead kit's sweep removes a cluster without this table.
"""
import dataclasses
import glob
import hashlib
import json
import os
import platform
import sys
import time

import procs
from host import ROOT
from pgcluster import PG_BIN, PG_PACKAGE, Postgres, pg_bin
from semaphores import markers
import semaphores
from workload import Workload


USER = "user"  # the user-* rows' workload (configs: workload="user")


class Command(Workload):
    """A user's program (TARGET), its marker (PROBE) and a command of theirs
    (WORKLOAD) that makes it fire: src/workloads/command.py runs THREADS
    copies of the command at once, ITER times each.  The registry's names
    no program; a run's own is made by user() from its inputs and held on
    them (params.check_user: args.user), and get(name, args) gives it."""

    def unavailable(self):
        if not self.program:
            return "needs TARGET, PROBE and WORKLOAD (make run TARGET=... PROBE=... WORKLOAD=...)"
        return super().unavailable()

    def prepare(self, scratch):
        return ["--command", json.dumps(list(self.command))]

    def semaphore_holders(self, target_pid):
        """None: the command's processes start after the attach, each from
        an exec, so there is nothing to raise a semaphore in beforehand."""
        return []

    def raises_at_exec(self):
        return True

    def exec_env(self, names, raise_them):
        """Where a marker of NAMES (of its provider) has a semaphore, the
        environment that loads glibc's loader's auditing module into every
        process of the command (build/libkit-semaphore-audit.so, LD_AUDIT:
        src/semaphore_audit.c), which raises those semaphores in each as it
        maps PROGRAM where RAISE_THEM, and else only looks (the same cost);
        {} where none has one.  ValueError where it cannot be given."""
        return semaphores.audit_env(self.program, self.provider, names, raise_them)

    def timing_key(self):
        """TARGET, PROBE and WORKLOAD, hashed: a call of one command is not
        a call of another (build/throw 0 took 3 ms; build/throw 100000 took
        0.7 s traced, and was sized as the first: 20 s a run)."""
        text = json.dumps([self.program, self.provider, self.marker, list(self.command)])
        return " " + hashlib.sha256(text.encode()).hexdigest()[:16]

    def why_silent(self):
        """One more run of the command, untraced, with its processes' maps
        looked at (silence.py)."""
        import silence
        return silence.why(self.program, self.command, ROOT)

    def bystanders(self):
        """Processes not the kit's that map PROGRAM at the attach (a shared
        library's every user: any C++ program has libstdc++): a probe by
        path counts their events too.  The command's own processes start
        after the attach; the kit's (this one and what it started) are left
        out."""
        real, mine = os.path.realpath(self.program), {os.getpid(), *procs.below(os.getpid())}
        out = []
        for pid in procs.pids():
            if pid in mine:
                continue
            try:
                with open(f"/proc/{pid}/maps") as f:
                    if any(ln.rstrip("\n").endswith(" " + real) for ln in f):
                        out.append(pid)
            except OSError:
                pass
        return out


def user(target, provider, marker, command):
    """A run's own user workload, from TARGET, PROBE (PROVIDER:MARKER) and
    WORKLOAD (COMMAND, its words), for the user-* rows: held on the run's
    inputs (params.check_user), the registry's left as it is."""
    return dataclasses.replace(WORKLOADS[USER], program=target, provider=provider,
                               marker=marker, command=tuple(command))


class Python(Workload):
    """Debian's CPython 3.11.  Where it is missing, the reason says what the
    machine's other CPythons carry: 3.12 to 3.14 have no function__entry
    marker at all (python/cpython#104280: trixie's 3.13, sid's 3.14), which
    is why a make lab guest of those suites skips the python-* rows."""

    def elsewhere(self, marker):
        said = []
        for p in sorted(glob.glob("/usr/bin/python3.*")):
            if p == self.program or not os.path.basename(p)[len("python3."):].isdigit():
                continue
            try:
                have = markers(p)
            except (OSError, ValueError):
                continue
            said.append(f"{p} has {self.provider}:{marker}" if marker in have else
                        f"{p} has no {self.provider}:{marker} (its markers: "
                        f"{', '.join(sorted(have)) or 'none'})")
        return "".join(f"; {x}" for x in said)


PYTHON = "/usr/bin/python3.11"  # Debian's, with its markers (not a pyenv build)
# The release's own CPython, whatever its version (3.11 on Debian 12, 3.13 on
# 13, 3.14 in sid): the gc markers every one of them still has.
PYTHON3 = os.path.realpath("/usr/bin/python3")
WORKLOADS = {w.name: w for w in (
    Python("python", PYTHON, (PYTHON, "-I", "-S", os.path.join(ROOT, "src", "workloads",
                                                                  "calls.py")),
             "python", "python3.11",
             "Debian's CPython 3.11 (--with-dtrace), each thread calling a one-line "
             "function ITER times (src/workloads/calls.py)",
             counted="each thread's calls by its own count: past the gate every "
                     "function__entry is one of them, every function__return one of them "
                     "returning or one of a thread's work() and the main module's",
             threads_are="a thread's wall time a call: the GIL's turns", serial=True,
             in_lab=True),
    Python("pygc", PYTHON3, (PYTHON3, "-I", "-S", os.path.join(ROOT, "src", "workloads",
                                                                "calls.py"), "--gc"),
           "python", "python3-minimal",
           "the release's own CPython (/usr/bin/python3: 3.11 on Debian 12, 3.13 on 13), each "
           "thread calling gc.collect(0) ITER times (src/workloads/calls.py --gc)",
           counted="each thread's collections by its own count: automatic collection is off "
                   "and none runs at exit, so every gc__start and gc__done past the gate is "
                   "one of them",
           threads_are="a thread's wall time a call: the GIL's turns", serial=True),
    Postgres("postgres", os.path.join(PG_BIN, "postgres"),
             (sys.executable, os.path.join(ROOT, "src", "workloads", "pgbench.py")),
             "postgresql", PG_PACKAGE,
             "Debian's PostgreSQL (15 on Debian 12, 17 on 13) in a throwaway cluster, THREADS "
             "pgbench clients of ITER "
             "TPC-B-like transactions each (src/workloads/pgbench.py)",
             by_path=True, warmup_iter=200, max_iter=20000, floor_iter=500, hold_timeout=300,
             counted="query__start's by pg_stat_statements' sum of calls (the reset's "
                     "SELECT in it, the reading SELECT not: they cancel); none of its other "
                     "markers",
             needs=((os.path.join(PG_BIN, "pgbench"), PG_PACKAGE),),
             call="transaction", serial=True,
             figures=(("tps", "pgbench's tps [transactions/s]", True),
                      ("latency_ms", "pgbench's latency [ms]", False)),
             threads_are="pgbench clients, each its own backend, all on one CPU"),
    Command(USER, "", (sys.executable, os.path.join(ROOT, "src", "workloads", "command.py")),
            "", "", "your TARGET, PROBE and WORKLOAD (make run TARGET=... PROBE=... "
            "WORKLOAD=...), THREADS copies of the command at once, ITER runs each",
            by_path=True, warmup_iter=1, max_iter=1000, floor_iter=1, call="run",
            counted="nothing: the command keeps no count of the marker",
            threads_are="copies of the command at once"),
)}


def get(name, inputs=None):
    """Workload NAME: a user's (USER) is the run's own where INPUTS (the
    runner's arguments) hold one (user()), else the registry's, which
    names no program."""
    if name == USER and getattr(inputs, "user", None) is not None:
        return inputs.user
    return WORKLOADS[name]


def refresh():
    """What an install just brought: PostgreSQL's binaries are named by
    the version the release installed (the postgresql metapackage's)."""
    b = pg_bin()
    pg = WORKLOADS["postgres"]
    WORKLOADS["postgres"] = dataclasses.replace(
        pg, program=os.path.join(b, "postgres"), needs=((os.path.join(b, "pgbench"), PG_PACKAGE),))


def unavailable(w, marker, semaphores=()):
    """Why workload W cannot run here with a probe at MARKER (and the
    SEMAPHORES of those markers raised), or None."""
    if platform.machine() not in READ_SYSCALL:
        return f"the held target's gate is read from /proc/PID/syscall, not known on " \
               f"{platform.machine()}"
    why = w.unavailable()
    if why:
        return why + w.elsewhere(marker)
    try:
        have = markers(w.program)
    except (OSError, ValueError) as e:
        return f"{w.program}: {e}"
    for m in (marker, *semaphores):
        if m not in have:
            return (f"{w.program} has no {w.provider}:{m} marker (it has: "
                    f"{', '.join(sorted(have)) or 'none'}): a build without --with-dtrace?")
        if m in semaphores and not have[m].semaphore:
            return f"{w.program}: its {w.provider}:{m} marker has no semaphore"
    return None


# read(2)'s number, as /proc/PID/syscall gives it, by machine.
READ_SYSCALL = {"x86_64": "0", "aarch64": "63"}


def wait_held(pid, alive, timeout=30.0):
    """Waits until process PID's main thread is blocked reading its stdin
    (the --hold gate of a workload's target: /proc/PID/syscall says read
    on fd 0); False if it did not get there within TIMEOUT seconds, or
    ALIVE() says it ended."""
    nr = READ_SYSCALL.get(platform.machine())
    end = time.monotonic() + timeout
    while nr and time.monotonic() < end and alive():
        try:
            with open(f"/proc/{pid}/syscall") as f:
                fields = f.read().split()
        except OSError:
            return False
        if fields[:2] == [nr, "0x0"]:  # read(0, ...)
            return True
        time.sleep(0.002)
    return False
