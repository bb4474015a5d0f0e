#!/usr/bin/env python3
"""fleet.py: `make fleet`: the kit on every host of an Ansible inventory,
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
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import host  # noqa: E402
import params  # noqa: E402
import run as runner  # noqa: E402
from render.fleet import FLEET_JSON  # noqa: E402
from host import ROOT, say  # noqa: E402

PLAYBOOK = os.path.join(ROOT, "fleet", "playbook.yml")
STATUSES = ("ok", "failed", "unreachable")  # a host's, in fleet.json
NEEDS = {"ansible-playbook": "ansible-core", "ansible-inventory": "ansible-core",
         "ansible-doc": "ansible-core"}
# The play's report, read from its standard output: ansible.posix's json
# callback (ansible-core ships none such; Debian's `ansible` has it).
CALLBACK, CALLBACK_PACKAGE = "ansible.posix.json", "ansible"
# The runner's variables that name a file of this machine: each host keeps
# its own (its timings, its modules), so they are not handed on.
LOCAL_FILES = ("TIMINGS", "STAP_MODULES")
MAX_FORKS = 50  # hosts Ansible works on at once (its own default is 5)
# A host on this machine: the connection plugin Ansible resolves its
# ansible_connection to (local, ansible.builtin.local, ansible.legacy.local).
LOCAL = "ansible.builtin.local"
# Where Ansible's templating starts (its default delimiters): in a value the
# play is handed, or a host variable it reads, Ansible runs it on this machine.
JINJA = ("{{", "{%", "{#")
# The host variables the kit reads (here, and the play), each a plain string.
HOST_VARS = ("kit_dir", "ansible_connection")
# The Ansible Vault file's first line (a copy of the kit never sends one).
VAULT_HEADER = b"$ANSIBLE_VAULT;"
PLAYBOOK_S = 6 * 3600  # the whole play, every host: a stated limit
INTERRUPTED = "the fleet was interrupted"  # the reason of a host that did not finish


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


def parse_args(argv):
    p = params.entry_parser("fleet.py", __doc__, PARAMS, os.path.join(ROOT, "results"))
    a = p.parse_args(argv)
    params.fill(a, PARAMS)
    if not a.vars and not a.inventory:
        p.error("INVENTORY is required: an Ansible inventory file (fleet/inventory.example.yml)")
    return a


def knobs():
    """The runner's variables given here (the environment, as make hands
    them over), checked with its own parsers: NAME=value words for each
    host's `make run`.  SystemExit (2, the runner's message) on a bad one."""
    names = [p.name for p in runner.parse_args([]).params]  # (exits 2 on a bad value)
    return [f"{n}={os.environ[n]}" for n in names if n in os.environ and n not in LOCAL_FILES]


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
                or name in (FLEET_JSON, "summary.md"):
            raise ValueError(f"host '{name}': a fleet folder is named after each host: want "
                             "letters, digits, '-', '_' or '.', not first, and not "
                             f"{FLEET_JSON} or summary.md")
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


def kit_files(root=ROOT):
    """The kit's files as the controller has them, relative to ROOT, and
    a line saying what was left out (or None).  Every host gets them, so
    never a file git does not track: an operator's group_vars, vault files
    or .env beside the kit are untracked, and a file git ignores (build/,
    results/) is no kit's.  git's index (`git ls-files -c`) is the rule,
    so a new file of the kit goes once it is added (or `git add -N`).
    Outside a git checkout (a release copy, tests/mutants.py's copies)
    nothing says which files are the kit's, and stopping there would leave
    a copy no fleet; so there it is every file but build/, results/, any
    name starting with '.' (.env, .git), Ansible's group_vars/ and
    host_vars/, and any file that is an Ansible Vault, and the line says so."""
    r = subprocess.run(["git", "-C", root, "ls-files", "-z", "-c"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    if r.returncode == 0:
        files = [f for f in r.stdout.decode().split("\0") if f]
        o = subprocess.run(["git", "-C", root, "ls-files", "-z", "-o", "--exclude-standard"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60)
        left = [f for f in o.stdout.decode().split("\0") if f] if o.returncode == 0 else []
        return files, (f"{len(left)} files git does not track are not sent (git add them to "
                       f"send them): {', '.join(left[:5])}" + (", ..." if len(left) > 5 else "")
                       if left else None)
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".") and x not in ("group_vars", "host_vars")
                   and not (d == root and x in ("build", "results"))]
        for n in names:
            if not n.startswith(".") and os.path.isfile(os.path.join(d, n)):
                with open(os.path.join(d, n), "rb") as f:
                    if f.read(len(VAULT_HEADER)) == VAULT_HEADER:
                        continue
                files.append(os.path.relpath(os.path.join(d, n), root))
    why = one_line((r.stderr.decode(errors="replace").strip().splitlines() or ["no git"])[-1])
    return files, (f"{root} is not a git checkout ({why}): sending every file but build/, "
                   "results/, dot-files, group_vars/, host_vars/ and Ansible Vault files")


def pack_kit(dst, leave=(), root=ROOT):
    """The kit's files (kit_files) in the tarball DST, but LEAVE (the
    inventory, where it lies in the checkout: it may hold secrets); the
    line kit_files said, or None."""
    leave = {os.path.realpath(x) for x in leave}
    files, said = kit_files(root)
    files = [f for f in files if os.path.realpath(os.path.join(root, f)) not in leave]
    with tarfile.open(dst, "w:gz") as t:
        for f in files:
            if os.path.isfile(os.path.join(root, f)):
                t.add(os.path.join(root, f), arcname=f)
    return said


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


def outcomes(report, hosts):
    """{host: {"status", "reason"}} from ansible-playbook's json callback REPORT."""
    out = {h: {"status": "ok", "reason": ""} for h in hosts}
    for play in report.get("plays", []):
        for task in play.get("tasks", []):
            for h, res in (task.get("hosts") or {}).items():
                if h not in out or out[h]["status"] != "ok":
                    continue  # its first failure is its reason
                if res.get("unreachable"):
                    out[h] = {"status": "unreachable", "reason": one_line(res.get("msg"))}
                elif res.get("failed"):
                    why = res.get("msg") or res.get("stderr") or "failed"
                    out[h] = {"status": "failed", "reason": f"{task['task']['name']}: "
                              + one_line(why)}
    for h, s in (report.get("stats") or {}).items():  # a host the tasks never reported
        if h in out and out[h]["status"] == "ok" and (s.get("unreachable") or s.get("failures")):
            out[h] = {"status": "unreachable" if s.get("unreachable") else "failed",
                      "reason": "Ansible counted it so, with no message"}
    return out


