"""nbody.py: the classic n-body benchmark, written for this kit: the Sun and
the four outer planets moved by a symplectic Euler step for N steps
(default 100,000), their total energy printed before and after to nine
places, so two builds of one CPython print the same line.  Pure Python,
float arithmetic in a tight loop: few function calls (one per step), the
interpreter's arithmetic and attribute-free list indexing.  One of the
programs of bench/cpython_dtrace.py (docs/findings/2026-12-06-cpython-dtrace-dormant.md).

    python3 src/examples/py/nbody.py [N]
"""
import math
import sys

PI = math.pi
SOLAR_MASS = 4 * PI * PI
DAYS_PER_YEAR = 365.24


def bodies():
    """[x, y, z, vx, vy, vz, mass] of the Sun, Jupiter, Saturn, Uranus and
    Neptune (velocities in AU a year, masses in solar masses x 4 pi^2)."""
    planets = [
        (4.84143144246472090e+00, -1.16032004402742839e+00, -1.03622044471123109e-01,
         1.66007664274403694e-03, 7.69901118419740425e-03, -6.90460016972063023e-05,
         9.54791938424326609e-04),
        (8.34336671824457987e+00, 4.12479856412430479e+00, -4.03523417114321381e-01,
         -2.76742510726862411e-03, 4.99852801234917238e-03, 2.30417297573763929e-05,
         2.85885980666130812e-04),
        (1.28943695621391310e+01, -1.51111514016986312e+01, -2.23307578892655734e-01,
         2.96460137564761618e-03, 2.37847173959480950e-03, -2.96589568540237556e-05,
         4.36624404335156298e-05),
        (1.53796971148509165e+01, -2.59193146099879641e+01, 1.79258772950371181e-01,
         2.68067772490389322e-03, 1.62824170038242295e-03, -9.51592254519715870e-05,
         5.15138902046611451e-05),
    ]
    out = [[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, SOLAR_MASS]]
    for x, y, z, vx, vy, vz, m in planets:
        out.append([x, y, z, vx * DAYS_PER_YEAR, vy * DAYS_PER_YEAR, vz * DAYS_PER_YEAR,
                    m * SOLAR_MASS])
    return out


def offset_momentum(bs):
    """The Sun's velocity set so that the system's momentum is zero."""
    px = py = pz = 0.0
    for b in bs:
        px += b[3] * b[6]
        py += b[4] * b[6]
        pz += b[5] * b[6]
    sun = bs[0]
    sun[3], sun[4], sun[5] = -px / SOLAR_MASS, -py / SOLAR_MASS, -pz / SOLAR_MASS


def energy(bs):
    """The system's kinetic plus potential energy."""
    e = 0.0
    for i, a in enumerate(bs):
        e += 0.5 * a[6] * (a[3] * a[3] + a[4] * a[4] + a[5] * a[5])
        for b in bs[i + 1:]:
            dx, dy, dz = a[0] - b[0], a[1] - b[1], a[2] - b[2]
            e -= a[6] * b[6] / math.sqrt(dx * dx + dy * dy + dz * dz)
    return e


def advance(bs, pairs, dt):
    """One step of DT: velocities from every pair's pull, then positions."""
    for a, b in pairs:
        dx = a[0] - b[0]
        dy = a[1] - b[1]
        dz = a[2] - b[2]
        d2 = dx * dx + dy * dy + dz * dz
        mag = dt / (d2 * math.sqrt(d2))
        bm, am = b[6] * mag, a[6] * mag
        a[3] -= dx * bm
        a[4] -= dy * bm
        a[5] -= dz * bm
        b[3] += dx * am
        b[4] += dy * am
        b[5] += dz * am
    for b in bs:
        b[0] += dt * b[3]
        b[1] += dt * b[4]
        b[2] += dt * b[5]


def main(n):
    bs = bodies()
    offset_momentum(bs)
    pairs = [(bs[i], bs[j]) for i in range(len(bs)) for j in range(i + 1, len(bs))]
    before = energy(bs)
    for _ in range(n):
        advance(bs, pairs, 0.01)
    print(f"nbody {n}: energy {before:.9f} -> {energy(bs):.9f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100000)
