"""environment.py: what meta.json records of the machine a run measured
on (kernel, CPU, clocksource, the tools' versions, the instruction at
each probe site, what the kernel answers for the uprobe optimisation and
the uretprobe syscall, the inputs), and the Debian packages a run needs
that this machine lacks.

Nothing to run: `from measure import environment`.
"""
import os
import platform
import sys

import configs
import elfinfo
import host
import tracers
import workloads
from host import ROOT
from measure import paths
from measure.kit import target_path
from params import cpus


def missing_packages(wanted_tracers, wanted_workloads=()):
    """{package: what is skipped without it} of the Debian packages that
    what was asked for needs and this machine lacks: the back-ends' (each
    says), the real programs' (workloads.py), the builds' (make says), and
    matplotlib for the report's plots."""
    costs = {}

    def need(pkg, what):
        costs[pkg] = f"{costs[pkg]}, {what}" if pkg in costs else what
    for t in wanted_tracers:
        for p in set(tracers.get(t).missing().values()):
            need(p, f"the {t} rows")
    for w in wanted_workloads:
        for p in workloads.get(w).missing():
            need(p, f"the {w}-* rows")
    for p in sorted(host.build_needs()):
        need(p, "the builds that need it (make list)")
    if not host.has_matplotlib("/usr/bin/python3"):
        need(host.MATPLOTLIB_PACKAGE, "the report's plots")
    return dict(sorted(costs.items()))


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def inputs(value):
    """An input as meta.json records it: configurations by name, a path
    into the checkout relative to it (build/timings.json), never absolute."""
    if isinstance(value, list) and value and isinstance(value[0], configs.Config):
        return [c.name for c in value]
    if isinstance(value, str) and value.startswith(ROOT + os.sep):
        return os.path.relpath(value, ROOT)
    return value


# A tool's --version, at most: a lab guest under TCG, beside another, took
# over 20 s for bpftrace's and perf's (3.2 s for bpftrace's alone), and
# meta.json then named neither.
VERSION_S = 90


def environment(args, builds):
    cpu = None
    for ln in (read("/proc/cpuinfo") or "").splitlines():
        if ln.startswith("model name"):
            cpu = ln.split(":", 1)[1].strip()
            break
    tools = {"cc": host.first_line([os.environ.get("CC", "cc"), "--version"], VERSION_S)}
    for t in tracers.BACKENDS.values():
        tools.update((c, host.first_line([c, "--version"], VERSION_S)) for c in t.versions)
    tools["python"] = sys.version.split()[0]
    sites = {}
    for b in builds:
        path = target_path(b)
        if os.path.exists(path):
            sites[b] = elfinfo.summary(os.path.relpath(path, ROOT))
    return {
        "host": platform.node(), "cpu_model": cpu, "cpus": cpus(),
        "cpus_online": os.cpu_count(),
        "kernel": platform.release(), "machine": platform.machine(),
        "clocksource": read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        "tools": tools, "probe_sites": sites,
        "uprobe_optimisation": dict(zip(("errno", "site", "meaning"),
                                        paths.uprobe_optimisation())),
        "uretprobe_syscall": dict(zip(("answer", "meaning"), paths.uretprobe_syscall())),
        "inputs": {p.dest: inputs(getattr(args, p.dest)) for p in args.params},
        "root": os.geteuid() == 0,
    }
