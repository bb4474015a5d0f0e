"""kit_test.py: what the tests share: paths, running the kit's programs
(the runner, alone or killed mid-run; the report on fixture folders), and
a snapshot of the machine's tracing state to compare before/after."""
import atexit
import ctypes
import csv
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
SCRIPTS = os.path.join(ROOT, "scripts")
EXPECTED = os.path.join(ROOT, "tests", "expected")
sys.path.insert(0, SCRIPTS)


def build(name):
    return os.path.join(BUILD, f"benchmark-{name}")


# In CI (CI=true) make test installs every tool and runs as root, so a test
# that would be skipped for want of one is a failure there: a green CI
# means every tracer ran.
IN_CI = os.environ.get("CI") == "true"

# The suite is the subreaper of all it starts: a process a run orphaned
# (a daemon, a tracer's stray child) is re-parented here, not to init, so
# the state checks find it among this process's descendants.
PR_SET_CHILD_SUBREAPER = 36
if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
    raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER): the state checks "
                  "would not see what a run orphaned")

# The runs the tests make keep their timings (TIMINGS, which the plan and
# WARM_UP=auto read) in a file of the suite's own, not in the checkout's
# build/timings.json, so that a test run changes no later `make run`.
if "TIMINGS" not in os.environ:
    _timings = tempfile.mkdtemp(prefix="kit-test-timings-")
    atexit.register(shutil.rmtree, _timings, True)
    os.environ["TIMINGS"] = os.path.join(_timings, "timings.json")


# The suite's tiers, in the order `make test` runs them (`make check`,
# `make test-host`, `make test-guests`: run_tests.py --tier).  A test
# class names its tier (`tier = "host"`); a class that names none is a
# check.  A check that asks for root or a tracer fails, saying so: the
# tier `make check` runs as an ordinary user cannot hold it.
TIERS = {
    "check": "no root, no tracer, no guest, no network: inputs, the record, statistics, "
             "the render and atlas goldens, the ties",
    "host": "root: the real tracers and programs on this machine, faults, lifecycle, fleet",
    "guests": "root: everything that boots QEMU (make lab's guests, LAVA's job, the where "
              "plugin)",
    "userland": "root: the kit in today's Debian (a trixie root on this kernel, made once): "
                "make run QUICK=1 and make check from a clone; sid's tools in a guest on "
                "trixie's kernel (make test-userland; not in make test)",
}
# make test's tiers: all but the userland's, which has a target of its own
DEFAULT_TIERS = ("check", "host", "guests")


def tier_of(test):
    return getattr(type(test), "tier", "check")


def suites_of(test):
    """The make lab suites whose root file systems a guests-tier test boots
    (its class's `suites`, else sid's alone): tests/prebuild.py builds them
    while the host tier runs."""
    return getattr(type(test), "suites", ("sid",)) if tier_of(test) == "guests" else ()


def not_a_check(tc, what):
    if tier_of(tc) == "check":
        tc.fail(f"{type(tc).__name__} is in the check tier, which runs without {what}: "
                f"give the class tier = 'host' (or 'guests')")


def unavailable(tc, why):
    """Skip TC because something it needs is missing here; fail it in CI
    (where make test installed it)."""
    if IN_CI:
        tc.fail(f"in CI, where make test installed it, this cannot be skipped: {why}")
    tc.skipTest(why)


def need_build(tc, name):
    if not os.path.exists(build(name)):
        unavailable(tc, f"build/benchmark-{name} not built (its dependency is missing)")


def need_root(tc):
    not_a_check(tc, "root")
    if os.geteuid() != 0:
        unavailable(tc, "needs root (uprobes, tracefs)")


def need(tc, *commands):
    for c in commands:
        if not shutil.which(c):
            unavailable(tc, f"{c} not installed")


def need_tracer(tc, name):
    """Root and the tracer NAME's back-end available here."""
    import tracers
    not_a_check(tc, "a tracer")
    need_root(tc)
    why = tracers.get(name).available()
    if why:
        unavailable(tc, f"{name}: {why}")


def run(cmd, **kw):
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    kw.setdefault("text", True)
    kw.setdefault("cwd", ROOT)
    kw.setdefault("timeout", 600)
    return subprocess.run(cmd, **kw)


