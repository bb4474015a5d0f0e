"""fleet/: make fleet's wing; __main__.py is its door (Ansible here,
its main).

    inputs.py    its inputs, and the runner's variables it hands on, checked
    hosts.py     the inventory's hosts as Ansible reads them, and what the
                 play may be handed (no Jinja, no local host over the checkout)
    pack.py      the kit's files out, each host's folder and status back
    playbook.py  the one ansible-playbook run, stopped as a whole, and the
                 fleet folder written from its report

The play itself is fleet/playbook.yml; LAVA's job is scripts/lava.
"""
