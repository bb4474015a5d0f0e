"""record/: the results formats, one home each, on the house's ground
floor: every command that writes a folder (the writers: measure/, lab/,
lifecycle/, fleet/, atlas/) and the report that reads it (render/) import
its names from here, and nothing here imports them back.

    runs.py       a results folder: runs.csv, meta.json, the target's record,
                  the statuses (make run; each suite of make lab)
    verdicts.py   a run's row's status, from what its tracer saw (runs.py's
                  statuses; no folder of its own)
    lifecycle.py  make lifecycle's folder: lifecycle.csv, bystander.csv, its clock
    where.py      make lab WHERE=1's where.csv, beside a suite's runs.csv
    fleet.py      make fleet's folder: fleet.json and a runs folder per host
    atlas.py      make atlas's folder: atlas.json, a lab folder per kernel, where/, host/
    lab.py        make lab's top folder: a runs (or lifecycle) folder per suite
    dormant.py    make run AGAINST='s folder: dormant.csv (ABBA rounds of A and B)

Each writer stamps its kind in the folder's meta.json ("kind", the KIND of
its module here); kind_of(folder) reads it back, the one rule the report
goes by.  A folder written before the stamp is known by the file only its
kind writes (LEGACY).  To add a kind: its module here (KIND, its files'
names and columns), a stamp by its writer, a render/ module with its
report, and a line in the report's registry (scripts/report.py).

The runs format's names are the package's own too (record.Folder,
record.load, record.STATUSES, and its verdicts': record.verdict,
record.Events): the kit's most-read format, read by most rooms.
`python3 scripts/record` prints the statuses.
"""
import json
import os

from record.runs import *  # noqa: F401,F403  (the runs format: record.Folder, record.load)
from record.verdicts import *  # noqa: F401,F403  (its rows' verdict: record.verdict, record.Events)
from record import atlas, dormant, fleet, lab, lifecycle, runs

META = "meta.json"
KEY = "kind"  # meta.json's stamp
KINDS = (atlas, dormant, fleet, lab, lifecycle, runs)  # each module: KIND, and its folder's files


def stamp_of(folder):
    """FOLDER's meta.json's stamp, or None (none, unreadable, unstamped)."""
    try:
        with open(os.path.join(folder, META)) as f:
            got = json.load(f)
    except (OSError, ValueError):
        return None
    return got.get(KEY) if isinstance(got, dict) else None


# A folder written before the stamp: the file only its kind writes, in this
# order (an atlas's and a fleet's folders hold runs folders, not runs.csv).
LEGACY = ((atlas.KIND, atlas.ATLAS_FILE), (fleet.KIND, fleet.FLEET_JSON),
          (runs.KIND, runs.RUNS_CSV), (runs.KIND, META))


def kind_of(folder):
    """FOLDER's kind (a KIND of KINDS): its stamp; else, for a folder
    written before the stamp, by its files (LEGACY; a lab's top folder by
    its suites, lab.suites_of); None where it is no kind's."""
    kind = stamp_of(folder)
    if kind:
        return kind
    for kind, name in LEGACY:
        if os.path.isfile(os.path.join(folder, name)):
            return kind
    return lab.KIND if lab.suites_of(folder) else None


def stamp(folder, kind, **facts):
    """A top folder's own meta.json (a lab's, a fleet's, an atlas's): its
    KIND, FACTS beside it."""
    import host
    os.makedirs(folder, exist_ok=True)
    host.write_json(os.path.join(folder, META), {KEY: kind, **facts})
