#!/usr/bin/env python3
"""mutants.py: what the suite guards, shown by breaking it.

    python3 tests/mutants.py            # every mutant (root; ~10 min here)
    python3 tests/mutants.py --list     # the mutants and the tests each runs
    python3 tests/mutants.py perf       # those whose name holds 'perf'

Each mutant breaks one thing the kit must get right (most: a back-end's
counting, made to assume the events instead of reading its tracer) in a
copy of the working tree (git's files and build/, the lab's cached root
file systems linked, not copied), runs
the tests that should notice, and is "killed" when one of them fails.
A mutant that survives names a hole in the suite: the script prints
each one's fate and exits 1 if any survived.  Needs what those tests
need (root and the tracers); it is not part of `make test`, which it
would slow tenfold.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import host  # noqa: E402
import leftovers  # noqa: E402
from tracers import tracefs  # noqa: E402
PLANNED = "run.threads * run.iterations"  # what a back-end that assumes would say

# (name, file, the text broken, what it becomes, the tests that must notice)
MUTANTS = [
    ("ftrace assumes its recorded events", "scripts/tracers/ftrace.py",
     "recorded = tracefs.written(stats)", f"recorded = {PLANNED}",
     ["Misses.test_ftrace_sdt"]),
    ("ftrace assumes its hits", "scripts/tracers/ftrace.py",
     "also, said = tracefs.profile_witness(self.event(run), run.build, run.threads)",
     f'also, said = ("hits", {PLANNED}), ""', ["Misses.test_ftrace_sdt"]),
    ("bpftrace's path unquoted", "scripts/tracers/bpftrace.py",
     """return f'"{path}"'""", "return path", ["Paths", "Cxx"]),
    ("perf forgets an event whose perf probe failed", "scripts/tracers/perf.py",
     "            if status != 0:\n                raise TracerError(self.add_failed(",
     "            if status != 0:\n                run.state.group = None\n"
     "                raise TracerError(self.add_failed(", ["PerfNames"]),
    ("report.md keeps every table (issue 47)", "scripts/render/runs.py",
     "lines += contents(detail) + closing", "lines += detail + closing",
     ["RealRuns"]),
    ("a plot as tall as its rows (issue 47)", "scripts/render/layout.py",
     "MAX_IN = 18", "MAX_IN = 60", ["RealRuns"]),
    ("line names on one another (issue 47)", "scripts/render/layout.py",
     "LABEL_PAD_PX = 2", "LABEL_PAD_PX = -6", ["RealRuns"]),
    ("an import circle back (issue 46)", "scripts/render/lifecycle.py",
     "from render.formats import kernel_facts", "from render.lab import kernel_facts",
     ["ImportCircles"]),
    ("Ansible's modules unpacked in the machine's /tmp (issue 45)", "scripts/fleet/playbook.py",
     "ANSIBLE_STDOUT_CALLBACK=CALLBACK, TMPDIR=scratch,", "ANSIBLE_STDOUT_CALLBACK=CALLBACK,",
     ["Quick.test_ctrl_c"]),
    ("the initramfs loads a module twice (issue 45)", "scripts/lab/initrd.py",
     "        if w[1] not in got:\n            got.append(w[1])", "        got.append(w[1])",
     ["Initramfs"]),
    ("the loop's interval is left out of the ratio's", "scripts/predict.py",
     "root = math.sqrt(ma * ma * hb * hb + ha * ha * den)",
     "root = math.sqrt(ha * ha * den)", ["Predict"]),
    ("zero is agreement again (issue 58)", "scripts/record/verdicts.py",
     'if real and status in ("ok", "agreed") and seen == 0 and not dropped:', "if False:",
     ["NeverFires"]),
    ("predicted wherever the ratio's interval holds 1 (issue 58)", "scripts/predict.py",
     "if BAND[0] <= lo and hi <= BAND[1]:", "if lo <= 1 <= hi:", ["Predict"]),
    ("time-slicing counted twice (issue 58)", "scripts/predict.py",
     "at = 1 if w.serial else t", "at = t", ["Predict"]),
    ("another command's timings size a user's rows (issue 58)", "scripts/measure/plan.py",
     'return name + (workloads.get(c.workload, args).timing_key() if c and c.workload else "")',
     "return name", ["UserTimings"]),
    ("silence.py leaves what the command left running (issue 58)", "scripts/silence.py",
     "    procs.kill_group(p, [q for q in procs.tree(p.pid) if q != p.pid])",
     "    [os.kill(q, 9) for q in procs.tree(p.pid) if q != p.pid]", ["Silence"]),
    ("bpftrace counts other processes' events as the workload's (issue 58)",
     "scripts/tracers/bpftrace.py",
     "seen, others = by.pop(run.group.id, 0), sum(by.values())",
     "seen, others = sum(by.values()), 0", ["OneCommand.test_a_second_program_counted_apart"]),
    ("the hit counter agrees with the workload's count less the others' (issue 58)",
     "scripts/record/verdicts.py", "    if also is not None and ev.others and ev.seen is not None:",
     "    if False:", ["OtherProcesses"]),
    ("a count that holds others' is priced whole (issue 58)", "scripts/stats/analysis.py",
     "(exp if exp is not None and seen > exp else seen)", "seen", ["OtherProcesses"]),
    ("SystemTap's semaphore left down in a user's command (issue 58)", "scripts/measure/kit.py",
     "raise_them = tracer.attaches and not tracer.raises_semaphores()", "raise_them = False",
     ["User.test_a_guarded_marker_in_every_tracer"]),
    ("a printf body's losses unread (issue 59)", "scripts/tracers/bpftrace.py",
     'lost = sum(int(x) for x in re.findall(r"Lost (\\d+) events", out))', "lost = 0",
     ["PrintfBody"]),
    ("a user's script's events are its calls (issue 59)", "scripts/measure/witness.py",
     "expected = int(k * calls)", "expected = calls",
     ["ScriptWitness", "test_bodies.Run.test_on_a_users_command"]),
    ("a body priced against the bare call, not beside its plainest (issue 59)",
     "scripts/stats/analysis.py", "share = overhead(c, ref, pilot_of(c))",
     'share = c.get("overhead")', ["Share"]),
    ("ftrace's stack body counted an entry an event (issue 59)", "scripts/tracers/ftrace.py",
     "per = STACK_ENTRIES if", "per = 1 if", ["test_bodies.Run.test_a_body_that_misses"]),
    ("a script's body read from its end probe too (issue 59)", "scripts/userscript.py",
     "    bare = per_event(tracer, bare)\n", "", ["Closest"]),
    ("a second BEGIN beside a bpftrace script's own (issue 59)", "scripts/userscript.py",
     '    found = tracer == "bpftrace" and first_begin(masked(text))\n    printf',
     "    found = None\n    printf", ["test_bodies.ScriptOutput.test_one_begin"]),
    ("a wing takes a format from render/ again (issue 60)", "scripts/lifecycle/kit.py",
     "from record.lifecycle import BY_COLUMNS", "from render.lifecycle import BY_COLUMNS",
     ["Floors.test_no_arrow_runs_back_up"]),
    ("a folder's kind guessed past its stamp (issue 60)", "scripts/record/__init__.py",
     "    if kind:\n        return kind\n", "", ["Kinds.test_the_stamp_and_the_files"]),
    ("a runs folder unstamped (issue 60)", "scripts/record/runs.py",
     'self.meta = {"kind": KIND, ', "self.meta = {", ["Kinds.test_every_writer_stamps"]),
    ("SCRIPT re-read by path as root (issue 67)", "scripts/userscript.py",
     "    text = path.text\n    ext", "    text = open(path).read()\n    ext",
     ["test_bodies.ScriptInput.test_read_once"]),
    ("SCRIPT's link followed (issue 67)", "scripts/userscript.py",
     "os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK", "os.O_RDONLY | os.O_NONBLOCK",
     ["test_bodies.ScriptInput.test_refused"]),
    ("SCRIPT's copy as readable as the umask lets it (issue 67)", "scripts/userscript.py",
     "os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)", "os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)",
     ["test_bodies.ScriptInput.test_read_once"]),
    ("a planted build run as root (issue 67)", "scripts/trusted.py",
     "    if os.geteuid() != 0:\n        return True", "    if True:\n        return True",
     ["PlantedBuild.test_make_never_runs"]),
    ("a planted file inside the checkout trusted (issue 67)", "scripts/trusted.py",
     "            if st.st_uid not in uids:\n                return (f\"{_what(path, st)}, in",
     "            if False:\n                return (f\"{_what(path, st)}, in",
     ["PlantedBuild.test_the_rule"]),
    ("a dormant verdict that takes a touch above 0 for dearer (issue 66)",
     "scripts/stats/paired.py", "    if lo > 0:\n        return DEARER",
     "    if hi > 0:\n        return DEARER", ["test_dormant.Interval"]),
    ("a dormant round's figure from its first A and B alone (issue 66)",
     "scripts/stats/paired.py", "return 100.0 * math.log(sum(a) / sum(b))",
     "return 100.0 * math.log(a[0] / b[0])", ["test_dormant.Interval"]),
    ("a dormant interval one rank too narrow (issue 66)", "scripts/stats/paired.py",
     "    return est, w[cut], w[len(w) - 1 - cut]", "    return est, w[cut + 1], w[len(w) - 2 - cut]",
     ["test_dormant.Interval"]),
    ("a dormant interval on the t of the rounds, outliers and all (issue 66)",
     "scripts/stats/paired.py", "    est, lo, hi = signed_rank(figures)",
     "    est, lo, hi = __import__('stats').mean_ci(figures)", ["test_dormant.Interval"]),
    ("an idle row's interval the paired t again, outliers and all (issue 66)",
     "scripts/stats/cells.py", "    if idle and ns and len(common) >= paired.MIN_PILOT:",
     "    if False:", ["test_dormant.IdleRows"]),
    ("an idle row stopping on its pilot's rounds alone (issue 66)", "scripts/stats/stopping.py",
     "    done, need = paired.replay(figures, pilot, precision_pct)",
     "    done, need = len(figures) >= pilot, pilot", ["test_dormant.IdleRows"]),
    ("SystemTap's probe by path on the file every process maps (issue 67)",
     "scripts/tracers/stap.py", "            return owncopy.wrap(cmd, *run.own_copy)",
     "            run.own_copy = None\n            return cmd",
     ["OneCommand.test_a_second_program_counted_apart"]),
    ("the loader's module raising the semaphore in the file the copy covers (issue 67)",
     "scripts/tracers/stap.py", "                semaphores.audit_on(run.env, run.own_copy[0])",
     "                pass", ["User.test_a_guarded_marker_in_every_tracer"]),
    ("libbpf assumes its count (issue 68)", "scripts/tracers/libbpf.py",
     'return Events(got["events"], 0, note,', f"return Events({PLANNED}, 0, note,",
     ["Misses.test_libbpf_sdt_count", "Misses.test_libbpf_uprobe_nop"]),
    ("libbpf assumes its buffer's records (issue 68)", "scripts/tracers/libbpf.py",
     'return Events(got["records"], got["lost"], note,', f"return Events({PLANNED}, 0, note,",
     ["Misses.test_libbpf_body_ringbuf"]),
    ("libbpf's count by path not told apart by cgroup (issue 68)", "scripts/tracers/libbpf.py",
     "str(run.group.id if run.group else 0)]", '"0"]',
     ["OneCommand.test_a_second_program_counted_apart"]),
    ("a witness run witnesses nothing (issue 68)", "scripts/measure/witness.py",
     'return bool(count(r["rep"])) or record.is_witness_run(r)', 'return bool(count(r["rep"]))',
     ["WitnessRun.test_its_count_witnesses_its_own_configurations_timed_runs"]),
    ("one witness run taken for timed runs that vary (issue 68)", "scripts/measure/witness.py",
     "{per_call(w) for w in peers or ()}\n", "set()\n",
     ["WitnessRun.test_counts_that_vary_among_the_timed_runs_stay_unverified"]),
    ("the witness run's traps the program's own count (issue 68)", "scripts/tracers/libbpf.py",
     "(SITE_TRAPS, trapped)", '(SITE_TRAPS, got["events"])',
     ["Witnessed.test_the_traps_are_the_witness"]),
    ("traps outside the loader's window taken for its witness (issue 68)",
     "scripts/tracers/libbpf.py", "if outside != 0 and also[0] == SITE_TRAPS:", "if False:",
     ["Witnessed.test_traps_outside_the_loaders_window_witness_nothing"]),
    ("the witness's uprobe event left in tracefs (issue 68)", "scripts/tracers/libbpf.py",
     "            run.state.counter.stop()\n", "            pass\n",
     ["Run.test_a_users_marker_witnessed_by_a_witness_run"]),
    ("a witness run beside one timed run (issue 68)", "scripts/measure/witness.py",
     "MIN_PEERS = 2", "MIN_PEERS = 1",
     ["WitnessRun.test_one_timed_run_beside_a_witness_run_stays_unverified"]),
    ("no witness run where nothing witnessed user-libbpf (issue 68)",
     "scripts/measure/matrix.py", "        m.witness(block, n)\n", "",
     ["Run.test_a_users_marker_witnessed_by_a_witness_run"]),
    ("the BPF floor's price the front end's whole overhead (issue 68)",
     "scripts/stats/analysis.py", '"above": overhead(c, ref, pilot_of(c))})',
     '"above": c.get("overhead")})', ["test_libbpf.Floor"]),
    ("a bystander's three counts apart witness nothing (issue 67)", "scripts/measure/witness.py",
     "APART_WITNESSES = 2", "APART_WITNESSES = 9", ["Bystander.test_three_apart_witness_one_another"]),
    ("never fires not said while others fire (issue 67)", "scripts/measure/witness.py",
     "                out[i] = against(r, seen, calls, theirs, call, apart_words(most))",
     "                continue", ["Bystander.test_never_fires_with_others_firing"]),
    ("a count not told apart witnessed by the hit counter (issue 67)", "scripts/measure/kit.py",
     "                ev = dataclasses.replace(ev, also=None)", "                pass",
     ["Bystander.test_no_cgroup_no_hit_counter_witness"]),
    ("a user's workload not the run's own (issue 60)", "scripts/workloads.py",
     'if name == USER and getattr(inputs, "user", None) is not None:', "if False:",
     ["UserTimings"]),
    ("ftrace's lifecycle counts read once it has stopped (issue 60)", "scripts/tracers/ftrace.py",
     "    COUNTS_LIVE = True", "    COUNTS_LIVE = False",
     ["TenProbes.test_ftrace", "Bystander.test_bpftrace_and_ftrace_ways"]),
    ("the guest's kit without make lab's wing (issue 60)", "scripts/lab/suite.py",
     "if os.path.realpath(d) == os.path.realpath(build) else set())",
     "if True else set())", ["PutKit"]),
    ("a witness that always agrees", "scripts/record/verdicts.py",
     "    if seen + dropped != count:\n", "    if False:\n", ["test_witness"]),
    ("a workload that varies witnesses the others", "scripts/measure/witness.py",
     """((counts, "the workload's count",""", """((set(), "the workload's count",""",
     ["test_witness"]),
    ("ftrace forgets overwritten events", "scripts/tracers/tracefs.py",
     'return stats["entries"] + stats["overrun"] + stats["read events"]',
     'return stats["entries"] + stats["read events"]', ["Matrix.test_ftrace"]),
    ("perf stat assumes its count", "scripts/tracers/perf.py",
     "seen, others = counts[None], None", f"seen, others = {PLANNED}, None",
     ["Misses.test_perf_stat_sdt"]),
    ("perf record assumes its samples", "scripts/tracers/perf.py",
     "return Events(distinct,", f"return Events({PLANNED},", ["Misses.test_perf_record_sdt"]),
    ("bpftrace assumes its count", "scripts/tracers/bpftrace.py",
     "seen = int(m.group(1)) if m else None", f"seen = {PLANNED} if m else None",
     ["Misses.test_bpftrace_sdt_count"]),
    ("lttng (disk) assumes its events", "scripts/tracers/lttng.py",
     'return Events(c["Event"],', f"return Events({PLANNED},", ["Misses.test_lttng_disk"]),
    ("lttng (flight) assumes its events", "scripts/tracers/lttng.py",
     "return Events(seen, discarded, note,", f"return Events({PLANNED}, discarded, note,",
     ["Misses.test_lttng_flight"]),
    ("uftrace assumes its calls", "scripts/tracers/uftrace.py",
     "return Events(int(m.group(1)), 0,", f"return Events({PLANNED}, 0,",
     ["Misses.test_uftrace"]),
    ("stap assumes its count", "scripts/tracers/stap_counts.py",
     "count = int(m.group(1))", f"count = {PLANNED}",
     ["Misses.test_stap_mark_empty"]),
    ("stap (module runtime) assumes its count", "scripts/tracers/stap_counts.py",
     '            text = f.read()\n        note = f"module runtime',
     '            text = f"events: {run.threads * run.iterations}"\n'
     '        note = f"module runtime', ["Quick.test_module_runtime_misses"]),
    ("the verdict takes any count for exact", "scripts/record/verdicts.py",
     "    if ev.seen == expected:\n", "    if ev.seen is not None:\n",
     ["Misses.test_bpftrace_sdt_count", "test_record"]),
    ("the kit leaves a dead tracer's uprobes", "scripts/tracers/tracefs.py",
     "for g, e, path in SPEC.findall(text)", "for g, e, path in SPEC.findall(text)[:0]",
     ["Leftovers"]),
    ("bpftrace blames its shortfall on a loss", "scripts/tracers/bpftrace.py",
     'lost = sum(int(x) for x in re.findall(r"Lost (\\d+) events", out))',
     f"lost = {PLANNED} - (seen or 0)",
     ["Misses.test_bpftrace_sdt_count"]),
    ("the verdict takes any loss for dropped", "scripts/record/verdicts.py",
     "if ev.seen is not None and ev.seen + ev.dropped == expected:",
     "if ev.seen is not None:", ["test_record"]),
    ("perf record counts its duplicate samples", "scripts/tracers/perf.py",
     "return len(set(script.splitlines()))", "return len(script.splitlines())", ["PerfLost"]),
    ("kernels before 6.18 optimise the 5-byte nop", "scripts/kernel.py",
     '"sdt-nop5": {"ENOSYS": SAFE_TRAP,', '"sdt-nop5": {"ENOSYS": ("optimised", "UNSAFE"),',
     ["KernelHistory"]),
    ("settle's tolerance doubled", "scripts/stats/stopping.py",
     "d = max(precision * abs(m0), precision_ns)",
     "d = 2 * max(precision * abs(m0), precision_ns)", ["Settle"]),
    ("the report's interval forgets the pilot", "scripts/stats/cells.py",
     "        if pilot:\n            m, lo, hi = stein_ci(diffs, pilot)",
     "        if False:\n            m, lo, hi = stein_ci(diffs, pilot)", ["Coverage"]),
    ("the runner forgets how its cells stopped", "scripts/measure/matrix.py",
     '{"rule": "stein", "pilot": args.min_runs', '{"rule": "width", "pilot": args.min_runs',
     ["Adaptive"]),
    ("the report pairs runs by sorted value", "scripts/stats/cells.py",
     "diffs = [c[k] - b[k] for k in common]",
     "diffs = [x - y for x, y in zip(sorted(c.values()), sorted(b.values()))]",
     ["Pairing"]),
    ("bpftrace's marker probe judged as attached before the binary is mapped",
     "scripts/tracers/bpftrace.py", '    marker_order = "running"', '    marker_order = "before"',
     ["Sites.test_bpftrace_meets_the_binary_mapped"]),
    ("time-sliced cells run to MAX_RUNS", "scripts/measure/sizing.py",
     "if threads > cpus() and args.sliced_runs < args.max_runs:", "if False:",
     ["Adaptive.test_time_sliced_cells_stop_at_sliced_runs"]),
    ("a cheap cell's pilot ignored by the runner (MIN_RUNS everywhere)",
     "scripts/measure/matrix.py",
     "settle(mine, self.rows.get(base, []), self.pilots[cell], top,",
     "settle(mine, self.rows.get(base, []), a.min_runs, top,",
     ["Adaptive.test_cells_stop_when_settled"]),
    ("a workload assuming its expected count (one call short, saying ITER)",
     "src/workloads/calls.py",
     "    calls = 0\n    for _ in range(n):\n        calls += step(1)",
     "    calls = n\n    for _ in range(n - 1):\n        step(1)",
     ["Python.test_each_tracer_counts_every_call"]),
    ("QUICK's stapbpf printf rows past what stapbpf keeps up with", "scripts/measure/kit.py",
     "        if cap and iterations > cap[0]:", "        if False:",
     ["Runs.test_every_configuration_counts_exactly"]),
    ("the gc workload letting the interpreter collect at exit", "src/workloads/calls.py",
     "    os._exit(0)", "    pass", ["PythonGc.test_each_tracer_counts_every_collection"]),
    ("the runner forgetting a real program's semaphores", "scripts/measure/kit.py",
     "                if cfg.semaphores:\n", "                if False:\n",
     ["Python.test_each_tracer_counts_every_call"]),
    ("the PostgreSQL workload assuming its query count (7 a transaction)",
     "src/workloads/pgbench.py",
     'statements = int(sql("SELECT sum(calls) FROM pg_stat_statements", sock, log) or 0)',
     "statements = 7 * clients * txns",
     ["Postgres.test_pgbench_traced_by_ftrace_counts_every_query"]),
    ("the runner taking a real program's calls for its marker's count",
     "scripts/measure/kit.py",
     "fired = rec[\"fired\"].get(cfg.marker)", "fired = calls",
     ["Postgres.test_pgbench_traced_by_ftrace_counts_every_query"]),
    ("uftrace leaving a killed run's buffers in /dev/shm", "scripts/tracers/uftrace.py",
     "            for sid in self.sessions(d):", "            for sid in ():",
     ["Faults.test_uftrace_killed"]),
    ("the PostgreSQL cleanup leaving the cluster's folder", "scripts/pgcluster.py",
     "            if not held.remove():", "            if held.close():",
     ["Postgres.test_stopped_mid_run_leaves_no_cluster"]),
    ("the Python workload counting its returns as its calls", "src/workloads/calls.py",
     "total, total + threads + 1))", "total, total))",
     ["Python.test_each_tracer_counts_every_call"]),
    ("the fleet taking an unreachable host for one that ran", "scripts/fleet/pack.py",
     'if res.get("unreachable"):', "if False:", ["Quick.test_the_example_inventory"]),
    ("the lab's merge keeping each guest's copy of a family's baseline",
     "scripts/lab/merge.py", "and cell in have):", "and False):",
     ["RealPrograms.test_python_in_the_guests"]),
    ("the lab's merge reading a torn meta.json", "scripts/record/runs.py",
     "    except (json.JSONDecodeError, UnicodeDecodeError) as e:\n        return {}",
     "    except ZeroDivisionError as e:\n        return {}", ["TornMeta.test_reopen_and_add_rows"]),
    ("the median's interval one order statistic too narrow", "scripts/stats/intervals.py",
     "return med, xs[k - 1], xs[n - k], held(k)", "return med, xs[k], xs[n - k - 1], held(k)",
     ["MedianInterval.test_coverage_under_the_pilot_rule"]),
    ("lifecycle's bystander taking any count of the traced process", "scripts/lifecycle/bystanders.py",
     "elif counted != TRACED_CALLS:", "elif False:", ["Bystander.test_bpftrace_and_ftrace_ways"]),
    ("lifecycle's ftrace defining a guarded marker without its semaphore", "scripts/tracers/ftrace.py",
     "semaphore=self.sites.semaphores.get(name))", "semaphore=None)", ["TenProbes.test_ftrace"]),
    ("where: the plugin forgets user space", "src/plugin/where.c",
     "\t\tcount_insn(insn, &user_count);", "\t\t(void)user_count;",
     ["Guest.test_ftrace_in_sid"]),
    ("where: an address named by the symbol before", "scripts/lab/where.py",
     "self.names[bisect.bisect_right(self.addrs, a) - 1]",
     "self.names[bisect.bisect_right(self.addrs, a) - 2]",
     ["Symbolise.test_windows_named_and_matched"]),
    ("where: each run's window unchecked", "scripts/render/where.py",
     "runs = all(0 <= ", "runs = True or all(0 <= ",
     ["Steps.test_a_loss_in_every_run"]),
    ("where: the check adds up by construction", "scripts/render/where.py",
     "abs(sum(steps.values()) - clock)", "abs(sum(steps.values()) - plugin)",
     ["Steps.test_a_count_lost_does_not_add_up"]),
    ("two labs: one removes the other's fetched folders", "scripts/lab/steps.py",
     "    for junk in suite.fetched:",
     "    for junk in [os.path.join(suite.dir, n) for n in os.listdir(suite.dir)\n"
     "                 if n.startswith('lab-fetch-')]:", ["TwoLabs.test_each_removes_its_own"]),
    ("two labs: the root file system's lock shared", "scripts/lab/suite.py",
     "fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)", "fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)",
     ["TwoLabs.test_take_turns_with_the_root_file_system"]),
    ("two labs: the atlas takes the WHERE lab's folder for the lab's", "scripts/atlas/folders.py",
     "and not (but and n.endswith(but))", "and not (but and False)",
     ["TwoLabs.test_folders_told_apart"]),
    ("a kernel's first lab sized from another kernel before its tools' own", "scripts/lab/suite.py",
     "for t in [os.path.join(LAB_DIR, folder_name(self.userland), name), *kin]:",
     "for t in [*kin, os.path.join(LAB_DIR, folder_name(self.userland), name)]:",
     ["TwoLabs.test_first_lab_of_a_kernel_sized_from_its_tools"]),
    ("the pre-flight's answer kept whatever the target", "scripts/lab/modules.py",
     'key = f"{rel} {version(suite)} {target} {script}"', 'key = f"{rel} {version(suite)} {script}"',
     ["TwoLabs.test_preflight_answer_kept"]),
    ("the pre-flight's time-out kept", "scripts/lab/modules.py",
     "(why is None or (stap_preflight.CANNOT in why", "(why is None or True or (stap_preflight.CANNOT in why",
     ["TwoLabs.test_preflight_answer_kept"]),
    ("a stop leaves the module builds running", "scripts/tracers/stap_build.py",
     "running.stop()", "pass",
     ["TwoLabs.test_a_stop_stops_the_module_builds"]),
    ("a stop stops every child of the lab, the builds' or not", "scripts/tracers/stap_build.py",
     "running.stop()",
     "import procs; [os.killpg(p, 15) for p in procs.pids() if (s := procs.proc_stat(p)) and s[1][1] == str(os.getpid())]",
     ["TwoLabs.test_a_stop_stops_the_module_builds"]),
    ("a build that starts after the stop is waited for", "scripts/host.py",
     "            if self.stopping:", "            if False:",
     ["TwoLabs.test_a_build_that_starts_after_the_stop_is_stopped"]),
    ("the pool's builds on a terminal not known to the stop", "scripts/tracers/stap_preflight.py",
     "with host.tracked(p):", "with host.contextlib.nullcontext():",
     ["TwoLabs.test_a_stop_stops_the_builds_on_a_terminal"]),
    ("a stop waits for a build on a terminal", "scripts/tracers/stap_preflight.py",
     "host.stop(p, True, host.TOOL_GRACE_S)", "pass",
     ["TwoLabs.test_a_stop_stops_a_build_on_a_terminal"]),
    ("the fleet leaving a local host's own kit folder", "scripts/fleet/pack.py",
     "            shutil.rmtree(d, ignore_errors=True)\n", "            pass\n",
     ["Quick.test_ctrl_c_mid_run"]),
    ("the fleet leaving a local host's module folder in ~/.ansible/tmp", "fleet/playbook.yml",
     "when: inventory_hostname in kit_remote_tmp", "when: false",
     ["Quick.test_ctrl_c_mid_run"]),
    ("the lock believing the pid written in its file", "scripts/kitlock.py",
     "pids = holders(f)", "pids = [int(x) for x in f.read().split()[:1] if x.isdigit()]",
     ["OneAtATime.test_a_forged_pid_is_not_believed"]),
    ("the lock following a link", "scripts/kitlock.py",
     "flags = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC", "flags = os.O_NONBLOCK | os.O_CLOEXEC",
     ["OneAtATime.test_a_file_not_the_kits_is_refused"]),
    ("the lock taking another user's file", "scripts/kitlock.py",
     "or st.st_uid not in (0, mine):", "or False:",
     ["OneAtATime.test_a_file_not_the_kits_is_refused"]),
    ("the lock waiting for ever", "scripts/kitlock.py",
     "        if time.monotonic() >= end:", "        if False:",
     ["OneAtATime.test_a_forged_pid_is_not_believed"]),
    ("the lock's holders taken from /proc/locks alone", "scripts/kitlock.py",
     "return sorted(p for p in pids if has_open(p, st))", "return sorted(pids)",
     ["OneAtATime.test_holders_are_those_with_it_open"]),
    ("a root kit waiting on any user's hold", "scripts/kitlock.py",
     "if os.geteuid() == 0 and 0 not in map(uid_of, pids) and same_file(f, LOCK):", "if False:",
     ["OneAtATimeAsRoot"]),
    ("the lock left writable by all", "scripts/kitlock.py",
     "os.fchmod(fd, 0o644)", "pass", ["OneAtATime.test_a_file_not_the_kits_is_refused"]),
    ("the sweep following a link planted under a kit's name", "scripts/leftovers.py",
     "held = Private.found(path, owners)", "held = Private(path, os.open(path, os.O_RDONLY))",
     ["KilledKit"]),
    ("the sweep taking a name it does not make whole", "scripts/leftovers.py",
     "m = kind.fullmatch(name)", "m = kind.match(name)", ["KilledKit"]),
    ("the sweep taking a live kit's leftovers", "scripts/kitstate.py",
     'name == kit_id(pid) and start_time(pid) != start:', 'name == kit_id(pid):',
     ["KilledKit"]),
    ("the sweep taking a name no kit registered (a user's kitface_1)", "scripts/leftovers.py",
     "if kid is not None and kid in dead:", "if kid is not None:", ["KilledKit"]),
    ("the sweep leaving a dead kit's tracers running", "scripts/leftovers.py",
     "            os.kill(p, signal.SIGTERM)", "            pass", ["KilledKit"]),
    ("the PostgreSQL folders made under a name another user can plant", "scripts/pgcluster.py",
     "held = Private.make(cluster_root(), prefix, suffix, 0o711 if root else 0o700)",
     "held = Private.found(os.path.join(cluster_root(), prefix + suffix), {0, 65534}) or "
     "Private.make(cluster_root(), prefix, suffix, 0o711 if root else 0o700)",
     ["Planting.test_a_planted_template_changes_nothing"]),
    ("the next kit leaving a killed kit's uprobes", "scripts/run.py",
     'leftovers.sweep("run")', "None", ["KilledKit"]),
    ("the sweep missing a server whose folder is its working directory", "scripts/pgcluster.py",
     "procs.uid_of(pid) == owner and cwd_inode(pid) in inodes", "procs.uid_of(pid) == owner and False",
     ["KilledKit"]),
    ("lifecycle's guest report calling instructions ns", "scripts/record/lifecycle.py",
     'ICOUNT_CLOCK = ("guest s", "guest ms", "instructions",',
     'ICOUNT_CLOCK = ("guest s", "guest ms", "ns",', ["GuestClock.test_guest_folder_and_summary"]),
    ("a check that asks for root goes unnoticed", "tests/kit_test.py",
     '    if tier_of(tc) == "check":\n        tc.fail(', '    if False:\n        tc.fail(',
     ["Tiers.test_each_tier_its_own"]),
    ("the tiers run in any order", "tests/run_tests.py",
     "key=lambda t: order.index(kit_test.tier_of(t)))", "key=lambda t: -order.index(kit_test.tier_of(t)))",
     ["Tiers.test_each_tier_its_own"]),
    ("a module that cannot be imported runs in the check tier only", "tests/run_tests.py",
     'if type(t).__name__ == "_FailedTest"\n                    or (',
     'if (type(t).__name__ == "_FailedTest" and kit_test.tier_of(t) in a.tiers)\n'
     "                    or (", ["Tiers.test_an_import_failure_in_every_tier"]),
    ("a module that cannot be imported dropped by a pick (issue 67)", "tests/run_tests.py",
     'if type(t).__name__ == "_FailedTest"\n                    or (',
     'if (type(t).__name__ == "_FailedTest" and not a.pick)\n                    or (',
     ["Tiers.test_an_import_failure_whatever_the_pick"]),
    ("the guests tier beside the others, its outcomes dropped (issue 69)", "tests/run_tests.py",
     "            merge(result, outcomes, asked)\n", "", ["Tiers.test_guests_beside_the_others"]),
    ("a guests tier that died beside the others counted as nothing (issue 69)",
     "tests/run_tests.py", '        result.outcome_of["run_tests.guests_tier_beside_the_others"] '
     '= "failed"\n', "", ["Tiers.test_guests_beside_the_others"]),
    ("the guests' root file systems built in the order first named (issue 69)",
     "tests/run_tests.py", "key=lambda n: -booted.count(n))", "key=lambda n: 0)",
     ["Prebuild.test_the_first_suite_first"]),
    ("a guest test that waits for no root file system (issue 69)", "tests/run_tests.py",
     "                                or not set(kit_test.suites_of(test)) <= self.ready):",
     "                                or False):", ["Prebuild.test_the_first_suite_first"]),
    ("a Ctrl-C never reaching the lab of the guests tier beside (issue 69)",
     "tests/run_tests.py", "    os.killpg(os.getpgrp(), signal.SIGINT)\n", "",
     ["Tiers.test_a_ctrl_c_stops_the_guests_beside"]),
    ("a guest's session of its own left at the host tier's share (issue 69)", "tests/prebuild.py",
     "theirs[1] < mine[1]:", "theirs[1] < mine[1] - 99:", ["Prebuild.test_a_session_below_kept_low"]),
    ("a script that exits early timed as the whole run (issue 67)", "scripts/tracers/base.py",
     "    if live.early:\n", "    if False:\n", ["ScriptEnds"]),
    ("a script's early exit unseen by the wait (issue 67)", "scripts/measure/supervise.py",
     "                if gone:  # the tracer's own process ended, and the target runs on\n"
     "                    run.state.live.early = True\n", "", ["ScriptEnds"]),
    ("a script's losses hidden by unverified (issue 67)", "scripts/stats/analysis.py",
     'elif "dropped" in statuses or dropped:', 'elif "dropped" in statuses:',
     ["ScriptLosses"]),
    ("the workload's Lost N events counted as the script's (issue 67)", "scripts/userscript.py",
     "for name in (out, err) if err else (out,):", "for name in (out, err, log):",
     ["ScriptOutput.test_lost_and_kept", "ScriptEnds"]),
    ("a second BEGIN beside one with a predicate (issue 67)", "scripts/userscript.py",
     '(("alone", BEGIN_ALONE), ("predicate", BEGIN_PREDICATE))', '(("alone", BEGIN_ALONE),)',
     ["ScriptOutput.test_one_begin_whatever_its_form"]),
    ("a second BEGIN beside one in a probe list (issue 67)", "scripts/userscript.py",
     "        m = BEGIN_LISTED.search(part.rstrip())\n", "        m = None\n",
     ["ScriptOutput.test_one_begin_whatever_its_form", "ScriptInput.test_refused"]),
    ("a kit whose cleanup failed forgotten as it ends (issue 67)", "scripts/kitstate.py",
     ' or _mine.get("left"):', ":", ["CleanupFailed"]),
    ("lava calling a call's cost an event's (issue 67)", "scripts/lava/cases.py",
     "per = unit if o[\"per\"] == \"event\" else f\"{unit}/{o[\'per\']}\"", "per = unit",
     ["Cases.test_a_call_is_not_an_event"]),
    ("the verdicts' words typed again in render/ (issue 67)", "scripts/render/summary.py",
     "    if p[\"verdict\"] in predict.GAPS:", '    if p["verdict"] in ("dearer", "cheaper"):',
     ["Predict.test_the_verdicts_one_home"]),
    ("the fleet unpacking into a folder another user may write", "fleet/library/kit_folder.py",
     "if st.st_uid != me or st.st_mode & 0o022:", "if False:",
     ["Planted.test_a_folder_not_the_connecting_users_alone"]),
    ("the fleet checking a given folder but not its parents", "fleet/library/kit_folder.py",
     "why = why_not_above(path) or why_not(path)", "why = why_not(path)",
     ["Planted.test_a_parent_another_user_may_write"]),
    ("the fleet's pack taking files git does not track", "scripts/fleet/pack.py",
     '"ls-files", "-z", "-c"]', '"ls-files", "-z", "-c", "-o", "--exclude-standard"]',
     ["KitPack.test_only_what_git_tracks"]),
    ("the fleet handing Jinja to Ansible", "scripts/fleet/hosts.py",
     "if any(j in value for j in JINJA):", "if False:",
     ["Refused.test_a_knob_with_jinja", "Refused.test_a_kit_dir_with_jinja"]),
    ("the fleet missing a local host by its full name", "scripts/fleet/hosts.py",
     "if plugins[name] == LOCAL and (d or root):",
     'if v.get("ansible_connection") == "local" and (d or root):',
     ["Refused.test_a_local_host_by_its_full_name_over_the_checkout"]),
    ("the runner woken every POLL_S during an untraced run (the tick)",
     "scripts/measure/supervise.py", "quiet = ended is not None and",
     "quiet = False and ended is not None and", ["WaitLoop"]),
    ("a guest's runs at one phase of the kernel's tick", "scripts/measure/kit.py",
     "dephase=self.args.unit == record.INSTRUCTIONS", "dephase=False",
     ["WaitLoop.test_a_guest_runs_at_a_random_phase_of_the_tick"]),
    ("a held target released at one phase of the tick", "scripts/measure/supervise.py",
     "                if dephase:\n                    pause(None, random.uniform(0, TICKS_S))\n",
     "", ["WaitLoop.test_a_guest_runs_at_a_random_phase_of_the_tick"]),
    ("a script's early end unseen while the wait sleeps", "scripts/measure/supervise.py",
     "and not tracer.live_watched(run)", "", ["ScriptEnds"]),
    ("the tick's random phase drawn from nothing", "scripts/measure/supervise.py",
     "pause(None, random.uniform(0, TICKS_S))\n        with", "pass\n        with",
     ["WaitLoop.test_a_guest_runs_at_a_random_phase_of_the_tick"]),
    ("a base image made for every lab", "scripts/lab/suite.py",
     'if os.path.exists(self.base) and plan.load(made) == {',
     'if False and plan.load(made) == {', ["BaseImage"]),
    ("the kit left in the base image", "scripts/lab/suite.py",
     "shutil.rmtree(self.kit, ignore_errors=True)  # put_kit's copy, made anew for each lab\n"
     "        os.makedirs(self.kit)", "os.makedirs(self.kit, exist_ok=True)", ["BaseImage"]),
    ("guests writing to the base image they share", "scripts/lab/qemu.py",
     ",snapshot=on", "", ["Quick.test_quick_lab"]),
    ("libbpf's lifecycle counts never read", "scripts/tracers/libbpf.py",
     "got = {n: int(c) for n, c in SITE_COUNTS.findall(self.said())}", "got = {}",
     ["TenProbes.test_libbpf"]),
    ("libbpf's bystander way attached to every process", "scripts/tracers/libbpf.py",
     "str(self.pid_filter or -1)", '"-1"', ["LibbpfPid"]),
    ("the fleet without each host's floor", "scripts/render/fleet.py",
     'floor = floor_paragraphs([(f"On {n}', 'floor = [] and floor_paragraphs([(f"On {n}',
     ["Floor.test_each_hosts_floor_in_the_fleet"]),
    ("the guest without its drive of the kit", "scripts/lab/qemu.py",
     '"-drive", f"file={self.img},format=raw,if=virtio",', "", ["Quick.test_quick_lab"]),
    ("the fleet dropping what came back on Ctrl-C", "scripts/fleet/playbook.py",
     'got = gather(fleet, {h: {"status": "failed", "reason": INTERRUPTED} for h in hosts})',
     'got = {h: {"status": "failed", "reason": INTERRUPTED, "bytes": None} for h in hosts}',
     ["Quick.test_ctrl_c_keeps_what_came_back"]),
]

LINKED = host.ROOT_FILE_SYSTEMS  # build/'s root file systems: linked, never copied


def copy_tree(dst):
    files = subprocess.run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard"],
                           stdout=subprocess.PIPE, text=True, check=True).stdout.split("\n")
    for f in filter(None, files):
        src = os.path.join(ROOT, f)
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(os.path.join(dst, f)), exist_ok=True)
            shutil.copy2(src, os.path.join(dst, f))
    # build/ copied (the lab copies it into its guests, so no links to
    # outside), but for the lab's cached root file systems and the trixie
    # userland, linked (a root file system's /dev/full copied as a file is
    # as large as the disk: it filled one), and perf's build-id cache, left
    # out (it names the original's paths, and perf probe then refuses the
    # copy's binaries)
    build = os.path.join(ROOT, "build")
    shutil.copytree(build, os.path.join(dst, "build"), symlinks=True,
                    ignore=shutil.ignore_patterns(*LINKED, leftovers.SCRATCH_GLOB, "perf-buildid"))
    for name in LINKED:
        if os.path.isdir(os.path.join(build, name)):
            os.symlink(os.path.join(build, name), os.path.join(dst, "build", name))


def uprobe_events():
    """(uprobe_events' lines, the tracing instances' names), as sets."""
    with tracefs.private() as t:
        if not t:
            return set(), set()
        with open(os.path.join(t, "uprobe_events")) as f:
            return set(f.read().splitlines()), set(os.listdir(os.path.join(t, "instances")))


def remove_new(before):
    """A mutant that breaks cleanup leaves uprobe events (and the kit's
    tracing instances that hold them enabled) behind: remove those that
    were not there before it ran; returns how many."""
    events, instances = uprobe_events()
    new, inst = events - before[0], instances - before[1]
    with tracefs.private() as t:
        specs = [m for m in map(tracefs.SPEC.match, new) if m]
        for name in inst if t else ():
            for m in specs:
                tracefs.remove_instance(os.path.join(t, "instances", name),
                                        f"{m.group(1)}/{m.group(2)}")
            if os.path.isdir(os.path.join(t, "instances", name)):
                os.rmdir(os.path.join(t, "instances", name))
        for m in specs if t else ():
            tracefs.write(os.path.join(t, "uprobe_events"), f"-:{m.group(1)}/{m.group(2)}")
    return len(new) + len(inst)


def run_mutant(name, path, old, new, tests):
    """'killed by TEST', or 'SURVIVED' (or why it could not run)."""
    before = uprobe_events()
    try:
        return mutant(path, old, new, tests)
    finally:
        left = remove_new(before)
        if left:
            print(f"  ({name}: removed the {left} uprobe events and instances it left)",
                  flush=True)


def mutant(path, old, new, tests):
    """The mutant's fate; with OLD == NEW, the control run of TESTS."""
    with tempfile.TemporaryDirectory(prefix="kit-mutant-") as d:
        copy_tree(d)
        p = os.path.join(d, path)
        with open(p) as f:
            text = f.read()
        if old and text.count(old) != 1:
            return f"NOT APPLIED: '{old.strip()}' is in {path} {text.count(old)} times, not once"
        with open(p, "w") as f:
            f.write(text.replace(old, new))
        for t in tests:
            r = subprocess.run([sys.executable, os.path.join(d, "tests", "run_tests.py"), t],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               cwd=d, env=dict(os.environ, CI="true"))
            # the closing line is the last such line (a test's own message
            # may quote a sample suite's)
            ms = re.findall(r"^(\d+) passed, (\d+) failed, (\d+) skipped$", r.stdout, re.M)
            m = ms and [None, *ms[-1]]
            if not m:
                return f"NO RESULT from {t}: {r.stdout[-300:]}"
            if int(m[2]):
                # A kill is an assertion of the named tests failing (unittest's
                # FAIL), not any failure: an ERROR (an exception, a flaky
                # tool) kills nothing.
                failed = re.findall(r"^FAIL: (\S+) \(([\w.]+)\)", r.stdout, re.M)
                hit = [tid for _, tid in failed if t in tid]
                if not hit:
                    return f"NOT KILLED: {t} failed, but by no assertion: {r.stdout[-300:]}"
                why = [ln.strip() for ln in r.stdout.splitlines()
                       if ln.strip().startswith("AssertionError")]
                return f"killed by {hit[0]}" + (f": {why[0][:120]}" if why else "")
            if not int(m[1]):
                return f"NO TEST RAN for {t}"
    return "SURVIVED"


def main(argv):
    pick = [a for a in argv if not a.startswith("--")]
    chosen = [m for m in MUTANTS if not pick or any(p in m[0] for p in pick)]
    if "--list" in argv:
        for name, path, _, _, tests in chosen:
            print(f"{name:<42} {path:<28} {' '.join(tests)}")
        return 0
    # The control: the same tests on the tree as it is must pass, or a
    # "kill" would mean nothing.
    tests = sorted({t for m in chosen for t in m[4]})
    control = mutant("README.md", "", "", tests)
    print(f"{'control (nothing broken)':<42} "
          + ("every test passed" if control == "SURVIVED" else control), flush=True)
    if control != "SURVIVED":
        print("\nthe control run failed: fix the suite before reading the mutants")
        return 1
    survived = 0
    for m in chosen:
        fate = run_mutant(*m)
        survived += not fate.startswith("killed")
        print(f"{m[0]:<42} {fate}", flush=True)
    print(f"\n{len(chosen) - survived} of {len(chosen)} mutants killed")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
