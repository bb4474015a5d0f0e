"""lab/qemu.py: the guests themselves: qemu's command line (the
suite's kernel, the guest's image, its init, under KVM or TCG, with
QEMU's instruction counting under TCG where ICOUNT=1), a Guest's run
(started, its console watched, its progress said as it comes, stopped,
and why it did not finish), several guests watched at once, and the
verdict on KVM: tried first where ACCEL allows, TCG where the guest does
not reach userspace in BOOT_S, and that failure remembered for this host
(build/lab/kvm.json: kvm_host, kvm_known).  Needs qemu-system-x86_64.

Nothing to run: lab/steps.py boots the guests (boot_guests).
"""
import os
import re
import select
import shutil
import signal
import subprocess
import time

import host
import record
from measure import plan
from host import say
from . import initrd
from .common import BOOT_INIT, BOOT_SAYS, GUEST_KIT, INIT_ARG, LAB_DIR, LabError

GUEST_MB, GUEST_CPUS = 2048, 2
# QEMU's instruction counting: 2^0 ns a guest instruction; the guest clock
# does not jump over idle time (sleep=off) nor follow the host's (align=off);
# one vCPU, so a thread's CPU time counts its own instructions alone.
ICOUNT = ["-icount", "shift=0,sleep=off,align=off"]
ICOUNT_CPUS = 1
BOOT_S = 60  # for a KVM guest to reach userspace before TCG is used instead
KVM_VERDICT = os.path.join(LAB_DIR, "kvm.json")  # where it did not, on this host
USERSPACE = "KIT-LAB: userspace"
DONE = "KIT-LAB: done"
PROGRESS = ("[threads=", "[warm-up", "run: skipping", "KIT-LAB:", "lifecycle:")  # guest lines shown as they come
GUEST_S = {"quick": 1800, "full": 5400}  # a guest's whole run, boot to power-off


class Guest:
    """One qemu of a suite: its share of the configurations (CFGS), its init
    script in the kit, its own drive of the kit (the suite's base image
    shared) and console, and how it ended.  K: its index among N guests
    (one alone keeps the plain names, but WHERE=1's: -where, apart from a
    lab of the suite beside it)."""

    def __init__(self, suite, cfgs, k=0, n=1):
        self.suite, self.cfgs = suite, cfgs
        sfx = "-where" if getattr(suite.args, "where", False) else "" if n == 1 else f"-{k + 1}"
        self.name = suite.name + sfx.replace("-", "/", 1)
        # its init in the kit; img: the kit's drive (the root is the suite's base image)
        self.init, self.img, self.sfx = f"{GUEST_KIT}/kit-init{sfx}.sh", os.path.join(
            suite.dir, f"disk{sfx}.img"), sfx
        self.qemu = self.qemu_rc = self.clog = None
        self.accel, self.icount, self.console, self.limit = None, False, [], 0
        self.reached = self.exited_early = self.timed_out = False

    def command(self, accel, init):
        """qemu's command line: the guest's kernel, the suite's base image
        read-only (snapshot=on: the guest's writes go to a file qemu made
        and unlinked at once), the kit's drive, INIT (started by the base
        image's own, BOOT_INIT, once it has mounted that drive)."""
        cpu = {"kvm": ["-enable-kvm", "-cpu", "host"], "tcg": ["-accel", "tcg", "-cpu", "max"]}
        self.accel = accel
        icount = self.icount = bool(accel == "tcg" and self.suite.args.icount)
        # The guest's init passes kit_unit on to the runner (UNIT).
        unit = record.INSTRUCTIONS if icount else record.NS
        if self.suite.plugin and not icount:
            raise LabError("WHERE=1 wants TCG with -icount: the plugin counts there alone")
        plugin = (["-plugin", "{},out={}".format(*self.suite.plugin)]
                  if self.suite.plugin else [])  # WHERE=1 (lab/plugin.py)
        cmd = ["qemu-system-x86_64", *cpu[accel], *(ICOUNT if icount else []), *plugin,
               "-m", str(GUEST_MB), "-smp", str(ICOUNT_CPUS if icount else GUEST_CPUS),
               "-kernel", self.suite.vmlinuz, "-initrd", self.suite.initrd, "-no-reboot",
               "-nographic", "-drive", f"file={self.suite.base},format=raw,if=virtio,snapshot=on",
               "-drive", f"file={self.img},format=raw,if=virtio",
               "-append", f"console=ttyS0 root=/dev/vda rw init={BOOT_INIT} panic=-1 quiet "
                          f"kit_unit={unit} {INIT_ARG}={init}"]
        with open(self.suite.log, "a") as f:
            f.write("$ " + " ".join(cmd) + "\n")
        return cmd

    def start(self, accel, limit, first_s=None):
        """Starts qemu; watch() follows it.  It has FIRST_S seconds (else
        LIMIT) to reach userspace, LIMIT from its start to power off."""
        self.qemu = subprocess.Popen(self.command(accel, self.init), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True, env=self.env())
        self.reached = self.exited_early = self.timed_out = False
        self.qemu_rc, self.console, self.buf = None, [], b""
        self.t0, self.limit = time.monotonic(), limit
        self.deadline = self.t0 + (first_s or limit)
        self.clog = open(self.console_path(), "wb")

    def env(self):
        """qemu's environment: snapshot=on's file (the guest's writes to the
        base image, unlinked as soon as made) in the suite's folder, beside
        the images, not /var/tmp."""
        return dict(os.environ, TMPDIR=self.suite.dir)

    def console_path(self):
        return os.path.join(self.suite.dir, f"console-{self.accel}{self.sfx}.log")

    def take(self, chunk):
        """A chunk of the console: kept, and the guest runner's progress
        said as it comes, in host seconds (its ETA is in guest time: not
        shown)."""
        self.clog.write(chunk)
        self.buf += chunk
        self.console.append(chunk.decode(errors="replace"))
        if not self.reached and USERSPACE.encode() in self.buf:
            self.reached = True
            say(f"lab: {self.name}: the guest reached userspace ({self.accel}) in "
                f"{time.monotonic() - self.t0:.0f} s")
            self.deadline = self.t0 + self.limit
            self.buf = self.buf[self.buf.index(USERSPACE.encode()):]
        if self.reached:
            *done, self.buf = self.buf.split(b"\n")
            for ln in done:
                text = ln.decode(errors="replace").strip()
                if text.startswith(PROGRESS):
                    say(f"lab: {self.name}: {time.monotonic() - self.t0:4.0f} s: "
                        + re.sub(r",? +ETA [^]\s]+", "", text))

    def text(self):
        return "".join(self.console)

    def stop_qemu(self, grace=1):
        """Kills qemu if it still runs after GRACE seconds (its console
        closes as it exits, before it is reaped); qemu_rc is its exit
        status if it ended by itself, None if it was killed here."""
        q, self.qemu = self.qemu, None
        if q:
            try:
                self.qemu_rc = q.wait(timeout=0 if self.timed_out else grace)
            except subprocess.TimeoutExpired:
                os.killpg(q.pid, signal.SIGKILL)
                q.wait()
                self.qemu_rc = None
        if self.clog and not self.clog.closed:
            self.clog.close()

    def outcome(self):
        """Why the guest did not finish its runs (None: it did)."""
        accel, limit = self.accel, self.limit
        if not self.reached and self.exited_early:
            return (f"the guest ({accel}) stopped before userspace, twice: "
                    f"{stopped_why(self.text())}")
        if not self.reached:
            return f"the guest ({accel}) never reached userspace in {limit:g} s"
        if DONE in self.text():
            return None
        rc = self.qemu_rc
        if self.timed_out or rc is None:  # killed here, at the time limit
            return f"the guest ({accel}) did not finish in {limit:g} s"
        return (f"the guest ({accel}) stopped before it finished: qemu "
                + (f"was killed by signal {-rc}" if rc < 0 else f"exited with status {rc}"))


