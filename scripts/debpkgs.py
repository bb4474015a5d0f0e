"""debpkgs.py: the Debian packages the kit lacks, installed as root (unless
NO_INSTALL=1), release by release (issue 57): what a name is and whether
this release has it is asked of apt, never assumed from a release's name;
every package that exists is installed, and each that does not is named
with what it costs, so that one missing name (python3.11 on Debian 13)
never blocks the rest, as one unknown name makes apt refuse a whole
install.  And a Debian *source* package of a given version downloaded
with apt in a folder of its own (source_download: its lists and cache
there, deb-src lines for the suites of the host's own apt sources; the
host's apt state untouched): the lab's QEMU plugin header
(lab/plugin.py) and the CPython recipe (bench/cpython_dtrace.py).

Nothing to run: `import debpkgs; debpkgs.install("run", pkgs, forbid, costs)`;
`debpkgs.source_download("python3.11", version, folder, log)`.
"""
import glob
import os
import re
import shutil
import tempfile

from host import STOP_GRACE_S, Timeout, run, say


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


def mirror():
    """The host's Debian mirror (its apt sources), never a name of ours."""
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        with open(path) as f:
            text = f.read()
        for stanza in text.split("\n\n"):
            uris = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
            if uris and "security" not in uris.group(1) and re.search(
                    r"^Types:.*\bdeb\b", stanza, re.M):
                return uris.group(1)
    if os.path.exists("/etc/apt/sources.list"):
        with open("/etc/apt/sources.list") as f:
            for ln in f:
                m = re.match(r"\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)\s", ln)
                if m and "security" not in m.group(1):
                    return m.group(1)
    return None


def source_lines():
    """deb-src lines, main only, for where this system's Debian packages
    can have come from: the host's Debian mirror (mirror()) at its suite
    and SUITE-updates, and the security archive at SUITE-security where
    the host's sources name one (an enabled deb822 stanza or a
    sources.list line); never a third party's repository."""
    suite, base = release(), mirror()
    if not suite or not base:
        return []
    got = [(base, suite), (base, f"{suite}-updates")]
    stanzas = []
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        with open(path) as f:
            stanzas += f.read().split("\n\n")
    for st in stanzas:
        uris, suites = (re.search(rf"^{k}:(.*)$", st, re.M) for k in ("URIs", "Suites"))
        if (uris and suites and f"{suite}-security" in suites.group(1).split()
                and not re.search(r"^Enabled:\s*no", st, re.M | re.I)):
            got += [(u, f"{suite}-security") for u in uris.group(1).split()]
    for path in ["/etc/apt/sources.list", *sorted(glob.glob("/etc/apt/sources.list.d/*.list"))]:
        if os.path.exists(path):
            with open(path) as f:
                for ln in f:
                    x = re.match(r"\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", ln)
                    if x and x.group(2) == f"{suite}-security":
                        got.append(x.groups())
    return [f"deb-src {u} {x} main\n" for u, x in dict.fromkeys(got)]


class SourceError(Exception):
    """A source package that could not be downloaded: why."""


def _apt(cmd, what, log, timeout, cwd=None):
    """CMD (apt-get's, a list) run, its output appended to LOG; SourceError
    naming WHAT with apt's last E: line where it fails or overruns TIMEOUT."""
    try:
        code, out = run(cmd, timeout=timeout, log=log, cwd=cwd, group=True)
    except Timeout as e:
        code, out = f"did not finish in {timeout} s", e.output or ""
    if code != 0:
        said = [ln for ln in out.splitlines() if ln.startswith("E:")] or out.splitlines()[-1:]
        raise SourceError(f"apt-get {what}: "
                          f"{code if isinstance(code, str) else f'failed (exit {code})'}"
                          + (f": {said[-1]}" if said else ""))


def source_download(package, version, folder, log):
    """`apt-get source --download-only PACKAGE=VERSION` into FOLDER, with
    apt in a folder of its own (its lists, cache and sources.list in a
    scratch folder inside FOLDER, removed after; deb-src lines from
    source_lines(); the host's apt state untouched).  Root's (apt's
    lists).  The files it brought (.dsc, tarballs), as paths; SourceError
    saying why not (no Debian source in the host's apt sources, apt's
    E: line)."""
    lines = source_lines()
    if not lines:
        raise SourceError("no Debian source in the host's apt sources (its mirror)")
    os.makedirs(folder, exist_ok=True)
    before = set(os.listdir(folder))
    with tempfile.TemporaryDirectory(dir=folder, prefix=".apt-") as tmp:
        lists, cache = os.path.join(tmp, "lists"), os.path.join(tmp, "cache")
        os.makedirs(os.path.join(lists, "partial"))
        os.makedirs(os.path.join(cache, "archives", "partial"))
        src = os.path.join(tmp, "sources.list")
        with open(src, "w") as f:
            f.write("".join(lines))
        apt = ["apt-get", "-q", "-o", f"Dir::Etc::SourceList={src}",
               "-o", "Dir::Etc::SourceParts=/nonexistent", "-o", f"Dir::State::Lists={lists}",
               "-o", f"Dir::Cache={cache}"]
        _apt([*apt, "update"], "update", log, 300)
        _apt([*apt, "source", "--download-only", f"{package}={version}"],
             f"source {package}={version}", log, 900, cwd=folder)
        before.add(os.path.basename(tmp))
    return sorted(os.path.join(folder, n) for n in set(os.listdir(folder)) - before)
