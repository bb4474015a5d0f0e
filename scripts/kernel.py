"""kernel.py: what the running kernel is expected to do at each probe site,
said before a run is read and checked against what it measured.

The expectation follows from the kernel's answer to the uprobe syscall
(paths.uprobe_optimisation(), recorded in meta.json "uprobe_optimisation")
and from upstream's history, measured by this kit on 6.1, 6.12, 6.18 and
7.2 (docs/probe-sites.md):
- no kernel optimises a probe on a 1-byte nop or on the `nop` before a
  10-byte nop: a trap, safe;
- 6.18 to 7.1 (ENXIO; ba2bfc97b462 and its series) optimise a probe on a
  5-byte nop into a call that pushes its return address into the red zone:
  UNSAFE; 7.2 (EPROTO; 554ba38456da) moved the optimisation to the 10-byte
  nop, moving %rsp past the red zone first: safe, and a 5-byte nop traps;
- before 7.2, uprobe_init_insn() rejects the CS-prefixed 10-byte nop
  (-ENOTSUPP), and a probe registered before the target maps the binary
  attaches and never fires (uprobe_mmap() ignores the error), while one
  attached to a running process is refused with error 524 (ENOTSUPP);
  7.2 optimises that nop, except where it straddles a 4 KiB page, which
  falls back to the same rejection;
- before 7.2 a child forked after a probe was optimised inherits the call
  but not the trampoline it calls, and dies (d9a48e77f6fe gave the child
  the trampoline).
The orders of probe and target are configs.ATTACH's; a back-end whose
"before" probe meets a mapped binary (bpftrace -c, which holds its child
after execve) says so in its marker_order, which the caller hands to
check() (tracers.marker_orders(): this module imports no back-end).  An answer not in
the table has no expectation ("unknown"), never a guess.

Nothing to run: stats/ and render/sites.py use expected() and check().
"""

import re

import builds

# The kernel facts that change a tracer's figures, read from a kernel's own
# config (make lab: each guest's /boot/config-REL): (label, how it is read).
PREEMPTION = ("PREEMPT_RT", "PREEMPT", "PREEMPT_LAZY", "PREEMPT_VOLUNTARY", "PREEMPT_NONE")
CONFIG_FACTS = [
    ("preemption model", lambda c: next((m.lower().replace("_", "-") for m in PREEMPTION
                                         if c.get(f"CONFIG_{m}") == "y"), "?")
     + (", dynamic" if c.get("CONFIG_PREEMPT_DYNAMIC") == "y" else "")),
    ("HZ (a guest's grace periods wait in its ticks)", lambda c: c.get("CONFIG_HZ", "?")),
    ("RCU tasks-trace without its full barrier a hit (CONFIG_TASKS_TRACE_RCU_NO_MB)",
     lambda c: c.get("CONFIG_TASKS_TRACE_RCU_NO_MB", "not set")),
    ("CPU mitigations (CONFIG_CPU_MITIGATIONS)",
     lambda c: c.get("CONFIG_CPU_MITIGATIONS", c.get("CONFIG_SPECULATION_MITIGATIONS",
                                                     "not set"))),
    ("uprobes (CONFIG_UPROBES)", lambda c: c.get("CONFIG_UPROBES", "not set")),
]


def config_facts(text):
    """{label: value} of CONFIG_FACTS from a kernel config's TEXT."""
    c = dict(re.findall(r"^(CONFIG_\w+)=\"?([^\"\n]*)\"?$", text, re.M))
    return {label: read(c) for label, read in CONFIG_FACTS}

NEVER_FIRES = "NEVER FIRES"  # a site's verdict, and a real program's cell's check
# A site's verdict (stats.sites()), worst first.
VERDICTS = {
    "UNSAFE": "the probe changed the program's data (the red-zone canary caught it)",
    "CRASHES": "the target (or its forked child) was killed by a signal",
    "REFUSED": "the kernel refused the probe with error 524 (ENOTSUPP)",
    NEVER_FIRES: "the probe attached without an error and saw no event",
    "safe": "the probe fired and the canary stayed whole",
}
BAD = tuple(v for v in VERDICTS if v != "safe")  # what a reader must not miss
# The uprobe syscall's answer from outside a trampoline: (the site the
# kernel optimises, what it means).
OPTIMISATION = {
    "ENOSYS": ("none", "no uprobe is optimised (Linux up to 6.17): every site traps"),
    "ENXIO": ("nop5", "a probe on a 5-byte nop is optimised into a call that writes the "
              "red zone below %rsp (Linux 6.18 to 7.1, ba2bfc97b462): that site is UNSAFE"),
    "EPROTO": ("nop10", "a probe on libbpf's 10-byte nop is optimised, %rsp moved past the "
               "red zone first (Linux 7.2 and later, 554ba38456da); a 5-byte nop traps"),
}
ANSWERS = tuple(OPTIMISATION)
NO_RUN = ("REFUSED", "CRASHES")  # verdicts of a site where no run completed: no path
REFUSED_ERRNO = 524  # ENOTSUPP, the kernel's own errno, which libc has no name for

