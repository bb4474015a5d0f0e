"""where.py: where one event's instructions go, from make lab WHERE=1's
where.csv (scripts/lab/where.py: a run's guest instructions by kernel
function, counted by the QEMU plugin inside the target's timed loop).
Each function belongs to one step of a probe hit (STEPS, in the order a
hit takes them): the trap into the kernel, the uprobe's lookup, the
tracer's handler, the probed instruction's emulation or single-step, the
return to user space; then user space and the rest of the kernel (a timer
tick, the scheduler, the mitigations' thunks).  A configuration's cost per
event in a step is its runs' instructions there per call less its
baseline's (kin.against), in guest instructions alone.

The checks that can fail: the plugin's count of each run's window must
lie within the target's own clock for that run (under -icount one guest
ns is one instruction; runs.csv's wall_ns), short of it by RUN_SLACK and
RUN_ADDS_UP at most, and the sum of the steps per event (less the
baseline's) the clock's per event within ADDS_UP.  A window missed, an address attributed twice or a count lost
breaks the one or the other (a loss as large in the baseline's runs as in
the traced ones cancels per event; per run it does not).

Nothing to run: render/atlas.py puts the table and the plot in the
atlas's README.md (section(), plot()).
"""
import csv
import os
import re
import statistics

import configs
import kin
from record.where import USER, WHERE_CSV
from record import MEASURED
from render.formats import f_ins, normalise, table
from render.layout import DPI

PLOT = "where_by_step.png"
ADDS_UP = 0.01  # the steps' sum against the target's clock, per event
# a run's window against its clock: the window lies inside the clock's
# timed region, short of it by the clock reads alone (65 to 76 instructions
# on 6.1 to 7.3), so at most RUN_SLACK plus RUN_ADDS_UP of the run
RUN_SLACK, RUN_ADDS_UP = 200, 0.001
OTHER = "other kernel"
# (step, what it is, the functions in it: regular expressions matched whole
# against the name less its .constprop/.isra/.part suffixes); first match wins.
STEPS = [
    ("trap entry", "the int3 trap and the exception chain, or the optimised call's uprobe "
     "syscall", [
        r"asm_exc_int3", r"exc_int3", r"do_int3.*", r"error_entry", r"sync_regs",
        r"irqentry_enter.*", r"enter_from_user_mode", r".*notifier_call_chain", r"notify_die",
        r".*_exceptions?_notify", r"kprobe_int3_handler", r".*poke_int3_handler",
        r"uprobe_pre_sstep_notifier", r"trace_die_panic_handler", r"entry_SYSCALL_64.*",
        r"do_syscall_64", r"x64_sys_call", r"syscall_enter_from_user_mode.*",
        r"__x64_sys_uprobe", r"__do_sys_uprobe", r"prandom_u32_state",
        # the optimised call's syscall: its registers from the trampoline's stack and back
        r"_copy_(from|to)_user", r"rep_movs_alternative", r"shstk_(push|pop)"]),
    ("uprobe lookup", "which uprobe is at the trapping address: the VMA, the inode's tree", [
        r"uprobe_notify_resume", r"handle_swbp", r"find_active_uprobe.*", r"find_uprobe.*",
        r"__find_uprobe", r"uprobe_get_swbp_addr", r"is_trap_at_addr", r"arch_uprobe_ignore",
        r"mtree_load", r"mas_.*", r"find_vma.*", r"vma_lookup", r"lock_vma_under_rcu",
        r"down_read.*", r"up_read", r"mmap_read_.*", r"__rcu_read_(un)?lock", r".*srcu_read_.*",
        r"get_uprobe", r"put_uprobe", r"try_get_uprobe", r"uprobe_cmp", r"rb_find.*",
        r"hprobe_.*", r"uprobe_handle_trampoline", r"handle_syscall_uprobe",
        r"vma_is_special_mapping"]),
    ("handler", "the tracer's own work: its handler, buffer, program or module", [
        r"handler_chain", r"uprobe_dispatcher", r"_*uprobe_perf_func", r"_*uprobe_trace_func",
        r"prepare_uprobe_buffer", r"uprobe_buffer_.*", r"store_trace_args", r"fetch_.*",
        r"process_fetch_insn.*", r"trace_.*", r"tracing_.*", r"ring_buffer_.*", r"__rb_.*",
        r"rb_(commit|end_commit|move_tail|update_.*|set_commit_to_write|wakeups|"
        r"time_stamp|reserve_next_event|try_to_discard|add_timestamp)", r"_*perf_.*",
        r"_*bpf_.*", r"uprobe_prog_run", r"memcpy.*", r"native_sched_clock",
        r"sched_clock.*", r"ktime_get.*", r"mutex_(un)?lock", r"__mutex_.*",
        r"migrate_(en|dis)able", r"_stp_.*", r"stp_.*", r"\[module area: .*\]",
        r"_*htab_.*", r"lookup_nulls_elem_raw", r"memcmp", r"jhash.*", r"uprobe_multi_link_.*"]),
    ("emulation or single-step", "the probed instruction emulated or stepped in its XOL "
     "slot, and whether to optimise the site", [
        r".*_emulate_op", r"arch_uprobe_skip_sstep", r"arch_uprobe_(pre|post|abort)_xol",
        r"arch_uprobe_xol_was_trapped", r"pre_ssout", r"xol_.*", r"get_xol_.*",
        r"__create_xol_area", r"handle_singlestep", r"uprobe_post_sstep_notifier",
        r"(asm_|noist_)?exc_debug.*", r"user_(en|dis)able_single_step", r"enable_step",
        r"set_task_blockstep", r"uprobe_deny_signal", r"arch_uprobe_copy_ixol",
        r"default_(pre|post)_xol_op", r"riprel_.*", r"notify_debug", r"arch_uprobe_optimize",
        r"should_optimize", r"pv_native_(get|set)_debugreg", r"recalc_sigpending",
        r"uprobe_copy_from_page", r"copy_to_page"]),
    ("return", "back to user space", [
        r"irqentry_exit.*", r".*exit_to_user_mode.*", r"swapgs_restore_regs_and_return_to_usermode",
        r"restore_regs_and_return_to_usermode", r"error_return", r"native_irq_return_iret",
        r"native_iret", r"early_xen_iret_patch", r"fpregs_assert_state_consistent",
        r"syscall_return_via_sysret",
        r"switch_fpu_return", r"resume_user_mode_work", r"entry_SYSRETQ.*"]),
    ("user space", "the program's own extra instructions, an XOL slot, a trampoline",
     [re.escape(USER)]),
]
STEP_NAMES = [s for s, _, _ in STEPS] + [OTHER]
_RES = [(s, re.compile("|".join(f"(?:{p})" for p in pats))) for s, _, pats in STEPS]


