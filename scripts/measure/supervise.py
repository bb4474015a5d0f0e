"""supervise.py: the runner's process supervision, apart from what it
measures: starts a run's command in its own session, waits for it under a
time limit while the tracer back-end watches it, kills whatever is left
of the session, and undoes every attach and set-up that is still pending
(on success, failure, crash, hang and Ctrl-C).  What a dead tracer left
in uprobe_events on the kit's own target (bcc's and stapbpf's probes,
named after their pids) is removed after each run, and swept once more
at the end through a tracefs mount of its own if tracefs was unmounted.

Nothing to run: measure/kit.py's Kit owns one Supervisor.
"""
import os
import random
import re
import select
import signal
import subprocess
import time

import kitstate
import record
from host import check_signalled, say
from procs import live
from tracers import tracefs
from tracers.base import TracerError

POLL_S = 0.01  # the wait loop's sleep while it has a tracer's process or pid to look at
KILL_TRIES = 100  # rounds of SIGKILL over a session before giving up
KILL_PAUSE_S = 0.05  # between those rounds
WAIT_S = 10  # for a killed command to be reaped
EXPLAIN_LINES = 3  # lines of a failed run's log quoted in its reason
# Where the clock counts instructions (a guest under QEMU's -icount, no
# other clock in it), time passes only as instructions run, and an idle
# guest jumps to its next timer: after the fsync of a run's row, the next
# run began a fixed number of instructions after the kernel's tick, at one
# phase of it in every run (docs/findings/2026-12-07-the-tick-in-the-window.md).
# A random pause over a whole number of ticks at HZ=100, 250, 300 and 1000
# before each run gives each window the tick's own odds.
TICKS_S = 0.02


