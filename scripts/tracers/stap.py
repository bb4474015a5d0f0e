"""stap.py: SystemTap, with the scripts in stp/, on either runtime.
(One back-end's run verbs on two runtimes that share every verb; its
lifecycle verbs are stap_attached.py's, its module builds stap_build.py's,
its pre-flight stap_preflight.py's, the reading of its counts (and the
rows that would count wrong) stap_counts.py's.)

module (ordinary distro kernels with modules and headers): the way the
2011 post ran it.  `stap -F -m TAG` loads the module in flight-recorder
mode and returns; the back-end waits until /sys/module/TAG is live, the
target runs, the count is read from /proc/systemtap/TAG/events (the
scripts' procfs probe), and `staprun -d TAG` unloads the module.
Overload protection is off (-DSTP_NO_OVERLOAD) so a tight loop is not cut
short.  (--suppress-time-limits would also lift MAXACTION, but it needs
guru mode, -g: found when the module runtime first ran, in make lab's
guest; the scripts' one-statement handlers do not need it.)

bpf (`--runtime=bpf`), where modules cannot load: stap needs a kernel
"build tree", which the back-end makes as a stub in build/stap-kernel/
(.config, the release, empty Module.symvers and Makefile; nothing under
/lib/modules), debugfs mounted, and, where root cannot raise
RLIMIT_MEMLOCK and the kernel (>= 5.11) does not charge BPF maps to it,
build/memlock-shim.so preloaded into stapbpf.  `stap -c TARGET -o FILE`
runs the target; the count is the end probe's line in FILE.  stap 4.8's
BPF runtime cannot read $v or $arg1, so there the scripts print a
constant in the argument's place (see each script); rows say so.

The runtime is chosen once, in choose(): module where it works, else
bpf; STAP_RUNTIME=module|bpf forces one (an error if it cannot run here).
"Works" includes a pre-flight: Debian's SystemTap cannot build modules for
some of Debian's own kernels (4.8 for 6.1, 5.1 for 6.12), so before the
module runtime is chosen, `stap -p4` compiles a trivial script with one
process.mark probe against the kernel's build tree; the result is cached
per kernel release and SystemTap version (build/stap-preflight.json), and
a failure names the first compiler error.

STAP_MODULES=DIR (what `make lab` sets in its guests) loads modules built
beforehand, DIR/kit_CONFIG.ko, with `staprun -L` instead of compiling in
the run: a guest under emulation compiles at a tenth of the host's speed.
stap_build.py builds them, in a chroot of the guest's system, with the
flags Stap.for_guest() gives.

A module built with -DSTP_ALIBI or -t is counted from its probe hit
report: built by `stap -p4` on a pseudo-terminal, run by `staprun KO -c
TARGET`, for reasons stap_counts.py gives.
"""
import functools
import gzip
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass

import host
import owncopy
import semaphores
import trusted
import userscript
from configs import SCRIPT_MODE
from params import Param, flag01, folder, one_of
from . import stap_counts, stap_preflight, tracefs
from host import wait_for
from procs import live
from .base import LIVE_LINE, LONG_TIMEOUT_S, RunState, Tracer, TracerError, start_script

ROOT = host.ROOT
STUB = os.path.join(ROOT, "build", "stap-kernel")
SHIM = os.path.join(ROOT, "build", "memlock-shim.so")
MODULE_FLAGS = ["-DSTP_NO_OVERLOAD"]
MODULE_LIVE_S = 30  # for a module `stap -F` loaded to become live


def kernel_config():
    """The running kernel's .config text, or None."""
    if os.path.exists("/proc/config.gz"):
        with gzip.open("/proc/config.gz", "rt") as f:
            return f.read()
    boot = f"/boot/config-{platform.release()}"
    if os.path.exists(boot):
        with open(boot) as f:
            return f.read()
    return None


def can_raise_memlock():
    r = subprocess.run([sys.executable, "-c", "import resource as r; "
                        "r.setrlimit(r.RLIMIT_MEMLOCK, (r.RLIM_INFINITY, r.RLIM_INFINITY))"],
                       stderr=subprocess.DEVNULL)
    return r.returncode == 0


def prebuilt_name(cfg):
    """The module name a configuration's module is built under beforehand."""
    return "kit_" + cfg.name.replace("-", "_")


@dataclass
class State(RunState):
    """What one run of this back-end keeps between its verbs."""
    flags: str = None  # stap's flags for this run
    module: str = None  # the module's name, once built
    out: str = None  # stap -o file (bpf runtime)
    ko: str = None  # the module staprun -c runs (hit-report runs)


