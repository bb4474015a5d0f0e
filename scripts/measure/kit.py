"""kit.py: one run of the target under one configuration, start to row:
the tracer attached (before the target, or while it holds), the target
timed under the Supervisor, the tracer detached on every path, what it
saw judged (record.verdict) and the row written to the results folder.
The runner gets (row, record.Timing) back.

Nothing to run: `from measure.kit import Kit`.
"""
import dataclasses
import functools
import json
import os
import shutil
import tempfile
import time
import traceback

import cgroups
import configs
import record
import tracers
import host
import procs
import leftovers
from private import Private
import semaphores
import workloads
from host import BUILD, ROOT, Interrupted, say
from measure import paths
from measure.supervise import Supervisor
from params import DEFAULT_TIME_LIMIT, TIGHT, TIME_LIMIT_MARGIN
from tracers.base import TracerError
from measure.sizing import WARMUP_ITER, warmup_calls


def target_path(build):
    """The target of build BUILD (src/builds.tsv), where make puts it."""
    return os.path.join(BUILD, f"benchmark-{build}")


class Run:
    """One execution of the target under one configuration; STATE is the
    back-end's own per-run record (its State dataclass)."""

    def __init__(self, kit, cfg, tracer, threads, iterations, rep, rate=TIGHT, witness=False):
        self.cfg, self.threads, self.iterations, self.rate = cfg, threads, iterations, rate
        self.witness = witness  # a witness run (record.WITNESS_RUN: Tracer.witness_run)
        self.pin = kit.args.pin
        self.miss = kit.args.miss
        self.duration_ms = max(1, round(kit.args.duration * 1000))
        # The ELF the probes go on: the kit's target, or a workload's program.
        self.workload = workloads.get(cfg.workload, kit.args) if cfg.workload else None
        if self.workload and self.workload.marker:  # the user's PROBE (workloads.user)
            self.cfg = cfg = dataclasses.replace(cfg, marker=self.workload.marker)
        if cfg.mode == configs.SCRIPT_MODE:  # the user's SCRIPT (userscript.py)
            self.cfg = cfg = dataclasses.replace(cfg, script=kit.args.script)
        self.build = self.workload.program if self.workload else target_path(cfg.build)
        self.target_pid = None  # the target's, once started (Supervisor.execute)
        self.raised = None  # {marker: semaphore before} that the runner raised in it
        self.raised_in = 0  # in how many processes (workloads.semaphore_holders)
        self.prepared = []  # the workload's own arguments (Workload.prepare)
        self.bystanders = []  # processes of its program not the kit's, at the attach
        # a by-path workload's own cgroup (cgroups.Group, from its release
        # to its cleanup), or why it has none
        self.group, self.group_why = None, ""
        self.audit = None  # (the loader's module, whether it raised the semaphore), if loaded
        self.own_copy = None  # (copy, path) where the command maps a copy only it maps (owncopy)
        kit.serial += 1
        self.tag = leftovers.run_tag(kit.id, kit.serial)
        paced = "" if rate == TIGHT else f"-rate{rate}"
        self.log = os.path.join(kit.folder.logs,
                                record.log_name(cfg.name, threads, rep, paced, witness))
        self.scratch = tempfile.mkdtemp(prefix=self.tag + "-", dir=kit.scratch)
        self.state = tracer.State()
        self.pids = set()  # the tracer's processes (what they leave behind is removed)
        # A -pg build writes gmon.out when it exits: into scratch, not the tree.
        self.env = dict(os.environ, GMON_OUT_PREFIX=os.path.join(self.scratch, "gmon.out"))

    def wrapped(self, cmd):
        """CMD runs the target under a tracer (not the target's own command,
        nor that command under its own copy of the program: owncopy.py)."""
        return cmd[0] != self.target()[0] and not self.own_copy

    def target(self):
        size = (["--iterations", str(self.iterations)] if self.rate == TIGHT else
                ["--rate", str(self.rate), "--duration-ms", str(self.duration_ms)])
        miss = min(self.miss, self.iterations) if self.rate == TIGHT else 0
        order = {"running": ["--hold"], "fork": ["--fork", str(configs.FORK_CALLS)]}
        start = [*self.workload.argv, *self.prepared] if self.workload else [self.build]
        return [*start, "--threads", str(self.threads), *size, "--quiet",
                *(["--pin"] if self.pin else []), *(["--miss", str(miss)] if miss else []),
                *order.get(self.cfg.attach, [])]


