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
 * it, where ADDR's two bytes lie in a writable PT_LOAD segment of that very
 * file (its program headers read through the descriptor whose device and
 * inode were checked): a list that named code or read-only data would
 * otherwise kill every process of the command with SIGSEGV (issue 67).  With no ADDR it raises nothing and costs the same: every row of a
 * user's family whose marker has a semaphore loads it, so the untraced
 * runs and the other tracers' pay what SystemTap's row pays.  Nothing to undo: the counter dies with the process.  A static
 * program, or one that clears its environment, is not reached: its
 * SystemTap row then counts fewer events than the other tracers, and the
 * witness says so (measure/witness.py).
 *
 * Built by make (build/libkit-semaphore-audit.so); used by
 * scripts/workloads.py (Command.exec_env). */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* ADDR..ADDR+LEN (link-time) lies in a writable PT_LOAD segment of the
 * 64-bit ELF file open on FD: 1, else 0 (an unreadable or odd file too). */
static int writable(int fd, uintptr_t addr, size_t len)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int i;

	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(ph))
		return 0;
	for (i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (Elf64_Off)i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph))
			return 0;
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W) && addr >= ph.p_vaddr &&
		    addr + len <= ph.p_vaddr + ph.p_memsz)
			return 1;
	}
	return 0;
}

unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
	struct stat st;
	/* the main program's l_name is empty: its file is /proc/self/exe */
	const char *path = map->l_name && map->l_name[0] ? map->l_name : "/proc/self/exe";
	int i, fd;

	(void)lmid;
	(void)cookie;
	/* (the same look at every object whether or not it raises: the rows
	 * of a family that raise nothing load it too, for the same cost) */
	if (!have_target)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) != 0 || st.st_dev != want_dev || st.st_ino != want_ino) {
		close(fd);
		return 0;
	}
	for (i = 0; i < n_addrs; i++) {
		volatile unsigned short *sem =
			(volatile unsigned short *)(map->l_addr + addrs[i]);
		if (writable(fd, addrs[i], sizeof(*sem)) && *sem != 0xffff)
			*sem += 1;
	}
	close(fd);
	return 0; /* no symbol binding audited: no cost past the load */
}
