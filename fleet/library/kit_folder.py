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

paths: the folders, outermost first; each missing one is made 0700 (and
any missing folder above it), then each must be a folder, not a link,
owned by the module's effective user and writable by no group or other.
Fails at the first that is not, naming it, its owner and its mode."""
import os
import pwd
import stat

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


def main():
    module = AnsibleModule(argument_spec={"paths": {"type": "list", "elements": "str",
                                                    "required": True}})
    for path in module.params["paths"]:
        if not os.path.isabs(path):
            module.fail_json(msg=f"{path}: want an absolute path")
        try:
            make(path)
            why = why_not(path)
        except OSError as e:
            module.fail_json(msg=f"{path}: {e.strerror or e}")
        if why:
            module.fail_json(msg=why)
    module.exit_json(changed=False)


if __name__ == "__main__":
    main()
