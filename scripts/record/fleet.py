"""record/fleet.py: make fleet's folder (results/<stamp>-fleet/):
meta.json stamped KIND, fleet.json (the inventory, the runner's variables
handed on, and each host's status) and a runs folder (record/runs.py) per
host that ran.  Written by fleet/playbook.py, read by render/fleet.py.

Nothing to run.
"""
KIND = "fleet"  # meta.json's "kind"
FLEET_JSON = "fleet.json"
