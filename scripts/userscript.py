"""userscript.py: your own script (make run SCRIPT=my.bt or SCRIPT=my.stp,
docs/bodies.md): what the kit takes from it and gives back.

- SCRIPT is data: its text is read once (read(): one descriptor, opened
  without following a link and without blocking, a regular file checked
  by fstat, its size capped), and only that text is used after (a Script,
  the path with its .text: the file is never opened by name again, so a
  file swapped for a link, a FIFO or another user's file after the check
  changes nothing); a copy is run from the run's scratch folder (its path
  never reaches a tool's grammar or a shell), as written, with the kit's
  live line printed once every other probe is attached (bpftrace's one
  BEGIN, the script's own where it has one; SystemTap's begin, one more):
  that is how the kit knows when to release the target (with_live).  A
  script that ends by itself before the workload does fails its run
  (tracers/base.py, script_events).
- The tracer is named by the file's ending (configs.SCRIPT_KINDS).
- Its events are not its own count: they are the marker's, by the
  program's count (the kit's marker fires once a call) or by the
  witnesses of a user's program (measure/witness.py).  What it said it
  lost is read from its own output by meaning ("Lost N events", "lost N
  perf_events"): its stdout and stderr, never the run's log, which holds
  the workload's output too.
- The loop body it is closest to (closest): the dearest feature its text
  has, from bodies.BODIES, whose price the loop predicts it by; the
  others it has are named (a script with several is dearer than any one).
- Its output is kept beside the run's log (keep), cut at KEEP_BYTES.

Nothing to run: `import userscript`.
"""
import errno
import hashlib
import os
import re
import stat

import configs
from bodies import BODIES

MAX_SCRIPT_BYTES = 1 << 20  # a script longer than this is refused (params)
KEEP_BYTES = 8 << 20  # a run's output kept, at most, beside its log
LIVE_PROBE = {  # the one probe added at the end, LIVE being the line it prints
    "bpftrace": 'BEGIN {{ printf("{live}\\n"); }}',
    "stap": 'probe begin {{ printf("{live}\\n") }}',
}
# What each tracer says of events its output lost, by meaning: bpftrace's
# "Lost 12 events" (its perf or ring buffer), stapbpf's "lost 12 perf_events".
LOST = {"bpftrace": re.compile(r"\bLost (\d+) events\b"),
        "stap": re.compile(r"\blost (\d+) perf_events\b")}

# A feature of a script's text and the body of bodies.BODIES it is
# closest to, dearest first (the first that matches decides): per tracer.
FEATURES = {
    "bpftrace": (
        (re.compile(r"\[[^\]]*\bustack\b"), "ustack-count", "a map keyed by ustack"),
        (re.compile(r"\bustack\s*\(\s*[1-4]\s*\)"), "ustack-4", "ustack of at most 4 frames"),
        (re.compile(r"\bustack\b"), "ustack", "ustack"),
        (re.compile(r"\b(printf|print|cat|system)\s*\("), "printf", "output every event"),
        (re.compile(r"\bstr\s*\([^,()]*,\s*(6[5-9]|[7-9]\d|[1-9]\d{2,})\s*\)"), "str256",
         "str() of over 64 bytes"),
        (re.compile(r"\bstr\s*\([^,()]*,\s*(1[0-6]|[1-9])\s*\)"), "str16",
         "str() of 16 bytes or fewer"),
        (re.compile(r"\bstr\s*\("), "str64", "str()"),
        (re.compile(r"\b(l?hist)\s*\("), "hist", "a histogram"),
        (re.compile(r"\bnsecs\b"), "nsecs", "nsecs"),
        (re.compile(r"@\w*\s*\["), "map-tid", "a keyed map"),
        (re.compile(r"@\w*\s*(\+\+|--|[-+]=)"), "shared", "a shared counter"),
        (re.compile(r"\b(count|sum|avg|min|max|stats)\s*\("), "count", "a count"),
    ),
    "stap": (
        (re.compile(r"\b(print_)?(ubacktrace|ustack|sprint_ubacktrace)\b"), "ubacktrace",
         "a user backtrace"),
        (re.compile(r"\b(printf|println|print|printd|printdln)\b"), "printf",
         "output every event"),
        (re.compile(r"\buser_string\w*\b"), "string", "user_string"),
        (re.compile(r"\b(gettimeofday_\w+|local_clock_\w+|cpu_clock_\w+)\b"), "time",
         "a timestamp"),
    ),
}


