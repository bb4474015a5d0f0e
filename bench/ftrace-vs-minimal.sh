#!/bin/sh
# bench/ftrace-vs-minimal.sh: where ftrace-sdt's extra instructions a call go
# (issue 28: the kit's ftrace-sdt cost 1,866-1,873 guest instructions a call
# where a hand-made uprobe at the marker cost 1,737-1,742).  Its answer, run
# 2026-12-02: docs/findings/2026-12-02-ftrace-sdt-against-a-hand-made-uprobe.md.
# Run it inside a lab guest, where the clock counts instructions:
#     make lab-shell        then, in the guest:   sh /kit/bench/ftrace-vs-minimal.sh
# Per repetition it prints the untraced cost a call and the cost with one
# uprobe at the marker: recording into the top-level buffer (with the
# argument, without it, under a kit-length event name) and into an instance
# (the kit's way, with and without its write of options/overwrite).  Each
# probe it makes is removed before the next; it needs root and tracefs
# (mounted here if it is not) and binutils' readelf.
set -eu
T=/sys/kernel/tracing
B=${B:-/kit/build/benchmark-sdt}
N=${N:-20000}
[ -e "$T/uprobe_events" ] || mount -t tracefs nodev "$T"
OFF=0x$(readelf -n "$B" | sed -n 's/.*Location: 0x0*\([0-9a-f]*\),.*/\1/p' | head -n 1)
run() { "$B" -i "$N" -f text | sed -n 's/.* \([0-9.]*\) ns\/call$/\1/p'; }
probe() { echo "p:$1/$2 $B:$OFF $3" >> "$T/uprobe_events"; }
unprobe() { echo "-:$1/$2" >> "$T/uprobe_events"; }
top() {
  echo > "$T/trace"
  echo 1 > "$T/events/$1/$2/enable"; printf '%s ' "$3 $(run)"; echo 0 > "$T/events/$1/$2/enable"
}
inst() {
  i="$T/instances/kx$$"; mkdir "$i"
  [ "$3" = ow ] && echo 1 > "$i/options/overwrite"
  echo 1 > "$i/events/$1/$2/enable"; printf '%s ' "instance-$3 $(run)"
  echo 0 > "$i/events/$1/$2/enable"; rmdir "$i"
}
for rep in 1 2 3; do
  printf 'rep %s [instructions a call]: plain %s ' "$rep" "$(run)"
  probe hand st "v=%di:u32"; top hand st top; inst hand st ow; inst hand st default; unprobe hand st
  probe hand st ""; top hand st top-no-argument; unprobe hand st
  g=kit12345_678; e=${g}_single_trace
  probe "$g" "$e" "v=%di:u32"; top "$g" "$e" top-kit-name; unprobe "$g" "$e"
  echo
done