def one_line(text):
    text = str(text or "").strip()
    return " ".join(text.split())[:400] or "no message"


def unpack(fleet, name):
    """HOST's fetched pack into the fleet folder's HOST/ (its results
    folder's files); its size in bytes, or None where none came back."""
    pack = os.path.join(fleet, f"{name}.tgz")
    if not os.path.exists(pack):
        return None
    size = os.path.getsize(pack)
    with tempfile.TemporaryDirectory(dir=fleet) as tmp:
        # a host's pack: plain files and folders under one, the
        # controller's own, with no set-id bit (Python 3.11.2 has no
        # extraction filter to say so)
        with tarfile.open(pack) as t:
            safe = [m for m in t.getmembers() if (m.isfile() or m.isdir())
                    and not os.path.isabs(m.name) and ".." not in m.name.split("/")]
            for m in safe:
                m.mode &= 0o777
                m.uid, m.gid, m.uname, m.gname = os.getuid(), os.getgid(), "", ""
            t.extractall(tmp, members=safe)
        inner = [d for d in os.listdir(tmp) if os.path.isdir(os.path.join(tmp, d))]
        if len(inner) == 1:
            os.replace(os.path.join(tmp, inner[0]), os.path.join(fleet, name))
    os.unlink(pack)
    return size if os.path.isdir(os.path.join(fleet, name)) else None


