/* probes.d: the kit's one SDT marker, in DTrace's provider syntax.
 * `dtrace -h` (systemtap-sdt-dev) turns it into build/probes.h, whose
 * BENCHMARK_SINGLE_TRACE(v) macro plants the marker; `dtrace -G` makes
 * build/probes.o, which defines the marker's semaphore in `.probes`. */
provider benchmark {
	probe single_trace(unsigned int);
};
