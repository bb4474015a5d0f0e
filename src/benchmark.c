/* benchmark.c: the target every measurement of the kit runs.
 *
 * N threads are released together and each calls single_trace(i) ITER
 * times; each thread times its own loop (so a tracer's start-up is never
 * timed) and the run prints one JSON record on stdout and a readable
 * summary on stderr.  Run: build/benchmark-plain --threads 2 --iterations 1000000
 *
 * --miss N makes each thread's first N calls go to kit_decoy(), a function
 * no probe covers, and counts them as calls: a tracer then truly misses N
 * events a thread, which is how the kit's tests check that every tracer
 * back-end reads its tracer's own count (the record's "decoys" says so).
 *
 * --hold makes the target wait, its threads created and held at the start
 * gate, until a byte arrives on stdin: a runner attaches a probe to the
 * running process (its binary already mapped) and then releases it, the
 * other order from "attach, then start".  --fork N makes the process call
 * single_trace() N times (so a probe that the kernel optimises on its
 * first hit is optimised), then fork(); the child is the measured process
 * and the parent waits for it and passes on how it ended: a probe that
 * breaks a forked child shows as the child's signal.
 *
 * --linger makes the process wait, once its record is written, for a
 * byte on stdin (or its end) before it exits: make lifecycle checks that
 * a detached probe is gone from a process that still maps the binary, and
 * keeps a traced process alive while an untraced neighbour is timed.
 *
 * --rate N paces each thread to N calls per second: the same loop runs in
 * batches (about one per PACE_PERIOD_NS), and after each batch the thread
 * sleeps until that batch's absolute deadline on CLOCK_MONOTONIC (start +
 * calls so far / N), so a late wake-up is made up, never accumulated.  It
 * sleeps rather than spins because a spinning thread is busy whatever the
 * tracer costs, which would hide in-thread costs (a uprobe's trap) from
 * the CPU accounting that paced runs are for.  Without --rate (or with
 * --rate max) the loop is the tight one.  Around the release of the
 * threads and after the last one ends, the target reads the whole
 * machine's CPU time (see struct machine), so a runner can count CPU that
 * no process of its own shows (in-kernel work, other daemons).
 *
 * One source, several builds (src/builds.tsv): they differ only in the
 * trace headers forced in with `-include src/trace/HEADER.h`, which define
 * TRACE_SINGLE(v) (what single_trace contains) and may define
 * TRACE_BEFORE()/TRACE_AFTER() around it (the red-zone canary), in
 * compiler flags, and in -DTRACE_BUILD=name.
 */
/* _GNU_SOURCE (RUSAGE_THREAD, affinity) comes from the Makefile, since the
 * forced trace header may include system headers before this line. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plugin/window.h"

#if !defined(TRACE_SINGLE) || !defined(TRACE_BUILD)
#error "build with -include src/trace/BUILD.h (see the Makefile)"
#endif
#ifndef TRACE_BEFORE
#define TRACE_BEFORE() ((void)0)
#define TRACE_AFTER() ((void)0)
#endif

/* The record's "format" (scripts/record/runs.py TARGET_FORMAT reads it): the
 * runner parses a record by it, and a change of its fields changes it. */
#define RECORD_FORMAT "kit-target-record/1"
#define MAX_THREADS 1024
#define MAX_ITERATIONS 1000000000000LL /* 10^12 per thread */
#define MAX_RATE 1000000000LL /* calls per second per thread */
#define PACE_PERIOD_NS 1000000LL /* a paced batch's length at rates of 1000/s and above */
#define MAX_DURATION_MS 86400000LL /* a day */
#define MAX_FORK_CALLS 1000000LL /* --fork: calls before the fork */

enum format { FORMAT_JSON, FORMAT_TEXT };

/* Every parameter, with its default. */
struct params {
	long threads;
	long long iterations;
	long long rate; /* calls per second per thread; 0: as fast as it can */
	long long duration_ms; /* with rate: calls = rate x duration, and a cut-off */
	long long miss; /* calls per thread made to kit_decoy() instead */
	int pin;
	int hold; /* wait for a byte on stdin before releasing the threads */
	int linger; /* wait for a byte on stdin (or its end) before exiting */
	long long fork_calls; /* calls made before fork(); 0: no fork */
	enum format format;
	int quiet;
};

