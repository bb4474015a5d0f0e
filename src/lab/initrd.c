/* src/lab/initrd.c: /init of make lab's own initramfs (scripts/lab/initrd.py
 * builds it static and packs it with the modules the guest's root needs).
 *
 * Why: Debian's initramfs (dracut with systemd, some 40 MB) took about 30 of
 * a guest's 45 s to userspace under TCG.  This one loads the modules in
 * /modules (named so that their order is modprobe's, already decompressed),
 * mounts root= (ext4) on /root, moves /dev there and runs init= as PID 1:
 * what the guest saw after dracut's switch_root, less its udev and journal.
 *
 * What it needs: the kernel command line's root= (a device path: no UUID=)
 * and init= (the lab sets both), /dev/console in the archive.  It ignores
 * ro, rootfstype and rootflags (ext4, read-write: the lab's image) and does
 * not free its own few MB after the switch, as switch_root would.  A step that fails says so in one
 * line on the console, KIT-INITRD: ..., and the kernel panics (panic=-1:
 * qemu exits), which the lab reports with that line.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROOT_WAIT_S 10 /* for the root device's node, after its driver loads */

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "KIT-INITRD: %s %s: %s\n", what, arg, strerror(errno));
	exit(1);
}

/* The value of kernel command line word NAME= in CMDLINE, or NULL. */
static char *word(char *cmdline, const char *name)
{
	size_t n = strlen(name);
	for (char *w = strtok(cmdline, " \n"); w; w = strtok(NULL, " \n"))
		if (!strncmp(w, name, n) && w[n] == '=')
			return strdup(w + n + 1);
	return NULL;
}

static char *cmdline_word(const char *name)
{
	static char text[4096];
	FILE *f = fopen("/proc/cmdline", "r");
	if (!f)
		die("cannot open", "/proc/cmdline");
	size_t got = fread(text, 1, sizeof(text) - 1, f);
	if (ferror(f) || fclose(f) != 0)
		die("cannot read", "/proc/cmdline");
	text[got] = '\0';
	return word(text, name);
}

static void load_modules(void)
{
	struct dirent **names;
	int n = scandir("/modules", &names, NULL, alphasort);
	if (n < 0)
		die("cannot list", "/modules");
	for (int i = 0; i < n; i++) {
		char path[512];
		if (names[i]->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/modules/%s", names[i]->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			die("cannot open", path);
		/* EEXIST: loaded already; ENODEV: not for this CPU (bookworm's
		 * crc32c-intel, which modprobe lists before crc32c_generic) */
		if (syscall(SYS_finit_module, fd, "", 0) != 0) {
			if (errno == ENODEV)
				fprintf(stderr, "kit-initrd: %s not loaded: %s\n", path,
					strerror(errno));
			else if (errno != EEXIST)
				die("cannot load", path);
		}
		if (close(fd) != 0)
			die("cannot close", path);
	}
}

static void wait_for(const char *dev)
{
	struct stat st;
	struct timespec tick = {0, 10 * 1000 * 1000};
	for (int ms = 0; stat(dev, &st) != 0; ms += 10) {
		if (ms >= ROOT_WAIT_S * 1000) {
			fprintf(stderr, "KIT-INITRD: no root device after %d s: %s\n", ROOT_WAIT_S,
				dev);
			exit(1);
		}
		if (nanosleep(&tick, NULL) != 0 && errno != EINTR)
			die("cannot wait for", dev);
	}
}

int main(void)
{
	if (mount("proc", "/proc", "proc", 0, NULL) != 0)
		die("cannot mount", "/proc");
	char *root = cmdline_word("root"), *init = cmdline_word("init");
	if (!root || !init) {
		errno = EINVAL;
		die("the kernel command line wants", "root= and init=");
	}
	if (umount("/proc") != 0)
		die("cannot unmount", "/proc");
	if (mount("devtmpfs", "/dev", "devtmpfs", 0, NULL) != 0)
		die("cannot mount", "/dev");
	load_modules();
	wait_for(root);
	if (mount(root, "/root", "ext4", 0, NULL) != 0)
		die("cannot mount", root);
	if (mount("/dev", "/root/dev", NULL, MS_MOVE, NULL) != 0)
		die("cannot move /dev to", "/root/dev");
	if (chdir("/root") != 0 || mount(".", "/", NULL, MS_MOVE, NULL) != 0 || chroot(".") != 0
	    || chdir("/") != 0)
		die("cannot switch to", root);
	char *argv[] = {init, NULL};
	execv(init, argv);
	die("cannot run", init);
	return 1;
}
