#!/bin/sh
## The template of the guests' first init (/kit-boot.sh in a suite's base
## image, lab/suite.py's base_image), filled by lab/init.py (@kit, @drive,
## @init_arg, @says: lab/common.py's).  The base image is made once per
## root file system and booted read-only (qemu's snapshot=on); the kit,
## this lab's, comes on a drive of its own.  Lines opening with ## are the
## template's own notes, dropped when it is filled; the rest is the init,
## byte for byte.
# make lab's guest, first: the kit's drive (@drive) at @kit, then the init
# the lab named on the kernel's command line (@init_arg=), which mounts what
# it needs itself; where either fails, why in one line, and power off.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
init=$(sed -n 's/.* @init_arg=\([^ ]*\).*/\1/p' /proc/cmdline)
if mount -t ext4 @drive @kit && [ -x "$init" ]; then
    umount /proc
    exec "$init"
fi
echo "@says the kit's drive (@drive) did not mount at @kit, or holds no init '$init'"
echo o > /proc/sysrq-trigger
sleep 30
