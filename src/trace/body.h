/* body.h: the probe-body build (issue 59): the kit's marker,
 * benchmark:single_trace, with a second argument, a 255-character
 * string (for the bodies that copy a user string: bpftrace's str(),
 * SystemTap's user_string, ftrace's +0(%reg):string), planted
 * KIT_BODY_DEPTH calls deep below single_trace (for the bodies that take
 * a user stack: bpftrace's ustack, perf record -g, ftrace's
 * userstacktrace), in a build with frame pointers
 * (-fno-omit-frame-pointer in src/builds.tsv), so a frame-pointer walk
 * finds every frame.  No semaphore: sys/sdt.h's STAP_PROBE2, not
 * probes.h, so every probe of benchmark:single_trace finds it.  The
 * chain's own cost is the idle-body row's; every body is priced beside
 * its back-end's count on this same build. */
#include <sys/sdt.h>
#ifndef KIT_BODY_DEPTH
#error "body.h wants -DKIT_BODY_DEPTH=N (src/builds.tsv)"
#endif
static const char kit_body_text[256] =
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde";

/* DEPTH frames, then the marker: not a tail call (the asm after the
 * call), so each frame stays on the stack. */
__attribute__((noinline, noclone)) static void kit_body_frame(unsigned int depth,
							      unsigned int v)
{
	if (depth)
		kit_body_frame(depth - 1, v);
	else
		STAP_PROBE2(benchmark, single_trace, v, kit_body_text);
	__asm__ volatile("" : : "r"(v) : "memory");
}
#define TRACE_SINGLE(v) kit_body_frame(KIT_BODY_DEPTH, (v))
