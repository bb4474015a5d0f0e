/* memlock_shim.c: an LD_PRELOAD library for stapbpf (SystemTap's BPF
 * runtime), which treats a failed setrlimit(RLIMIT_MEMLOCK, infinity) as
 * fatal.  Since Linux 5.11 BPF maps are charged to the memory cgroup, not
 * to RLIMIT_MEMLOCK, so where root lacks CAP_SYS_RESOURCE that failure is
 * harmless: this shim reports success for that one call, and the kit
 * preloads it only on such kernels (scripts/tracers/stap.py). */
#include <dlfcn.h>
#include <errno.h>
#include <sys/resource.h>

typedef int (*setrlimit_fn)(__rlimit_resource_t, const struct rlimit *);

int setrlimit(__rlimit_resource_t resource, const struct rlimit *limit)
{
	static setrlimit_fn real;
	int rc;

	if (!real)
		real = (setrlimit_fn)dlsym(RTLD_NEXT, "setrlimit");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	rc = real(resource, limit);
	if (rc != 0 && errno == EPERM && resource == RLIMIT_MEMLOCK)
		return 0;
	return rc;
}
