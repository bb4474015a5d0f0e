#!/bin/sh
## The template of make lab-shell's init (/kit/kit-shell.sh), filled by
## lab/init.py (string.Template, @names: @mounts, @userspace, @kit).
## Lines opening with ## are the template's own notes, dropped when it is
## filled; the rest is the init, byte for byte.
# make lab-shell's init: what the kit needs mounted, then a shell in @kit;
# leaving the shell powers the guest off.
# what the kit writes is root's alone (make run refuses a checkout others may write)
umask 022
@mounts
export TERM=vt100
echo "@userspace $(uname -r): the kit is in @kit; try: stap -F stp/mark.stp"
grep -q kit_unit=instructions /proc/cmdline && echo "The guest's clock counts instructions (QEMU -icount shift=0): 1 ns = 1 instruction."
cd @kit
/bin/bash -i
sync
echo o > /proc/sysrq-trigger
sleep 30