class Script(str):
    """SCRIPT as read once (read()): the path it was given as (a str, for
    words and its ending), and .text, what it held then."""

    def __new__(cls, path, text):
        self = super().__new__(cls, path)
        self.text = text
        return self


class Unreadable(ValueError):
    """Why SCRIPT is not a script the kit takes, in words."""


def read(path):
    """The Script at PATH, read once through one descriptor: not a link
    (O_NOFOLLOW), not waited on (O_NONBLOCK: a FIFO or a device answers at
    once or is refused), a regular file by fstat, at most MAX_SCRIPT_BYTES,
    UTF-8.  Raises Unreadable (or OSError) naming why."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as e:
        if e.errno == errno.ELOOP:  # the name is a symbolic link
            raise Unreadable("it is a symbolic link: give the file itself") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable("it is not a regular file")
        if st.st_size > MAX_SCRIPT_BYTES:
            raise Unreadable(f"it has {st.st_size:,} bytes")
        data, chunk = b"", b"."
        while chunk and len(data) <= MAX_SCRIPT_BYTES:
            chunk = os.read(fd, MAX_SCRIPT_BYTES + 1 - len(data))
            data += chunk
    finally:
        os.close(fd)
    if len(data) > MAX_SCRIPT_BYTES:  # (it grew after fstat)
        raise Unreadable(f"it has over {MAX_SCRIPT_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable("it is not UTF-8 text") from None
    why = kind(path) and live_problem(kind(path), text)
    if why:
        raise Unreadable(why)
    return Script(path, text)


# Features every dearer body of BODIES has in its price already: the count,
# and a map keyed by thread that its value is stored in.
INSIDE = ("count", "map-tid")


def timing_key(script):
    """What a script row's timings are kept under beside its name (plan's
    keyed): the SCRIPT's text, hashed; another script's per-call time
    sizes nothing of this one's runs."""
    return " " + hashlib.sha256(script.text.encode()).hexdigest()[:16]


def kind(path):
    """The tracer that runs PATH, by its ending, or None."""
    return configs.SCRIPT_KINDS.get(os.path.splitext(path)[1])


def row(path, user):
    """The configuration that runs SCRIPT PATH: on a user's program (USER)
    or on the kit's marker."""
    return configs.script_row(kind(path), user)


def configs_for(path, user, chosen):
    """make run SCRIPT=PATH's rows (PATH a Script): CHOSEN (CONFIGS, or None), the script's
    row (on a USER's program or on the kit's marker), the row it is
    measured against, the loop body closest to it (the prediction's twin)
    and the baseline it is priced against (kin.companions adds what
    that body is priced beside) and, on a
    user's program, the rows that witness its events."""
    tracer = kind(path)
    body, _ = closest(tracer, path.text)
    me = configs.BY_NAME[configs.script_row(tracer, user)]
    want = {me.name, me.against, body, configs.BY_NAME[body].against,
            *(configs.SCRIPT_WITNESSES if user else ())}
    return [c for c in configs.CONFIGS if c.name in want or c in (chosen or ())]


