/* ust_provider.c: instantiates the LTTng-UST probe for ust_tp.h; linked
 * only into build/benchmark-ust. */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "ust_tp.h"
