"""lab/shares.py: a suite's configurations dealt out to guests that run
at once (LAB_GUESTS, under TCG with ICOUNT=1): how many the host holds
(guests_here), what each configuration costs a guest (guest_cost, from
the timings the suite's last lab left) and the shares themselves
(shares).

Nothing to run: lab/steps.py deals them.
"""
import os

import configs
import kin
import record
from measure import plan
from tracers import BACKENDS
from .qemu import GUEST_MB

# Guests at once under -icount (LAB_GUESTS=auto): one per host CPU, at
# most AUTO_GUESTS, each with GUEST_MB and qemu's own GUEST_HOST_MB free.
AUTO_GUESTS, MAX_GUESTS, GUEST_HOST_MB = 4, 8, 512


def shares(cfgs, n, cost=lambda c: 1.0):
    """CFGS split among at most N guests.  Each runs the baseline (its
    runner's yardstick for when a cell has run enough); the configurations
    that attach nothing all run in the first, with the baseline the
    folder keeps (an idle marker's one instruction is resolved against
    the baseline of its own boot); those that attach (hundreds of
    instructions, where two boots agree within 0.3%) go one at a time,
    costliest first, to the guest with the fewest of its tracer's (a
    tracer's start is most of a guest's time: bpftrace's 5-10 s), of those
    the one with the least COST so far (a configuration's seconds a run).
    A real program's untraced row (its family's baseline) goes to each
    guest that runs one of its family, first among them."""
    base = [c for c in cfgs if c.name == configs.BASELINE]
    families = {c.name: c for c in cfgs if kin.is_baseline(c.name) and c not in base}
    idle = [c for c in cfgs if c.name not in families and c not in base
            and not BACKENDS[c.tracer].attaches]
    traced = [c for c in cfgs if BACKENDS[c.tracer].attaches]
    n = max(1, min(n, len(traced) + bool(idle)))
    parts = [list(base) for _ in range(n)]
    parts[0] += idle
    load = [sum(map(cost, idle))] + [0.0] * (n - 1)
    for c in sorted(traced, key=lambda c: -cost(c)):
        k = min(range(n), key=lambda i: (sum(x.tracer == c.tracer for x in parts[i]), load[i], i))
        parts[k].append(c)
        load[k] += cost(c)
    for p in parts:
        p += [f for f in families.values() if f not in p and any(c.against == f.name for c in p)]
    parts[0] += [f for f in families.values() if not any(f in p for p in parts)]
    return [sorted(p, key=cfgs.index) for p in parts]


def guest_cost(suite, args):
    """A configuration's seconds per run in SUITE's guest, beyond its loop
    (its tracer's start: what a guest's time goes on), from the timings
    its last lab left (build/lab/SUITE/timings-UNIT.json, or a kernel's
    first lab: Suite.timings), else the runner's guess."""
    path = suite.timings(record.INSTRUCTIONS if args.icount else record.NS)[0]
    cache = plan.load(path) if path else {}
    return lambda c: cache.get(c.name, {}).get("extra_s",
                                               plan.GUESS[BACKENDS[c.tracer].attaches][0])


def guests_here(args):
    """How many guests run a suite at once under TCG with ICOUNT=1
    (LAB_GUESTS; auto: the host's CPUs, at most AUTO_GUESTS), no more
    than the host's free memory holds; and 1 under KVM or ICOUNT=0, where
    times are times and guests side by side would share the host's CPUs."""
    if not args.icount:
        return 1
    want = args.lab_guests or min(os.cpu_count() or 1, AUTO_GUESTS)
    with open("/proc/meminfo") as f:
        avail = next((int(ln.split()[1]) // 1024 for ln in f
                      if ln.startswith("MemAvailable:")), GUEST_MB)
    return max(1, min(want, avail // (GUEST_MB + GUEST_HOST_MB)))
