"""pgbench.py: the kit's PostgreSQL workload, a target as build/benchmark-*
is: a throwaway cluster in DIR (made by the runner, scripts/workloads.py),
pgbench's TPC-B-like transactions from THREADS clients, ITERATIONS
transactions each, and the kit's target record (kit-target-record/1) on
stdout, each client a "thread" whose calls are its transactions.

    python3 src/workloads/pgbench.py --dir DIR [--template TDIR] --threads 2 --iterations 500 [--hold]

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
(workloads.Postgres.cleanup).  Needs Debian's postgresql-15 (its pgbench
and pg_stat_statements).
"""
import os
import re
import signal
import subprocess
import sys
import time

BIN = "/usr/lib/postgresql/15/bin"
USAGE = ("usage: pgbench.py --dir DIR [--template TDIR] --threads N --iterations N [--hold] "
         "[--quiet]")
DB, USER = "postgres", "bench"
TOP = [None]  # the cluster's folder, once known


def owner():
    """Popen's arguments that run a command as the cluster's owner: the
    `postgres` user where the script runs as root (initdb refuses root),
    itself the child (no runuser between: a signal reaches the server), in
    the cluster's folder (the owner may not enter the checkout: a home
    folder, a test's temporary copy)."""
    where = dict(cwd=TOP[0])
    if os.geteuid() == 0:
        where.update(user="postgres", group="postgres", extra_groups=[])
    return where


def tool(name, *args, log):
    """A PostgreSQL tool run to its end, its output to LOG; its output."""
    p = subprocess.run([os.path.join(BIN, name), *args], stdin=subprocess.DEVNULL,
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
        [os.path.join(BIN, "postgres"), "-D", data, "-k", sock, "-c", "listen_addresses=",
         "-c", "autovacuum=off", "-c", "fsync=off", "-c", "synchronous_commit=off",
         # (its dynamic shared memory in DATA/pg_dynshmem, not /dev/shm/PostgreSQL.*,
         # which a killed server left behind)
         "-c", "dynamic_shared_memory_type=mmap",
         "-c", "shared_preload_libraries=pg_stat_statements",
         "-c", f"max_connections={clients + 10}"],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log, **owner())
    for _ in range(600):
        if server.poll() is not None:
            sys.exit(f"pgbench.py: the server exited with status {server.returncode} "
                     f"(see {log.name})")
        r = subprocess.run([os.path.join(BIN, "pg_isready"), "-q", "-h", sock, "-U", USER,
                            "-d", DB], **owner())
        if r.returncode == 0:
            return server
        time.sleep(0.05)
    stop(server)
    sys.exit("pgbench.py: the server did not accept connections in 30 s")


def stop(server):
    """A fast shutdown (SIGINT), SIGKILL after 60 s; reaped."""
    if server and server.poll() is None:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


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
        stop(server)


def main(argv):
    opts, hold = {}, False
    while argv:
        a = argv.pop(0)
        if a in ("--threads", "--iterations") and argv and argv[0].isdigit() \
                and int(argv[0]) > 0:
            opts[a] = int(argv.pop(0))
        elif a in ("--dir", "--template") and argv:
            opts[a] = argv.pop(0)
        elif a == "--hold":
            hold = True
        elif a == "--quiet":
            pass
        else:
            sys.exit(f"pgbench.py: '{a}' is not allowed ({USAGE}; no --rate, --fork, --miss "
                     "or --pin)")
    template = opts.pop("--template", None)
    if len(opts) != 3:
        sys.exit(f"pgbench.py: {USAGE}")
    clients, txns, top = opts["--threads"], opts["--iterations"], opts["--dir"]
    # One CPU for the server, its backends and pgbench (inherited): on this
    # kind of VM a wake-up on the other CPU costs so much, and so unevenly,
    # that 1,000 transactions of one client took 0.3 to 2.6 s unpinned and
    # 0.20 to 0.32 s on one CPU (docs/findings/2026-12-02-pgbench-on-one-cpu.md)
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    data, sock = os.path.join(top, "data"), top
    TOP[0] = top
    server = None
    log = open(os.path.join(top, "workload.log"), "a")

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
            sys.exit("pgbench.py: pgbench printed no transaction count, tps or latency")
        statements = int(sql("SELECT sum(calls) FROM pg_stat_statements", sock, log) or 0)
    finally:
        stop(server)
        log.close()
    processed = int(done.group(1))
    each = [processed // clients + (k < processed % clients) for k in range(clients)]
    user = int((r1.children_user - r0.children_user) * 1e9)
    sys_ns = int((r1.children_system - r0.children_system) * 1e9)
    per = ",".join(
        '{"thread":%d,"cpu":-1,"start_ns":0,"wall_ns":%d,"user_ns":0,"sys_ns":0,"cpu_ns":0,'
        '"calls":%d,"late":0,"corrupted":0,"decoys":0}' % (k, t1 - t0, n)
        for k, n in enumerate(each))
    # fired: the server's own count of its query__start markers in the run:
    # pg_stat_statements' sum holds the reset's own SELECT (counted as it
    # ended, after the reset, before the hold: no probe saw its start) and
    # not the SELECT reading the sum (counted after it read; a probe saw it
    # start): the two cancel, checked with a probe printing every query
    sys.stdout.write(
        '{"format":"kit-target-record/1","build":"postgres","pid":%d,"threads":%d,'
        '"iterations":%d,"pinned":false,"clock":"CLOCK_MONOTONIC","wall_ns":%d,'
        '"process_user_ns":%d,"process_sys_ns":%d,"rate":"max","pacing":null,'
        '"machine_busy_ns":null,"proc_stat_busy_ns":null,"fork":null,"machine_source":"",'
        '"uprobe_maps":[],"fired":{"query__start":%d},'
        '"workload":{"tps":%s,"latency_ms":%s,"transactions":%d},"per_thread":[%s]}\n'
        % (os.getpid(), clients, txns, t1 - t0, user, sys_ns, statements, tps.group(1),
           lat.group(1), processed, per))


if __name__ == "__main__":
    main(sys.argv[1:])
