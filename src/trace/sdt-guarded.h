/* sdt-guarded.h: the SDT marker under its is-enabled check.  The semaphore
 * (in .probes) stays 0 until a tracer names it, e.g. the kernel's uprobe
 * reference counter raises it; until then the marker is jumped over. */
#include "probes.h"
#define TRACE_SINGLE(v) \
	do { if (BENCHMARK_SINGLE_TRACE_ENABLED()) BENCHMARK_SINGLE_TRACE(v); } while (0)
