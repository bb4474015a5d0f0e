"""stats: the kit's statistics, apart from how render/ shows them, a room
per job: intervals.py (the 95% intervals), cells.py (a cell's figures and
its overhead), stopping.py (the stopping rule), analysis.py (a folder's
analysis), paced.py (paced runs).  Every name is here too: callers say
stats.NAME.
Per (configuration, thread count) cell: the per-event times of each
thread's loop, their median/mean/min, sd and cv; the overhead against the
baseline with a 95% interval (paired t over interleaved repetitions in
ns, else Welch's t: always in instructions) and the slowdown from the
same test on the logarithms; the tracer's steady-state CPU per event; the
event check; scaling with threads.  Worked by hand in tests/test_stats.py.

Nothing to run: `import stats`.
"""
from .intervals import T95, mean_ci, median_ci, stein_ci, t95, welch_ci
from .cells import (NOISY_CV, calls, cell_stats, common, config_rank, overhead, own_figures,
                    paired_figures, per_thread_column, tracer_steady, workload_figures)
from .stopping import on_width, pilot, pilot_values, runs_needed, settle, settle_idle
from .analysis import analyse, dedup_skips, event_check, outcomes, scaling, sites
from .paced import KEPT_PACE, limits, paced, why_not

__all__ = ["T95", "mean_ci", "median_ci", "stein_ci", "t95", "welch_ci", "NOISY_CV", "calls",
           "cell_stats", "common", "config_rank", "overhead", "own_figures", "paired_figures",
           "per_thread_column", "tracer_steady", "workload_figures", "on_width", "pilot",
           "pilot_values", "runs_needed", "settle", "settle_idle", "analyse", "dedup_skips",
           "event_check", "outcomes", "scaling", "sites", "KEPT_PACE", "limits", "paced",
           "why_not"]
