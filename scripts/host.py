"""host.py: the ground floor every wing stands on, importing nothing of
the kit but procs.py (the processes under /proc): where the checkout is
(ROOT, BUILD), a line for the human (say), the one command runner every
other runner wraps (run) and its stop of a tree, the one atomic JSON
writer (write_json), and preparing this machine: `make all`, and whether
an interpreter has matplotlib.

Nothing to run: `import host`.
"""
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from procs import below, kill_group, proc_stat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# build/'s root file systems (make lab's guests', the trixie userland's of
# make test-userland): never copied with the kit, which reads their /dev/full
# as a file until the disk is full (the lab's guest image and the mutants'
# copies both did, on 2026-12-05)
ROOT_FILE_SYSTEMS = ("lab", "userland")
# The kit's own make, as its scripts call it: silent, and never "Entering
# directory" on stdout, which a make started with -C (or under another make,
# whose MAKEFLAGS carry w) would print into the word lists read from it.
MAKE = ["make", "-s", "--no-print-directory", "-C", ROOT]
BUILD = os.path.join(ROOT, "build")
SHM = "/dev/shm"  # POSIX shared memory (uftrace's buffers), a tmpfs (the kit's clusters)
STOP_GRACE_S = 120  # for a group's processes to clean up after SIGTERM (mmdebstrap unmounts)
TOOL_GRACE_S = 10  # for a tracer's tool (run whole) to end after SIGTERM
POLL_S = 0.1  # wait_for's step


def say(msg):
    """A line of progress for the human (stderr; the record is elsewhere).
    A terminal that hung up (SIGHUP) takes it with it: never an error."""
    try:
        print(msg, file=sys.stderr, flush=True)
    except OSError:
        pass


# -- being stopped -------------------------------------------------------------
# The signals that stop the kit as Ctrl-C does: what was measured is kept,
# everything attached, mounted or started is undone, and the kit exits 130.
STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# The signals that stopped it, once one has.  The handler raises
# Interrupted at once, unless a step that must not be cut in half runs
# (deferred(): a tool creating what it would leak half-made, such as `perf
# probe`, `lttng create` or apt-get); and since an exception raised while
# Python runs a finaliser (a Popen's __del__, say) is printed and dropped,
# the kit also checks this between steps: a signal is never lost.
SIGNALLED = []
_deferring = [0]


class Interrupted(KeyboardInterrupt):
    """The kit was told to stop (a signal: SIGNALLED names it); a
    KeyboardInterrupt, so that no `except Exception` swallows it and the
    lab's Ctrl-C paths take it as Ctrl-C."""


def check_signalled():
    if SIGNALLED:
        raise Interrupted(SIGNALLED[-1])


@contextlib.contextmanager
def deferred():
    """A step no signal may cut in half: one that lands meanwhile is kept
    in SIGNALLED and raised by the next check_signalled()."""
    _deferring[0] += 1
    try:
        yield
    finally:
        _deferring[0] -= 1


@contextlib.contextmanager
def stoppable():
    """STOPS handled as Ctrl-C while the block runs: the first raises
    Interrupted in it, unless a deferred() step (a tool run whole, a
    detach, the cleanup) runs, which keeps it for check_signalled()."""
    def on_signal(signum, _frame):
        SIGNALLED.append(signal.Signals(signum).name)
        # only the first stops the kit: a second Ctrl-C must not cut the
        # cleanup the first one started
        if not _deferring[0] and len(SIGNALLED) == 1:
            raise Interrupted(SIGNALLED[-1])
    old = {s: signal.getsignal(s) for s in STOPS}
    for s in STOPS:
        signal.signal(s, on_signal)
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


# -- commands ------------------------------------------------------------------
class Timeout(Exception):
    """A command past its time limit (stopped; OUTPUT is what it printed)."""

    def __init__(self, cmd, timeout, output):
        super().__init__(f"{os.path.basename(cmd[0])} did not finish in {timeout} s")
        self.cmd, self.timeout, self.output = cmd, timeout, output


def default_signals():
    """In a child before it execs: STOPS as the system has them (a kit
    that ignored them would hand that on, and its SIGTERM would not stop a
    hung tool)."""
    for s in STOPS:
        signal.signal(s, signal.SIG_DFL)