class Stap(Tracer):
    name = "stap"
    attaches_running = True  # stap -x PID (module: loaded in flight-recorder mode)
    State = State
    needs = {"stap": "systemtap", "mount": "mount"}  # (mount: debugfs; a bare trixie has no mount(8))
    versions = ("stap",)

    def __init__(self):
        self.runtime = None  # "module" or "bpf", once chosen
        self.why = ""  # why that runtime
        self.preload = False
        self.modules = None  # STAP_MODULES: a folder of modules built beforehand
        self.timing = False  # STAP_TIMING: stap -t on the module runtime
        self.prebuilt = False  # building make lab's modules beforehand (for_guest)

    @classmethod
    def for_guest(cls, timing):
        """The back-end as make lab's guests run it, on the module runtime
        with STAP_TIMING=TIMING, chosen without looking at this host: what
        builds their modules beforehand (stap_build) with the flags their
        runs will have (cfg_flags, reports)."""
        be = cls()
        be.runtime, be.timing, be.prebuilt = "module", bool(timing), True
        return be

    def max_iter(self, cfg, threads):
        return stap_counts.max_iter(self, cfg, threads)

    # -- choosing the runtime -------------------------------------------------
    def module_reason(self):
        if not os.path.exists("/proc/modules"):
            return "this kernel cannot load modules (CONFIG_MODULES is off)"
        build = f"/lib/modules/{platform.release()}/build"
        if not os.path.exists(os.path.join(build, "Makefile")):
            return (f"no kernel build tree at {build} "
                    f"(Debian package linux-headers-{platform.release()})")
        if not shutil.which("staprun"):
            return "staprun not found (Debian package systemtap)"
        if self.modules:  # built beforehand, and checked there (make lab)
            return None
        return stap_preflight.preflight(build, platform.release())

    @staticmethod
    def bpf_reason():
        if not shutil.which("stapbpf"):
            return "stapbpf not found (Debian package systemtap)"
        cfg = kernel_config()
        if cfg is None:
            return "no kernel .config (/proc/config.gz or /boot/config-*) to describe the kernel"
        if "CONFIG_BPF_SYSCALL=y" not in cfg or "CONFIG_UPROBES=y" not in cfg:
            return "the kernel lacks CONFIG_BPF_SYSCALL or CONFIG_UPROBES"
        if not can_raise_memlock() and tracefs.kernel_version() < (5, 11):
            return ("stapbpf must raise RLIMIT_MEMLOCK, root may not here, and this kernel "
                    "(< 5.11) charges BPF maps to it")
        return None

    def params(self):
        return [Param("STAP_RUNTIME", one_of("STAP_RUNTIME", "module", "bpf", "auto"), "auto",
                      "SystemTap's runtime: auto is module where it works, else bpf"),
                Param("STAP_MODULES", folder("STAP_MODULES"), "",
                      "a folder of modules built beforehand (kit_CONFIG.ko, what make lab "
                      "builds): loaded with staprun -L instead of compiled", "none"),
                Param("STAP_TIMING", flag01("STAP_TIMING"), False,
                      "1: on the module runtime, stap -t: each run's note gives the handler's "
                      "own cycles per hit from the module's hit report, beside the event's "
                      "whole cost (no flight recorder then)", "0")]

    def choose(self, args):
        forced = None if args.stap_runtime == "auto" else args.stap_runtime
        self.modules = args.stap_modules or None
        why = self.modules and os.geteuid() == 0 and trusted.why_not(self.modules,
                                                                    what="STAP_MODULES")
        if why:
            raise TracerError(f"{why}; root loads no kernel module another user may have put "
                              "there")
        self.timing = bool(args.stap_timing)
        if self.pick(forced):  # neither runtime: each row's skip reason says why
            return None
        return f"SystemTap runs on the {self.runtime} runtime: {self.why}"

    def describe(self):
        if not self.runtime:
            return None
        return (f"SystemTap runtime: {self.runtime} ({self.why}); "
                f"flags: {' '.join(self.base_flags())}")

    def pick(self, forced=None):
        """Pick the runtime; returns None, or a reason when nothing can run
        (raises TracerError when a forced runtime cannot run here)."""
        why = self.need_commands() or self.need_root()
        mod, bpf = self.module_reason(), self.bpf_reason()
        if forced == "module" and (why or mod):
            raise TracerError(f"STAP_RUNTIME=module cannot run here: {why or mod}")
        if forced == "bpf" and (why or bpf):
            raise TracerError(f"STAP_RUNTIME=bpf cannot run here: {why or bpf}")
        if why:
            return why
        if forced:
            self.runtime, self.why = forced, f"forced by STAP_RUNTIME={forced}"
        elif not mod:
            self.runtime, self.why = "module", "loadable modules and a kernel build tree are here"
        elif not bpf:
            self.runtime, self.why = "bpf", f"module runtime unavailable: {mod}"
        else:
            return f"neither runtime can run: module: {mod}; bpf: {bpf}"
        return None

    def available(self):
        if self.runtime:
            return None
        return self.pick()

    # -- set-up ----------------------------------------------------------------
    def setup(self, log):
        if self.runtime != "bpf":
            return
        if not tracefs.MOUNTS.ensure("debugfs", "/sys/kernel/debug"):
            raise TracerError("could not mount debugfs at /sys/kernel/debug")
        self.make_stub()
        self.preload = not can_raise_memlock()
        if self.preload and not os.path.exists(SHIM):
            raise TracerError(f"{SHIM} is missing (run make)")

    @staticmethod
    def make_stub():
        rel = platform.release()
        os.makedirs(os.path.join(STUB, "include", "generated"), exist_ok=True)
        os.makedirs(os.path.join(STUB, "include", "config"), exist_ok=True)
        files = {
            ".config": kernel_config(),
            "include/generated/utsrelease.h": f'#define UTS_RELEASE "{rel}"\n',
            "include/config/kernel.release": rel + "\n",
            "Module.symvers": "",
            "Makefile": "",
        }
        for name, text in files.items():
            with open(os.path.join(STUB, name), "w") as f:
                f.write(text)

    def skip_reason(self, cfg, workload=None):
        if cfg.mode == SCRIPT_MODE and self.runtime == "module":
            return ("your SCRIPT runs on SystemTap's bpf runtime here: on the module runtime "
                    "the kit loads modules it built itself (stp/), and counts from their files")
        if cfg.mode == "alibi" and self.runtime != "module":
            return "-DSTP_ALIBI is an option of the module runtime, which cannot run here"
        if cfg.attach == "running" and self.reports(cfg):
            return ("STAP_TIMING's hit report needs staprun -c to start the target, and this "
                    "row attaches to a target already running")
        if cfg.workload and self.runtime == "module" and (self.modules or self.prebuilt):
            return ("a real program's SystemTap row compiles its module with the program's "
                    "path and pid; make lab's guests load modules built beforehand, and the "
                    "kit does not yet build one for a program already running")
        why = stap_counts.semaphore_problem(self, cfg, workload)
        if why:
            return why
        if cfg.probe == "return" and self.runtime == "bpf":
            return ("SystemTap's bpf runtime has no process return probes (stap: 'process "
                    "return probes not available'); the module runtime, which has them, "
                    "cannot run here")
        return None

    def raises_semaphores(self):
        return self.runtime != "bpf"  # (the module runtime raises them itself)

    def base_flags(self):
        if self.runtime == "module":
            return list(MODULE_FLAGS)
        return ["--runtime=bpf", "-r", STUB]

    def cfg_flags(self, cfg):
        """stap's flags for CFG on this runtime (make lab builds its modules
        with them)."""
        return self.base_flags() + (["-DSTP_ALIBI"] if cfg.mode == "alibi" else []) + (
            ["-t"] if self.timing and self.runtime == "module" else [])

    def reports(self, cfg):
        """CFG is counted from the module's hit report (module runtime,
        -DSTP_ALIBI or -t): built on a terminal, run by staprun -c."""
        return self.runtime == "module" and (cfg.mode == "alibi" or self.timing)

    def flags(self, run):
        return self.cfg_flags(run.cfg)

    def env(self, base=None):
        env = dict(base or os.environ)
        if self.runtime == "bpf" and self.preload:
            env["LD_PRELOAD"] = SHIM
        return env

    @staticmethod
    def module_name(run):
        return run.tag.replace("-", "_")

    # -- the verbs ---------------------------------------------------------------
    def attach(self, run):
        run.state.flags = " ".join(self.flags(run))
        if self.runtime != "module":
            ready = functools.partial(self.live_stapbpf, run)
            if run.cfg.mode == SCRIPT_MODE:  # the user's own, as written (userscript.py)
                script = self.script(run)
                start_script(self, run, ["stap", *self.flags(run), *script], script[0], ready,
                             self.env())
            elif run.cfg.attach == "running":  # beside the held target: stap -x PID
                self.start_live(run, ["stap", *self.flags(run), *self.script(run)], ready,
                                env=self.env(), timeout=LONG_TIMEOUT_S)  # (it compiles first)
            return
        if self.reports(run.cfg):  # wrap() runs it, with the target
            if self.modules:
                mod = run.state.module = prebuilt_name(run.cfg)
                run.state.ko = os.path.join(self.modules, mod + ".ko")
                if not os.path.exists(run.state.ko):
                    raise TracerError(f"STAP_MODULES has no {mod}.ko for {run.cfg.name}")
                return
            mod = self.module_name(run)
            rc, text = stap_preflight.on_a_tty(["stap", "-p4", "-m", mod, *self.flags(run),
                                 os.path.join(ROOT, run.cfg.script)], run.log,
                                LONG_TIMEOUT_S, cwd=run.scratch)
            if rc != 0:
                raise TracerError(f"stap -p4 of {run.cfg.script} failed: "
                                  + (stap_preflight.first_error(text) if rc else "timed out"))
            run.state.ko = os.path.join(run.scratch, mod + ".ko")
            run.state.module = mod
            return
        if self.modules:  # built beforehand: load it in flight-recorder mode
            mod = prebuilt_name(run.cfg)
            ko = os.path.join(self.modules, mod + ".ko")
            if not os.path.exists(ko):
                raise TracerError(f"STAP_MODULES has no {mod}.ko for {run.cfg.name}")
            run.state.module = mod
            self.sh(["staprun", "-L", ko], log=run.log, timeout=LONG_TIMEOUT_S)
        else:
            mod = run.state.module = self.module_name(run)
            self.sh(["stap", "-F", "-m", mod, *self.flags(run), *self.script(run)], log=run.log,
                    timeout=LONG_TIMEOUT_S, env=self.env())

        def live_module():
            try:
                with open(f"/sys/module/{mod}/initstate") as f:
                    return f.read().strip() == "live"
            except OSError:
                return False
        if not wait_for(live_module, MODULE_LIVE_S):
            raise TracerError(f"stap module {mod} did not become live in {MODULE_LIVE_S} s")

    @staticmethod
    def script(run):
        """The script and its arguments: a real program's (attach "running")
        takes the program (@1) and the line its begin probe prints (@2), and
        its process is the held target (-x)."""
        if run.cfg.mode == SCRIPT_MODE:  # the user's own, as written (userscript.py)
            return [userscript.runnable(run.cfg.script, "stap", run.scratch, LIVE_LINE)]
        mine = os.path.join(ROOT, run.cfg.script)  # (the checkout's, whatever the cwd)
        if run.cfg.attach != "running":
            return [mine]
        if run.workload.by_path:  # every process mapping it (stp/mark-by-path.stp): no -x
            return [mine, run.own_copy[0] if run.own_copy else run.build, run.cfg.marker,
                    LIVE_LINE]
        return [mine, run.build, LIVE_LINE, "-x", str(run.target_pid)]

    def live_stapbpf(self, run, live):
        """Its probes are live (its begin probe has printed), and stapbpf's
        pid is known (it names its uprobes after it)."""
        if not live.printed(LIVE_LINE):
            return False
        self.learn_stapbpf(run, live.proc.pid)
        return True

    def wrap(self, run, cmd):
        if run.cfg.attach == "running":
            if run.cfg.mode == SCRIPT_MODE or not (run.workload and run.workload.by_path):
                return cmd  # (the user's script on the kit's own loop: no workload)
            # by path: the command under a copy of the program only it maps,
            # the probe on the copy (owncopy.py): the workload's events alone
            run.own_copy = owncopy.make(run.build, run.scratch)
            if run.audit:  # the loader's module raises the semaphore in the copy it maps
                semaphores.audit_on(run.env, run.own_copy[0])
            return owncopy.wrap(cmd, *run.own_copy)
        if self.reports(run.cfg):  # the module's output joins the target's stdout
            return ["staprun", run.state.ko, "-c", " ".join(cmd)]
        if self.runtime == "module":
            return cmd
        out = run.state.out = os.path.join(run.scratch, "stap.out")
        run.env = self.env(run.env)
        # No -m here: with a module name, the bpf runtime leaves NAME.bo in
        # the working directory.
        return ["stap", *self.flags(run), "-o", out, run.cfg.script, "-c", " ".join(cmd)]

    def watch(self, run, pgid):
        """Learns stapbpf's pid: it names its uprobes after it, and leaves
        them behind when it crashes; the Supervisor removes those."""
        if self.runtime != "bpf" or run.cfg.attach == "running":
            return True
        return self.learn_stapbpf(run, pgid)

    @staticmethod
    def learn_stapbpf(run, pgid):
        for pid, fields in live("stapbpf"):
            if int(fields[2]) == pgid:
                run.pids.add(pid)  # it names its uprobes after its pid
                return True
        return False

    def events(self, run):
        return stap_counts.events(self, run)

    def detach(self, run):
        self.stop_live(run)
        mod = run.state.take("module")
        if mod and os.path.exists(f"/sys/module/{mod}"):
            self.sh(["staprun", "-d", mod], log=run.log, check=False)
            if os.path.exists(f"/sys/module/{mod}"):
                raise TracerError(f"staprun -d {mod} left the module loaded")


BACKEND = Stap()
