"""kin.py: each configuration's kin, read off the table (configs.py):
the row it is measured against (against, is_baseline), whether it runs a
real program (real), the rows a choice needs beside it (companions), a
user's program's rows (user_rows, and USER_LOOP beside them), each
tracer's twin in the tight loop (LOOP_TWIN, which predict.py prices a
real row by) and the BPF floor under the front ends (BPF_FLOOR,
ABOVE_FLOOR).

Apart from the table so that the table is its rows alone: what the rest
of the kit asks of them is here, and nothing here adds a row.

Nothing to run: `import kin`.
"""
from configs import BASELINE, BY_NAME, CONFIGS, SCRIPT_MODE

# Each tracer's twin in the tight loop: the configuration whose probe is of
# the same kind as that tracer's rows on a real program, so that its cost
# per event times the events a call predicts a real row's cost a call
# (predict.py).  Each is on the kit's plain SDT marker (the sdt build) at
# sys/sdt.h's 1-byte nop, the site a packaged program's markers have too
# (not sdt-nop5's, which a kernel may optimise; not sdt-guarded's: the
# loop's guard is a load and a branch, while what a program computes for a
# raised semaphore is its own, priced by its own no-probe row,
# python-semaphores); and each does what its real rows do: ftrace records
# each event into its ring buffer (not ftrace-function: a function's
# entry, not a marker), bpftrace counts (not -store; python-bpftrace-empty's
# empty probe does a little less), perf stat counts in the kernel (not perf
# record: nothing written), stap counts in an empty handler (not the 2011
# printf rows).
LOOP_TWIN = {"ftrace": "ftrace-sdt", "bpftrace": "bpftrace-sdt-count",
             "libbpf": "libbpf-sdt-count", "perf": "perf-stat-sdt", "stap": "stap-mark-empty"}
# The BPF floor (issue 68): libbpf's own count on the same marker, above
# which each BPF front end's twin is priced in the answers (the two cells'
# paired difference): what the front end costs beyond the kernel's trap
# and a libbpf agent's count.
BPF_FLOOR = LOOP_TWIN["libbpf"]
ABOVE_FLOOR = {t: LOOP_TWIN[t] for t in ("bpftrace", "stap")}
# What `make run TARGET=... PROBE=... WORKLOAD=...` runs beside the user-*
# rows when CONFIGS is not given: the loop's baseline and each twin, at the
# same thread counts, so that its answer says whether the loop predicts it.
USER_LOOP = (BASELINE, *LOOP_TWIN.values())


def user_rows():
    """The names of a user's program's rows (make run TARGET=...) that run
    without a SCRIPT: every one of the user family but a script's."""
    return [c.name for c in CONFIGS if c.workload == "user" and c.mode != SCRIPT_MODE]


def companions(chosen):
    """CHOSEN (configurations) with what their figures need that is not
    among them: a probe body's row (bodies.py) the row it is priced beside,
    and the baseline its price per event is measured against; in the
    table's order."""
    want = {c.name for c in chosen or ()}
    for c in chosen or ():
        if c.beside:
            want |= {c.beside, c.against}
    return [c for c in CONFIGS if c.name in want]


def is_baseline(name):
    """NAME is a baseline: the kit's, or a real program's untraced row."""
    return against(name) == name


def real(name):
    """NAME runs a real program (workloads.py), measured against its own
    untraced row, never against the kit's bare call."""
    c = BY_NAME.get(name)
    return bool(c and c.workload)


def against(name):
    """The configuration NAME is measured against (BASELINE for a name the
    table no longer has: an older folder's)."""
    c = BY_NAME.get(name)
    return c.against if c else BASELINE
