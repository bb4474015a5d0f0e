"""lava/job.py: a job definition for LAVA's qemu device type that boots one
of make lab's guest kernels with the kit inside (`python3 scripts/lava job`),
and LAVA's own schemas (lava_common, Debian's lava-common) to check a job
or a test definition with (`python3 scripts/lava validate`): so a job this
writes is one LAVA accepts.  lava/kit.yaml, the test definition, goes in
inline.  Needs python3-yaml.
"""
import glob
import importlib.util
import os
import sys

from host import ROOT
from lab import initrd as guest_initrd
from lab.common import LAB_DIR
from lab.init import SHELL_INIT
from lab.qemu import ICOUNT
from lava import NEEDS

TESTDEF = os.path.join(ROOT, "lava", "kit.yaml")
LAB = LAB_DIR
WING = os.path.dirname(os.path.abspath(__file__))  # what runs again: `python3 scripts/lava`


def yaml_module():
    try:
        import yaml
        return yaml
    except ImportError:
        sys.exit(f"lava: needs PyYAML (Debian package {NEEDS['yaml']})")


def reexec_for_lava(argv):
    """Runs this again under Debian's python3 where this interpreter has
    no lava_common (a pyenv python3 first on PATH), as the report does for
    matplotlib (render/runs.py)."""
    if importlib.util.find_spec("lava_common") is None:
        deb = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(deb) and os.path.exists(deb) \
                and not os.environ.get("KIT_LAVA_REEXEC"):
            os.execve(deb, [deb, WING, *(sys.argv[1:] if argv is None
                                                             else argv)],
                      dict(os.environ, KIT_LAVA_REEXEC="1"))


def validate_job(job):
    """None if LAVA's own schema (lava_common) accepts JOB, else why not;
    SystemExit where lava-common is not importable."""
    try:
        import voluptuous
        from lava_common.schemas import validate
    except ImportError:
        sys.exit(f"lava: needs LAVA's lava_common (Debian package {NEEDS['lava_common']}) under "
                 f"{sys.executable}; /usr/bin/python3 has it once installed")
    if "device_type" not in job and "multinode" not in (job.get("protocols") or {}):
        return '"device_type" or multinode should be defined'  # lava-server's own check
    try:
        validate(job, strict=True, extra_context_variables=[])
    except voluptuous.Invalid as e:
        return f"{e.msg} at {'/'.join(str(p) for p in e.path) or 'the top'}"
    return None


def validate_testdef(doc):
    try:
        import voluptuous
        from lava_common.schemas.test.testdef import validate
    except ImportError:
        sys.exit(f"lava: needs LAVA's lava_common (Debian package {NEEDS['lava_common']})")
    try:
        validate(doc)
    except voluptuous.Invalid as e:
        return f"{e.msg} at {'/'.join(str(p) for p in e.path) or 'the top'}"
    return None


def guest_files(suite):
    """(kernel, initrd) of make lab's SUITE root file system, or SystemExit."""
    boot = os.path.join(LAB, suite, "rootfs", "boot")
    kernels = sorted(glob.glob(os.path.join(boot, "vmlinuz-*")))
    if not kernels:
        sys.exit(f"lava: no kernel in {boot}: run `make lab LAB={suite}` once first")
    rel = os.path.basename(kernels[-1]).removeprefix("vmlinuz-")
    # the lab's own initramfs where it made one (lab/initrd.py)
    initrd = (guest_initrd.cached(os.path.join(LAB, suite), rel)
              or kernels[-1].replace("vmlinuz-", "initrd.img-"))
    return kernels[-1], initrd if os.path.exists(initrd) else None


def job(suite, rootfs, icount, configs_text, kit_dir):
    """A job for LAVA's qemu device type: make lab's SUITE kernel booting
    the ext4 image ROOTFS (the kit at KIT_DIR, its init make lab-shell's),
    lava/kit.yaml inline; under TCG with -icount the unit is instructions."""
    yaml = yaml_module()
    kernel, initrd = guest_files(suite)
    with open(TESTDEF) as f:
        testdef = yaml.safe_load(f)
    unit = "instructions" if icount else "ns"
    testdef["params"] = dict(testdef["params"], CONFIGS=configs_text, UNIT=unit,
                             KIT_DIR=kit_dir)
    append = (f"console=ttyS0,115200 root=/dev/vda rw init={SHELL_INIT} panic=-1 "
              f"kit_unit={unit}")
    images = {"kernel": {"image_arg": f'-kernel {{kernel}} -append "{append}"',
                         "url": "file://" + kernel},
              "rootfs": {"image_arg": "-drive format=raw,file={rootfs},if=virtio",
                         "url": "file://" + os.path.abspath(rootfs), "format": "ext4",
                         "overlays": {"lava": True}}}
    if initrd:
        images["initrd"] = {"image_arg": "-initrd {initrd}", "url": "file://" + initrd}
    return {
        "device_type": "qemu", "job_name": f"usdt-tracing-kit-{suite}",
        "visibility": "public", "priority": "medium",
        "timeouts": {"job": {"minutes": 90}, "action": {"minutes": 30},
                     "connection": {"minutes": 2}},
        "context": {"arch": "amd64", "memory": 2048, "no_kvm": bool(icount),
                    "extra_options": ["-cpu max", "-no-reboot"]
                    + ([" ".join(ICOUNT)] if icount else [])},
        "actions": [
            {"deploy": {"to": "tmpfs", "os": "debian", "timeout": {"minutes": 20},
                        "images": images}},
            {"boot": {"method": "qemu", "media": "tmpfs", "timeout": {"minutes": 15},
                      "prompts": [r"root@[^:\s]*:[^#\s]*# "]}},
            {"test": {"timeout": {"minutes": 60},
                      "definitions": [{"repository": testdef, "from": "inline",
                                       "name": testdef["metadata"]["name"],
                                       "path": "inline/kit.yaml"}]}}]}