_started = threading.local()  # .into: the Started that started() gave this thread, or None


class Started:
    """The commands some threads started (started(), tracked()) and still
    wait for: those a stop from another thread may end, knowing they are
    its own (never a child it did not start, which a subreaper, say, also
    has).  Once stopping, a command started late is signalled as it starts."""

    def __init__(self):
        self.lock = threading.Lock()
        self.procs = {}  # Popen: whether it leads a process group of its own
        self.stopping = None  # the signal last sent to all

    def add(self, p, group):
        with self.lock:
            self.procs[p] = group
            if self.stopping:
                self.signal(p, group, self.stopping)

    def discard(self, p):
        with self.lock:
            self.procs.pop(p, None)

    def signal_all(self, sig):
        """SIG to every command here and to each one started from now on."""
        with self.lock:
            self.stopping = sig
            for p, group in self.procs.items():
                self.signal(p, group, sig)

    def __len__(self):
        with self.lock:
            return len(self.procs)

    def stop(self, grace=TOOL_GRACE_S):
        """Stops the commands here (other threads wait for them), and
        those started here from now on: SIGTERM to each one (its process
        group where it has one), SIGKILL to those still there after GRACE
        seconds.  Returns when every one's wait has returned, or
        STOP_GRACE_S after the SIGKILL."""
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, STOP_GRACE_S)):
            self.signal_all(sig)
            if wait_for(lambda: not len(self), wait):
                return

    @staticmethod
    def signal(p, group, sig):
        # Not reaped yet (its thread's wait sets returncode): its pid, and so its group's, is
        # still its own; it could only be reaped and the pid taken again in between.
        if p.returncode is None:
            try:
                if group:
                    os.killpg(p.pid, sig)
                else:
                    os.kill(p.pid, sig)
            except OSError:
                pass


@contextlib.contextmanager
def started(into):
    """Within it, each command this thread starts with run() or
    tracers.stap_preflight.on_a_tty() is in INTO (a Started) from just
    after it starts until its wait there returns."""
    before = getattr(_started, "into", None)
    _started.into = into
    try:
        yield into
    finally:
        _started.into = before


@contextlib.contextmanager
def tracked(p, group=True):
    """Within it, the Popen P, just started by this thread (GROUP: in a
    process group of its own), is in the Started that started() gave this
    thread, if any; run() and stap_preflight.on_a_tty() wait in it."""
    into = getattr(_started, "into", None)
    if into is not None:
        into.add(p, group)
    try:
        yield
    finally:
        if into is not None:
            into.discard(p)


def run(cmd, timeout=None, log=None, env=None, cwd=None, group=False, capture=True,
        stdin=subprocess.DEVNULL, stderr=True, whole=False, grace=None):
    """Runs CMD (a list, never a shell string) and returns (exit status,
    its output: stdout and, unless not STDERR (then discarded), stderr
    together, text; '' unless CAPTURE, when the output goes to the kit's
    stderr instead).  LOG, if given, gets
    `$ CMD` and the output appended.  GROUP: in a process group of its own,
    which, stopped early (TIMEOUT, Ctrl-C, SIGTERM), gets SIGTERM and then
    SIGKILL after GRACE seconds (STOP_GRACE_S); else only CMD is killed.
    WHOLE: a step no signal may cut in half (deferred(), in a group of its
    own so that the terminal's signals do not reach it either; GRACE
    TOOL_GRACE_S unless given).  Past TIMEOUT: Timeout,
    carrying the output so far.  OSError (no such program) is the
    caller's."""
    if grace is None:
        grace = TOOL_GRACE_S if whole else STOP_GRACE_S
    if whole:
        with deferred():
            return run(cmd, timeout, log, env, cwd, True, capture, stdin, stderr, grace=grace)
    out = subprocess.PIPE if capture else sys.stderr
    err = (subprocess.STDOUT if stderr else subprocess.DEVNULL) if capture else None
    p = subprocess.Popen(cmd, stdout=out, stderr=err,
                         text=True, errors="replace", stdin=stdin, env=env, cwd=cwd,
                         start_new_session=group, preexec_fn=default_signals)
    with tracked(p, group):
        return _wait(p, cmd, timeout, log, group, capture, grace)


