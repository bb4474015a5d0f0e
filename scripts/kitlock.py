"""kitlock.py: one kit at a time on a machine.

Two kits on one machine would share the LTTng session daemon and the
tracefs mount (the first one's teardown kills or unmounts them under the
second) and delete each other's guest images: make run, make lab, make
lifecycle, make atlas and the suite's root tests hold this lock, taken
after the input is checked and before anything is installed, built or
attached.  A second kit says who holds it and waits, LOCK_WAIT_S at most.

Nothing another user of the machine writes is believed (issue 48):
- the file is root's own, in a folder only root may write (/run), opened
  without following a link, 0644, and refused where it is someone else's;
- who holds it is the kernel's word (/proc/locks), never a pid written in
  the file: a kit goes on under the lock only where the process holding
  the flock is one of its ancestors (the suite's runs, make atlas's labs);
- the wait has a limit, and the line says which process, of which user,
  holds it.
Without root a kit can create no file in /run: it waits on root's kit's
file where there is one, and otherwise goes on (a kit without root
attaches nothing: LTTng's and uftrace's rows, its own session daemon).
KIT_LOCK names another file (the tests of the lock itself).

Nothing to run: `import kitlock; kitlock.lock("run", wait_s)`.
"""
import atexit
import fcntl
import os
import pwd
import stat
import time

from host import say
from procs import proc_stat, uid_of

LOCK = os.environ.get("KIT_LOCK") or "/run/usdt-tracing-kit.lock"
LOCK_WAIT_S = 4 * 3600  # LOCK_WAIT_S's default (params.py): longer than any make lab here
POLL_S = 0.5  # how often a waiting kit tries the flock again
_held = []  # the open file whose flock this process holds


class Refused(SystemExit):
    """The lock cannot be taken (not the kit's file, or held past the
    wait): the kit stops with nothing done, saying why (exit 1)."""

    def __init__(self, why):
        say(why)
        super().__init__(1)


def ancestors():
    """The pids above this process, its parent first."""
    out, pid = [], os.getppid()
    while pid > 1:
        out.append(pid)
        st = proc_stat(pid)
        pid = int(st[1][1]) if st else 0
    return out


def holders(f):
    """The processes holding a flock on open file F: the pids the kernel
    lists in /proc/locks (a lock's line names its kind, its pid and the
    file as MAJOR:MINOR:INODE; a waiter's line has "->" and holds
    nothing), each only while it has the file open (the pid listed is the
    locker's, which may have exited and left its lock to a child, and its
    number to someone else).  A file system whose stat() device is not its
    super block's (btrfs) is matched by inode, the open file confirming."""
    st = os.fstat(f.fileno())
    pids = set()
    with open("/proc/locks") as p:
        for line in p:
            words = line.split()
            if "FLOCK" not in words or "->" in words:
                continue
            for i, w in enumerate(words):
                parts = w.split(":")
                if len(parts) == 3 and parts[2] == str(st.st_ino):
                    pid = next((int(x) for x in reversed(words[:i]) if x.isdigit()), None)
                    if pid:
                        pids.add(pid)
    return sorted(p for p in pids if has_open(p, st))


