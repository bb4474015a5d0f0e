"""measure/dormant.py: what compiled-in markers cost a program while no one
traces it (docs/dormant.md).

    make run WORKLOAD='env USE_ZEND_DTRACE=1 php b.php' AGAINST='env USE_ZEND_DTRACE=0 php b.php'
    make run WORKLOAD='./prog-with-markers' AGAINST='./prog-without' TARGET=./prog-with-markers PROBE='prov:*'

A is WORKLOAD (the markers in, or their switch on), B is AGAINST (the same
program without them, or the switch off: give both the same words around
it, `env` and all, so that they differ only in what is compared).  Nothing
is attached while A and B are timed.  In order:

1. the input is checked (check()); each command runs once (preflight):
   one that fails, or that does other work than the other by its exit
   code or the size of its output, is an error before any timing;
2. per thread count (THREADS copies of the command at once): ABBA rounds
   of whole runs, the order random each round, a pilot of rounds and then
   as many as Stein's second stage asks for the asked half-width
   (DORMANT_PRECISION, in % of B's time), DORMANT_S the most in all
   (stats/paired.py); each run a row of dormant.csv as it ends;
3. where TARGET and PROBE name markers of A (PROBE='provider:*': every
   marker of TARGET's provider), one run of A with a uprobe on each
   marker's site (its semaphore raised, so a guarded marker's site is
   reached), the kernel's hit counter giving the passages a run, which
   prices the difference per passage; then the report (render/dormant.py).

Its folder: results/<stamp>-dormant/ (record/dormant.py).  The lock and the
sweep of a killed kit's uprobes are make run's.  Nothing to run: run.py
calls main(args) where AGAINST is given.
"""
import contextlib
import csv
import fnmatch
import os
import random
import shlex
import subprocess
import time

import elfinfo
import host
import kitlock
import leftovers
import record
import trusted
from host import say
from params import MAX_RUNS, Param, command_words, int_in, number_in, one_of, seconds_in
from record.dormant import ABBA, COLUMNS, DORMANT_CSV, DUET, KIND, METHODS
from stats import paired
from tracers import tracefs

OUTPUT_SLACK = (0.05, 64)  # output sizes this close (a fraction, bytes) are the same work


PARAMS = [
    Param("AGAINST", command_words("AGAINST"), None,
          "the program without its markers (or their switch off), timed against WORKLOAD, "
          "untraced, in ABBA rounds: what the markers cost while no one traces "
          "(docs/dormant.md)", "none"),
    Param("DORMANT_PRECISION", number_in("DORMANT_PRECISION", 0.01, 100, "% of AGAINST's time"),
          1.0, "with AGAINST: the 95% half-width asked, in % of AGAINST's time; without it, "
          "the idle-* rows' (the markers of the kit's loop, nothing attached), in % of the "
          "baseline's"),
    Param("IDLE_RUNS", int_in("IDLE_RUNS", paired.MIN_PILOT, MAX_RUNS), 60,
          "the most runs of an idle-* row (and of its baseline) at a thread count, which stops "
          "on DORMANT_PRECISION by AGAINST's rule (stats/paired.py; without RUNS)"),
    Param("DORMANT_S", seconds_in("DORMANT_S", 5, 86400), 120.0,
          "with AGAINST: the most seconds of timed rounds, all thread counts together"),
    Param("DORMANT_METHOD", one_of("DORMANT_METHOD", *METHODS), ABBA,
          f"with AGAINST: how A and B are paired: {ABBA} (alternated) or {DUET} (side by side "
          f"on two CPUs, one copy each, THREADS=1; docs/dormant.md says why {ABBA} is the "
          "default)"),
]


def method(a, threads):
    """The pairing of THREADS copies: DORMANT_METHOD's (a duet is one copy each)."""
    return DUET if a.dormant_method == DUET and threads == 1 else ABBA


