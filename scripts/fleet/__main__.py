#!/usr/bin/env python3
"""fleet/__main__.py: `make fleet`: the kit on every host of an Ansible inventory,
through Ansible itself (Debian's ansible-core), and each host's results
folder brought back under one fleet folder.

    make fleet INVENTORY=fleet/inventory.example.yml QUICK=1
    make fleet INVENTORY=hosts.yml THREADS=1..4 CONFIGS='baseline,ftrace-*'
    python3 scripts/report.py results/<stamp>-fleet    # one table, every host

The runner's variables (THREADS, CONFIGS, QUICK, ...) are checked here, on
the controller, with the runner's own parsers, before anything is sent; a
bad one, or an inventory Ansible cannot read or that names no host, stops
it with nothing run anywhere; so does a value Ansible would template (a
knob, or a host variable the kit reads, holding Jinja: Ansible would run it
here, as root).  Then fleet/playbook.yml unpacks the kit (the files git
tracks: kit_files) into each host's folder (one of its own, removed at the
end; FLEET_ROOT/HOST, or the host's kit_dir, where given, once the play has
seen that it is the connecting user's alone), runs `make run` there with
the variables given, fetches its newest results folder and removes the
pack.  Where two or more hosts share this machine (the local connection, by
the name Ansible resolves it to), the play runs one host at a time, each to
its end (host_pinned, one fork), so that one does not time another's build
and a host's folder is back before the next starts; otherwise hosts run at
once, up to MAX_FORKS.  The
fleet folder, results/<stamp>-fleet/, holds HOST/ (its results folder),
HOST.log (its make run's output) and fleet.json (each host's status:
ok, failed or unreachable, and why).  Needs ansible-core on the controller
(installed as `make run` installs its tools, unless NO_INSTALL=1), and on
each host what `make run` needs (it installs that itself).
"""
import os
import shutil
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # scripts/
sys.path[0] = HERE  # (run as `python3 scripts/fleet`, the path began at the wing)

import debpkgs  # noqa: E402
import door  # noqa: E402
from host import say  # noqa: E402
from fleet import playbook  # noqa: E402
from fleet.hosts import (CALLBACK, CALLBACK_PACKAGE, NEEDS, check_hosts, connections,  # noqa: E402
                        has_callback, inventory)
from fleet.inputs import PARAMS, check_handed, knobs, parse_args  # noqa: E402


def ansible_here(no_install):
    """Ansible on this machine, installed where missing (unless NO_INSTALL)
    with the callback whose report the fleet reads; None, or why not."""
    debpkgs.install("fleet", sorted({pkg for cmd, pkg in NEEDS.items() if not shutil.which(cmd)}),
                 no_install)
    missing = [cmd for cmd in NEEDS if not shutil.which(cmd)]
    if missing:
        return f"{missing[0]} not found (Debian package {NEEDS[missing[0]]})"
    if not has_callback():
        debpkgs.install("fleet", [CALLBACK_PACKAGE], no_install)
        if not has_callback():
            return (f"Ansible has no {CALLBACK} stdout callback (Debian package "
                    f"{CALLBACK_PACKAGE}: ansible-core recommends it)")
    return None


def main(argv=None):
    args = door.inputs(parse_args, argv, __doc__, PARAMS)
    if args is None:
        return 0
    words = knobs()  # the runner's variables, checked before anything is sent
    try:
        check_handed(words, args)
    except ValueError as e:
        say(f"fleet: {e}")
        return 2
    why = ansible_here(args.no_install)
    if why:
        say(f"fleet: {why}")
        return 2
    try:
        hosts = inventory(args.inventory)
        plugins = connections(hosts)
        check_hosts(hosts, args.fleet_root, plugins)
    except ValueError as e:
        say(f"fleet: {e}")
        return 2
    return playbook.play(args, hosts, plugins, words)


if __name__ == "__main__":
    sys.exit(main())