static const struct params defaults = {
	.threads = 1,
	.iterations = 10000000,
	.rate = 0,
	.duration_ms = 0,
	.miss = 0,
	.pin = 0,
	.hold = 0,
	.linger = 0,
	.fork_calls = 0,
	.format = FORMAT_JSON,
	.quiet = 0,
};

struct thread_result {
	long id;
	int cpu; /* pinned CPU, or -1 */
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC around the loop */
	uint64_t user_ns, sys_ns; /* RUSAGE_THREAD deltas */
	uint64_t cpu_ns; /* CLOCK_THREAD_CPUTIME_ID delta */
	uint64_t calls;
	uint64_t late; /* paced: batches that ended after their deadline */
	uint64_t corrupted; /* calls whose red-zone canary changed (canary builds) */
	uint64_t decoys; /* of the calls, those made to kit_decoy() (--miss) */
};

/* Calls of this thread whose red-zone sentinel was overwritten (only the
 * canary builds' TRACE_AFTER counts; 0 elsewhere). */
static __thread uint64_t kit_corrupted;

/* The start gate: every thread waits here until all exist, then all are
 * released at once.  (A pthread_barrier cannot be abandoned when a later
 * pthread_create fails; this gate can.) */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	long ready;
	int open;
	int abort;
} gate = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0 };

struct worker {
	pthread_t tid;
	struct thread_result r;
	long long iterations;
	long long miss; /* --miss: calls to kit_decoy() first */
	long long rate; /* 0: tight loop */
	uint64_t batch; /* paced: calls between two deadlines */
	uint64_t cutoff_ns; /* paced: a thread still behind at this long stops */
};

/* The machine's CPU time, two ways.  /proc/stat is what every monitor
 * reads, but on a kernel with tick-based accounting it is sampled at each
 * tick: a thread that wakes for 20 us every 1 ms is mostly missed.  The
 * sum of every task's /proc/PID/task/TID/schedstat (its ns on a CPU, from
 * the scheduler's clock) is exact; a task born during the window counts
 * whole, one that ended during it is lost, except the target's own
 * threads, whose window CPU is known (they are joined before the second
 * scan).  MACHINE_TASKS bounds a scan. */
#define MACHINE_TASKS 65536

struct task_ns {
	long tid;
	uint64_t ns;
};

/* Busy ns so far from /proc/stat's first line: user, nice, system, irq,
 * softirq (guest time is inside user); UINT64_MAX if unreadable. */
static uint64_t proc_stat_busy_ns(void)
{
	unsigned long long user, nice, sys, idle, iowait, irq, softirq;
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/stat", "r");
	int n;

	if (!f)
		return UINT64_MAX;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &sys, &idle, &iowait,
		   &irq, &softirq);
	fclose(f);
	if (n != 7 || hz <= 0)
		return UINT64_MAX;
	return (uint64_t)(user + nice + sys + irq + softirq) * (1000000000u / (uint64_t)hz);
}

static int by_tid(const void *a, const void *b)
{
	long x = ((const struct task_ns *)a)->tid, y = ((const struct task_ns *)b)->tid;
	return (x > y) - (x < y);
}

/* Every task's on-CPU ns into T (sorted by tid); the count, or -1 where
 * schedstat cannot be read (a kernel without CONFIG_SCHED_INFO). */