def check(a, error):
    """AGAINST's input: WORKLOAD given; TARGET and PROBE both or neither,
    PROBE one of TARGET's markers or provider:* (some of them).  Sets
    A.notes, the markers counted (none without TARGET)."""
    if not a.workload:
        error("AGAINST needs WORKLOAD: the program with its markers, timed against AGAINST")
    a.notes = []
    if bool(a.target) != bool(a.probe):
        error("with AGAINST, TARGET and PROBE go together: "
              f"{'PROBE' if a.target else 'TARGET'} missing")
    if a.dormant_method == DUET and (len(os.sched_getaffinity(0)) < 2 or a.threads != [1]):
        error(f"DORMANT_METHOD '{DUET}' is not allowed here: it runs one copy of A and one of B "
              f"at once on two CPUs (THREADS=1; this process may use "
              f"{len(os.sched_getaffinity(0))})")
    if a.target:
        notes = elfinfo.Elf(a.target).sdt_notes()
        a.notes = [n for n in notes if fnmatch.fnmatchcase(f"{n.provider}:{n.name}", a.probe)]
        if not a.notes:
            error(f"PROBE '{a.probe}' is not allowed: {a.target} has no such marker; it has "
                  + ", ".join(sorted({f"{n.provider}:{n.name}" for n in notes})))


def held_to(cpu):
    """A child's first step: hold itself to CPU (None: any)."""
    return None if cpu is None else (lambda: os.sched_setaffinity(0, {cpu}))


# A duet's gate: each side starts as sh, held to its CPU, says it is ready
# (one byte on its stdout), waits for one line on its stdin, then execs the
# command (its words sh's arguments, never parsed by sh), so that both are
# released together, once both are ready: neither's start (a fork of this
# process, sh's own start-up) lands in the other's time.
GATE = ["/bin/sh", "-c", 'printf r && read _ && exec "$@" </dev/null >/dev/null', "sh"]


def duet(a_words, b_words, cpus):
    """A and B released at once, A held to CPUS[0] and B to CPUS[1]:
    their (wall ns, user ns, sys ns) each, from the release to its own
    end, or a RuntimeError naming the one that failed."""
    procs, out = {}, {}
    try:
        for side, words, cpu in (("A", a_words, cpus[0]), ("B", b_words, cpus[1])):
            procs[side] = subprocess.Popen(GATE + list(words), stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                           start_new_session=True, cwd=host.ROOT,
                                           preexec_fn=held_to(cpu))
        for p in procs.values():
            if p.stdout.read(1) != b"r":
                raise RuntimeError("a duet's gate (/bin/sh) did not start")
            p.stdout.close()
        t0 = time.monotonic_ns()
        for p in procs.values():
            p.stdin.write(b"go\n")
            p.stdin.close()
        by_pid = {p.pid: side for side, p in procs.items()}
        while len(out) < 2:
            pid, status, ru = os.wait4(-1, 0)  # (the kit has no other child meanwhile)
            end = time.monotonic_ns()
            if pid not in by_pid:
                continue
            side = by_pid[pid]
            procs[side].returncode = os.waitstatus_to_exitcode(status)
            if procs[side].returncode:
                raise RuntimeError(f"{'WORKLOAD' if side == 'A' else 'AGAINST'} failed "
                                   f"(exit status {procs[side].returncode}); nothing more was "
                                   "timed")
            out[side] = (end - t0, int(ru.ru_utime * 1e9), int(ru.ru_stime * 1e9))
        return out
    finally:
        for p in procs.values():
            if p.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, 9)
                p.wait()


def copies(words, n, log=None):
    """N copies of the command WORDS started at once, waited for: (wall
    ns from the first start to the last end, the copies' user ns, sys ns,
    [exit status], [stdout bytes]).  Their output goes to LOG (or is
    counted and dropped); each copy its own session, killed (by its own
    process group, which the kit made) if the kit is stopped."""
    out = log or subprocess.DEVNULL
    procs = []
    try:
        t0 = time.monotonic_ns()
        for _ in range(n):
            procs.append(subprocess.Popen(words, stdin=subprocess.DEVNULL, stdout=out,
                                          stderr=out, start_new_session=True, cwd=host.ROOT))
        rcs, user, sys_ = [], 0, 0
        for p in procs:
            _, status, ru = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            rcs.append(p.returncode)
            user += int(ru.ru_utime * 1e9)
            sys_ += int(ru.ru_stime * 1e9)
        return time.monotonic_ns() - t0, user, sys_, rcs
    finally:
        for p in procs:
            if p.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, 9)
                p.wait()


