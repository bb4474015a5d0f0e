"""formats.py: numbers and words for people, shared by every table of
the report: 3 significant figures, every interval beside its mean,
"none detectable" where it holds 0, verdicts in plain bold text, failure
reasons normalised (a checkout's own paths taken out) and long ones moved
to numbered notes below their table, the skipped and failed section.

Nothing to run: `from render.formats import f_ns, table`.
"""
import os
import re

import kernel
from host import ROOT
from record import DEFAULT_UNIT

NOTE_AT = 60  # characters: a longer reason becomes a numbered note


# -- numbers for people -------------------------------------------------------
def f_ns(v):
    """A time or count per event: 3 significant figures, thousands apart."""
    if v is None:
        return "-"
    a = abs(v)
    return (f"{v:,.0f}" if a >= 100 else f"{v:.1f}" if a >= 1 else
            f"{v:.2f}" if a >= 0.01 or a == 0 else f"{v:.3f}")


def f_x(v):
    """A ratio: 1.00, 16.5, 16,546."""
    return "-" if v is None else f"{v:,.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def f_s(v):
    """Seconds: 3 significant figures, thousands apart."""
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def f_rate(v):
    """Calls or events per second: 1,000 (never 1e+03)."""
    return "-" if v is None else f"{v:,.0f}" if v >= 10 else f"{v:.2g}"


def f_pct(v):
    return "-" if v is None else f"{v:.3g}"


def f_interval(m, lo, hi, fmt=f_ns):
    """The mean, then its 95% interval: `4.2 [3.6, 4.7]`."""
    if m is None:
        return "-"
    return fmt(m) if lo is None else f"{fmt(m)} [{fmt(lo)}, {fmt(hi)}]"


def f_slower(o):
    """An overhead's slowdown as % of the untraced time, mean [95% interval]."""
    if not o or o.get("slowdown_x") is None:
        return "-"

    def pct(x):
        return f"{(x - 1) * 100:+,.0f}%" if abs(x - 1) >= 0.1 else f"{(x - 1) * 100:+.1f}%"
    if o.get("slowdown_lo") is None:
        return f"{pct(o['slowdown_x'])} (no CI)"
    return f_interval(o["slowdown_x"], o["slowdown_lo"], o["slowdown_hi"], fmt=pct)


def f_overhead(o):
    """Overhead per event: the mean always, then its interval (no
    interval: one run, said so)."""
    if not o or o["mean_ns"] is None:  # (a marker that never fired: no price)
        return "-"
    if o["lo_ns"] is None:
        return f"{f_ns(o['mean_ns'])} (no CI)"
    return f_interval(o["mean_ns"], o["lo_ns"], o["hi_ns"])


def undetectable(o):
    """The overhead's interval holds 0 and the slowdown's holds 1: no
    overhead is detectable.  (With few noisy runs the first can hold 0
    while the second, on the logarithms, excludes 1: then the overhead is
    real and only too spread to bound.)"""
    return bool(o and o["bounded"] and not (o["slowdown_lo"] is not None
                                            and o["slowdown_lo"] > 1))


def reading(o, unit=DEFAULT_UNIT):
    """What an overhead says, in words."""
    if not o:
        return "no figure"
    if o["lo_ns"] is None:
        return f"{f_ns(o['mean_ns'])} {unit} per event, from one run (no interval)"
    if o["bounded"] and not undetectable(o):
        return (f"{f_ns(o['mean_ns'])} {unit} per event, too spread to bound; "
                f"slowdown >= {f_x(o['slowdown_lo'])}x")
    if o["bounded"]:
        return f"no overhead detectable above {f_ns(o['hi_ns'])} {unit} per event"
    return f"{f_ns(o['mean_ns'])} {unit} per event"


def f_slowdown(o):
    if not o or o["slowdown_x"] is None:
        return "-"
    return f_interval(o["slowdown_x"], o["slowdown_lo"], o["slowdown_hi"], f_x)


def f_check(ch):
    if ch is None:
        return "-"
    v = ch["verdict"]
    if ch["expected"] is None:
        return v
    if ch["seen"] is None:  # a user's script counts nothing for the kit: its witnesses' events
        return f"-/{ch['expected']:,} {v}"
    s = f"{ch['seen']:,}/{ch['expected']:,}"
    if ch["dropped"]:
        s += f" ({ch['dropped']:,} dropped)"
    return f"{s} {v}" if v != "ok" else s


def bold(verdict):
    """A site's verdict; one a reader must not miss (kernel.BAD) in plain
    bold text, which renders in any Markdown viewer and reads in a terminal."""
    return f"**{verdict}**" if verdict in kernel.BAD else verdict or "-"


