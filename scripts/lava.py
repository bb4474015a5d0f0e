#!/usr/bin/env python3
"""lava.py: the kit in LAVA, the lab framework kernel test labs run
(KernelCI, LKFT): each cell of a results folder as a lava-test-case
measurement, and a job definition for LAVA's qemu device type that boots
one of make lab's guest kernels with the kit inside.

    python3 scripts/lava.py cases results/latest          # the lava-test-case lines
    python3 scripts/lava.py cases --report results/latest # run them (in a LAVA test shell)
    python3 scripts/lava.py job --suite sid --rootfs IMG > job.yaml   # a QEMU job
    python3 scripts/lava.py validate job.yaml              # LAVA's own schema
    python3 scripts/lava.py run --suite sid                # a QUICK job for real, lava-run

`cases` names each cell CONFIG-tTHREADS, measured as the cell's cost per
event over its own baseline (the report's mean), in the folder's unit (ns,
or instructions in a guest under -icount), with CONFIG-tTHREADS-lo and -hi
for its 95% interval's bounds; a baseline's cell is its time a call, and
so is a real program's cell whose events nothing counted, its units
saying so (ns/call: a cost a call is never passed off as one an event).  Its
result: pass where every timed run is lossless, skip where it was
skipped, fail otherwise (the reason is the report's).  `job` embeds
lava/kit.yaml inline; `validate` and `job` check with LAVA's own schemas
(lava_common, Debian's lava-common: /usr/bin/python3 has it), so a job
this writes is one LAVA accepts.  Needs python3-yaml for job and validate.
"""
import argparse
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import configs  # noqa: E402
import workloads  # noqa: E402
from lab import initrd as guest_initrd  # noqa: E402
from lab.common import GUEST_KIT, LAB_DIR  # noqa: E402
from lab.init import SHELL_INIT  # noqa: E402
from lab.qemu import ICOUNT  # noqa: E402
from host import ROOT  # noqa: E402
from render.summary import per_event  # noqa: E402
from record import LOSSLESS, BadInput, load  # noqa: E402
from stats import analyse  # noqa: E402

TESTDEF = os.path.join(ROOT, "lava", "kit.yaml")
LAB = LAB_DIR
NAME_OK = re.compile(r"[^-_.a-zA-Z0-9]")  # lava-test-case names: no spaces or slashes


def cases(folder):
    """[(name, result, measurement or None, unit)] of FOLDER's cells."""
    rows, meta, _ = load(folder)
    a = analyse([r for r in rows if (r["rep"] or 0) >= 1], meta)
    unit = meta.get("unit") or "ns"
    out = []
    for c in a["cells"]:
        name = NAME_OK.sub("_", f"{c['config']}-t{c['threads']}")
        statuses = set(c["statuses"])
        result = ("skip" if statuses <= {"skipped"} else
                  "pass" if c["n_runs"] and statuses <= set(LOSSLESS) else "fail")
        o = c.get("overhead")
        cfg = configs.BY_NAME.get(c["config"])
        if configs.is_baseline(c["config"]):  # its time a call
            out.append((name, result, c.get("mean_ns") if c["n_runs"] else None, unit))
            continue
        if not o:  # no figure: not a time a call under a cost's name
            out.append((name, result, None, unit))
            continue
        per = unit
        if cfg and cfg.workload:  # per event, as the report says it: where counted
            o = per_event(c, workloads.get(cfg.workload))
            per = unit if o["per"] == "event" else f"{unit}/{o['per']}"  # (a call's: said)
        out.append((name, result, o["mean_ns"], per))
        for end in ("lo", "hi"):
            if o[f"{end}_ns"] is not None:
                out.append((f"{name}-{end}", result, o[f"{end}_ns"], per))
    timed = {(c["config"], c["threads"]) for c in a["cells"]}
    for r in rows:  # a skipped row has no repetition: no cell of the analysis
        key = (r["config"], r["threads"])
        if r["status"] == "skipped" and key not in timed:
            timed.add(key)
            out.append((NAME_OK.sub("_", f"{r['config']}-t{r['threads']}"), "skip", None, unit))
    return out


