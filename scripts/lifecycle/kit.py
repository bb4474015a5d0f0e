"""lifecycle/kit.py: one make lifecycle run's folder and what it has
attached: each tracer it starts (tracers.ATTACHED) is stopped on every
path, each held target ended (Kit.cleanup, undo).

Nothing to run: scripts/lifecycle's wing.
"""
import csv
import os
import time

import host
import kitstate
import leftovers
import record
from host import say
from record.lifecycle import BY_COLUMNS, BYSTANDER_CSV, KIND, LC_COLUMNS, LIFECYCLE_CSV
from tracers import ATTACHED
from .sites import Targets

STOP_S = 10  # s a tracer has to detach once the kit is stopped (then killed)


class Kit:
    """A lifecycle run's folder (its tables, meta.json, logs/) and what it
    has attached (the tracers it started and has not stopped); INPUTS, the
    door's parameters' values, go into meta.json."""

    def __init__(self, args, inputs):
        self.args = args
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        os.makedirs(args.results, exist_ok=True)
        self.dir, n = os.path.join(args.results, f"{stamp}-lifecycle"), 1
        while os.path.exists(self.dir):
            n += 1
            self.dir = os.path.join(args.results, f"{stamp}-lifecycle-{n}")
        self.logs = os.path.join(self.dir, "logs")
        os.makedirs(self.logs)
        self.meta = {"started": record.now(), "kind": KIND, "unit": args.unit,
                     "kernel": os.uname().release, "inputs": inputs,
                     "tracers": {}, "skipped": {}}
        self.write_meta()
        self.tables = {}
        for name, cols in ((LIFECYCLE_CSV, LC_COLUMNS), (BYSTANDER_CSV, BY_COLUMNS)):
            f = open(os.path.join(self.dir, name), "w", newline="")
            w = csv.DictWriter(f, cols)
            w.writeheader()
            f.flush()
            self.tables[name] = (f, w)
        latest = os.path.join(args.results, "latest")
        if os.path.islink(latest) or not os.path.exists(latest):
            tmp = latest + f".{os.getpid()}"
            os.symlink(os.path.basename(self.dir), tmp)
            os.replace(tmp, latest)
        self.tracefs, self.live = None, []  # the tracers started and not yet stopped
        self.group = leftovers.lifecycle_group(os.getpid())  # ftrace's and perf's events

    def log(self, name):
        """A new log file for NAME: NAME-K.log, K counting up."""
        self.logged = getattr(self, "logged", 0) + 1
        return os.path.join(self.logs, f"{name}-{self.logged}.log")

    def write_meta(self):
        host.write_json(os.path.join(self.dir, "meta.json"), self.meta)

    def write(self, table, row):
        f, w = self.tables[table]
        w.writerow({k: ("" if v is None else v) for k, v in row.items()})
        f.flush()
        os.fsync(f.fileno())

    def close(self):
        for f, _ in self.tables.values():
            f.close()
        self.meta["ended"] = record.now()
        self.write_meta()

    def tracer(self, name, binary, sites, **kw):
        t = ATTACHED[name](self, binary, sites, **kw)
        self.live.append(t)
        return t

    def stop_tracer(self, t, limit):
        """T stopped; it leaves the kit's list only once its stop succeeded
        (else Kit.cleanup tries again).  A signal meanwhile: a short limit."""
        why = t.stop(STOP_S if host.SIGNALLED else limit)
        self.live.remove(t)
        return why

    def cleanup(self):
        """Every tracer and held target of the kit's still there, each tried
        whatever the others did."""
        for t in list(self.live):
            try:
                self.stop_tracer(t, STOP_S)
            except Exception as e:  # noqa: BLE001 (the next one is still undone)
                say(f"lifecycle: {t.name}: could not undo its probes: {e} (left for the next "
                    "kit's sweep)")
                kitstate.keep(f"{t.name}: could not undo its probes: {e}")
        for targets in Targets.ALL:
            targets.stop()


def undo(kit, t, *targets):
    """Tracer T (if the kit still has it) stopped, then TARGETS ended,
    whatever the stop did; no signal cuts it in half."""
    with host.deferred():
        try:
            if t in kit.live:
                kit.stop_tracer(t, kit.args.detach_limit_s)
        finally:
            for x in targets:
                x.stop()
