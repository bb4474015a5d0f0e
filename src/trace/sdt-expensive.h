/* sdt-expensive.h: the SDT marker with an argument that costs real work
 * to compute (the length and an FNV-1a hash of a string, seeded with the
 * call's index), and no guard: the work is done whether or not anyone
 * listens.  The string is read through a volatile pointer so the compiler
 * cannot fold it away. */
#include "probes.h"
#include "expensive.h"
#define TRACE_SINGLE(v) BENCHMARK_SINGLE_TRACE(kit_expensive(v))
