"""leftovers.py: what a kit killed outright (SIGKILL, the machine's OOM
killer) left behind, found by the names the kit gives what it makes and
removed when the next kit starts, saying so.

A kit cleans up on success, failure, Ctrl-C, SIGTERM and SIGHUP; nothing
runs after SIGKILL.  Then its uprobe events stay defined (a probe left on
the kit's own build turns the next baseline into a traced run without
anyone knowing), its tracing instances stay, and a PostgreSQL cluster's
server may run on in /dev/shm.  Each of those carries its maker's pid in
its name, written here and nowhere else:

- make run's runs: `kit<id>_<n>` (the id: the pid and the pid namespace's
  inode in hex, kitstate.kit_id; ftrace's and perf's uprobe
  event groups, the tracing instances, SystemTap's modules, LTTng's
  sessions), `kit<id>_<n>_path` (an EventCounter's instance), the run's
  cluster `kit<id>_<n>-*-pg` and the kit's scratch `kit<id>-scratch-*`
  (in build/) with its template cluster `kit<id>-scratch-*-pg-template`;
- make lifecycle's events: the group `kit_lc_<id>` and its instance;
- a by-path workload's cgroup `kit<id>_<n>` (cgroups.py), anywhere in
  the cgroup v2 hierarchy (what still runs in it moved to the top first).

A name alone proves nothing (a user's own `kitface_1`, a kit in another
pid namespace sharing the kernel's tracefs): a name is a dead kit's only
where that kit registered itself in root's own state (kitstate.py: its
pid, start time and pid namespace) and no process with that pid and start
time runs now.  sweep() registers the kit that calls it, then removes the
uprobe events, tracing instances, clusters and scratch folders of each
dead registered kit, stops the tracers it started by path that still run
(bpftrace on a path, perf stat -a, stap: they would trace this kit's
untraced rows), and forgets it; nothing else.  A folder is judged by the
descriptor it was opened with (private.Private.found: a folder, not a
link, root's or the clusters' owner's, no one else's to write), never by
its name again; a dead cluster's server is killed as the clusters' owner's
process whose working folder is that very folder (its inode, held open),
never by a path.  A dead kit's SystemTap module or LTTng session is left:
their tools end with their target.  Root only (tracefs is root's); run by
make run and make lifecycle after the lock.

Nothing to run: `import leftovers; leftovers.sweep("run")`.
"""
import atexit
import os
import re
import signal
import tempfile

import cgroups
import kitstate
from kitstate import kit_id, run_tag  # noqa: F401 (leftovers.run_tag: its callers say so)
import pgcluster
from host import BUILD, say, wait_for
from private import Private
from tracers import tracefs

# The names the kit makes, each whole, and its maker's id (kit_id: its pid
# and its pid namespace's inode, in hex); tempfile's suffixes are [a-z0-9_].
ID = r"([0-9a-f]{1,7}n[0-9a-f]{1,16})"
TRACEFS_NAMES = (re.compile(rf"kit{ID}_\d+(?:_path)?"), re.compile(rf"kit_lc_{ID}"))
CLUSTER_NAMES = (re.compile(rf"kit{ID}_\d+-[a-z0-9_]+-pg"),
                 re.compile(rf"kit{ID}-scratch-[a-z0-9_]+-pg-template"))
SCRATCH_NAMES = (re.compile(rf"kit{ID}-scratch-[a-z0-9_]+"),)
UPROBE_LINE = re.compile(r"^[pr]:(\S+)/(\S+)\s", re.M)


# Every kit's scratch folder in build/ (left out where the kit is copied: a guest, a mutant)
SCRATCH_GLOB = "kit*-scratch-*"


def scratch_prefix(kid):
    return f"kit{kid}-scratch-"


def lifecycle_group(pid):
    return f"kit_lc_{kit_id(pid)}"


def owner(name, kinds=TRACEFS_NAMES + CLUSTER_NAMES + SCRATCH_NAMES):
    """The kit id in NAME where it is one the kit makes (KINDS), else None."""
    for kind in kinds:
        m = kind.fullmatch(name)
        if m:
            return m.group(1)
    return None


def dead_names(names, kinds, dead):
    """{pid: [name]} of NAMES of KINDS whose maker is a dead registered kit
    (DEAD: kitstate.dead()'s {id: record})."""
    out = {}
    for n in names:
        kid = owner(n, kinds)
        if kid is not None and kid in dead:
            out.setdefault(int(dead[kid]["pid"]), []).append(n)
    return out


