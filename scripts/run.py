#!/usr/bin/env python3
"""run.py: the kit's runner, what `make run` starts.

Measures every configuration (scripts/configs.py) that can run here, for
each thread count, repeated and interleaved, into a new folder
results/<UTC stamp>/ (runs.csv, meta.json, logs/), then writes the report.

    make run THREADS=1..8 ITER=10000000 RUNS=3 CONFIGS='baseline,bpftrace-*'
    python3 scripts/run.py --threads 1,2 --iter 100000 --configs 'ftrace-*'
    python3 scripts/run.py --list

Needs root for every tracer (uprobes); without it only the untraced rows
run.  Input is checked before anything is installed, built or attached.
Human progress goes to stderr; the machine record is runs.csv.
"""
import argparse
import csv
import datetime
import fnmatch
import json
import os
import platform
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import configs  # noqa: E402
import elfinfo  # noqa: E402
import record  # noqa: E402
import tracers  # noqa: E402
from tracers import tracefs  # noqa: E402
from tracers.base import TracerError, live  # noqa: E402

MAX_THREADS = 1024  # as in src/benchmark.c
MAX_ITER = 10 ** 12
WARMUP_ITER = 20000  # per thread, for the warm-up that also calibrates
FLOOR_ITER = WARMUP_ITER  # the fewest calls a sized run makes
DEFAULT_TIME_LIMIT = 600  # s, for a run whose cell has no warm-up estimate
TIME_LIMIT_MARGIN = 120  # s added to 10x the warm-up estimate: tracer start and end
POLL_S = 0.01  # the wait loop's sleep while a run is going

# What the builds need (the tracers say what they need themselves).
BUILD_HEADERS = {"sys/sdt.h": "systemtap-sdt-dev", "lttng/tracepoint.h": "liblttng-ust-dev"}


class Interrupted(Exception):
    pass


# -- input ---------------------------------------------------------------------
def parse_threads(text):
    """THREADS: 'A..B', 'A,B,C' or 'A', each 1..MAX_THREADS, ascending."""
    allowed = f"'A..B' (A <= B), 'A,B,...' or 'A', whole numbers in 1..{MAX_THREADS}"
    m = re.fullmatch(r"(\d+)\.\.(\d+)", text)
    if m:
        values = list(range(int(m.group(1)), int(m.group(2)) + 1))
        if not values:
            raise argparse.ArgumentTypeError(f"THREADS '{text}' is not allowed: want {allowed}")
    elif re.fullmatch(r"\d+(,\d+)*", text):
        values = [int(x) for x in text.split(",")]
    else:
        raise argparse.ArgumentTypeError(f"THREADS '{text}' is not allowed: want {allowed}")
    if min(values) < 1 or max(values) > MAX_THREADS:
        raise argparse.ArgumentTypeError(f"THREADS '{text}' is not allowed: want {allowed}")
    return sorted(set(values))


def int_in(name, lo, hi):
    def parse(text):
        if not re.fullmatch(r"\d+", text) or not lo <= int(text) <= hi:
            raise argparse.ArgumentTypeError(
                f"{name} '{text}' is not allowed: want a whole number in {lo}..{hi}")
        return int(text)
    return parse


def flag01(name):
    def parse(text):
        if text not in ("0", "1"):
            raise argparse.ArgumentTypeError(f"{name} '{text}' is not allowed: want 0 or 1")
        return text == "1"
    return parse


def parse_configs(text):
    names = [c.name for c in configs.CONFIGS]
    picked = []
    for pat in re.split(r"[,\s]+", text.strip()):
        if not pat:
            continue
        hits = fnmatch.filter(names, pat)
        if not hits:
            raise argparse.ArgumentTypeError(
                f"CONFIGS '{pat}' matches no configuration; allowed: {', '.join(names)} "
                "(or shell-style patterns of them; `make configs` lists them)")
        picked += [h for h in hits if h not in picked]
    if not picked:
        raise argparse.ArgumentTypeError("CONFIGS is empty")
    # Keep the table's order, so baselines stay first.
    return [c for c in configs.CONFIGS if c.name in picked]


def parse_runtime(text):
    if text not in ("module", "bpf", "auto"):
        raise argparse.ArgumentTypeError(
            f"STAP_RUNTIME '{text}' is not allowed: want module, bpf or auto")
    return None if text == "auto" else text


