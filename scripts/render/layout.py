"""layout.py: where the plots' texts and panels go, the same for the
report's, make lifecycle's and make fleet's PNGs (render/plots.py,
lifecycle.py, fleet.py; render/where.py draws its own at DPI): a figure no
taller than MAX_IN however many rows or panels, labels spread so that none
covers another, and save(), which writes a PNG and says on stderr where two
texts overlap anyway.  Nothing to run; needs matplotlib where it draws.
"""
import math
import os
import sys

DPI = 110  # dots per inch, every PNG
MAX_IN = 18  # inches: the tallest figure (1,980 px at DPI; issue 47 had one of 8,536 px)
ROW_MIN_IN = 0.17  # inches: the thinnest row that holds an 8 pt name; thinner, another panel
LABEL_PAD_PX = 2  # pixels between two line names, over their own height


def rows_grid(n, row_in, fixed_in):
    """(panels side by side, rows a panel, figure height in inches) for N
    rows of ROW_IN inches beside FIXED_IN inches of titles and axis labels:
    the rows thin down to keep the figure within MAX_IN, and where they
    would be thinner than ROW_MIN_IN they go into another panel instead."""
    cols = max(1, math.ceil(n * ROW_MIN_IN / (MAX_IN - fixed_in)))
    per = max(1, math.ceil(n / cols))
    return cols, per, min(MAX_IN, fixed_in + per * row_in)


def panel_grid(n, panel_in=3.4, title_in=0.6):
    """(columns, rows, figure height in inches) for N panels PANEL_IN
    inches tall below a TITLE_IN title: 3 columns, more where the rows
    that MAX_IN holds would not hold them."""
    cols = max(min(3, n), math.ceil(n / ((MAX_IN - title_in) // panel_in)))
    rows = math.ceil(n / cols)
    return cols, rows, title_in + panel_in * rows


def whiskers(overheads):
    """Error bars for OVERHEADS: their 95% intervals as [[below], [above]],
    the lower end kept above 0 for the log axis."""
    below = [o["mean_ns"] - max(o["lo_ns"], o["mean_ns"] * 1e-3) if o["lo_ns"] is not None
             else 0 for o in overheads]
    return [below, [o["hi_ns"] - o["mean_ns"] if o["hi_ns"] is not None else 0
                    for o in overheads]]


def spread(vs, hs, pad, lo=0.0, hi=1.0):
    """Centres for labels of heights HS wanted at VS (one unit for all),
    in VS's order, each two apart by their half-heights and PAD: pushed
    up from LO, then down from HI; inside [LO, HI] wherever they fit."""
    order = sorted(range(len(vs)), key=vs.__getitem__)
    out, edge = list(vs), lo - pad
    for i in order:
        out[i] = max(vs[i], edge + pad + hs[i] / 2)
        edge = out[i] + hs[i] / 2
    edge = hi + pad
    for i in reversed(order):
        out[i] = min(out[i], edge - pad - hs[i] / 2)
        edge = out[i] - hs[i] / 2
    return out


def place(ax, anns, r):
    """Puts AX's line names (ANNS: [(annotation, the point it names or
    None)]) right of it, each beside its point, none on another."""
    from matplotlib.text import Text
    lo, hi = (math.log10(v) for v in ax.get_ylim())
    px = ax.get_window_extent(r).height or 1
    vs = [(math.log10(xy[1]) - lo) / (hi - lo) if xy else 0 for _, xy in anns]
    hs = [Text.get_window_extent(t, r).height / px for t, _ in anns]
    for (t, _), v in zip(anns, spread(vs, hs, LABEL_PAD_PX / px)):
        t.xyann = (1.03, v)


def spans(nums):
    """Whole numbers as runs: [1, 2, 3, 5] -> '1-3, 5'."""
    out, nums = [], sorted(nums)
    for x in nums:
        if out and x == out[-1][1] + 1:
            out[-1][1] = x
        else:
            out.append([x, x])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in out)


def save(fig, folder, name):
    """Writes FIG as FOLDER/NAME at DPI, then says on stderr, in one line,
    which of its texts the drawing put on one another (the plot is kept:
    a crowded plot beats none, and the line says where to look)."""
    import matplotlib.pyplot as plt
    path = os.path.join(folder, name)
    fig.set_dpi(DPI)
    fig.savefig(path, dpi=DPI)
    pairs = overlaps(fig)
    if pairs:
        said = "; ".join(f"'{a[:40]}' and '{b[:40]}'" for a, b in pairs[:3])
        more = f" (and {len(pairs) - 3} more)" if len(pairs) > 3 else ""
        print(f"report: labels overlap in {name}: {said}{more}", file=sys.stderr)
    plt.close(fig)
    return path


def overlaps(fig):
    """The pairs of visible texts in FIG, as its last draw placed them
    (tick labels, titles, axis labels, words, annotations, legends), whose
    boxes share more than a pixel each way (touching line boxes do not
    cover letters): [(text, text)], each text on one line."""
    from matplotlib.text import Text
    r = fig.canvas.get_renderer()
    off = set()  # tick labels the draw left out: outside the view, or axes turned off
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            # (_update_ticks is private, but it is how the draw picks its ticks.)
            on = set(map(id, axis._update_ticks())) if ax.axison else set()
            off.update(id(lab) for t in axis.get_major_ticks() + axis.get_minor_ticks()
                       if id(t) not in on for lab in (t.label1, t.label2))
    boxes = sorted(((Text.get_window_extent(t, r), " ".join(t.get_text().split()))
                    for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()
                    and id(t) not in off), key=lambda b: b[0].x0)
    pairs = []
    for i, (p, a) in enumerate(boxes):
        for q, b in boxes[i + 1:]:
            if q.x0 >= p.x1 - 1:  # sorted by left edge: the rest start further right
                break
            if min(p.y1, q.y1) - max(p.y0, q.y0) > 1 and min(p.x1, q.x1) - q.x0 > 1:
                pairs.append((a, b))
    return pairs
