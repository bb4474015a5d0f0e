"""tracers/attached.py: what make lifecycle's verbs share, a tracer
attached by a binary's path to the sites of every process that maps it
(scripts/lifecycle drives them; make run's verbs are base.py's).

A back-end that make lifecycle can drive has a class `Attached` (ftrace.py,
bpftrace.py, perf.py, libbpf.py; SystemTap's in stap_attached.py), listed in
tracers.ATTACHED, made as

    Attached(kit, binary, sites, pid_filter=None, **way)

KIT is the lifecycle's: kit.tracefs (the mount), kit.log(name) (a log
file's path in its folder), kit.logs (that folder), kit.group (the name of
its uprobe_events group and tracing instance, leftovers.lifecycle_group)
and kit.args.lab_modules (make lab's modules built beforehand, or None);
SITES the markers (lifecycle's Sites: .binary, .provider, .offsets {name:
file offset}, .semaphores {name: file offset or None}); PID_FILTER the one
process it is to count (the bystander ways), WAY how it filters on it.
The verbs:

    start()      attach: start-up seconds (its own, before the attach), or
                 None where the tracer does not tell them apart
    ready()      True once the tracer says it records (beyond its
                 breakpoints, which the lifecycle reads from the processes)
    counts()     after stop(): {site: the events the tracer counted}; where
                 COUNTS_LIVE, before stop() only (what stop removes holds them)
    total()      every event it recorded (its counts' sum, or its own total:
                 ftrace's ring entries), when counts() can be read
    version()    its version line (a class's: ftrace's is its kernel's)
    SWEEPS       False for a tracer that is a bystander way only (no sweep)
    stop(limit)  detach: None, or why it was killed past LIMIT s; nothing
                 of it is left when this returns or raises
    name, path   its name, the attach path it takes (a class attribute, or
                 set once known)
    taken()      where it has it: the attach path it took, read once live
                 (bpftrace's, from what it holds), which the row gives

Nothing to run.
"""
import os
import re
import signal
import subprocess

import host
import kitstate

POLL_S = 0.002  # between two reads of every site (and of a tracer's log)
LIVE_LIMIT_S = 600  # s from a tracer's start to its probes live: past it the row fails


class TracerGone(Exception):
    """The tracer could not attach or ended early: its reason."""


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


class Process:
    """A tracer that is a process of its own: started in a session of its
    own, stopped with SIGINT as at a terminal, killed past the limit."""
    proc = None
    out = None
    COUNTS_LIVE = False  # its counts are its output, read once it has stopped
    SWEEPS = True

    @classmethod
    def version(cls):
        return host.first_line([cls.name, "--version"])

    def total(self):
        return sum(self.counts().values())

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
        """CMD started and kept as self.proc before any stop is taken: a
        Ctrl-C between its exec and the assignment would leave the tracer
        running unknown to the kit (seen: a bpftrace left by a lifecycle's
        Ctrl-C), so the stop waits for the assignment, then is raised."""
        self.out = log
        with host.deferred(), open(log, "w") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True, env=env, cwd=cwd,
                                         preexec_fn=host.default_signals)
            kitstate.tracer(self.proc.pid)  # (a SIGKILLed kit's: stopped by the next)
        host.check_signalled()

    def said(self):
        with open(self.out, errors="replace") as f:
            return f.read()

    def gone_why(self):
        if self.proc.poll() is not None:
            tail = [ln for ln in self.said().splitlines() if ln.strip()][-3:]
            raise TracerGone(f"{self.name} exited ({self.proc.returncode}) before its probes "
                             "were live: " + " | ".join(tail))
