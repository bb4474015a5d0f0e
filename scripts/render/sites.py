"""sites.py: the probe sites: what each costs, whether it is safe (the
red-zone canary), which uprobe path it took, and whether that is what the
kernel's history (kernel.py) predicted for it.

Nothing to run: `from render.sites import sites_table`.
"""
import builds
import configs
import kernel
from tracers import marker_orders
from record import DEFAULT_UNIT, INSTRUCTIONS
from render.formats import bold, f_ins, f_ns, table


SITES_NOTE = (
    "Each marker site runs inside a red-zone canary (the -canary builds): a leaf function "
    "keeps a sentinel in the 128 bytes below %rsp, the marker fires, the sentinel is read "
    "back.  A probe whose handling writes there (an optimised uprobe's call pushes its "
    "return address at -8(%rsp)) corrupts the program: **UNSAFE**.  **NEVER FIRES**: the probe "
    "was attached without error and saw no event.  **REFUSED**: the kernel refused the probe "
    f"(error {kernel.REFUSED_ERRNO}).  **CRASHES**: the target, or its forked child, was killed "
    "by a signal.  The order is when the probe was attached: "
    + "; ".join(f"{k}: {v}" for k, v in configs.ATTACH.items()) + ".  The path is what the "
    "target's own "
    "mappings showed ([uprobes-trampoline]: optimised; [uprobes]: single-stepped; neither: "
    "emulated) or, for a return probe, whether the uretprobe syscall was made.  Corrupted "
    "calls are shown only where a canary ran.")


def canary(build):
    b = builds.builds().get(build)
    return bool(b and b.canary)


def as_expected(meta, s):
    """`yes`, `**NO**: what differs` or `-` (no expectation here)."""
    diff = kernel.check(meta, s, marker_orders())
    return "-" if diff is None else "yes" if not diff else f"**NO**: {diff}"


def expectation(meta):
    """What this kernel is expected to do at each site, said before the
    sites are measured (kernel.py), as lines of Markdown."""
    u = (meta or {}).get("uprobe_optimisation") or {}
    r = (meta or {}).get("uretprobe_syscall") or {}
    lines = [f"This kernel answered the uprobe syscall with {kernel.answer(meta)}"
             + (f": {u['meaning']}." if u.get("meaning") else "."),
             f"Return probes: {r.get('meaning') or 'unknown (not recorded)'}."]
    rows = kernel.table(meta)
    if rows:
        lines += ["Expected at each site, before measuring (kernel.py):", "",
                  table(["site", "order", "expected path", "expected verdict"], rows)]
        lines += ["", *(f"{t}'s marker probes on \"before\" rows are expected as in "
                        f"\"{order}\": {why}." for t, (order, why) in marker_orders().items())]
    else:
        lines.append("No expectation is known for that answer: each site is only measured.")
    return lines


def sites_table(a, meta=None, unit=DEFAULT_UNIT):
    """The probe-site table, its corrupted/calls column only where a
    canary ran in some row, each site marked as this kernel was expected
    to behave there or not; its cost in UNIT (ns, or a lab guest's
    instructions; None: no cost column, where times are emulated)."""
    sites = a.get("sites", [])
    with_canary = any(canary(s["build"]) for s in sites)
    orders = any((s.get("attach") or "before") != "before" for s in sites)
    head = ["config", "build (site)", "probe", "tracer", "threads"] + (
        ["order"] if orders else []) + ([f"overhead [{unit}/event]"] if unit else []) + (
        ["corrupted/calls"] if with_canary else []) + ["path fired", "safe on this kernel?",
                                                       "as expected?"]
    rows = []
    for s in sites:
        rows.append([s["config"], s["build"], s["probe"], s["tracer"], s["threads"]]
                    + ([s.get("attach") or "before"] if orders else [])
                    + ([(f_ins if unit == INSTRUCTIONS else f_ns)(s["ns_per_event"])]
                       if unit else [])
                    + ([f"{s['corrupted']:,}/{s['calls']:,}" if canary(s["build"]) and s["calls"]
                        else "-"]
                       if with_canary else [])
                    + [s["path"] or "-", bold(s["verdict"]), as_expected(meta, s)])
    return table(head, rows)
