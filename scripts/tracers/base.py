"""base.py: what every tracer back-end shares (see tracers/__init__.py)."""
import os
import shutil
import subprocess


class TracerError(Exception):
    """A tracer could not attach, count or detach; the message says why."""


class Tracer:
    name = "?"
    packages = ()  # Debian packages that provide it
    commands = ()  # programs it needs on PATH

    def available(self):
        return self.need_commands()

    def skip_reason(self, cfg):
        """Why this one configuration cannot run here, or None."""
        return None

    def setup(self, kit):
        pass

    def attach(self, run):
        pass

    def wrap(self, run, cmd):
        return cmd

    def watch(self, run, pgid):
        """Called while the run's process group runs, until it returns
        True: a back-end that must learn its tracer's pid does it here."""
        return True

    def events(self, run):
        raise NotImplementedError

    def detach(self, run):
        pass

    def teardown(self):
        pass

    # Helpers for the back-ends.
    def need_commands(self, *extra):
        for c in tuple(self.commands) + extra:
            if not shutil.which(c):
                pkgs = " ".join(self.packages) or "?"
                return f"{c} not found (Debian package: {pkgs})"
        return None

    @staticmethod
    def need_root():
        return None if os.geteuid() == 0 else "needs root (uprobes and tracefs are root-only)"

    @staticmethod
    def sh(cmd, log=None, check=True, timeout=120, env=None):
        """Run CMD (a list, never a shell string); its output goes to LOG
        (appended) and is returned.  A failure raises TracerError with the
        command's last line of output."""
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise TracerError(f"{cmd[0]} hung for {timeout} s")
        except OSError as e:
            raise TracerError(f"{cmd[0]}: {e.strerror}")
        if log:
            with open(log, "a") as f:
                f.write("$ " + " ".join(cmd) + "\n" + p.stdout)
        if check and p.returncode != 0:
            last = [ln for ln in p.stdout.splitlines() if ln.strip()]
            raise TracerError(f"{os.path.basename(cmd[0])} failed (exit {p.returncode})"
                              + (f": {last[-1].strip()}" if last else ""))
        return p.stdout
