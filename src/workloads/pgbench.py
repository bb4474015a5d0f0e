"""pgbench.py: the kit's PostgreSQL workload, a target as build/benchmark-*
is: a throwaway cluster in DIR (made by the runner, scripts/pgcluster.py),
pgbench's TPC-B-like transactions from THREADS clients, ITERATIONS
transactions each, and the kit's target record (kit-target-record/1) on
stdout, each client a "thread" whose calls are its transactions.

    python3 src/workloads/pgbench.py --bin /usr/lib/postgresql/15/bin --owner postgres \
        --dir DIR [--template TDIR] --threads 2 --iterations 500 [--hold]

(the runner gives --bin and --owner from scripts/pgcluster.py, their one
home; the tools' and the server's output go to stderr, the run's log).

What it does, in order, all of it on one CPU (see main()): the cluster
(cluster(): initdb as the `postgres` user when run as root, since initdb
refuses root; pg_stat_statements; `pgbench -i`; a checkpoint), made in
TDIR once (in TDIR/building, renamed TDIR/data when whole) and copied
from there for each run (cp -a), or made in DIR; the
server started as this script's own child (not through pg_ctl, which puts
it in a session of its own: here the runner's kill of the target's
session reaches it), on a Unix socket in DIR only (listen_addresses=''),
autovacuum and fsync off; the statements' counters reset; with --hold,
one byte read from stdin (the runner attaches meanwhile); then `pgbench -n
-M simple -c THREADS -j THREADS -t ITERATIONS`, timed; then the server's
own count of the statements it ran (pg_stat_statements: each one
query__start, pgbench's two set-up queries included) as the record's
"fired"; and the server stopped (fast), whatever happened.  The runner
removes DIR (and TDIR at its end) and whatever a kill left
(pgcluster.Postgres.cleanup).  Needs Debian's postgresql (15 on Debian 12, 17 on 13: its pgbench
and pg_stat_statements).
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import driver

USAGE = ("usage: pgbench.py --bin PG_BIN --owner USER --dir DIR [--template TDIR] --threads N "
         "--iterations N [--hold] [--quiet]")
DB, USER = "postgres", "bench"  # the cluster's database and its (trusted) user
RUN = {}  # the run's --bin, --owner and --dir, once known


def owner():
    """Popen's arguments that run a command as the cluster's owner: the
    `postgres` user where the script runs as root (initdb refuses root),
    itself the child (no runuser between: a signal reaches the server), in
    the cluster's folder (the owner may not enter the checkout: a home
    folder, a test's temporary copy)."""
    where = dict(cwd=RUN["--dir"])
    if os.geteuid() == 0:
        where.update(user=RUN["--owner"], group=RUN["--owner"], extra_groups=[])
    return where


def tool(name, *args, log):
    """A PostgreSQL tool run to its end, its output to LOG; its output."""
    p = subprocess.run([os.path.join(RUN["--bin"], name), *args], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **owner())
    log.write(f"$ {name} {' '.join(args)}\n{p.stdout}")
    if p.returncode != 0:
        last = [ln for ln in p.stdout.splitlines() if ln.strip()] or ["?"]
        sys.exit(f"pgbench.py: {name} failed (exit {p.returncode}): {last[-1]}")
    return p.stdout


def sql(query, sock, log):
    return tool("psql", "-X", "-A", "-t", "-h", sock, "-U", USER, "-d", DB, "-c", query,
                log=log).strip()


def start(data, sock, clients, log):
    """The server on DATA, this script's child, once it accepts connections."""
    server = subprocess.Popen(
        [os.path.join(RUN["--bin"], "postgres"), "-D", data, "-k", sock, "-c", "listen_addresses=",
         "-c", "autovacuum=off", "-c", "fsync=off", "-c", "synchronous_commit=off",
         # (its dynamic shared memory in DATA/pg_dynshmem, not /dev/shm/PostgreSQL.*,
         # which a killed server left behind)
         "-c", "dynamic_shared_memory_type=mmap",
         "-c", "shared_preload_libraries=pg_stat_statements",
         "-c", f"max_connections={clients + 10}"],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log, **owner())
    for _ in range(600):
        if server.poll() is not None:
            sys.exit(f"pgbench.py: the server failed: it exited with status "
                     f"{server.returncode} (its lines are above in the run's log)")
        r = subprocess.run([os.path.join(RUN["--bin"], "pg_isready"), "-q", "-h", sock, "-U", USER,
                            "-d", DB], **owner())
        if r.returncode == 0:
            return server
        time.sleep(0.05)
    stop(server)
    sys.exit("pgbench.py: the server failed to accept connections in 30 s")


