"""workloads.py: programs someone else wrote, run as the kit's target: each
workload names the binary its markers are in, the command that runs it
(printing the kit's target record, as build/benchmark-* does), and what it
needs here: Python, PostgreSQL, and a user's TARGET/PROBE/WORKLOAD (the
python-*, postgres-* and user-* configurations, configs.py).

Nothing to run: measure/kit.py starts a workload's command where a
configuration names one (the markers' semaphores raised by semaphores.py
where a row wants them).  Some 550 lines,
past the house's ~450: the workloads' table and the verbs every real
program shares (its binary, markers, semaphores, held target) are read
in one place; PostgreSQL's cluster folders and their cleanup (some 150
lines) are the next room to move out, with the Workload base beside
them so that neither imports the other.
"""
import dataclasses
import glob
import hashlib
import json
import os
import platform
import pwd
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import host
from host import ROOT
from private import Private
from semaphores import markers
import semaphores


@dataclass(frozen=True)
class Workload:
    """A program someone else wrote, run as the kit's target, and its verbs:
    unavailable() (why it cannot run here, one line), prepare() (what its
    command needs made first: the extra arguments), cleanup() (what a run
    left, removed whatever happened), and its own count of each marker, in
    its record's "fired" (where it keeps none, a tracer's count is
    unverified)."""
    name: str
    program: str  # the ELF file whose markers are probed
    argv: tuple  # the command before the kit's --threads, --iterations, ...
    provider: str  # the markers' provider
    package: str  # the Debian package of PROGRAM
    description: str
    # The probe is on every process mapping PROGRAM (a server's backends,
    # started after the attach), not on the held target's own threads.
    by_path: bool = False
    warmup_iter: int = None  # a warm-up's calls (transactions) a thread; None: sizing's
    hold_timeout: float = 30.0  # s for its target to reach its gate (a cluster is made first)
    max_iter: int = 10 ** 9  # the most calls a thread makes in a run (QUICK's ITER too)
    floor_iter: int = None  # the fewest a sized run makes (None: sizing.FLOOR_ITER)
    marker: str = ""  # the marker every row of the family probes, where the rows leave it open
    command: tuple = ()  # a user's command (Command)
    counted: str = ""  # how it counts its markers (each traced row's note says)
    needs: tuple = ()  # (command, package) beside PROGRAM
    call: str = "call"  # what one of its ITER calls a thread is
    threads_are: str = ""  # what its THREADS are, where more than 1 share something
    serial: bool = False  # its threads take turns (one runs at a time)
    # make lab runs its rows: its program comes with the guests' root file
    # system (python3 does; PostgreSQL would add ~60 MB a suite)
    in_lab: bool = False
    # its own figures a run (its record's "workload": the column of that
    # name) that the report sets out with intervals: (key, header with unit,
    # a rate: averaged as its inverse, stats.own_figures)
    figures: tuple = ()

    def bystanders(self):
        """Processes not the kit's that its by-path probes would count."""
        return []

    def why_silent(self):
        """What the kit can find of why its marker never fired ('': nothing
        to look at beyond the count)."""
        return ""

    def timing_key(self):
        """What its rows' timings are kept under beside their names ('':
        the name says it all)."""
        return ""

    def raises_at_exec(self):
        """Whether the runner can raise its markers' semaphores in each of
        its processes as it maps PROGRAM (exec_env), where none exists
        before the attach."""
        return False

    def semaphore_holders(self, target_pid):
        """The processes whose markers' semaphores the runner raises
        (through /proc/PID/mem) before the calls, where a row names them
        and its tracer does not raise them: the held target itself."""
        return [target_pid]

    def elsewhere(self, marker):
        """Where it is unavailable: what else here has MARKER ('; ...'), or ''."""
        return ""

    def unavailable(self):
        """Why it cannot run here at all (before any marker), or None."""
        if not os.path.exists(self.program):
            return f"{self.program} not found (Debian package {self.package})"
        for c, pkg in self.needs:
            if not os.path.exists(c):
                return f"{c} not found (Debian package {pkg})"
        return None

    def missing(self):
        """The Debian packages of what it needs that this machine lacks."""
        return sorted({pkg for path, pkg in ((self.program, self.package), *self.needs)
                       if pkg and not os.path.exists(path)})  # (a user's program: no package)

    def prepare(self, scratch):
        """The extra arguments of one run's command, with what they name
        made under SCRATCH (a folder of the run's own)."""
        return []

    def cleanup(self, scratch, log):
        """Removes what a run left (its processes, memory, folders), on
        every path, killed runs too; LOG gets a line per thing removed."""

    def teardown(self, kit_scratch):
        """Removes what the kit's runs shared (made by prepare), at its end."""