def tracing_state():
    """Everything a tracer run could leave behind, as comparable text.
    Where tracefs is not mounted, uprobe_events is read through a private
    mount made and removed here (tracefs.private(): an unmount hides a
    uprobe event, it does not remove it; perf would mount it for good)."""
    import host
    from tracers import tracefs
    s = {}
    with open("/proc/mounts") as f:
        s["mounts"] = sorted(ln.split()[1] for ln in f if ln.split()[2] in ("tracefs", "debugfs"))
    with tracefs.private() as t:
        if t:
            with open(os.path.join(t, "uprobe_events")) as f:
                s["uprobe_events"] = f.read()
            s["instances"] = sorted(os.listdir(os.path.join(t, "instances")))
    # (perf's probes are uprobe_events lines, read above; `perf probe -l`
    # itself would mount tracefs for good when it is not mounted.)
    if shutil.which("lttng"):
        r = run(["lttng", "list"])
        s["lttng sessions"] = r.stdout if r.returncode == 0 else "(no session daemon)"
    # The tracers' and targets' processes below this one (the suite is
    # their subreaper, so what a run orphaned is still below it), live
    # ones only: what others run on the machine is not the kit's to judge.
    s["processes"] = sorted(p for p in descendants(os.getpid()).values() if p in (
        "stapbpf", "staprun", "stapio", "stap", "bpftrace", "perf", "uftrace",
        "lttng-sessiond", "lttng-consumerd", "postgres", "pgbench") or p.startswith("benchmark-"))
    s["modules"] = sorted(os.path.basename(p) for p in glob.glob("/sys/module/kit*"))
    # A real program's leftovers (pgcluster.py): a throwaway cluster's
    # folder (its Unix socket in it) and SysV shared memory.
    import pgcluster
    s["clusters"] = sorted(glob.glob(os.path.join(pgcluster.cluster_root(), "kit*-pg*")))
    # POSIX shared memory a killed tracer or server leaves: uftrace's
    # buffers, PostgreSQL's dynamic segments (a cluster of the kit's puts
    # its own in its folder).
    s["shm files"] = sorted(os.path.basename(f) for pat in ("uftrace-*", "PostgreSQL.*")
                           for f in glob.glob(os.path.join(host.SHM, pat)))
    with open("/proc/sysvipc/shm") as f:
        s["shm"] = sorted(" ".join(ln.split()[:2]) for ln in f.readlines()[1:])
    # a by-path workload's cgroups (cgroups.py), anywhere in the hierarchy
    import cgroups
    import leftovers
    s["cgroups"] = sorted(cgroups.named(lambda n: leftovers.owner(n) is not None).values())
    # the kits registered in root's state (kitstate.py): none left by a kit
    # that ended, in any way but SIGKILL
    import kitstate
    try:
        s["kit state"] = sorted(os.listdir(kitstate.STATE)) if os.path.isdir(kitstate.STATE) \
            else []
    except PermissionError:  # (root's alone, 0700: a user's make check after root's make run)
        s["kit state"] = "(root's alone: not read)"
    return s


class StateTest(unittest.TestCase):
    """A test case that checks the tracing state is the same after each
    test as before it."""
    tier = "host"  # (reading uprobe_events is root's)

    def setUp(self):
        self._state = tracing_state()

    def tearDown(self):
        self.assertEqual(self._state, tracing_state(),
                         "the tracing state changed: something was left behind")


# -- the runner, as make run starts it ------------------------------------------
RUN_PY = os.path.join(SCRIPTS, "run.py")


def kit(args, results, **kw):
    return run(["python3", RUN_PY, "--no-install", "1", "--no-report", "--results", results,
                *args], **kw)


def rows_of(results):
    folders = [d for d in glob.glob(os.path.join(results, "2*")) if os.path.isdir(d)]
    assert len(folders) == 1, folders
    with open(os.path.join(folders[0], "runs.csv"), newline="") as f:
        return list(csv.DictReader(f)), folders[0]


