/* sdt-expensive-guarded.h: the expensive argument of sdt-expensive.h,
 * computed only when the marker's semaphore says someone listens. */
#include "probes.h"
#include "expensive.h"
#define TRACE_SINGLE(v) \
	do { \
		if (BENCHMARK_SINGLE_TRACE_ENABLED()) \
			BENCHMARK_SINGLE_TRACE(kit_expensive(v)); \
	} while (0)
