"""semaphores.py: an SDT marker's semaphore raised where the tracer raises
none, in the three ways the kit knows: the kernel's reference counter (the
tracers' own: nothing here), /proc/PID/mem in a process that runs already
(raise_semaphores: PostgreSQL's postmaster, Python's held target, as tools
did before the reference counter), and glibc's loader in each process of a
user's command as it maps the program (audit_env: the LD_AUDIT module
src/semaphore_audit.c, for SystemTap's bpf runtime).  A raise prices what
the program computes for a listener before any probe traps.

Nothing to run: workloads.py and measure/kit.py call it.
"""
import os
import struct

from elfinfo import Elf
from host import BUILD

# glibc's loader's auditing module that raises a marker's semaphore in a
# user's command as it maps TARGET (audit_env; made by make)
SEMAPHORE_AUDIT = os.path.join(BUILD, "libkit-semaphore-audit.so")
MAX_AUDIT_SEMAPHORES = 16  # (semaphore_audit.c's MAX_SEMAPHORES)


def markers(program):
    """{marker name: SdtNote} of PROGRAM's SDT notes."""
    return {n.name: n for n in Elf(program).sdt_notes()}




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


def audit_env(program, provider, names, raise_them):
    """Where a marker of NAMES (of PROVIDER) in PROGRAM has a semaphore, the
    environment that loads the loader's auditing module into every process
    of a command (LD_AUDIT=SEMAPHORE_AUDIT), which raises those semaphores
    in each as it maps PROGRAM where RAISE_THEM, and else only looks (the
    same cost); {} where none has one.  ValueError where it cannot be given."""
    addrs = [n.semaphore for n in Elf(program).sdt_notes()
             if n.provider == provider and n.name in names and n.semaphore]
    if not addrs:
        return {}
    if len(addrs) > MAX_AUDIT_SEMAPHORES:
        raise ValueError(f"{len(addrs)} semaphores: the loader's module holds "
                         f"{MAX_AUDIT_SEMAPHORES}")
    if not os.path.exists(SEMAPHORE_AUDIT):
        raise ValueError(f"{SEMAPHORE_AUDIT} is missing (run make)")
    if ":" in SEMAPHORE_AUDIT:  # (LD_AUDIT is a list split at colons)
        raise ValueError(f"LD_AUDIT cannot name {SEMAPHORE_AUDIT}: a colon in the path")
    return {"LD_AUDIT": SEMAPHORE_AUDIT,
            "KIT_SEMAPHORES": audit_list(program, [f"{a:x}" for a in addrs if raise_them])}


def audit_list(program, addrs):
    """KIT_SEMAPHORES for PROGRAM's file: its device and inode (the module
    acts in the file with them alone), then ADDRS (hex)."""
    st = os.stat(program)
    return ":".join([str(st.st_dev), str(st.st_ino), *addrs])


def audit_on(env, copy):
    """ENV's KIT_SEMAPHORES (audit_env) moved to COPY, a byte-for-byte copy
    of its program that the command maps in its place (owncopy.py): the
    same addresses, the copy's device and inode."""
    if "KIT_SEMAPHORES" in env:
        env["KIT_SEMAPHORES"] = audit_list(copy, env["KIT_SEMAPHORES"].split(":")[2:])
