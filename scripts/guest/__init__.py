"""guest/: make lab's wing (scripts/lab.py is its door): a suite's root
file system and image, SystemTap modules built for the guest's kernel,
qemu and the KVM verdict, configurations dealt out to guests, and the
guests' folders brought back and merged.  It boots, runs and copies
back; what is said about a guest is render/guest.py's."""
