"""leftovers.py: what a kit killed outright (SIGKILL, the machine's OOM
killer) left behind, found by the names the kit gives what it makes and
removed when the next kit starts, saying so.

A kit cleans up on success, failure, Ctrl-C, SIGTERM and SIGHUP; nothing
runs after SIGKILL.  Then its uprobe events stay defined (a probe left on
the kit's own build turns the next baseline into a traced run without
anyone knowing), its tracing instances stay, and a PostgreSQL cluster's
server may run on in /dev/shm.  Each of those carries its maker's pid in
its name, written here and nowhere else:

- make run's runs: `kit<pid in hex>_<n>` (ftrace's and perf's uprobe
  event groups, the tracing instances, SystemTap's modules, LTTng's
  sessions), `kit<pid>_<n>_path` (an EventCounter's instance), the run's
  cluster `kit<pid>_<n>-*-pg` and the kit's scratch `kit<pid>-scratch-*`
  (in build/) with its template cluster `kit<pid>-scratch-*-pg-template`;
- make lifecycle's events: the group `kit_lc_<pid>` and its instance.

sweep() removes the uprobe events, tracing instances, clusters and scratch
folders among those whose pid is no longer alive, and nothing else: a live
kit's, another's (a name the kit does not make), a pid the kernel has
given to a new process (kept: that process may be a kit).  A dead kit's
SystemTap module or LTTng session is left: their tools end with their
target.  Root only (tracefs is root's); run by make run and make
lifecycle after the lock.

Nothing to run: `import leftovers; leftovers.sweep("run")`.
"""
import os
import re
import shutil
import stat
import tempfile

import workloads
from host import BUILD, say
from tracers import tracefs

# The names the kit makes, each whole, and its maker's pid (hex for make
# run's, decimal for lifecycle's); tempfile's suffixes are [a-z0-9_].
TRACEFS_NAMES = (re.compile(r"kit([0-9a-f]{1,7})_\d+(?:_path)?"), re.compile(r"kit_lc_(\d{1,7})"))
CLUSTER_NAMES = (re.compile(r"kit([0-9a-f]{1,7})_\d+-[a-z0-9_]+-pg"),
                 re.compile(r"kit([0-9a-f]{1,7})-scratch-[a-z0-9_]+-pg-template"))
SCRATCH_NAMES = (re.compile(r"kit([0-9a-f]{1,7})-scratch-[a-z0-9_]+"),)
UPROBE_LINE = re.compile(r"^[pr]:(\S+)/(\S+)\s", re.M)


def kit_id(pid):
    """make run's id for process PID: the pid in hex."""
    return f"{pid:x}"


def run_tag(kid, serial):
    """The name of the SERIAL-th run of the kit whose id is KID."""
    return f"kit{kid}_{serial}"


# Every kit's scratch folder in build/ (left out where the kit is copied: a guest, a mutant)
SCRATCH_GLOB = "kit*-scratch-*"


def scratch_prefix(kid):
    return f"kit{kid}-scratch-"


def lifecycle_group(pid):
    return f"kit_lc_{pid}"


def owner(name, kinds=TRACEFS_NAMES + CLUSTER_NAMES + SCRATCH_NAMES):
    """The pid in NAME where it is one the kit makes (KINDS), else None."""
    for kind in kinds:
        m = kind.fullmatch(name)
        if m:
            return int(m.group(1), 10 if kind.pattern.startswith("kit_lc_") else 16)
    return None


def pid_max():
    try:
        with open("/proc/sys/kernel/pid_max") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 4194304  # the kernel's largest


def gone(pid):
    """PID could be a kit's, and no process has it now."""
    return pid is not None and 0 < pid <= pid_max() and not os.path.exists(f"/proc/{pid}")


def dead_names(names, kinds):
    """{pid: [name]} of NAMES of KINDS whose maker is gone."""
    out = {}
    for n in names:
        pid = owner(n, kinds)
        if gone(pid):
            out.setdefault(pid, []).append(n)
    return out


def the_kits_folder(path):
    """PATH is a folder as the kit makes one (not a link; root's, or the
    clusters' owner's; no one else may enter): what another user made in
    /dev/shm or /tmp under a kit's name is not the kit's."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    owners = {0, os.geteuid(), workloads.cluster_owner_uid()}
    return stat.S_ISDIR(st.st_mode) and st.st_uid in owners and not st.st_mode & 0o077


def sweep_tracefs(t, removed, failed):
    """The instances and uprobe events in tracefs T of the dead kits."""
    top = os.path.join(t, "instances")
    insts = os.listdir(top) if os.path.isdir(top) else []
    for pid, names in dead_names(insts, TRACEFS_NAMES).items():
        for n in names:
            d = os.path.join(top, n)
            try:
                tracefs.write(os.path.join(d, "events", "enable"), "0")
                os.rmdir(d)
                removed.setdefault(pid, []).append(f"tracing instance {n}")
            except OSError as e:
                failed.append(f"tracing instance {n}: {e.strerror}")
    events = os.path.join(t, "uprobe_events")
    if not os.path.exists(events):  # a kernel without uprobe events
        return
    with open(events) as f:
        lines = UPROBE_LINE.findall(f.read())
    groups = dead_names({g for g, _ in lines}, TRACEFS_NAMES)
    for pid, names in groups.items():
        for g, e in [(g, e) for g, e in lines if g in names]:
            try:
                tracefs.write(os.path.join(t, "uprobe_events"), f"-:{g}/{e}")
                removed.setdefault(pid, []).append(f"uprobe {g}/{e}")
            except OSError as err:
                failed.append(f"uprobe {g}/{e}: {err.strerror}")


def sweep_folders(removed, failed):
    """The clusters (their live servers first) and scratch folders of the
    dead kits."""
    places = [(top, CLUSTER_NAMES) for top in sorted({workloads.cluster_root(),
                                                      tempfile.gettempdir()})]
    for top, kinds in places + [(BUILD, SCRATCH_NAMES)]:
        names = os.listdir(top) if os.path.isdir(top) else []
        for pid, found in dead_names(names, kinds).items():
            for n in found:
                path = os.path.join(top, n)
                if not the_kits_folder(path):
                    continue
                said = workloads.Postgres.remove([path]) if kinds is CLUSTER_NAMES else []
                shutil.rmtree(path, ignore_errors=True)
                if os.path.lexists(path):
                    failed.append(f"{path}: not removed")
                    continue
                shown = os.path.relpath(path, os.path.dirname(BUILD)) if top == BUILD else path
                removed.setdefault(pid, []).append(
                    shown + (f" (its processes and memory: {', '.join(said)})" if said else ""))


def sweep(who):
    """Removes what dead kits left (module doc), one line for each kit
    and one for what could not be removed; returns {pid: [what]}."""
    removed, failed = {}, []
    if os.geteuid() != 0:
        return removed
    try:
        with tracefs.private() as t:
            if t:
                sweep_tracefs(t, removed, failed)
    except OSError as e:  # the run goes on; the line says what is left
        failed.append(f"tracefs: {e}")
    try:
        sweep_folders(removed, failed)
    except OSError as e:
        failed.append(f"folders: {e}")
    for pid, what in sorted(removed.items()):
        say(f"{who}: removed what a kit that is gone (pid {pid}) left: {', '.join(what)}")
    if failed:
        say(f"{who}: could not remove what a kit that is gone left: {'; '.join(failed)}")
    return removed