static long scan_tasks(struct task_ns *t)
{
	char path[64];
	struct dirent *p, *k;
	DIR *procs = opendir("/proc"), *tasks;
	unsigned long long ns;
	long n = 0, seen = 0, pid, tid;
	FILE *f;

	if (!procs)
		return -1;
	while ((p = readdir(procs)) && n < MACHINE_TASKS) {
		if (p->d_name[0] < '1' || p->d_name[0] > '9')
			continue;
		pid = atol(p->d_name);
		snprintf(path, sizeof(path), "/proc/%ld/task", pid);
		if (!(tasks = opendir(path)))
			continue; /* it ended */
		while ((k = readdir(tasks)) && n < MACHINE_TASKS) {
			if (k->d_name[0] < '1' || k->d_name[0] > '9')
				continue;
			tid = atol(k->d_name);
			snprintf(path, sizeof(path), "/proc/%ld/task/%ld/schedstat", pid, tid);
			if (!(f = fopen(path, "r")))
				continue;
			seen++;
			if (fscanf(f, "%llu", &ns) == 1) {
				t[n].tid = tid;
				t[n++].ns = ns;
			}
			fclose(f);
		}
		closedir(tasks);
	}
	closedir(procs);
	if (!seen)
		return -1;
	qsort(t, (size_t)n, sizeof(*t), by_tid);
	return n;
}

/* The machine's CPU over a window: machine_open() before, machine_close()
 * after; busy_ns (exact where schedstat is there, else /proc/stat's) and
 * the /proc/stat figure beside it. */
struct machine {
	struct task_ns *before;
	long n_before;
	uint64_t stat0, stat1, busy_ns;
	const char *source;
};

static void machine_open(struct machine *m)
{
	m->before = malloc(MACHINE_TASKS * sizeof(*m->before));
	m->n_before = m->before ? scan_tasks(m->before) : -1;
	m->stat0 = proc_stat_busy_ns();
}

static void machine_close(struct machine *m, uint64_t threads_ns)
{
	struct task_ns *after = malloc(MACHINE_TASKS * sizeof(*after)), *was;
	long n = (after && m->n_before >= 0) ? scan_tasks(after) : -1, i;

	m->stat1 = proc_stat_busy_ns();
	m->busy_ns = UINT64_MAX;
	m->source = "none";
	if (n >= 0) {
		m->busy_ns = threads_ns;
		m->source = "schedstat";
		for (i = 0; i < n; i++) {
			was = bsearch(&after[i], m->before, (size_t)m->n_before, sizeof(*was), by_tid);
			m->busy_ns += after[i].ns - (was && was->ns <= after[i].ns ? was->ns : 0);
		}
	} else if (m->stat0 != UINT64_MAX && m->stat1 != UINT64_MAX) {
		m->busy_ns = m->stat1 - m->stat0;
		m->source = "proc_stat";
	}
	free(after);
	free(m->before);
}

/* The hot path (single_trace and the tight loop that calls it) has one
 * layout in every build: both in their own section, each at the start of
 * a 64-byte line, the loop's first instruction 48 bytes into a line.  On
 * this project's CPU (an AMD EPYC VM) where the loop lands alone moved
 * the bare call from 1.2 to 1.5 ns per call (the instructions identical
 * to a hand-written loop's; measured by bench/floor.py), and every change
 * to this file moved it; so it is pinned, at a place measured fast here,
 * and the same in every build, so that an idle build is compared with the
 * baseline at the same layout (tests/test_target.py checks it). */
#define KIT_HOT __attribute__((noinline, section(".text.kit_hot"), aligned(64)))
/* nops before the loop: with the one `mov` GCC puts first and its 16-byte
 * loop alignment, the loop then starts 48 bytes into its line */
#define KIT_LOOP_AT "40"

/* The function every tracer probes.  It must stay a real, separate call
 * in every build: `noinline` keeps the call, and the empty volatile asm,
 * which "uses" v and clobbers memory, stops GCC from proving the body
 * pure (which would let it delete the calls of the plain build) and from
 * merging or cloning it.  It is global so the symbol is there to probe. */
KIT_HOT void single_trace(unsigned int v)
{
	TRACE_BEFORE();
	TRACE_SINGLE(v);
	TRACE_AFTER();
	__asm__ volatile("" : : "r"(v) : "memory");
}

/* What --miss calls instead of single_trace: the same shape, in no
 * probe's reach (no marker, another symbol).  -pg builds instrument it
 * too, under its own name. */
__attribute__((noinline)) void kit_decoy(unsigned int v)
{
	__asm__ volatile("" : : "r"(v) : "memory");
}

