"""params.py: the runner's inputs, each in one place: make's variable
NAME, run.py's flag --name, its range (the error names both the variable
and what is allowed) and its default.  `make run` hands the variables over
through the environment only; a flag given to run.py wins over it.  A
tracer back-end adds its own (SystemTap's STAP_RUNTIME) through its
params().  `python3 scripts/run.py --help` lists them all.

Nothing to run: run.py calls parse_args().
"""
import argparse
import fnmatch
import os
import random
import re
import shlex
import struct
import sys
from dataclasses import dataclass

import configs
import elfinfo
import kin
import kitlock
import record
import userscript
import workloads
from host import ROOT

MAX_THREADS = 1024  # as in src/benchmark.c
MAX_ITER = 10 ** 12  # as in src/benchmark.c
MAX_RATE = 10 ** 9  # calls/s per thread, as in src/benchmark.c
TIGHT = "max"  # the rate of today's tight loop
MAX_RUNS = 1000  # the most runs of a cell RUNS, MIN_RUNS and MAX_RUNS allow
DEFAULT_TIME_LIMIT = 600  # s, for a run whose cell has no warm-up estimate
WARM_UPS = ("auto", "all")  # WARM_UP's values, the default first
TIME_LIMIT_MARGIN = 120  # s added to 10x the expected loop: tracer start and end


def cpus():
    """CPUs this process may run on (its affinity mask, not the machine's)."""
    return len(os.sched_getaffinity(0))


def parse_threads(text):
    """THREADS: 'A..B', 'A,B,C' or 'A', each 1..MAX_THREADS, ascending."""
    allowed = f"'A..B' (A <= B), 'A,B,...' or 'A', whole numbers in 1..{MAX_THREADS}"
    m = re.fullmatch(r"(\d+)\.\.(\d+)", text)
    if m:
        values = list(range(int(m.group(1)), int(m.group(2)) + 1))
        if not values:
            raise argparse.ArgumentTypeError(f"THREADS '{text}' is not allowed: want {allowed}")
    elif re.fullmatch(r"\d+(,\d+)*", text):
        values = [int(x) for x in text.split(",")]
    else:
        raise argparse.ArgumentTypeError(f"THREADS '{text}' is not allowed: want {allowed}")
    if min(values) < 1 or max(values) > MAX_THREADS:
        raise argparse.ArgumentTypeError(f"THREADS '{text}' is not allowed: want {allowed}")
    return sorted(set(values))


def int_in(name, lo, hi):
    def parse(text):
        if not re.fullmatch(r"\d+", text) or not lo <= int(text) <= hi:
            raise argparse.ArgumentTypeError(
                f"{name} '{text}' is not allowed: want a whole number in {lo}..{hi}")
        return int(text)
    return parse


def flag01(name):
    def parse(text):
        if text not in ("0", "1"):
            raise argparse.ArgumentTypeError(f"{name} '{text}' is not allowed: want 0 or 1")
        return text == "1"
    return parse


def parse_configs(text, name="CONFIGS"):
    """CONFIGS (or NAME): configuration names or shell patterns, comma- or
    space-separated; in the table's order."""
    names = [c.name for c in configs.CONFIGS]
    picked = []
    for pat in re.split(r"[,\s]+", text.strip()):
        if not pat:
            continue
        hits = fnmatch.filter(names, pat)
        if not hits:
            raise argparse.ArgumentTypeError(
                f"{name} '{pat}' matches no configuration; allowed: {', '.join(names)} "
                "(or shell-style patterns of them; `make configs` lists them)")
        picked += [h for h in hits if h not in picked]
    if not picked:
        raise argparse.ArgumentTypeError(f"{name} is empty")
    # Keep the table's order, so baselines stay first.
    return [c for c in configs.CONFIGS if c.name in picked]


def parse_rates(text):
    """RATE: calls per second per thread, comma-separated: whole numbers
    in 1..MAX_RATE, or max (the tight loop); ascending, max last."""
    allowed = f"a comma-separated list of whole numbers in 1..{MAX_RATE} or {TIGHT}"
    items = text.split(",")
    if not all(i == TIGHT or (re.fullmatch(r"\d+", i) and 1 <= int(i) <= MAX_RATE)
               for i in items):
        raise argparse.ArgumentTypeError(f"RATE '{text}' is not allowed: want {allowed}")
    paced = sorted({int(i) for i in items if i != TIGHT})
    return paced + ([TIGHT] if TIGHT in items else [])


