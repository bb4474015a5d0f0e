#!/usr/bin/env python3
"""prebuild.py: the guests tier's root file systems, built while the
host tier runs (tests/run_tests.py's guests tier starts it, beside the
host tier, niced, under the suite's lock); and how that tier keeps to the
CPU the host tier leaves (keep_low).

    python3 tests/prebuild.py sid bookworm sid:trixie-backports

Why: a fresh clone builds each suite's root file system once with
mmdebstrap, some 100-250 s each, mostly waiting on the mirror; built
here, they cost the host tier nothing.  Each suite is built under its own
lock (lab/suite.py's Suite.hold), so a lab that needs it meanwhile
waits for it and then finds it cached, as a second make lab would.  A
suite that cannot be built (no mirror, no space) is said in one line and
left to the lab, which says it again and skips; Ctrl-C and SIGTERM stop
mmdebstrap and leave nothing half made (lab/rootfs.py's make).  Needs root and
mmdebstrap (make test installs it).
"""
import ctypes
import os
import signal
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from lab import rootfs, suite  # noqa: E402
from lab.common import LAB_DIR, LabError  # noqa: E402


PR_SET_CHILD_SUBREAPER = 36


def stop(signum, frame):
    """SIGTERM (the runner's, once: this runs in a session of its own): as
    Ctrl-C, lab/rootfs.py's clean-up then runs to its end, unstopped."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def reap():
    """What mmdebstrap's steps orphaned came here (the subreaper): reaped,
    so none is left for the suite's own checks to find."""
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG) == (0, 0):
                return
        except ChildProcessError:
            return


def lower(who="prebuild"):
    """Its session is an autogroup of its own (sched(7)), which the
    scheduler weighs as the host tier's equal whatever the nice of the
    processes in it: the group itself is set to nice 19, or the host
    tier's runs share their CPUs with dpkg (a bystander's cost read
    [-590, 4036] ns for 1,723 so, in CI on 2c71b30)."""
    for _ in range(3):
        try:
            with open("/proc/self/autogroup", "w") as f:
                f.write("19")
            return
        except BlockingIOError:  # (without CAP_SYS_ADMIN, one write a 100 ms on the machine)
            time.sleep(0.11)
        except OSError as e:  # (no CONFIG_SCHED_AUTOGROUP: nice 19 is enough)
            print(f"{who}: its autogroup's nice not set ({e})", flush=True)
            return
    print(f"{who}: its autogroup's nice not set (busy three times)", flush=True)


def autogroup(pid="self"):
    """(name, nice) of PID's autogroup, or None where there is none."""
    try:
        with open(f"/proc/{pid}/autogroup") as f:
            name, _, nice = f.read().split()
        return name, int(nice)
    except (OSError, ValueError):
        return None


def keep_low(who, every_s=0.5):
    """lower(), and a thread that lowers, every EVERY_S, each autogroup
    that a process below this one starts at nice 0 with a session of its
    own (qemu: lab/qemu.py starts it so, to stop it as one; LAVA's
    lava-run): such a session escapes lower()'s group, and a guest would
    take a CPU from the host tier's runs again."""
    lower(who)
    mine = autogroup()

    def watch():
        import procs  # (scripts/ is on the path: lab's imports above)
        while True:
            for pid in procs.below(os.getpid()):
                theirs = autogroup(pid)
                if mine and theirs and theirs[0] != mine[0] and theirs[1] < mine[1]:
                    try:
                        with open(f"/proc/{pid}/autogroup", "w") as f:
                            f.write(str(mine[1]))
                    except OSError:  # gone meanwhile, or the write's rate limit: next look
                        pass
            time.sleep(every_s)
    threading.Thread(target=watch, daemon=True).start()


def main(names):
    signal.signal(signal.SIGTERM, stop)
    lower()
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("prebuild: not the subreaper of its own processes: orphans go to the suite",
              flush=True)
    os.makedirs(LAB_DIR, exist_ok=True)
    log = os.path.join(LAB_DIR, time.strftime("prebuild-%Y%m%dT%H%M%SZ.log", time.gmtime()))
    for name in names:
        s = suite.Suite(name, None, LAB_DIR, log)
        t0 = time.monotonic()
        try:
            s.hold()
            rootfs.make(s)
            print(f"prebuild: {name}: root file system ready ({time.monotonic() - t0:.0f} s)",
                  flush=True)
        except (LabError, OSError) as e:  # (OSError: no mmdebstrap, no space...)
            print(f"prebuild: {name}: not built ({e}); its lab will say so", flush=True)
        except KeyboardInterrupt:
            print(f"prebuild: {name}: stopped", flush=True)
            return 130
        finally:
            s.release()
            reap()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
