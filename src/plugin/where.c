/* where.c: a QEMU TCG plugin that counts, inside the target's timed loop,
 * how many guest instructions ran at each guest kernel address, so that
 * the atlas can say where one event's instructions go (trap entry, uprobe
 * lookup, handler, emulation or single-step, return) on each kernel.
 *
 *   qemu-system-x86_64 ... -plugin build/lab/plugin/VERSION/where-HASH.so,out=FILE
 *
 * Built by scripts/lab/plugin.py against the qemu-plugin.h of Debian's
 * qemu *source* package of the host's own qemu (Debian ships no plugin
 * and no header); loaded by make lab WHERE=1 (scripts/lab).  Needs one
 * vCPU (the lab's -icount guests have one): the counters are plain adds
 * (on newer qemus a scoreboard's, see `counter').
 *
 * The windows.  The target (src/benchmark.c, kit_window_id and KIT_MARK)
 * executes, around its timed loop, the 7-byte nops of window.h that
 * nothing else emits: 32 spell its pid, bit by bit, then OPEN; CLOSE ends
 * the loop.  Between OPEN and CLOSE every instruction is counted: a kernel
 * one (the top address bit set) at its own address, a user one (any
 * process's) in one counter.  Each window is written to FILE as it closes:
 *
 *   window PID user N kernel N marks N     (marks: those inside, CLOSE's 1)
 *   ADDRESS COUNT            (hex address, every kernel address that ran)
 *   end
 *
 * and at exit `done windows N overlaps N addresses N errors N` (errors:
 * writes to FILE that failed).  The counts are symbolised on the host from
 * the guest's /proc/kallsyms (scripts/lab/where.py), which checks all of
 * it before a count is used. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

#include "window.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

/* Out of memory while translating: qemu cannot go on counting honestly. */
static void fail(const char *what)
{
	fprintf(stderr, "where.so: %s\n", what);
	exit(1);
}

/* The two plugin APIs, by the header's QEMU_PLUGIN_VERSION: 1 in qemu 7.2
 * (Debian 12), 4 in 10.0 (Debian 13).  Version 2 took away the inline add
 * to a plain uint64_t: an inline op adds to a scoreboard, one u64 per vCPU,
 * read back as their sum (here the one vCPU's count).  Version 3 made
 * qemu_plugin_insn_data copy the bytes out instead of lending a pointer.
 * counter_new, count_insn and counted hide the first; insn_bytes (the
 * version 3 call) the second. */
#if QEMU_PLUGIN_VERSION < 2
typedef uint64_t counter;

static void counter_new(counter *c)
{
	*c = 0;
}

static void count_insn(struct qemu_plugin_insn *insn, counter *c)
{
	qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, c, 1);
}

static uint64_t counted(const counter *c)
{
	return *c;
}
#else
typedef qemu_plugin_u64 counter;

static void counter_new(counter *c)
{
	struct qemu_plugin_scoreboard *score = qemu_plugin_scoreboard_new(sizeof(uint64_t));

	if (!score)
		fail("out of memory");
	*c = qemu_plugin_scoreboard_u64(score);
}

static void count_insn(struct qemu_plugin_insn *insn, counter *c)
{
	qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(insn, QEMU_PLUGIN_INLINE_ADD_U64, *c,
							    1);
}

static uint64_t counted(const counter *c)
{
	return qemu_plugin_u64_sum(*c);
}
#endif
#if QEMU_PLUGIN_VERSION < 3
static size_t insn_bytes(const struct qemu_plugin_insn *insn, void *dest, size_t len)
{
	size_t n = qemu_plugin_insn_size(insn);

	n = n < len ? n : len;
	memcpy(dest, qemu_plugin_insn_data(insn), n);
	return n;
}
#else
#define insn_bytes qemu_plugin_insn_data
#endif

/* One kernel address's counter.  Slots never move (the inline adds of API
 * 1 hold their addresses); the index that finds them is rebuilt as it
 * grows. */
struct slot {
	uint64_t vaddr, base;
	counter count;
};

#define CHUNK 65536
static struct slot **chunks;
static size_t nslots, nchunks;
static struct slot **index_of; /* open addressing, size a power of two */
static size_t index_size;
static counter user_count;
static uint64_t user_base;
static FILE *out;
static int in_window;
static uint64_t id_bits, window_id, nwindows, noverlaps, nmarks, nerrors;

/* A write to the output that failed is counted, and said at exit. */
static void wrote(int rc)
{
	if (rc < 0)
		nerrors++;
}

static size_t hash(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdULL;
	v ^= v >> 33;
	return (size_t)v;
}

static void index_put(struct slot *s)
{
	size_t i = hash(s->vaddr) & (index_size - 1);

	while (index_of[i])
		i = (i + 1) & (index_size - 1);
	index_of[i] = s;
}

static struct slot *slot_of(uint64_t vaddr)
{
	size_t i, k;
	struct slot *s;

