"""fleet/hosts.py: make fleet's hosts as Ansible reads them (its own
ansible-inventory and plugin loader, never a parse of ours), and what the
play may be handed: no host variable the kit reads, and no value it
passes on, may hold Jinja, which Ansible would run on this machine as
root; no local host's folder may be the controller's checkout.

Nothing to run: scripts/fleet's wing.
"""
import json
import os
import re
import shutil
import subprocess

from host import ROOT
import record
from record.fleet import FLEET_JSON

NEEDS = {"ansible-playbook": "ansible-core", "ansible-inventory": "ansible-core",
         "ansible-doc": "ansible-core"}
# The play's report, read from its standard output: ansible.posix's json
# callback (ansible-core ships none such; Debian's `ansible` has it).
CALLBACK, CALLBACK_PACKAGE = "ansible.posix.json", "ansible"
# A host on this machine: the connection plugin Ansible resolves its
# ansible_connection to (local, ansible.builtin.local, ansible.legacy.local).
LOCAL = "ansible.builtin.local"
# Where Ansible's templating starts (its default delimiters): in a value the
# play is handed, or a host variable it reads, Ansible runs it on this machine.
JINJA = ("{{", "{%", "{#")
# The host variables the kit reads (here, and the play), each a plain string.
HOST_VARS = ("kit_dir", "ansible_connection")


def one_line(text):
    text = str(text or "").strip()
    return " ".join(text.split())[:400] or "no message"


def templated(label, value):
    """ValueError where VALUE (LABEL's) holds Jinja, which Ansible, templating
    what the play is handed, would run on this machine."""
    if any(j in value for j in JINJA):
        raise ValueError(f"{label} '{value}' is not allowed: want no "
                         f"{', '.join(repr(j) for j in JINJA)} (Ansible would run it as a "
                         "template on this machine)")


def has_callback():
    """Ansible has the stdout callback whose report the fleet reads."""
    r = subprocess.run(["ansible-doc", "-t", "callback", "-l"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True, timeout=120)
    return any(ln.split()[:1] == [CALLBACK] for ln in r.stdout.splitlines())


def inventory(path):
    """{host: its variables} of the inventory at PATH, as Ansible reads it;
    ValueError saying why where it cannot, or it names no host."""
    r = subprocess.run(["ansible-inventory", "-i", path, "--list"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120,
                       env=dict(os.environ, ANSIBLE_INVENTORY_UNPARSED_FAILED="True"))
    if r.returncode != 0:  # its first parser's complaint, else its last line
        m = re.search(r"\* (Failed to parse .*?)(?: \[WARNING\]|$)", " ".join(r.stderr.split()))
        why = m.group(1) if m else (r.stderr.strip().splitlines() or ["no message"])[-1]
        raise ValueError(f"INVENTORY '{path}': Ansible cannot read it: {why[:300]}")
    hosts = (json.loads(r.stdout).get("_meta") or {}).get("hostvars") or {}
    if not hosts:
        raise ValueError(f"INVENTORY '{path}' names no host")
    return hosts


def ansible_python():
    """The interpreter Ansible runs with (ansible-playbook's first line)."""
    with open(shutil.which("ansible-playbook"), "rb") as f:
        first = f.readline().decode(errors="replace")
    words = first[2:].split() if first.startswith("#!") else []
    return words[-1] if words and os.path.isabs(words[-1]) else "/usr/bin/python3"


def connections(hosts):
    """{host: the fully qualified name of the connection plugin Ansible
    resolves its ansible_connection to (Ansible's configured default where
    it names none), or None where Ansible has no such plugin}, asked of
    Ansible's own plugin loader: `local`, `ansible.builtin.local` and
    `ansible.legacy.local` are one plugin.  ValueError where it cannot say."""
    ask = r"""
import json, sys
import ansible.constants as C
from ansible.plugins.loader import connection_loader
out = {}
for n in json.load(sys.stdin):
    name = n or C.DEFAULT_TRANSPORT
    c = connection_loader.find_plugin_with_context("ssh" if name == "smart" else name)
    out[n] = c.resolved_fqcn if c.resolved else None
print(json.dumps(out))
"""
    names = sorted({v.get("ansible_connection") or "" for v in hosts.values()})
    r = subprocess.run([ansible_python(), "-c", ask], input=json.dumps(names),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    try:
        fqcn = json.loads(r.stdout) if r.returncode == 0 else None
    except ValueError:
        fqcn = None
    if not isinstance(fqcn, dict):
        raise ValueError("Ansible's plugin loader could not name the hosts' connections: "
                         + one_line((r.stderr.strip().splitlines() or ["no message"])[-1]))
    return {h: fqcn.get(v.get("ansible_connection") or "") for h, v in hosts.items()}


def check_hosts(hosts, root, plugins):
    """ValueError for a host the play must not touch: one whose HOST_VARS
    are not plain strings or hold Jinja (Ansible would run it here), or a
    local one (PLUGINS: connections()) whose kit folder is the controller's
    checkout (or holds it)."""
    for name, v in hosts.items():
        if not all(c.isalnum() or c in "-_." for c in name) or name.startswith(".") \
                or name in (FLEET_JSON, record.META, "summary.md"):
            raise ValueError(f"host '{name}': a fleet folder is named after each host: want "
                             "letters, digits, '-', '_' or '.', not first, and not "
                             f"{FLEET_JSON}, {record.META} or summary.md")
        for var in HOST_VARS:
            if v.get(var) is not None and not isinstance(v[var], str):
                raise ValueError(f"host '{name}': {var} '{v[var]}' is not allowed: want a "
                                 "string")
            if v.get(var) is not None:
                templated(f"host '{name}': {var}", v[var])
        d = v.get("kit_dir")
        if d is not None and not os.path.isabs(d):
            raise ValueError(f"host '{name}': kit_dir '{d}' is not allowed: want an absolute "
                             "path")
        if plugins[name] == LOCAL and (d or root):
            d = os.path.realpath(d or os.path.join(root, name))
            here = os.path.realpath(ROOT)
            if os.path.commonpath([d, here]) in (d, here):
                raise ValueError(f"host '{name}': kit_dir '{d}' is this checkout or above it; "
                                 "the play would unpack over it")
