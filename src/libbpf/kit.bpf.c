/* kit.bpf.c: the libbpf back-end's BPF programs (scripts/tracers/libbpf.py),
 * the floor under every BPF tracer: what a probe costs attached by libbpf
 * itself, as production agents attach (bcc's libbpf-tools, libbpf-rs
 * programs), with nothing of a front end's own.  The loader (loader.c)
 * loads one of them, attaches it, and reads the counts below at the end.
 *
 * Every program counts its events in `events`, a per-CPU array (no two
 * threads share a counter, and each add is atomic: none is lost): slot 0 the counted ones, slot 1
 * the events of other cgroups where `cgroup_id` is set (a probe by path
 * fires in every process mapping the file; the workload's cgroup is
 * counted apart, as bpftrace's @events[cgroup] does).  With cgroup_id 0
 * (read-only data, frozen at load) the verifier drops the test: the
 * count's program is a lookup and an add.
 *
 * Built by make (clang's BPF target, then `bpftool gen skeleton`). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "sites.h"
#define BPF_USDT_MAX_SPEC_CNT MAX_SITES /* a spec a site of sdt_site's (sites.h) */
#include <bpf/usdt.bpf.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u64 cgroup_id = 0;

enum { COUNTED, OTHERS, ARG_SUM, LOST, SLOTS };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} events SEC(".maps");

/* make lifecycle's count a site, by the site's USDT cookie (its index in
 * the loader's list; the loader sets max_entries to the sites' number) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} by_site SEC(".maps");

/* the ring buffer body's records (the loader sizes it) */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
} ring SEC(".maps");

/* the perf buffer body's records, a buffer a CPU */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} perfbuf SEC(".maps");

/* the map body: a count keyed by thread */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} by_tid SEC(".maps");

static __always_inline void add(__u32 slot, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&events, &slot);

	/* atomic though per-CPU: a program on a uprobe_multi link (libbpf 1.3+
	 * on Linux 6.6+) runs with migration, not preemption, disabled, so two
	 * threads on one CPU could interleave a plain add and lose a count */
	if (v)
		__sync_fetch_and_add(v, n);
}

/* Counts the event; false where it is another cgroup's (counted apart,
 * and nothing else done for it). */
static __always_inline bool count(void)
{
	if (cgroup_id && bpf_get_current_cgroup_id() != cgroup_id) {
		add(OTHERS, 1);
		return false;
	}
	add(COUNTED, 1);
	return true;
}

/* libbpf-sdt-count: the marker's trap and a count. */
SEC("usdt")
int BPF_USDT(sdt_count)
{
	count();
	return 0;
}

/* libbpf-uprobe-nop: a raw uprobe on the marker's nop, no USDT spec (the
 * kernel's bench's uprobe-nop). */
SEC("uprobe")
int uprobe_nop(struct pt_regs *ctx)
{
	count();
	return 0;
}

/* libbpf-sdt-arg: the marker's argument read (its spec looked up, its
 * register read) and summed. */
SEC("usdt")
int BPF_USDT(sdt_arg, long v)
{
	if (count())
		add(ARG_SUM, (__u32)v);
	return 0;
}

/* A record of the argument into the ring buffer, the loader consuming;
 * a record with no room is counted lost. */
SEC("usdt")
int BPF_USDT(sdt_ringbuf, long v)
{
	__u64 *rec;

	if (!count())
		return 0;
	rec = bpf_ringbuf_reserve(&ring, sizeof(*rec), 0);
	if (!rec) {
		add(LOST, 1);
		return 0;
	}
	*rec = (__u32)v;
	bpf_ringbuf_submit(rec, 0);
	return 0;
}

/* The same record through this CPU's perf buffer. */
SEC("usdt")
int BPF_USDT(sdt_perfbuf, long v)
{
	__u64 rec = (__u32)v;

	if (count() && bpf_perf_event_output(ctx, &perfbuf, BPF_F_CURRENT_CPU, &rec, sizeof(rec)))
		add(LOST, 1);
	return 0;
}

/* A count keyed by thread in a shared hash map. */
SEC("usdt")
int BPF_USDT(sdt_map_tid)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 one = 1, *v;

	if (!count())
		return 0;
	v = bpf_map_lookup_elem(&by_tid, &tid);
	if (v)
		__sync_fetch_and_add(v, 1);
	else if (bpf_map_update_elem(&by_tid, &tid, &one, BPF_NOEXIST))
		add(LOST, 1);
	return 0;
}

/* make lifecycle's: one program attached by libbpf to each of N markers,
 * each with its cookie (its index), a count a site. */
SEC("usdt")
int BPF_USDT(sdt_site)
{
	__u32 site = (__u32)bpf_usdt_cookie(ctx);
	__u64 *v = bpf_map_lookup_elem(&by_site, &site);

	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}
