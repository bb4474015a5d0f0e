#!/usr/bin/env python3
"""cpython_dtrace.py: what CPython's `--with-dtrace` build costs a program
while no one traces it (issue 66, item 5), beside docker-library/python
#366's 5-17%.  A recipe, not a test: Debian's own python3.11 source
(the version dpkg knows, else apt's candidate, else another of apt-cache
policy's versions: a mirror may no longer serve the installed one),
downloaded with apt in a folder of its own
(debpkgs.source_download: its lists and cache there, deb-src lines for
the host's own mirror and suites; the host's apt state untouched), its
upstream tarball unpacked once into build/cpython/src-VERSION/, then
configured and built twice out of tree, into build/cpython/plain and
build/cpython/dtrace, with the same configure flags and CFLAGS but
`--with-dtrace` (no PGO, no LTO: one flag compared; `make -j2`), each
build's time printed.  It checks that the dtrace build has the stapsdt
markers and the plain one none, that both print the same line for each
program, then runs, as a user would, for each of
src/examples/py/{nbody,richards,dicts,calls}.py:

    WORKLOAD='build/cpython/dtrace/python src/examples/py/X.py' \\
    AGAINST='build/cpython/plain/python src/examples/py/X.py' \\
    TARGET=build/cpython/dtrace/python PROBE='python:*' NO_INSTALL=1 \\
    python3 scripts/run.py

(THREADS=1, DORMANT_S=120, DORMANT_PRECISION=1: the defaults) and writes
a Markdown table of the four folders' report.json to stdout (progress on
stderr).  Builds are kept (build/ is git-ignored) and reused while their
flags and version are the same; the results folders go to results/.

    sudo python3 bench/cpython_dtrace.py

How long: about 20 minutes the first time on a 2-CPU VM (each build
about 3.5 minutes, then 2.5-3.5 minutes a program: up to 120 s of timed
rounds, then a counting run under every marker's uprobe), about 12 with
the builds kept.  Needs root (apt, the uprobes), the Debian mirror
in the machine's apt sources, build-essential, systemtap-sdt-dev (dtrace)
and CPython's build dependencies (DEPS: installed with apt-get where
missing), readelf, and about 1 GB in build/.
The finding: docs/findings/2026-12-06-cpython-dtrace-dormant.md.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import debpkgs  # noqa: E402

PACKAGE = "python3.11"
BUILD = os.path.join(ROOT, "build", "cpython")
PROGRAMS = ("nbody", "richards", "dicts", "calls")
DEPS = ("build-essential", "libssl-dev", "zlib1g-dev", "libffi-dev", "libbz2-dev",
        "liblzma-dev", "libsqlite3-dev", "libreadline-dev", "systemtap-sdt-dev")
# The same for both builds; CPython's own default CFLAGS (-O3, no PGO, no LTO).
CONFIGURE = ["--without-ensurepip"]
BUILDS = (("plain", []), ("dtrace", ["--with-dtrace"]))


def say(msg):
    print(f"cpython_dtrace: {msg}", file=sys.stderr, flush=True)


def out(cmd, **kw):
    """CMD's stdout (a list, no shell); SystemExit with its stderr if it fails."""
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if r.returncode:
        sys.exit(f"cpython_dtrace: {' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def logged(cmd, log, cwd=None):
    """CMD run with its output appended to LOG; SystemExit naming LOG if it fails."""
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=cwd,
                           stdin=subprocess.DEVNULL)
    if r.returncode:
        sys.exit(f"cpython_dtrace: {' '.join(cmd)}: exit {r.returncode} (see {log})")


