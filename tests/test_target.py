"""The target (src/benchmark.c): its builds' ELF notes and probe sites,
its input checks, its JSON record, and the ust build seen by LTTng."""
import json
import os
import platform
import re
import signal
import subprocess
import tempfile
import time
import unittest

from kit_test import EXPECTED, StateTest, build, need, need_build, need_root, run, unavailable
import builds
import configs
import elfinfo
from lifecycle.sites import builds_used

ALL_BUILDS = list(builds.builds())  # src/builds.tsv
FIELDS = {"format", "build", "pid", "threads", "iterations", "pinned", "clock", "wall_ns",
          "process_user_ns", "process_sys_ns", "rate", "pacing", "machine_busy_ns", "proc_stat_busy_ns",
          "machine_source", "uprobe_maps", "per_thread", "fork"}
THREAD_FIELDS = {"thread", "cpu", "start_ns", "wall_ns", "user_ns", "sys_ns", "cpu_ns", "calls",
                 "late", "corrupted", "decoys"}


def readelf_notes(path):
    out = run(["readelf", "-n", path]).stdout
    return [dict(zip(("provider", "name", "location", "semaphore", "args"), m)) for m in
            re.findall(r"Provider: (\S+)\s+Name: (\S+)\s+Location: (0x[0-9a-f]+), "
                       r"Base: 0x[0-9a-f]+, Semaphore: (0x[0-9a-f]+)\s+Arguments: (.*)", out)]


class Builds(unittest.TestCase):
    def test_one_table(self):
        """src/builds.tsv is the one list of builds: `make list` prints its
        rows in order, `make` knows a rule for each, and each build but
        the baseline's marked idle has its idle-* configuration, every
        build is some configuration's or make lifecycle's, and its row's
        cflags reach its compile line whole (the Makefile reads them once,
        their spaces as ^: none may hold ^, a comma, # or $)."""
        listed = run(["make", "-s", "--no-print-directory", "list"]).stdout.splitlines()
        self.assertEqual([ln.split()[0] for ln in listed], ALL_BUILDS)
        self.assertEqual(ALL_BUILDS[0], "plain", "the baseline first")
        for b in ALL_BUILDS:
            with self.subTest(build=b):
                r = run(["make", "-n", "-B", f"build/benchmark-{b}"])
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn(f"-DTRACE_BUILD='\"{b}\"'", r.stdout)
                cflags = builds.builds()[b].cflags
                self.assertFalse(set("^,#$") & set(cflags), cflags)
                if cflags != "-":
                    self.assertIn(f" {cflags} ", r.stdout)
                if b != "plain" and builds.builds()[b].idle:
                    self.assertEqual(configs.BY_NAME[f"idle-{b}"].build, b)
                self.assertIn(b, {c.build for c in configs.CONFIGS} | builds_used())