def number_in(name, lo, hi, what, extra=""):
    def parse(text):
        try:
            v = float(text)
        except ValueError:
            v = -1
        if not lo <= v <= hi or v != v:
            raise argparse.ArgumentTypeError(
                f"{name} '{text}' is not allowed: want {what} in {lo}..{hi}{extra}")
        return v
    return parse


def seconds_in(name, lo, hi, extra=""):
    return number_in(name, lo, hi, "seconds", extra)


def folder(name):
    """An existing folder, or '' for none."""
    def parse(text):
        if text and not os.path.isdir(text):
            raise argparse.ArgumentTypeError(f"{name} '{text}' is not allowed: want an "
                                             "existing folder, or nothing")
        return os.path.abspath(text) if text else ""
    return parse


def file_in(name):
    """A file's path whose folder exists (the file itself may not yet)."""
    def parse(text):
        if not text or not os.path.isdir(os.path.dirname(os.path.abspath(text))):
            raise argparse.ArgumentTypeError(f"{name} '{text}' is not allowed: want a file in "
                                             "an existing folder")
        return os.path.abspath(text)
    return parse


def elf_file(name):
    """An existing ELF file with SDT markers (a user's program: TARGET), or ''."""
    def parse(text):
        if not text:
            return ""
        path = os.path.abspath(text)
        if re.search(r"[\s:{}\"'()]", path):  # a probe spec (uprobe_events, bpftrace) holds it
            raise argparse.ArgumentTypeError(
                f"{name} '{text}' is not allowed: its path may hold no space, quote, colon, "
                "brace or parenthesis (the tracers' probe specs name it)")
        try:
            notes = elfinfo.Elf(path).sdt_notes()
        except (OSError, ValueError, struct.error) as e:
            raise argparse.ArgumentTypeError(
                f"{name} '{text}' is not allowed: want an ELF file with SDT markers ({e})")
        if not notes:
            raise argparse.ArgumentTypeError(
                f"{name} '{text}' is not allowed: it has no SDT markers (no .note.stapsdt)")
        return path
    return parse


def parse_script(text):
    """SCRIPT: your bpftrace (.bt) or SystemTap (.stp) script, a readable
    text file of at most userscript.MAX_SCRIPT_BYTES, read once here (a
    userscript.Script: the path and its text), or ''."""
    if not text:
        return ""
    path, why = os.path.abspath(text), None
    want = (" or ".join(f"{t} ({e})" for e, t in configs.SCRIPT_KINDS.items())
            + f" script: a text file of at most {userscript.MAX_SCRIPT_BYTES:,} bytes")
    if not userscript.kind(path):
        why = "its name ends in neither " + " nor ".join(configs.SCRIPT_KINDS)
    else:
        try:
            return userscript.read(path)  # (read once: its text is all the kit uses after)
        except userscript.Unreadable as e:
            why = str(e)
        except OSError as e:
            why = e.strerror or str(e)
    raise argparse.ArgumentTypeError(f"SCRIPT '{text}' is not allowed: want a {want} ({why})")


def probe_name(text):
    """PROBE: provider:name (checked against TARGET's markers in check_user)."""
    if text and not re.fullmatch(r"[A-Za-z_][\w]*:([A-Za-z_][\w]*|\*)", text):
        raise argparse.ArgumentTypeError(f"PROBE '{text}' is not allowed: want provider:name, "
                                         "an SDT marker of TARGET")
    return text


def command_words(name):
    """NAME (WORKLOAD, AGAINST): a command, split as a shell splits words
    (no shell runs it)."""
    def parse(text):
        try:
            words = shlex.split(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"{name} '{text}' is not allowed: {e}")
        if text and not words:
            raise argparse.ArgumentTypeError(f"{name} '{text}' is not allowed: it is empty")
        return words
    return parse



