/* window.h: the marks the target sets around its timed loop for the
 * atlas's QEMU plugin, their one home (src/benchmark.c sets them,
 * src/plugin/where.c reads them).  A mark is `nopl DISP(%rax)`, bytes
 * 0f 1f 80 then DISP as a 32-bit little-endian displacement: a nop to a
 * CPU.  DISP's upper half is KIT_WINDOW_TAG ('K' 'I'), its lower half the
 * code: the pid bit by bit (BIT0, BIT1, most significant first), then
 * OPEN as the loop starts and CLOSE as it ends. */
#ifndef KIT_WINDOW_H
#define KIT_WINDOW_H

#define KIT_WINDOW_TAG 0x4b49u
enum { KIT_WINDOW_BIT0 = 0x0000, KIT_WINDOW_BIT1 = 0x0001, KIT_WINDOW_OPEN = 0x0010,
       KIT_WINDOW_CLOSE = 0x0011 };
#define KIT_WINDOW_DISP(code) ((int)(KIT_WINDOW_TAG << 16 | (unsigned int)(code)))

#endif
