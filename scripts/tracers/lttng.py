"""lttng.py: the LTTng-UST tracepoint of the ust build, recorded into a
session of the kit's own: a flight recorder (`--snapshot`, overwrite
mode, snapshot taken when the target ends) or a normal session written
to disk.  Events are counted by babeltrace2's sink.utils.counter; events
the tracer discarded are read from `lttng stop`'s warning; the tracer's
CPU is the consumer daemons' (from /proc) between start and stop.

A session daemon is needed: one already running is used and left alone;
otherwise `lttng-sessiond --daemonize --no-kernel` is started in setup
and stopped in teardown.
"""
import os
import re
import shutil
import signal
import subprocess
import time

from .base import Tracer, TracerError, pids, proc_stat

CHANNEL = ["--subbuf-size", "1M", "--num-subbuf", "8"]


def consumerd_cpu_ns():
    """(user, system) ns used so far by the LTTng consumer daemons, which
    move the tracepoints' buffers out of the traced process."""
    user = system = 0
    tick = 1e9 / os.sysconf("SC_CLK_TCK")
    for pid in pids():
        st = proc_stat(pid)
        if not st or st[0] != "lttng-consumerd":
            continue
        fields = st[1]
        user += int(int(fields[11]) * tick)
        system += int(int(fields[12]) * tick)
    return user, system


def sessiond_pids():
    r = subprocess.run(["pgrep", "-x", "lttng-sessiond"], stdout=subprocess.PIPE, text=True)
    return {int(p) for p in r.stdout.split()}


class Lttng(Tracer):
    name = "lttng"
    needs = {"lttng": "lttng-tools", "lttng-sessiond": "lttng-tools",
             "babeltrace2": "babeltrace2"}

    def __init__(self):
        self.started = set()

    def available(self):
        return self.need_commands()

    def setup(self, kit):
        if sessiond_pids():
            return
        before = sessiond_pids()
        self.sh(["lttng-sessiond", "--daemonize", "--no-kernel"], log=kit.log)
        self.started = sessiond_pids() - before
        kit.say(f"lttng: started lttng-sessiond (pid {' '.join(map(str, self.started))}); "
                "it is stopped at the end")

    def teardown(self):
        for pid in self.started:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(50):
                if pid not in sessiond_pids():
                    break
                time.sleep(0.1)
        self.started = set()

    def lttng(self, run, *args):
        return self.sh(["lttng", *args], log=run.log)

    def attach(self, run):
        out = run.state["lttng_dir"] = os.path.join(run.scratch, "lttng-trace")
        snap = run.cfg.mode == "snapshot"
        self.lttng(run, "create", run.tag, "--output", out, *(["--snapshot"] if snap else []))
        run.state["lttng_session"] = run.tag
        self.lttng(run, "enable-channel", "-u", "-s", run.tag, *CHANNEL,
                   *(["--overwrite"] if snap else []), "kitch")
        self.lttng(run, "enable-event", "-u", "-s", run.tag, "-c", "kitch",
                   "benchmark:single_trace")
        self.lttng(run, "start", run.tag)
        run.state["lttng_cpu0"] = consumerd_cpu_ns()

    def events(self, run):
        stop = self.lttng(run, "stop", run.tag)
        u0, s0 = run.state.pop("lttng_cpu0")
        u1, s1 = consumerd_cpu_ns()
        run.state["tracer_cpu_ns"] = (u1 - u0, s1 - s0)
        discarded = sum(int(x) for x in re.findall(r"(\d+) events? (?:were|was) discarded", stop))
        if run.cfg.mode == "snapshot":
            self.lttng(run, "snapshot", "record", "-s", run.tag)
        out = self.sh(["babeltrace2", run.state["lttng_dir"], "-c", "sink.utils.counter"],
                      log=run.log, timeout=600)
        # The counter prints running totals as it goes; the last is final.
        counts = re.findall(r"^\s*(\d+) Event messages", out, re.M)
        if not counts:
            raise TracerError("babeltrace2 counted no event messages")
        note = ""
        if run.cfg.mode == "snapshot":
            note = "flight recorder: the snapshot holds the newest events only"
        return int(counts[-1]), discarded, note

    def detach(self, run):
        s = run.state.pop("lttng_session", None)
        if s:
            self.sh(["lttng", "destroy", s], log=run.log, check=False)
        d = run.state.pop("lttng_dir", None)
        if d:
            shutil.rmtree(d, ignore_errors=True)


BACKEND = Lttng()