def check_user(a, error):
    """TARGET, PROBE and WORKLOAD: all three or none; PROBE one of TARGET's
    markers (the error lists them); then A.user the run's own workload
    (workloads.user), and the user-* rows and the loop's (kin.USER_LOOP:
    the prediction's) the run's CONFIGS unless CONFIGS was given."""
    a.user = None
    given = [n for n in ("target", "probe", "workload") if getattr(a, n)]
    if not given or getattr(a, "against", None):  # (AGAINST's own: measure/dormant.py)
        return
    if len(given) != 3:
        missing = [n.upper() for n in ("target", "probe", "workload") if n not in given]
        error(f"TARGET, PROBE and WORKLOAD go together: {', '.join(missing)} missing")
    have = {(n.provider, n.name) for n in elfinfo.Elf(a.target).sdt_notes()}
    provider, marker = a.probe.split(":")
    if (provider, marker) not in have:
        error(f"PROBE '{a.probe}' is not allowed: {a.target} has no such marker; it has "
              + ", ".join(f"{p}:{m}" for p, m in sorted(have)))
    a.user = workloads.user(a.target, provider, marker, a.workload)


def one_of(name, *allowed):
    def parse(text):
        if text not in allowed:
            raise argparse.ArgumentTypeError(
                f"{name} '{text}' is not allowed: want {', '.join(allowed[:-1])} or {allowed[-1]}")
        return text
    return parse


@dataclass(frozen=True)
class Param:
    """One input of the runner: make's variable NAME, run.py's flag
    --name (which wins over NAME in the environment, which is how make
    hands it over), its parser (which names NAME and the range in its
    error) and its default, written here and nowhere else."""
    name: str
    parse: object
    default: object
    help: str
    shown: str = None  # the default as --help and `make help` say it

    @property
    def flag(self):
        return "--" + self.name.lower().replace("_", "-")

    @property
    def dest(self):
        return self.name.lower()


