#!/usr/bin/env python3
"""packages.py: the Debian packages the test suite needs, in one list.

    python3 tests/packages.py           # install the missing ones (make test does)
    python3 tests/packages.py --list    # the list, one package a line

`make test` (and `make test-host`, `make test-guests`) install what is
missing here first, naming the packages before apt-get runs, as `make
run` does; NO_INSTALL=1 forbids it, and without root it only says what is
missing (the tests that need it are then skipped, each with its reason).
.ci/run installs only what make itself needs and calls `make test`, so
this list is CI's too.

The list is made from each part's own record of what it needs, never
typed twice: the tracers' back-ends, the real programs, the builds (`make
packages-here`), the plots, the lab's host tools, Ansible and LAVA; only the
tools that tests alone use are named here.  `make check` installs
nothing: it needs python3 and the build.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import debpkgs  # noqa: E402
import host  # noqa: E402
import kitlock  # noqa: E402
import lava  # noqa: E402
import params  # noqa: E402
import tracers  # noqa: E402
import workloads  # noqa: E402
from lab import suite  # noqa: E402
import fleet.hosts  # noqa: E402  (make fleet's Ansible)

# What only the tests use: {program: package}.
# (ssh: test_fleet's unreachable host is refused by ssh's own words.)
TESTS_ALONE = {"gdb": "gdb", "valgrind": "valgrind", "pgrep": "procps", "losetup": "mount",
               "g++": "g++", "ssh": "openssh-client"}


def packages():
    """Every package the suite uses, sorted."""
    pkgs = {p for b in tracers.BACKENDS.values() for p in b.needs.values()}
    for w in workloads.WORKLOADS.values():
        pkgs |= {pkg for _, pkg in ((w.program, w.package), *w.needs) if pkg}
    r = subprocess.run([*host.MAKE, "packages-here"], stdout=subprocess.PIPE, text=True,
                       check=True)
    pkgs |= set(r.stdout.split())
    pkgs.add(host.MATPLOTLIB_PACKAGE)
    pkgs |= set(suite.HOST_PACKAGES.values())
    pkgs |= set(fleet.hosts.NEEDS.values()) | {fleet.hosts.CALLBACK_PACKAGE}
    pkgs |= set(lava.NEEDS.values())
    pkgs |= set(TESTS_ALONE.values())
    return sorted(pkgs)


def installed(pkgs):
    """Those of PKGS dpkg has installed (none where dpkg is not here:
    debpkgs.install then says what it cannot do)."""
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\n", *pkgs],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except OSError:
        return set()
    return {ln.split()[0] for ln in r.stdout.splitlines() if ln.endswith(" installed")}


def main(argv):
    p = params.Parser(prog="packages.py", description=__doc__.split("\n\n")[0])
    params.add(p, [params.BY_NAME["NO_INSTALL"]])
    p.add_argument("--list", action="store_true", help="print the list and exit")
    a = p.parse_args(argv)
    want = packages()
    if a.list:
        print("\n".join(want))
        return 0
    have = installed(want)
    missing = [x for x in want if x not in have]
    if missing and os.geteuid() == 0 and not a.no_install:
        kitlock.lock("test", params.from_env("LOCK_WAIT_S"))  # apt-get while no other kit runs (as make run installs)
    debpkgs.install("test", missing, a.no_install)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
