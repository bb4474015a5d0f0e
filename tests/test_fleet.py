"""make fleet (scripts/fleet, fleet/playbook.yml) for real, through
Debian's Ansible: the shipped example inventory (two hosts on this machine
by the local connection, each its own checkout, and one on the loopback
address at a port nothing listens on) runs a QUICK fleet; both folders come
back, the merged table has both, the third host is one row saying why, and
nothing is left on a host but its kit's folder.  A bad knob or inventory is
refused before anything runs anywhere."""
import csv
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import unittest

from kit_test import (ROOT, SCRIPTS, StateTest, build, descendants, need_build, need_root, run,
                      unavailable, stop_when)
from fleet.hosts import NEEDS
from fleet.pack import INTERRUPTED, pack_kit
from fleet.playbook import REMOTE_TMP, local_tmps
from render import fleet as render_fleet
from render.formats import f_x

FLEET_PY = os.path.join(SCRIPTS, "fleet")
EXAMPLE = os.path.join(ROOT, "fleet", "inventory.example.yml")
# what Ansible unpacks a module into (AnsiballZ), under TMPDIR: one a Ctrl-C
# stopped stays there, so the fleet gives its play a TMPDIR of its own
PAYLOADS = os.path.join(tempfile.gettempdir(), "ansible_*_payload_*")
PLAYS = os.path.expanduser("~/.ansible/tmp/ansible-local-*")  # the play's own, ANSIBLE_LOCAL_TEMP
# a module's own folder on a local host (under its remote_tmp): one a Ctrl-C
# stopped stays, so the fleet gives each local host a remote_tmp of its own
MODULES = os.path.expanduser("~/.ansible/tmp/ansible-tmp-*")
NOWHERE_PORT = 1  # the example's unreachable host: 127.0.0.1, this port
NOWHERE = ("all:\n  hosts:\n    nowhere:\n      ansible_host: 127.0.0.1\n"
           f"      ansible_port: {NOWHERE_PORT}\n      ansible_connection: ssh\n"
           "      ansible_ssh_common_args: '-o ConnectTimeout=5 -o BatchMode=yes'\n")


def ansibles_folders():
    """Ansible's folders of these kinds on this machine now."""
    return {f for pattern in (PAYLOADS, PLAYS, MODULES) for f in glob.glob(pattern)}


def need_ansible(tc):
    if not shutil.which("ansible-playbook"):
        unavailable(tc, f"ansible-playbook not found (Debian package "
                    f"{NEEDS['ansible-playbook']})")


def fleet(env, results, timeout=1800):
    return run([sys.executable, FLEET_PY, "--results", results, "--no-install", "1"],
               env=dict(os.environ, **env), timeout=timeout)


