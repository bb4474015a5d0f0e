"""trusted.py: what root may run, load or write in the checkout (issue 67).

As root, `make run` (and make lab, lifecycle, atlas: every door that calls
make_all here) runs make in the checkout, then runs build/benchmark-*,
loads build/libkit-semaphore-audit.so into a user's command and
build/memlock-shim.so into stapbpf, and writes fixed names in build/.
Whoever may write any of that, or a folder above it, may put their own
there first and have root run it.  So before make runs, every folder from
/ down to the checkout, and every folder and file inside it (build/
included; build/'s root file systems and results/ pruned: their own
writers made them as root; so are the kit's private scratch folders,
root's and unreadable by others, whose insides only the kit fills), must
be:

- owned by root, or by the user who called sudo (SUDO_UID: their own
  checkout, run with their own sudo, is theirs to trust);
- writable by no group or other, except a sticky folder above the
  checkout (/tmp) whose entry below is such an owner's;
- not a symbolic link where a folder is expected above the checkout.

The first that is not is named, with its owner and mode, and nothing is
run: a shared checkout is meant to be built and run by one user (root's
own clone, or each user's own clone; docs/cleanup.md).  Without root
nothing is checked: a user runs only what they may write anyway.

Nothing to run: `import trusted; trusted.make_all("run")`.
"""
import os
import pwd
import stat

import host

PRUNED = ("results", ".git")  # below the checkout, not walked (and what the caller adds)


def owner(uid):
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def owners(env=None):
    """The uids whose files root may run: root's, and the sudo caller's."""
    env = os.environ if env is None else env
    uids = {0}
    if (env.get("SUDO_UID") or "").isdigit():
        uids.add(int(env["SUDO_UID"]))
    return uids


def _what(path, st):
    return f"{path} (owner {owner(st.st_uid)}, mode {stat.S_IMODE(st.st_mode):04o})"


def why_not(top, uids=None, prune=()):
    """Why root must not run what lies in the checkout TOP (its real path
    is checked), in one line naming the place and its owner; None where
    every place in it and above it is UIDS' alone.  PRUNE: more folders
    below TOP, relative, not walked (build/'s root file systems)."""
    uids = owners() if uids is None else uids
    pruned = set(PRUNED) | {os.path.normpath(p) for p in prune}
    top = os.path.realpath(top)
    names = ", ".join(owner(u) for u in sorted(uids))
    # above: / down to TOP
    here = os.sep
    for name in top.split(os.sep)[1:] + [None]:
        st = os.lstat(here)
        if stat.S_ISLNK(st.st_mode):
            return f"{_what(here, st)} is a symbolic link"
        below = os.lstat(os.path.join(here, name)) if name else None
        if st.st_uid not in uids:
            return (f"{_what(here, st)}, {'above ' if name else ''}the checkout {top}, is "
                    f"not {names}'s")
        if st.st_mode & 0o022 and not (name and st.st_mode & stat.S_ISVTX
                                       and below.st_uid in uids):
            return f"{_what(here, st)} may be written by others"
        if name:
            here = os.path.join(here, name)
    # inside: every folder and file, without following a link
    for d, dirs, files in os.walk(top):
        rel = os.path.relpath(d, top)
        walk = []
        for name in sorted(dirs) + sorted(files):
            path = os.path.join(d, name)
            try:
                st = os.lstat(path)
            except FileNotFoundError:  # (gone meanwhile: a kit's own scratch)
                continue
            if st.st_uid not in uids:
                return (f"{_what(path, st)}, in the checkout, is not {names}'s: root would "
                        "run or load what its owner put there")
            if st.st_mode & 0o022 and not stat.S_ISLNK(st.st_mode):
                return (f"{_what(path, st)}, in the checkout, may be written by others: root "
                        "would run or load what they put there")
            if (name in dirs and os.path.normpath(os.path.join(rel, name)) not in pruned
                    and st.st_mode & 0o044):  # (0700, 0711: a private scratch's inside is the kit's)
                walk.append(name)
        dirs[:] = walk
    return None


def checked(who):
    """As root, the checkout walked (why_not): False, having said why in
    one line, where root must run nothing from it; True otherwise (and
    always without root)."""
    why = why_not(host.ROOT, prune=[os.path.join("build", d) for d in host.ROOT_FILE_SYSTEMS]) \
        if os.geteuid() == 0 else None
    if why:
        host.say(f"{who}: {why}; as root the kit runs nothing from a checkout others may write "
                 "(docs/cleanup.md: a shared checkout); nothing was run")
    return not why


def make_all(who):
    """`make all` (every build whose dependencies are here); False, having
    said so, if make failed, or, as root, where the checkout is not root's
    (or the sudo caller's) alone (checked): then make never runs."""
    if not checked(who):
        return False
    ok = host.run([*host.MAKE, "all"], capture=False)[0] == 0
    if not ok:
        host.say(f"{who}: make failed; nothing was run")
    return ok
