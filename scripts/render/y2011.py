"""y2011.py: the 2011 post's figures (shared/seeds/003: 10M calls, one
thread, SystemTap 1.3, `stap -F`) beside today's: ratios to the baseline
and overhead per event, each statistic the median; a lab guest's column
in instructions comes from render/lab.py.

Nothing to run: `from render.y2011 import y2011`.
"""
from configs import BASELINE
from render.formats import f_ns, f_s, f_x


# The 2011 post (shared/seeds/003): 10M calls, one thread, stap -F.
Y2011 = {"calls": 10_000_000, "bare_s": 0.27, "function_s": 51.82, "mark_s": 27.60,
         "gettimeofday_s": 8.4}


# SystemTap's four configurations of the 2011 experiment.
Y2011_CONFIGS = ("stap-function", "stap-function-time", "stap-mark", "stap-mark-time")


# Today's figures are means, as everywhere else in the report (the answers'
# overheads among them): one statistic, said in the header.
Y2011_HEAD = ["10M calls, 1 thread", "2011 [s]", "2011 [x baseline]", "2011 overhead [ns/event]",
              "today, scaled to 10M, mean [s]", "today, mean [x baseline]",
              "today overhead, mean [ns/event]", "configuration"]


# The 2011 post's rows: (label, its figure in Y2011 or None, today's configuration)
Y2011_ROWS = [("process.function + gettimeofday_ns + $v", "function_s", "stap-function-time"),
              ("process.mark + gettimeofday_ns + $arg1", "mark_s", "stap-mark-time"),
              ("process.function + $v, no gettimeofday_ns", None, "stap-function"),
              ("process.mark + $arg1, no gettimeofday_ns", None, "stap-mark")]


def overhead_mean(c, base):
    """C's mean overhead per event, as the answers quote it (its paired
    mean), else the difference of the two means."""
    o = c.get("overhead")
    return o["mean_ns"] if o else c["mean_ns"] - base["mean_ns"]


def y2011(a, column=None):
    """The 2011 figures beside today's: as ratios to the baseline, and as
    overhead per event (ratios alone mislead: the bare call got 20x faster);
    and, given a lab guest's COLUMN ({row label: text}, render.lab's
    guest_2011), its module runtime's in instructions, a column of its
    own (guest_head)."""
    cells = {c["config"]: c for c in a["cells"] if c["threads"] == 1 and c["n_runs"]}
    base = cells.get(BASELINE)
    n = Y2011["calls"]
    rows = [["bare call (baseline)", f"{Y2011['bare_s']:.2f} s", "1.0x", "-",
             f"{f_s(base['mean_ns'] * n / 1e9)} s" if base else "-",
             "1.0x" if base else "-", "-", "baseline"]]

    def today(label, then_s, cfg):
        c = cells.get(cfg)
        then = then_x = then_ns = "-"
        if then_s is not None:
            then, then_x = f"{then_s:.2f} s", f"{then_s / Y2011['bare_s']:.1f}x"
            then_ns = f"{(then_s - Y2011['bare_s']) * 1e9 / n:.0f}"
        now = now_x = now_ns = "-"
        if c and base:
            now = f"{f_s(c['mean_ns'] * n / 1e9)} s"
            now_x = f"{f_x(c['mean_ns'] / base['mean_ns'])}x"
            now_ns = f_ns(overhead_mean(c, base))
        return [label, then, then_x, then_ns, now, now_x, now_ns, cfg + (
            f" ({c['runtime']} runtime)" if c and c["runtime"] else "" if c else " (not measured)")]
    rows += [today(label, Y2011[key], cfg) for label, key, cfg in Y2011_ROWS if key]
    g_then = Y2011["gettimeofday_s"] * 1e9 / n
    g_now = "-"
    mt, m = cells.get("stap-mark-time"), cells.get("stap-mark")
    if mt and m and base:
        g_now = f_ns(overhead_mean(mt, base) - overhead_mean(m, base))
    rows.append(["gettimeofday_ns() share", f"{Y2011['gettimeofday_s']:.1f} s", "",
                 f"{g_then:.0f}", "", "", g_now, "stap-mark-time - stap-mark"])
    rows += [today(label, None, cfg) for label, key, cfg in Y2011_ROWS if not key]
    if column:
        rows = [r[:7] + [column.get(r[0], "-")] + r[7:] for r in rows]
    return rows