class Refused(unittest.TestCase):
    """Bad input stops the fleet before anything is sent: exit 2, the
    variable named, no fleet folder, no host's folder."""
    tier = "host"  # (ansible-inventory reads the inventory)

    def check(self, env, want):
        need_ansible(self)
        with tempfile.TemporaryDirectory() as res, tempfile.TemporaryDirectory() as top:
            root = os.path.join(top, "hosts")
            r = fleet(dict({"INVENTORY": EXAMPLE, "FLEET_ROOT": root}, **env), res)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertRegex(r.stderr, want)
            self.assertEqual(os.listdir(res), [])
            self.assertFalse(os.path.exists(root))

    def inventory(self, text, want, env=None):
        """An inventory of TEXT, refused with WANT."""
        with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
            f.write(text)
            f.flush()
            self.check(dict(env or {}, INVENTORY=f.name), want)

    def test_a_knob_with_jinja(self):
        """Ansible templates the knobs it is handed: Jinja in one would run
        on this machine, as root (here, for an unreachable host, it would
        not even get that far: refused first)."""
        need_build(self, "sdt")
        with tempfile.TemporaryDirectory() as top:
            marker = os.path.join(top, "templated")
            self.inventory(NOWHERE, r"WORKLOAD '.*' is not allowed: want no '\{\{'",
                           {"TARGET": build("sdt"), "PROBE": "benchmark:single_trace",
                            "WORKLOAD": f'{{{{ lookup("pipe", "touch {marker}") }}}}'})
            self.assertFalse(os.path.exists(marker))

    def test_a_kit_dir_with_jinja(self):
        """A host variable the kit reads is templated by Ansible too."""
        self.inventory(NOWHERE + "      kit_dir: \"/tmp/{{ lookup('pipe', 'id') }}\"\n",
                       r"host 'nowhere': kit_dir '/tmp/\{\{.*' is not allowed: want no")

    def test_a_local_host_by_its_full_name_over_the_checkout(self):
        """ansible.builtin.local and ansible.legacy.local are the local
        connection too, as Ansible resolves them (a Python that does not
        exist keeps the checkout safe should the check miss it)."""
        for conn in ("ansible.builtin.local", "ansible.legacy.local"):
            with self.subTest(conn):
                self.inventory(f"all:\n  hosts:\n    here:\n      ansible_connection: {conn}\n"
                               f"      ansible_python_interpreter: /nonexistent/python3\n"
                               f"      kit_dir: {ROOT}\n",
                               r"host 'here': kit_dir .* is this checkout")

    def test_a_bad_knob(self):
        self.check({"THREADS": "0"}, r"THREADS '0' is not allowed")

    def test_an_inventory_ansible_cannot_read(self):
        self.inventory("all: [\n", r"INVENTORY '.*': Ansible cannot read it: Failed to parse")

    def test_an_inventory_with_no_host(self):
        self.inventory("all:\n  hosts: {}\n", r"names no host")

    def test_a_local_host_over_the_checkout(self):
        self.inventory(f"all:\n  hosts:\n    here:\n      ansible_connection: local\n"
                       f"      kit_dir: {ROOT}\n", r"host 'here': kit_dir .* is this checkout")

    def test_a_host_that_cannot_name_a_folder(self):
        self.inventory("all:\n  hosts:\n    .hidden:\n      ansible_connection: local\n",
                       r"host '\.hidden': a fleet folder is named")

    def test_no_inventory(self):
        self.check({"INVENTORY": "/nonexistent/hosts.yml"}, r"INVENTORY '/nonexistent/"
                   r"hosts.yml' is not allowed: want an inventory file that exists")


class KitPack(unittest.TestCase):
    """Every host gets the kit's pack, so it holds the files git tracks and
    nothing else: not an untracked .env, group_vars/ or Vault beside the
    kit, nor a file git ignores.  A copy with no git sends no dot-file,
    group_vars/ or Ansible Vault, and says it is a copy."""

    def tree(self, repo):
        for name, text in ((".gitignore", "ignored.txt\n"), ("Makefile", "run:\n"),
                           (".env", "TOKEN=secret\n"), ("ignored.txt", "x\n"),
                           ("group_vars/all.yml", "password: secret\n"),
                           ("vault.yml", "$ANSIBLE_VAULT;1.1;AES256\n6162\n")):
            os.makedirs(os.path.dirname(os.path.join(repo, name)), exist_ok=True)
            with open(os.path.join(repo, name), "w") as f:
                f.write(text)

    def members(self, repo, top):
        dst = os.path.join(top, "kit.tar.gz")
        said = pack_kit(dst, root=repo)
        with tarfile.open(dst) as t:
            return sorted(t.getnames()), said

    def test_only_what_git_tracks(self):
        if not shutil.which("git"):
            unavailable(self, "git not found")
        with tempfile.TemporaryDirectory() as top:
            repo = os.path.join(top, "kit")
            self.tree(repo)
            for cmd in (["init", "-q"], ["add", "Makefile", ".gitignore"]):
                subprocess.run(["git", "-C", repo, *cmd], check=True)
            got, said = self.members(repo, top)
            self.assertEqual(got, [".gitignore", "Makefile"])
            self.assertRegex(said, r"^3 files git does not track are not sent \(git add them")

    def test_a_copy_without_git(self):
        with tempfile.TemporaryDirectory() as top:
            repo = os.path.join(top, "kit")
            self.tree(repo)
            got, said = self.members(repo, top)
            self.assertEqual(got, ["Makefile", "ignored.txt"])
            self.assertRegex(said, rf"^{re.escape(repo)} is not a git checkout")