def step_of(function):
    """The step FUNCTION's instructions belong to (OTHER if none)."""
    base = re.sub(r"(\.(constprop|isra|part|cold|llvm)\.\d+)+$", "", function)
    return next((s for s, rx in _RES if rx.fullmatch(base)), OTHER)


def load(folder):
    """FOLDER's where.csv: {config: {"runs": [{"calls", "wall", "window",
    "functions": {name: instructions}}]}}; {} if it has none."""
    path = os.path.join(folder, WHERE_CSV)
    if not os.path.exists(path):
        return {}
    runs = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            key = (r["config"], r["threads"], r["rep"])
            run = runs.setdefault(key, {"calls": int(r["calls"]), "wall": int(r["wall"]),
                                        "window": int(r["window"]), "functions": {}})
            run["functions"][r["function"]] = int(r["instructions"])
    out = {}
    for (config, _, _), run in sorted(runs.items()):
        out.setdefault(config, {"runs": []})["runs"].append(run)
    return out


def per_event(runs, what):
    """The mean over RUNS of WHAT(run) / calls."""
    return statistics.fmean(what(r) / r["calls"] for r in runs)


def breakdown(data):
    """Each traced configuration's cost per event over its baseline:
    {config: {"steps": {step: instructions}, "functions": {name: instructions},
    "plugin": the plugin's total, "clock": the target's clock's,
    "runs_add_up": each run's window within ADDS_UP of its clock,
    "adds_up": that, and the steps' sum within ADDS_UP of the clock's}}, in
    guest instructions (names in order, so sums and ties never depend on a
    set's)."""
    out = {}
    for config, d in data.items():
        base = data.get(kin.against(config))
        if kin.is_baseline(config) or not base:
            continue
        names = sorted(set().union(*(r["functions"] for r in d["runs"] + base["runs"])))
        fn = {n: per_event(d["runs"], lambda r: r["functions"].get(n, 0))
              - per_event(base["runs"], lambda r: r["functions"].get(n, 0)) for n in names}
        steps = dict.fromkeys(STEP_NAMES, 0.0)
        for n, v in fn.items():
            steps[step_of(n)] += v
        plugin = (per_event(d["runs"], lambda r: r["window"])
                  - per_event(base["runs"], lambda r: r["window"]))
        clock = (per_event(d["runs"], lambda r: r["wall"])
                 - per_event(base["runs"], lambda r: r["wall"]))
        runs = all(0 <= r["wall"] - r["window"] <= RUN_SLACK + RUN_ADDS_UP * r["wall"]
                   for r in d["runs"] + base["runs"])
        out[config] = {"steps": steps, "functions": fn, "plugin": plugin, "clock": clock,
                       "runs_add_up": runs,
                       "adds_up": runs and bool(clock) and abs(sum(steps.values()) - clock)
                       <= ADDS_UP * abs(clock)}
    return out


