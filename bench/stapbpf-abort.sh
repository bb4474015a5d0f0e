#!/usr/bin/env bash
# bench/stapbpf-abort.sh: which cause does the evidence support for
# stapbpf's "printf already started" abort (bpfinterp.cxx: it reassembles
# each printf from records sent per CPU, and aborts when a printf's first
# record arrives while another's is unfinished)?  Two causes fit: a lost
# record (the perf ring buffer was full: "WARNING: lost N perf_events"), or
# two threads on one CPU interleaving their records (a uprobe's BPF program
# runs with migration disabled, not preemption).  This runs
# stp/mark-time.stp (a printf of two values a call) on the BPF runtime,
# RUNS times in each placement, and counts per placement the runs that
# aborted, the runs that warned of lost records, and the aborts without
# such a warning:
#   split     2 threads pinned to CPUs 0 and 1, stapbpf on CPU 0
#   shared    2 threads both on CPU 1, stapbpf on CPU 0 (interleaving
#             possible, the reader on a CPU of its own)
#   alone     1 thread on CPU 1, stapbpf on CPU 0 (nothing to interleave)
#   crowded   2 threads and stapbpf all on CPU 0 (the reader starved)
# A benchmark, not a test: needs root, stap (BPF runtime), two CPUs and
# `make`.  Run from anywhere:  bench/stapbpf-abort.sh [RUNS] [ITER]
# Every uprobe a crashed stapbpf leaves (p:uprobes/stapprobe_<pid>_<n>) is
# removed; nothing else is touched.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-10}
iter=${2:-20000}
case "$runs$iter" in *[!0-9]*|'') echo "stapbpf-abort: RUNS and ITER must be whole numbers" >&2; exit 2;; esac
[ "$runs" -ge 1 ] && [ "$runs" -le 1000 ] || { echo "stapbpf-abort: RUNS '$runs' is not allowed: want 1..1000" >&2; exit 2; }
[ "$iter" -ge 1 ] && [ "$iter" -le 10000000 ] || { echo "stapbpf-abort: ITER '$iter' is not allowed: want 1..10000000" >&2; exit 2; }
[ "$(nproc)" -ge 2 ] || { echo "stapbpf-abort: needs two CPUs" >&2; exit 2; }
make -s build/benchmark-sdt build/memlock-shim.so

events=/sys/kernel/tracing/uprobe_events
[ -r "$events" ] || { echo "stapbpf-abort: no $events (tracefs not mounted?)" >&2; exit 2; }
work=$(mktemp -d)
leftovers() { grep -o 'stapprobe_[0-9]*_[0-9]*' "$events" 2>/dev/null | sort || true; }
leftovers > "$work/before"
# The uprobes of a crashed stapbpf of this script: new since it started,
# and their process gone.  Anything else is not ours to remove.
remove_ours() {
	leftovers | comm -13 "$work/before" - | while read -r ev; do
		pid=${ev#stapprobe_}; pid=${pid%_*}
		[ -d "/proc/$pid" ] || echo "-:uprobes/$ev" >> "$events" || true
	done
}
cleanup() {
	remove_ours
	rm -rf "$work"
}
trap cleanup EXIT

one() {  # placement stapbpf's-cpu target-prefix threads
	local name=$1 cpu=$2 prefix=$3 threads=$4 i log aborted=0 lost=0 bare=0
	for i in $(seq "$runs"); do
		log="$work/$name-$i.log"
		# (prefix is one of the fixed strings below, never user input)
		taskset -c "$cpu" scripts/stap-bpf stp/mark-time.stp -o "$work/out" \
			-c "$prefix build/benchmark-sdt -t $threads -i $iter -p -q" >"$log" 2>&1 || true
		remove_ours
		if grep -q "printf already started" "$log"; then
			aborted=$((aborted + 1))
			grep -q "lost [0-9]* perf_events" "$log" || bare=$((bare + 1))
		fi
		if grep -q "lost [0-9]* perf_events" "$log"; then lost=$((lost + 1)); fi
	done
	printf '%-8s %s thread(s)  %d runs  aborted %d  lost records %d  aborted without a loss %d\n' \
		"$name" "$threads" "$runs" "$aborted" "$lost" "$bare"
}

echo "stp/mark-time.stp on the BPF runtime, $iter calls a thread, $(uname -r), $(nproc) CPUs"
one split 0 "" 2
one shared 0 "taskset -c 1" 2
one alone 0 "taskset -c 1" 1
one crowded 0 "taskset -c 0" 2
