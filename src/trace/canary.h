/* canary.h: a red-zone canary around another header's marker (builds
 * HEADER+canary).  On x86-64 a leaf function may keep data in the 128
 * bytes below %rsp without moving %rsp (the red zone); single_trace is
 * such a leaf.  TRACE_BEFORE writes a sentinel at -8(%rsp), the marker
 * runs, TRACE_AFTER reads it back and counts a changed one in
 * kit_corrupted: a probe that writes below %rsp (an optimised uprobe's
 * call pushes its return address there) is caught in the act. */
#define KIT_CANARY_WORD 0x5afe5afe5afe5afeULL
#define TRACE_BEFORE() \
	__asm__ volatile("movq %0, -8(%%rsp)" : : "r"(KIT_CANARY_WORD) : "memory")
#define TRACE_AFTER() \
	do { \
		unsigned long long kit_got_; \
		__asm__ volatile("movq -8(%%rsp), %0" : "=r"(kit_got_) : : "memory"); \
		if (kit_got_ != KIT_CANARY_WORD) \
			kit_corrupted++; \
	} while (0)
