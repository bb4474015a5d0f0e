/* ust.h: an LTTng-UST tracepoint with the marker's argument; the provider
 * itself is src/ust_provider.c, built into build/ust_provider.o. */
#include "ust_tp.h"
#define TRACE_SINGLE(v) lttng_ust_tracepoint(benchmark, single_trace, (v))
