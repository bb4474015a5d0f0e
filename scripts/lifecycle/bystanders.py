"""lifecycle/bystanders.py: make lifecycle's bystanders: the library's
marker probed in one process (the traced one) in each way a tracer
filters by pid (WAYS), timed in another process that maps the library
untraced, against the same process with no tracer just before it.

Nothing to run: scripts/lifecycle's wing.
"""
import host
from host import say
from record.lifecycle import BASELINE_WAY, BYSTANDER_CSV, clock
from tracers.attached import LIVE_LIMIT_S, Process, TracerGone
from .kit import undo
from .sites import LIB_BUILD, LIB_MARKER, LIBRARY, Sites, Targets, wait_sites

TRACED_CALLS = 1000  # the bystander run's traced process: its calls, counted

# (way, tracer, how it filters on the traced pid); each way's baseline, the
# same untraced process with no tracer (BASELINE_WAY), runs just before it.
WAYS = [
    ("ftrace common_pid filter (each thread)", "ftrace", {}),
    # what a user may write first: the process's pid, which is its main
    # thread's id only (the target's calls are on another thread)
    ("ftrace common_pid == PID", "ftrace", {"pid_only": True}),
    ("perf stat -p", "perf", {}),
    ("perf stat -t (each thread)", "perf", {"by_tid": True}),
    ("bpftrace /pid == P/", "bpftrace", {}),
    ("bpftrace -p", "bpftrace", {"by_pid": True}),
    # libbpf's attach_usdt with the pid: the kernel's uprobe for that process alone
    ("libbpf attach_usdt(PID)", "libbpf", {}),
    ("stap target() (stap -x PID)", "stap", {}),
]


def bystander_way(kit, way, name, kw):
    """BY_RUNS runs of the untraced process while NAME traces the other
    one its way (or no tracer: "untraced")."""
    traced, untraced = Targets(LIB_BUILD, TRACED_CALLS), Targets(LIB_BUILD, kit.args.by_calls)
    sites = Sites(LIBRARY, {LIB_MARKER})
    t, counted, rows = None, None, []
    try:
        if name:
            tp = traced.start(1)
            traced.mapped(sites, tp)
            t = kit.tracer(name, LIBRARY, sites, pid_filter=tp[0].pid, **kw)
            t.start()
            if wait_sites(sites, [tp[0].pid], True, LIVE_LIMIT_S) is None or not \
                    host.wait_for(t.ready, LIVE_LIMIT_S):
                if isinstance(t, Process):
                    t.gone_why()
                raise TracerGone("its probe was not live in the traced process")
            recs = traced.release(tp)
            if recs[0] is None:
                raise TracerGone("the traced process ended without its record")
        for i in range(kit.args.by_runs):
            up = untraced.start(1)
            untraced.mapped(sites, up)
            trap = sites.trapped(up[0].pid) == 1
            rec = untraced.release(up)[0]
            untraced.end(up)
            if rec is None:
                raise TracerGone("the untraced process ended without its record")
            th = rec["per_thread"][0]
            rows.append(dict(way=way, tracer=name or "", run=i, status="ok",
                             trap_in_untraced="yes" if trap else "no", calls=th["calls"],
                             wall_ns=th["wall_ns"], user_ns=th["user_ns"], sys_ns=th["sys_ns"]))
        if t:
            counted = t.total() if t.COUNTS_LIVE else None
            killed = kit.stop_tracer(t, kit.args.detach_limit_s)
            counted = t.total() if counted is None else counted
            for r in rows:
                r["traced_counted"] = counted
                if killed:
                    r.update(status="killed", reason=killed)
                elif counted != TRACED_CALLS:
                    r.update(status="mismatch", reason=f"the traced process made {TRACED_CALLS} "
                             f"calls and {name} counted {counted}")
    except (TracerGone, OSError, RuntimeError) as e:
        why = str(e) if isinstance(e, TracerGone) else f"{type(e).__name__}: {e}"
        rows = [dict(way=way, tracer=name or "", run=0, status="failed", reason=why)]
    finally:
        undo(kit, t, traced, untraced)
    for r in rows:
        kit.write(BYSTANDER_CSV, r)
    return rows


def bystanders(kit, tracers):
    for way, name, kw in WAYS:
        if name not in tracers:
            continue
        bystander_way(kit, BASELINE_WAY, None, {})  # the same process, no tracer, just before
        rows = bystander_way(kit, way, name, kw)
        ok = [r for r in rows if r["status"] == "ok"]
        if ok:
            per = sum(r["wall_ns"] for r in ok) / sum(r["calls"] for r in ok)
            say(f"lifecycle: bystander, {way}: {per:.1f} {clock(kit.meta)[2]} a call in the "
                "untraced process "
                f"(trap there: {ok[0]['trap_in_untraced']})")
        else:
            say(f"lifecycle: bystander, {way}: {rows[0]['status']}: {rows[0].get('reason')}")
