"""lifecycle/sites.py: a process's own bytes: where the probe sites of a
build lie in each process that maps it and the byte each holds now (int3
where a uprobe is live, read from /proc/PID/mem), and the held targets
(src/target.c's --hold --linger) the lifecycle starts, releases and
ends.  Needs root (another process's memory).

Nothing to run: scripts/lifecycle's wing.
"""
import os
import re
import signal
import subprocess
import time

import builds
import elfinfo
import host
import record
from host import ROOT
from tracers.attached import POLL_S

BUILD = os.path.join(ROOT, "build")
LIBRARY = os.path.join(BUILD, "libkit-bystander.so")
LIB_BUILD, LIB_MARKER = "lib", "lib_call"
INT3 = 0xCC
PROC_SITES = 1  # the sites-N build of the process sweep
# the guarded cell's build and its marker's provider: the sdt-guarded build's
# marker under its semaphore, 1 process and a late one (is it raised in each?)
GUARDED = ("sdt-guarded", "benchmark")
END_S = 10  # s the held targets have to end once released, all together


def builds_used():
    """The builds of src/builds.tsv that make lifecycle runs (no configuration's)."""
    return {*site_builds().values(), LIB_BUILD, GUARDED[0]}


def site_builds():
    """{N: build name} of the sites-N builds (src/builds.tsv)."""
    return {int(m.group(1)): b for b in builds.builds()
            if (m := re.fullmatch(r"sites-(\d+)", b))}


class Sites:
    """Where the sites of BINARY lie in each process that maps it, and the
    byte each holds now (int3 where a uprobe is live)."""

    def __init__(self, binary, names=None, provider="kit"):
        self.binary, self.provider = os.path.realpath(binary), provider
        elf = elfinfo.Elf(self.binary)
        notes = [n for n in elf.sdt_notes() if n.provider == provider
                 and (names is None or n.name in names)]
        self.offsets = {n.name: elf.file_offset(n.pc) for n in notes}
        # a guarded marker's semaphore, as a file offset (the kernel's
        # reference counter: uprobe_events' "(0x...)"), else None
        self.semaphores = {n.name: elf.file_offset(n.semaphore) if n.semaphore else None
                           for n in notes}
        self.original = {n: elf.data[o] for n, o in self.offsets.items()}
        self._addr = {}  # pid: {name: address}

    def mapped_at(self, pid, offsets, executable):
        """{name: address in PID} of OFFSETS ({name: file offset}) in the
        binary's mappings (EXECUTABLE: those alone, where uprobes write);
        names no mapping holds are left out."""
        maps = []
        with open(f"/proc/{pid}/maps") as f:
            for ln in f:
                cols = ln.split()
                if len(cols) >= 6 and (not executable or "x" in cols[1]) and \
                        os.path.realpath(cols[5]) == self.binary:
                    lo, hi = (int(x, 16) for x in cols[0].split("-"))
                    maps.append((lo, hi, int(cols[2], 16)))
        return {name: lo + off - moff for name, off in offsets.items()
                for lo, hi, moff in maps if moff <= off < moff + hi - lo}

    def semaphore(self, pid, name):
        """The value of NAME's semaphore (2 bytes) in PID's memory, from the
        binary's mapping that holds its file offset; None if it has none."""
        off = self.semaphores.get(name)
        if off is None:
            return None
        at = self.mapped_at(pid, {name: off}, executable=False)
        if name not in at:
            raise RuntimeError(f"pid {pid} maps no page of {self.binary} at its semaphore")
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as m:
            m.seek(at[name])
            return int.from_bytes(m.read(2), "little")

    def addresses(self, pid):
        if pid not in self._addr:
            got = self.mapped_at(pid, self.offsets, executable=True)
            if len(got) != len(self.offsets):
                return None  # not mapped yet
            self._addr[pid] = got
        return self._addr[pid]

    def trapped(self, pid):
        """How many of the sites hold int3 in PID (None: not mapped)."""
        addr = self.addresses(pid)
        if addr is None:
            return None
        n = 0
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as f:
            for name, a in addr.items():
                f.seek(a)
                b = f.read(1)[0]
                if b == INT3:
                    n += 1
                elif b != self.original[name]:
                    raise RuntimeError(f"{name} in pid {pid} holds {b:#x}, neither its own "
                                       f"byte {self.original[name]:#x} nor int3")
        return n


class Targets:
    """Held targets of BUILD (--hold --linger, 1 thread, CALLS calls each),
    started in a session of their own; stop() ends them all, whatever
    state they are in (it closes their stdin, then kills what is left)."""

    ALL = []  # every Targets made: Kit.cleanup ends what is left of each

    def __init__(self, build, calls=1):
        self.binary = os.path.join(BUILD, f"benchmark-{build}")
        self.calls, self.procs = calls, []
        Targets.ALL.append(self)

    def start(self, n=1):
        """N held targets, each kept in self.procs before a stop is taken
        (as a tracer's spawn: none is left running unknown)."""
        new = []
        for _ in range(n):
            with host.deferred():
                p = subprocess.Popen([self.binary, "--threads", "1", "--iterations",
                                      str(self.calls), "--hold", "--linger", "--quiet"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=host.default_signals)
                self.procs.append(p)
            new.append(p)
            host.check_signalled()
        return new

    def mapped(self, sites, procs):
        """Waits until each of PROCS maps the binary (it is held then)."""
        for p in procs:
            if not host.wait_for(lambda: p.poll() is not None or sites.addresses(p.pid), 10):
                raise RuntimeError(f"target {p.pid} did not map {self.binary} in 10 s")
            if p.poll() is not None:
                raise RuntimeError(f"target {p.pid} ended before its release ({p.returncode})")

    def release(self, procs):
        """Each of PROCS makes its calls: its record, read back."""
        recs = []
        for p in procs:
            p.stdin.write(b"x")
            p.stdin.flush()
        for p in procs:
            recs.append(record.target_record(p.stdout.readline().decode())[0])
        return recs

    def end(self, procs):
        """PROCS end: their stdin closed (the release from --linger), then
        one shared deadline, then SIGKILL to each one's own session."""
        with host.deferred():
            for p in procs:
                if p.stdin and not p.stdin.closed:
                    try:
                        p.stdin.close()
                    except BrokenPipeError:  # it is gone already
                        pass
            deadline = time.monotonic() + END_S
            for p in procs:
                try:
                    p.wait(timeout=max(0.01, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    p.wait()
                if p.stdout:
                    p.stdout.close()
                self.procs.remove(p)

    def stop(self):
        self.end(list(self.procs))


def wait_sites(sites, pids, want, limit):
    """Seconds until every site of every pid reads WANT (all: int3, or
    none), polling; None past LIMIT."""
    t0 = time.monotonic()
    total = len(sites.offsets)
    while True:
        host.check_signalled()
        if all(sites.trapped(pid) == (total if want else 0) for pid in pids):
            return time.monotonic() - t0
        if time.monotonic() - t0 > limit:
            return None
        time.sleep(POLL_S)


def vm_hwm_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            m = re.search(r"^VmHWM:\s+(\d+) kB", f.read(), re.M)
        return int(m.group(1)) if m else None
    except OSError:
        return None
