"""Issue 67's trust points: what root runs, loads and reads, and what a
user's `make check` reads after root has run the kit.  Hand-made trees
stand in for a real attack (a planted build/), so nothing here is unkind
to the machine.

    python3 tests/run_tests.py test_trust
"""
import os
import subprocess
import tempfile
import unittest
from unittest import mock

from kit_test import ROOT, SCRIPTS, need_root, tracing_state
import host
import trusted

OTHER = 65534  # nobody


class PlantedBuild(unittest.TestCase):
    """As root, nothing in the checkout (build/ included) nor a folder
    above it may be another user's or writable by others: the first that
    is, named with its owner and mode; the lab's root file systems,
    results/ and the kit's private scratch are not walked; the sudo
    caller's own files are theirs to run."""
    tier = "host"  # (chown is root's)

    def tree(self, top):
        for d in ("src", "build/lab/sid/tmp", "build/kitscratch", "results/x"):
            os.makedirs(os.path.join(top, d), 0o755)
        for f in ("Makefile", "src/benchmark.c", "build/benchmark-sdt"):
            with open(os.path.join(top, f), "w") as fh:
                fh.write("x")
            os.chmod(os.path.join(top, f), 0o755)
        os.chmod(os.path.join(top, "build/kitscratch"), 0o711)
        return top

    def test_the_rule(self):
        need_root(self)
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            top = self.tree(os.path.join(tmp, "kit checkout"))
            self.assertIsNone(trusted.why_not(top, {0}, ["build/lab"]))
            # what the walk leaves alone: a guest's root, results, a private scratch
            for d in ("build/lab/sid/tmp", "results/x", "build/kitscratch"):
                with open(os.path.join(top, d, "theirs"), "w"):
                    pass
                os.chown(os.path.join(top, d, "theirs"), OTHER, OTHER)
            os.chmod(os.path.join(top, "build/lab/sid/tmp"), 0o1777)
            self.assertIsNone(trusted.why_not(top, {0}, ["build/lab"]))
            planted = os.path.join(top, "build", "benchmark-sdt")
            os.chown(planted, OTHER, OTHER)
            why = trusted.why_not(top, {0}, ["build/lab"])
            self.assertEqual(why, f"{planted} (owner {trusted.owner(OTHER)}, mode 0755), in the "
                             "checkout, is not root (uid 0)'s: root would run or load what its "
                             "owner put there")
            # (sudo by its owner)
            self.assertIsNone(trusted.why_not(top, {0, OTHER}, ["build/lab"]))
            os.chown(planted, 0, 0)
            os.chmod(os.path.join(top, "build"), 0o777)
            self.assertIn(f"{top}/build (owner root (uid 0), mode 0777), in the checkout, may "
                          "be written by others", trusted.why_not(top, {0}, ["build/lab"]))
            os.chmod(os.path.join(top, "build"), 0o755)
            os.chmod(tmp, 0o777)  # a folder above, writable by all, not sticky
            self.assertIn(f"{tmp} (owner root (uid 0), mode 0777) may be written by others",
                          trusted.why_not(top, {0}, ["build/lab"]))
            os.chmod(tmp, 0o1777)  # sticky (/tmp): its root-owned entry cannot be swapped
            self.assertIsNone(trusted.why_not(top, {0}, ["build/lab"]))

    def test_sudo_caller(self):
        self.assertEqual(trusted.owners({"SUDO_UID": "1000"}), {0, 1000})
        self.assertEqual(trusted.owners({"SUDO_UID": "x"}), {0})
        self.assertEqual(trusted.owners({}), {0})

    def test_make_never_runs(self):
        """trusted.make_all, every root door's first step, refuses a planted
        build before make runs (make would run the planter's Makefile)."""
        need_root(self)
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            top = self.tree(os.path.join(tmp, "kit"))
            os.chown(os.path.join(top, "build"), OTHER, OTHER)
            with mock.patch.object(host, "ROOT", top), mock.patch.object(host, "run") as run, \
                    mock.patch.object(host, "say") as say, \
                    mock.patch.dict(os.environ, {"SUDO_UID": ""}):
                self.assertFalse(trusted.make_all("run"))
            run.assert_not_called()
            said = say.call_args[0][0]
            self.assertTrue(said.startswith(f"run: {top}/build (owner {trusted.owner(OTHER)}"),
                            said)
            self.assertTrue(said.endswith("nothing was run"), said)