/* The tight loop, calls I..N-1 (I < N), at its pinned place (above). */
KIT_HOT static uint64_t tight_loop(uint64_t i, uint64_t n)
{
	__asm__ volatile(".p2align 6\n\t.skip " KIT_LOOP_AT ", 0x90");
	do
		single_trace((unsigned int)i);
	while (++i < n);
	return i;
}

static uint64_t ns_of(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

static uint64_t ns_of_tv(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000000u + (uint64_t)tv->tv_usec * 1000u;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* The same calls as the tight loop, in batches, each followed by a sleep
 * to its absolute deadline; returns the calls made. */
static uint64_t paced_loop(struct worker *w, uint64_t start)
{
	uint64_t i = 0, n = (uint64_t)w->iterations, end, deadline;
	struct timespec now, at;
	int err;

	while (i < n) {
		end = n - i > w->batch ? i + w->batch : n;
		for (; i < end; i++)
			single_trace((unsigned int)i);
		/* start + i / rate s, in 128 bits: i * 10^9 overflows 64 */
		deadline = start + (uint64_t)((unsigned __int128)i * 1000000000u / (uint64_t)w->rate);
		if (clock_gettime(CLOCK_MONOTONIC, &now))
			die("benchmark: clock");
		if (ns_of(&now) > deadline) {
			w->r.late++;
			if (w->cutoff_ns && ns_of(&now) - start >= w->cutoff_ns)
				break; /* it cannot keep up: the record says how far it got */
			continue;
		}
		at.tv_sec = (time_t)(deadline / 1000000000u);
		at.tv_nsec = (long)(deadline % 1000000000u);
		while ((err = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL)) == EINTR)
			;
		if (err) {
			errno = err;
			die("benchmark: clock_nanosleep");
		}
	}
	return i;
}

/* The timed loop's window, for an emulator: 7-byte nops that a CPU runs as
 * nops and that the atlas's QEMU plugin (src/plugin/where.c) reads as
 * marks (src/plugin/window.h): the pid bit by bit, then OPEN as the loop
 * starts and CLOSE as it ends.  Once a thread, outside the hot path. */
#define KIT_MARK(code) __asm__ volatile("nopl %c0(%%rax)" : : "i"(KIT_WINDOW_DISP(code)) : "memory")

static void kit_window_id(void)
{
	const unsigned long id = (unsigned long)getpid();
	int b;

	for (b = 31; b >= 0; b--) {
		if (id >> b & 1)
			KIT_MARK(KIT_WINDOW_BIT1);
		else
			KIT_MARK(KIT_WINDOW_BIT0);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct timespec t0, t1, c0, c1;
	struct rusage ru0, ru1;
	uint64_t i;
	int abort;

	pthread_mutex_lock(&gate.lock);
	gate.ready++;
	pthread_cond_broadcast(&gate.cond);
	while (!gate.open && !gate.abort)
		pthread_cond_wait(&gate.cond, &gate.lock);
	abort = gate.abort;
	pthread_mutex_unlock(&gate.lock);
	if (abort)
		return NULL;

	kit_window_id();
	if (getrusage(RUSAGE_THREAD, &ru0) || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0) ||
	    clock_gettime(CLOCK_MONOTONIC, &t0))
		die("benchmark: clock");
	KIT_MARK(KIT_WINDOW_OPEN);
	if (w->rate == 0) {
		const uint64_t n = (uint64_t)w->iterations, decoys = (uint64_t)w->miss;

		for (i = 0; i < decoys; i++)
			kit_decoy((unsigned int)i);
		if (i < n)
			i = tight_loop(i, n);
		w->r.decoys = decoys;
	} else {
		i = paced_loop(w, ns_of(&t0));
	}
	KIT_MARK(KIT_WINDOW_CLOSE);
	if (clock_gettime(CLOCK_MONOTONIC, &t1) || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1) ||
	    getrusage(RUSAGE_THREAD, &ru1))
		die("benchmark: clock");

	w->r.calls = i;
	w->r.corrupted = kit_corrupted;
	w->r.start_ns = ns_of(&t0);
	w->r.end_ns = ns_of(&t1);
	w->r.cpu_ns = ns_of(&c1) - ns_of(&c0);
	w->r.user_ns = ns_of_tv(&ru1.ru_utime) - ns_of_tv(&ru0.ru_utime);
	w->r.sys_ns = ns_of_tv(&ru1.ru_stime) - ns_of_tv(&ru0.ru_stime);
	return NULL;
}