def preflight(a, scratch):
    """Each command once, its output kept: an error (in words) where one
    fails or they do other work (exit codes, output sizes), else None."""
    sizes = {}
    for side, words in (("WORKLOAD", a.workload), ("AGAINST", a.against)):
        path = os.path.join(scratch, f"{side.lower()}.out")
        try:
            with open(path, "wb") as f:
                _, _, _, rcs = copies(words, 1, f)
        except OSError as e:
            return f"{side} '{shlex.join(words)}' cannot start: {e.strerror}"
        sizes[side] = os.path.getsize(path)
        if rcs[0] != 0:
            with open(path, "rb") as f:
                last = ([ln for ln in f.read().decode(errors="replace").splitlines()
                         if ln.strip()] or [""])[-1]
            return f"{side} '{shlex.join(words)}' failed: exit status {rcs[0]}: {last[:200]}"
    a_size, b_size = sizes["WORKLOAD"], sizes["AGAINST"]
    if abs(a_size - b_size) > max(OUTPUT_SLACK[0] * max(a_size, b_size), OUTPUT_SLACK[1]):
        return (f"WORKLOAD and AGAINST do other work: their outputs are {a_size:,} and "
                f"{b_size:,} bytes; give both the same work (the same input and arguments)")
    return None


def timed_rounds(a, writer, threads, budget_s, rng):
    """One thread count's rounds (method()) under stats.paired's stopping
    rule, each run a row by WRITER: {figures, pilot, need, fit, round_s,
    b_wall_ns, method}."""
    b_walls, how = [], method(a, threads)
    cpus = sorted(os.sched_getaffinity(0))[:2]

    def abba(k, stage):
        order = rng.choice(("ABBA", "BAAB"))
        walls = {"A": [], "B": []}
        for slot, side in enumerate(order):
            host.check_signalled()
            wall, user, sys_, rcs = copies(a.workload if side == "A" else a.against, threads)
            if any(rcs):
                raise RuntimeError(f"{'WORKLOAD' if side == 'A' else 'AGAINST'} failed in "
                                   f"round {k} (exit status {max(rcs, key=abs)}); nothing more "
                                   "was timed")
            walls[side].append(wall)
            writer(dict(threads=threads, round=k, order=order, stage=stage, side=side,
                        slot=slot, cpu=-1, wall_ns=wall, user_ns=user, sys_ns=sys_))
        b_walls.extend(walls["B"])
        return paired.round_figure(walls["A"], walls["B"])

    def side_by_side(k, stage):
        walls = {"A": [], "B": []}
        for slot, held in enumerate((cpus, cpus[::-1])):
            host.check_signalled()
            got = duet(a.workload, a.against, held)
            for side, cpu in zip("AB", held):
                wall, user, sys_ = got[side]
                walls[side].append(wall)
                writer(dict(threads=threads, round=k, order="AB", stage=stage, side=side,
                            slot=slot, cpu=cpu, wall_ns=wall, user_ns=user, sys_ns=sys_))
        b_walls.extend(walls["B"])
        return paired.round_figure(walls["A"], walls["B"])

    got = paired.stopping(abba if how == ABBA else side_by_side, budget_s, a.dormant_precision)
    got.update(b_wall_ns=sum(b_walls) / len(b_walls), method=how)
    return got


@contextlib.contextmanager
def uprobes(notes, target, tag):
    """A uprobe on each NOTE's site in TARGET (its semaphore as the
    reference counter), enabled in a tracing instance of the kit's own
    (TAG, its name as a killed kit's are swept); yields the events'
    names; every one removed after, whatever happened."""
    mount = tracefs.Mount()
    if not mount.ensure():
        raise OSError("tracefs cannot be mounted")
    t, elf, events = tracefs.find(), elfinfo.Elf(target), []
    inst = os.path.join(t, "instances", tag)
    try:
        for i, n in enumerate(notes):
            ev = f"{tag}_{i}"
            sem = elf.file_offset(n.semaphore) if n.semaphore else None
            tracefs.add_uprobe(tag, ev, target, elf.file_offset(n.pc), sem)
            events.append(ev)
        os.mkdir(inst)
        tracefs.write(os.path.join(inst, "buffer_size_kb"), "4")
        tracefs.write(os.path.join(inst, "events", tag, "enable"), "1")
        yield events
    finally:
        with host.deferred():
            if os.path.isdir(inst):
                tracefs.write(os.path.join(inst, "events", tag, "enable"), "0")
                os.rmdir(inst)
            for ev in events:
                tracefs.remove_uprobe(tag, ev)
            mount.release()


