"""kit_test.py: what the tests share: paths, running the kit's programs,
and a snapshot of the machine's tracing state to compare before/after."""
import atexit
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
SCRIPTS = os.path.join(ROOT, "scripts")
EXPECTED = os.path.join(ROOT, "tests", "expected")
sys.path.insert(0, SCRIPTS)


def build(name):
    return os.path.join(BUILD, f"benchmark-{name}")


# In CI (CI=true) .ci/run installs every tool and runs as root, so a test
# that would be skipped for want of one is a failure there: a green CI
# means every tracer ran.
IN_CI = os.environ.get("CI") == "true"

# The runs the tests make keep their timings (TIMINGS, which the plan and
# WARM_UP=auto read) in a file of the suite's own, not in the checkout's
# build/timings.json, so that a test run changes no later `make run`.
if "TIMINGS" not in os.environ:
    _timings = tempfile.mkdtemp(prefix="kit-test-timings-")
    atexit.register(shutil.rmtree, _timings, True)
    os.environ["TIMINGS"] = os.path.join(_timings, "timings.json")


def unavailable(tc, why):
    """Skip TC because something it needs is missing here; fail it in CI."""
    if IN_CI:
        tc.fail(f"in CI, where .ci/run installed it, this cannot be skipped: {why}")
    tc.skipTest(why)


def need_build(tc, name):
    if not os.path.exists(build(name)):
        unavailable(tc, f"build/benchmark-{name} not built (its dependency is missing)")


def need_root(tc):
    if os.geteuid() != 0:
        unavailable(tc, "needs root (uprobes, tracefs)")


def need(tc, *commands):
    for c in commands:
        if not shutil.which(c):
            unavailable(tc, f"{c} not installed")


def need_tracer(tc, name):
    """Root and the tracer NAME's back-end available here."""
    import tracers
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
    # Live processes only: a zombie is on its way out (init reaps it).
    ps = [ln.split(None, 1) for ln in run(["ps", "-eo", "stat=,comm="]).stdout.splitlines()]
    ps = [comm.strip() for stat, comm in ps if not stat.startswith("Z")]
    s["processes"] = sorted(p for p in ps if p in (
        "stapbpf", "staprun", "stapio", "stap", "bpftrace", "perf", "uftrace",
        "lttng-sessiond", "lttng-consumerd") or p.startswith("benchmark-"))
    s["modules"] = sorted(os.path.basename(p) for p in glob.glob("/sys/module/kit*"))
    return s


class StateTest(unittest.TestCase):
    """A test case that checks the tracing state is the same after each
    test as before it."""

    def setUp(self):
        self._state = tracing_state()

    def tearDown(self):
        self.assertEqual(self._state, tracing_state(),
                         "the tracing state changed: something was left behind")