def start_kit(args, results, session=False):
    """The runner started, its output piped; SESSION: in a session (and
    process group) of its own, as a terminal starts a command."""
    return subprocess.Popen(["python3", RUN_PY, "--no-install", "1", "--no-report",
                             "--results", results, *args], cwd=ROOT, start_new_session=session,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def sigint_default():
    """A child started as a terminal starts it (a Popen's preexec_fn):
    SIGINT not ignored, even where the suite itself runs in the background
    (a shell without job control starts its `&` jobs ignoring SIGINT, they
    pass that on, and a Python started so has no KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for(pred, timeout=60):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def stop_when(tc, p, ready, why, stop, wait_s=120, timeout=300):
    """Waits until READY() (else fails TC, saying WHY), then STOP(P) (the
    signal the test sends), and returns P's output once it has ended; P, in
    a session of its own, is SIGKILLed with its group if it outlives that."""
    try:
        tc.assertTrue(wait_for(ready, wait_s), why)
        stop(p)
        return p.communicate(timeout=timeout)[0]
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


# The runner's own helpers (run_tests.py: the root file systems' build, the
# guests tier beside the others): below the suite's process but no test's,
# so never among a test's descendants.
HELPERS = set()
# The make lab suites whose root file systems the runner's prebuild is
# building now (run_tests.Prebuilds): mmdebstrap's mounts in their
# rootfs.tmp are the prebuild's, no test's lab's (test_lab.lab_state).
PREBUILDING = set()


def descendants(root):
    """{pid: name} of the live processes below ROOT, a process the test
    started: a test acts only on what it started, never on a name
    machine-wide (the runner's HELPERS and theirs are no test's)."""
    import procs
    kids = {}
    for pid, fields in procs.live():
        kids.setdefault(int(fields[1]), []).append(pid)
    out, todo = {}, [root]
    while todo:
        for c in kids.get(todo.pop(), []):
            if c in HELPERS:
                continue
            st = procs.proc_stat(c)
            if st:
                out[c] = st[0]
                todo.append(c)
    return out


def pids_of(name, root):
    """The pids of ROOT's descendants named NAME (as /proc's comm says it)."""
    return [pid for pid, comm in descendants(root).items() if comm == name]


def kill_during(tc, args, res, victims, what):
    """Starts the kit with ARGS, waits until VICTIMS() names pids (WHAT
    says what is awaited), SIGKILLs them, and returns the rows once the
    kit has ended (which it must do with status 0) and the pids killed."""
    p = start_kit(args, res)
    killed = []

    def seen():  # the pids killed are the ones found, not a second look's
        killed[:] = victims(p.pid) or []
        return bool(killed)
    try:
        tc.assertTrue(wait_for(seen, 120), f"{what} never appeared")
        for pid in killed:
            os.kill(int(pid), signal.SIGKILL)
        out, _ = p.communicate(timeout=300)
    finally:
        p.kill()
    tc.assertEqual(p.returncode, 0, out[-2000:])
    return rows_of(res)[0], {int(k) for k in killed}


STAPBPF_ABORT = "stapbpf exited with signal: 6 (Aborted)"  # (test_stap says more)


# -- the report, on fixture folders ---------------------------------------------
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "report")


EXAMPLE = os.path.join(ROOT, "docs", "example")


REPORT_PY = os.path.join(SCRIPTS, "report.py")


def fixture(name, tmp):
    dst = os.path.join(tmp, name)
    shutil.copytree(os.path.join(FIXTURES, name), dst)
    for f in ("expected-report.md", "expected-tables.md"):
        if os.path.exists(os.path.join(dst, f)):
            os.unlink(os.path.join(dst, f))
    return dst


def report_text(folder):
    """FOLDER's report.md and, where the report wrote one, its tables.md
    as one text: for checks that do not care which of the two holds a
    line."""
    out = ""
    for name in ("report.md", "tables.md"):
        if name == "report.md" or os.path.exists(os.path.join(folder, name)):
            with open(os.path.join(folder, name)) as f:
                out += f.read()
    return out


def golden(md):
    """report.md as its golden file has it: the line linking the plots
    (there only where matplotlib drew them) left out."""
    return "".join(ln for ln in md.splitlines(True) if not ln.startswith("Plots: ["))


def cells(folder):
    import record
    import stats
    rows, meta, _ = record.load(folder)
    a = stats.analyse(rows, meta)
    return {(c["config"], c["threads"]): c for c in a["cells"]}, a
