#!/bin/sh
## The template of a guest's init (/kit/kit-init.sh, kit-init-K.sh), filled by
## lab/init.py (string.Template, @names: @mounts, @userspace, @kit,
## @runtime, @before: what runs first (WHERE=1: kallsyms kept), @run, @done).  Lines opening with ## are the template's own
## notes, dropped when it is filled; the rest is the init, byte for byte.
# The guest's init (make lab): mount what the kit needs, run its runner on
# the module runtime with the modules built beforehand, list any module
# left, power off.
# what the kit writes is root's alone (make run refuses a checkout others may write)
umask 022
@mounts
echo "@userspace $(uname -r)"
# what the target's clock counts here, from the kernel command line the lab set
UNIT=$(sed -n 's/.*kit_unit=\([a-z]*\).*/\1/p' /proc/cmdline)
export UNIT="${UNIT:-ns}"
cd @kit
@before
STAP_RUNTIME=@runtime STAP_MODULES=@kit/build/lab-modules @run 2>&1 | tee @kit/results/lab-run.log
lsmod | grep '^kit_' > @kit/results/modules-left.txt
echo "KIT-LAB: modules left: $(wc -l < @kit/results/modules-left.txt)"
sync
echo "@done"
echo o > /proc/sysrq-trigger
sleep 30