def source_versions():
    """The source versions of Debian's python3.11 to ask apt for, in
    order: dpkg's (the one installed), apt's candidate, then the rest of
    apt-cache policy's version table (a mirror may no longer serve an
    installed version a point release replaced, or lack a security
    update's .dsc; the upstream tarball is the same in all)."""
    got = []
    r = subprocess.run(["dpkg-query", "-W", "-f", "${source:Version}", PACKAGE],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if r.returncode == 0 and r.stdout.strip():
        got.append(r.stdout.strip())
    policy = out(["apt-cache", "policy", PACKAGE], env=dict(os.environ, LC_ALL="C"))
    m = re.search(r"^\s*Candidate:\s*(\S+)", policy, re.M)
    table = re.findall(r"^ (?:\*\*\*| {3}) (\S+) \d+$", policy, re.M)
    for v in ([m.group(1)] if m else []) + table:
        if v != "(none)" and v not in got:
            got.append(v)
    if not got:
        sys.exit(f"cpython_dtrace: this release has no {PACKAGE} (dpkg-query, apt-cache policy)")
    return got


def installed(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f", "${db:Status-Abbrev}", pkg],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return r.returncode == 0 and r.stdout.startswith("ii")


def dependencies():
    """DEPS installed where missing (only those: nothing else upgraded)."""
    missing = [p for p in DEPS if not installed(p)]
    if missing:
        debpkgs.install("cpython_dtrace", missing, False)
    missing = [p for p in DEPS if not installed(p)]
    if missing:
        sys.exit(f"cpython_dtrace: missing Debian packages: {' '.join(missing)}")


def unpacked(versions):
    """(VERSION, build/cpython/src-VERSION/): the upstream tarball of
    Debian's python3.11 source package VERSION (the first of VERSIONS that
    is here or that apt finds) unpacked once (no Debian patches)."""
    for version in versions:
        src = os.path.join(BUILD, f"src-{version.replace(':', '_')}")
        if os.path.exists(os.path.join(src, "configure")):
            return version, src
    for version in versions:
        down = os.path.join(BUILD, f"download-{version.replace(':', '_')}")
        say(f"Debian's {PACKAGE} {version} source package, by apt in a folder of its own")
        try:
            got = debpkgs.source_download(PACKAGE, version, down,
                                          os.path.join(BUILD, "apt.log"))
        except debpkgs.SourceError as e:
            say(f"{e}")
            shutil.rmtree(down, ignore_errors=True)
            continue
        tars = [t for t in got
                if re.match(rf"{PACKAGE}_.*\.orig\.tar\.[a-z0-9]+$", os.path.basename(t))]
        if len(tars) != 1:
            sys.exit(f"cpython_dtrace: {down}: {len(tars)} upstream tarballs, not 1")
        return version, unpack(tars[0], os.path.join(BUILD, f"src-{version.replace(':', '_')}"))
    sys.exit(f"cpython_dtrace: no source package of {PACKAGE} {' or '.join(versions)} "
             f"(see {os.path.relpath(os.path.join(BUILD, 'apt.log'), ROOT)})")


def unpack(tarball, src):
    """TARBALL's one top folder unpacked as SRC (root's, the umask's modes)."""
    with tempfile.TemporaryDirectory(dir=BUILD) as tmp:
        out(["tar", "-xf", tarball, "-C", tmp, "--no-same-owner", "--no-same-permissions"])
        tops = os.listdir(tmp)
        if len(tops) != 1 or not os.path.exists(os.path.join(tmp, tops[0], "configure")):
            sys.exit(f"cpython_dtrace: {tarball}: not one CPython source tree ({tops})")
        os.replace(os.path.join(tmp, tops[0]), src)
    say(f"unpacked {os.path.basename(tarball)} into {os.path.relpath(src, ROOT)}")
    return src


def build(src, name, extra, version):
    """build/cpython/NAME: configure (CONFIGURE + EXTRA) and make -j2 out
    of tree; (seconds it took, or None where kept from an earlier run)."""
    d = os.path.join(BUILD, name)
    stamp = os.path.join(d, ".recipe")
    want = json.dumps({"version": version, "configure": CONFIGURE + extra, "src": src})
    if os.path.exists(os.path.join(d, "python")) and os.path.exists(stamp):
        with open(stamp) as f:
            if f.read() == want:
                say(f"{name}: kept from an earlier run ({os.path.relpath(d, ROOT)})")
                return None
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    log = os.path.join(BUILD, f"{name}.log")
    open(log, "w").close()
    say(f"{name}: configure {' '.join(CONFIGURE + extra)}; make -j2 (log {os.path.relpath(log, ROOT)})")
    t0 = time.monotonic()
    logged([os.path.join(src, "configure"), *CONFIGURE, *extra], log, cwd=d)
    t1 = time.monotonic()
    logged(["make", "-j2"], log, cwd=d)
    t2 = time.monotonic()
    with open(stamp, "w") as f:
        f.write(want)
    say(f"{name}: built in {t2 - t0:.0f} s (configure {t1 - t0:.0f} s, make {t2 - t1:.0f} s)")
    return t2 - t0


def markers(python):
    """The stapsdt notes' names in PYTHON (readelf -n), in order."""
    text = out(["readelf", "-n", python], env=dict(os.environ, LC_ALL="C"))
    return re.findall(r"NT_STAPSDT.*\n\s*Provider: (\S+)\n\s*Name: (\S+)", text)


def check(pythons):
    """The dtrace build has markers, the plain one none; both run from the
    build folder with their own stdlib, the same CFLAGS, and print the
    same line for every program."""
    got = {n: markers(p) for n, p in pythons.items()}
    if got["plain"] or not got["dtrace"]:
        sys.exit(f"cpython_dtrace: stapsdt notes: plain {len(got['plain'])}, "
                 f"dtrace {len(got['dtrace'])}: not 0 and some")
    names = sorted({f"{p}:{n}" for p, n in got["dtrace"]})
    say(f"dtrace: {len(got['dtrace'])} stapsdt notes: {', '.join(names)}; plain: none")
    info = {}
    for n, p in pythons.items():
        info[n] = out([p, "-c", "import sys, sysconfig; print(sys.version.split()[0], "
                       "sys.prefix, sysconfig.get_config_var('CFLAGS'))"], cwd=ROOT).strip()
        say(f"{n}: {info[n]}")
    if info["plain"] != info["dtrace"]:
        sys.exit("cpython_dtrace: the two builds differ in version or CFLAGS")
    for prog in PROGRAMS:
        lines = {n: out([p, f"src/examples/py/{prog}.py"], cwd=ROOT) for n, p in pythons.items()}
        if lines["plain"] != lines["dtrace"]:
            sys.exit(f"cpython_dtrace: {prog}.py prints differently: {lines}")
    return names


def compare(prog):
    """scripts/run.py with WORKLOAD (dtrace) against AGAINST (plain): its
    folder, found in the line that names it."""
    rel = {n: os.path.join("build", "cpython", n, "python") for n in ("plain", "dtrace")}
    env = dict(os.environ, WORKLOAD=f"{rel['dtrace']} src/examples/py/{prog}.py",
               AGAINST=f"{rel['plain']} src/examples/py/{prog}.py",
               TARGET=rel["dtrace"], PROBE="python:*", NO_INSTALL="1")
    say(f"{prog}: WORKLOAD='{env['WORKLOAD']}' AGAINST='{env['AGAINST']}' "
        f"TARGET={env['TARGET']} PROBE='python:*' NO_INSTALL=1 python3 scripts/run.py")
    t0 = time.monotonic()
    p = subprocess.Popen([sys.executable, "scripts/run.py"], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    folder = None
    for ln in p.stdout:
        print(f"  {ln}", end="", file=sys.stderr, flush=True)
        m = re.search(r"results in (\S+)", ln)
        folder = folder or (m and m.group(1))
    if p.wait() or not folder:
        sys.exit(f"cpython_dtrace: {prog}: scripts/run.py exit {p.returncode}"
                 + ("" if folder else ", no results folder named"))
    say(f"{prog}: {time.monotonic() - t0:.0f} s, {folder}")
    with open(os.path.join(ROOT, folder, "report.json")) as f:
        return folder, json.load(f)


def row(prog, rep):
    """The table's row for PROG's report.json."""
    a = rep["answers"]["1"]
    passages = rep.get("passages")
    if isinstance(passages, dict):
        fired = ", ".join(f"{k.split(':', 1)[1]} {v:,}"
                          for k, v in sorted(passages.items()) if v)
        fired = fired or "none fired"
    else:
        fired = f"not counted: {passages}"
    pp = a.get("per_passage_ns")
    price = f"{pp[0]:.2f} [{pp[1]:.2f}, {pp[2]:.2f}]" if pp else "-"
    return (f"| {prog} | {a['mean_pct']:+.2f}% [{a['lo_pct']:+.2f}, {a['hi_pct']:+.2f}] | "
            f"{a['verdict']} | {a['rounds']} | {fired} | {price} |")


def main():
    if os.geteuid() != 0:
        sys.exit("cpython_dtrace: needs root (apt, the uprobes that count the passages)")
    os.makedirs(BUILD, exist_ok=True)
    versions = source_versions()
    say(f"Debian's {PACKAGE}: source version {' or '.join(versions)}")
    dependencies()
    version, src = unpacked(versions)
    took = {name: build(src, name, extra, version) for name, extra in BUILDS}
    pythons = {n: os.path.join(BUILD, n, "python") for n, _ in BUILDS}
    names = check(pythons)
    rows, folders = [], []
    for prog in PROGRAMS:
        folder, rep = compare(prog)
        folders.append(folder)
        rows.append(row(prog, rep))
    print(f"CPython {version} (Debian's {PACKAGE} source), --with-dtrace (A) against the "
          f"same build without it (B), untraced, 1 copy; builds: "
          + ", ".join(f"{n} {'kept' if s is None else f'{s:.0f} s'}" for n, s in took.items()))
    print(f"markers in the dtrace build: {', '.join(names)}\n")
    print("| benchmark | A against B [95%] | verdict | rounds | passages a run "
          "(markers that fired) | ns a passage [95%] |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    print("\nfolders: " + ", ".join(folders))
    return 0


if __name__ == "__main__":
    sys.exit(main())
