"""atlas/: make atlas's wing; __main__.py is its door (its main).

    inputs.py   its inputs
    folders.py  the atlas's folder and each kernel's, taken from results/
    kits.py     the host's make run and each kernel's make lab, started
                under the atlas's lock and stopped with it

The atlas's README.md is the report's (render/atlas.py, render/where.py).
"""