def parse_seconds_named(name, lo, hi, extra=""):
    def parse(text):
        try:
            v = float(text)
        except ValueError:
            v = -1
        if not lo <= v <= hi or v != v:
            raise argparse.ArgumentTypeError(
                f"{name} '{text}' is not allowed: want seconds in {lo}..{hi}{extra}")
        return v
    return parse


class Parser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(2, f"run: {message} (see --help)\n")


def parse_args(argv):
    p = Parser(prog="run.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=parse_threads, metavar="THREADS",
                   help="thread counts: 1..8, 1,2,4,8 or 4 (default 1..CPUs)")
    p.add_argument("--iter", type=int_in("ITER", 1, MAX_ITER), metavar="ITER",
                   help="calls per thread (default 10000000)")
    p.add_argument("--runs", type=int_in("RUNS", 1, 1000), metavar="RUNS",
                   help="repetitions of each cell (default 3)")
    p.add_argument("--configs", type=parse_configs, metavar="CONFIGS",
                   help="names or patterns, comma-separated (default all)")
    p.add_argument("--quick", type=flag01("QUICK"), default=False, metavar="0|1",
                   help="a fast smoke run: ITER=100000 RUNS=1 THREADS=1..2, no warm-up")
    p.add_argument("--no-install", type=flag01("NO_INSTALL"), default=False, metavar="0|1",
                   help="never install missing Debian packages")
    p.add_argument("--stap-runtime", type=parse_runtime, metavar="module|bpf|auto",
                   help="force SystemTap's runtime (default: module where it works, else bpf)")
    p.add_argument("--max-run-s", type=parse_seconds_named("MAX_RUN_S", 0, 3600, " (0: no cap)"),
                   default=2.0, metavar="MAX_RUN_S",
                   help="cap a traced run's iterations so it takes about this long "
                        "(default 2; 0 runs ITER everywhere)")
    p.add_argument("--min-run-s", type=parse_seconds_named("MIN_RUN_S", 0, 3600, " (0: ITER)"),
                   default=1.0, metavar="MIN_RUN_S",
                   help="an untraced cell's calls are raised so one run lasts at least this "
                        "long (default 1; 0 runs ITER)")
    p.add_argument("--pin", type=flag01("PIN"), default=False, metavar="0|1",
                   help="pin thread k to the k-th allowed CPU (the target's --pin)")
    p.add_argument("--seed", type=int_in("SEED", 0, 2 ** 32 - 1), metavar="SEED",
                   help="seed of the interleaving shuffle (default: new each run; "
                        "meta.json records it)")
    p.add_argument("--time-limit", type=parse_seconds_named("TIME_LIMIT", 1, 86400),
                   metavar="TIME_LIMIT",
                   help="seconds before a run counts as hung and is killed (default: "
                        "10x its warm-up, or 600 s)")
    p.add_argument("--results", default=os.path.join(ROOT, "results"), metavar="DIR",
                   help="where the results folder is made (default results/)")
    p.add_argument("--no-report", action="store_true", help="do not run scripts/report.py")
    p.add_argument("--list", action="store_true", help="print the configurations and exit")
    a = p.parse_args(argv)
    ncpu = cpus()
    if a.quick:
        a.iter = a.iter or 100000
        a.runs = a.runs or 1
        a.threads = a.threads or list(range(1, min(2, ncpu) + 1))
        a.max_run_s = a.min_run_s = 0
    if a.seed is None:
        a.seed = random.SystemRandom().randrange(2 ** 32)
    a.iter = a.iter or 10000000
    a.runs = a.runs or 3
    a.threads = a.threads or list(range(1, ncpu + 1))
    a.configs = a.configs or list(configs.CONFIGS)
    return a


# -- the machine ---------------------------------------------------------------
def cpus():
    """CPUs this process may run on (its affinity mask, not the machine's)."""
    return len(os.sched_getaffinity(0))


def say(msg):
    print(msg, file=sys.stderr, flush=True)


def first_line(cmd):
    try:
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=20).stdout
        return (out.strip().splitlines() or [""])[0]
    except (OSError, subprocess.TimeoutExpired):
        return None