def exit_fd(pid):
    """A descriptor that reads ready once PID has ended (a pidfd), or None
    where the kernel has none (before 5.3): the wait then polls."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def pause(fd, seconds):
    """Sleeps SECONDS, or less if FD reads ready (its process ended)."""
    if fd is None:
        time.sleep(max(0.0, seconds))
    else:
        p = select.poll()
        p.register(fd, select.POLLIN)
        p.poll(max(0.0, seconds) * 1000)


class Supervisor:
    def __init__(self):
        self.child = None
        self.attached = []  # (tracer, run) whose detach is pending
        self.set_up = []  # back-ends whose teardown is pending
        self.tracer_pids = {}  # binary: pids of the tracer processes run on it

    def execute(self, tracer, run, cmd, limit, cwd, release=None, dephase=False):
        """Starts CMD in its own session and waits, up to LIMIT seconds.
        With RELEASE, CMD is a target that holds (--hold) until a byte on
        its stdin: RELEASE() runs once it has started (Popen returns after
        the exec, so its binary is mapped), then the byte is sent; if
        RELEASE raises, the target is killed and the error passed on.
        DEPHASE: a pause of a random part of TICKS_S just before the timed
        loop can start (before the Popen; with RELEASE, after RELEASE(),
        before the byte).  Returns (the target's record, the rusage of CMD
        and its children, why it failed or None)."""
        out_path = os.path.join(run.scratch, "target.json")
        stdin = subprocess.PIPE if release else subprocess.DEVNULL
        if dephase and not release:
            pause(None, random.uniform(0, TICKS_S))
        with open(out_path, "w") as out, open(run.log, "a") as log:
            log.write("$ " + " ".join(cmd) + "\n")
            log.flush()
            self.child = subprocess.Popen(cmd, stdout=out, stderr=log, stdin=stdin,
                                          cwd=cwd, start_new_session=True, env=run.env)
        run.pids.add(self.child.pid)
        run.target_pid = None if run.wrapped(cmd) else self.child.pid  # not a tracer's
        if release:
            try:
                release()
                if dephase:
                    pause(None, random.uniform(0, TICKS_S))
                self.child.stdin.write(b"\n")
            finally:
                self.child.stdin.close()  # the target's end of file, if not released
        status, rusage = self.wait(tracer, run, limit)
        if status is None:
            return None, None, f"{os.path.basename(cmd[0])} hung: killed after {limit:.0f} s"
        self.child.returncode = os.waitstatus_to_exitcode(status)
        self.kill_child()  # whatever the tracer left of the group (a stray target)
        name = os.path.basename(cmd[0])
        rc = self.child.returncode
        self.child = None
        with open(out_path) as f:
            text = f.read()
        with open(run.log, "a") as log:
            log.write(text)
        if rc < 0:
            return None, None, f"{name} was killed by signal {-rc} ({signal.Signals(-rc).name})"
        if rc != 0:
            return None, None, f"{name} exited with status {rc}" + explain(run.log,
                                                                             tracer.log_noise)
        rec, why = record.target_record(text)
        return rec, (rusage if rec else None), why

    def wait(self, tracer, run, limit):
        """Waits for the command execute started, up to LIMIT seconds:
        (its wait status, its rusage), or (None, None) where it was past
        LIMIT, and killed."""
        deadline = time.monotonic() + limit
        watching = True
        # One loop, one sleep a turn: the runner must not compete for a CPU
        # with the run it measures, and the time limit holds in every state.
        # With nothing else to look at (no tracer's process of its own, no
        # pid to learn), the turn's sleep lasts until the command ends (its
        # pidfd): a wake-up every POLL_S, its timer interrupt and the
        # runner's turn, could land in the timed window of a run.
        ended = exit_fd(self.child.pid)
        try:
            while True:
                gone = tracer.live_ended(run)  # (looked at before the target: see below)
                pid, status, rusage = os.wait4(self.child.pid, os.WNOHANG)
                if pid:
                    return status, rusage
                if gone:  # the tracer's own process ended, and the target runs on
                    run.state.live.early = True
                check_signalled()  # one that landed in a step that had deferred it
                if watching:
                    watching = not tracer.watch(run, self.child.pid)
                if time.monotonic() > deadline:
                    self.kill_child()
                    return None, None
                quiet = ended is not None and not watching and not tracer.live_watched(run)
                pause(ended, deadline - time.monotonic() + POLL_S if quiet else POLL_S)
        finally:
            if ended is not None:
                os.close(ended)

    def kill_child(self):
        """Kills the run's whole session and the tree below the command,
        by pid: the command, and whatever it started, even if a tracer
        moved it to another process group or died and left it to init (a
        target outliving a crashed stapbpf), or it started it in a session
        of its own (a PostgreSQL backend: setsid)."""
        c = self.child
        if c is None:
            return
        for _ in range(KILL_TRIES):
            left = run_members(c.pid)
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if c.returncode is None:
                try:
                    c.wait(timeout=WAIT_S)
                except subprocess.TimeoutExpired:
                    pass
            if not left:
                break
            time.sleep(KILL_PAUSE_S)

    def attach(self, tracer, run):
        self.attached.append((tracer, run))  # detach undoes whatever part was done
        tracer.attach(run)

    def detach(self, tracer, run):
        self.kill_child()
        tracer.detach(run)  # if this raises, cleanup() tries again
        if (tracer, run) in self.attached:  # a release that failed before it attached: not
            self.attached.remove((tracer, run))
        self.remove_leftovers(run)

    def remove_leftovers(self, run):
        """Removes what the run's dead tracer processes left on its target
        (and remembers them for the sweep at the end)."""
        pids = {p for p in getattr(run, "pids", ()) if not os.path.exists(f"/proc/{p}")}
        self.tracer_pids.setdefault(run.build, set()).update(pids)
        if not pids or not tracefs.find():
            return
        try:
            removed = tracefs.remove_leftovers(run.build, pids)
            line = removed and (f"removed {len(removed)} uprobe events the tracer left "
                                f"behind: {' '.join(removed)}")
        except OSError as e:  # the sweep at the end tries again
            line = f"could not remove the uprobe events the tracer left behind: {e.strerror}"
        if line:
            with open(run.log, "a") as f:
                f.write(line + "\n")

    def setup(self, tracer, log):
        self.set_up.append(tracer)  # teardown undoes whatever part of setup was done
        tracer.setup(log)

    def cleanup(self):
        """Every attach and set-up still pending undone, each tried whatever
        the others did; one that fails keeps the kit registered
        (kitstate.keep): the next kit sweeps what it left."""
        self.kill_child()
        for tracer, run in list(self.attached):
            try:
                tracer.detach(run)
            except (TracerError, OSError) as e:
                failed(f"cleanup of {run.cfg.name}: {e}")
            self.attached.remove((tracer, run))
            self.remove_leftovers(run)
        for t in self.set_up:
            try:
                t.teardown()
            except (TracerError, OSError) as e:
                failed(f"teardown of {t.name}: {e}")
        self.set_up = []
        tracefs.MOUNTS.release()
        self.sweep()

    def sweep(self):
        """Last look, through a tracefs of its own where none is mounted
        now (an unmount hides uprobe events; it does not remove them)."""
        if not self.tracer_pids:
            return
        with tracefs.private() as t:
            for binary, pids in self.tracer_pids.items():
                try:
                    removed = tracefs.remove_leftovers(binary, pids, t) if t else []
                except OSError as e:
                    removed = []
                    failed(f"could not remove what tracers left on {binary}: {e.strerror}")
                if removed:
                    say(f"run: removed {len(removed)} uprobe events tracers left on "
                        f"{os.path.basename(binary)}: {' '.join(removed)}")


def failed(what):
    """A part of the kit's own cleanup failed (WHAT): said, and the kit kept
    registered for the next kit to sweep what it left (kitstate.keep)."""
    say(f"run: {what} (left for the next kit's sweep)")
    kitstate.keep(what)


def run_members(sid):
    """Pids of the live processes (zombies excluded) in session SID and
    below any of them, from one look at /proc (a tree is killed whole
    before its children are left to init)."""
    procs = live()
    kids = {}
    for pid, fields in procs:
        kids.setdefault(int(fields[1]), []).append(pid)
    out = [pid for pid, fields in procs if int(fields[3]) == sid]
    todo = list(out)
    while todo:
        for k in kids.get(todo.pop(), []):
            if k not in out:
                out.append(k)
                todo.append(k)
    return out


def explain(log, noise=()):
    """The lines of a failed run's log that say what went wrong, less the
    tracer's NOISE (lines it prints on every run, failed or not)."""
    with open(log, errors="replace") as f:
        lines = [ln.strip() for ln in f if ln.strip() and not ln.startswith(("{", "$", "Tip:"))
                 and not any(n in ln for n in noise)]
    why = [ln for ln in lines
           if re.search(r"error|abort|signal|lost|fail|cannot|invalid|no such", ln, re.I)]
    return (": " + " / ".join(why[-EXPLAIN_LINES:])) if why else ""
