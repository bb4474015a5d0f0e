"""host.py: preparing this machine, the one way the runner (run.py) and
the lab (lab.py) both do it: installing the Debian packages they lack
(as root, unless NO_INSTALL=1) and building the kit with make.

Nothing to run: `import host`.
"""
import os
import shutil
import subprocess
import sys

from tracers.base import say

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def install(who, pkgs, forbid):
    """Installs PKGS with apt-get, saying so as WHO (run, lab); where
    FORBID (NO_INSTALL=1), without root or without apt-get, only says what
    is missing.  Whatever could not be installed is the caller's to skip."""
    if not pkgs:
        return
    if forbid:
        say(f"{who}: missing Debian packages (not installing, NO_INSTALL=1): {' '.join(pkgs)}")
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        say(f"{who}: missing Debian packages (install them as root): {' '.join(pkgs)}")
        return
    say(f"{who}: installing the Debian packages it needs: {' '.join(pkgs)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], env=env, stdout=subprocess.DEVNULL)
    r = subprocess.run(["apt-get", "install", "-y", "-qq", *pkgs], env=env,
                       stdout=subprocess.DEVNULL)
    if r.returncode != 0:
        say(f"{who}: apt-get could not install them all; what needs them will be skipped")


def build_needs():
    """The Debian packages the builds that cannot be made here need
    (`make needs`): the runner's and the lab's (the lab's guests run the
    builds made here)."""
    r = subprocess.run(["make", "-s", "-C", ROOT, "needs"], stdout=subprocess.PIPE, text=True)
    return set(r.stdout.split())


def make_all(who):
    """`make all` (every build whose dependencies are here); False, having
    said so, if make failed."""
    r = subprocess.run(["make", "-s", "-C", ROOT, "all"], stdout=sys.stderr)
    if r.returncode != 0:
        say(f"{who}: make failed; nothing was run")
    return r.returncode == 0