class Postgres(Workload):
    """A throwaway cluster in a folder of the run's own, copied from a
    template cluster the kit makes once, each made as private.py says
    (issue 56): a folder of root's with a random name (mkdtemp, 0711 under
    root, held by descriptor), and inside it, made through that
    descriptor, `pg`: the cluster owner's (`postgres`), 0700, where the
    data and the socket go.  No name another user plants is taken, and the
    owner cannot swap the folder for a link (it is root's, in a sticky
    folder).  The driver is told the binaries' folder and the owner
    (--bin, --owner: their one home is here).  Cleanup after the target
    (its session and the tree below it killed by pid, measure/supervise.py):
    any process of the cluster's owner whose working folder is the kit's
    own cluster folder, by inode (a backend, in a session of its own, that
    outlived its server), each SysV segment a postmaster.pid there names,
    if it is still the owner's, of that key, with nothing attached; then
    the run's folder, while its name still leads to the one the kit made."""

    def unavailable(self):
        why = super().unavailable()
        if why:
            return why
        if os.geteuid() == 0:
            try:
                pwd.getpwnam(PG_OWNER)
            except KeyError:
                return f"no {PG_OWNER} user (the postgresql-common package makes it)"
        return None

    @staticmethod
    def made(prefix, suffix):
        """A cluster's folder (class doc): (the held root folder, its `pg`)."""
        root = os.geteuid() == 0
        held = Private.make(cluster_root(), prefix, suffix, 0o711 if root else 0o700)
        try:
            owner = pwd.getpwnam(PG_OWNER) if root else None
            inner = held.sub(PG_DIR, 0o700, *((owner.pw_uid, owner.pw_gid) if owner else ()))
        except BaseException:
            held.remove()
            raise
        return held, inner

    def prepare(self, scratch):
        kit_scratch = os.path.dirname(scratch)
        if kit_scratch not in _TEMPLATES:  # once a kit: kit<id>-scratch-<x>_<random>-pg-template
            _TEMPLATES[kit_scratch] = self.made(os.path.basename(kit_scratch) + "_",
                                                "-pg-template")
        template, tinner = _TEMPLATES[kit_scratch]
        template.check()
        tag = os.path.basename(scratch).rpartition("-")[0]  # kit<id>_<n>-<random>-pg
        _RUNS[scratch] = held, inner = self.made(tag + "-", "-pg")
        return ["--bin", os.path.dirname(self.program), "--owner", PG_OWNER, "--dir", inner,
                "--template", tinner]

    def cleanup(self, scratch, log):
        run = _RUNS.pop(scratch, None)
        template = _TEMPLATES.get(os.path.dirname(scratch))
        said = self.remove([run[0]] if run else [], keep=[template[0]] if template else [])
        if said:
            with open(log, "a") as f:
                f.write(f"workload cleanup: removed what the cluster left: {', '.join(said)}\n")

    def teardown(self, kit_scratch):
        template = _TEMPLATES.pop(kit_scratch, None)
        if template:
            self.remove([template[0]])

    def semaphore_holders(self, target_pid):
        """Every process of the cluster running PROGRAM: the postmaster
        (the held driver's child) and what it forked before the hold (the
        checkpointer, background writer, WAL writer, ...); the backends it
        forks for pgbench's clients after the hold inherit its raised
        counter (fork copies the page; no exec follows)."""
        real = os.path.realpath(self.program)
        out = []
        for pid in host.below(target_pid):
            try:
                if os.path.realpath(f"/proc/{pid}/exe") == real:
                    out.append(pid)
            except OSError:
                pass
        return out

    def bystanders(self):
        """Processes of PROGRAM that are not the kit's clusters' (a probe
        by path counts their events too): their pids."""
        mine = {i for held, _ in [*_RUNS.values(), *_TEMPLATES.values()]
                for i in map(held.inode_of, CLUSTER_FOLDERS) if i}
        out = []
        for pid in host.pids():
            try:
                if os.readlink(f"/proc/{pid}/exe") != self.program:
                    continue
            except OSError:
                continue
            if cwd_inode(pid) not in mine:
                out.append(pid)
        return out

    @staticmethod
    def remove(folders, keep=()):
        """Kills the cluster owner's processes working in FOLDERS (and
        KEEP), each a held private.Private, by the inode of its folders
        (never a path), removes the SysV segments their clusters'
        postmaster.pid files name, then FOLDERS (while their names lead
        to them); what it removed, in words."""
        said = []
        inodes = set()
        for held in [*folders, *keep]:
            inodes |= {held.id, *(i for i in map(held.inode_of, CLUSTER_FOLDERS) if i)}
        owner = cluster_owner_uid()
        if inodes:
            said += [str(pid) for pid in host.kill_all(
                lambda pid, _f: uid_of(pid) == owner and cwd_inode(pid) in inodes)]
        for held, d in ((h, d) for h in [*folders, *keep] for d in CLUSTER_FOLDERS[1:]):
            seg = shm_of(held.fd, f"{d}/{PG_PIDFILE}")
            if seg and shm_free(*seg):
                try:
                    subprocess.run(["ipcrm", "-m", str(seg[1])], check=True, capture_output=True)
                    said.append(f"shared memory segment {seg[1]}")
                except (OSError, subprocess.CalledProcessError):
                    pass
        for held in folders:
            if not held.remove():
                said.append(f"not {held.path}: its name leads elsewhere now")
        return said


