"""measure/: make run's wing (scripts/run.py is its door): one run of the
target under a configuration (kit.py), the matrix of cells and its rounds
(matrix.py), how runs are sized (sizing.py), the machine's record
(environment.py), the plan and its ETA (plan.py), the processes'
supervision (supervise.py) and which uprobe path a probe took (paths.py)."""
