/* plain.h: the baseline build: single_trace() traces nothing. */
#define TRACE_SINGLE(v) ((void)(v))