/* Parse FLAG's VALUE as a whole decimal number in [MIN, MAX]; on anything
 * else (empty, trailing garbage, overflow, out of range) say so, with ALSO
 * (what else is allowed, or ""), and exit 2. */
static long long parse_range(const char *flag, const char *value, long long min, long long max,
			     const char *also)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(value, &end, 10);
	if (end == value || *end != '\0' || errno == ERANGE || n < min || n > max) {
		fprintf(stderr,
			"benchmark: %s '%s' is not allowed: want a whole number in %lld..%lld%s\n",
			flag, value, min, max, also);
		exit(2);
	}
	return n;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: benchmark-%s [options]\n"
		"  -t, --threads N      threads calling single_trace() (1..%d, default %ld)\n"
		"  -i, --iterations N   calls per thread (1..%lld, default %lld)\n"
		"  -r, --rate N|max     calls per second per thread (1..%lld), paced by sleeping\n"
		"                       to absolute deadlines; max (default): a tight loop\n"
		"  -d, --duration-ms N  with --rate: N ms of calls (rate x N / 1000 per thread,\n"
		"                       instead of --iterations); a thread that falls behind\n"
		"                       stops at N ms (1..%lld)\n"
		"  -m, --miss N         the first N of each thread's calls go to kit_decoy(),\n"
		"                       which no probe covers (a check that a tracer's count\n"
		"                       is read, not assumed; 0..iterations, default 0)\n"
		"  -p, --pin            pin thread k to the k-th allowed CPU (round robin)\n"
		"  -H, --hold           hold the threads at their start gate until a byte\n"
		"                       arrives on stdin (attach to a running process)\n"
		"  -L, --linger         once the record is written, wait for a byte on stdin\n"
		"                       (or its end) before exiting (detach from a live process)\n"
		"  -F, --fork N         call single_trace() N times, then fork(); the child is\n"
		"                       measured, the parent passes on how it ended (1..%lld)\n"
		"  -f, --format F       stdout gets: json (one record, default) or text\n"
		"  -q, --quiet          no human summary on stderr (with --format json)\n"
		"  -h, --help           this text\n",
		TRACE_BUILD, MAX_THREADS, defaults.threads, MAX_ITERATIONS, defaults.iterations,
		MAX_RATE, MAX_DURATION_MS, MAX_FORK_CALLS);
}

