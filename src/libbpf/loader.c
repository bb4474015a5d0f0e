/* loader.c: build/kit-libbpf, the libbpf back-end's loader
 * (scripts/tracers/libbpf.py): loads one program of kit.bpf.c through its
 * skeleton, attaches it as a libbpf agent does, says when it is live, and
 * at SIGINT or SIGTERM detaches and prints its counts.
 *
 *   kit-libbpf [--witness] PROGRAM BINARY PROVIDER:NAME [PID [CGROUP_ID [RING_BYTES]]]
 *   kit-libbpf uprobe_nop BINARY +OFFSET [PID ...]
 *   kit-libbpf sdt_site BINARY PROVIDER:NAME,NAME... [PID]   (make lifecycle's)
 *   kit-libbpf --version         the libbpf it runs on
 *
 * PROGRAM: sdt_count, sdt_arg, sdt_ringbuf, sdt_perfbuf or sdt_map_tid on
 * the marker PROVIDER:NAME (bpf_program__attach_usdt: libbpf reads the
 * marker's note, gives the kernel its semaphore's reference counter, and
 * its argument spec to bpf_usdt_arg), or uprobe_nop on the file offset
 * OFFSET (hex; bpf_program__attach_uprobe, no spec), or sdt_site on each
 * marker NAME of PROVIDER (up to MAX_SITES), its index the probe's cookie,
 * a count a site (make lifecycle's: scripts/tracers/libbpf.py's Attached).  PID: that process
 * alone, -1 (the default) every process mapping BINARY; CGROUP_ID, not 0:
 * that cgroup's events counted apart from the others'.  --witness: the
 * kernel counts the program's runs itself (BPF_ENABLE_STATS, held from
 * before the attach until the count is read; every BPF program's runs are
 * timed while it is held, so a witness run is never a timed one), and
 * "runs: N" is printed with the counts (measure/witness.py's witness run).
 *
 * stdout: "kit: probes live" once attached (the kit then releases its
 * target), then at the end, detached, one "name: value" a line: events, others,
 * arg_sum, lost (records with no room, or map entries refused), records
 * (the ring or perf buffer's records this loader consumed), lost_samples
 * (those the perf buffer says it dropped), runs and recursion_misses
 * (--witness: the kernel's count of the program's runs, and of those it
 * skipped); sdt_site's, "site NAME: count" a line after them.  stderr: libbpf's own words.
 * Exit 0, else 1 with the reason on stderr.  Its link, maps and programs
 * are file descriptors: they go with the process, a SIGKILL included. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kit.skel.h"
#include "sites.h" /* MAX_SITES */

#define LIVE_LINE "kit: probes live" /* tracers/base.py's LIVE_LINE */
#define POLL_MS 100
#define DEFAULT_RING_BYTES (4u << 20)
#define PERF_PAGES 64 /* a CPU's perf buffer, as bpftrace's default */

enum { COUNTED, OTHERS, ARG_SUM, LOST, SLOTS }; /* kit.bpf.c's slots */
static const char *const SLOT_NAMES[SLOTS] = { "events", "others", "arg_sum", "lost" };

static volatile sig_atomic_t stop;
static unsigned long long records, lost_samples;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int on_record(void *ctx, void *data, size_t size)
{
	(void)ctx, (void)data, (void)size;
	records++;
	return 0;
}

static void on_sample(void *ctx, int cpu, void *data, __u32 size)
{
	(void)ctx, (void)cpu, (void)data, (void)size;
	records++;
}

static void on_lost(void *ctx, int cpu, __u64 n)
{
	(void)ctx, (void)cpu;
	lost_samples += n;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "kit-libbpf: %s: %s\n", what, strerror(err < 0 ? -err : err));
	return 1;
}

static int number(const char *s, int base, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(s, &end, base);
	return errno || end == s || *end;
}

/* Slot SLOT of the per-CPU array FD, summed over the CPUs into *SUM. */
static int per_cpu_sum(int fd, __u32 slot, unsigned long long *sum)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *v;

	if (ncpu <= 0)
		return fail("possible CPUs", ncpu);
	v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		return fail("calloc", ENOMEM);
	if (bpf_map_lookup_elem(fd, &slot, v)) {
		free(v);
		return fail("reading the counts", errno);
	}
	*sum = 0;
	for (int c = 0; c < ncpu; c++)
		*sum += v[c];
	free(v);
	return 0;
}

/* The kernel's own counts of PROG's runs and of the runs it skipped
 * (BPF_ENABLE_STATS held): "runs" and "recursion_misses" lines. */
static int print_runs(const struct bpf_program *prog)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
		return fail("reading the program's run count", errno);
	printf("runs: %llu\nrecursion_misses: %llu\n", (unsigned long long)info.run_cnt,
	       (unsigned long long)info.recursion_misses);
	return 0;
}

