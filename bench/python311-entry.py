#!/usr/bin/env python3
"""python311-entry.py: does CPython 3.11's function__entry marker fire with
only its own semaphore raised?  (Issue 29's groundwork; python/cpython#98894.)

    sudo python3 bench/python311-entry.py [N]      # N plain calls, 10000

A benchmark-style experiment, not a test.  An ftrace uprobe at
python:function__entry of Debian's /usr/bin/python3.11, with the kernel's
reference counter (which raises the marker's semaphore in every process
mapping the binary), counts its hits (uprobe_profile) while the interpreter
makes N calls of a one-line function: (a) as it is, (b) with the `line`
marker's semaphore also raised, by this script, through /proc/PID/mem,
while the interpreter waits on stdin before its calls.  Needs root,
tracefs mounted, and python3.11 with its markers (Debian's python3.11, not
a pyenv build).  The probe is removed whatever happens.
"""
import os
import struct
import subprocess
import sys
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))
from elfinfo import Elf  # noqa: E402
from tracers import tracefs  # noqa: E402
from semaphores import mem_address, raise_semaphores  # noqa: E402

PY = "/usr/bin/python3.11"
N = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
SCRIPT = f"""import sys
def f(i):
    return i
sys.stdin.buffer.read(1)
for i in range({N}):
    f(i)
"""
elf = Elf(PY)
notes = {n.name: n for n in elf.sdt_notes()}
entry, line = notes["function__entry"], notes["line"]
off, sem = elf.file_offset(entry.pc), elf.file_offset(entry.semaphore)
line_sem = elf.file_offset(line.semaphore)
print(f"{PY}: function__entry at {off:#x}, semaphore {sem:#x}; line's semaphore {line_sem:#x}")


def entry_semaphore(pid):
    """The function__entry semaphore's value in PID (raised by 0: read only)."""
    fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    try:
        return struct.unpack("<H", os.pread(fd, 2, mem_address(pid, PY, sem)))[0]
    finally:
        os.close(fd)


tdir = tracefs.find()
if not tdir:
    sys.exit("python311-entry: tracefs is not mounted")
for case in ("entry semaphore only (the kernel's ref counter)",
             "and line raised through /proc/PID/mem"):
    g, e = "kitpy311", "kitpy311_entry"
    tracefs.add_uprobe(g, e, PY, off, sem, "")
    en = os.path.join(tdir, "events", g, e, "enable")
    p = None
    try:
        tracefs.write(en, "1")
        p = subprocess.Popen([PY, "-I", "-S", "-c", SCRIPT], stdin=subprocess.PIPE)
        time.sleep(0.3)  # it has started and waits on stdin
        was = entry_semaphore(p.pid)
        if "line" in case:
            raise_semaphores(p.pid, PY, ["line"])
        p.stdin.write(b"x")
        p.stdin.close()
        p.wait()
        print(f"{case}: entry semaphore read {was} in the process; {tracefs.hits(e, PY)} hits "
              f"of {N} calls")
    finally:
        if p and p.poll() is None:
            p.kill()
            p.wait()
        tracefs.write(en, "0")
        tracefs.remove_uprobe(g, e)
