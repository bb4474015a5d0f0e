"""pgcluster.py: PostgreSQL as the kit's target (the postgres-* rows: its
binaries, pg_bin), the one workload that leaves things behind: a
throwaway cluster's folders, made where no name another user plants is
taken (private.py, issue 56), and what its server leaves when a run is
killed (a backend that outlived it, SysV shared memory, the folders
themselves), removed on every path.  A room of its own because a dead
kit's sweep (leftovers.py) removes a cluster the same way a run's cleanup
does, and needs none of workloads.py's table to do it.

Nothing to run: workloads.py names Postgres in its table; leftovers.py
calls cluster_root, cluster_owner_uid and Postgres.remove.
"""
import glob
import os
import pwd
import stat
import subprocess
import tempfile

import host
import procs
from private import Private
from workload import Workload


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
        for pid in procs.below(target_pid):
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
        for pid in procs.pids():
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
            said += [str(pid) for pid in procs.kill_all(
                lambda pid, _f: procs.uid_of(pid) == owner and cwd_inode(pid) in inodes)]
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
