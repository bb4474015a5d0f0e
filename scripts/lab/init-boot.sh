#!/bin/sh
## The template of the guests' first init (/kit-boot.sh in a suite's base
## image, lab/suite.py's base_image), filled by lab/init.py (@kit).  The
## base image is made once per root file system and booted read-only
## (qemu's snapshot=on); the kit, this lab's, comes on a drive of its own.
## Lines opening with ## are the template's own notes, dropped when it is
## filled; the rest is the init, byte for byte.
# make lab's guest, first: the kit's drive (the second, /dev/vdb) at @kit,
# then the init the lab named on the kernel's command line (kit_init=),
# which mounts what it needs itself.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
init=$(sed -n 's/.* kit_init=\([^ ]*\).*/\1/p' /proc/cmdline)
mount -t ext4 /dev/vdb @kit || echo "KIT-LAB: the kit's drive (/dev/vdb) did not mount at @kit"
umount /proc
exec "$init"
