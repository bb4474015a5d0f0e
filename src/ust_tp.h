/* ust_tp.h: the LTTng-UST tracepoint provider `benchmark`, event
 * `single_trace`, with one integer field `v` (the SDT marker's argument). */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER benchmark

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./ust_tp.h"

#if !defined(UST_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define UST_TP_H

#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(
	benchmark, single_trace,
	LTTNG_UST_TP_ARGS(unsigned int, v),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(unsigned int, v, v))
)

#endif /* UST_TP_H */

#include <lttng/tracepoint-event.h>