def has_open(pid, st):
    """Process PID has the file of stat ST open."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.path.samestat(os.stat(f"/proc/{pid}/fd/{fd}"), st):
                return True
        except OSError:
            pass
    return False


def who(pid):
    """PID in words: 'pid N, user U: its command line' (what its user
    wrote there, so only printable characters)."""
    try:
        user = pwd.getpwuid(uid_of(pid)).pw_name
    except (TypeError, KeyError):
        user = "?"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = " ".join(x.decode(errors="replace") for x in f.read().split(b"\0") if x)
    except OSError:
        cmd = "gone"
    cmd = "".join(c if c.isprintable() else "?" for c in cmd[:160])
    return f"pid {pid}, user {user}: {cmd or '?'}"


def open_lock():
    """LOCK opened for its flock, or None where there is none to wait on
    (a kit without root, and no root kit's file).  Refused: a link, not a
    plain file (a FIFO would block the open: O_NONBLOCK), a second name
    for another file (a hard link), or another user's."""
    mine = os.geteuid()
    flags = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        if mine == 0:
            os.makedirs(os.path.dirname(LOCK), mode=0o755, exist_ok=True)
        fd = os.open(LOCK, os.O_RDWR | os.O_CREAT | flags, 0o644)
    except PermissionError:  # without root: root's file, read-only (flock needs no write)
        try:
            fd = os.open(LOCK, os.O_RDONLY | flags)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise Refused(f"kit: the lock {LOCK} cannot be opened: {e.strerror}")
    except OSError as e:  # ELOOP: a symbolic link
        raise Refused(f"kit: the lock {LOCK} is not the kit's ({e.strerror}): it makes the "
                      "file itself, root's and 0644; remove it if no kit runs")
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_uid not in (0, mine):
        os.close(fd)
        raise Refused(f"kit: the lock {LOCK} is not the kit's (uid {st.st_uid}, mode "
                      f"{stat.filemode(st.st_mode)}, {st.st_nlink} names): it makes the file "
                      "itself, root's and 0644; remove it if no kit runs")
    if st.st_uid == mine and st.st_mode & 0o022:
        os.fchmod(fd, 0o644)  # ours, but writable by others (an older kit made it 0666)
    writable = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDWR
    return os.fdopen(fd, "r+" if writable else "r")


def lock(whose, wait_s=None):
    """Takes the machine-wide lock for WHOSE (run, lab, tests), waiting
    at most WAIT_S seconds (LOCK_WAIT_S) while another kit holds it, and
    holds it until this process ends, when its file is removed; a kit
    below the process that holds it (the suite's runs) goes on under it.
    Refused (exit 1, nothing done) past the wait or on a file not the
    kit's."""
    if _held:
        return
    wait_s = LOCK_WAIT_S if wait_s is None else wait_s
    said, end = None, time.monotonic() + wait_s
    f = None
    while True:
        f = f or open_lock()
        if f is None:
            return
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if same_file(f, LOCK):
                break
            f = f.close()  # its holder removed the file as we waited on it: the new one's
            continue
        except BlockingIOError:
            pass
        pids = holders(f)
        if set(pids) & set(ancestors()):
            f.close()
            return  # under the kit that holds it: its lock is ours
        holder = "; ".join(who(p) for p in pids) or "a process this kit cannot name"
        if os.geteuid() == 0 and 0 not in map(uid_of, pids) and same_file(f, LOCK):
            # Any user can flock root's 0644 file; only a root kit's hold
            # keeps a root kit waiting (one without root attaches nothing).
            say(f"{whose}: {LOCK} is held by no root kit ({holder}); taking a new one")
            os.unlink(LOCK)
            f = f.close()
            continue
        if said is None:
            say(f"{whose}: another kit holds {LOCK} ({holder}); waiting for it to finish, "
                f"{wait_s:g} s at most (LOCK_WAIT_S; Ctrl-C stops this one, nothing done yet)")
            said = holder
        if time.monotonic() >= end:
            f.close()
            raise Refused(f"{whose}: {LOCK} is still held after {wait_s:g} s ({holder}); "
                          "stopping with nothing done (LOCK_WAIT_S sets the wait)")
        time.sleep(min(POLL_S, max(0.0, end - time.monotonic())))
        if not same_file(f, LOCK):
            f = f.close()  # removed by its holder: wait on the new one
    if said is not None:
        say(f"{whose}: {LOCK} is ours now")
    if f.mode == "r+":  # for a person reading it; the kit never believes it
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()} {whose}\n")
        f.flush()
    _held.append(f)
    atexit.register(unlock)


def same_file(f, path):
    try:
        return os.path.samestat(os.fstat(f.fileno()), os.stat(path))
    except FileNotFoundError:
        return False


def unlock():
    """The lock's file removed (while still held, so that a kit waiting
    on it takes the next one, see lock()) and let go."""
    for f in _held:
        try:
            if same_file(f, LOCK):
                os.unlink(LOCK)
        except OSError:
            pass  # not ours to remove (a kit without root under root's file)
        f.close()
    _held.clear()