def closest(tracer, text):
    """(the body row of bodies.BODIES closest to TEXT, the feature that
    decided, in words): its dearest feature's; a script with none of them
    is closest to its back-end's plainest body (a count, the trap)."""
    comments = {"bpftrace": r"//[^\n]*|/\*.*?\*/", "stap": r"//[^\n]*|#[^\n]*|/\*.*?\*/"}
    bare = re.sub(comments[tracer], " ", text, flags=re.S)
    bare = re.sub(r'"(\\.|[^"\\])*"', '""', bare)  # a string's words are not its features
    bare = per_event(tracer, bare)
    found = [(body, words) for pattern, body, words in FEATURES[tracer] if pattern.search(bare)]
    if not found:
        return f"{tracer}-body-{BODIES[tracer][0][0]}", "none of the dearer features"
    group = lambda b: re.match(r"[a-z]+", b).group(0)  # noqa: E731  (str16, str256: str)
    more = [w for b, w in found[1:] if b not in INSIDE and group(b) != group(found[0][0])]
    return f"{tracer}-body-{found[0][0]}", found[0][1] + (
        f"; it has {', '.join(more)} too, which the loop prices apart, so it may come out "
        "dearer" if more else "")


def record(path, folder):
    """meta.json's "script": what ran and the loop body it is set beside;
    a copy of the script (PATH, a Script), as it was read, kept in the
    results FOLDER: made anew, 0600 (what root read is no one else's to
    read in results/, whatever the user's file allowed)."""
    tracer = kind(path)
    text = path.text
    copy = "script" + os.path.splitext(path)[1]
    fd = os.open(os.path.join(folder, copy),
                 os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    body, words = closest(tracer, text)
    return {"path": path, "tracer": tracer, "copy": copy, "closest": body, "feature": words}


# A probe that fires on a user's process (not a begin, end or timer probe):
# what a body's features are read from.
EVENT_PROBE = {"bpftrace": re.compile(r"\b(usdt|uprobe|uretprobe|u|ur|U):"),
               "stap": re.compile(r"\bprocess\s*\(")}


def per_event(tracer, text):
    """The handlers in TEXT (comments and strings out) of its probes that
    fire on a user's process (EVENT_PROBE), a top-level `{...}` each, with
    what stands before it up to the previous one its header; all of TEXT
    where none is found."""
    found = [text[start:end + 1] for head, start, end in blocks(text)
             if EVENT_PROBE[tracer].search(text[head:start])]
    return " ".join(found) if found else text


def blocks(bare):
    """(head, open, close) of each top-level `{...}` in BARE (comments and
    strings out): its header from HEAD (just after the block before) up to
    OPEN, its `{`; CLOSE, its `}`."""
    depth, start, head = 0, 0, 0
    for i, ch in enumerate(bare):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                yield head, start, i
                head = i + 1


def masked(text):
    """TEXT with its comments and strings blanked, each character kept in
    its place (so an offset in it is one in TEXT)."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))  # noqa: E731
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(\\.|[^"\\])*"', blank, text, flags=re.S)


# bpftrace's BEGIN in a block's header (its probe list: after the last `;`
# or `#` line before it): alone, with a predicate, or among other probes.
BEGIN_ALONE = re.compile(r"\s*(BEGIN|begin)\s*")
BEGIN_PREDICATE = re.compile(r"\s*(BEGIN|begin)\s*/(.*)/\s*", re.S)
BEGIN_LISTED = re.compile(r"(?:^|,)\s*(BEGIN|begin)\s*(?=,|/|\Z)")
LISTED_PREDICATE = ("its BEGIN shares a probe list that has a predicate (`BEGIN, END /x/ {`), "
                    "and bpftrace takes one BEGIN probe, where the kit prints its live line: "
                    "give BEGIN a block of its own")


def first_begin(bare):
    """(how, its probe list's start, the BEGIN's match in it, open, close)
    of the first top-level block of bpftrace text BARE (comments and
    strings out) whose probes hold BEGIN, HOW "alone", "predicate",
    "listed" or "listed-predicate"; None where none does."""
    for head, start, end in blocks(bare):
        at = head
        for m in re.finditer(r";|^[ \t]*#[^\n]*", bare[head:start], re.M):
            at = head + m.end()
        part = bare[at:start]
        for how, pattern in (("alone", BEGIN_ALONE), ("predicate", BEGIN_PREDICATE)):
            m = pattern.fullmatch(part)
            if m:
                return how, at, m, start, end
        m = BEGIN_LISTED.search(part.rstrip())
        if m:
            how = "listed-predicate" if part.rstrip().endswith("/") else "listed"
            return how, at, m, start, end
    return None


def live_problem(tracer, text):
    """Why the kit cannot add its live line to script TEXT (with_live), in
    words, or None."""
    found = tracer == "bpftrace" and first_begin(masked(text))
    return LISTED_PREDICATE if found and found[0] == "listed-predicate" else None


def with_live(tracer, text, live):
    """TEXT as written, and the kit's live line printed once every probe is
    attached: bpftrace takes one BEGIN probe alone ("More than one BEGIN
    probe defined"), so where the script has its own, the printf goes first
    in it, whatever its predicate (`BEGIN /x/ { ... }` becomes `BEGIN {
    printf(...); if (x) { ... } }`); a BEGIN that shares its probe list
    (`BEGIN, END { ... }`) leaves it, blanked, for a block of its own at the
    end, its body the same.  Lines keep their numbers (a tool's error names
    the user's line) but in what is appended.  Else (and for SystemTap,
    which takes several) one probe is appended.  A BEGIN listed with a
    predicate is refused before (live_problem)."""
    found = tracer == "bpftrace" and first_begin(masked(text))
    printf = f'printf("{live}\\n");'
    if not found:
        return text + "\n" + LIVE_PROBE[tracer].format(live=live) + "\n"
    how, at, m, start, end = found
    if how == "alone":
        return text[:start + 1] + f" {printf} " + text[start + 1:]
    if how == "predicate":
        b, p0, p1 = at + m.end(1), at + m.start(2), at + m.end(2)
        return (text[:b] + f" {{ {printf} if" + text[b:p0 - 1] + "(" + text[p0:p1] + ")"
                + text[p1 + 1:start] + text[start:end + 1] + " }" + text[end + 1:])
    if how == "listed-predicate":
        raise ValueError(LISTED_PREDICATE)
    t0, t1 = at + m.start(1), at + m.end(1)
    comma = re.match(r"\s*,", text[t1:start])
    t0, t1 = (t0, t1 + comma.end()) if comma else (at + m.start(), t1)
    blank = re.sub(r"[^\n]", " ", text[t0:t1])
    return (text[:t0] + blank + text[t1:] + f"\nBEGIN {{ {printf} " + text[start + 1:end]
            + "}\n")


def runnable(path, tracer, scratch, live):
    """A copy of the script PATH (a Script: its text as read once) in
    SCRATCH, as written, and the kit's live line (with_live); its path."""
    text = path.text
    ext = os.path.splitext(path)[1]
    out = os.path.join(scratch, "script" + ext)
    with open(out, "w", encoding="utf-8") as f:
        f.write(with_live(tracer, text, live))
    return out


def cut(src, dst):
    """File SRC's first KEEP_BYTES written to DST (open, binary), and a line
    saying where it was cut if it was."""
    size = os.path.getsize(src)
    with open(src, "rb") as f:
        dst.write(f.read(KEEP_BYTES))
    if size > KEEP_BYTES:
        dst.write(f"\n[kit: cut here: {size:,} bytes in all, the first {KEEP_BYTES:,} "
                  "kept]\n".encode())


def keep(out, err, log, tracer):
    """The run's output OUT kept beside its LOG (cut at KEEP_BYTES); (what
    it said it lost, in all: in its own output alone, OUT and its stderr
    ERR (or None), never the log, which holds the workload's output too,
    or 0; the kept file's name)."""
    kept = log[:-len(".log")] + ".script.out" if log.endswith(".log") else log + ".script.out"
    with open(kept, "wb") as dst:
        cut(out, dst)
    lost = 0
    for name in (out, err) if err else (out,):
        with open(name, errors="replace") as f:
            for line in f:
                lost += sum(int(n) for n in LOST[tracer].findall(line))
    return lost, os.path.basename(kept)
