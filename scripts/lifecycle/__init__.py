"""lifecycle/: make lifecycle's wing; __main__.py is its door (its
main).

    inputs.py      its inputs, and what they need here (tracers, builds)
    sites.py       a process's own bytes: the probe sites in each process,
                   int3 or not; the held targets
    kit.py         a run's folder and what it has attached, undone on every path
    cells.py       attach and detach, cycle by cycle, cell by cell
    bystanders.py  a probe's cost in a process it does not trace

The tracers are the back-ends' (tracers.ATTACHED, tracers/attached.py).
"""
