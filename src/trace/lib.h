/* lib.h: single_trace calls kit_lib_call() in build/libkit-bystander.so
 * (src/kitlib.c), whose SDT marker kit:lib_call a probe on the library
 * places in every process that maps it: the lib build, the traced
 * process and its untraced neighbour of make lifecycle's bystander runs. */
#include "kitlib.h"
#define TRACE_SINGLE(v) kit_lib_call(v)