def case_args(name, result, value, unit):
    return (["lava-test-case", name, "--result", result]
            + ([] if value is None else ["--measurement", f"{value:.4f}", "--units", unit]))


def yaml_module():
    try:
        import yaml
        return yaml
    except ImportError:
        sys.exit(f"lava: needs PyYAML (Debian package {NEEDS['yaml']})")


# The Debian packages behind LAVA's parts (their one home: the messages
# below, the suite's list in tests/packages.py).
NEEDS = {"lava_common": "lava-common", "lava-run": "lava-dispatcher", "yaml": "python3-yaml"}


def reexec_for_lava(argv):
    """Runs this again under Debian's python3 where this interpreter has
    no lava_common (a pyenv python3 first on PATH), as the report does for
    matplotlib (render/runs.py)."""
    if importlib.util.find_spec("lava_common") is None:
        deb = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(deb) and os.path.exists(deb) \
                and not os.environ.get("KIT_LAVA_REEXEC"):
            os.execve(deb, [deb, os.path.abspath(__file__), *(sys.argv[1:] if argv is None
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
        make_image(rootfs, img, log)
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


def main(argv=None):
    p = argparse.ArgumentParser(prog="lava.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    c = sub.add_parser("cases", help="each cell of a results folder as a lava-test-case")
    c.add_argument("folder")
    c.add_argument("--report", action="store_true",
                   help="run lava-test-case for each (in a LAVA test shell); else print them")
    j = sub.add_parser("job", help="a job definition for LAVA's qemu device type")
    j.add_argument("--suite", default="sid", help="make lab's suite whose kernel boots")
    j.add_argument("--rootfs", required=True, help="the ext4 image the guest boots")
    j.add_argument("--icount", type=int, choices=(0, 1), default=1,
                   help="1: TCG with -icount shift=0, the unit instructions (as make lab)")
    j.add_argument("--configs", default="baseline,ftrace-sdt")
    j.add_argument("--kit-dir", default=GUEST_KIT)
    v = sub.add_parser("validate", help="a job definition or test definition, by LAVA's schema")
    v.add_argument("file")
    r = sub.add_parser("run", help="a QUICK job for real: lava-run on a make lab guest")
    r.add_argument("--suite", default="sid")
    r.add_argument("--configs", default="baseline,ftrace-sdt")
    r.add_argument("--results", default=os.path.join(ROOT, "results"))
    a = p.parse_args(argv)
    if a.what != "cases":
        reexec_for_lava(argv)
    if a.what == "cases":
        try:
            got = cases(a.folder)
        except BadInput as e:
            print(f"lava: {e}", file=sys.stderr)
            return 2
        if a.report and not shutil.which("lava-test-case"):
            print("lava: lava-test-case not found: --report runs in a LAVA test shell",
                  file=sys.stderr)
            return 2
        for case in got:
            if a.report:
                subprocess.run(case_args(*case), check=False)
            else:
                print(" ".join(case_args(*case)))
        return 0
    if a.what == "run":
        return run_job(a.suite, a.configs, a.results)
    if a.what == "job":
        doc = job(a.suite, a.rootfs, a.icount, a.configs, a.kit_dir)
        why = validate_job(doc)
        if why:
            print(f"lava: the job LAVA would refuse: {why}", file=sys.stderr)
            return 1
        print(f"# A LAVA job (python3 scripts/lava.py job --suite {a.suite} --rootfs "
              f"{a.rootfs}); checked with lava_common.schemas")
        print(yaml_module().safe_dump(doc, sort_keys=False, width=100), end="")
        return 0
    yaml = yaml_module()
    try:
        with open(a.file) as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        print(f"lava: {a.file}: {e}", file=sys.stderr)
        return 2
    if not isinstance(doc, dict):
        print(f"lava: {a.file}: not a mapping", file=sys.stderr)
        return 1
    why = validate_testdef(doc) if "run" in doc and "metadata" in doc else validate_job(doc)
    print(f"lava: {a.file}: " + (f"invalid: {why}" if why else "valid"),
          file=sys.stderr if why else sys.stdout)
    return 1 if why else 0


if __name__ == "__main__":
    sys.exit(main())
