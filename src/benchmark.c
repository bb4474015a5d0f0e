/* benchmark.c: the target every measurement of the kit runs.
 *
 * N threads are released together and each calls single_trace(i) ITER
 * times; each thread times its own loop (so a tracer's start-up is never
 * timed) and the run prints one JSON record on stdout and a readable
 * summary on stderr.  Run: build/benchmark-plain --threads 2 --iterations 1000000
 *
 * One source, several builds (see the Makefile): they differ only in the
 * trace header forced in with `-include src/trace/BUILD.h`, which defines
 * TRACE_SINGLE(v) (what single_trace contains), and in -DTRACE_BUILD=name.
 */
/* _GNU_SOURCE (RUSAGE_THREAD, affinity) comes from the Makefile, since the
 * forced trace header may include system headers before this line. */
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
#include <time.h>
#include <unistd.h>

#if !defined(TRACE_SINGLE) || !defined(TRACE_BUILD)
#error "build with -include src/trace/BUILD.h (see the Makefile)"
#endif

#define MAX_THREADS 1024
#define MAX_ITERATIONS 1000000000000LL /* 10^12 per thread */

enum format { FORMAT_JSON, FORMAT_TEXT };

/* Every parameter, with its default. */
struct params {
	long threads;
	long long iterations;
	int pin;
	enum format format;
	int quiet;
};

static const struct params defaults = {
	.threads = 1,
	.iterations = 10000000,
	.pin = 0,
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
};

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
};

/* The function every tracer probes.  It must stay a real, separate call
 * in every build: `noinline` keeps the call, and the empty volatile asm,
 * which "uses" v and clobbers memory, stops GCC from proving the body
 * pure (which would let it delete the calls of the plain build) and from
 * merging or cloning it.  It is global so the symbol is there to probe. */
__attribute__((noinline)) void single_trace(unsigned int v)
{
	TRACE_SINGLE(v);
	__asm__ volatile("" : : "r"(v) : "memory");
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

	if (getrusage(RUSAGE_THREAD, &ru0) || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0) ||
	    clock_gettime(CLOCK_MONOTONIC, &t0))
		die("benchmark: clock");
	for (i = 0; i < (uint64_t)w->iterations; i++)
		single_trace((unsigned int)i);
	if (clock_gettime(CLOCK_MONOTONIC, &t1) || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1) ||
	    getrusage(RUSAGE_THREAD, &ru1))
		die("benchmark: clock");

	w->r.calls = i;
	w->r.start_ns = ns_of(&t0);
	w->r.end_ns = ns_of(&t1);
	w->r.cpu_ns = ns_of(&c1) - ns_of(&c0);
	w->r.user_ns = ns_of_tv(&ru1.ru_utime) - ns_of_tv(&ru0.ru_utime);
	w->r.sys_ns = ns_of_tv(&ru1.ru_stime) - ns_of_tv(&ru0.ru_stime);
	return NULL;
}

/* Parse FLAG's VALUE as a whole decimal number in [MIN, MAX]; on anything
 * else (empty, trailing garbage, overflow, out of range) say so and exit 2. */
static long long parse_range(const char *flag, const char *value, long long min, long long max)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(value, &end, 10);
	if (end == value || *end != '\0' || errno == ERANGE || n < min || n > max) {
		fprintf(stderr, "benchmark: %s '%s' is not allowed: want a whole number in %lld..%lld\n",
			flag, value, min, max);
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
		"  -p, --pin            pin thread k to the k-th allowed CPU (round robin)\n"
		"  -f, --format F       stdout gets: json (one record, default) or text\n"
		"  -q, --quiet          no human summary on stderr (with --format json)\n"
		"  -h, --help           this text\n",
		TRACE_BUILD, MAX_THREADS, defaults.threads, MAX_ITERATIONS, defaults.iterations);
}

static struct params parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "pin", no_argument, NULL, 'p' },
		{ "format", required_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct params p = defaults;
	int c;

	while ((c = getopt_long(argc, argv, "t:i:pf:qh", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			p.threads = (long)parse_range("--threads", optarg, 1, MAX_THREADS);
			break;
		case 'i':
			p.iterations = parse_range("--iterations", optarg, 1, MAX_ITERATIONS);
			break;
		case 'p':
			p.pin = 1;
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

static void print_json(FILE *f, const struct params *p, const struct worker *w, uint64_t t0,
		       uint64_t t1)
{
	struct rusage self;
	long k;

	/* The whole process's CPU, so a runner can tell a tracer's CPU (in
	 * its rusage, which includes this child's) from the target's. */
	if (getrusage(RUSAGE_SELF, &self))
		die("benchmark: getrusage");
	fprintf(f,
		"{\"build\":\"%s\",\"pid\":%ld,\"threads\":%ld,\"iterations\":%lld,\"pinned\":%s,"
		"\"clock\":\"CLOCK_MONOTONIC\",\"wall_ns\":%" PRIu64 ",\"process_user_ns\":%" PRIu64
		",\"process_sys_ns\":%" PRIu64 ",\"per_thread\":[",
		TRACE_BUILD, (long)getpid(), p->threads, p->iterations, p->pin ? "true" : "false",
		t1 - t0, ns_of_tv(&self.ru_utime), ns_of_tv(&self.ru_stime));
	for (k = 0; k < p->threads; k++) {
		const struct thread_result *r = &w[k].r;
		fprintf(f,
			"%s{\"thread\":%ld,\"cpu\":%d,\"start_ns\":%" PRIu64 ",\"wall_ns\":%" PRIu64
			",\"user_ns\":%" PRIu64 ",\"sys_ns\":%" PRIu64 ",\"cpu_ns\":%" PRIu64
			",\"calls\":%" PRIu64 "}",
			k ? "," : "", r->id, r->cpu, r->start_ns - t0, r->end_ns - r->start_ns,
			r->user_ns, r->sys_ns, r->cpu_ns, r->calls);
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

int main(int argc, char **argv)
{
	struct params p = parse_args(argc, argv);
	struct worker *w;
	uint64_t t0 = UINT64_MAX, t1 = 0;
	long k, created;
	int err;

	w = calloc((size_t)p.threads, sizeof(*w));
	if (!w)
		die("benchmark: calloc");

	for (created = 0; created < p.threads; created++) {
		pthread_attr_t attr;
		struct worker *x = &w[created];

		x->r.id = created;
		x->r.cpu = p.pin ? nth_allowed_cpu(created) : -1;
		x->iterations = p.iterations;
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
	gate.open = 1;
	pthread_cond_broadcast(&gate.cond);
	pthread_mutex_unlock(&gate.lock);

	for (k = 0; k < created; k++)
		if (pthread_join(w[k].tid, NULL))
			die("benchmark: pthread_join");
	if (gate.abort) {
		fprintf(stderr, "benchmark: could not start thread %ld of %ld: %s\n", created + 1,
			p.threads, strerror(err));
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
		print_json(stdout, &p, w, t0, t1);
		if (!p.quiet)
			print_text(stderr, &p, w, t0, t1);
	} else {
		print_text(stdout, &p, w, t0, t1);
	}
	free(w);
	if (fflush(stdout) == EOF)
		die("benchmark: stdout");
	return 0;
}
