/* sdt.h: the SDT marker from probes.d at the usual 1-byte nop site; its
 * semaphore is not checked, so the marker's argument is always set up. */
#include "probes.h"
#define TRACE_SINGLE(v) BENCHMARK_SINGLE_TRACE(v)
