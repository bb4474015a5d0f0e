"""fleet/pack.py: what make fleet sends and what comes back: the kit's
files (those git tracks) in one tarball, each host's results folder
unpacked into the fleet folder (plain files alone, the controller's own),
each host's status from the play's report, and the folders of its own
the fleet makes for the hosts on this machine.

Nothing to run: scripts/fleet's wing.
"""
import contextlib
import os
import shutil
import subprocess
import tarfile
import tempfile
import time

from host import ROOT
from .hosts import one_line

STATUSES = ("ok", "failed", "unreachable")  # a host's, in fleet.json
# The Ansible Vault file's first line (a copy of the kit never sends one).
VAULT_HEADER = b"$ANSIBLE_VAULT;"
INTERRUPTED = "the fleet was interrupted"  # the reason of a host that did not finish


def kit_files(root=ROOT):
    """The kit's files as the controller has them, relative to ROOT, and
    a line saying what was left out (or None).  Every host gets them, so
    never a file git does not track: an operator's group_vars, vault files
    or .env beside the kit are untracked, and a file git ignores (build/,
    results/) is no kit's.  git's index (`git ls-files -c`) is the rule,
    so a new file of the kit goes once it is added (or `git add -N`).
    Outside a git checkout (a release copy, tests/mutants.py's copies)
    nothing says which files are the kit's, and stopping there would leave
    a copy no fleet; so there it is every file but build/, results/, any
    name starting with '.' (.env, .git), Ansible's group_vars/ and
    host_vars/, and any file that is an Ansible Vault, and the line says so."""
    r = subprocess.run(["git", "-C", root, "ls-files", "-z", "-c"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    if r.returncode == 0:
        files = [f for f in r.stdout.decode().split("\0") if f]
        o = subprocess.run(["git", "-C", root, "ls-files", "-z", "-o", "--exclude-standard"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60)
        left = [f for f in o.stdout.decode().split("\0") if f] if o.returncode == 0 else []
        return files, (f"{len(left)} files git does not track are not sent (git add them to "
                       f"send them): {', '.join(left[:5])}" + (", ..." if len(left) > 5 else "")
                       if left else None)
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".") and x not in ("group_vars", "host_vars")
                   and not (d == root and x in ("build", "results"))]
        for n in names:
            if not n.startswith(".") and os.path.isfile(os.path.join(d, n)):
                with open(os.path.join(d, n), "rb") as f:
                    if f.read(len(VAULT_HEADER)) == VAULT_HEADER:
                        continue
                files.append(os.path.relpath(os.path.join(d, n), root))
    why = one_line((r.stderr.decode(errors="replace").strip().splitlines() or ["no git"])[-1])
    return files, (f"{root} is not a git checkout ({why}): sending every file but build/, "
                   "results/, dot-files, group_vars/, host_vars/ and Ansible Vault files")


def pack_kit(dst, leave=(), root=ROOT):
    """The kit's files (kit_files) in the tarball DST, but LEAVE (the
    inventory, where it lies in the checkout: it may hold secrets); the
    line kit_files said, or None."""
    leave = {os.path.realpath(x) for x in leave}
    files, said = kit_files(root)
    files = [f for f in files if os.path.realpath(os.path.join(root, f)) not in leave]
    with tarfile.open(dst, "w:gz") as t:
        for f in files:
            if os.path.isfile(os.path.join(root, f)):
                t.add(os.path.join(root, f), arcname=f)
    return said


def outcomes(report, hosts):
    """{host: {"status", "reason"}} from ansible-playbook's json callback REPORT."""
    out = {h: {"status": "ok", "reason": ""} for h in hosts}
    for play in report.get("plays", []):
        for task in play.get("tasks", []):
            for h, res in (task.get("hosts") or {}).items():
                if h not in out or out[h]["status"] != "ok":
                    continue  # its first failure is its reason
                if res.get("unreachable"):
                    out[h] = {"status": "unreachable", "reason": one_line(res.get("msg"))}
                elif res.get("failed"):
                    why = res.get("msg") or res.get("stderr") or "failed"
                    out[h] = {"status": "failed", "reason": f"{task['task']['name']}: "
                              + one_line(why)}
    for h, s in (report.get("stats") or {}).items():  # a host the tasks never reported
        if h in out and out[h]["status"] == "ok" and (s.get("unreachable") or s.get("failures")):
            out[h] = {"status": "unreachable" if s.get("unreachable") else "failed",
                      "reason": "Ansible counted it so, with no message"}
    return out


def unpack(fleet, name):
    """HOST's fetched pack into the fleet folder's HOST/ (its results
    folder's files); its size in bytes, or None where none came back."""
    pack = os.path.join(fleet, f"{name}.tgz")
    if not os.path.exists(pack):
        return None
    size = os.path.getsize(pack)
    with tempfile.TemporaryDirectory(dir=fleet) as tmp:
        # a host's pack: plain files and folders under one, the
        # controller's own, with no set-id bit (Python 3.11.2 has no
        # extraction filter to say so)
        with tarfile.open(pack) as t:
            safe = [m for m in t.getmembers() if (m.isfile() or m.isdir())
                    and not os.path.isabs(m.name) and ".." not in m.name.split("/")]
            for m in safe:
                m.mode &= 0o777
                m.uid, m.gid, m.uname, m.gname = os.getuid(), os.getgid(), "", ""
            t.extractall(tmp, members=safe)
        inner = [d for d in os.listdir(tmp) if os.path.isdir(os.path.join(tmp, d))]
        if len(inner) == 1:
            os.replace(os.path.join(tmp, inner[0]), os.path.join(fleet, name))
    os.unlink(pack)
    return size if os.path.isdir(os.path.join(fleet, name)) else None


def fleet_folder(results):
    """A new results/<stamp>-fleet folder (two fleets in one second: the
    second gets -2)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    fleet, n = os.path.join(results, f"{stamp}-fleet"), 1
    os.makedirs(results, exist_ok=True)
    while True:
        try:
            os.mkdir(fleet)
            return fleet
        except FileExistsError:
            n += 1
            fleet = os.path.join(results, f"{stamp}-fleet-{n}")


def gather(fleet, got):
    """GOT ({host: its status and reason}) with each host's pack unpacked
    into the fleet folder and its bytes: one that came back is ok where
    GOT says interrupted, and one said ok whose folder did not come back
    failed."""
    for name in got:
        try:
            got[name]["bytes"] = unpack(fleet, name)
        except (tarfile.TarError, OSError, EOFError) as e:
            got[name] = {"status": "failed", "reason": f"its pack could not be read: {e}",
                         "bytes": None}
            continue
        if got[name]["bytes"] is not None and got[name]["reason"] == INTERRUPTED:
            got[name] = {"status": "ok", "reason": "", "bytes": got[name]["bytes"]}
        if got[name]["status"] == "ok" and got[name]["bytes"] is None:
            got[name] = {"status": "failed", "reason": "no results folder came back",
                         "bytes": None}
    return got


@contextlib.contextmanager
def own_folders(names):
    """{host: a folder of its own} for the hosts NAMES on this machine that
    were given none: made here (mkdtemp: root's, 0700), so that whatever
    ends the play (its end, a failure, Ctrl-C) the fleet removes them
    itself; a remote host's is the play's (tempfile), removed by the play."""
    made = {}
    try:
        for name in names:
            made[name] = tempfile.mkdtemp(prefix=f"kit-fleet-{name}-")
        yield made
    finally:
        for d in made.values():
            shutil.rmtree(d, ignore_errors=True)