static struct params parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "rate", required_argument, NULL, 'r' },
		{ "duration-ms", required_argument, NULL, 'd' },
		{ "miss", required_argument, NULL, 'm' },
		{ "pin", no_argument, NULL, 'p' },
		{ "hold", no_argument, NULL, 'H' },
		{ "linger", no_argument, NULL, 'L' },
		{ "fork", required_argument, NULL, 'F' },
		{ "format", required_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct params p = defaults;
	int c;

	while ((c = getopt_long(argc, argv, "t:i:r:d:m:pHLF:f:qh", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			p.threads = (long)parse_range("--threads", optarg, 1, MAX_THREADS, "");
			break;
		case 'i':
			p.iterations = parse_range("--iterations", optarg, 1, MAX_ITERATIONS, "");
			break;
		case 'r':
			p.rate = strcmp(optarg, "max") == 0
					 ? 0
					 : parse_range("--rate", optarg, 1, MAX_RATE, " or max");
			break;
		case 'd':
			p.duration_ms = parse_range("--duration-ms", optarg, 1, MAX_DURATION_MS, "");
			break;
		case 'm':
			p.miss = parse_range("--miss", optarg, 0, MAX_ITERATIONS, "");
			break;
		case 'p':
			p.pin = 1;
			break;
		case 'H':
			p.hold = 1;
			break;
		case 'L':
			p.linger = 1;
			break;
		case 'F':
			p.fork_calls = parse_range("--fork", optarg, 1, MAX_FORK_CALLS, "");
			break;
		case 'f':
			if (strcmp(optarg, "json") == 0)
				p.format = FORMAT_JSON;
			else if (strcmp(optarg, "text") == 0)
				p.format = FORMAT_TEXT;
			else {
				fprintf(stderr, "benchmark: --format '%s' is not allowed: want json or text\n",
					optarg);
				exit(2);
			}
			break;
		case 'q':
			p.quiet = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (p.duration_ms && !p.rate) {
		fprintf(stderr, "benchmark: --duration-ms is allowed only with --rate N\n");
		exit(2);
	}
	if (p.miss && p.rate) {
		fprintf(stderr, "benchmark: --miss is allowed only in the tight loop (without --rate)\n");
		exit(2);
	}
	if (p.miss > p.iterations) {
		fprintf(stderr,
			"benchmark: --miss '%lld' is not allowed: want a whole number in 0..%lld "
			"(the calls per thread)\n",
			p.miss, p.iterations);
		exit(2);
	}
	if (p.duration_ms) {
		/* rate x duration, at least one call; both bounded, so no overflow */
		p.iterations = p.rate * p.duration_ms / 1000;
		if (p.iterations < 1)
			p.iterations = 1;
	}
	if (optind < argc) {
		fprintf(stderr, "benchmark: unexpected argument '%s' (options only; see --help)\n",
			argv[optind]);
		exit(2);
	}
	return p;
}

/* The k-th CPU (round robin) of those this process may run on. */
static int nth_allowed_cpu(long k)
{
	cpu_set_t set;
	int cpu, count, seen = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		die("benchmark: sched_getaffinity");
	count = CPU_COUNT(&set);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set) && seen++ == k % count)
			return cpu;
	return -1;
}

/* The kernel's uprobe mappings in this process when the threads are done,
 * which say which path a probe took: "[uprobes]", the out-of-line area a
 * trapped probe single-steps in (and where the uretprobe trampoline is),
 * or "[uprobes-trampoline]", the call an optimised probe takes; neither
 * where every hit was emulated or nothing fired.  As a JSON array. */
static void print_uprobe_maps(FILE *f)
{
	char line[512], seen[256] = "";
	const char *name;
	FILE *maps = fopen("/proc/self/maps", "r");
	int n = 0;

	fputs("[", f);
	while (maps && fgets(line, sizeof(line), maps)) {
		line[strcspn(line, "\n")] = '\0';
		name = strstr(line, "[uprobes");
		if (!name || strstr(seen, name) || strlen(seen) + strlen(name) + 2 > sizeof(seen))
			continue;
		strcat(seen, name);
		strcat(seen, "|");
		fprintf(f, "%s\"%s\"", n++ ? "," : "", name);
	}
	if (maps)
		fclose(maps);
	fputs("]", f);
}

static void print_json(FILE *f, const struct params *p, const struct worker *w, uint64_t t0,
		       uint64_t t1, const struct machine *m, uint64_t fork_corrupted)
{
	struct rusage self;
	long k;

	/* The whole process's CPU, so a runner can tell a tracer's CPU (in
	 * its rusage, which includes this child's) from the target's. */
	if (getrusage(RUSAGE_SELF, &self))
		die("benchmark: getrusage");
	fprintf(f,
		"{\"format\":\"" RECORD_FORMAT "\",\"build\":\"%s\",\"pid\":%ld,\"threads\":%ld,\"iterations\":%lld,\"pinned\":%s,"
		"\"clock\":\"CLOCK_MONOTONIC\",\"wall_ns\":%" PRIu64 ",\"process_user_ns\":%" PRIu64
		",\"process_sys_ns\":%" PRIu64 ",",
		TRACE_BUILD, (long)getpid(), p->threads, p->iterations, p->pin ? "true" : "false",
		t1 - t0, ns_of_tv(&self.ru_utime), ns_of_tv(&self.ru_stime));
	if (p->rate)
		fprintf(f, "\"rate\":%lld,\"pacing\":{\"method\":\"sleep\",\"batch\":%" PRIu64 "},",
			p->rate, w[0].batch);
	else
		fprintf(f, "\"rate\":\"max\",\"pacing\":null,");
	if (m->busy_ns != UINT64_MAX)
		fprintf(f, "\"machine_busy_ns\":%" PRIu64 ",", m->busy_ns);
	else
		fprintf(f, "\"machine_busy_ns\":null,");
	if (m->stat0 != UINT64_MAX && m->stat1 != UINT64_MAX)
		fprintf(f, "\"proc_stat_busy_ns\":%" PRIu64 ",", m->stat1 - m->stat0);
	else
		fprintf(f, "\"proc_stat_busy_ns\":null,");
	if (p->fork_calls)
		fprintf(f, "\"fork\":{\"calls\":%lld,\"corrupted\":%" PRIu64 ",\"parent\":%ld},",
			p->fork_calls, fork_corrupted, (long)getppid());
	else
		fprintf(f, "\"fork\":null,");
	fprintf(f, "\"machine_source\":\"%s\",\"uprobe_maps\":", m->source);
	print_uprobe_maps(f);
	fputs(",", f);
	fprintf(f, "\"per_thread\":[");
	for (k = 0; k < p->threads; k++) {
		const struct thread_result *r = &w[k].r;
		fprintf(f,
			"%s{\"thread\":%ld,\"cpu\":%d,\"start_ns\":%" PRIu64 ",\"wall_ns\":%" PRIu64
			",\"user_ns\":%" PRIu64 ",\"sys_ns\":%" PRIu64 ",\"cpu_ns\":%" PRIu64
			",\"calls\":%" PRIu64 ",\"late\":%" PRIu64 ",\"corrupted\":%" PRIu64 ",\"decoys\":%" PRIu64 "}",
			k ? "," : "", r->id, r->cpu, r->start_ns - t0, r->end_ns - r->start_ns,
			r->user_ns, r->sys_ns, r->cpu_ns, r->calls, r->late, r->corrupted, r->decoys);
	}
	fprintf(f, "]}\n");
}

static void print_text(FILE *f, const struct params *p, const struct worker *w, uint64_t t0,
		       uint64_t t1)
{
	long k;

	fprintf(f, "benchmark-%s: %ld thread(s) x %lld calls, wall %.3f s\n", TRACE_BUILD,
		p->threads, p->iterations, (double)(t1 - t0) / 1e9);
	for (k = 0; k < p->threads; k++) {
		const struct thread_result *r = &w[k].r;
		double wall = (double)(r->end_ns - r->start_ns);
		fprintf(f,
			"  thread %ld: %" PRIu64 " calls, wall %.3f s, user %.3f s, sys %.3f s,"
			" %.2f ns/call\n",
			r->id, r->calls, wall / 1e9, (double)r->user_ns / 1e9, (double)r->sys_ns / 1e9,
			r->calls ? wall / (double)r->calls : 0.0);
	}
}

/* --fork: N calls on this thread (a probe the kernel optimises on its
 * first hit is then optimised), then fork().  Returns in the child, with
 * the parent's corrupted calls in *CORRUPTED; the parent waits for the
 * child and exits as it did (128 + its signal where one killed it). */
static void fork_first(long long calls, uint64_t *corrupted)
{
	pid_t pid;
	int status;

	(void)tight_loop(0, (uint64_t)calls);
	*corrupted = kit_corrupted;
	kit_corrupted = 0;
	if (fflush(stdout) == EOF || fflush(stderr) == EOF)
		die("benchmark: fflush");
	pid = fork();
	if (pid < 0)
		die("benchmark: fork");
	if (pid == 0)
		return;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("benchmark: waitpid");
	if (WIFEXITED(status))
		exit(WEXITSTATUS(status));
	fprintf(stderr, "benchmark: --fork: the child (pid %ld) was killed by signal %d (%s)\n",
		(long)pid, WTERMSIG(status), strsignal(WTERMSIG(status)));
	exit(128 + WTERMSIG(status));
}

/* --hold, --linger: wait for one byte on stdin; 0 on it (or, where
 * EOF_OK, on end of file), -1 on end of file or an error (said on stderr,
 * naming FLAG). */
static int hold_until_released(const char *flag, int eof_ok)
{
	char c;
	ssize_t n;

	while ((n = read(STDIN_FILENO, &c, 1)) < 0 && errno == EINTR)
		;
	if (n == 1 || (n == 0 && eof_ok))
		return 0;
	fprintf(stderr, "benchmark: %s: %s before %s\n", flag,
		n == 0 ? "stdin closed" : strerror(errno), eof_ok ? "its byte" : "the release");
	return -1;
}

int main(int argc, char **argv)
{
	struct params p = parse_args(argc, argv);
	struct worker *w;
	struct machine m;
	uint64_t t0 = UINT64_MAX, t1 = 0, threads_ns, fork_corrupted = 0;
	long k, created;
	int err = 0, held = 0;

	if (p.fork_calls)
		fork_first(p.fork_calls, &fork_corrupted);

	w = calloc((size_t)p.threads, sizeof(*w));
	if (!w)
		die("benchmark: calloc");

	for (created = 0; created < p.threads; created++) {
		pthread_attr_t attr;
		struct worker *x = &w[created];

		x->r.id = created;
		x->r.cpu = p.pin ? nth_allowed_cpu(created) : -1;
		x->iterations = p.iterations;
		x->miss = p.miss;
		x->rate = p.rate;
		/* About one batch per PACE_PERIOD_NS; below 1000/s, one call. */
		x->batch = (uint64_t)(p.rate * PACE_PERIOD_NS / 1000000000LL);
		if (x->batch < 1)
			x->batch = 1;
		x->cutoff_ns = (uint64_t)p.duration_ms * 1000000u;
		if ((err = pthread_attr_init(&attr)))
			break;
		if (x->r.cpu >= 0) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET(x->r.cpu, &set);
			err = pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		}
		if (!err)
			err = pthread_create(&x->tid, &attr, worker_main, x);
		pthread_attr_destroy(&attr);
		if (err)
			break;
	}

	pthread_mutex_lock(&gate.lock);
	if (created < p.threads)
		gate.abort = 1;
	else
		while (gate.ready < p.threads)
			pthread_cond_wait(&gate.cond, &gate.lock);
	if (p.hold && !gate.abort) {
		/* the threads wait on the gate, not on this lock */
		pthread_mutex_unlock(&gate.lock);
		held = hold_until_released("--hold", 0);
		pthread_mutex_lock(&gate.lock);
		gate.abort = held < 0;
	}
	machine_open(&m);
	gate.open = 1;
	pthread_cond_broadcast(&gate.cond);
	pthread_mutex_unlock(&gate.lock);

	for (k = 0; k < created; k++)
		if (pthread_join(w[k].tid, NULL))
			die("benchmark: pthread_join");
	for (k = 0, threads_ns = 0; k < created; k++)
		threads_ns += w[k].r.cpu_ns;
	machine_close(&m, threads_ns);
	if (gate.abort) {
		if (held == 0)
			fprintf(stderr, "benchmark: could not start thread %ld of %ld: %s\n",
				created + 1, p.threads, strerror(err));
		free(w);
		return 1;
	}

	for (k = 0; k < p.threads; k++) {
		if (w[k].r.start_ns < t0)
			t0 = w[k].r.start_ns;
		if (w[k].r.end_ns > t1)
			t1 = w[k].r.end_ns;
	}
	if (p.format == FORMAT_JSON) {
		print_json(stdout, &p, w, t0, t1, &m, fork_corrupted);
		if (!p.quiet)
			print_text(stderr, &p, w, t0, t1);
	} else {
		print_text(stdout, &p, w, t0, t1);
	}
	free(w);
	if (fflush(stdout) == EOF)
		die("benchmark: stdout");
	/* end of file releases it too: the runner that started it is gone */
	if (p.linger && hold_until_released("--linger", 1) < 0)
		return 1;
	return 0;
}