class Planted(unittest.TestCase):
    """A kit folder given to the play (FLEET_ROOT and FLEET_ROOT/HOST, a
    host's kit_dir) that another user made first, or may write, could hold
    a GNUmakefile, which make prefers to the kit's Makefile, and root's
    `make run` would run it: the play unpacks and runs nothing there, and
    the host's row names the folder, its owner and its mode."""
    tier = "host"  # (root: a folder of another uid's)
    OTHER = 65534  # nobody

    def plant(self, folder, marker, uid=None, mode=0o755):
        os.makedirs(folder)
        with open(os.path.join(folder, "GNUmakefile"), "w") as f:
            f.write(f"run:\n\ttouch {marker}\n")
        os.chmod(folder, mode)
        if uid is not None:
            os.chown(folder, uid, uid)

    def test_a_folder_not_the_connecting_users_alone(self):
        need_root(self)
        need_ansible(self)
        for case in ("FLEET_ROOT another's", "FLEET_ROOT/HOST another's", "kit_dir 0777"):
            with self.subTest(case), tempfile.TemporaryDirectory() as res, \
                    tempfile.TemporaryDirectory() as top, \
                    tempfile.NamedTemporaryFile("w", suffix=".yml") as inv:
                root, marker = os.path.join(top, "hosts"), os.path.join(top, "ran")
                kit = os.path.join(root, "local-a")
                inv.write("all:\n  hosts:\n    local-a:\n      ansible_connection: local\n"
                          "      ansible_python_interpreter: /usr/bin/python3\n")
                if case == "FLEET_ROOT another's":
                    os.mkdir(root)
                    os.chown(root, self.OTHER, self.OTHER)
                    self.plant(kit, marker, self.OTHER)
                    bad = rf"{re.escape(root)} \(owner .*uid {self.OTHER}\), mode 0755\)"
                elif case == "FLEET_ROOT/HOST another's":
                    os.mkdir(root, 0o700)
                    self.plant(kit, marker, self.OTHER)
                    bad = rf"{re.escape(kit)} \(owner .*uid {self.OTHER}\), mode 0755\)"
                else:
                    kit = os.path.join(top, "kit")
                    inv.write(f"      kit_dir: {kit}\n")
                    self.plant(kit, marker, mode=0o777)
                    bad = rf"{re.escape(kit)} \(owner .*uid 0\), mode 0777\)"
                inv.flush()
                r = fleet({"INVENTORY": inv.name, "FLEET_ROOT": root, "QUICK": "1"}, res)
                self.assertEqual(r.returncode, 1, r.stderr[-3000:])
                self.assertFalse(os.path.exists(marker), "the planted GNUmakefile ran")
                self.assertFalse(os.path.exists(os.path.join(kit, "Makefile")))
                (top_folder,) = glob.glob(os.path.join(res, "*-fleet"))
                with open(os.path.join(top_folder, "fleet.json")) as f:
                    row = json.load(f)["hosts"]["local-a"]
                self.assertEqual(row["status"], "failed", row)
                self.assertRegex(row["reason"], bad + " is not the connecting user's alone")


    def test_a_parent_another_user_may_write(self):
        """FLEET_ROOT's own folder is root's, but a folder above it may be
        written by anyone (0777, not sticky): that user could rename the
        checked folder away and put theirs, with a GNUmakefile, in its
        place before make runs.  Refused, naming the parent; nothing runs."""
        need_root(self)
        need_ansible(self)
        with tempfile.TemporaryDirectory() as res, tempfile.TemporaryDirectory() as top, \
                tempfile.NamedTemporaryFile("w", suffix=".yml") as inv:
            shared = os.path.join(top, "shared")
            os.mkdir(shared)
            os.chmod(shared, 0o777)
            root, marker = os.path.join(shared, "hosts"), os.path.join(top, "ran")
            os.mkdir(root, 0o700)
            self.plant(os.path.join(root, "local-a"), marker, mode=0o700)
            inv.write("all:\n  hosts:\n    local-a:\n      ansible_connection: local\n"
                      "      ansible_python_interpreter: /usr/bin/python3\n")
            inv.flush()
            r = fleet({"INVENTORY": inv.name, "FLEET_ROOT": root, "QUICK": "1"}, res)
            self.assertEqual(r.returncode, 1, r.stderr[-3000:])
            self.assertFalse(os.path.exists(marker), "the planted GNUmakefile ran")
            (top_folder,) = glob.glob(os.path.join(res, "*-fleet"))
            with open(os.path.join(top_folder, "fleet.json")) as f:
                row = json.load(f)["hosts"]["local-a"]
            self.assertEqual(row["status"], "failed", row)
            self.assertRegex(row["reason"], rf"{re.escape(shared)} \(owner .*uid 0\), mode 0777\), "
                             rf"above {re.escape(root)}(/local-a)?, may be written by others")


