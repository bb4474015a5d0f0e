"""builds.py: src/builds.tsv read, the builds of the kit's target
(src/benchmark.c), one Build each.  The Makefile makes
build/benchmark-BUILD from each row; here the kit asks what a build is:
its header and kind, its marker's site (kernel.py), whether that site
sits in the red-zone canary (render/sites.py), and whether it gets an
idle-BUILD row (configs.py, whose build column names these).

A room of its own, beside the configurations' table rather than in it:
the lifecycle's sites-N builds (lifecycle/sites.py) are no
configuration's.

Nothing to run: `import builds`.
"""
import functools
import os
from dataclasses import dataclass

from host import ROOT

BUILD_TABLE = os.path.join(ROOT, "src", "builds.tsv")


@dataclass(frozen=True)
class Build:
    name: str
    header: str
    kind: str
    site: str
    cflags: str
    idle: bool
    description: str

    @property
    def canary(self):
        """Its site sits inside the red-zone canary (src/trace/canary.h)."""
        return "canary" in self.header.split("+")


@functools.lru_cache(maxsize=None)
def builds():
    """{name: Build} from src/builds.tsv (its header says the columns),
    in the table's order, baseline first; read once (do not change it)."""
    out = {}
    with open(BUILD_TABLE) as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) == 7 and cols[0] != "build":
                cols[5] = cols[5] == "yes"
                out[cols[0]] = Build(*cols)
    return out
