"""guesttools.py: what a lab's summary.md says of each guest's tools: their
versions side by side (meta.json's "tools", as each guest's runner read
them), what changed since the same suite's last lab in the same results
folder (sid moves: bpftrace 0.23 to 0.27 between two labs broke every
bpftrace row, and nothing said the tool had changed), and each tracer
that ran in a guest with no measured row, with why.

Nothing to run: render/lab.py's summary() calls tool_lines().
"""
import json
import os
import re

import record
from render.formats import table

# The tools the summary names, in its order: meta.json's key, the words.
SHOWN = (("bpftrace", "bpftrace"), ("perf", "perf"), ("stap", "SystemTap"),
         ("lttng", "LTTng"), ("uftrace", "uftrace"), ("python", "python"))


def version(text):
    """The version in a tool's --version line: 'bpftrace v0.27.1' -> 0.27.1;
    SystemTap's 'version 5.6/0.196' -> 5.6; '-' where there is none."""
    m = re.search(r"\d+(?:\.\d+)+", text or "")
    return m.group(0) if m else "-"


def versions(meta):
    return {k: version((meta.get("tools") or {}).get(k)) for k, _ in SHOWN}


def earlier(folder, suite):
    """(the lab folder, its suite's meta) of the last lab before FOLDER's
    in the same results folder that ran SUITE, or (None, None)."""
    top = os.path.dirname(os.path.abspath(folder))
    results, mine = os.path.dirname(top), os.path.basename(top)
    labs = sorted(n for n in os.listdir(results) if n.endswith("-lab") and n < mine)
    for name in reversed(labs):
        try:
            with open(os.path.join(results, name, suite, "meta.json")) as f:
                return name, json.load(f)
        except (OSError, ValueError):
            continue
    return None, None


def unmeasured(rows):
    """{tracer: (failed runs, the first one's reason)} of the tracers whose
    runs in a guest failed and none measured (record.MEASURED); a skip (a
    tracer that cannot run a configuration, saying so) is not a failure."""
    by = {}
    for r in rows:
        t = r.get("tracer") or ""
        if t not in ("", "none"):
            by.setdefault(t, []).append(r)
    out = {}
    for t, rs in by.items():
        failed = [r for r in rs if r["status"] == "failed"]
        if failed and not any(r["status"] in record.MEASURED for r in rs):
            why = failed[0].get("reason") or "no reason"
            out[t] = (len(failed), why if len(why) <= WHY else why[:WHY - 1] + "…")
    return out


WHY = 200  # characters of a reason quoted


def tool_lines(folders, loaded):
    """Markdown lines: a table of the guests' tool versions, then a line a
    changed tool and a line a tracer with no measured row; LOADED: each
    folder's (rows, meta)."""
    if not any((m.get("tools") for _, m in loaded)):
        return []
    body, said = [], []
    for d, (rows, meta) in zip(folders, loaded):
        suite = (meta.get("lab") or {}).get("suite", "?")
        now = versions(meta)
        body.append([suite] + [now[k] for k, _ in SHOWN])
        name, before = earlier(d, suite)
        if before and before.get("tools"):
            was = versions(before)
            moved = [f"{w} {was[k]} -> {now[k]}" for k, w in SHOWN
                     if was[k] != now[k] and "-" not in (was[k], now[k])]
            if moved:
                said.append(f"- {suite}: since {name}, {', '.join(moved)}: its figures are "
                            "not those of the earlier lab's tools")
            unread = [w for k, w in SHOWN if now[k] == "-" and was[k] != "-"]
            if unread:  # (not a change: a --version that failed or ran past its time)
                said.append(f"- {suite}: its runner read no version of {', '.join(unread)} "
                            f"(the --version call failed or timed out), so whether they changed "
                            f"since {name} is not known")
        for t, (n, why) in unmeasured(rows).items():
            said.append(f"- {suite}: {t} failed {n} runs and measured none: {why}")
    return (["", "Tools in each guest (their versions as each guest's runner read them):", "",
             table(["suite"] + [w for _, w in SHOWN], body)] + ([""] + said if said else []))