class Groups(unittest.TestCase):
    """A run's cgroup (cgroups.py): a daemon the command left in it is
    stopped with it, never moved to live on; and where the kit's own
    cgroup is a user's delegated subtree, the run's group is made at the
    hierarchy's top, out of that user's reach."""
    tier = "host"

    def setUp(self):
        need_root(self)
        import cgroups
        self.cgroups, self.top = cgroups, cgroups.mount()
        if not self.top:
            self.skipTest("no cgroup2 mount here")

    def test_what_is_left_in_it_is_stopped(self):
        g = self.cgroups.Group(self.top, f"kittest{os.getpid()}_1")
        daemon = subprocess.Popen(["sleep", "300"], start_new_session=True)
        try:
            g.add([daemon.pid])
            self.assertEqual(g.pids(), [daemon.pid])
            g.remove()
            self.assertFalse(os.path.exists(g.path))
            self.assertEqual(daemon.wait(timeout=10), -9)
        finally:
            if daemon.poll() is None:
                daemon.kill()
                daemon.wait()
            if os.path.isdir(g.path):
                self.cgroups.remove(g.path, g.home)

    def test_a_delegated_subtree_is_passed_over(self):
        mine = os.path.join(self.top, f"kittest{os.getpid()}-user")
        os.mkdir(mine)
        try:
            os.chown(mine, OTHER, OTHER)  # (as systemd delegates user@UID.service)
            rel = "/" + os.path.relpath(mine, self.top)
            with mock.patch.object(self.cgroups, "own_group", return_value=rel):
                g = self.cgroups.Group(self.top, f"kittest{os.getpid()}_2")
            try:
                self.assertEqual(os.path.dirname(g.path), self.top)
            finally:
                os.rmdir(g.path)
            os.chown(mine, 0, 0)
            with mock.patch.object(self.cgroups, "own_group", return_value=rel):
                g = self.cgroups.Group(self.top, f"kittest{os.getpid()}_3")
            try:
                self.assertEqual(os.path.dirname(g.path), mine)
            finally:
                os.rmdir(g.path)
        finally:
            os.rmdir(mine)


class RootPlaces(unittest.TestCase):
    """More places root reads, loads or writes: PATH's folders (a tool or
    WORKLOAD's first word is found there), STAP_MODULES (kernel modules
    root loads), and host.write_json's temporary file (a fixed name, once:
    a link planted there had root write through it)."""
    tier = "host"  # (chown is root's)

    def setUp(self):
        need_root(self)

    def test_path_kept_to_trusted_folders(self):
        with tempfile.TemporaryDirectory() as top:
            os.chmod(top, 0o755)
            theirs, mine, open_ = (os.path.join(top, n) for n in ("theirs", "mine", "open"))
            for d in (theirs, mine, open_):
                os.mkdir(d, 0o755)
            os.chown(theirs, OTHER, OTHER)
            os.chmod(open_, 0o777)
            path = os.pathsep.join([mine, theirs, "bin", open_, "/nowhere", mine])
            kept, dropped = trusted.trusted_path(path, {0})
            self.assertEqual(kept, mine)
            self.assertEqual([d for d, _ in dropped], [theirs, "bin", open_])
            self.assertIn(f"(owner {trusted.owner(OTHER)}, mode 0755), the PATH folder",
                          dropped[0][1])
            self.assertIn("may be written by others", dropped[2][1])

    def test_stap_modules_of_another_user_refused(self):
        import argparse
        from tracers import stap
        from tracers.base import TracerError
        with tempfile.TemporaryDirectory() as top:
            os.chmod(top, 0o755)
            ko = os.path.join(top, "kit_stap_mark.ko")
            with open(ko, "w"):
                pass
            os.chown(ko, OTHER, OTHER)
            args = argparse.Namespace(stap_runtime="auto", stap_modules=top, stap_timing=0)
            with self.assertRaises(TracerError) as e:
                stap.Stap().choose(args)
            self.assertIn(f"{ko} (owner {trusted.owner(OTHER)}", str(e.exception))
            self.assertIn("root loads no kernel module", str(e.exception))

    def test_write_json_not_through_a_planted_link(self):
        with tempfile.TemporaryDirectory() as top:
            victim = os.path.join(top, "victim")
            with open(victim, "w") as f:
                f.write("theirs\n")
            path = os.path.join(top, "meta.json")
            os.symlink(victim, f"{path}.{os.getpid()}.tmp")  # the old fixed name
            host.write_json(path, {"a": 1})
            os.symlink(victim, os.path.join(top, "report.json"))  # the name itself a link
            host.write_json(os.path.join(top, "report.json"), {"b": 2})
            with open(victim) as f:
                self.assertEqual(f.read(), "theirs\n")
            with open(path) as f:
                self.assertEqual(f.read(), '{\n  "a": 1\n}\n')
            self.assertFalse(os.path.islink(os.path.join(top, "report.json")))
            self.assertEqual(sorted(os.listdir(top)), sorted(
                ["victim", "meta.json", "report.json", f"meta.json.{os.getpid()}.tmp"]))


class UserAfterRoot(unittest.TestCase):
    """`make check` as an ordinary user after root has run the kit: the
    suite's own before-and-after state reads nothing that is root's alone
    (root's kit state, 0700)."""
    tier = "host"

    def test_nobody_reads_the_state(self):
        need_root(self)
        with tempfile.TemporaryDirectory() as tmp:
            state = os.path.join(tmp, "state.d")
            os.mkdir(state, 0o700)  # as root's make run leaves it
            os.chmod(tmp, 0o755)
            code = ("import sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]; import kit_test; "
                    "s = kit_test.tracing_state(); print(s['kit state'])")
            r = subprocess.run(["python3", "-c", code, os.path.join(ROOT, "tests"), SCRIPTS],
                               user=OTHER, group=OTHER, extra_groups=[], cwd="/",
                               env=dict(os.environ, KIT_STATE=state), capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            self.assertIn("root's alone", r.stdout)
            self.assertIsInstance(tracing_state()["kit state"], list)  # (root reads it)


if __name__ == "__main__":
    unittest.main()
