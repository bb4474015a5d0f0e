## lab/init.py puts these lines at @mounts in init.sh and init-shell.sh:
## what the kit needs mounted in the guest.  (Lines opening with ## are the
## template's own notes, dropped when it is filled.)
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t tmpfs tmp /tmp
mkdir -p /dev/shm; mount -t tmpfs shm /dev/shm  # LTTng-UST's and uftrace's shared memory
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
## What today's tools expect of a Linux /dev that no udev made here: sid's
## bpftrace 0.27 writes its object through /dev/fd/N ("unable to open
## output file '/dev/fd/7'" in a guest without it: issue 57).
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
n=0; for s in stdin stdout stderr; do [ -e "/dev/$s" ] || ln -s "/proc/self/fd/$n" "/dev/$s"; n=$((n + 1)); done
