/* kitlib.h: the bystander library's one entry point (src/kitlib.c). */
#ifndef KITLIB_H
#define KITLIB_H
void kit_lib_call(long v);
#endif
