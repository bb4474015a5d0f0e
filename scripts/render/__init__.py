"""render/: the report's wing (scripts/report.py is its door): number
formats and notes (formats.py), the tight-loop tables (tight.py), probe
sites (sites.py), paced runs (paced.py), the 2011 table (y2011.py),
everything said about a guest (lab.py), several folders side by side
(compare.py), the terminal answers (summary.py) and the plots (plots.py).
It reads results folders and writes reports; it measures nothing."""
