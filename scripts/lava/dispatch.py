"""lava/dispatch.py: a QUICK job for real (`python3 scripts/lava run`):
make lab's root file system with this kit inside as an ext4 image, the
job job.py writes, run by lava-run (Debian's lava-dispatcher, with no
lava-server) against the device dictionary lava/device-qemu.yaml; each
lava-test-case the guest reported read back from lava-run's log.
"""
import glob
import os
import shutil
import sys
import tempfile
import time
import types

from host import ROOT
from lab.common import GUEST_KIT
from lab.init import SHELL_INIT
from lava import NEEDS
from lava.job import LAB, job, validate_job, yaml_module

DEVICE = os.path.join(ROOT, "lava", "device-qemu.yaml")
# libguestfs (lava-dispatcher writes its test overlay into the ext4 image
# with it) boots an appliance that needs a kernel, and this kind of
# machine has none in /boot: a lab guest's kernel and modules stand in,
# bookworm's first (the host's own userland), under TCG (KVM does not
# boot here: build/lab/kvm.json).
SUPERMIN_SUITES = ("bookworm",)
LAVA_RUN_S = 3600


def supermin_env(suite):
    for s in SUPERMIN_SUITES + (suite,):
        boot = os.path.join(LAB, s, "rootfs", "boot")
        kernels = sorted(glob.glob(os.path.join(boot, "vmlinuz-*")))
        if kernels:
            rel = os.path.basename(kernels[-1])[len("vmlinuz-"):]
            mods = os.path.join(LAB, s, "rootfs", "lib", "modules", rel)
            if os.path.isdir(mods):
                return {"SUPERMIN_KERNEL": kernels[-1], "SUPERMIN_MODULES": mods,
                        "LIBGUESTFS_BACKEND": "direct",
                        "LIBGUESTFS_BACKEND_SETTINGS": "force_tcg"}
    return None


def image_mb(rootfs):
    """The job's image size in MB: ROOTFS's files in 4 KiB blocks (what
    ext4 takes of them, whatever the host's file system stores), a quarter
    more and 256 MB for what the guest writes.  LAVA's download copies
    every byte of it (the lab's 4 GB took 26 s of a 91 s job here)."""
    blocks = 0
    for d, dirs, files in os.walk(rootfs):
        for n in dirs + files:
            try:
                blocks += 1 + os.lstat(os.path.join(d, n)).st_size // 4096
            except OSError:  # (gone meanwhile)
                pass
    return blocks * 4096 // 2 ** 20 * 5 // 4 + 256


def results_of(log):
    """[(case, result, measurement, units)] of the test cases in lava-run's
    log LOG (its YAML lines at level `results`, LAVA's own cases left out)."""
    yaml = yaml_module()
    out = []
    with open(log, errors="replace") as f:
        for line in f:
            if '"lvl": "results"' not in line:
                continue
            try:
                msg = yaml.safe_load(line).get("msg") or {}
            except yaml.YAMLError:
                continue
            if isinstance(msg, dict) and msg.get("definition") != "lava":
                out.append((msg.get("case"), msg.get("result"), msg.get("measurement"),
                            msg.get("units")))
    return out


def run_job(suite, configs_text, results):
    """A QUICK job for real: make lab's SUITE root file system with this kit
    at /kit (and make lab-shell's init) as an ext4 image, the job `job`
    writes, lava-run (Debian's lava-dispatcher, no lava-server) with
    lava/device-qemu.yaml; the job's
    folder, results/<stamp>-lava/, holds the job, lava-run's log and
    output, and cases.json (each lava-test-case the guest reported)."""
    import host
    rootfs = os.path.join(LAB, suite, "rootfs")
    if not os.path.isdir(os.path.join(rootfs, "boot")):
        print(f"lava: no root file system in {rootfs}: run `make lab LAB={suite}` once first",
              file=sys.stderr)
        return 2
    if not shutil.which("lava-run"):
        print(f"lava: lava-run not found (Debian package {NEEDS['lava-run']})", file=sys.stderr)
        return 2
    env = supermin_env(suite)
    if not env:
        print("lava: no lab guest kernel with its modules for libguestfs's appliance",
              file=sys.stderr)
        return 2
    with host.stoppable():  # Ctrl-C or SIGTERM anywhere: the image and the job stopped
        try:
            return run_locked(suite, configs_text, results, rootfs, env)
        except KeyboardInterrupt:
            print("lava: interrupted; lava-run and its qemu were stopped, the image removed",
                  file=sys.stderr)
            return 130


def run_locked(suite, configs_text, results, rootfs, env):
    import host
    import kitlock
    import params
    from lab.init import fill, write_init
    from lab.suite import make_image, put_kit
    kitlock.lock("lava", params.from_env("LOCK_WAIT_S"))  # the lab's root file system is changed (its /kit, its shell init)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = os.path.join(results, f"{stamp}-lava")
    os.makedirs(out)
    log = os.path.join(out, "lava.log")
    with tempfile.TemporaryDirectory(prefix="kit-lava-", dir="/var/tmp") as tmp:
        put_kit(rootfs, os.path.join(LAB, suite))
        # the job boots make lab-shell's init (a shell for LAVA: root has no password)
        write_init(types.SimpleNamespace(rootfs=rootfs), SHELL_INIT, fill("init-shell.sh"))
        img = os.path.join(tmp, "rootfs.ext4")
        make_image(rootfs, img, log, image_mb(rootfs))
        doc = job(suite, img, 1, configs_text, GUEST_KIT)
        why = validate_job(doc)
        if why:
            print(f"lava: the job LAVA would refuse: {why}", file=sys.stderr)
            return 1
        yaml = yaml_module()
        with open(os.path.join(out, "job.yaml"), "w") as f:
            yaml.safe_dump(doc, f, sort_keys=False, width=100)
        disp = os.path.join(out, "dispatcher.yaml")
        with open(disp, "w") as f:  # no NFS, TFTP or HTTP here: a placeholder address
            f.write("dispatcher_ip: 127.0.0.1\n")
        try:
            code, text = host.run(
                ["lava-run", "--job-id", f"kit-{stamp}", "--output-dir",
                 os.path.join(out, "output"), "--device", DEVICE, "--dispatcher", disp,
                 os.path.join(out, "job.yaml")],
                timeout=LAVA_RUN_S, group=True, env=dict(os.environ, **env))
        except host.Timeout as e:
            code, text = None, e.output
    with open(os.path.join(out, "job.log"), "w") as f:
        f.write(text)
    got = results_of(os.path.join(out, "job.log"))
    host.write_json(os.path.join(out, "cases.json"),
                    [dict(zip(("case", "result", "measurement", "units"), c)) for c in got])
    for c in got:
        print(" ".join(str(x) for x in c if x is not None))
    made = any(c[0] == "kit-make-run" and c[1] == "pass" for c in got)
    print(f"lava: lava-run {'ran past its limit' if code is None else f'exited with {code}'}; "
          f"{len(got)} test cases" + ("" if made else ", and no kit-make-run that passed")
          + f"; the job in {os.path.relpath(out, ROOT)}/")
    return 0 if code == 0 and made else 1
