/* raw_loop.c: the floor the kit's untraced build is held to, a raw
 * pthread loop of the target's shape and nothing else: N threads released
 * by a barrier, each calling a non-inlined empty function ITER times and
 * timing its own loop on CLOCK_MONOTONIC.  No options, no record: it
 * prints each thread's ns per call, space-separated, on one line.
 *
 *     build/raw-loop THREADS ITER      (bench/floor.py runs it)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_THREADS 1024

__attribute__((noinline)) void single_trace(unsigned int v)
{
	__asm__ volatile("" : : "r"(v) : "memory");
}

static pthread_barrier_t gate;
static uint64_t iterations;
static double ns_per_call[MAX_THREADS];

static uint64_t now_ns(void)
{
	struct timespec t;

	if (clock_gettime(CLOCK_MONOTONIC, &t)) {
		perror("raw-loop: clock_gettime");
		exit(1);
	}
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *loop(void *arg)
{
	double *out = arg;
	uint64_t i, t0, t1;
	int err = pthread_barrier_wait(&gate);

	if (err && err != PTHREAD_BARRIER_SERIAL_THREAD)
		exit(1);
	t0 = now_ns();
	for (i = 0; i < iterations; i++)
		single_trace((unsigned int)i);
	t1 = now_ns();
	*out = (double)(t1 - t0) / (double)iterations;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t tid[MAX_THREADS];
	long n, k;

	n = argc == 3 ? atol(argv[1]) : 0;
	iterations = argc == 3 ? strtoull(argv[2], NULL, 10) : 0;
	if (n < 1 || n > MAX_THREADS || iterations < 1) {
		fprintf(stderr, "usage: raw-loop THREADS(1..%d) ITER(>= 1)\n", MAX_THREADS);
		return 2;
	}
	if (pthread_barrier_init(&gate, NULL, (unsigned)n))
		return 1;
	for (k = 0; k < n; k++)
		if (pthread_create(&tid[k], NULL, loop, &ns_per_call[k]))
			return 1;
	for (k = 0; k < n; k++)
		if (pthread_join(tid[k], NULL))
			return 1;
	for (k = 0; k < n; k++)
		printf("%s%.4f", k ? " " : "", ns_per_call[k]);
	printf("\n");
	return 0;
}