def count_passages(a, tag):
    """{marker: passages in one run of A (one copy)} by the kernel's hit
    counter (every process mapping TARGET counts: run it alone), or a
    reason (str) where they cannot be counted here."""
    if os.geteuid() != 0:
        return "no root: the passages are counted by a uprobe on each marker (root's)"
    why = tracefs.path_problem(os.path.realpath(a.target), "a uprobe")
    if why:
        return why
    with uprobes(a.notes, os.path.realpath(a.target), tag) as events:
        _, _, _, rcs = copies(a.workload, 1)
        if rcs[0]:
            return f"WORKLOAD failed in the counting run (exit status {rcs[0]})"
        got = {}
        for n, ev in zip(a.notes, events):
            key = f"{n.provider}:{n.name}"
            got[key] = got.get(key, 0) + (tracefs.hits(ev, os.path.realpath(a.target)) or 0)
        return got


def open_folder(a):
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    os.makedirs(a.results, exist_ok=True)
    folder, n = os.path.join(a.results, f"{stamp}-{KIND}"), 1
    while os.path.exists(folder):
        n += 1
        folder = os.path.join(a.results, f"{stamp}-{KIND}-{n}")
    os.makedirs(folder)
    latest = os.path.join(a.results, "latest")
    if os.path.islink(latest) or not os.path.exists(latest):
        tmp = latest + f".{os.getpid()}"
        os.symlink(os.path.basename(folder), tmp)
        os.replace(tmp, latest)
    return folder


def write_meta(folder, meta):
    host.write_json(os.path.join(folder, record.META), meta, indent=1)


def main(a):
    """make run AGAINST=...: the module's steps; an exit status."""
    kitlock.lock("run", a.lock_wait_s)
    leftovers.sweep("run")
    if not trusted.make_all("run"):  # (the kit's builds, for commands that run them)
        return 1
    folder = a.folder = open_folder(a)
    say(f"run: dormant cost, WORKLOAD against AGAINST, untraced, results in "
        f"{os.path.relpath(folder, host.ROOT)}")
    why = preflight(a, folder)
    meta = {"kind": KIND, "started": record.now(), "kernel": os.uname().release,
            "cpus": os.cpu_count(), "workload": a.workload, "against": a.against,
            "threads": a.threads, "precision_pct": a.dormant_precision, "budget_s": a.dormant_s,
            "seed": a.seed, "target": a.target or None,
            "probe": a.probe or None, "answers": {}}
    if why:
        meta["error"] = why
        write_meta(folder, meta)
        say(f"run: {why}; nothing was timed")
        return 2
    rng = random.Random(a.seed)
    with open(os.path.join(folder, DORMANT_CSV), "w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        w.writeheader()

        def writer(row):
            w.writerow(row)
            f.flush()
        for threads in a.threads:
            budget = a.dormant_s / len(a.threads)
            say(f"run: {threads} cop{'y' if threads == 1 else 'ies'} at once: "
                f"{method(a, threads)} rounds, {budget:.0f} s at most")
            try:
                got = timed_rounds(a, writer, threads, budget, rng)
            except RuntimeError as e:  # (a command failed mid-way: the rows so far are kept)
                meta["error"] = str(e)
                write_meta(folder, meta)
                say(f"run: {e}")
                return 1
            meta["answers"][str(threads)] = {k: v for k, v in got.items() if k != "figures"}
            write_meta(folder, meta)
    if a.notes:
        tag = leftovers.run_tag(leftovers.kit_id(os.getpid()), 1)
        meta["passages"] = count_passages(a, tag)
    meta["ended"] = record.now()
    write_meta(folder, meta)
    return 0
