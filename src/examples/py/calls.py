"""calls.py: a call-heavy benchmark, written for this kit: many small
Python function calls, where CPython's function__entry and
function__return markers sit (each call and return of a Python function
passes both in a --with-dtrace build).  N rounds (default 50) of a naive
recursive Fibonacci, Takeuchi's function, methods and properties
on small objects, closures, keyword and default arguments, and a
generator; it prints the total of their results, the same in every build
of one CPython.  One of the programs of bench/cpython_dtrace.py
(docs/findings/2026-12-06-cpython-dtrace-dormant.md).

    python3 src/examples/py/calls.py [N]
"""
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def tak(x, y, z):
    # Takeuchi's function: 63,609 calls for (18, 12, 6), never deeper than
    # a few dozen frames (a deep recursion in 3.11 spends its time mapping
    # and unmapping frame-stack chunks, in the kernel, not in calls)
    if y >= x:
        return z
    return tak(tak(x - 1, y, z), tak(y - 1, z, x), tak(z - 1, x, y))


class Point:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y

    def moved(self, dx, dy):
        return Point(self.x + dx, self.y + dy)

    @property
    def norm1(self):
        return abs(self.x) + abs(self.y)


def adder(k):
    def add(v):
        return v + k
    return add


def scaled(v, factor=3, *, offset=0):
    return v * factor + offset


def evens(n):
    for i in range(n):
        if i % 2 == 0:
            yield i


def one():
    """One round: the sum of every part's result."""
    total = fib(20) + tak(18, 12, 6)
    p = Point(0, 0)
    for i in range(3000):
        p = p.moved(i % 7 - 3, i % 5 - 2)
        total += p.norm1
    add5 = adder(5)
    for i in range(3000):
        total += add5(i) + scaled(i) + scaled(i, 2, offset=1)
    total += sum(evens(3000))
    return total


def main(n):
    total = 0
    for _ in range(n):
        total += one()
    print(f"calls {n}: total {total}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
