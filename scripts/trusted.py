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


def why_not(top, uids=None, prune=(), what="the checkout"):
    """Why root must not run what lies in the checkout TOP (its real path
    is checked), in one line naming the place and its owner; None where
    every place in it and above it is UIDS' alone.  PRUNE: more folders
    below TOP, relative, not walked (build/'s root file systems).  WHAT:
    TOP's name in the line (STAP_MODULES: the modules' folder)."""
    uids = owners() if uids is None else uids
    pruned = set(PRUNED) | {os.path.normpath(p) for p in prune}
    top = os.path.realpath(top)
    names = ", ".join(owner(u) for u in sorted(uids))
    return above(top, uids, names, what) or inside(top, uids, names, pruned, what)


def above(top, uids, names, what):
    """Why a folder from / down to TOP (included) is not UIDS' alone."""
    here = os.sep
    for name in top.split(os.sep)[1:] + [None]:
        st = os.lstat(here)
        if stat.S_ISLNK(st.st_mode):
            return f"{_what(here, st)} is a symbolic link"
        below = os.lstat(os.path.join(here, name)) if name else None
        if st.st_uid not in uids:
            return (f"{_what(here, st)}, {'above ' if name else ''}{what} {top}, is "
                    f"not {names}'s")
        if st.st_mode & 0o022 and not (name and st.st_mode & stat.S_ISVTX
                                       and below.st_uid in uids):
            return f"{_what(here, st)} may be written by others"
        if name:
            here = os.path.join(here, name)
    return None


def inside(top, uids, names, pruned, what):
    """Why a folder or file in TOP (not PRUNED, links not followed) is not UIDS' alone."""
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
                return (f"{_what(path, st)}, in {what}, is not {names}'s: root would "
                        "run or load what its owner put there")
            if st.st_mode & 0o022 and not stat.S_ISLNK(st.st_mode):
                return (f"{_what(path, st)}, in {what}, may be written by others: root "
                        "would run or load what they put there")
            if (name in dirs and os.path.normpath(os.path.join(rel, name)) not in pruned
                    and st.st_mode & 0o044):  # (0700, 0711: a private scratch's inside is the kit's)
                walk.append(name)
        dirs[:] = walk
    return None


def checked(who):
    """As root, the checkout walked (why_not): False, having said why in
    one line, where root must run nothing from it; True otherwise (and
    always without root).  As root PATH is then kept to the folders root
    may trust (trusted_path)."""
    if os.geteuid() != 0:
        return True
    why = why_not(host.ROOT, prune=[os.path.join("build", d) for d in host.ROOT_FILE_SYSTEMS])
    if why:
        host.say(f"{who}: {why}; as root the kit runs nothing from a checkout others may write "
                 "(docs/cleanup.md: a shared checkout); nothing was run")
        return False
    os.environ["PATH"], dropped = trusted_path(os.environ.get("PATH", ""))
    for d, reason in dropped:
        host.say(f"{who}: PATH's {d!r} left out: {reason}")
    return True


def trusted_path(path, uids=None):
    """(PATH kept to its absolute folders that are UIDS' alone from / down
    (above()), [(a folder left out, why)]): as root every tool (make,
    stap, bpftrace, the first word of WORKLOAD) is found by PATH, and a
    folder another user may write would have root run their program.  A
    folder that does not exist is left out unsaid."""
    uids = owners() if uids is None else uids
    names = ", ".join(owner(u) for u in sorted(uids))
    kept, dropped = [], []
    for d in path.split(os.pathsep):
        if not os.path.isabs(d):
            dropped.append((d, "not an absolute path"))
        elif os.path.isdir(d) and d not in kept:
            why = above(os.path.realpath(d), uids, names, "the PATH folder")
            (dropped.append((d, why)) if why else kept.append(d))
    return os.pathsep.join(kept), dropped


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
