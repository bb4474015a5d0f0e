/* expensive.h: kit_expensive(v), an argument that takes real work: the
 * FNV-1a hash of a 64-byte string, seeded with v, plus its strlen. */
#include <string.h>
static const char *volatile kit_text =
	"the quick brown fox jumps over the lazy dog while a probe waits.";
static inline unsigned int kit_expensive(unsigned int v)
{
	const char *s = kit_text;
	size_t n = strlen(s), i;
	unsigned int h = 2166136261u ^ v;

	for (i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h + (unsigned int)n;
}
