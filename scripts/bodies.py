"""bodies.py: the probe-body axis' table (issue 59, docs/bodies.md): per
back-end, the bodies people write, each a configuration on the body
build's marker (configs.body_rows makes the rows); the first of each
back-end is its plainest probe, beside which its others are priced
(stats/analysis.py's bodies).  `make configs` lists the rows.

Nothing to run: `import bodies`.
"""

# Each row: (name, body, env, in words): the body in the back-end's own
# terms (configs.Config's body; stap's is its script), the tracer's
# environment.  bpftrace's bodies all count as well (@events), so that every
# row's events are checked; its str() copies at most BPFTRACE_STRLEN bytes
# (64 by default; 0.17 stops at 200, later ones say BPFTRACE_MAX_STRLEN).
BODY_BUILD = "body"
# ftrace's bodies (its `body`): the string argument fetched too, or a
# stack (the kernel's by a trigger, the user's by an option), which the
# ring buffer keeps as a second entry an event
FTRACE_STRING, FTRACE_STACKS = "string", ("stacktrace", "userstack")
BPF_COUNT = "@events = count();"
BPF_PRINTF = 'printf("%d\\n", arg0);'  # a line an event: its argument (bpftrace.PRINTED)
BIG_RB_PAGES = 4096  # a larger output buffer (per CPU, pages) than bpftrace's 64
BIG_PERF_PAGES = 4096  # and than perf record's 128 (-m, per CPU, pages)


def strlen(n):
    return (f"BPFTRACE_STRLEN={n}", f"BPFTRACE_MAX_STRLEN={n}")


BODIES = {
    "bpftrace": (
        ("count", BPF_COUNT, (), "count() (a per-CPU map): the trap and the count"),
        ("empty", "", (), "{} (an empty program: the trap alone; nothing counts its events)"),
        ("map-tid", f"{BPF_COUNT} @m[tid] = count();", (), "a map keyed by thread"),
        ("hist", f"{BPF_COUNT} @h = hist(arg0);", (), "hist(arg0), a log2 histogram"),
        ("shared", f"{BPF_COUNT} @x++;", (), "@x++: one shared counter, one cache line for "
                                            "every thread"),
        ("nsecs", f"{BPF_COUNT} @t[tid] = nsecs;", (), "nsecs stored by thread"),
        *[(f"str{n}", f"{BPF_COUNT} @s[tid] = str(arg1, {n});", strlen(n) if n > 64 else (),
           f"str(arg1, {n}): a user string of {n} bytes copied and stored by thread")
          for n in (16, 64, 256)],
        ("ustack-4", f"{BPF_COUNT} @u[tid] = ustack(4);", (), "ustack(4): 4 frames of the "
                                                               "user stack (frame pointers)"),
        ("ustack", f"{BPF_COUNT} @u[tid] = ustack;", (), "ustack: the whole user stack, 18 "
                                                         "frames (frame pointers)"),
        ("ustack-count", f"{BPF_COUNT} @s[ustack] = count();", (),
         "@[ustack] = count(): a count keyed by the user stack"),
        ("printf", f"{BPF_COUNT} {BPF_PRINTF}", (),
         "printf of every event, to bpftrace's output file"),
        ("printf-big", f"{BPF_COUNT} {BPF_PRINTF}",
         (f"BPFTRACE_PERF_RB_PAGES={BIG_RB_PAGES}",),
         f"the same printf with a {BIG_RB_PAGES}-page output buffer a CPU"),
    ),
    # libbpf's: the program of src/libbpf/kit.bpf.c the loader loads
    "libbpf": (
        ("count", "sdt_count", (), "a per-CPU count (the floor)"),
        ("ringbuf", "sdt_ringbuf", (), "the argument into a BPF ring buffer, the loader "
                                       "consuming (bpf_ringbuf_reserve/submit)"),
        ("perfbuf", "sdt_perfbuf", (), "the argument into this CPU's perf buffer, the loader "
                                       "consuming (bpf_perf_event_output)"),
        ("map-tid", "sdt_map_tid", (), "a hash map keyed by thread"),
    ),
    "stap": (
        ("count", "stp/body-count.stp", (), "count only (events <<< 1)"),
        ("time", "stp/body-time.stp", (), "gettimeofday_ns() stored by thread"),
        ("string", "stp/body-string.stp", (), "user_string($arg2) stored by thread"),
        ("printf", "stp/body-printf.stp", (), "printf of every event"),
        ("ubacktrace", "stp/body-ubacktrace.stp", (), "print_ubacktrace(): the user stack, "
                                                      "printed"),
    ),
    "perf": (
        ("stat", "", (), "perf stat -e: counted in the kernel"),
        ("record", "", (), "perf record -e: every event to perf.data"),
        ("record-big", f"-m {BIG_PERF_PAGES}", (), f"perf record -m {BIG_PERF_PAGES}: a larger "
                                                   "buffer a CPU"),
        ("record-fp", "-g", (), "perf record -g: the user stack by frame pointers"),
        *[(f"record-dwarf-{n // 1024}k", f"--call-graph dwarf,{n}", (),
           f"perf record --call-graph dwarf,{n}: {n} bytes of stack copied an event")
          for n in (1024, 8192)],
    ),
    "ftrace": (
        ("record", "", (), "uprobe_events probe, the argument fetched into the ring buffer"),
        ("string", FTRACE_STRING, (), "the same and the string argument (+0(%reg):string)"),
        ("stacktrace", FTRACE_STACKS[0], (), "the same and a stacktrace trigger (the kernel's "
                                             "stack)"),
        ("userstack", FTRACE_STACKS[1], (), "the same with options/userstacktrace (the user "
                                            "stack)"),
    ),
}

STAP_PRINTING = ("printf", "ubacktrace")  # the stap bodies that print every event
BUFFERED = ("sdt_ringbuf", "sdt_perfbuf")  # libbpf's bodies that send every event to the loader