def has_header(h):
    r = subprocess.run([os.environ.get("CC", "cc"), "-E", "-x", "c", "-"],
                       input=f"#include <{h}>\n", text=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return r.returncode == 0


def missing_packages(wanted_tracers):
    pkgs = {p for t in wanted_tracers for p in tracers.get(t).missing().values()}
    if not shutil.which("dtrace"):
        pkgs.add("systemtap-sdt-dev")
    pkgs |= {p for h, p in BUILD_HEADERS.items() if not has_header(h)}
    if subprocess.run(["/usr/bin/python3", "-c", "import matplotlib"],
                      stderr=subprocess.DEVNULL).returncode != 0:
        pkgs.add("python3-matplotlib")
    return sorted(pkgs)


def install(pkgs, forbid):
    if not pkgs:
        return
    if forbid:
        say(f"run: missing Debian packages (not installing, NO_INSTALL=1): {' '.join(pkgs)}")
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        say(f"run: missing Debian packages (install them as root): {' '.join(pkgs)}")
        return
    say(f"run: installing the Debian packages it needs: {' '.join(pkgs)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], env=env)
    r = subprocess.run(["apt-get", "install", "-y", "-qq", *pkgs], env=env)
    if r.returncode != 0:
        say("run: apt-get could not install them all; what needs them will be skipped")


def environment(args, builds):
    def read(path):
        try:
            with open(path) as f:
                return f.read().strip()
        except OSError:
            return None
    cpu = None
    for ln in (read("/proc/cpuinfo") or "").splitlines():
        if ln.startswith("model name"):
            cpu = ln.split(":", 1)[1].strip()
            break
    tools = {
        "cc": first_line([os.environ.get("CC", "cc"), "--version"]),
        "stap": first_line(["stap", "--version"]),
        "bpftrace": first_line(["bpftrace", "--version"]),
        "perf": first_line(["perf", "--version"]),
        "lttng": first_line(["lttng", "--version"]),
        "babeltrace2": first_line(["babeltrace2", "--version"]),
        "uftrace": first_line(["uftrace", "--version"]),
        "python": sys.version.split()[0],
    }
    sites = {}
    for b in builds:
        path = os.path.join(ROOT, "build", f"benchmark-{b}")
        if os.path.exists(path):
            sites[b] = elfinfo.summary(os.path.relpath(path, ROOT))
    return {
        "host": platform.node(), "cpu_model": cpu, "cpus": cpus(),
        "cpus_online": os.cpu_count(), "format_version": record.FORMAT_VERSION,
        "kernel": platform.release(), "machine": platform.machine(),
        "clocksource": read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        "tools": tools, "probe_sites": sites,
        "inputs": {"threads": args.threads, "iter": args.iter, "runs": args.runs,
                   "configs": [c.name for c in args.configs], "quick": args.quick,
                   "max_run_s": args.max_run_s, "min_run_s": args.min_run_s, "pin": args.pin,
                   "seed": args.seed, "stap_runtime": args.stap_runtime or "auto"},
        "root": os.geteuid() == 0,
    }


# -- one run -------------------------------------------------------------------
class Run:
    """One execution of the target under one configuration."""

    def __init__(self, kit, cfg, threads, iterations, rep):
        self.cfg, self.threads, self.iterations, self.rep = cfg, threads, iterations, rep
        self.pin = kit.args.pin
        self.build = os.path.join(ROOT, "build", f"benchmark-{cfg.build}")
        kit.serial += 1
        self.tag = f"kit{kit.id}_{kit.serial}"
        name = f"{cfg.name}-t{threads}-r{rep}"
        self.log = os.path.join(kit.dir, "logs", name + ".log")
        self.scratch = tempfile.mkdtemp(prefix=self.tag + "-", dir=kit.scratch)
        self.state = {}
        # A -pg build writes gmon.out when it exits: into scratch, not the tree.
        self.env = dict(os.environ, GMON_OUT_PREFIX=os.path.join(self.scratch, "gmon.out"))

    def target(self):
        return [self.build, "--threads", str(self.threads), "--iterations",
                str(self.iterations), "--quiet", *(["--pin"] if self.pin else [])]


class Kit:
    def __init__(self, args):
        self.args = args
        self.id = f"{os.getpid():x}"
        self.serial = 0
        self.dir = None
        self.scratch = None
        self.csv = None
        self.attached = []  # (tracer, run) whose detach is pending
        self.child = None
        self.set_up = []
        self.log = None
        self.meta = None
        self.estimate = {}  # (config, threads): the warm-up's seconds
        self.calib_iter = WARMUP_ITER

    say = staticmethod(say)

    def make_dir(self):
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        os.makedirs(self.args.results, exist_ok=True)
        d, n = os.path.join(self.args.results, stamp), 1
        while True:
            try:
                os.mkdir(d)
                break
            except FileExistsError:
                n += 1
                d = os.path.join(self.args.results, f"{stamp}-{n}")
        self.dir = d
        os.mkdir(os.path.join(d, "logs"))
        self.scratch = tempfile.mkdtemp(prefix="kit-scratch-", dir=os.path.join(ROOT, "build"))
        self.log = os.path.join(d, "logs", "kit.log")
        self.csv_file = open(os.path.join(d, "runs.csv"), "w", newline="")
        self.csv = csv.DictWriter(self.csv_file, record.COLUMNS)
        self.csv.writeheader()
        self.csv_file.flush()
        latest = os.path.join(self.args.results, "latest")
        if os.path.islink(latest) or not os.path.exists(latest):
            tmp = latest + f".{os.getpid()}"
            os.symlink(os.path.basename(d), tmp)
            os.replace(tmp, latest)

    def write_meta(self):
        write_json(os.path.join(self.dir, "meta.json"), self.meta)

    def close(self):
        if self.meta is not None:
            self.write_meta()
        if self.csv:
            self.csv_file.close()

    def row(self, **kw):
        kw.setdefault("started", datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"))
        self.csv.writerow({k: ("" if v is None else v) for k, v in kw.items()})
        self.csv_file.flush()
        os.fsync(self.csv_file.fileno())

    def run_one(self, cfg, threads, iterations, rep, sized_by=""):
        """Runs the target once under cfg; writes and returns its row."""
        tracer = tracers.get(cfg.tracer)
        run = Run(self, cfg, threads, iterations, rep)
        base = dict(config=cfg.name, build=cfg.build, tracer=cfg.tracer, probe=cfg.probe,
                    action=cfg.action, threads=threads, iterations=iterations, rep=rep,
                    sized_by=sized_by, pinned=int(run.pin))
        expected = record.expected_events(cfg.tracer, cfg.expect, threads, iterations)
        row = dict(base, events_expected=expected, status="failed")
        t0 = time.monotonic()
        try:
            try:
                self.attached.append((tracer, run))
                tracer.attach(run)
                cmd = tracer.wrap(run, run.target())
                rec, rusage, why = self.execute(tracer, run, cmd)
                if why:
                    raise TracerError(why)
                ev = tracer.events(run)
            finally:
                self.kill_child()
                tracer.detach(run)  # if this raises, cleanup() tries again
                self.attached.remove((tracer, run))
            row.update(self.record_fields(rec))
            if ev.tracer_cpu_ns:  # a daemon's CPU, read by the back-end
                row["tracer_user_ns"], row["tracer_sys_ns"] = ev.tracer_cpu_ns
            elif rusage and cmd[0] != run.build:
                # The tracer's process and its children, less the target.
                row["tracer_user_ns"] = max(0, int(rusage.ru_utime * 1e9) - rec["process_user_ns"])
                row["tracer_sys_ns"] = max(0, int(rusage.ru_stime * 1e9) - rec["process_sys_ns"])
            row.update(events_seen=ev.seen, events_dropped=ev.dropped, note=ev.note,
                       runtime=ev.runtime)
            calls = sum(t["calls"] for t in rec["per_thread"])
            if calls != threads * iterations:  # the target's own sanity check
                row["reason"] = f"the target made {calls} calls, not {threads * iterations}"
            else:
                row["status"], row["reason"] = record.verdict(cfg.tracer, expected, ev,
                                                              cfg.overwrite)
        except TracerError as e:
            row["reason"] = str(e)
        except OSError as e:
            row["reason"] = f"{e.filename or ''}: {e.strerror}".strip(": ")
        except (Interrupted, KeyboardInterrupt) as e:
            row["reason"] = f"interrupted by {e or 'Ctrl-C'}"
            raise
        except Exception as e:  # a back-end's bug must not stop the matrix
            with open(run.log, "a") as f:
                traceback.print_exc(file=f)
            row["reason"] = f"internal error: {type(e).__name__}: {e} (see {run.log})"
        finally:
            shutil.rmtree(run.scratch, ignore_errors=True)
            row["_elapsed"] = time.monotonic() - t0
        self.row(**{k: v for k, v in row.items() if not k.startswith("_")})
        return row

    @staticmethod
    def record_fields(rec):
        pt = rec["per_thread"]
        fields = {f"thread_{k}": record.join_ns(t[k] for t in pt)
                  for k in ("wall_ns", "user_ns", "sys_ns", "cpu_ns")}
        fields.update((k, rec[k]) for k in ("wall_ns", "process_user_ns", "process_sys_ns"))
        fields["_max_thread_wall_ns"] = max(t["wall_ns"] for t in pt)
        return fields

    def execute(self, tracer, run, cmd):
        """Starts CMD in its own process group and waits, up to the time
        limit.  Returns (the target's record, the rusage of CMD and its
        children, why it failed or None)."""
        out_path = os.path.join(run.scratch, "target.json")
        limit = self.time_limit(run)
        with open(out_path, "w") as out, open(run.log, "a") as log:
            log.write("$ " + " ".join(cmd) + "\n")
            log.flush()
            self.child = subprocess.Popen(cmd, stdout=out, stderr=log, stdin=subprocess.DEVNULL,
                                          cwd=ROOT, start_new_session=True, env=run.env)
        deadline = time.monotonic() + limit
        status = rusage = None
        watching = True
        # One loop, one sleep a turn: the runner must not compete for a CPU
        # with the run it measures, and the time limit holds in every state.
        while status is None:
            pid, st, ru = os.wait4(self.child.pid, os.WNOHANG)
            if pid:
                status, rusage = st, ru
                break
            if watching:
                watching = not tracer.watch(run, self.child.pid)
            if time.monotonic() > deadline:
                self.kill_child()
                return None, None, f"{os.path.basename(cmd[0])} hung: killed after {limit:.0f} s"
            time.sleep(POLL_S)
        self.child.returncode = os.waitstatus_to_exitcode(status)
        self.kill_child()  # whatever the tracer left of the group (a stray target)
        name = os.path.basename(cmd[0])
        rc = self.child.returncode
        self.child = None
        with open(out_path) as f:
            text = f.read()
        with open(run.log, "a") as log:
            log.write(text)
        if rc < 0:
            return None, None, f"{name} was killed by signal {-rc} ({signal.Signals(-rc).name})"
        if rc != 0:
            return None, None, f"{name} exited with status {rc}" + explain(run.log)
        recs = [ln for ln in text.splitlines() if ln.startswith('{"build"')]
        if len(recs) != 1:
            return None, None, f"the target printed {len(recs)} records, not 1"
        return json.loads(recs[0]), rusage, None

    def kill_child(self):
        """Kills the run's whole session: the command, and whatever it
        started, even if a tracer moved it to another process group or
        died and left it to init (a target outliving a crashed stapbpf)."""
        c = self.child
        if c is None:
            return
        for _ in range(100):
            left = session_members(c.pid)
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if c.returncode is None:
                try:
                    c.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
            if not left:
                break
            time.sleep(0.05)

    def time_limit(self, run):
        """TIME_LIMIT if given; else 10x the warm-up's time scaled to the
        run's calls, plus 2 minutes for the tracer's start and end."""
        if self.args.time_limit:
            return self.args.time_limit
        est = self.estimate.get((run.cfg.name, run.threads))
        if est is None:
            return DEFAULT_TIME_LIMIT
        return TIME_LIMIT_MARGIN + 10 * est * run.iterations / max(1, self.calib_iter)

    def cleanup(self):
        self.kill_child()
        for tracer, run in list(self.attached):
            try:
                tracer.detach(run)
            except (TracerError, OSError) as e:
                say(f"run: cleanup of {run.cfg.name}: {e}")
            self.attached.remove((tracer, run))
        for t in self.set_up:
            try:
                t.teardown()
            except (TracerError, OSError) as e:
                say(f"run: teardown of {t.name}: {e}")
        self.set_up = []
        tracefs.MOUNTS.release()
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)


# -- the matrix ----------------------------------------------------------------
def round125(n, up):
    """N rounded down (or up) to 1, 2 or 5 times a power of ten."""
    steps = [m * 10 ** e for e in range(0, 14) for m in (1, 2, 5)]
    if up:
        return next((s for s in steps if s >= n), steps[-1])
    return max([s for s in steps if s <= n] or [1])


def size_iterations(args, ns_per_call, traced):
    """(calls per thread, how) for a cell whose warm-up took NS_PER_CALL:
    a slow (traced) cell gets fewer calls so one run takes ~MAX_RUN_S
    (never below FLOOR_ITER); a fast untraced one gets more, so one run
    takes at least MIN_RUN_S and the VM's jitter is averaged out."""
    if traced and args.max_run_s and ns_per_call > 0:
        n = args.max_run_s * 1e9 / ns_per_call
        if n < args.iter:
            return (max(min(args.iter, FLOOR_ITER), round125(n, up=False)),
                    f"cut to ~MAX_RUN_S={args.max_run_s:g} s by the warm-up")
    if not traced and args.min_run_s and ns_per_call > 0:
        n = args.min_run_s * 1e9 / ns_per_call
        if n > args.iter:
            return (min(MAX_ITER, round125(n, up=True)),
                    f"raised to MIN_RUN_S={args.min_run_s:g} s by the warm-up")
    return args.iter, "ITER"


def fmt_s(s):
    s = int(s)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def prepare(args, wanted):
    """Installs, builds and checks what can run here: the skip reasons by
    configuration, or an exit status when nothing may run."""
    install(missing_packages(wanted), args.no_install)
    r = subprocess.run(["make", "-s", "-C", ROOT, "all"], stdout=sys.stderr)
    if r.returncode != 0:
        say("run: make failed; nothing was run")
        return 1
    # A forced SystemTap runtime that cannot run is an error, before
    # anything is attached.
    stap = tracers.get("stap")
    if "stap" in wanted:
        try:
            stap.choose(args.stap_runtime)
        except TracerError as e:
            say(f"run: {e}")
            return 2
        if stap.runtime:
            say(f"run: SystemTap runs on the {stap.runtime} runtime: {stap.why}")
    skip = {}
    for cfg in args.configs:
        t = tracers.get(cfg.tracer)
        why = t.available() or t.skip_reason(cfg)
        if not why and not os.path.exists(os.path.join(ROOT, "build", f"benchmark-{cfg.build}")):
            why = f"build/benchmark-{cfg.build} was not built (see make's message)"
        if why:
            skip[cfg.name] = why
            say(f"run: skipping {cfg.name}: {why}")
    return skip


def measure(kit, args, wanted, skip):
    kit.make_dir()
    say(f"run: results in {os.path.relpath(kit.dir, ROOT)}; interleaving seed {args.seed} "
        "(SEED= replays the order)")
    stap = tracers.get("stap")
    kit.meta = {"started": datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds"), "skipped": skip}
    kit.write_meta()
    kit.meta.update(environment(args, sorted({c.build for c in args.configs})))
    kit.meta["stap"] = {"runtime": stap.runtime, "why": stap.why,
                        "flags": " ".join(stap.base_flags())} if "stap" in wanted else None
    kit.write_meta()
    for cfg in args.configs:
        if cfg.name in skip:
            for n in args.threads:
                kit.row(config=cfg.name, build=cfg.build, tracer=cfg.tracer, probe=cfg.probe,
                        action=cfg.action, threads=n, status="skipped", reason=skip[cfg.name])
    runnable = [c for c in args.configs if c.name not in skip]
    for name in sorted({c.tracer for c in runnable}):
        t = tracers.get(name)
        try:
            kit.set_up.append(t)  # teardown undoes whatever part of setup was done
            t.setup(kit)
        except TracerError as e:
            say(f"run: {name} could not be set up: {e}")
            for c in [c for c in runnable if c.tracer == name]:
                for n in args.threads:
                    kit.row(config=c.name, build=c.build, tracer=c.tracer, threads=n,
                            status="failed", reason=f"set-up failed: {e}")
            runnable = [c for c in runnable if c.tracer != name]
    matrix(kit, args, runnable)
    kit.meta["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds")


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.list:
        print(configs.table())
        return 0
    wanted = sorted({c.tracer for c in args.configs} - {"none"})
    kit = Kit(args)
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def on_signal(signum, _frame):
        raise Interrupted(signal.Signals(signum).name)
    for s in old:
        signal.signal(s, on_signal)
    try:
        skip = prepare(args, wanted)
        if isinstance(skip, int):
            return skip
        measure(kit, args, wanted, skip)
    except Interrupted as e:
        say(f"\nrun: interrupted by {e}; cleaning up (rows so far are kept)")
        if kit.meta is not None:
            kit.meta["interrupted"] = str(e)
        return 130
    finally:
        for s in old:
            signal.signal(s, signal.SIG_IGN)  # cleanup runs to its end
        kit.cleanup()
        kit.close()
        for s, h in old.items():
            signal.signal(s, h)
    if not args.no_report and os.path.exists(os.path.join(HERE, "report.py")):
        subprocess.run([sys.executable, os.path.join(HERE, "report.py"), kit.dir])
    return 0


def session_members(sid):
    """Pids of the live processes in session SID (zombies excluded)."""
    return [pid for pid, fields in live() if int(fields[3]) == sid]


def explain(log):
    """The lines of a failed run's log that say what went wrong."""
    with open(log, errors="replace") as f:
        lines = [ln.strip() for ln in f if ln.strip() and not ln.startswith(("{", "$", "Tip:"))]
    why = [ln for ln in lines if re.search(r"error|abort|signal|lost|fail", ln, re.I)]
    return (": " + " / ".join(why[-3:])) if why else ""


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def warm_up(kit, args, c, n, label):
    """Rep 0 of a cell, which also times it to size its runs: (calls per
    thread, how they were chosen).  A failed warm-up is tried once more;
    if that fails too, a traced cell falls back to the fewest calls
    (FLOOR_ITER, so a slow tracer cannot take minutes a run) and an
    untraced one to ITER."""
    traced = c.tracer != "none"
    for attempt in ("warm-up", "warm-up retry"):
        say(f"[{attempt} {label}] {c.name} threads={n}")
        row = kit.run_one(c, n, kit.calib_iter, 0, sized_by=attempt)
        if row["status"] in record.MEASURED:
            it, how = size_iterations(args, row["_max_thread_wall_ns"] / kit.calib_iter, traced)
            kit.estimate[(c.name, n)] = row["_elapsed"]
            return it, how + (" (retried: the first warm-up failed)"
                              if attempt != "warm-up" else "")
    if traced:
        return min(args.iter, FLOOR_ITER), f"fallback: both warm-ups failed ({row['reason']})"
    return args.iter, f"ITER: both warm-ups failed ({row['reason']})"


def matrix(kit, args, runnable):
    cells = [(c, n) for c in runnable for n in args.threads]
    sizing = {}
    if not args.quick:
        kit.calib_iter = min(args.iter, WARMUP_ITER)
        for i, (c, n) in enumerate(cells):
            sizing[(c.name, n)] = warm_up(kit, args, c, n, f"{i + 1}/{len(cells)}")
    total = len(cells) * args.runs
    done, spent = 0, 0.0
    shuffle = random.Random(args.seed)  # interleaved: drift hits all cells alike
    for rep in range(1, args.runs + 1):
        order = list(cells)
        shuffle.shuffle(order)
        for c, n in order:
            it, how = sizing.get((c.name, n), (args.iter, "ITER"))
            t0 = time.monotonic()
            row = kit.run_one(c, n, it, rep, sized_by=how)
            spent += time.monotonic() - t0
            done += 1
            eta = spent / done * (total - done)
            tail = f"{row['status']}" + (f" ({row['reason']})" if row.get("reason") else "")
            say(f"[{done}/{total}] {c.name} threads={n} iter={it} rep {rep}/{args.runs}: "
                f"{tail}  ETA {fmt_s(eta)}")


if __name__ == "__main__":
    sys.exit(main())