# -- reasons -------------------------------------------------------------------
# What differs between two runs' reasons for the same failure, replaced by
# a placeholder so that the reason is said once: process ids, the kit's
# run tags (its probe and session names), temporary paths and the
# checkout's own path.
NORMALISE = (
    # A checkout's own files, wherever it was (this one's ROOT is removed first).
    (re.compile(r"(?<![\w.])(?:/[^\s/:;,'\"()]+)+/((?:build/(?:benchmark-|kit|stap-kernel|"
                r"lab/|site-|raw-loop|memlock)|results/|stp/|scripts/))"), r"\1"),
    (re.compile(r"(/tmp|/var/tmp|/dev/shm)/[^\s:;,'\")]+"), r"\1/…"),
    (re.compile(r"\bkit[0-9a-f]{1,8}(?:n[0-9a-f]{1,16})?_\d+"), "kit…"),
    (re.compile(r"\bkit[0-9a-f]{1,8}(?:n[0-9a-f]{1,16})?-scratch-\w+"), "kit…-scratch-…"),
    (re.compile(r"\b([pr])_\w*_bcc_\d+"), r"\1_…_bcc_<pid>"),
    (re.compile(r"\bstapprobe_\d+_\d+"), "stapprobe_<pid>_<n>"),
    (re.compile(r"\b(pid|PID|process|Process)([:=]? ?)\d+"), r"\1\2<pid>"),
    (re.compile(r"\blost \d+"), "lost <n>"),
    (re.compile(r"\[\d{2,}\]"), "[<pid>]"),
    (re.compile(r"\bstap_[0-9a-f]{20,}(_\d+)?"), "stap_…"),
)


def normalise(reason):
    """REASON with pids, run tags and temporary paths made alike, and no
    absolute path into the checkout."""
    text = (reason or "").replace(ROOT + os.sep, "")
    for pat, repl in NORMALISE:
        text = pat.sub(repl, text)
    return text


class Notes:
    """Numbered notes below a table: each distinct (normalised) text once,
    with how many rows it covers."""

    def __init__(self):
        self.texts, self.count = [], []

    def ref(self, text, rows=1):
        """`[n]` for TEXT, the note made the first time it is seen."""
        text = normalise(text)
        if text not in self.texts:
            self.texts.append(text)
            self.count.append(0)
        i = self.texts.index(text)
        self.count[i] += rows
        return f"[{i + 1}]"

    def inline(self, text, rows=1):
        """TEXT itself where short, else a note's number."""
        text = normalise(text)
        return text if len(text) <= NOTE_AT else self.ref(text, rows)

    def lines(self):
        return [""] + [f"[{i + 1}] {t} ({n} run{'s' * (n != 1)})"
                       for i, (t, n) in enumerate(zip(self.texts, self.count))] \
            if self.texts else []


def table(headers, rows):
    """A Markdown table, each column as wide as its widest cell."""
    w = [max(len(str(x)) for x in [h] + [r[i] for r in rows]) for i, h in enumerate(headers)]
    line = lambda r: "| " + " | ".join(str(x).ljust(w[i]) for i, x in enumerate(r)) + " |"  # noqa
    return "\n".join([line(headers), "|" + "|".join("-" * (n + 2) for n in w) + "|"]
                     + [line(r) for r in rows])


def runs_cell(c):
    return f"{c['n_runs']}" + (f" ({c['n_failed']}/{c['n_timed']} failed)"
                               if c["n_failed"] else "")


def skipped_failed(a):
    """Each skipped configuration with its reason; each distinct failure
    reason once, with the cells it covers."""
    lines = ["", "## Skipped and failed", ""]
    lines += [f"- skipped {s['config']}: {normalise(s['reason'])}" for s in a["skipped"]]
    for why, cells in failure_groups(a):
        n = sum(k for _, k in cells.values())
        lines.append(f"- FAILED, {n} run{'s' * (n != 1)} ({where(cells)}): {why}")
    if len(lines) == 3:
        lines.append("None.")
    return lines


def failure_groups(a):
    """[(normalised reason, {config: ([threads], runs)})], most runs first."""
    groups = {}
    for f in a["failed"]:
        g = groups.setdefault(normalise(f["reason"]), {})
        ts, n = g.get(f["config"], ([], 0))
        g[f["config"]] = (ts + [f["threads"]] if f["threads"] not in ts else ts, n + 1)
    return sorted(groups.items(), key=lambda kv: -sum(n for _, n in kv[1].values()))


def where(cells):
    """`stap-mark at 1-2 threads, stap-mark-time at 2 threads`."""
    def span(ts):
        ts = sorted(ts)
        return (f"{ts[0]}" if len(ts) == 1 else f"{ts[0]}-{ts[-1]}"
                if ts == list(range(ts[0], ts[-1] + 1)) else ",".join(map(str, ts)))
    return ", ".join(f"{c} at {span(ts)} thread{'s' * (ts != [1])}"
                     for c, (ts, _) in cells.items())


def f_ins(v):
    """Instructions: two decimals below 100 (an idle marker's nop is
    1.00), whole ones above (a trap's hundreds vary by more than one)."""
    return "-" if v is None else f"{v:.2f}" if abs(v) < 100 else f"{v:,.0f}"


def kernel_facts(labs, heads):
    """The kernel facts (kernel.CONFIG_FACTS) of each lab guest (LABS: their
    meta's "lab"), a column each under HEADS: markdown lines, [] if none."""
    if not any(lab.get("kernel_config") for lab in labs):
        return []
    body = [[label] + [(lab.get("kernel_config") or {}).get(label, "-") for lab in labs]
            for label, _ in kernel.CONFIG_FACTS]
    return ["", "The kernel facts that change the figures, from each guest's own config "
            "(/boot/config-REL):", "", table(["fact"] + heads, body)]