def _wait(p, cmd, timeout, log, group, capture, grace):
    """run()'s wait for P, its output and its log."""
    timed_out = False
    try:
        text, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as e:
        # what it printed so far (bytes, whatever text=); the pipe is not
        # read again: a child it left behind may hold it open for ever
        timed_out = True
        stop(p, group, grace)
        text = (e.output or b"").decode(errors="replace") if capture else ""
        if p.stdout:
            p.stdout.close()
    except BaseException:
        stop(p, group, grace)
        raise
    text = text or ""
    if log:
        with open(log, "a") as f:
            f.write("$ " + " ".join(cmd) + "\n" + text)
    if timed_out:
        raise Timeout(cmd, timeout, text)
    return p.returncode, text


def stop(p, group=True, grace=STOP_GRACE_S):
    """SIGTERM to P (its process group where GROUP), SIGKILL if it is not
    gone in GRACE seconds (5 for a lone command); P reaped."""
    for sig, wait in ((signal.SIGTERM, grace if group else 5), (signal.SIGKILL, None)):
        try:
            if group:
                os.killpg(p.pid, sig)
            else:
                p.send_signal(sig)
        except ProcessLookupError:
            break
        try:
            p.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    p.wait()


def first_line(cmd, timeout=20):
    """The first line CMD prints (a tool's --version), or None if it cannot run."""
    try:
        return (run(cmd, timeout=timeout)[1].strip().splitlines() or [""])[0]
    except (OSError, Timeout):
        return None


def write_json(path, obj, indent=2, sort_keys=False):
    """Writes OBJ whole or not at all (a crash leaves the old file): its
    bytes reach the disk before the name does, or a guest killed within
    the file system's writeback delay leaves a named but empty file.  The
    temporary file is made exclusively under a name no one can guess (a
    link planted at a fixed name would have root write through it), its
    mode the umask's, as open() would make it; PATH itself is replaced,
    never written through (a link there is replaced, not followed)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=indent, sort_keys=sort_keys)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# -- processes -----------------------------------------------------------------
def wait_for(done, seconds):
    """Polls DONE() every POLL_S until it is true (True) or SECONDS pass (False)."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_S)
    return True


def stop_tree(p, grace=STOP_GRACE_S):
    """SIGTERM to P's process group (P a Popen started in a session of its
    own), then a wait until P and every process that was below it are gone
    (a tool that exits at once leaves a make run below it still undoing
    what it attached; a step the kit runs whole, in a group of its own, is
    not signalled and is let finish), then SIGKILL, after GRACE seconds, to
    those of them still in P's group and still the same processes (their
    start time); P reaped."""
    def start_time(pid):
        st = proc_stat(pid)
        return st[1][19] if st and st[1][0] != "Z" else None

    def in_group(pid):
        st = proc_stat(pid)
        return st and int(st[1][2]) == p.pid
    started = {pid: start_time(pid) for pid in below(p.pid)}
    try:
        os.killpg(p.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass

    def gone():
        p.poll()
        return p.returncode is not None and not any(
            start_time(x) == t for x, t in started.items() if t is not None)
    if not wait_for(gone, grace):
        kill_group(p, [pid for pid, t in started.items()
                       if t is not None and start_time(pid) == t and in_group(pid)])
    p.wait()


# -- preparing the machine -----------------------------------------------------
def build_needs():
    """The Debian packages the builds that cannot be made here need
    (`make needs`): the runner's and the lab's (the lab's guests run the
    builds made here)."""
    return set(run([*MAKE, "needs"], stderr=False)[1].split())


MATPLOTLIB_PACKAGE = "python3-matplotlib"  # Debian's: what the plots need


def has_matplotlib(python):
    """PYTHON can import matplotlib (found, not imported: importing it takes
    a second)."""
    try:
        return run([python, "-c", "import importlib.util, sys; "
                    "sys.exit(importlib.util.find_spec('matplotlib') is None)"])[0] == 0
    except OSError:
        return False