class Kit:
    """The matrix's runs: each one attached, timed, judged (record.verdict)
    and written to the results folder (record.Folder); the Supervisor
    starts, watches and cleans up the processes."""

    def __init__(self, args):
        self.args = args
        self.id = leftovers.kit_id(os.getpid())
        self.serial = 0
        self.folder = None
        self.scratch = None
        self.sup = Supervisor()
        self.estimate = {}  # (config, threads): the warm-up's seconds
        self.calib_iter = WARMUP_ITER

    def open(self):
        self.folder = record.Folder(self.args.results, unit=self.args.unit)
        os.makedirs(BUILD, exist_ok=True)
        self.held = Private.make(BUILD, leftovers.scratch_prefix(self.id))  # (private.py)
        self.scratch = self.held.path
        self.log = os.path.join(self.folder.logs, "kit.log")

    def close(self):
        self.sup.cleanup()
        if self.scratch:
            for w in workloads.WORKLOADS.values():
                w.teardown(self.scratch)
        if self.scratch and not self.held.remove():
            say(f"run: {self.scratch} now leads to a folder the kit did not make: left")
        if self.folder:
            self.folder.close()

    def run_one(self, cfg, threads, iterations, rep, sized_by="", rate=TIGHT, judge=None,
                witness=False):
        """Runs the target once under cfg (paced at RATE calls/s per thread
        for DURATION, or ITERATIONS calls in a tight loop); writes its row,
        whose `stopped` JUDGE(row) fills (why the cell runs no more, or
        ''), and returns (row, record.Timing).  WITNESS: the tracer's
        witness run (rep 0, record.WITNESS_RUN), never timed."""
        if witness:
            rep, sized_by = 0, f"{record.WITNESS_RUN} ({sized_by})" if sized_by else \
                record.WITNESS_RUN
        tracer = tracers.get(cfg.tracer)
        w = workloads.get(cfg.workload, self.args) if cfg.workload else None
        if w and iterations > w.max_iter:  # a transaction, not a call: QUICK's ITER, say
            iterations, sized_by = w.max_iter, f"{sized_by}, at most {w.name}'s {w.max_iter}"
        cap = rate == TIGHT and tracer.max_iter(cfg, threads)  # a tracer's known limit
        if cap and iterations > cap[0]:
            iterations, sized_by = cap[0], f"{sized_by}, {cap[1]}".lstrip(", ")
        if rate != TIGHT:
            iterations = max(1, rate * round(self.args.duration * 1000) // 1000)
            sized_by = f"RATE={rate} x DURATION={self.args.duration:g} s"
        run = Run(self, cfg, tracer, threads, iterations, rep, rate, witness)
        row = record.failed_row(
            cfg, threads, "", iterations=iterations, rep=rep, sized_by=sized_by,
            pinned=int(run.pin), rate=rate, unit=self.args.unit, attach=cfg.attach,
            events_expected=record.expected_events(tracer.attaches, cfg.expect,
                                                   threads * iterations))
        timing = record.Timing()
        t0 = time.monotonic()
        try:
            rec, rusage, ev, path, cmd = self.trace(tracer, run)
            fields, timing.max_thread_wall_ns = record.target_fields(rec)
            row.update(fields, path=path)
            row.update(self.tracer_cpu(ev, rusage, rec, run.wrapped(cmd)))
            self.judge_run(row, tracer, run, rec, ev)
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
            timing.elapsed_s = time.monotonic() - t0
        silent = row["status"] == "never-fires" and w and w.why_silent()  # detached; not timed
        if silent:  # (once: it runs the user's command again)
            row["reason"] += "; " + silent
        if judge:
            row["stopped"] = judge(row)
        self.folder.write(row)
        return row, timing

    def trace(self, tracer, run):
        """The run itself: (the target's record, its rusage, what the
        tracer saw, the uprobe path, the command run); the tracer (and
        the uretprobe syscall's counter, for a return probe) detached
        whatever happens."""
        cfg = run.cfg
        uret = paths.UretprobeSyscalls(run) if cfg.probe == "return" else None
        try:
            if run.workload:
                run.prepared = run.workload.prepare(run.scratch)
                self.raise_at_exec(tracer, run)
            if uret:
                self.sup.attach(uret, run)
            # ATTACH: "running" attaches while the started target holds
            attach = functools.partial(self.sup.attach, tracer, run)
            if cfg.attach != "running":
                attach()

            def release():  # the target holds: the probe, then the semaphores it wants
                if run.workload and not workloads.wait_held(
                        run.target_pid, lambda: self.sup.child.poll() is None,
                        run.workload.hold_timeout):
                    raise TracerError(f"{run.workload.name}: the target never reached its gate "
                                      "(a read of stdin)")
                run.bystanders = run.workload and run.workload.bystanders()
                if run.workload and run.workload.by_path:
                    self.group_workload(run)
                attach()
                if cfg.semaphores:
                    holders = run.workload.semaphore_holders(run.target_pid)
                    try:
                        if not holders:
                            raise ValueError(f"no process of {run.build} to raise them in")
                        raised = [semaphores.raise_semaphores(pid, run.build, cfg.semaphores)
                                  for pid in holders]
                        run.raised, run.raised_in = raised[0], len(raised)  # (the first's)
                    except (OSError, ValueError) as e:
                        raise TracerError(f"could not raise the semaphores of "
                                          f"{', '.join(cfg.semaphores)}: {e}")
            cmd = tracer.wrap(run, run.target())
            rec, rusage, why = self.sup.execute(
                tracer, run, cmd, self.time_limit(run), ROOT,
                release=release if cfg.attach == "running" else None,
                dephase=self.args.unit == record.INSTRUCTIONS)
            if why:
                raise TracerError(why)
            ev = tracer.events(run)
            path = uret.path() if uret else None
        finally:
            # undone whole: a signal meanwhile is kept for the next check
            with host.deferred():
                try:
                    self.sup.detach(tracer, run)
                    if uret:
                        self.sup.detach(uret, run)
                finally:
                    if run.workload:  # after the target's session is killed (detach)
                        try:
                            run.workload.cleanup(run.scratch, run.log)
                        finally:
                            if run.group:
                                run.group.remove()
        if tracer.uprobes and not uret:
            path = paths.entry_path(rec["uprobe_maps"], ev.seen)
        return rec, rusage, ev, path, cmd

    @staticmethod
    def raise_at_exec(tracer, run):
        """Where the workload's processes start after the attach (a user's
        command) and its marker has a semaphore, glibc's loader loads the
        kit's auditing module into each (Command.exec_env), through the
        target's environment, in every row of the family alike; it raises
        the semaphore as the process maps the program where the tracer
        raises none (SystemTap's bpf runtime)."""
        if not run.workload.raises_at_exec():
            return
        raise_them = tracer.attaches and not tracer.raises_semaphores()
        try:
            env = run.workload.exec_env([run.cfg.marker], raise_them)
        except (OSError, ValueError) as e:
            raise TracerError(f"could not give the command's processes the loader's module "
                              f"for {run.cfg.marker}'s semaphore: {e}")
        if env:
            run.env.update(env)
            run.audit = (env["LD_AUDIT"], raise_them)

    @staticmethod
    def group_workload(run):
        """The held target and what it started (a cluster's postmaster) in
        a cgroup of the run's own, so a probe by path counts the workload's
        events apart from other processes' (cgroups.py)."""
        run.group, run.group_why = cgroups.make(run.tag)
        if run.group:
            try:
                settled = run.group.add_tree(run.target_pid, procs.below)
            except OSError as e:
                raise TracerError(f"could not put the workload in its cgroup "
                                  f"{run.group.path}: {e.strerror or e}")
            if not settled:
                raise TracerError(f"the workload's processes kept forking while they moved "
                                  f"into its cgroup {run.group.path}")

    @staticmethod
    def tracer_cpu(ev, rusage, rec, wrapped):
        """The tracer's own CPU: a daemon's, read by the back-end; else the
        tracer's process and its children (where the target ran WRAPPED
        under it), less the target."""
        if ev.tracer_cpu_ns:
            return dict(zip(("tracer_user_ns", "tracer_sys_ns"), ev.tracer_cpu_ns))
        if rusage and wrapped:
            return {"tracer_user_ns": max(0, int(rusage.ru_utime * 1e9) - rec["process_user_ns"]),
                    "tracer_sys_ns": max(0, int(rusage.ru_stime * 1e9) - rec["process_sys_ns"])}
        return {}

    @staticmethod
    def judge_run(row, tracer, run, rec, ev):
        """ROW's events, status and reason from what the tracer saw (EV)
        and what the target says it did (REC)."""
        cfg = run.cfg
        decoys = sum(t.get("decoys", 0) for t in rec["per_thread"])
        note = ev.note + (f"; MISS: {decoys} of the calls went to kit_decoy(), which no "
                          "probe covers" if decoys else "")
        if run.workload and tracer.attaches:
            note += f"; {run.workload.name} counts {run.workload.counted}"
        if run.bystanders and tracer.attaches:
            note += (f"; {len(run.bystanders)} other processes ran {run.build} at the attach "
                     f"(pids {' '.join(map(str, run.bystanders[:10]))})" + (
                         ": their events counted apart" if ev.apart else
                         ": a probe by path counted their events too"))
        if ev.others:
            note += f"; {ev.others} {record.OTHERS}, counted apart (not the workload's events)"
        elif run.workload and run.workload.by_path and tracer.attaches and not ev.apart:
            note += ("; its count may hold other processes' events: " + (
                run.group_why or f"{tracer.name} counts every process mapping it, and is not "
                "told which is the workload's"))
        if rec.get("workload"):  # the program's own figures (pgbench's), a column
            row["workload"] = json.dumps(rec["workload"], sort_keys=True)
        if run.audit and run.audit[1]:
            note += (f"; {cfg.marker}'s semaphore raised in each process of the command as it "
                     f"mapped {run.build}, by glibc's loader (LD_AUDIT={run.audit[0]}), "
                     f"{tracer.name} raising none")
        elif run.audit:
            note += (f"; LD_AUDIT={run.audit[0]} loaded in each process of the command, raising "
                     "nothing, as in every row of this family")
        if run.raised:
            note += "; raised through /proc/PID/mem before the calls: " + ", ".join(
                f"{m}'s semaphore (it read {v})" for m, v in run.raised.items()) + (
                f" in {run.raised_in} processes" if run.raised_in > 1 else "")
        row.update(events_seen=ev.seen, events_dropped=ev.dropped, note=note.lstrip("; "),
                   runtime=ev.runtime, events_others=ev.others)
        calls, planned = row["calls"], run.threads * run.iterations
        fired = None
        if run.workload and "fired" in rec:
            # the program's own count of the marker, where it keeps one
            fired = rec["fired"].get(cfg.marker)
            row["events_expected"] = record.expected_events(tracer.attaches, cfg.expect, fired)
        expected = row["events_expected"]
        if run.rate != TIGHT or rec.get("fork"):
            # a paced thread that fell behind stops at DURATION; a forked
            # target's parent made its calls before the fork, probed too
            expected = row["events_expected"] = record.expected_events(
                tracer.attaches, cfg.expect, calls + (row.get("fork_calls") or 0))
        if calls != planned and (run.rate == TIGHT or calls > planned):
            # the target's own sanity check
            row["reason"] = f"the target made {calls} calls, not {planned}"
        else:
            mixed = run.workload and run.workload.by_path and tracer.attaches and not ev.apart
            if mixed:  # a count not told apart (no cgroup here) may hold other processes'
                ev = dataclasses.replace(ev, also=None)  # events, and so may the hit counter
            row["status"], row["reason"] = record.verdict(
                tracer.attaches, expected, ev, cfg.overwrite, row["corrupted"], calls,
                real=bool(run.workload))
            if expected is None and ev.also and not ev.others and row["status"] != "mismatch":
                row["events_expected"] = ev.also[1]  # the kernel's count is the witness's
            if row["status"] == "unverified" and run.workload and fired is None \
                    and cfg.expect != "unverifiable":
                row["reason"] = (f"{run.workload.name} keeps no count of {cfg.marker}, and "
                                 "no witness counted this run (measure/witness.py)") + (
                    f"; its count may hold other processes' events: {run.group_why}"
                    if mixed and run.group_why else "")

    def time_limit(self, run):
        """TIME_LIMIT if given; else 10x the cell's expected time (its
        warm-up's, or its loop as TIMINGS timed it) scaled to the run's
        calls (a paced run: 10x DURATION), plus TIME_LIMIT_MARGIN for the
        tracer's start and end."""
        if self.args.time_limit:
            return self.args.time_limit
        if run.rate != TIGHT:
            return TIME_LIMIT_MARGIN + 10 * self.args.duration
        est = self.estimate.get((run.cfg.name, run.threads))
        if est is None:
            return DEFAULT_TIME_LIMIT
        calls = warmup_calls(self.calib_iter, run.cfg)  # what the estimate's warm-up made
        return TIME_LIMIT_MARGIN + 10 * est * run.iterations / max(1, calls)
