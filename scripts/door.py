"""door.py: what every command's door does first and last, in one home:
its inputs read (with --vars, make's list of its variables printed and
nothing else done), and the report run over the folder it wrote.  The
wings' doors (lab/, atlas/, fleet/, lifecycle/, each a __main__.py) and
run.py open and close the same way; their two path lines stay each
door's own, since nothing of the kit is on the path before them.

Nothing to run: `import door`.
"""
import os
import subprocess
import sys

import params

REPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "report.py")


def inputs(parse_args, argv=None, doc=None, wanted=None):
    """PARSE_ARGS's arguments (ARGV, else the command line's; DOC the
    help's, where it takes one), or None where --vars asked for WANTED's
    defaults (else the arguments' own list, run.py's), printed."""
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv) if doc is None else parse_args(argv, doc)
    if args.vars:
        print("\n".join(params.defaults(args.params if wanted is None else wanted)))
        return None
    return args


def report(folder, **kw):
    """scripts/report.py over FOLDER (KW: subprocess.run's), its result."""
    return subprocess.run([sys.executable, REPORT, folder], **kw)