def in_order(rows):
    """The configurations of ROWS [(kernel head, breakdown)], the table's order."""
    order = [c.name for c in configs.CONFIGS]
    return sorted({c for _, b in rows for c in b},
                  key=lambda c: (order.index(c) if c in order else len(order), c))


def unmeasured(rows):
    """{config: its first reason} of the configurations among ROWS (a
    folder's runs.csv) with no measured run."""
    ran = {r["config"] for r in rows if r["status"] in MEASURED}
    out = {}
    for r in rows:
        if r["config"] not in ran:
            out.setdefault(r["config"], f"{r['status']}: {normalise(r.get('reason') or '?')}")
    return out


def section(rows, missing=()):
    """The README's lines: ROWS [(kernel head, breakdown)] in kernel order;
    MISSING [(config, kernel head, why)] those a kernel could not measure."""
    if not rows and not missing:
        return []
    head = ["config", "kernel", "runs", *[f"{s} [instructions/event]" if i == 0 else s
                                          for i, s in enumerate(STEP_NAMES)],
            "sum of steps", "target's clock", f"adds up (within {ADDS_UP:.0%})"]
    body, top = [], []
    for config in in_order(rows):
        for k, b in rows:
            if config not in b:
                continue
            e = b[config]
            body.append([config, k, e.get("status", "-"), *[f_ins(e["steps"][s])
                                                              for s in STEP_NAMES],
                         f_ins(sum(e["steps"].values())), f_ins(e["clock"]),
                         "yes" if e["adds_up"] else "**NO**"])
            big = sorted(e["functions"].items(), key=lambda kv: (-kv[1], kv[0]))[:5]
            top.append([config, k, "; ".join(f"{n} {f_ins(v)}" for n, v in big)])
    lines = ["", "## Where the instructions go", "",
             "Inside one event, by kernel function: the guest's instructions counted by QEMU's "
             "TCG plugin (src/plugin/where.c, built against the qemu-plugin.h of Debian's qemu "
             "source package) between the marks the target sets around its timed loop, each "
             "address named from the guest's /proc/kallsyms, per call, less the baseline's "
             "(`make lab WHERE=1`, one thread). Steps, in the order a hit takes them: "
             + "; ".join(f"**{s}**: {why}" for s, why, _ in STEPS)
             + f"; **{OTHER}**: the rest (a timer tick, the scheduler, the mitigations' "
             "thunks). Runs: the statuses of the configuration's runs (`mismatch` where the "
             "probe was never hit: a site that kernel does not fire). User space is every process's user-space instructions in the window "
             "(the target's, and a tracer's process where it runs meanwhile). Every figure is "
             "in guest instructions; each run's window is set against the target's own clock "
             "for that run (1 ns an instruction under -icount: the window lies inside it, short "
             f"by the clock reads, at most {RUN_SLACK} instructions and {RUN_ADDS_UP:.1%} of "
             f"the run), and the sum of the steps per event against the clock's (within "
             f"{ADDS_UP:.0%}): a row that misses either says NO.", ""]
    lines.append(table(head, body))
    lines += ["", "The five largest functions of each event [instructions/event]:", ""]
    lines.append(table(["config", "kernel", "functions"], top))
    if missing:
        lines += ["", "Not measured:", ""] + [f"- {c} on {k}: {why}" for c, k, why in missing]
    return lines


def plot(rows, folder):
    """PLOT in FOLDER: a stacked bar a configuration and kernel, a segment
    a step, in instructions per event; None without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    bars = [(f"{c} | {k}", b[c]["steps"]) for c in in_order(rows) for k, b in rows if c in b]
    if not bars:
        return None
    fig, ax = plt.subplots(figsize=(10, 0.35 * len(bars) + 2.4))
    left = [0.0] * len(bars)
    for s in STEP_NAMES:
        vals = [max(0.0, st[s]) for _, st in bars]
        ax.barh(range(len(bars)), vals, left=left, label=s)
        left = [a + b for a, b in zip(left, vals)]
    ax.set_yticks(range(len(bars)))
    ax.set_yticklabels([n for n, _ in bars], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("guest instructions per event, over the baseline (QEMU -icount, TCG plugin)\n"
                  "a step below its baseline drawn as 0")
    ax.set_title("where one event's instructions go, step by step")
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.1))
    fig.tight_layout()
    path = os.path.join(folder, PLOT)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
