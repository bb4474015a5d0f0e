"""dicts.py: a dict-heavy benchmark, written for this kit: ROUNDS rounds
(default 20) of a word-count over a made-up text of 20,000 words, an
index from each word to its positions, lookups that hit and miss, updates
of counters keyed by tuples, merges, comprehensions, deletions and
iteration in insertion order; it prints a checksum of the counts (CRC-32
of their sorted items), the same in every build of one CPython.  Hashing
strings and tuples, dict resizes, get/setdefault and the dict iterators;
few Python function calls.  One of the programs of bench/cpython_dtrace.py
(docs/findings/2026-12-06-cpython-dtrace-dormant.md).

    python3 src/examples/py/dicts.py [ROUNDS]
"""
import sys
import zlib

SYLLABLES = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "de", "gu", "wa", "ze"]


def words(n, seed):
    """N made-up words from a linear congruential generator (SEED)."""
    out, x = [], seed
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        k = 1 + (x >> 8) % 3
        out.append("".join(SYLLABLES[(x >> (4 * i + 11)) % len(SYLLABLES)] for i in range(k)))
    return out


def one(text):
    """One round over TEXT (a list of words): a dict of counts."""
    counts = {}
    for w in text:
        counts[w] = counts.get(w, 0) + 1
    where = {}
    for i, w in enumerate(text):
        where.setdefault(w, []).append(i)
    pairs = {}
    for a, b in zip(text, text[1:]):
        key = (a, b)
        if key in pairs:
            pairs[key] += 1
        else:
            pairs[key] = 1
    misses = 0
    for w in text:
        if w + "x" not in counts:
            misses += 1
    firsts = {w: pos[0] for w, pos in where.items()}
    spread = {w: pos[-1] - pos[0] for w, pos in where.items() if len(pos) > 1}
    merged = {**firsts, **spread}
    merged.update((a + b, n) for (a, b), n in pairs.items() if n > 2)
    for w in list(merged):
        if len(w) > 4 and merged[w] % 3 == 0:
            del merged[w]
    total = sum(merged.values()) + misses
    inverse = {}
    for w, n in counts.items():
        inverse.setdefault(n, set()).add(w)
    counts["_total"] = total
    counts["_rare"] = len(inverse.get(1, ()))
    counts["_pairs"] = len(pairs)
    return counts


def main(rounds):
    text = words(20000, 1)
    crc = 0
    for r in range(rounds):
        got = one(text if r % 2 == 0 else text[::-1])
        crc = zlib.crc32(repr(sorted(got.items())).encode(), crc)
    print(f"dicts {rounds}: crc32 {crc:08x}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
