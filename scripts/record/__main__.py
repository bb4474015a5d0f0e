"""record/__main__.py: `python3 scripts/record` prints the statuses of a
run's row (record/runs.py's STATUSES), the report's order."""
import os
import sys

sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # scripts/

from record.runs import LOSSLESS, STATUSES  # noqa: E402

for s, what in STATUSES.items():
    print(f"{s:<12} {what}" + (" [lossless]" if s in LOSSLESS else ""))
