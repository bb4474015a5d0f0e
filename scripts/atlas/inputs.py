"""atlas/inputs.py: make atlas's inputs, each range-checked
(params.Param): the kernels (Debian suites of the mirror's), the one suite
whose tools they all run under, the atlas's folder and what to measure
again.

Nothing to run: scripts/atlas's wing.
"""
import argparse
import os
import re

import params
from lab.suite import KERNEL_NAME, KERNEL_SUITES, SUITES
from host import ROOT


def kernels(text):
    """ATLAS_KERNELS: comma-separated Debian suites whose kernels the atlas
    holds; +K,... adds to those of the atlas's own ATLAS_FILE (main())."""
    add = text.startswith("+")
    names = [k for k in text.lstrip("+").split(",")]
    bad = [k for k in names if not re.fullmatch(KERNEL_NAME, k)]
    if not names or bad:
        raise argparse.ArgumentTypeError(
            f"ATLAS_KERNELS '{text}' is not allowed: want a comma-separated list of Debian "
            f"suites of the mirror's (such as {', '.join(KERNEL_SUITES)}), or +SUITE,... to "
            "add to the atlas's own")
    return ("+" if add else "", list(dict.fromkeys(names)))


def tools(text):
    if text not in SUITES:
        raise argparse.ArgumentTypeError(f"ATLAS_TOOLS '{text}' is not allowed: want one of "
                                         f"{', '.join(SUITES)}")
    return text


Param = params.Param
PARAMS = [
    Param("ATLAS_KERNELS", kernels, ("", list(KERNEL_SUITES)), "the Debian suites whose kernels "
          "the atlas holds, comma-separated, oldest first; +SUITE,... adds to the atlas's own",
          ",".join(KERNEL_SUITES)),
    Param("ATLAS_TOOLS", tools, "sid", "the suite whose root file system and tools every kernel "
          "runs under (held still)", "sid"),
    Param("ATLAS_DIR", str, os.path.join(ROOT, "docs", "atlas"), "the atlas's folder",
          "docs/atlas"),
    Param("ATLAS_FRESH", params.flag01("ATLAS_FRESH"), False,
          "1: measure again the kernels (and the host) already in the atlas", "0"),
    Param("ATLAS_WHERE", params.flag01("ATLAS_WHERE"), True,
          "1: where one event's instructions go on each kernel (make lab WHERE=1: QEMU's TCG "
          "plugin, a few configurations), where missing", "1"),
    Param("ATLAS_HOST", params.flag01("ATLAS_HOST"), True,
          "1: the host's own ns beside the kernels (make run THREADS=1..2), where missing", "1"),
    params.BY_NAME["NO_INSTALL"],
    params.BY_NAME["LOCK_WAIT_S"],
]


def parse_args(argv, doc):
    p = params.entry_parser("atlas.py", doc, PARAMS, os.path.join(ROOT, "results"))
    a = p.parse_args(argv)
    params.fill(a, PARAMS)
    a.atlas_dir = os.path.abspath(a.atlas_dir)
    return a