def fleet_folder(results):
    """A new results/<stamp>-fleet folder (two fleets in one second: the
    second gets -2)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    fleet, n = os.path.join(results, f"{stamp}-fleet"), 1
    os.makedirs(results, exist_ok=True)
    while True:
        try:
            os.mkdir(fleet)
            return fleet
        except FileExistsError:
            n += 1
            fleet = os.path.join(results, f"{stamp}-fleet-{n}")


def gather(fleet, got):
    """GOT ({host: its status and reason}) with each host's pack unpacked
    into the fleet folder and its bytes: one that came back is ok where
    GOT says interrupted, and one said ok whose folder did not come back
    failed."""
    for name in got:
        try:
            got[name]["bytes"] = unpack(fleet, name)
        except (tarfile.TarError, OSError, EOFError) as e:
            got[name] = {"status": "failed", "reason": f"its pack could not be read: {e}",
                         "bytes": None}
            continue
        if got[name]["bytes"] is not None and got[name]["reason"] == INTERRUPTED:
            got[name] = {"status": "ok", "reason": "", "bytes": got[name]["bytes"]}
        if got[name]["status"] == "ok" and got[name]["bytes"] is None:
            got[name] = {"status": "failed", "reason": "no results folder came back",
                         "bytes": None}
    return got


@contextlib.contextmanager
def own_folders(names):
    """{host: a folder of its own} for the hosts NAMES on this machine that
    were given none: made here (mkdtemp: root's, 0700), so that whatever
    ends the play (its end, a failure, Ctrl-C) the fleet removes them
    itself; a remote host's is the play's (tempfile), removed by the play."""
    made = {}
    try:
        for name in names:
            made[name] = tempfile.mkdtemp(prefix=f"kit-fleet-{name}-")
        yield made
    finally:
        for d in made.values():
            shutil.rmtree(d, ignore_errors=True)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.vars:
        print("\n".join(params.defaults(PARAMS)))
        return 0
    words = knobs()  # the runner's variables, checked before anything is sent
    try:
        check_handed(words, args)
    except ValueError as e:
        say(f"fleet: {e}")
        return 2
    host.install("fleet", sorted({pkg for cmd, pkg in NEEDS.items() if not shutil.which(cmd)}),
                 args.no_install)
    missing = [cmd for cmd in NEEDS if not shutil.which(cmd)]
    if missing:
        say(f"fleet: {missing[0]} not found (Debian package {NEEDS[missing[0]]})")
        return 2
    if not has_callback():
        host.install("fleet", [CALLBACK_PACKAGE], args.no_install)
        if not has_callback():
            say(f"fleet: Ansible has no {CALLBACK} stdout callback (Debian package "
                f"{CALLBACK_PACKAGE}: ansible-core recommends it)")
            return 2
    try:
        hosts = inventory(args.inventory)
        plugins = connections(hosts)
        check_hosts(hosts, args.fleet_root, plugins)
    except ValueError as e:
        say(f"fleet: {e}")
        return 2
    local = [h for h in hosts if plugins[h] == LOCAL]
    with tempfile.TemporaryDirectory(prefix="kit-fleet-") as tmp, own_folders(
            [h for h in local if args.fleet_root is None and "kit_dir" not in hosts[h]]) as mine:
        tarball = os.path.join(tmp, "kit.tar.gz")
        left = pack_kit(tarball, leave=[args.inventory])
        if left:
            say(f"fleet: {left}")
        fleet = fleet_folder(args.results)
        say(f"fleet: {len(hosts)} hosts ({', '.join(hosts)}); make run {' '.join(words)}"
            + ("; those on this machine one at a time" if len(local) > 1 else ""))
        extra = os.path.join(tmp, "vars.json")
        host.write_json(extra, {"kit_tarball": tarball, "kit_vars": words, "kit_local": mine,
                                "fleet_root": args.fleet_root, "fleet_dir": fleet})
        t0 = time.monotonic()
        # Stopped (Ctrl-C, SIGTERM, its limit), the play and every process
        # below it get SIGTERM, and the fleet waits until each is gone: each
        # local make run cleans up as it does at a terminal, after
        # ansible-playbook has exited; SIGKILL after host.STOP_GRACE_S
        # (host.stop_tree).  Two or more hosts here: one fork, each host's
        # tasks to its end before the next host's (host_pinned; a failed
        # host stops none after it, as serial: 1 would), so a folder is
        # back before the next host starts and survives a Ctrl-C.
        # TMPDIR: where a module run here unpacks itself (AnsiballZ's
        # ansible_*_payload_* folders), and where the local hosts' make run
        # keeps its scratch; ANSIBLE_LOCAL_TEMP: the play's own on this
        # machine (ansible-local-*): the fleet's own folder, so a module a
        # Ctrl-C stops leaves nothing in /tmp or ~/.ansible/tmp of these.
        scratch = os.path.join(tmp, "tmp")
        os.mkdir(scratch, 0o700)
        env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK=CALLBACK, TMPDIR=scratch,
                   ANSIBLE_LOCAL_TEMP=scratch,
                   ANSIBLE_HOST_KEY_CHECKING="False", ANSIBLE_RETRY_FILES_ENABLED="False")
        if len(local) > 1:
            env["ANSIBLE_STRATEGY"] = "host_pinned"
        errors = open(os.path.join(tmp, "stderr"), "w+")
        with host.stoppable():
            p = subprocess.Popen(
                ["ansible-playbook", "-i", args.inventory, "-e", f"@{extra}",
                 "--forks", str(1 if len(local) > 1 else min(len(hosts), MAX_FORKS)),
                 PLAYBOOK], stdout=subprocess.PIPE, stderr=errors, text=True,
                errors="replace", start_new_session=True, preexec_fn=host.default_signals,
                env=env)
            try:
                out, _ = p.communicate(timeout=PLAYBOOK_S)
                code = p.returncode
            except KeyboardInterrupt:
                host.stop_tree(p)
                # what came back is kept: a host whose folder is here ran
                # (its make run's status never reached us); the others did not
                got = gather(fleet, {h: {"status": "failed", "reason": INTERRUPTED} for h in hosts})
                host.write_json(os.path.join(fleet, FLEET_JSON), {
                    "inventory": os.path.abspath(args.inventory), "make_vars": words,
                    "fleet_root": args.fleet_root, "interrupted": True, "hosts": got})
                say(f"fleet: interrupted; what came back is in {os.path.relpath(fleet, ROOT)}/"
                    + (" (a remote host's make run, over SSH without a terminal, runs on, and"
                       " its own kit folder stays there)" if len(local) < len(hosts) else ""))
                return 130
            except subprocess.TimeoutExpired:
                host.stop_tree(p)
                say(f"fleet: the play did not finish in {PLAYBOOK_S} s and was stopped")
                return 1
            except BaseException:
                host.stop_tree(p)
                raise
        seconds = time.monotonic() - t0
        errors.seek(0)
        said = errors.read()
        errors.close()
    try:
        report = json.loads(out[out.index("{"):])
    except ValueError:
        say(f"fleet: ansible-playbook exited with status {code} and no report: "
            + one_line((said or out)[-400:]))
        return 1
    got = gather(fleet, outcomes(report, hosts))
    host.write_json(os.path.join(fleet, FLEET_JSON), {
        "inventory": os.path.abspath(args.inventory), "make_vars": words,
        "fleet_root": args.fleet_root, "seconds": round(seconds, 1), "hosts": got})
    for name, g in got.items():
        say(f"fleet: {name}: {g['status']}" + (f": {g['reason']}" if g["reason"] else "")
            + (f" ({g['bytes']:,} bytes back)" if g.get("bytes") else ""))
    shown = subprocess.run([sys.executable, os.path.join(HERE, "report.py"), fleet])
    ran = sum(g["status"] == "ok" for g in got.values())
    say(f"fleet: {ran} of {len(got)} hosts ran, in {seconds:.0f} s; results in "
        f"{os.path.relpath(fleet, ROOT)}/")
    return 0 if ran and shown.returncode == 0 else 1  # each host's own row says why

if __name__ == "__main__":
    sys.exit(main())