def stop(server):
    """A fast shutdown (SIGINT), SIGKILL after 60 s; reaped.  True if it
    shut down cleanly (exit 0)."""
    if server and server.poll() is None:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    return bool(server) and server.returncode == 0


def cluster(data, sock, log):
    """A new cluster in DATA with pgbench's tables (scale 1) and
    pg_stat_statements, flushed (a checkpoint: what pgbench -i wrote is
    not written during a timed run; an untraced run, released at once,
    met that checkpoint and ran 2x slower), its server stopped."""
    tool("initdb", "-D", data, "-A", "trust", "-U", USER, "--no-sync", "-E", "UTF8",
         "--locale", "C", log=log)
    server = start(data, sock, 1, log)
    try:
        sql("CREATE EXTENSION pg_stat_statements", sock, log)
        tool("pgbench", "-i", "-q", "-s", "1", "-h", sock, "-U", USER, DB, log=log)
        sql("CHECKPOINT", sock, log)
    finally:
        clean = stop(server)
    if not clean:  # (a template that a killed server left would be copied for ever)
        sys.exit(f"pgbench.py: the cluster failed to shut down cleanly (status "
                 f"{server.returncode})")


def main(argv):
    opts, hold = driver.parse(argv, "pgbench.py", USAGE,
                              strings=("--bin", "--owner", "--dir", "--template"))
    if not {"--bin", "--owner", "--dir"} <= set(opts):
        sys.exit(f"pgbench.py: {USAGE}")
    RUN.update(opts)
    template = opts.get("--template")
    clients, txns, top = opts["--threads"], opts["--iterations"], opts["--dir"]
    # One CPU for the server, its backends and pgbench (inherited): on this
    # kind of VM a wake-up on the other CPU costs so much, and so unevenly,
    # that 1,000 transactions of one client took 0.3 to 2.6 s unpinned and
    # 0.20 to 0.32 s on one CPU (docs/findings/2026-12-02-pgbench-on-one-cpu.md)
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    data, sock = os.path.join(top, "data"), top
    server = None
    log = sys.stderr  # the run's log

    def stopped(signum, _frame):
        raise SystemExit(f"pgbench.py: stopped by signal {signum}")
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, stopped)
    try:
        if not template:
            cluster(data, sock, log)
        else:  # made once, copied for each run (cp -a, as its owner)
            if not os.path.isdir(os.path.join(template, "data")):  # TDIR/data: whole
                building = os.path.join(template, "building")
                if os.path.isdir(building):  # half made by a run that was killed
                    shutil.rmtree(building)
                cluster(building, template, log)
                os.rename(building, os.path.join(template, "data"))
            subprocess.run(["cp", "-a", os.path.join(template, "data"), data], check=True,
                           **owner())
        server = start(data, sock, clients, log)
        sql("SELECT pg_stat_statements_reset()", sock, log)
        if hold:
            sys.stdin.buffer.read(1)
        t0 = time.monotonic_ns()
        r0 = os.times()
        out = tool("pgbench", "-n", "-M", "simple", "-c", str(clients), "-j", str(clients),
                   "-t", str(txns), "-h", sock, "-U", USER, DB, log=log)
        t1 = time.monotonic_ns()
        r1 = os.times()
        done = re.search(r"number of transactions actually processed: (\d+)/(\d+)", out)
        tps = re.search(r"tps = ([\d.]+) \(without initial connection time\)", out)
        lat = re.search(r"latency average = ([\d.]+) ms", out)
        if not (done and tps and lat):
            sys.exit("pgbench.py: pgbench failed to print its transaction count, tps or latency")
        statements = int(sql("SELECT sum(calls) FROM pg_stat_statements", sock, log) or 0)
    finally:
        stop(server)
    processed = int(done.group(1))
    each = [processed // clients + (k < processed % clients) for k in range(clients)]
    user = int((r1.children_user - r0.children_user) * 1e9)
    sys_ns = int((r1.children_system - r0.children_system) * 1e9)
    # fired: the server's own count of its query__start markers in the run:
    # pg_stat_statements' sum holds the reset's own SELECT (counted as it
    # ended, after the reset, before the hold: no probe saw its start) and
    # not the SELECT reading the sum (counted after it read; a probe saw it
    # start): the two cancel, checked with a probe printing every query
    driver.record("postgres", clients, txns, t1 - t0, user, sys_ns,
                  [(0, t1 - t0, n) for n in each], fired={"query__start": statements},
                  workload={"tps": float(tps.group(1)), "latency_ms": float(lat.group(1)),
                            "transactions": processed})


if __name__ == "__main__":
    main(sys.argv[1:])
