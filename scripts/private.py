"""private.py: the one rule for every folder the kit makes in a place others
may write (/dev/shm, /tmp, /var/tmp, build/ where others can read it), so
that no name another user plants can be taken for the kit's (issue 56).

- Made exclusively, with a name no one can guess: tempfile.mkdtemp (an
  O_EXCL mkdir of a random name, failing where anything is there), owned by
  the user the kit runs as, 0700 (0711 where another user of the kit's own
  choosing, PostgreSQL's `postgres`, must pass through it to a folder of its
  own inside).
- Held by descriptor from the moment it is made: its (device, inode) is
  what the kit knows of it; check() compares the name with the held folder
  (lstat against fstat) before the kit trusts the name again, and remove()
  removes it only while the name is still the held folder.
- What the kit did not make it never uses: a folder found by name (the
  sweep of a dead kit's leftovers) is opened without following a link and
  judged by fstat (found()), never by re-resolving the name.

Nothing to run: `from private import Private; d = Private.make(parent, prefix)`.
"""
import os
import shutil
import stat
import tempfile

OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Planted(OSError):
    """A name the kit made now names something else: refused, in words."""


class Private:
    """A folder the kit made (make()) or found as it makes them (found()),
    held open: path, fd, and (dev, ino) as made."""

    def __init__(self, path, fd):
        self.path, self.fd = path, fd
        st = os.fstat(fd)
        self.id = (st.st_dev, st.st_ino)

    @classmethod
    def make(cls, parent, prefix, suffix="", mode=0o700):
        """A new folder in PARENT named PREFIX<random>SUFFIX, this user's,
        MODE (0700 or 0711: never group or other write)."""
        assert not mode & 0o066, f"{mode:o}: a private folder is no one else's to read or write"
        path = tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=parent)
        fd = os.open(path, OPEN)
        try:
            os.fchmod(fd, mode)
            self = cls(path, fd)
            self.check()
        except BaseException:
            os.close(fd)
            raise
        return self

    @classmethod
    def found(cls, path, owners):
        """The folder at PATH as the kit makes them (a folder, not a link,
        owned by one of OWNERS, no group or other write), opened once and
        judged by its descriptor; None where it is anything else."""
        try:
            fd = os.open(path, OPEN)
        except OSError:
            return None
        st = os.fstat(fd)
        if st.st_uid not in owners or st.st_mode & 0o066 or not stat.S_ISDIR(st.st_mode):
            os.close(fd)
            return None
        return cls(path, fd)

    def same(self, path=None):
        """PATH (the held name by default) is still the held folder."""
        try:
            st = os.lstat(path or self.path)
        except OSError:
            return False
        return stat.S_ISDIR(st.st_mode) and (st.st_dev, st.st_ino) == self.id

    def check(self):
        """Raises Planted where the name no longer leads to the held folder,
        or the folder is no longer this user's alone."""
        st = os.fstat(self.fd)
        if st.st_uid != os.geteuid() or st.st_mode & 0o066:
            raise Planted(f"{self.path}: no longer this user's alone "
                          f"(owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o})")
        if not self.same():
            raise Planted(f"{self.path}: the name no longer leads to the folder the kit made")

    def sub(self, name, mode=0o700, uid=None, gid=None):
        """A folder NAME made inside (exclusively, relative to the held
        descriptor, never through the name), given to UID:GID if named;
        its path."""
        os.mkdir(name, mode, dir_fd=self.fd)
        fd = os.open(name, OPEN, dir_fd=self.fd)
        try:
            if uid is not None:
                os.fchown(fd, uid, gid)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        return os.path.join(self.path, name)

    def inode_of(self, name):
        """(dev, ino) of NAME inside, opened relative to the held folder
        without following a link, or None."""
        try:
            fd = os.open(name, OPEN, dir_fd=self.fd)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            return st.st_dev, st.st_ino
        finally:
            os.close(fd)

    def remove(self):
        """Removes the folder while its name still leads to it (rmtree
        never follows a link inside); closes the descriptor.  False where
        the name leads elsewhere now (left, and said by the caller)."""
        ok = self.same()
        if ok:
            shutil.rmtree(self.path, ignore_errors=True)
        self.close()
        return ok

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