class LocalTmps(unittest.TestCase):
    def test_each_local_host_without_its_own(self):
        """Each host on this machine whose variables name no remote_tmp gets
        a folder in the fleet's own (the play's first task makes it its
        remote_tmp); a host that names its own, and a remote host, none."""
        hosts = {"a": {}, "b": {REMOTE_TMP: "/srv/ansible-tmp"}, "far": {}}
        self.assertEqual(local_tmps("/f", hosts, ["a", "b"]), {"a": "/f/modules-a"})
        self.assertEqual(local_tmps("/f", hosts, ["b"]), {})


class Table(unittest.TestCase):
    """The fleet's table, worked by hand: two hosts' folders, each a
    baseline of 100 and 110 ns a call.  Host a's ftrace-sdt runs 600 and
    640: paired differences 500 and 530, mean 515, sd 21.21, t(1) 12.706,
    so [324.4, 705.6]; host b's 1,100 and 1,150: 1,000 and 1,040, mean
    1,020.  Against a, b is 1,020 / 515 = 1.98x; against b (--reference),
    a is 0.50x; a host that did not run cannot be the reference."""

    def fleet_folder(self, top):
        import record
        hosts = {}
        for name, (m1, m2) in (("a", (600000, 640000)), ("b", (1100000, 1150000))):
            folder = record.Folder(top, name=name)
            for rep, (b, m) in enumerate(((100000, m1), (110000, m2)), start=1):
                base = dict(threads=1, iterations=1000, unit="ns", rep=rep, status="ok")
                folder.write(dict(base, config="baseline", tracer="none", thread_wall_ns=b))
                folder.write(dict(base, config="ftrace-sdt", tracer="ftrace", thread_wall_ns=m,
                                  events_expected=1000, events_seen=1000))
            folder.close()
            hosts[name] = {"status": "ok", "reason": "", "bytes": 1}
        hosts["c"] = {"status": "unreachable", "reason": "no route", "bytes": None}
        with open(os.path.join(top, render_fleet.FLEET_JSON), "w") as f:
            json.dump({"inventory": "x.yml", "make_vars": [], "seconds": 1, "hosts": hosts}, f)

    def test_a_call_is_not_an_event(self):
        """A real program's row whose events nothing counted (a user's
        script) is a cost a call, its unit saying so (ns/call), under no
        "per event" heading (issue 67)."""
        import record
        with tempfile.TemporaryDirectory() as top:
            folder = record.Folder(top, name="a")
            for rep, (b, m) in enumerate(((100000, 600000), (110000, 640000)), start=1):
                base = dict(threads=1, iterations=1000, calls=1000, unit="ns", rep=rep)
                folder.write(dict(base, config="user-untraced", tracer="none", status="ok",
                                  thread_wall_ns=b))
                folder.write(dict(base, config="user-script-bpftrace", tracer="bpftrace",
                                  status="unverified", thread_wall_ns=m))
            folder.close()
            with open(os.path.join(top, render_fleet.FLEET_JSON), "w") as f:
                json.dump({"inventory": "x.yml", "make_vars": [], "seconds": 1,
                           "hosts": {"a": {"status": "ok", "reason": "", "bytes": 1}}}, f)
            md = render_fleet.summary(top)
        self.assertRegex(md, r"\| user-script-bpftrace +\| 1 +\| a +\| 515 .*\| ns/call +\|")
        self.assertNotIn("per event [95%]", md)

    def test_ratios(self):
        with tempfile.TemporaryDirectory() as top:
            self.fleet_folder(top)
            md = render_fleet.summary(top)
            self.assertRegex(md, r"\| ftrace-sdt +\| 1 +\| a +\| 515 \[324, 706\] +\| ns .*\| reference +\|")
            self.assertRegex(md, r"\| ftrace-sdt +\| 1 +\| b +\| 1,020 .*\| 1\.98x +\|")
            self.assertRegex(md, r"\| c +\| unreachable +\|.*\| no route +\|")
            md = render_fleet.summary(top, reference="b")
            self.assertRegex(md, r"\| ftrace-sdt +\| 1 +\| a +\| 515 .*\| 0\.50x +\|")
            with self.assertRaisesRegex(ValueError, r"--reference 'c' is not a host that ran"):
                render_fleet.summary(top, reference="c")