def watch(guests):
    """Follows the consoles of GUESTS (started) until each has stopped:
    powered off, died, or killed here past its deadline."""
    live = {g.qemu.stdout.fileno(): g for g in guests if g.qemu}
    while live:
        now = time.monotonic()
        for fd, g in list(live.items()):
            if now >= g.deadline:
                g.timed_out = True
                g.stop_qemu()
                del live[fd]
        if not live:
            break
        wait = max(0.0, min(1.0, min(g.deadline for g in live.values()) - now))
        ready, _, _ = select.select(list(live), [], [], wait)
        if not ready:
            for fd, g in list(live.items()):
                if g.qemu.poll() is not None:
                    g.exited_early = True
                    g.stop_qemu()
                    del live[fd]
            continue
        for fd in ready:
            g = live[fd]
            chunk = os.read(fd, 65536)
            if chunk:
                g.take(chunk)
                continue
            g.exited_early = not g.reached
            g.stop_qemu()
            del live[fd]


def boot_guests(suite, limit, args, state):
    """Runs SUITE's configurations in guests: one with KVM if it reaches
    userspace here within BOOT_S, else under TCG in SUITE.tcg's guests at
    once; those guests.  A guest whose kernel died booting (seen once
    under TCG: a panic in sched_clock_cpu) is booted once more: a boot is
    not a measurement; one the kit's initramfs stopped (lab/initrd.py:
    its KIT-INITRD line), once more on Debian's."""
    if args.accel == "auto" and state.get("kvm") is None and (why := kvm_known()):
        state["kvm"] = False
        say(f"lab: KVM is not usable here ({why}): using TCG")
    if args.accel in ("auto", "kvm") and state.get("kvm") is not False:
        # (under KVM the suite's lock is held to the end: its times are
        # times, so another lab of the suite waits for it: Suite.hold)
        why = try_kvm(suite, limit, state)
        if why is None:
            return [suite.whole]
        if args.accel == "kvm":
            raise LabError(f"ACCEL=kvm: KVM does not work here: {why}")
        say(f"lab: KVM is not usable here ({why}): using TCG, "
            + ("where the guest's clock counts instructions (ICOUNT=1)" if args.icount
               else "where times are not measurements (ICOUNT=0)"))
    guests = suite.guests = suite.tcg
    if len(guests) > 1:
        say(f"lab: {suite.name}: {len(guests)} guests at once (LAB_GUESTS), each a share of the "
            "configurations: " + "; ".join(f"{g.name}: {len(g.cfgs)}" for g in guests))
    suite.images(guests)
    suite.release()  # the root file system is another lab's now (Suite.hold)
    for g in guests:
        g.start("tcg", limit)
    watch(guests)
    booted(guests)
    again = [g for g in guests if not g.reached and g.exited_early]
    for g in again:
        why = stopped_why(g.text()) + debians_initramfs(suite, g)
        say(f"lab: {g.name}: the guest stopped before userspace (tcg: {why}); booting it "
            "once more")
        g.start("tcg", limit)
    watch(again)
    return guests


