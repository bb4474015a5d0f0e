"""lab/: make lab's wing (__main__.py is its door: python3 scripts/lab): its inputs
(inputs.py), the suites' root file systems (rootfs.py) and images
(suite.py), the chroot's mounts (mounts.py), SystemTap modules built for
a guest's kernel (modules.py, calling tracers/stap_build.py), the guest's init
from its templates (init.py, init*.sh), qemu, its console and the KVM
verdict (qemu.py), configurations dealt out to guests at once
(shares.py), the guests' folders brought back and merged (merge.py), and
a suite's steps in order (steps.py); common.py holds what they share. It
boots, runs and copies back; what is said about a guest is
render/lab.py's."""
