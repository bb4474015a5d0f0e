"""fleet/playbook.py: make fleet's one ansible-playbook run of
fleet/playbook.yml over the inventory, stopped as a whole on Ctrl-C,
SIGTERM or its limit (each local make run then cleans up as at a
terminal), and the fleet folder written from its report: fleet.json,
each host's folder, and the report.

Nothing to run: scripts/fleet's wing.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import host
from host import ROOT, say
import record
from record.fleet import FLEET_JSON, KIND
from .hosts import CALLBACK, LOCAL, one_line
from .pack import INTERRUPTED, fleet_folder, gather, outcomes, own_folders, pack_kit

PLAYBOOK = os.path.join(ROOT, "fleet", "playbook.yml")
REPORT = os.path.join(ROOT, "scripts", "report.py")
MAX_FORKS = 50  # hosts Ansible works on at once (its own default is 5)
PLAYBOOK_S = 6 * 3600  # the whole play, every host: a stated limit
REMOTE_TMP = "ansible_remote_tmp"  # where a host's modules run from (fleet/playbook.yml sets it)


def play_env(scratch, local):
    """ansible-playbook's environment.  Two or more hosts here: one fork,
    each host's tasks to its end before the next host's (host_pinned; a
    failed host stops none after it, as serial: 1 would), so a folder is
    back before the next host starts and survives a Ctrl-C.  TMPDIR: where
    a module run here unpacks itself (AnsiballZ's ansible_*_payload_*
    folders), and where the local hosts' make run keeps its scratch;
    ANSIBLE_LOCAL_TEMP: the play's own on this machine (ansible-local-*):
    SCRATCH, the fleet's own folder, so a module a Ctrl-C stops leaves
    nothing in /tmp or ~/.ansible/tmp of these."""
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK=CALLBACK, TMPDIR=scratch,
               ANSIBLE_LOCAL_TEMP=scratch,
               ANSIBLE_HOST_KEY_CHECKING="False", ANSIBLE_RETRY_FILES_ENABLED="False")
    if local > 1:
        env["ANSIBLE_STRATEGY"] = "host_pinned"
    return env


def local_tmps(tmp, hosts, local):
    """{host: a folder in the fleet's own folder TMP} for each host on this
    machine (LOCAL) whose variables name no ansible_remote_tmp: the play's
    first task makes it that host's (set_fact, which needs no such folder).
    Ansible runs each module from a folder of its own in it (ansible-tmp-*)
    and removes that when the module returns; one a Ctrl-C stops would
    otherwise stay in ~/.ansible/tmp.  A host whose inventory names its own
    keeps it; a remote_tmp of ansible.cfg is not a host's and gives way."""
    return {h: os.path.join(tmp, f"modules-{h}") for h in local
            if hosts[h].get(REMOTE_TMP) is None}


def write_fleet_json(fleet, args, words, got, **more):
    """The fleet folder's fleet.json."""
    host.write_json(os.path.join(fleet, FLEET_JSON), {
        "inventory": os.path.abspath(args.inventory), "make_vars": words,
        "fleet_root": args.fleet_root, **more, "hosts": got})
    record.stamp(fleet, KIND)


def play(args, hosts, plugins, words):
    """The play over HOSTS (PLUGINS: each one's connection) with the
    runner's variables WORDS: make fleet's exit status."""
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
                                "fleet_root": args.fleet_root, "fleet_dir": fleet,
                                "kit_remote_tmp": local_tmps(tmp, hosts, local)})
        t0 = time.monotonic()
        # Stopped (Ctrl-C, SIGTERM, its limit), the play and every process
        # below it get SIGTERM, and the fleet waits until each is gone: each
        # local make run cleans up as it does at a terminal, after
        # ansible-playbook has exited; SIGKILL after host.STOP_GRACE_S
        # (host.stop_tree).
        scratch = os.path.join(tmp, "tmp")
        os.mkdir(scratch, 0o700)
        errors = open(os.path.join(tmp, "stderr"), "w+")
        with host.stoppable():
            p = subprocess.Popen(
                ["ansible-playbook", "-i", args.inventory, "-e", f"@{extra}",
                 "--forks", str(1 if len(local) > 1 else min(len(hosts), MAX_FORKS)),
                 PLAYBOOK], stdout=subprocess.PIPE, stderr=errors, text=True,
                errors="replace", start_new_session=True, preexec_fn=host.default_signals,
                env=play_env(scratch, len(local)))
            try:
                out, _ = p.communicate(timeout=PLAYBOOK_S)
            except KeyboardInterrupt:
                host.stop_tree(p)
                # what came back is kept: a host whose folder is here ran
                # (its make run's status never reached us); the others did not
                got = gather(fleet, {h: {"status": "failed", "reason": INTERRUPTED} for h in hosts})
                write_fleet_json(fleet, args, words, got, interrupted=True)
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
    return back(fleet, args, words, hosts, (p.returncode, out, said), seconds)


def back(fleet, args, words, hosts, ended, seconds):
    """What came back (ENDED: the play's exit status, its stdout and its
    stderr): fleet.json, each host's line, the report; the exit status."""
    code, out, said = ended
    try:
        report = json.loads(out[out.index("{"):])
    except ValueError:
        say(f"fleet: ansible-playbook exited with status {code} and no report: "
            + one_line((said or out)[-400:]))
        return 1
    got = gather(fleet, outcomes(report, hosts))
    write_fleet_json(fleet, args, words, got, seconds=round(seconds, 1))
    for name, g in got.items():
        say(f"fleet: {name}: {g['status']}" + (f": {g['reason']}" if g["reason"] else "")
            + (f" ({g['bytes']:,} bytes back)" if g.get("bytes") else ""))
    shown = subprocess.run([sys.executable, REPORT, fleet])
    ran = sum(g["status"] == "ok" for g in got.values())
    say(f"fleet: {ran} of {len(got)} hosts ran, in {seconds:.0f} s; results in "
        f"{os.path.relpath(fleet, ROOT)}/")
    return 0 if ran and shown.returncode == 0 else 1  # each host's own row says why
