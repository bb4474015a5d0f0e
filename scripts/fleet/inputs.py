"""fleet/inputs.py: make fleet's inputs, each range-checked
(params.Param), and the runner's variables it hands each host's make run,
checked on the controller with the runner's own parsers before anything
is sent, and refused where Ansible would template them.

Nothing to run: scripts/fleet's wing.
"""
import os
import tempfile

import params
import tracers
from host import ROOT
from .hosts import templated

# The runner's variables that name a file of this machine: each host keeps
# its own (its timings, its modules), so they are not handed on.
LOCAL_FILES = ("TIMINGS", "STAP_MODULES")


def fleet_root(text):
    """FLEET_ROOT: an absolute folder outside this checkout (a local host's
    kit is unpacked there, and must never land on the controller's own).
    The play makes it, and FLEET_ROOT/HOST, 0700 where missing, and runs
    nothing on a host where either is another user's or writable by others."""
    path = os.path.normpath(text)
    if not os.path.isabs(path):
        raise params.argparse.ArgumentTypeError(
            f"FLEET_ROOT '{text}' is not allowed: want an absolute path")
    if os.path.commonpath([path, ROOT]) in (path, ROOT):
        raise params.argparse.ArgumentTypeError(
            f"FLEET_ROOT '{text}' is not allowed: want a folder outside the kit's checkout "
            f"({ROOT}) and not above it")
    return path


def existing_file(text):
    """INVENTORY: a file that is there."""
    if not os.path.isfile(text):
        raise params.argparse.ArgumentTypeError(
            f"INVENTORY '{text}' is not allowed: want an inventory file that exists")
    return text


Param = params.Param
PARAMS = [
    Param("INVENTORY", existing_file, None,
          "an Ansible inventory (YAML or INI) of the hosts to run on", "required"),
    Param("FLEET_ROOT", fleet_root, None,
          "where each host keeps its kit (FLEET_ROOT/HOST, the connecting user's alone), "
          "unless the inventory gives the host a kit_dir",
          "a folder of its own on each host, removed at the end"),
    params.BY_NAME["NO_INSTALL"],
]


def parse_args(argv, doc):
    p = params.entry_parser("fleet.py", doc, PARAMS, os.path.join(ROOT, "results"))
    a = p.parse_args(argv)
    params.fill(a, PARAMS)
    if not a.vars and not a.inventory:
        p.error("INVENTORY is required: an Ansible inventory file (fleet/inventory.example.yml)")
    return a


def knobs():
    """The runner's variables given here (the environment, as make hands
    them over), checked with its own parsers: NAME=value words for each
    host's `make run`.  SystemExit (2, the runner's message) on a bad one."""
    names = [p.name for p in params.parse_args([], tracers.own_params()).params]  # (exits 2 on a bad value)
    return [f"{n}={os.environ[n]}" for n in names if n in os.environ and n not in LOCAL_FILES]


def check_handed(words, args):
    """ValueError for a value the play is handed (the extra variables)
    that Ansible would template: the knobs, FLEET_ROOT, the fleet folder's
    path (--results) and the kit's pack's (the temporary folder)."""
    for w in words:
        name, _, value = w.partition("=")
        templated(name, value)
    templated("FLEET_ROOT", args.fleet_root or "")
    templated("--results", os.path.abspath(args.results))
    templated("TMPDIR", tempfile.gettempdir())