class Notes(unittest.TestCase):
    def test_stapsdt_notes(self):
        """Each SDT build carries exactly the expected note; others none."""
        path = os.path.join(EXPECTED, f"stapsdt-notes.{platform.machine()}.txt")
        if not os.path.exists(path):
            unavailable(self, f"no expected notes for {platform.machine()}")
        with open(path) as f:
            expected = [ln.split() for ln in f if ln.strip() and not ln.startswith("#")]
        for exp in expected:
            b = exp[0]
            with self.subTest(build=b):
                need_build(self, b)
                notes = readelf_notes(build(b))
                if exp[1] == "-":
                    self.assertEqual(notes, [])
                    continue
                self.assertEqual(len(notes), 1, notes)
                n = notes[0]
                self.assertEqual([n["provider"], n["name"], n["args"].strip()], exp[1:4])
                self.assertNotEqual(int(n["semaphore"], 16), 0, "no semaphore address")
                # The kit's own ELF reader agrees with readelf.
                e = elfinfo.Elf(build(b)).sdt_notes()[0]
                self.assertEqual(e.pc, int(n["location"], 16))
                self.assertEqual(e.semaphore, int(n["semaphore"], 16))

    # build -> the bytes at the marker's address, and the byte before it
    # where the site puts one there (sdt-nop10-at1: the nop before the
    # 10-byte nop); the canary builds carry the same sites.
    SITES = {"sdt": ("90", None), "sdt-guarded": ("90", None),
             "sdt-nop5": ("0f1f440000", None),
             "sdt-nop10": ("90662e0f1f840000000000", None),
             "sdt-nop10-at1": ("662e0f1f840000000000", "90"),
             "sdt-nop10-at1-page": ("662e0f1f840000000000", "90")}

    @unittest.skipUnless(platform.machine() == "x86_64", "x86-64 instruction bytes")
    def test_probe_sites(self):
        """Each site's bytes at the marker's address, exactly, in its build
        and its -canary build; sdt's 1-byte nop is not followed by a long one."""
        for b, (want, before) in self.SITES.items():
            for build_name in (b, b + "-canary"):
                if build_name not in ALL_BUILDS:
                    continue
                with self.subTest(build=build_name):
                    need_build(self, build_name)
                    e = elfinfo.Elf(build(build_name))
                    pc = e.sdt_notes()[0].pc
                    self.assertEqual(e.bytes_at(pc, len(want) // 2).hex(), want)
                    if before:
                        self.assertEqual(e.bytes_at(pc - 1, 1).hex(), before)
                    if b == "sdt":
                        self.assertNotEqual(e.bytes_at(pc, 5).hex(), "0f1f440000")
                    # straddling: the 10-byte nop's 5th byte starts a page
                    self.assertEqual((pc + 4) % 4096 == 0, b.endswith("-page"))

    @unittest.skipUnless(platform.machine() == "x86_64", "x86-64 instruction bytes")
    def test_entry_kinds(self):
        """single_trace's first instruction: ret (plain), nop (fentry-nop),
        push %rbx (fentry-push), the entries the function probes meet."""
        for b, first in (("plain", "c3"), ("fentry-nop", "90"), ("fentry-push", "53")):
            with self.subTest(build=b):
                need_build(self, b)
                e = elfinfo.Elf(build(b))
                self.assertEqual(e.bytes_at(e.symbol("single_trace"), 1).hex(), first)

    @unittest.skipUnless(platform.machine() == "x86_64", "the red zone is x86-64's")
    def test_canary_is_a_leaf(self):
        """A canary build's single_trace never moves %rsp (no push, sub or
        call): its sentinel at -8(%rsp) is the red zone's, and the marker
        sits between the write and the check."""
        for b in [x for x in ALL_BUILDS if x.endswith("-canary")]:
            with self.subTest(build=b):
                need_build(self, b)
                dis = run(["objdump", "-d", "--no-show-raw-insn", build(b)]).stdout
                body = dis[dis.index("<single_trace>:"):]
                body = body[:body.index("\n\n")]
                self.assertNotRegex(body, r"\s(push|sub|call)\s")
                self.assertIn("-0x8(%rsp)", body)

    def test_canary_catches_a_write(self):
        """The canary counts what it is for: gdb, stopped at the marker of
        sdt-canary on each of 50 calls, overwrites -8(%rsp) there, and the
        record says 50 corrupted calls; without gdb, 0."""
        need(self, "gdb")
        need_build(self, "sdt-canary")
        b = build("sdt-canary")
        pc = elfinfo.Elf(b).sdt_notes()[0].pc
        clean = json.loads(run([b, "-t", "1", "-i", "50", "-q"]).stdout)
        self.assertEqual(clean["per_thread"][0]["corrupted"], 0)
        at = pc - elfinfo.Elf(b).symbol("single_trace")
        # The target's record goes to a file of its own: on gdb's stdout a
        # "[Thread ... exited]" can be printed around it (seen in CI).
        with tempfile.NamedTemporaryFile("w", suffix=".gdb") as script, \
                tempfile.NamedTemporaryFile("r", suffix=".json") as out:
            script.write("set pagination off\n"
                         f"break *(single_trace + {at})\n"
                         "commands\nsilent\nset {long}($rsp - 8) = 0\ncontinue\nend\n"
                         # `run ARGS` replaces --args: the arguments go here
                         f"run -t 1 -i 50 -q > {out.name}\n")
            script.flush()
            # (gdb starts the target through $SHELL: an account whose shell is
            # nologin, `nobody`'s, would start nothing)
            r = run(["env", "SHELL=/bin/sh", "gdb", "-batch", "-nx", "-x", script.name, b],
                    timeout=120)
            recs = out.read().splitlines()
        self.assertEqual(len(recs), 1, r.stdout[-2000:] + r.stderr[-2000:])
        self.assertEqual(json.loads(recs[0])["per_thread"][0]["corrupted"], 50)

    def test_single_trace_is_a_real_call(self):
        """Every build calls single_trace ITER times: the call is not
        inlined or removed (objdump shows call sites in the loop)."""
        for b in ALL_BUILDS:
            with self.subTest(build=b):
                need_build(self, b)
                dis = run(["objdump", "-d", "--no-show-raw-insn", build(b)]).stdout
                self.assertRegex(dis, r"call\s+[0-9a-f]+ <single_trace>")

    def test_one_hot_path_layout(self):
        """The hot path's layout (benchmark.c, KIT_HOT) is the same in every
        build: single_trace at the start of a 64-byte line, and the tight
        loop's call of it at one offset within its line, that of the plain
        build (where the layout alone moved the bare call by ~25% here)."""
        want = None
        for b in ALL_BUILDS:
            with self.subTest(build=b):
                need_build(self, b)
                dis = run(["objdump", "-d", "--no-show-raw-insn", build(b)]).stdout
                st = re.search(r"^([0-9a-f]+) <single_trace>:", dis, re.M)
                loop = dis[dis.index("<tight_loop>:"):].split("\n\n")[0]
                call = re.search(r"^\s*([0-9a-f]+):\s+call\s+[0-9a-f]+ <single_trace>", loop, re.M)
                self.assertEqual(int(st.group(1), 16) % 64, 0)
                offset = int(call.group(1), 16) % 64
                want = offset if want is None else want
                self.assertEqual(offset, want, "the loop's call is elsewhere than plain's")


class Orders(unittest.TestCase):
    """--hold and --fork, the orders of probe and target (configs.ATTACH)."""

    def test_hold_waits_for_a_byte(self):
        """Held, no thread has started its loop until the byte arrives: the
        release happens at least the held time after the start, and the
        record is whole; end of file instead says so and exits 1 with no
        record."""
        p = subprocess.Popen([build("plain"), "-t", "2", "-i", "1000", "-q", "--hold"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        self.assertIsNone(p.poll(), "the held target ended before its release")
        out, err = p.communicate("\n", timeout=30)
        self.assertEqual(p.returncode, 0, err)
        rec = json.loads(out)
        self.assertEqual(sum(t["calls"] for t in rec["per_thread"]), 2000)
        r = run([build("plain"), "-t", "2", "-i", "1000", "--hold"], stdin=subprocess.DEVNULL)
        self.assertEqual((r.returncode, r.stdout), (1, ""))
        self.assertIn("--hold: stdin closed before the release", r.stderr)

    def test_fork_measures_the_child(self):
        """--fork N: the record is the child's (its pid is not the
        started process's, whose child it is) with the parent's N calls
        and their corrupted count beside it."""
        p = subprocess.Popen([build("sdt-canary"), "-t", "2", "-i", "3000", "-q",
                              "--fork", "77"], stdout=subprocess.PIPE, text=True)
        out, _ = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 0)
        rec = json.loads(out)
        self.assertNotEqual(rec["pid"], p.pid)
        self.assertEqual(rec["fork"], {"calls": 77, "corrupted": 0, "parent": p.pid})
        self.assertEqual(sum(t["calls"] for t in rec["per_thread"]), 6000)
        self.assertIsNone(json.loads(run([build("plain"), "-i", "10"]).stdout)["fork"])

    def test_fork_passes_on_a_signal(self):
        """A child killed by a signal: the parent says which and exits
        128 + its number (how a probe that breaks a forked child shows).
        The child is made to die by a soft CPU-time limit: SIGXCPU after
        1 s of CPU (no core file)."""
        r = run(["sh", "-c", f"ulimit -c 0; ulimit -St 1; exec {build('plain')} -i 1000000000000 "
                 "--fork 1"])
        self.assertEqual(r.returncode, 128 + signal.SIGXCPU, r.stderr)
        self.assertRegex(r.stderr, r"--fork: the child \(pid \d+\) was killed by signal "
                         f"{int(signal.SIGXCPU)} ")


class Record(unittest.TestCase):
    def check_record(self, b, threads, iters, extra=()):
        r = run([build(b), "--threads", str(threads), "--iterations", str(iters), *extra])
        self.assertEqual(r.returncode, 0, r.stderr)
        rec = json.loads(r.stdout)
        self.assertEqual(set(rec), FIELDS)
        self.assertEqual((rec["build"], rec["threads"], rec["iterations"]), (b, threads, iters))
        self.assertEqual(len(rec["per_thread"]), threads)
        for t in rec["per_thread"]:
            self.assertEqual(set(t), THREAD_FIELDS)
            self.assertGreater(t["wall_ns"], 0)
            self.assertLessEqual(t["start_ns"] + t["wall_ns"], rec["wall_ns"])
        # (The target's own loop count: a sanity check of the record only;
        # test_calls_counted_from_outside counts the calls independently.)
        self.assertEqual(sum(t["calls"] for t in rec["per_thread"]), threads * iters)
        # The human summary, with units, on stderr.
        self.assertRegex(r.stderr, r"ns/call")
        return rec

    def test_record_every_build(self):
        for b in ALL_BUILDS:
            with self.subTest(build=b):
                need_build(self, b)
                self.check_record(b, 3, 20000)

    def test_calls_counted_from_outside(self):
        """callgrind, which sees every call whatever the target says,
        counts threads x iterations calls of single_trace in each build:
        the loop is not cut short, unrolled into fewer calls, or inlined."""
        need(self, "valgrind", "callgrind_annotate")
        for b in ("plain", "sdt", "sdt-guarded", "sdt-nop5", "pg"):
            with self.subTest(build=b):
                need_build(self, b)
                with tempfile.TemporaryDirectory() as tmp:
                    out = os.path.join(tmp, "cg.out")
                    # SIGPROF blocked (the mask is inherited): the -pg build's
                    # profiling timer can otherwise land while valgrind runs its
                    # exit-time gmon write, whose handler is already gone, and
                    # kill it (seen once in ~10 runs).  Call counts are mcount's.
                    r = run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                             build(b), "-t", "2", "-i", "1234", "-q"], cwd=tmp,
                            preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK,
                                                                      {signal.SIGPROF}))
                    self.assertEqual(r.returncode, 0, r.stderr[-1000:])
                    tree = run(["callgrind_annotate", "--tree=caller", out]).stdout
                # The caller line `< ...:tight_loop (N x)` above `* ...:single_trace`.
                calls = re.findall(r"< \S*(?:tight_loop|worker_main)\S* \(([\d,]+)x\)[^\n]*\n"
                                   r"[^\n]*\*\s+"
                                   r"\S*:single_trace ", tree)
                self.assertEqual(sum(int(c.replace(",", "")) for c in calls), 2 * 1234, tree[:3000])

    def test_pinning(self):
        rec = self.check_record("plain", 2, 1000, ["--pin"])
        self.assertTrue(rec["pinned"])
        cpus = sorted(os.sched_getaffinity(0))
        self.assertEqual([t["cpu"] for t in rec["per_thread"]],
                         [cpus[k % len(cpus)] for k in range(2)])

    def test_text_format(self):
        r = run([build("plain"), "-t", "2", "-i", "1000", "--format", "text"])
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"benchmark-plain: 2 thread\(s\) x 1000 calls, wall [0-9.]+ s")
        self.assertEqual(r.stderr, "")


