/* kitlib.c: build/libkit-bystander.so, a shared library of the kit's own
 * with one entry point and one SDT marker (kit:lib_call, no semaphore):
 * make lifecycle's bystander runs probe it in one process and time the
 * calls of another that maps it untraced.  Build: make build/libkit-bystander.so */
#include <sys/sdt.h>

#include "kitlib.h"

__attribute__((noinline)) void kit_lib_call(long v)
{
	STAP_PROBE1(kit, lib_call, v);
	__asm__ volatile("" ::: "memory"); /* the call is not folded away */
}
