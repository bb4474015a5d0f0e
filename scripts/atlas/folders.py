"""atlas/folders.py: the atlas's folder: its own facts (ATLAS_FILE),
each kernel's folder (ATLAS_DIR/TOOLS+KERNEL/, and where/ for WHERE=1's)
taken whole from the stamped folder a lab wrote under results/, which
stays there with its logs.

Nothing to run: scripts/atlas's wing.
"""
import json
import os
import shutil

import configs
import workloads
from lab.suite import folder_name
from host import ROOT
import record
from record.atlas import ATLAS_FILE, KIND, WHERE_DIR


def atlas_file(d):
    """The atlas's own facts (ATLAS_FILE): its tools' suite and kernels, {} if none."""
    try:
        with open(os.path.join(d, ATLAS_FILE)) as f:
            got = json.load(f)
        return got if isinstance(got, dict) else {}
    except (OSError, ValueError):
        return {}


def write_atlas_file(d, facts):
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, ATLAS_FILE + ".tmp")
    with open(tmp, "w") as f:
        json.dump(facts, f, indent=1)
        f.write("\n")
    os.replace(tmp, os.path.join(d, ATLAS_FILE))
    record.stamp(d, KIND)


def lab_configs():
    """The configurations a lab runs by default: every one but those of a
    real program the guests do not hold (workloads.py's in_lab)."""
    return [c.name for c in configs.CONFIGS
            if not c.workload or workloads.get(c.workload).in_lab]


def has_runs(d):
    return os.path.isfile(os.path.join(d, "runs.csv")) and os.path.isfile(
        os.path.join(d, "meta.json"))


def newest(parent, suffix, before, but=None):
    """The folder PARENT/<stamp>SUFFIX made since BEFORE (a set of names),
    not one ending BUT, or None."""
    got = sorted(n for n in os.listdir(parent) if n.endswith(suffix) and n not in before
                 and not (but and n.endswith(but))
                 and not os.path.islink(os.path.join(parent, n))
                 and os.path.isdir(os.path.join(parent, n)))
    return os.path.join(parent, got[-1]) if got else None


def take(src, dst):
    """SRC's folder copied as DST, replacing it only once the copy is whole;
    its logs/ stay in SRC (results/<stamp>...), where the rows' notes point:
    the atlas holds what its report reads, small enough to commit."""
    tmp = dst + ".new"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp, symlinks=True,  # the folder's own report stays with its logs
                    ignore=shutil.ignore_patterns("logs", "report.*", "*.png"))
    with open(os.path.join(tmp, "FROM"), "w") as f:
        f.write(os.path.relpath(src, ROOT) + "\n")  # where the logs are
    if os.path.isdir(dst):
        shutil.rmtree(dst)
    os.replace(tmp, dst)


def where_dir(args, name):
    return os.path.join(args.atlas_dir, WHERE_DIR, folder_name(name))