class Ust(StateTest):
    def test_lttng_sees_the_tracepoint(self):
        """`lttng list -u` lists benchmark:single_trace while the ust build runs."""
        need_build(self, "ust")
        need(self, "lttng", "lttng-sessiond")
        need_root(self)
        # Live daemons only: one stopped a moment ago may linger as a
        # zombie, which pgrep would count as running.
        from tracers.lttng import sessiond_pids
        started = set()
        if not sessiond_pids():
            run(["lttng-sessiond", "--daemonize", "--no-kernel"], check=True)
            started = sessiond_pids()
        p = subprocess.Popen([build("ust"), "-t", "1", "-i", "1000000000000", "-q"],
                             stdout=subprocess.DEVNULL)
        try:
            listing = ""
            for _ in range(50):
                listing = run(["lttng", "list", "-u"]).stdout
                if "benchmark:single_trace" in listing:
                    break
                time.sleep(0.1)
            self.assertIn("benchmark:single_trace", listing)
            self.assertIn(f"PID: {p.pid}", listing)
        finally:
            p.kill()
            p.wait()
            for pid in started:
                os.kill(pid, signal.SIGTERM)
            for _ in range(50):
                if not started & sessiond_pids():
                    break
                time.sleep(0.1)


if __name__ == "__main__":
    unittest.main()
