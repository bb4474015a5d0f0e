"""richards.py: the classic Richards benchmark (Martin Richards' operating
system simulation), written for this kit: a scheduler of six tasks (an
idle task, a worker, two handlers, two devices) passing packets through
work queues, ITERATIONS times (default 12); it prints the queued-packet
and hold counts of the last iteration, the same in every build of one
CPython.  Object-oriented Python: many method calls, attribute reads and
writes, small branches.  One of the programs of bench/cpython_dtrace.py
(docs/findings/2026-12-06-cpython-dtrace-dormant.md).

    python3 src/examples/py/richards.py [ITERATIONS]
"""
import sys

IDLE, WORKER, HANDLER_A, HANDLER_B, DEVICE_A, DEVICE_B = range(6)
KIND_DEVICE, KIND_WORK = 0, 1
BUFSIZE = 4
COUNT = 10000  # the idle task's releases in one iteration


class Packet:
    """A message: the next packet in its queue, the task it is for, its
    kind, a number and a buffer of BUFSIZE digits."""

    def __init__(self, link, ident, kind):
        self.link, self.ident, self.kind = link, ident, kind
        self.datum = 0
        self.data = [0] * BUFSIZE

    def append_to(self, queue):
        """QUEUE (a packet or None) with this packet at its end."""
        self.link = None
        if queue is None:
            return self
        p = queue
        while p.link is not None:
            p = p.link
        p.link = self
        return queue


class Task:
    """A task: its priority, its queue of packets and its state (bits: a
    packet pending, waiting, held); run(packet) is the kind's own work,
    and returns the task to run next."""

    def __init__(self, sched, ident, pri, queue, pending, waiting):
        self.sched, self.ident, self.pri, self.queue = sched, ident, pri, queue
        self.pending, self.waiting, self.held = pending, waiting, False
        self.next = sched.tasks  # the list runs from the highest priority down
        sched.tasks = self
        sched.table[ident] = self

    def held_or_waiting(self):
        return self.held or (not self.pending and self.waiting)

    def waiting_with_packet(self):
        return self.pending and self.waiting and not self.held

    def hold(self):
        self.sched.holds += 1
        self.held = True
        return self.next

    def wait(self):
        self.waiting = True
        return self

    def release(self, ident):
        t = self.sched.table[ident]
        t.held = False
        return t if t.pri > self.pri else self

    def send(self, p):
        """P queued for the task it names, signed as this task's."""
        t = self.sched.table[p.ident]
        self.sched.queued += 1
        p.link = None
        p.ident = self.ident
        return t.receive(p, self)

    def receive(self, p, sender):
        if self.queue is None:
            self.queue = p
            self.pending = True
            if self.pri > sender.pri:
                return self
        else:
            self.queue = p.append_to(self.queue)
        return sender


class IdleTask(Task):
    def __init__(self, sched, ident, pri):
        super().__init__(sched, ident, pri, None, False, False)
        self.seed, self.count = 1, COUNT

    def run(self, p):
        self.count -= 1
        if self.count == 0:
            return self.hold()
        if self.seed & 1 == 0:
            self.seed >>= 1
            return self.release(DEVICE_A)
        self.seed = (self.seed >> 1) ^ 0xD008
        return self.release(DEVICE_B)


class WorkerTask(Task):
    def __init__(self, sched, ident, pri, queue):
        super().__init__(sched, ident, pri, queue, True, True)
        self.dest, self.count = HANDLER_A, 0

    def run(self, p):
        if p is None:
            return self.wait()
        self.dest = HANDLER_B if self.dest == HANDLER_A else HANDLER_A
        p.ident = self.dest
        p.datum = 0
        for i in range(BUFSIZE):
            self.count += 1
            if self.count > 26:
                self.count = 1
            p.data[i] = ord("A") + self.count - 1
        return self.send(p)


class HandlerTask(Task):
    def __init__(self, sched, ident, pri, queue):
        super().__init__(sched, ident, pri, queue, True, True)
        self.work, self.devices = None, None

    def run(self, p):
        if p is not None:
            if p.kind == KIND_WORK:
                self.work = p.append_to(self.work)
            else:
                self.devices = p.append_to(self.devices)
        w = self.work
        if w is not None:
            if w.datum < BUFSIZE:
                d = self.devices
                if d is not None:
                    self.devices = d.link
                    d.datum = w.data[w.datum]
                    w.datum += 1
                    return self.send(d)
            else:
                self.work = w.link
                return self.send(w)
        return self.wait()


class DeviceTask(Task):
    def __init__(self, sched, ident, pri):
        super().__init__(sched, ident, pri, None, False, True)
        self.pkt = None

    def run(self, p):
        if p is None:
            p, self.pkt = self.pkt, None
            if p is None:
                return self.wait()
            return self.send(p)
        self.pkt = p
        return self.hold()


class Scheduler:
    """The tasks in priority order and the counts the benchmark checks:
    packets queued and holds."""

    def __init__(self):
        self.tasks, self.table = None, [None] * 6
        self.queued = self.holds = 0

    def schedule(self):
        t = self.tasks
        while t is not None:
            if t.held_or_waiting():
                t = t.next
                continue
            p = None
            if t.waiting_with_packet():
                p = t.queue
                t.queue = p.link
                t.pending, t.waiting = t.queue is not None, False
            t = t.run(p)


def one():
    """One run of the simulation: (packets queued, holds)."""
    s = Scheduler()
    IdleTask(s, IDLE, 1)
    wq = Packet(Packet(None, IDLE, KIND_WORK), IDLE, KIND_WORK)
    WorkerTask(s, WORKER, 1000, wq)
    for ident, pri, dev in ((HANDLER_A, 2000, DEVICE_A), (HANDLER_B, 3000, DEVICE_B)):
        q = Packet(Packet(Packet(None, dev, KIND_DEVICE), dev, KIND_DEVICE), dev, KIND_DEVICE)
        HandlerTask(s, ident, pri, q)
    DeviceTask(s, DEVICE_A, 4000)
    DeviceTask(s, DEVICE_B, 5000)
    s.schedule()
    return s.queued, s.holds


def main(n):
    got = None
    for _ in range(n):
        got = one()
    if got != (23246, 9297):  # Richards' own check for COUNT 10,000
        sys.exit(f"richards: {got[0]} packets queued, {got[1]} holds: not 23246 and 9297")
    print(f"richards {n}: {got[0]} packets queued, {got[1]} holds")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 12)