class Quick(StateTest):
    def test_the_example_inventory(self):
        need_root(self)
        need_ansible(self)
        with socket.socket() as s:  # the unreachable host must be unreachable
            s.settimeout(2)
            if s.connect_ex(("127.0.0.1", NOWHERE_PORT)) == 0:
                self.skipTest(f"something listens on 127.0.0.1:{NOWHERE_PORT} here")
        with tempfile.TemporaryDirectory() as res, tempfile.TemporaryDirectory() as top:
            root = os.path.join(top, "hosts")
            r = fleet({"INVENTORY": EXAMPLE, "FLEET_ROOT": root, "QUICK": "1", "RUNS": "3",
                       "CONFIGS": "baseline,ftrace-sdt"}, res)
            self.assertEqual(r.returncode, 0, r.stderr[-3000:])
            self.assertEqual(descendants(os.getpid()), {})
            tops = glob.glob(os.path.join(res, "*-fleet"))
            self.assertEqual(len(tops), 1, os.listdir(res))
            with open(os.path.join(tops[0], "fleet.json")) as f:
                got = json.load(f)
            self.assertEqual(got["make_vars"], ["RUNS=3", "CONFIGS=baseline,ftrace-sdt",
                                                "QUICK=1"])
            hosts = got["hosts"]
            self.assertEqual(list(hosts), ["local-a", "local-b", "nowhere"])
            for h in ("local-a", "local-b"):
                self.assertEqual(hosts[h]["status"], "ok", hosts[h])
                with open(os.path.join(tops[0], h, "runs.csv"), newline="") as f:
                    rows = list(csv.DictReader(f))
                self.assertEqual(sorted({(x["config"], x["threads"]) for x in rows}),
                                 [("baseline", "1"), ("baseline", "2"),
                                  ("ftrace-sdt", "1"), ("ftrace-sdt", "2")])
                self.assertEqual({x["status"] for x in rows}, {"ok"})
                # on the host: its kit's folder, nothing of the fleet's beside it
                self.assertEqual(sorted(os.listdir(root)), ["local-a", "local-b"])
                self.assertFalse(os.path.exists(os.path.join(root, h, "fleet-results.tgz")))
                self.assertTrue(os.path.isfile(os.path.join(root, h, "Makefile")))
            self.assertEqual(hosts["nowhere"]["status"], "unreachable")
            self.assertIn(f"port {NOWHERE_PORT}", hosts["nowhere"]["reason"])
            with open(os.path.join(tops[0], "summary.md")) as f:
                md = f.read()
            self.assertRegex(md, r"\| nowhere +\| unreachable +\|.*port 1: Connection refused")
            for h in ("local-a", "local-b"):
                self.assertRegex(md, rf"\| ftrace-sdt +\| 1 +\| {h} +\| [0-9,.]+ ")
            # the plot: each tracer's cheapest configuration, both hosts
            self.assertIn("Plots: fleet_cost_ns.png", md)
            self.assertTrue(os.path.isfile(os.path.join(tops[0], "fleet_cost_ns.png")))
            # the ratio to local-a, where both intervals lie above 0
            _, got_hosts = render_fleet.hosts(tops[0])
            o = {n: x[0] for n, _, x in got_hosts if x}
            c = {n: next(c for c in a["cells"] if (c["config"], c["threads"]) == ("ftrace-sdt", 1))
                 for n, a in o.items()}
            ratio = (f_x(c["local-b"]["overhead"]["mean_ns"] / c["local-a"]["overhead"]["mean_ns"])
                     + "x" if all(c[n]["overhead"]["lo_ns"] > 0 for n in c) else "-")
            self.assertRegex(md, r"\| ftrace-sdt +\| 1 +\| local-b +\|.*\| "
                             + re.escape(ratio) + r" +\|")


    def test_ctrl_c_mid_run(self):
        """Ctrl-C (SIGINT) to make fleet while a local host's make run is
        measuring: exit 130, every process below it gone (the play's group
        stopped with SIGTERM, so make run undid what it attached), the
        tracing state as it was (tearDown), what came back kept, and the
        local hosts' own kit folders (no FLEET_ROOT given) removed."""
        need_root(self)
        need_ansible(self)
        theirs = os.path.join(tempfile.gettempdir(), "kit-fleet-local-*")
        before, payloads = set(glob.glob(theirs)), ansibles_folders()
        with tempfile.TemporaryDirectory() as res:
            env = {k: v for k, v in os.environ.items() if k != "FLEET_ROOT"}
            p = subprocess.Popen([sys.executable, FLEET_PY, "--results", res, "--no-install",
                                  "1"], cwd=ROOT, start_new_session=True, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 env=dict(env, INVENTORY=EXAMPLE,
                                          CONFIGS="baseline,ftrace-sdt", ITER="20000000",
                                          RUNS="3", MAX_RUN_S="0"))

            def measuring():
                return any(os.path.islink(os.path.join(d, "results", "latest"))
                           for d in set(glob.glob(theirs)) - before)
            out = stop_when(self, p, measuring, "a local host's make run never started measuring",
                            lambda p: os.kill(p.pid, signal.SIGINT), wait_s=600)
            self.assertEqual(p.returncode, 130, out[-3000:])
            self.assertIn("fleet: interrupted", out)
            self.assertEqual(descendants(os.getpid()), {})  # (orphans come to the suite)
            self.assertEqual(set(glob.glob(theirs)), before, "a local host's kit folder stayed")
            self.assertEqual(ansibles_folders(), payloads,
                             "Ansible's module or play folder stayed")
            (top_folder,) = glob.glob(os.path.join(res, "*-fleet"))
            with open(os.path.join(top_folder, "fleet.json")) as f:
                self.assertTrue(json.load(f)["interrupted"])


    def test_ctrl_c_keeps_what_came_back(self):
        """Ctrl-C once local-a's folder is back and while local-b runs: the
        local hosts go one at a time, each to its end, so local-a's folder
        and its ok row are kept; local-b (and nowhere, after it) failed,
        interrupted; exit 130 and no process left below."""
        need_root(self)
        need_ansible(self)
        payloads = ansibles_folders()
        with tempfile.TemporaryDirectory() as res, tempfile.TemporaryDirectory() as top:
            root = os.path.join(top, "hosts")
            p = subprocess.Popen([sys.executable, FLEET_PY, "--results", res, "--no-install",
                                  "1"], cwd=ROOT, start_new_session=True, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 env=dict(os.environ, INVENTORY=EXAMPLE, FLEET_ROOT=root,
                                          QUICK="1", CONFIGS="baseline,ftrace-sdt"))

            def a_back_b_running():
                back = glob.glob(os.path.join(res, "*-fleet", "local-a.tgz"))
                return bool(back) and os.path.isfile(os.path.join(root, "local-b", "Makefile"))
            out = stop_when(self, p, a_back_b_running,
                            "local-a's folder never came back while local-b ran",
                            lambda p: os.kill(p.pid, signal.SIGINT), wait_s=600)
            self.assertEqual(p.returncode, 130, out[-3000:])
            self.assertEqual(descendants(os.getpid()), {})  # (orphans come to the suite)
            self.assertEqual(ansibles_folders(), payloads,
                             "Ansible's module or play folder stayed")
            (top_folder,) = glob.glob(os.path.join(res, "*-fleet"))
            with open(os.path.join(top_folder, "fleet.json")) as f:
                got = json.load(f)
            self.assertTrue(got["interrupted"])
            hosts = got["hosts"]
            self.assertEqual(hosts["local-a"]["status"], "ok", hosts["local-a"])
            self.assertGreater(hosts["local-a"]["bytes"], 0)
            self.assertTrue(os.path.isfile(os.path.join(top_folder, "local-a", "runs.csv")))
            self.assertFalse(os.path.exists(os.path.join(top_folder, "local-a.tgz")))
            for h in ("local-b", "nowhere"):
                self.assertEqual(hosts[h], {"status": "failed", "bytes": None,
                                            "reason": INTERRUPTED}, h)


if __name__ == "__main__":
    unittest.main()