/* The slots, a line each, the kernel's run count where WITNESS, then each
 * of the NSITES sites' (sdt_site). */
static int print_counts(struct kit_bpf *skel, const struct bpf_program *prog, int witness,
			char **sites, size_t nsites)
{
	unsigned long long sum;

	for (__u32 slot = 0; slot < SLOTS; slot++) {
		if (per_cpu_sum(bpf_map__fd(skel->maps.events), slot, &sum))
			return 1;
		printf("%s: %llu\n", SLOT_NAMES[slot], sum);
	}
	printf("records: %llu\nlost_samples: %llu\n", records, lost_samples);
	if (witness && print_runs(prog))
		return 1;
	for (size_t i = 0; i < nsites; i++) {
		if (per_cpu_sum(bpf_map__fd(skel->maps.by_site), (__u32)i, &sum))
			return 1;
		printf("site %s: %llu\n", sites[i], sum);
	}
	return fflush(stdout) ? fail("stdout", errno) : 0;
}

/* What the loader attaches, and to what: PROVIDER:NAME (a marker), OFFSET
 * (the raw uprobe, NAME NULL), or sdt_site's NSITES markers SITES. */
struct probe {
	pid_t pid;
	const char *binary, *provider, *name;
	size_t offset, nsites;
	char **sites;
};

/* PROG attached as P says, a link each into LINKS, *NLINKS counting those
 * made (the one that failed not among them); 0, else 1, said. */
static int attach(struct bpf_program *prog, const struct probe *p, struct bpf_link **links,
		  size_t *nlinks)
{
	for (size_t i = 0; i < (p->nsites ? p->nsites : 1); i++, (*nlinks)++) {
		LIBBPF_OPTS(bpf_usdt_opts, site, .usdt_cookie = i); /* sdt_site's index */

		if (p->nsites)
			links[i] = bpf_program__attach_usdt(prog, p->pid, p->binary, p->provider,
							    p->sites[i], &site);
		else if (p->name)
			links[i] = bpf_program__attach_usdt(prog, p->pid, p->binary, p->provider,
							    p->name, NULL);
		else
			links[i] = bpf_program__attach_uprobe(prog, false, p->pid, p->binary,
							      p->offset);
		if (!links[i])
			return fail(p->nsites ? p->sites[i] : "attaching", errno);
	}
	return 0;
}

/* The NLINKS LINKS destroyed, each NULL after: 0, else 1, said. */
static int detach(struct bpf_link **links, size_t nlinks)
{
	int err = 0;

	for (size_t i = 0; i < nlinks; i++) {
		int e = bpf_link__destroy(links[i]);

		links[i] = NULL;
		if (e)
			err = fail("detaching", e);
	}
	return err;
}

/* NAMES (NAME,NAME...) split in place into SITES; their number, or 0. */
static size_t split_sites(char *names, char **sites)
{
	size_t n = 0;

	for (char *tok = strtok(names, ","); tok; tok = strtok(NULL, ",")) {
		if (n == MAX_SITES)
			return 0;
		sites[n++] = tok;
	}
	return n;
}

