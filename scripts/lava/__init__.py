"""lava/: the kit in LAVA, the lab framework kernel test labs run (KernelCI,
LKFT), the wing of `python3 scripts/lava` (its door, lava/__main__.py,
says each command).  Its rooms: cases.py (each cell of a results folder
as a lava-test-case measurement), job.py (a job definition for LAVA's
qemu device type, checked with LAVA's own schemas) and dispatch.py (a
QUICK job run for real by lava-run).  The test definition and the device
dictionary are data: lava/ at the top of the kit.

A wing of its own beside make fleet's (scripts/fleet/, Ansible): the
fleet runs the kit on hosts a user has, this hands it to a lab that
schedules its own devices.
"""

# The Debian packages behind LAVA's parts (their one home: the messages
# below, the suite's list in tests/packages.py).
NEEDS = {"lava_common": "lava-common", "lava-run": "lava-dispatcher", "yaml": "python3-yaml"}