def booted(guests):
    """LabError where the base image's first init stopped a guest (its
    BOOT_SAYS line): the lab's own failure, the same in every boot, so
    neither booted again nor held against KVM."""
    for g in guests:
        if not g.reached and BOOT_SAYS in g.text():
            raise LabError(f"{g.name}: {stopped_why(g.text())}")


def debians_initramfs(suite, g):
    """Where the kit's initramfs stopped guest G (its KIT-INITRD line): SUITE
    boots Debian's own from here on, said in the words returned."""
    if not stopped_why(g.text()).startswith(initrd.SAYS) or suite.initrd == suite.debian_initrd:
        return ""
    suite.initrd = suite.debian_initrd  # a kernel the kit's does not know yet
    return "; booting Debian's own initramfs"


def try_kvm(suite, limit, state):
    """SUITE's whole guest booted with KVM: None if it reached userspace
    within BOOT_S (it then runs to its end), else why not, remembered for
    this host (KVM_VERDICT) where qemu itself tried."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        state["kvm"] = False
        return "no usable /dev/kvm"
    whole = suite.whole
    suite.guests = [whole]
    suite.images([whole])
    whole.start("kvm", limit, first_s=BOOT_S)
    watch([whole])
    if not whole.reached and (switched := debians_initramfs(suite, whole)):
        say(f"lab: {whole.name}: the guest stopped before userspace (kvm: "
            f"{stopped_why(whole.text())}{switched})")  # the kit's, not KVM's, failure
        whole.start("kvm", limit, first_s=BOOT_S)
        watch([whole])
    booted([whole])  # (the lab's own failure: no verdict on KVM)
    if whole.reached:
        state["kvm"] = True
        if os.path.exists(KVM_VERDICT):
            os.unlink(KVM_VERDICT)
        return None
    state["kvm"] = False
    why = ("qemu exited before the guest reached userspace" if whole.exited_early
           else f"the guest did not reach userspace in {BOOT_S} s")
    why += f" ({stopped_why(whole.text())})" if whole.text().strip() else ""
    host.write_json(KVM_VERDICT, {"host": kvm_host(), "why": why})
    return why


def kvm_host():
    """What a KVM verdict holds for: the host's kernel, CPU and qemu."""
    with open("/proc/cpuinfo") as f:
        cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")
    qemu = "?"
    if shutil.which("qemu-system-x86_64"):
        r = subprocess.run(["qemu-system-x86_64", "--version"], stdout=subprocess.PIPE, text=True)
        qemu = (r.stdout.splitlines() or ["?"])[0]
    return [os.uname().release, cpu, qemu]


def kvm_known():
    """Why KVM did not work when a lab last tried it on this very host
    (kernel, CPU, qemu), said as a reason; None if never found or the
    host has changed since: its boot would cost BOOT_S again."""
    known = plan.load(KVM_VERDICT)
    if known.get("host") != kvm_host() or not known.get("why"):
        return None
    return (f"{known['why']}; found by a lab before on this host ({os.path.relpath(KVM_VERDICT)}, "
            "removed by make clean; ACCEL=kvm tries again)")


def stopped_why(console):
    """The console line that says why a guest stopped: the kit's initramfs's,
    else a kernel panic's, else the last one."""
    console = re.sub(r"\x1b(\[[0-9;?]*[A-Za-z]|.)", "", console)  # the BIOS's terminal codes
    lines = [ln.strip() for ln in console.splitlines() if ln.strip()]
    panic = ([ln[ln.index(s):] for ln in lines for s in (initrd.SAYS, BOOT_SAYS)
              if s in ln]  # the kit's initramfs, its base image's first init
             or [ln for ln in lines if "Kernel panic" in ln or "qemu-system" in ln])
    return re.sub(r"^\[\s*[\d.]+\]\s*", "", (panic or lines or ["no console output"])[0])[:200]
