"""record/lab.py: make lab's top folder (results/<stamp>-lab/, and
-where-lab/ for WHERE=1): meta.json stamped KIND by lab/__main__.py, and
a folder per suite, each a runs folder (record/runs.py) whose meta.json
has "lab" (the lab's facts), or with LIFECYCLE=1 a lifecycle folder.
Read by render/lab.py (the lab's summary.md).

Nothing to run.
"""
import json
import os

from record.runs import RUNS_CSV

KIND = "lab"  # meta.json's "kind"


def suites_of(top):
    """The suites' results folders of TOP if it is a make lab's top folder
    (no runs.csv of its own; folders whose meta.json has "lab"), in the
    order the lab ran them (their "started", which the lab's one suite at
    a time makes ascending; then by name); [] if it is not one."""
    if os.path.exists(os.path.join(top, RUNS_CSV)) or not os.path.isdir(top):
        return []
    found = []
    for name in sorted(os.listdir(top)):
        meta = os.path.join(top, name, "meta.json")
        try:
            with open(meta) as f:
                m = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(m, dict) and "lab" in m:
            found.append((str(m.get("started") or ""), name))
    return [os.path.join(top, name) for _, name in sorted(found)]
