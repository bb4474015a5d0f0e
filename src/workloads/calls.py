"""calls.py: the kit's Python workload, a target as build/benchmark-* is:
each of THREADS interpreter threads makes ITERATIONS Python function calls
(of a one-line function, past a start gate), and the
script prints the kit's target record (kit-target-record/1, the fields
src/benchmark.c prints) with each thread's calls by its own count.
With --gc each call also runs gc.collect(0) (automatic collection off, no
collection at exit), so that gc__start and gc__done fire once a call: the
markers CPython 3.12+ still has (3.12 dropped function__entry and the
line markers; Debian 13's python3 is 3.13).

    /usr/bin/python3.11 -I -S src/workloads/calls.py --threads 1 --iterations 1000000 [--hold]

Run by the runner for the python-* configurations (scripts/workloads.py).
Every function__entry the interpreter fires after the start gate is one of
these calls: past the gate the script runs no other Python function (no
import, comprehension or generator; the record is formatted with %, which is
C), so a tracer that counts that marker must see exactly THREADS x
ITERATIONS.  Every function__return past the gate is one of these calls
returning, or one of two frames more: each thread's work() (once a
thread) and the main module at exit.  The record's "fired" says both, from
the threads' own counts.  With --hold the main thread, once every thread is at its gate
(each thread's own entry fired before it), reads one byte from stdin: the
runner waits for that read (workloads.wait_held), attaches and raises
semaphores, then sends the byte.  Needs only the interpreter.
"""
import _thread
import os
import resource
import sys
import time

USAGE = "usage: calls.py --threads N --iterations N [--hold] [--quiet] [--pin] [--gc]"


def leaf(i):
    return i


def collect(i):
    # --gc: one collection of the youngest generation a call, each firing
    # gc__start and gc__done once (automatic collection is off)
    gc.collect(0)
    return i


def work(k, n, gate, ready, results, done):
    # Past the gate, n calls of leaf(), each returning 1 to the sum that
    # counts them (this function's own entry fired before the gate).
    ready.release()
    gate.acquire()
    gate.release()
    if pin:
        os.sched_setaffinity(0, {allowed[k % len(allowed)]})
    r0 = resource.getrusage(resource.RUSAGE_THREAD)
    t0 = time.monotonic_ns()
    c0 = time.thread_time_ns()
    calls = 0
    for _ in range(n):
        calls += step(1)
    t1 = time.monotonic_ns()
    c1 = time.thread_time_ns()
    r1 = resource.getrusage(resource.RUSAGE_THREAD)
    cpu = os.sched_getcpu() if hasattr(os, "sched_getcpu") else -1
    results[k] = (t0, t1, int((r1.ru_utime - r0.ru_utime) * 1e9),
                  int((r1.ru_stime - r0.ru_stime) * 1e9), c1 - c0, calls, cpu)
    done[k].release()


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (-I leaves it out)
import driver  # noqa: E402  (before the gate: no probe counts its calls)
opts, hold = driver.parse(sys.argv[1:], "calls.py", USAGE, flags=("--pin", "--gc"))
threads, iterations, pin = opts["--threads"], opts["--iterations"], opts.get("--pin", False)
step = collect if opts.get("--gc") else leaf
if step is collect:
    import gc
    gc.disable()
allowed = sorted(os.sched_getaffinity(0))
with open("/proc/self/maps", "rb") as f:
    f.read()  # (its own code's first run: before the gate, as the read after the run is not)
gate = _thread.allocate_lock()
gate.acquire()
done = [_thread.allocate_lock() for _ in range(threads)]
ready = [_thread.allocate_lock() for _ in range(threads)]
for lock in done + ready:
    lock.acquire()
results = [None] * threads
for k in range(threads):
    _thread.start_new_thread(work, (k, iterations, gate, ready[k], results, done))
for lock in ready:
    lock.acquire()  # every thread at its gate
if hold:
    sys.stdin.buffer.read(1)
start = time.monotonic_ns()
gate.release()
for lock in done:
    lock.acquire()
end = time.monotonic_ns()
me = resource.getrusage(resource.RUSAGE_SELF)
with open("/proc/self/maps", "rb") as f:
    maps = f.read().decode("ascii", "replace")
seen = []
for line in maps.split("\n"):
    at = line.find("[uprobes")
    if at >= 0 and '"%s"' % line[at:] not in seen:
        seen.append('"%s"' % line[at:])
per, total = [], 0
for k in range(threads):
    t0, t1, user, sys_ns, cpu_ns, calls, cpu = results[k]
    total += calls
    per.append('{"thread":%d,"cpu":%d,"start_ns":%d,"wall_ns":%d,"user_ns":%d,"sys_ns":%d,'
               '"cpu_ns":%d,"calls":%d,"late":0,"corrupted":0,"decoys":0}'
               % (k, cpu, t0 - start, t1 - t0, user, sys_ns, cpu_ns, calls))
sys.stdout.write(
    '{"format":"kit-target-record/1","build":"python","pid":%d,"threads":%d,"iterations":%d,'
    '"pinned":%s,"clock":"CLOCK_MONOTONIC","wall_ns":%d,"process_user_ns":%d,'
    '"process_sys_ns":%d,"rate":"max","pacing":null,"machine_busy_ns":null,'
    '"proc_stat_busy_ns":null,"fork":null,"machine_source":"","uprobe_maps":[%s],'
    '"per_thread":[%s],"fired":{%s}}\n'
    % (os.getpid(), threads, iterations, "true" if pin else "false", end - start,
       int(me.ru_utime * 1e9), int(me.ru_stime * 1e9), ",".join(seen), ",".join(per),
       '"gc__start":%d,"gc__done":%d' % (total, total) if step is collect else
       '"function__entry":%d,"function__return":%d' % (total, total + threads + 1)))
if step is collect:
    # (the interpreter's own collections at exit would fire gc__start past
    # the count: none are run)
    sys.stdout.flush()
    os._exit(0)
