"""debpkgs.py: the Debian packages the kit lacks, installed as root (unless
NO_INSTALL=1), release by release (issue 57): what a name is and whether
this release has it is asked of apt, never assumed from a release's name;
every package that exists is installed, and each that does not is named
with what it costs, so that one missing name (python3.11 on Debian 13)
never blocks the rest, as one unknown name makes apt refuse a whole
install.

Nothing to run: `import debpkgs; debpkgs.install("run", pkgs, forbid, costs)`.
"""
import os
import shutil

from host import STOP_GRACE_S, run, say


def install(who, pkgs, forbid, costs=None):
    """Installs PKGS with apt-get, saying so as WHO (run, lab); where
    FORBID (NO_INSTALL=1), without root or without apt-get, only says what
    is missing.  A name this release's lists do not have (python3.11 on
    Debian 13) is asked of apt first, named with what it costs (COSTS:
    {package: what is skipped without it}), and left out: one missing name
    never blocks the rest (apt refuses a whole install for one).  Whatever
    could not be installed is the caller's to skip."""
    if not pkgs:
        return
    if forbid:
        say(f"{who}: missing Debian packages (not installing, NO_INSTALL=1): {' '.join(pkgs)}")
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        say(f"{who}: missing Debian packages (install them as root): {' '.join(pkgs)}")
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run(["apt-get", "update", "-qq"], env=env, whole=True, grace=STOP_GRACE_S)
    have = installable(pkgs)
    for p in (p for p in pkgs if p not in have):
        say(f"{who}: Debian {release() or 'this release'} has no package {p}"
            + (f": {(costs or {}).get(p)} skipped" if (costs or {}).get(p) else ""))
    pkgs = [p for p in pkgs if p in have]
    if not pkgs:
        return
    say(f"{who}: installing the Debian packages it needs: {' '.join(pkgs)}")
    code, out = run(["apt-get", "install", "-y", "-qq", *pkgs], env=env, whole=True,
                    grace=STOP_GRACE_S)
    if code != 0:
        said = [ln for ln in out.splitlines() if ln.startswith(("E:", "W:"))][-5:]
        say(f"{who}: apt-get could not install them all; what needs them will be skipped"
            + "".join(f"\n{who}:   {ln}" for ln in said))


def installable(pkgs):
    """Those of PKGS that apt has a candidate version of, asked of apt
    (`apt-cache policy`, read by meaning: a package's block, its
    Candidate line), never assumed from a release's name."""
    code, out = run(["apt-cache", "policy", *pkgs], env=dict(os.environ, LC_ALL="C"),
                    stderr=False)
    have, name = set(), None
    for ln in out.splitlines():
        if ln and not ln[0].isspace() and ln.rstrip().endswith(":"):
            name = ln.rstrip()[:-1]
        elif name and ln.strip().startswith("Candidate:"):
            if ln.split(":", 1)[1].strip() not in ("", "(none)"):
                have.add(name)
    return have


def release():
    """This system's Debian codename (bookworm, trixie, sid), or None."""
    try:
        with open("/etc/os-release") as f:
            for ln in f:
                if ln.startswith("VERSION_CODENAME="):
                    return ln.split("=", 1)[1].strip().strip('"') or None
    except OSError:
        pass
    return None
