/* sites.h: KIT_SITES distinct SDT markers in single_trace, kit:site_0 to
 * kit:site_<KIT_SITES-1> (sys/sdt.h's STAP_PROBE1, no semaphore), each on
 * its own 1-byte nop: the sites-N builds (src/builds.tsv, -DKIT_SITES=N)
 * that make lifecycle attaches N probes to.  Each call fires every site
 * once.  The names come from __COUNTER__, which this header is the only
 * user of in the target, so they run from 0. */
#include <sys/sdt.h>

#define KIT_SITE__(n, v) STAP_PROBE1(kit, site_##n, v)
#define KIT_SITE_(n, v) KIT_SITE__(n, v)
#define KIT_X1(v) KIT_SITE_(__COUNTER__, v);
#define KIT_X10(v) KIT_X1(v) KIT_X1(v) KIT_X1(v) KIT_X1(v) KIT_X1(v) \
	KIT_X1(v) KIT_X1(v) KIT_X1(v) KIT_X1(v) KIT_X1(v)
#define KIT_X100(v) KIT_X10(v) KIT_X10(v) KIT_X10(v) KIT_X10(v) KIT_X10(v) \
	KIT_X10(v) KIT_X10(v) KIT_X10(v) KIT_X10(v) KIT_X10(v)
#define KIT_X1000(v) KIT_X100(v) KIT_X100(v) KIT_X100(v) KIT_X100(v) KIT_X100(v) \
	KIT_X100(v) KIT_X100(v) KIT_X100(v) KIT_X100(v) KIT_X100(v)
#define KIT_XN_(n, v) KIT_X##n(v)
#define KIT_XN(n, v) KIT_XN_(n, v)

#ifndef KIT_SITES
#error "build with -DKIT_SITES=N, N one of 1, 10, 100, 1000 (src/builds.tsv)"
#endif
#define TRACE_SINGLE(v) do { KIT_XN(KIT_SITES, v) } while (0)
