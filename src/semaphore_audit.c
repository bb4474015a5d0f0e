/* semaphore_audit.c: glibc's dynamic linker auditing module (LD_AUDIT,
 * rtld-audit(7)) that raises SDT markers' semaphores in each process of a
 * user's command as it maps TARGET, for the one tracer that raises none:
 * SystemTap's BPF runtime (issue 58, part 6).  ftrace, perf and bpftrace
 * give the kernel the marker's reference counter, and the kernel raises
 * it in every process mapping the file; stapbpf's uprobe has none, and
 * the kernel refuses a second uprobe at one site with another counter, so
 * the kit cannot lend it one.  The command's processes start after the
 * attach, each from an exec, so none exists beforehand to write
 * (/proc/PID/mem, as the kit does for PostgreSQL's postmaster); this
 * module is loaded into each of them by the loader itself, before the
 * program runs, and sees every object it maps (dlopen'ed ones too).
 *
 * KIT_SEMAPHORES="DEV:INO[:ADDR...]": TARGET's device and inode
 * (st_dev, st_ino, decimal) and each semaphore's link-time address (hex),
 * from the marker's ELF note.  In the object that is TARGET, each 2-byte
 * counter at load bias + ADDR gets 1 added, as sys/sdt.h's _ENABLED() reads
 * it.  With no ADDR it raises nothing and costs the same: every row of a
 * user's family whose marker has a semaphore loads it, so the untraced
 * runs and the other tracers' pay what SystemTap's row pays.  Nothing to undo: the counter dies with the process.  A static
 * program, or one that clears its environment, is not reached: its
 * SystemTap row then counts fewer events than the other tracers, and the
 * witness says so (measure/witness.py).
 *
 * Built by make (build/libkit-semaphore-audit.so); used by
 * scripts/workloads.py (Command.exec_env). */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_SEMAPHORES 16

static dev_t want_dev;
static ino_t want_ino;
static int have_target; /* KIT_SEMAPHORES named TARGET, well formed */
static uintptr_t addrs[MAX_SEMAPHORES];
static int n_addrs;

/* KIT_SEMAPHORES read strictly: an empty, zero or extra field, or more
 * addresses than it holds, and it raises nothing (the kit never writes
 * one: workloads.py checks the list; a SystemTap row then counts too
 * few, and its witness says so). */
static void read_wanted(void)
{
	const char *s = getenv("KIT_SEMAPHORES"), *p;
	char *end;
	unsigned long long v;
	int n = 0;

	if (!s)
		return;
	v = strtoull(s, &end, 10);
	if (end == s || *end != ':')
		return;
	want_dev = (dev_t)v;
	p = end + 1;
	v = strtoull(p, &end, 10);
	if (end == p || (*end != ':' && *end != '\0'))
		return;
	want_ino = (ino_t)v;
	while (*end == ':') {
		p = end + 1;
		if (n == MAX_SEMAPHORES)
			return;
		v = strtoull(p, &end, 16);
		if (end == p || v == 0)
			return;
		addrs[n++] = (uintptr_t)v;
	}
	if (*end != '\0')
		return;
	n_addrs = n;
	have_target = 1;
}

unsigned int la_version(unsigned int version)
{
	read_wanted();
	return version <= LAV_CURRENT ? version : LAV_CURRENT;
}

unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
	struct stat st;
	/* the main program's l_name is empty: its file is /proc/self/exe */
	const char *path = map->l_name && map->l_name[0] ? map->l_name : "/proc/self/exe";
	int i;

	(void)lmid;
	(void)cookie;
	/* (the same look at every object whether or not it raises: the rows
	 * of a family that raise nothing load it too, for the same cost) */
	if (!have_target || stat(path, &st) != 0)
		return 0;
	if (st.st_dev != want_dev || st.st_ino != want_ino)
		return 0;
	for (i = 0; i < n_addrs; i++) {
		volatile unsigned short *sem =
			(volatile unsigned short *)(map->l_addr + addrs[i]);
		if (*sem != 0xffff)
			*sem += 1;
	}
	return 0; /* no symbol binding audited: no cost past the load */
}
