/* sdt-nop5.h: the same SDT marker, but the Makefile puts a generated
 * build/nop5/sys/sdt.h first on the include path whose probe site is the
 * 5-byte nop 0f 1f 44 00 00, which Linux >= 6.18 can turn from a trap
 * into a call after the first hit. */
#include "probes.h"
#define TRACE_SINGLE(v) BENCHMARK_SINGLE_TRACE(v)