int main(int argc, char **argv)
{
	long long pid = -1, cgroup = 0, ring_bytes = DEFAULT_RING_BYTES, offset = 0;
	struct ring_buffer *rb = NULL;
	struct perf_buffer *pb = NULL;
	struct bpf_program *prog;
	struct bpf_link **links = NULL;
	size_t nlinks = 0, nsites = 0;
	static char *sites[MAX_SITES];
	struct kit_bpf *skel;
	char *probe, *name = NULL;
	struct sigaction sa;
	sigset_t stops, old;
	int err = 0, witness = 0, stats = -1;

	if (argc == 2 && !strcmp(argv[1], "--version")) { /* the library it runs on */
		printf("libbpf %u.%u\n", libbpf_major_version(), libbpf_minor_version());
		return fflush(stdout) ? 1 : 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--witness")) {
		witness = 1;
		argc--, argv++;
	}
	/* PID -1 or a process's (never 0: the loader itself); a cgroup id; a
	 * ring's bytes that its map's 32 bits hold */
	if (argc < 4 || argc > 7 ||
	    (argc > 4 && (number(argv[4], 10, &pid) || pid == 0 || pid < -1 || pid > INT_MAX)) ||
	    (argc > 5 && (number(argv[5], 10, &cgroup) || cgroup < 0)) ||
	    (argc > 6 && (number(argv[6], 10, &ring_bytes) || ring_bytes <= 0 ||
			  ring_bytes > UINT32_MAX))) {
		fprintf(stderr, "usage: kit-libbpf [--witness] PROGRAM BINARY PROVIDER:NAME|+OFFSET "
				"[PID [CGROUP_ID [RING_BYTES]]]\n"
				"       kit-libbpf sdt_site BINARY PROVIDER:NAME,NAME... [PID]\n");
		return 2;
	}
	probe = argv[3];
	if (probe[0] == '+') {
		if (number(probe + 1, 16, &offset) || offset <= 0)
			return fail("the offset", EINVAL);
	} else if (!(name = strchr(probe, ':')) || name == probe || !name[1]) {
		return fail("PROVIDER:NAME", EINVAL);
	} else {
		*name++ = '\0';
	}
	if (!strcmp(argv[1], "sdt_site") && (!name || !(nsites = split_sites(name, sites))))
		return fail("sdt_site's NAME,NAME... (1 to MAX_SITES, sites.h)", EINVAL);
	/* SIGINT and SIGTERM held until the loop waits for them: one that
	 * comes while it attaches is kept, and the counts are still printed */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &stops, &old) || sigaction(SIGINT, &sa, NULL) ||
	    sigaction(SIGTERM, &sa, NULL))
		return fail("signals", errno);
	sigdelset(&old, SIGINT); /* (where it was started with them blocked: waited for all the same) */
	sigdelset(&old, SIGTERM);

	skel = kit_bpf__open();
	if (!skel)
		return fail("opening the skeleton", errno);
	skel->rodata->cgroup_id = (__u64)cgroup;
	if ((err = bpf_map__set_max_entries(skel->maps.ring, (__u32)ring_bytes))) {
		err = fail("the ring's size", err);
		goto out;
	}
	if (nsites && (err = bpf_map__set_max_entries(skel->maps.by_site, (__u32)nsites))) {
		err = fail("the sites' map", err);
		goto out;
	}
	prog = bpf_object__find_program_by_name(skel->obj, argv[1]);
	if (!prog) {
		err = fail(argv[1], ENOENT);
		goto out;
	}
	/* the one program asked for is loaded, no other */
	for (struct bpf_program *p = bpf_object__next_program(skel->obj, NULL); p;
	     p = bpf_object__next_program(skel->obj, p))
		bpf_program__set_autoload(p, p == prog);
	if ((err = kit_bpf__load(skel))) {
		err = fail("loading", err);
		goto out;
	}
	/* the buffer's reader before the probe: no record finds it missing */
	if (prog == skel->progs.sdt_ringbuf)
		rb = ring_buffer__new(bpf_map__fd(skel->maps.ring), on_record, NULL, NULL);
	else if (prog == skel->progs.sdt_perfbuf)
		pb = perf_buffer__new(bpf_map__fd(skel->maps.perfbuf), PERF_PAGES, on_sample,
				      on_lost, NULL, NULL);
	if ((prog == skel->progs.sdt_ringbuf && !rb) || (prog == skel->progs.sdt_perfbuf && !pb)) {
		err = fail("the buffer's reader", errno);
		goto out;
	}
	/* the kernel's count from the first run on: held before the attach */
	if (witness && (stats = bpf_enable_stats(BPF_STATS_RUN_TIME)) < 0) {
		err = fail("BPF_ENABLE_STATS", errno);
		goto out;
	}
	links = calloc(nsites ? nsites : 1, sizeof(*links));
	if (!links) {
		err = fail("calloc", ENOMEM);
		goto out;
	}
	if ((err = attach(prog, &(struct probe){ .pid = (pid_t)pid, .binary = argv[2],
						 .provider = probe, .name = name,
						 .offset = (size_t)offset, .nsites = nsites,
						 .sites = sites }, links, &nlinks)))
		goto out;
	printf("%s\n", LIVE_LINE);
	if (fflush(stdout)) {
		err = fail("stdout", errno);
		goto out;
	}
	if (!rb && !pb) { /* nothing to read: asleep until told to stop */
		while (!stop)
			sigsuspend(&old);
	} else if (sigprocmask(SIG_SETMASK, &old, NULL)) {
		err = fail("signals", errno);
		goto out;
	}
	while (!stop) { /* (a signal between the test and the poll: at most POLL_MS late) */
		int got = rb ? ring_buffer__poll(rb, POLL_MS) : perf_buffer__poll(pb, POLL_MS);

		if (got < 0 && got != -EINTR) {
			err = fail("reading the buffer", got);
			goto out;
		}
	}
	/* detached first (no event after this one counts), then what is
	 * still in the buffer consumed, then the counts read */
	err = detach(links, nlinks);
	if (rb && ring_buffer__consume(rb) < 0)
		err = fail("draining the ring", errno);
	if (pb && perf_buffer__consume(pb) < 0)
		err = fail("draining the perf buffer", errno);
	err = print_counts(skel, prog, witness, sites, nsites) || err;
out:
	if (stats >= 0)
		close(stats);
	ring_buffer__free(rb);
	perf_buffer__free(pb);
	for (size_t i = 0; links && i < nlinks; i++)
		bpf_link__destroy(links[i]);
	free(links);
	kit_bpf__destroy(skel);
	return err ? 1 : 0;
}
