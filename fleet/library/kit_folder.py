#!/usr/bin/python3
"""kit_folder: an Ansible module of make fleet's play (fleet/playbook.yml;
Ansible finds it in the library/ folder beside the play).  A kit's folder
given to the play (FLEET_ROOT, FLEET_ROOT/HOST, a host's kit_dir) must be
the connecting user's alone before the kit is unpacked and `make run` runs
there: a folder another user made first, or may write, could hold a
GNUmakefile (make prefers it to the kit's Makefile) or anything else that
user wants run as the play's user, root.  The stat module and a fail task
could say the same, but not in order (a host's folder is never made inside
a FLEET_ROOT that fails) nor by lstat alone (a link planted in its place).

A folder checked alone is not enough (issue 56): whoever may write a
folder above it can rename the checked folder away and put their own in
its place between this check and `make run`, several tasks later.  So
every folder above it is checked too: not a link, root's or the
connecting user's, and writable by no group or other unless it is sticky
(/tmp) and what lies below it in the path is root's or the user's (the
sticky bit keeps others from renaming it).

paths: the folders, outermost first; each missing one is made 0700 (and
any missing folder above it), then each must be a folder, not a link,
owned by the module's effective user and writable by no group or other,
and so must its parents be, as above.  Fails at the first that is not,
naming it, its owner and its mode.
make: with one path, make's arguments (no -C): make runs in that folder
as opened once here (fchdir on the descriptor whose folder was checked,
not the name again); rc, stdout and stderr are returned as the command
module returns them."""
import os
import pwd
import stat
import subprocess

from ansible.module_utils.basic import AnsibleModule


def owner(uid):
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def make(path):
    """PATH, and each missing folder above it, made 0700 by this user;
    one that appears meanwhile is left as it is (the check judges it)."""
    missing = []
    while not os.path.lexists(path) and path != os.path.dirname(path):
        missing.append(path)
        path = os.path.dirname(path)
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass


def why_not(path):
    """Why PATH is not this user's alone, or None where it is."""
    me = os.geteuid()
    st = os.lstat(path)
    what = f"{path} (owner {owner(st.st_uid)}, mode {stat.S_IMODE(st.st_mode):04o})"
    if stat.S_ISLNK(st.st_mode):
        return f"{what} is a symbolic link: want a folder"
    if not stat.S_ISDIR(st.st_mode):
        return f"{what} is not a folder"
    if st.st_uid != me or st.st_mode & 0o022:
        return (f"{what} is not the connecting user's alone: want a folder owned by "
                f"{owner(me)} that no group or other may write (a missing one is made so, 0700)")
    return None


def why_not_above(path):
    """Why a folder above PATH lets someone else swap PATH, or None."""
    me = os.geteuid()
    parts = os.path.normpath(path).split(os.sep)[1:]
    here = os.sep
    for i, name in enumerate(parts[:-1]):
        st = os.lstat(here)
        below = os.lstat(os.path.join(here, name))
        what = f"{here} (owner {owner(st.st_uid)}, mode {stat.S_IMODE(st.st_mode):04o})"
        if stat.S_ISLNK(st.st_mode):
            return f"{what}, above {path}, is a symbolic link: give the folder's real path"
        if st.st_uid not in (0, me):
            return f"{what}, above {path}, is neither root's nor {owner(me)}'s"
        if st.st_mode & 0o022 and not (st.st_mode & stat.S_ISVTX and below.st_uid in (0, me)):
            return (f"{what}, above {path}, may be written by others, who could put a folder of "
                    "their own in its place")
        here = os.path.join(here, name)
    st = os.lstat(here)
    if stat.S_ISLNK(st.st_mode):
        return f"{here}, above {path}, is a symbolic link: give the folder's real path"
    return None


def opened(path):
    """PATH opened once (not through a link), checked by its descriptor."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        os.close(fd)
        raise PermissionError(f"{path}: changed since it was checked")
    return fd


def main():
    module = AnsibleModule(argument_spec={
        "paths": {"type": "list", "elements": "str", "required": True},
        "make": {"type": "list", "elements": "str", "required": False, "default": None}})
    paths, argv = module.params["paths"], module.params["make"]
    if argv is not None and len(paths) != 1:
        module.fail_json(msg="make: give one path, the folder make runs in")
    for path in paths:
        if not os.path.isabs(path):
            module.fail_json(msg=f"{path}: want an absolute path")
        try:
            if argv is None:
                make(path)
            why = why_not_above(path) or why_not(path)
        except OSError as e:
            module.fail_json(msg=f"{path}: {e.strerror or e}")
        if why:
            module.fail_json(msg=why)
    if argv is None:
        module.exit_json(changed=False)
    try:
        fd = opened(paths[0])
        os.fchdir(fd)
        os.close(fd)
    except OSError as e:
        module.fail_json(msg=f"{paths[0]}: {e.strerror or e}")
    p = subprocess.run(["make", *argv], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, errors="replace")
    module.exit_json(changed=True, rc=p.returncode, stdout=p.stdout, stderr=p.stderr)


if __name__ == "__main__":
    main()
