/* fentry-push.h: nothing traced, but single_trace clobbers a callee-saved
 * register, so it must save it: its first instruction is `push %rbx`, the
 * kind of entry a probe on a real function usually meets (the kernel's BPF
 * bench_trigger uprobe-push).  Compare with plain (`ret` first) and
 * fentry-nop (`nop` first). */
#define TRACE_SINGLE(v) __asm__ volatile("" : : "r"(v) : "rbx")