# Per site build (the -canary builds are the same site): per uprobe-syscall
# answer, the path a probe attached before the target starts is expected
# to take and its verdict.
SAFE_TRAP = ("trap", "safe")
NEVER = ("none", NEVER_FIRES)
REFUSED = ("none", "REFUSED")
EXPECT = {
    "sdt": {"ENOSYS": SAFE_TRAP, "ENXIO": SAFE_TRAP, "EPROTO": SAFE_TRAP},
    "sdt-nop5": {"ENOSYS": SAFE_TRAP, "ENXIO": ("optimised", "UNSAFE"), "EPROTO": SAFE_TRAP},
    "sdt-nop10": {"ENOSYS": SAFE_TRAP, "ENXIO": SAFE_TRAP, "EPROTO": SAFE_TRAP},
    "sdt-nop10-at1": {"ENOSYS": NEVER, "ENXIO": NEVER, "EPROTO": ("optimised", "safe")},
    "sdt-nop10-at1-page": {"ENOSYS": NEVER, "ENXIO": NEVER, "EPROTO": NEVER},
}
# Where another order (configs.ATTACH) is expected to differ.
BY_ORDER = {
    "running": {"sdt-nop10-at1": {"ENOSYS": REFUSED, "ENXIO": REFUSED},
                "sdt-nop10-at1-page": {a: REFUSED for a in ANSWERS}},
    "fork": {"sdt-nop5": {"ENXIO": ("none", "CRASHES")}},
}


def refused(reason):
    """A failed run's REASON says the kernel refused the probe."""
    return f"error {REFUSED_ERRNO}" in (reason or "")


def crashed(reason):
    """A failed run's REASON says the target was killed by a signal."""
    return "killed by signal" in (reason or "")


def site_of(build):
    """The site of BUILD's marker, named by the build EXPECT knows with the
    same site bytes (src/builds.tsv): sdt-guarded's is sdt's 1-byte nop,
    sdt-nop5-canary's is sdt-nop5's."""
    table = builds.builds()
    b = table.get(build)
    if b is None or b.kind != "sdt":
        return None
    return next((k for k in EXPECT if k in table and table[k].site == b.site), None)


def site_name(build):
    """BUILD's marker site as site_of() names it, else the build's name."""
    return site_of(build) or build


def answer(meta):
    """The uprobe syscall's answer a run recorded ('unknown' if none)."""
    return ((meta or {}).get("uprobe_optimisation") or {}).get("errno") or "unknown"


def expected(meta, build, attach="before"):
    """(path, verdict) this kernel is expected to give a marker probe on
    BUILD's site in the order ATTACH, or None where there is no
    expectation."""
    site, a = site_of(build), answer(meta)
    other = BY_ORDER.get(attach, {}).get(site, {}).get(a)
    return other or EXPECT.get(site, {}).get(a)


def marker_order(tracer, attach, orders):
    """The order (configs.ATTACH) in which TRACER's marker probe meets the
    target on a row whose order is ATTACH: ORDERS' (tracers.marker_orders())
    where the row says "before" (bpftrace: "running"), else ATTACH."""
    return (orders.get(tracer) or (attach,))[0] if attach == "before" else attach


def uretprobe(meta):
    """The path a return probe is expected to take ("uretprobe syscall" or
    "trap") from meta.json's uretprobe_syscall, or None where unknown."""
    a = ((meta or {}).get("uretprobe_syscall") or {}).get("answer")
    return {"yes": "uretprobe syscall", "no": "trap"}.get(a)


def check(meta, s, orders):
    """'' where the measured site S (stats.sites()) matches the
    expectation, else what differs; None where there is none.  A build
    without a canary is judged by its path only.  ORDERS: the back-ends'
    own orders (tracers.marker_orders()), handed in: this module
    describes what the tracers meet, and does not import them."""
    if s.get("probe") == "return":
        want = uretprobe(meta)
        got = s.get("path") or ""
        if want is None:
            return None
        return "" if got.startswith(want) else f"path {got.split(':')[0] or 'none'}, expected {want}"
    want = expected(meta, s["build"], marker_order(s.get("tracer"), s.get("attach") or "before",
                                                   orders))
    if want is None or s.get("probe") not in ("marker", "marker-semaphore"):
        return None
    path = (s.get("path") or "").split(":")[0] or "none"
    got_verdict = s.get("verdict") or ""
    diff = []
    if want[1] in NO_RUN or got_verdict in NO_RUN:
        path = want[0]  # no run completed, so no path to compare
    if path != want[0]:
        diff.append(f"path {path}, expected {want[0]}")
    if got_verdict and got_verdict != want[1]:
        diff.append(f"{got_verdict}, expected {want[1]}")
    return "; ".join(diff)


def table(meta):
    """[[site, order, expected path, expected verdict]] for this kernel:
    each site attached before the target starts, then each other order
    where it differs; or []."""
    a = answer(meta)
    rows = [[site, "before", *e[a]] for site, e in EXPECT.items() if a in e]
    return rows + [[site, order, *e[a]] for order, by_site in BY_ORDER.items()
                   for site, e in by_site.items() if a in e]
