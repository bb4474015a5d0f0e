"""record/atlas.py: make atlas's folder (docs/atlas/ by default):
meta.json stamped KIND, atlas.json (its own facts: its tools' suite, its
kernels in order), a make lab suite folder per kernel (record/runs.py, in
guest instructions), the host's own make run in ns (HOST_FOLDER) and the
WHERE=1 labs, one a kernel, under WHERE_DIR (record/where.py).  Written by
atlas/folders.py, read by render/atlas.py (its README.md).

Nothing to run.
"""
KIND = "atlas"  # meta.json's "kind"
ATLAS_FILE = "atlas.json"  # the atlas's own facts: its tools' suite, its kernels in order
HOST_FOLDER = "host"  # the host's own make run, in ns
WHERE_DIR = "where"  # the atlas's folder of WHERE=1 labs, one a kernel