PARAMS = [
    Param("THREADS", parse_threads, None, "thread counts: 1..8, 1,2,4,8 or 4", "1..CPUs"),
    Param("ITER", int_in("ITER", 1, MAX_ITER), 10000000, "calls per thread"),
    Param("RUNS", int_in("RUNS", 1, MAX_RUNS), None, "exactly this many runs of each cell (not "
          "given: each cell runs until its interval reaches PRECISION, MIN_RUNS..MAX_RUNS "
          "times)", "adaptive"),
    Param("MIN_RUNS", int_in("MIN_RUNS", 2, MAX_RUNS), 3, "the fewest runs of a cell (without RUNS)"),
    Param("MAX_RUNS", int_in("MAX_RUNS", 2, MAX_RUNS), 10,
          "the most runs of a cell, however wide its interval (without RUNS)"),
    Param("SLICED_RUNS", int_in("SLICED_RUNS", 2, MAX_RUNS), 3,
          "the most runs of a time-sliced cell (THREADS above the CPUs: another experiment, "
          "whose noise is the scheduler's), at most MAX_RUNS (without RUNS)"),
    Param("PILOT_S", seconds_in("PILOT_S", 0, 3600, " (0: MIN_RUNS)"), 0.6,
          "a cell's pilot (the first runs, whose spread fixes how many it needs) is as many "
          "runs as fill this, by the plan's estimate of one run before the matrix starts, "
          "MIN_RUNS at least, the cell's most at most: a cheap cell's interval is not left "
          "to two degrees of freedom (without RUNS)"),
    Param("PRECISION", number_in("PRECISION", 0, 1, "a fraction"), 0.15,
          "a cell stops when its overhead's 95% interval is within +-PRECISION of the mean "
          "(0.1: +-10%) or within +-PRECISION_NS; both 0: no interval is narrow enough, and "
          "every cell runs to its most (MAX_RUNS)"),
    Param("PRECISION_NS", number_in("PRECISION_NS", 0, 1000000, "ns"), 0.5,
          "... or within +-PRECISION_NS (for a cost near 0: an idle marker; the unit is the "
          "run's: ns, or instructions in a lab guest)"),
    Param("CONFIGS", parse_configs, None, "names or patterns, comma-separated (make configs)",
          "all in the default run; with TARGET: the user-* rows and the loop's baseline and "
          "twins, for the prediction"),
    Param("TARGET", elf_file("TARGET"), "", "your program: an ELF file with SDT markers "
          "(with PROBE and WORKLOAD: the user-* rows, docs/real-programs.md)", "none"),
    Param("PROBE", probe_name, "", "provider:name, one of TARGET's markers", "none"),
    Param("WORKLOAD", command_words("WORKLOAD"), [], "the command that makes TARGET fire PROBE (run "
          "THREADS copies at once, ITER times each; no shell unless you name one)", "none"),
    Param("SCRIPT", parse_script, "", "your bpftrace (.bt) or SystemTap (.stp) script, run as "
          "written, on the kit's marker or with TARGET/PROBE/WORKLOAD on your program; priced "
          "per marker event beside the loop body closest to it (docs/bodies.md)", "none"),
    Param("QUICK", flag01("QUICK"), False, "1: a fast smoke run: ITER=100000 RUNS=1 "
          "THREADS=1..2, no warm-up", "0"),
    Param("NO_INSTALL", flag01("NO_INSTALL"), False, "1: never install missing Debian packages",
          "0"),
    Param("LOCK_WAIT_S", seconds_in("LOCK_WAIT_S", 1, 7 * 86400), kitlock.LOCK_WAIT_S,
          "seconds to wait while another kit holds the machine's lock, then stop with nothing "
          "done"),
    Param("MAX_RUN_S", seconds_in("MAX_RUN_S", 0, 3600, " (0: no cap)"), 0.1,
          "a traced cell's calls are cut so one run takes about this long (0: ITER)"),
    Param("MIN_RUN_S", seconds_in("MIN_RUN_S", 0, 3600, " (0: ITER)"), 0.05,
          "an untraced cell's calls are raised so one run lasts at least this long (0: ITER)"),
    Param("WARM_UP", one_of("WARM_UP", *WARM_UPS), WARM_UPS[0],
          "auto: a warm-up (which sizes the cell) only where TIMINGS has no per-call time "
          "for the cell from an earlier run here; all: every cell (the tracer's fixed CPU "
          "needs one)"),
    Param("TIMINGS", file_in("TIMINGS"), os.path.join(ROOT, "build", "timings.json"),
          "what earlier runs here took, per cell: read by the plan and WARM_UP=auto, "
          "updated by each run", "build/timings.json"),
    Param("PIN", flag01("PIN"), False, "1: pin thread k to the k-th allowed CPU", "0"),
    Param("SEED", int_in("SEED", 0, 2 ** 32 - 1), None,
          "seed of the interleaving shuffle (meta.json records it)", "new each run"),
    Param("RATE", parse_rates, [TIGHT], "calls per second per thread: 1000,10000,max; each "
          "paced rate runs every configuration for DURATION s, with the baseline", TIGHT),
    Param("DURATION", seconds_in("DURATION", 0.01, 3600), 3.0,
          "seconds of calls in a paced run (RATE other than max)"),
    Param("MISS", int_in("MISS", 0, MAX_ITER), 0,
          "a check of the kit itself: the first MISS calls of each thread go to a function "
          "no probe covers, so every traced row must come out `mismatch`"),
    Param("UNIT", one_of("UNIT", *record.UNITS), record.DEFAULT_UNIT,
          "what the target's clock counts: ns on a host; instructions in a guest under "
          "QEMU's -icount shift=0 (make lab sets it), never compared with ns"),
    Param("TIME_LIMIT", seconds_in("TIME_LIMIT", 1, 86400), None,
          "seconds before a run counts as hung and is killed",
          f"10x its loop as its warm-up or TIMINGS sized it + {TIME_LIMIT_MARGIN} s, or "
          f"{DEFAULT_TIME_LIMIT} s"),
]
BY_NAME = {p.name: p for p in PARAMS}
# What QUICK=1 changes, where the variable is not given.
QUICK = {"ITER": 100000, "RUNS": 1, "MAX_RUN_S": 0, "MIN_RUN_S": 0}


class Parser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(2, f"{self.prog.removesuffix('.py')}: {message} (see --help)\n")


