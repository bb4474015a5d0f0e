"""lifecycle/cells.py: make lifecycle's attach and detach: a cell (a
tracer, N sites, M held processes) is a pilot cycle, then as many cycles
as fit CELL_S; a cycle times the attach until every site of every process
holds int3 and the tracer says it records, checks a late process and the
counts, and times the detach until every site is its own byte again.

Nothing to run: scripts/lifecycle's wing.
"""
import time

import host
from host import say
from record.lifecycle import LIFECYCLE_CSV, clock
from tracers import ATTACHED
from tracers.attached import LIVE_LIMIT_S, POLL_S, Process, TracerGone
from .kit import undo
from .sites import GUARDED, PROC_SITES, Sites, Targets, site_builds, vm_hwm_kb, wait_sites

# s the kernel may take, once the tracer has exited or been killed, to take
# the breakpoints out: a killed tracer's perf events still unregister one by
# one as its files close (~0.1 s a probe here), so GONE_S + GONE_PER_SITE_S a
# site.  Past it, what is still int3 is said in the row.  (Seen on 6.18: a
# bpftrace killed mid-detach left one of 100 sites int3 in every held process
# for good, its uprobe gone; the kit's targets then end, taking it with them.)
GONE_S, GONE_PER_SITE_S = 5, 0.3


def cycle(kit, name, sweep, build, nsites, nprocs, index):
    """One attach, fire and detach of NAME on the NSITES sites of BUILD in
    NPROCS held targets: its row."""
    targets = Targets(build)
    row = dict(tracer=name, path=ATTACHED[name].path, sweep=sweep, sites=nsites, procs=nprocs,
               cycle=index, status="ok")
    t = None
    try:
        procs = targets.start(nprocs)
        sites = Sites(targets.binary, provider=GUARDED[1] if build == GUARDED[0] else "kit")
        targets.mapped(sites, procs)
        pids = [p.pid for p in procs]
        t = kit.tracer(name, targets.binary, sites)
        t0 = time.monotonic()
        row["startup_s"] = t.start()
        while True:
            if all(sites.trapped(pid) == nsites for pid in pids) and t.ready():
                break
            if isinstance(t, Process):
                t.gone_why()
            if time.monotonic() - t0 > LIVE_LIMIT_S:
                raise TracerGone(f"its probes were not live in {LIVE_LIMIT_S} s")
            host.check_signalled()
            time.sleep(POLL_S)
        row["attach_s"] = time.monotonic() - t0
        if isinstance(t, Process):
            row["tracer_kb"] = vm_hwm_kb(t.proc.pid)
        if hasattr(t, "taken"):  # the path it took, read once live (attached.py)
            row["path"] = t.taken()
        late = targets.start(1)
        targets.mapped(sites, late)
        row["late_covered"] = "yes" if sites.trapped(late[0].pid) == nsites else "no"
        marker = next(iter(sites.offsets))
        if sites.semaphores[marker] is not None:  # a guarded marker: raised in each?
            row["semaphore"] = "/".join(str(sites.semaphore(p.pid, marker))
                                        for p in (procs[0], late[0]))
        everyone = procs + late
        recs = targets.release(everyone)
        if any(r is None for r in recs):
            raise TracerGone("a target ended without its record")
        before = t.counts() if t.COUNTS_LIVE else None
        t1 = time.monotonic()
        killed = kit.stop_tracer(t, kit.args.detach_limit_s)
        limit = GONE_S + GONE_PER_SITE_S * nsites
        gone = wait_sites(sites, [p.pid for p in everyone], False, limit)
        if gone is None:
            left = sum(sites.trapped(p.pid) for p in everyone)
            why = (f"{left} breakpoints of {nsites} sites x {len(everyone)} processes still int3 "
                   f"{limit:g} s after the tracer {'was killed' if killed else 'stopped'} "
                   "(each would stop its process with SIGTRAP)")
            raise TracerGone(f"{killed}; {why}" if killed else why)
        row["detach_s"] = time.monotonic() - t1
        if killed:
            row.update(status="killed", reason=killed)
        got = before or t.counts()
        want = len(everyone) if row["late_covered"] == "yes" else nprocs
        bad = {n: c for n, c in got.items() if c != want}
        row["counted"] = "ok" if not bad else "mismatch"
        if bad and row["status"] == "ok":
            row.update(status="mismatch", reason=f"{len(bad)} of {nsites} sites counted other than "
                       f"{want}: e.g. {next(iter(bad))}={next(iter(bad.values()))}")
    except TracerGone as e:
        row.update(status="killed" if "(DETACH_LIMIT_S): killed" in str(e) else "failed",
                   reason=str(e))
    except (OSError, RuntimeError) as e:  # a target that died, a write refused
        row.update(status="failed", reason=f"{type(e).__name__}: {e}")
    finally:
        undo(kit, t, targets)
    return row


def lifecycle_cells(args):
    """(sweep, build, sites, processes) of each cell."""
    for n in args.probes:
        yield "sites", site_builds()[n], n, 1
    for n in args.procs:
        yield "procs", site_builds()[PROC_SITES], PROC_SITES, n
    yield "guarded", GUARDED[0], 1, 1


def run_cell(kit, name, sweep, build, nsites, nprocs):
    """A cell: its pilot, then as many cycles as fit CELL_S (REPEATS at most)."""
    pilot = cycle(kit, name, sweep, build, nsites, nprocs, 0)
    kit.write(LIFECYCLE_CSV, pilot)
    if pilot["status"] not in ("ok", "mismatch"):
        say(f"lifecycle: {name} {sweep} {nsites} sites x {nprocs}: {pilot['status']}: "
            f"{pilot['reason']}")
        return
    took = pilot["attach_s"] + pilot["detach_s"]
    more = min(kit.args.repeats, int(kit.args.cell_s // took) if took > 0 else kit.args.repeats)
    for i in range(1, more + 1):
        kit.write(LIFECYCLE_CSV, cycle(kit, name, sweep, build, nsites, nprocs, i))
    tu = clock(kit.meta)[0]
    say(f"lifecycle: {name:8} {nsites:5} {'guarded ' if sweep == 'guarded' else ''}sites x "
        f"{nprocs:3} processes: attach "
        f"{pilot['attach_s']:.3f} {tu}, detach {pilot['detach_s']:.3f} {tu} (pilot), "
        f"{more} more cycles")
