#!/usr/bin/env python3
"""lava/__main__.py: `python3 scripts/lava` (and `make lava`): the kit in LAVA,
the lab framework kernel test labs run (KernelCI, LKFT): each cell of a
results folder as a lava-test-case measurement, and a job definition for
LAVA's qemu device type that boots one of make lab's guest kernels with
the kit inside.

    python3 scripts/lava cases results/latest          # the lava-test-case lines
    python3 scripts/lava cases --report results/latest # run them (in a LAVA test shell)
    python3 scripts/lava job --suite sid --rootfs IMG > job.yaml   # a QEMU job
    python3 scripts/lava validate job.yaml              # LAVA's own schema
    python3 scripts/lava run --suite sid                # a QUICK job for real, lava-run
    make lava                                           # the same, on sid

`cases` is lava/cases.py's (each cell CONFIG-tTHREADS, its cost per
event and its interval's bounds, in the folder's unit); `job` embeds
lava/kit.yaml inline; `validate` and `job` check with LAVA's own schemas
(lava_common, Debian's lava-common: /usr/bin/python3 has it), so a job
this writes is one LAVA accepts (lava/job.py); `run` is
lava/dispatch.py's.  Needs python3-yaml for job and validate.

This file is the door: main(), its commands and their arguments.
"""
import argparse
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # scripts/
sys.path[0] = HERE  # (run as `python3 scripts/lava`, the path began at the wing)

from host import ROOT  # noqa: E402
from lab.common import GUEST_KIT  # noqa: E402
from lava.cases import case_args, cases  # noqa: E402
from lava.dispatch import run_job  # noqa: E402
from lava.job import job, reexec_for_lava, validate_job, validate_testdef, yaml_module  # noqa: E402
from record import BadInput  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(prog="lava", description=__doc__.split("\n\n")[0])
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
        print(f"# A LAVA job (python3 scripts/lava job --suite {a.suite} --rootfs "
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