	if (index_size) {
		for (i = hash(vaddr) & (index_size - 1); index_of[i]; i = (i + 1) & (index_size - 1))
			if (index_of[i]->vaddr == vaddr)
				return index_of[i];
	}
	if (nslots == nchunks * CHUNK) {
		chunks = realloc(chunks, (nchunks + 1) * sizeof(*chunks));
		if (!chunks || !(chunks[nchunks] = calloc(CHUNK, sizeof(struct slot))))
			fail("out of memory");
		nchunks++;
	}
	s = &chunks[nslots / CHUNK][nslots % CHUNK];
	nslots++;
	s->vaddr = vaddr;
	counter_new(&s->count);
	if (2 * nslots > index_size) { /* keep the index at most half full */
		free(index_of);
		index_size = index_size ? 2 * index_size : 4096;
		index_of = calloc(index_size, sizeof(*index_of));
		if (!index_of)
			fail("out of memory");
		for (k = 0; k < nslots; k++)
			index_put(&chunks[k / CHUNK][k % CHUNK]);
	} else {
		index_put(s);
	}
	return s;
}

static void window_open(void)
{
	size_t k;

	if (in_window) {
		noverlaps++; /* a second thread's window: the first one's counts stand */
		return;
	}
	for (k = 0; k < nslots; k++) {
		struct slot *s = &chunks[k / CHUNK][k % CHUNK];

		s->base = counted(&s->count);
	}
	user_base = counted(&user_count);
	window_id = id_bits;
	nmarks = 0;
	in_window = 1;
}

static void window_close(void)
{
	uint64_t kernel = 0;
	size_t k;

	if (!in_window)
		return;
	in_window = 0;
	for (k = 0; k < nslots; k++) {
		struct slot *s = &chunks[k / CHUNK][k % CHUNK];

		kernel += counted(&s->count) - s->base;
	}
	wrote(fprintf(out, "window %" PRIu64 " user %" PRIu64 " kernel %" PRIu64 " marks %" PRIu64
		      "\n", window_id, counted(&user_count) - user_base, kernel, nmarks));
	for (k = 0; k < nslots; k++) {
		struct slot *s = &chunks[k / CHUNK][k % CHUNK];
		uint64_t n = counted(&s->count) - s->base;

		if (n)
			wrote(fprintf(out, "%" PRIx64 " %" PRIu64 "\n", s->vaddr, n));
	}
	wrote(fprintf(out, "end\n"));
	wrote(fflush(out) ? -1 : 0);
	nwindows++;
}

static void on_mark(unsigned int vcpu, void *udata)
{
	unsigned int code = (unsigned int)(uintptr_t)udata;

	(void)vcpu;
	nmarks++;
	if (code == KIT_WINDOW_BIT0 || code == KIT_WINDOW_BIT1)
		id_bits = (id_bits << 1 | code) & 0xffffffffu;
	else if (code == KIT_WINDOW_OPEN)
		window_open();
	else if (code == KIT_WINDOW_CLOSE)
		window_close();
}

/* The mark an instruction is, or -1: 0f 1f 80 disp32 with the tag. */
static int mark_of(const unsigned char *b, size_t n)
{
	unsigned int code;

	if (n != 7 || b[0] != 0x0f || b[1] != 0x1f || b[2] != 0x80 ||
	    (unsigned int)(b[5] | b[6] << 8) != KIT_WINDOW_TAG)
		return -1;
	code = b[3] | b[4] << 8;
	return code == KIT_WINDOW_BIT0 || code == KIT_WINDOW_BIT1 || code == KIT_WINDOW_OPEN ||
			       code == KIT_WINDOW_CLOSE ?
		       (int)code :
		       -1;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);

	(void)id;
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t va = qemu_plugin_insn_vaddr(insn);
		size_t len = qemu_plugin_insn_size(insn);
		unsigned char b[7]; /* a mark's length */
		int mark;

		if (va >> 63) {
			count_insn(insn, &slot_of(va)->count);
			continue;
		}
		mark = len == sizeof(b) && insn_bytes(insn, b, len) == len ? mark_of(b, len) : -1;
		if (mark >= 0)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_mark, QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)mark);
		/* After the mark: qemu 7.2 runs an instruction's callbacks before its
		 * inline ops whatever the order, 10.0 in the order registered. */
		count_insn(insn, &user_count);
	}
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	(void)id;
	(void)p;
	wrote(fprintf(out, "done windows %" PRIu64 " overlaps %" PRIu64 " addresses %zu errors %" PRIu64
		      "\n", nwindows, noverlaps, nslots, nerrors));
	if (fclose(out) || nerrors)
		fprintf(stderr, "where.so: %" PRIu64 " writes to its output failed\n", nerrors);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *path = NULL;
	int i;

	if (strcmp(info->target_name, "x86_64") || !info->system_emulation ||
	    info->system.smp_vcpus != 1) {
		fprintf(stderr, "where.so: wants qemu-system-x86_64 with one vCPU\n");
		return -1;
	}
	for (i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			path = argv[i] + 4;
	if (!path) {
		fprintf(stderr, "where.so: wants out=FILE\n");
		return -1;
	}
	out = fopen(path, "w");
	if (!out) {
		perror(path);
		return -1;
	}
	counter_new(&user_count);
	fprintf(out, "# where.so: guest kernel instructions by address, inside the target's "
		     "timed loop\n");
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