def add(parser, params):
    """PARAMS as PARSER's flags, each defaulting to its variable in the
    environment: argparse parses a string default only where the flag is
    not given, so a flag wins over the variable, and a bad variable gets
    the flag's error.  fill() sets the defaults of those given neither
    way."""
    for par in params:
        shown = par.default if par.shown is None else par.shown
        parser.add_argument(par.flag, type=par.parse, default=os.environ.get(par.name),
                            metavar=par.name,
                            # argparse formats help with %: a literal one is doubled
                            help=f"{par.help} (default {shown})".replace("%", "%%"))


def entry_parser(prog, doc, plist, results):
    """An entry point's parser (make lab, make atlas, make fleet): its
    PLIST's flags, --results (RESULTS its default) and --vars for make."""
    p = Parser(prog=prog, description=doc.split("\n\n")[0])
    add(p, plist)
    p.add_argument("--results", default=results, metavar="DIR")
    p.add_argument("--vars", action="store_true",
                   help="print the variables, one NAME=default a line, and exit (for make)")
    return p


def fill(args, params, instead=None):
    """The defaults of PARAMS in ARGS where neither flag nor variable was
    given (INSTEAD: other defaults by name)."""
    for par in params:
        if getattr(args, par.dest) is None:
            setattr(args, par.dest, (instead or {}).get(par.name, par.default))


def parse_args(argv, extra=()):
    """The runner's arguments: PARAMS and the back-ends' EXTRA ones."""
    p = Parser(prog="run.py", description=__doc__.split("\n\n")[0],
               epilog="Each flag may also come from the environment variable of its "
                      "name (THREADS=...), which is how `make run` passes it; a flag wins.")
    params = PARAMS + list(extra)
    add(p, params)
    p.add_argument("--results", default=os.path.join(ROOT, "results"), metavar="DIR",
                   help="where the results folder is made (default results/)")
    p.add_argument("--no-report", action="store_true", help="do not run scripts/report.py")
    p.add_argument("--list", action="store_true", help="print the configurations and exit")
    p.add_argument("--vars", action="store_true",
                   help="print the variables, one NAME=default a line, and exit (for make)")
    a = p.parse_args(argv)
    a.params = params
    quick = a.quick if a.quick is not None else False
    given = {name for name in ("max_runs", "sliced_runs") if getattr(a, name) is not None}
    fill(a, params, QUICK if quick else {})
    for name in ("max_runs", "sliced_runs"):
        if name not in given:  # a default follows MIN_RUNS: only a value given is refused
            setattr(a, name, max(getattr(a, name), a.min_runs))
        if getattr(a, name) < a.min_runs:
            p.error(f"argument --{name.replace('_', '-')}: {name.upper()} '{getattr(a, name)}' "
                    f"is not allowed: want a whole number in {a.min_runs}..{MAX_RUNS} "
                    "(at least MIN_RUNS)")
    ncpu = cpus()
    a.threads = a.threads or ([1] if getattr(a, "against", None) else  # (one program's cost)
                              list(range(1, (min(2, ncpu) if quick else ncpu) + 1)))
    if a.seed is None:
        a.seed = random.SystemRandom().randrange(2 ** 32)
    check_user(a, p.error)
    if a.script:
        a.configs = userscript.configs_for(a.script, bool(a.target), a.configs)
    if a.configs:  # a script's row runs the SCRIPT given, of its kind, or not at all
        a.configs = [c for c in a.configs if c.mode != configs.SCRIPT_MODE or (
            a.script and c.name == configs.script_row(userscript.kind(a.script), bool(a.target)))] \
            or p.error("CONFIGS names only a script's rows (script-*), which run with SCRIPT=")
    a.configs = kin.companions(a.configs) or [
        c for c in configs.CONFIGS
        if (c.name in (*kin.user_rows(), *kin.USER_LOOP) if a.target else c.default)]
    return a


def from_env(name):
    """Variable NAME as the environment gives it, by its parser (exit 2
    naming it and its range), else its default: for a command without a
    parser of its own (the suite, scripts/lava's job)."""
    par = BY_NAME[name]
    text = os.environ.get(name)
    if text is None:
        return par.default
    try:
        return par.parse(text)
    except argparse.ArgumentTypeError as e:
        print(e, file=sys.stderr)
        raise SystemExit(2)


def defaults(params):
    """NAME=default lines, for `make help`."""
    return [f"{p.name}={p.default if p.shown is None else p.shown}" for p in params]