def sweep_tracefs(t, dead, removed, failed):
    """The instances and uprobe events in tracefs T of the dead kits."""
    top = os.path.join(t, "instances")
    insts = os.listdir(top) if os.path.isdir(top) else []
    for pid, names in dead_names(insts, TRACEFS_NAMES, dead).items():
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
    groups = dead_names({g for g, _ in lines}, TRACEFS_NAMES, dead)
    for pid, names in groups.items():
        for g, e in [(g, e) for g, e in lines if g in names]:
            try:
                tracefs.write(os.path.join(t, "uprobe_events"), f"-:{g}/{e}")
                removed.setdefault(pid, []).append(f"uprobe {g}/{e}")
            except OSError as err:
                failed.append(f"uprobe {g}/{e}: {err.strerror}")


def sweep_folders(dead, removed, failed):
    """The clusters (their live servers first) and scratch folders of the
    dead kits, each opened once and judged by its descriptor."""
    places = [(top, CLUSTER_NAMES) for top in sorted({pgcluster.cluster_root(),
                                                      tempfile.gettempdir()})]
    owners = {0, os.geteuid(), pgcluster.cluster_owner_uid()}
    for top, kinds in places + [(BUILD, SCRATCH_NAMES)]:
        names = os.listdir(top) if os.path.isdir(top) else []
        for pid, found in dead_names(names, kinds, dead).items():
            for n in found:
                path = os.path.join(top, n)
                held = Private.found(path, owners)
                if held is None:  # not as the kit makes them: someone else's
                    continue
                said = pgcluster.Postgres.remove([held]) if kinds is CLUSTER_NAMES else []
                if held.fd is not None and not held.remove():
                    failed.append(f"{path}: not removed (the name leads elsewhere now)")
                    continue
                still = os.path.lexists(path) and Private.found(path, owners)
                if still:
                    still.close()
                    failed.append(f"{path}: not removed")
                    continue
                shown = os.path.relpath(path, os.path.dirname(BUILD)) if top == BUILD else path
                removed.setdefault(pid, []).append(
                    shown + (f" (its processes and memory: {', '.join(said)})" if said else ""))


def sweep_cgroups(dead, removed, failed):
    """The workloads' cgroups of the dead kits (cgroups.py)."""
    found = cgroups.named(lambda n: owner(n, TRACEFS_NAMES[:1]) is not None)
    for pid, names in dead_names(found, TRACEFS_NAMES[:1], dead).items():
        for n in names:
            try:
                cgroups.remove(found[n], os.path.dirname(found[n]))  # (the dead kit's group)
                removed.setdefault(pid, []).append(f"cgroup {found[n]}")
            except OSError as e:
                failed.append(f"cgroup {found[n]}: {e.strerror}")


TRACER_GRACE_S = 10  # for a dead kit's tracer to detach after SIGTERM


def sweep_tracers(dead, removed):
    """The tracers a dead kit started by path, where the same process (pid
    and start time) still runs: SIGTERM (they detach as on Ctrl-C), then
    SIGKILL."""
    for kid, rec in dead.items():
        left = [(int(p), t) for p, t in rec.get("tracers", [])
                if t is not None and kitstate.start_time(int(p)) == t]
        for p, _ in left:
            try:
                os.kill(p, signal.SIGTERM)
            except ProcessLookupError:  # (ended meanwhile)
                pass
        alive = lambda: [p for p, t in left if kitstate.start_time(p) == t]  # noqa: E731
        if not wait_for(lambda: not alive(), TRACER_GRACE_S):
            for p in alive():
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if left:
            removed.setdefault(int(rec["pid"]), []).append(
                "its tracers still running (pids " + ", ".join(str(p) for p, _ in left) + ")")


def sweep(who):
    """Removes what dead kits left (module doc), one line for each kit
    and one for what could not be removed; returns {pid: [what]}."""
    removed, failed = {}, []
    if os.geteuid() != 0:
        return removed
    me = kit_id(os.getpid())
    dead = kitstate.dead()  # (read first: a dead kit may have had this pid, and so this id)
    kitstate.register(me)
    atexit.register(kitstate.unregister)
    try:
        sweep_tracers(dead, removed)
    except OSError as e:
        failed.append(f"tracers: {e}")
    try:
        with tracefs.private() as t:
            if t:
                sweep_tracefs(t, dead, removed, failed)
    except OSError as e:  # the run goes on; the line says what is left
        failed.append(f"tracefs: {e}")
    try:
        sweep_folders(dead, removed, failed)
    except OSError as e:
        failed.append(f"folders: {e}")
    try:
        sweep_cgroups(dead, removed, failed)
    except OSError as e:
        failed.append(f"cgroups: {e}")
    for kid in dead if not failed else ():  # (kept where something is left: tried again)
        if kid != me:  # (that record is this kit's own now)
            kitstate.forget(kid)
    for pid, what in sorted(removed.items()):
        say(f"{who}: removed what a kit that is gone (pid {pid}) left: {', '.join(what)}")
    if failed:
        say(f"{who}: could not remove what a kit that is gone left: {'; '.join(failed)}")
    return removed