_TEMPLATES = {}  # {a kit's scratch: (held, its pg)}: the template cluster, made once a kit
_RUNS = {}  # {a run's scratch: (held, its pg)}: the run's cluster
PG_DIR = "pg"  # inside a cluster's folder: the owner's, with data/ and the socket
# where a cluster's processes work: pg (initdb, cp), its data (the server and
# its backends), a template's half-made one (pgbench.py)
CLUSTER_FOLDERS = (PG_DIR, f"{PG_DIR}/data", f"{PG_DIR}/building")


def cluster_root():
    """Where the clusters go: /dev/shm, a tmpfs, where there is one (a run's
    copy of the template is written and removed in memory, so no disk
    write-back lands on the runs after it), else the temporary folder."""
    if os.path.isdir(host.SHM) and os.access(host.SHM, os.W_OK):
        return host.SHM
    return tempfile.gettempdir()


PG_OWNER = "postgres"


def cluster_owner_uid():
    """Whose the clusters' folders are: PG_OWNER's under root (prepare),
    else this user's."""
    if os.geteuid() == 0:
        try:
            return pwd.getpwnam(PG_OWNER).pw_uid
        except KeyError:
            return 0
    return os.geteuid()
PG_PIDFILE = "postmaster.pid"
PG_PACKAGE = "postgresql"  # Debian's metapackage: the release's own (15 on Debian 12, 17 on 13)


def pg_bin():
    """The newest installed PostgreSQL's binaries (Debian's
    /usr/lib/postgresql/N/bin), or 15's (Debian 12's) where none is yet."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"),
                   key=lambda p: [int(x) for x in p.split("/")[4].split(".") if x.isdigit()])
    return os.path.dirname(found[-1]) if found else "/usr/lib/postgresql/15/bin"


PG_BIN = pg_bin()


def cwd_inode(pid):
    """(dev, ino) of PID's working folder, or None."""
    try:
        st = os.stat(f"/proc/{pid}/cwd")
        return st.st_dev, st.st_ino
    except OSError:
        return None


def uid_of(pid):
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def shm_of(dir_fd, pidfile):
    """(key, id) of the SysV shared memory that a postmaster.pid names (its
    7th line, "KEY ID"), PIDFILE read relative to DIR_FD, or None."""
    try:  # a plain file only, read whole but bounded (never a FIFO's open, /dev/zero's read)
        fd = os.open(pidfile, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dir_fd)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            text = os.read(fd, 4096).decode(errors="replace")
        finally:
            os.close(fd)
        key, shmid = text.splitlines()[6].split()[:2]
        return int(key), int(shmid)
    except (OSError, IndexError, ValueError):
        return None


def shm_free(key, shmid):
    """SysV segment SHMID is still KEY's, the cluster owner's, and nothing
    is attached to it (/proc/sysvipc/shm): a postmaster.pid left by a
    killed server may name an id since given to someone else."""
    try:
        uid = cluster_owner_uid()
        with open("/proc/sysvipc/shm") as f:
            for line in f.readlines()[1:]:
                # key shmid perms size cpid lpid nattch uid ...
                k, i, _, _, _, _, nattch, owner = (int(x) for x in line.split()[:8])
                if i == shmid:
                    return k == key and owner == uid and nattch == 0
    except (OSError, KeyError, ValueError):
        pass
    return False


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
        real, mine = os.path.realpath(self.program), {os.getpid(), *host.below(os.getpid())}
        out = []
        for pid in host.pids():
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
