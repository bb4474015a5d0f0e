"""kernel.py: what the running kernel is expected to do at each probe site,
said before a run is read and checked against what it measured.

The expectation follows from the kernel's answer to the uprobe syscall
(paths.uprobe_optimisation(), recorded in meta.json "uprobe_optimisation")
and from upstream's history, measured by this kit on 6.1, 6.12, 6.18 and
7.2 (README, "Probe sites"):
- no kernel optimises a probe on a 1-byte nop or on the `nop` before a
  10-byte nop: a trap, safe;
- 6.18 to 7.1 (ENXIO; ba2bfc97b462 and its series) optimise a probe on a
  5-byte nop into a call that pushes its return address into the red zone:
  UNSAFE; 7.2 (EPROTO; 554ba38456da) moved the optimisation to the 10-byte
  nop, moving %rsp past the red zone first: safe, and a 5-byte nop traps;
- before 7.2, uprobe_init_insn() rejects the CS-prefixed 10-byte nop
  (-ENOTSUPP), and a probe registered before the target maps the binary
  attaches and never fires.
An answer not in the table has no expectation ("unknown"), never a guess.

Nothing to run: stats.py and tables.py use expected() and check().
"""

import configs

# Per site build (the -canary builds are the same site): per uprobe-syscall
# answer, the path a probe is expected to take and its verdict.
SAFE_TRAP = ("trap", "safe")
EXPECT = {
    "sdt": {"ENOSYS": SAFE_TRAP, "ENXIO": SAFE_TRAP, "EPROTO": SAFE_TRAP},
    "sdt-nop5": {"ENOSYS": SAFE_TRAP, "ENXIO": ("optimised", "UNSAFE"), "EPROTO": SAFE_TRAP},
    "sdt-nop10": {"ENOSYS": SAFE_TRAP, "ENXIO": SAFE_TRAP, "EPROTO": SAFE_TRAP},
    "sdt-nop10-at1": {"ENOSYS": ("none", "NEVER FIRES"), "ENXIO": ("none", "NEVER FIRES"),
                      "EPROTO": ("optimised", "safe")},
}


def site_of(build):
    """The site of BUILD's marker, named by the build EXPECT knows with the
    same site bytes (src/builds.tsv): sdt-guarded's is sdt's 1-byte nop,
    sdt-nop5-canary's is sdt-nop5's."""
    builds = configs.builds()
    b = builds.get(build)
    if b is None or b.kind != "sdt":
        return None
    return next((k for k in EXPECT if k in builds and builds[k].site == b.site), None)


def site_name(build):
    """BUILD's marker site as site_of() names it, else the build's name."""
    return site_of(build) or build


def answer(meta):
    """The uprobe syscall's answer a run recorded ('unknown' if none)."""
    return ((meta or {}).get("uprobe_optimisation") or {}).get("errno") or "unknown"


def expected(meta, build):
    """(path, verdict) this kernel is expected to give a marker probe on
    BUILD's site, or None where there is no expectation."""
    return EXPECT.get(site_of(build), {}).get(answer(meta))


def check(meta, s):
    """'' where the measured site S (stats.sites()) matches the
    expectation, else what differs; None where there is none.  A build
    without a canary is judged by its path only."""
    want = expected(meta, s["build"])
    if want is None or s.get("probe") not in ("marker", "marker-semaphore"):
        return None
    path = (s.get("path") or "").split(":")[0] or "none"
    got_verdict = s.get("verdict") or ""
    diff = []
    if path != want[0]:
        diff.append(f"path {path}, expected {want[0]}")
    if got_verdict and got_verdict != want[1]:
        diff.append(f"{got_verdict}, expected {want[1]}")
    return "; ".join(diff)


def table(meta):
    """[[site, expected path, expected verdict]] for this kernel, or []."""
    a = answer(meta)
    return [[site, e[a][0], e[a][1]] for site, e in EXPECT.items() if a in e]
