"""workloads.py: programs someone else wrote, run as the kit's target: each
workload names the binary its markers are in, the command that runs it
(printing the kit's target record, as build/benchmark-* does), and what it
needs here.  The python-* configurations (configs.py) run the first one.

Nothing to run: measure/kit.py starts a workload's command where a
configuration names one, and raise_semaphores() writes a marker's
semaphore in the running target (through /proc/PID/mem, as tools did
before the kernel's reference counter), which prices what the program
computes for a listener before any probe traps.
"""
import os
import platform
import struct
import time
from dataclasses import dataclass

from elfinfo import Elf
from host import ROOT


@dataclass(frozen=True)
class Workload:
    name: str
    program: str  # the ELF file whose markers are probed
    argv: tuple  # the command before the kit's --threads, --iterations, ...
    provider: str  # the markers' provider
    package: str  # the Debian package of PROGRAM
    description: str


PYTHON = "/usr/bin/python3.11"  # Debian's, with its markers (not a pyenv build)
WORKLOADS = {w.name: w for w in (
    Workload("python", PYTHON, (PYTHON, "-I", "-S", os.path.join(ROOT, "src", "workloads",
                                                                  "calls.py")),
             "python", "python3.11",
             "Debian's CPython 3.11 (--with-dtrace), each thread calling a one-line "
             "function ITER times (src/workloads/calls.py)"),
)}


def get(name):
    return WORKLOADS[name]


def markers(program):
    """{marker name: SdtNote} of PROGRAM's SDT notes."""
    return {n.name: n for n in Elf(program).sdt_notes()}


def unavailable(w, marker, semaphores=()):
    """Why workload W cannot run here with a probe at MARKER (and the
    SEMAPHORES of those markers raised), or None."""
    if platform.machine() not in READ_SYSCALL:
        return f"the held target's gate is read from /proc/PID/syscall, not known on " \
               f"{platform.machine()}"
    if not os.path.exists(w.program):
        return f"{w.program} not found (Debian package {w.package})"
    try:
        have = markers(w.program)
    except (OSError, ValueError) as e:
        return f"{w.program}: {e}"
    for m in (marker, *semaphores):
        if m not in have:
            return (f"{w.program} has no {w.provider}:{m} marker (it has: "
                    f"{', '.join(sorted(have)) or 'none'}): a build without --with-dtrace?")
        if m in semaphores and not have[m].semaphore:
            return f"{w.program}: its {w.provider}:{m} marker has no semaphore"
    return None


# read(2)'s number, as /proc/PID/syscall gives it, by machine.
READ_SYSCALL = {"x86_64": "0", "aarch64": "63"}


def wait_held(pid, alive, timeout=30.0):
    """Waits until process PID's main thread is blocked reading its stdin
    (the --hold gate of a workload's target: /proc/PID/syscall says read
    on fd 0); False if it did not get there within TIMEOUT seconds, or
    ALIVE() says it ended."""
    nr = READ_SYSCALL.get(platform.machine())
    end = time.monotonic() + timeout
    while nr and time.monotonic() < end and alive():
        try:
            with open(f"/proc/{pid}/syscall") as f:
                fields = f.read().split()
        except OSError:
            return False
        if fields[:2] == [nr, "0x0"]:  # read(0, ...)
            return True
        time.sleep(0.002)
    return False


def mem_address(pid, program, offset):
    """The address in process PID of PROGRAM's file OFFSET, in its writable
    mapping of PROGRAM; ValueError where it has none."""
    real = os.path.realpath(program)
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            f_ = line.split()
            if len(f_) >= 6 and f_[5] == real and "w" in f_[1]:
                lo, hi = (int(x, 16) for x in f_[0].split("-"))
                moff = int(f_[2], 16)
                if moff <= offset < moff + (hi - lo):
                    return lo + offset - moff
    raise ValueError(f"process {pid} has no writable mapping of {program} at {offset:#x}")


def raise_semaphores(pid, program, names):
    """Adds 1 to the semaphore of each marker in NAMES in process PID (a
    2-byte counter, as sys/sdt.h's _ENABLED() reads it); {name: its value
    before}.  Nothing to undo: the counter dies with the process."""
    have, elf, before = markers(program), Elf(program), {}
    fd = os.open(f"/proc/{pid}/mem", os.O_RDWR)
    try:
        for name in names:
            if name not in have or not have[name].semaphore:
                raise ValueError(f"{program}: marker {name} has no semaphore")
            at = mem_address(pid, program, elf.file_offset(have[name].semaphore))
            v, = struct.unpack("<H", os.pread(fd, 2, at))
            os.pwrite(fd, struct.pack("<H", min(0xFFFF, v + 1)), at)
            before[name] = v
    finally:
        os.close(fd)
    return before
