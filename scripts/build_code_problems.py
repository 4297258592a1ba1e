"""Regenerate ``problems.jsonl``: the embedded, original problem set of ``rllm/Code-v0``.

Run ``python scripts/build_code_problems.py`` (a build script: it is not installed with the
package). Each problem is written for this project:
a statement, a reference solution and test inputs (hand-picked edge cases plus seeded
random ones); expected outputs are computed by running the reference solution, so tests
and solutions agree by construction. Records use the LiveCodeBench schema (plus a
``solution`` field), so the embedded set goes through the same loader as real data.
Stdin problems also carry a C++ reference (``solution_cpp``), kept as ``cpp/<id>.cpp``
next to ``problems.jsonl`` (checked against the same tests by ``tests/envs/code/test_problems.py``).
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import sys
from pathlib import Path
from typing import Any

PROBLEMS: list[dict[str, Any]] = []
DATA = Path(__file__).resolve().parents[1] / "rllm_envs" / "code" / "data"
CPP_DIR = DATA / "cpp"


def problem(
    title: str,
    difficulty: str,
    statement: str,
    solution: str,
    inputs: list[Any],
    *,
    func_name: str | None = None,
    starter: str = "",
    public: int = 2,
    time_limit: float = 2.0,
) -> None:
    PROBLEMS.append(
        dict(
            title=title,
            difficulty=difficulty,
            statement=statement.strip(),
            solution=solution.strip() + "\n",
            inputs=inputs,
            func_name=func_name,
            starter=starter,
            public=public,
            time_limit=time_limit,
        )
    )


def rnd(seed: int) -> random.Random:
    return random.Random(1000 + seed)


def ints(values: Any) -> str:
    return " ".join(map(str, values))


# ----------------------------------------------------------------------------- stdin

problem(
    "Sum of Numbers",
    "easy",
    """
Given n integers, print their sum.

Input: the first line holds n (1 <= n <= 10^5); the second line holds n integers with
absolute value at most 10^9.
Output: one integer, the sum.
""",
    """
n = int(input())
print(sum(map(int, input().split())))
""",
    ["3\n1 2 3\n", "1\n-5\n"]
    + [
        (lambda r, n: f"{n}\n{ints(r.randint(-(10**9), 10**9) for _ in range(n))}\n")(rnd(i), n)
        for i, n in enumerate([2, 10, 1000, 2000, 7, 4000])
    ],
)

problem(
    "Reverse the Words",
    "easy",
    """
Print the words of a line in reverse order, separated by single spaces.

Input: one line of at most 10^4 characters containing at least one word (words are
separated by one or more spaces).
Output: the words in reverse order, separated by single spaces.
""",
    """
print(" ".join(input().split()[::-1]))
""",
    ["hello world\n", "  one   two three \n", "single\n"]
    + [
        " ".join(
            "".join(rnd(i * 7 + k).choice("abcxyz") for _ in range(1 + k % 5))
            for k in range(3 + i * 5)
        )
        + "\n"
        for i in range(6)
    ],
)

problem(
    "Vowel Counter",
    "easy",
    """
For each of t lines, print how many vowels (a, e, i, o, u, in either case) it contains.

Input: the first line holds t (1 <= t <= 1000); then t lines of printable text.
Output: t lines, the vowel count of each line.
""",
    """
t = int(input())
for _ in range(t):
    print(sum(c in "aeiouAEIOU" for c in input()))
""",
    ["2\nHello World\nxyz\n", "1\nAEIOU aeiou\n"]
    + [
        (
            lambda r, t: (
                f"{t}\n"
                + "".join(
                    "".join(r.choice("abcdeiouXYZ AE") for _ in range(r.randint(0, 40))) + "\n"
                    for _ in range(t)
                )
            )
        )(rnd(10 + i), t)
        for i, t in enumerate([1, 5, 50, 300, 1000])
    ],
)

problem(
    "Best Stretch",
    "medium",
    """
A trader records the daily profit (possibly negative) over n days. Find the largest total
profit over a non-empty run of consecutive days.

Input: n (1 <= n <= 2*10^5), then n integers in [-10^4, 10^4].
Output: the largest sum of a non-empty contiguous stretch.
""",
    """
n = int(input())
best = cur = None
for x in map(int, input().split()):
    cur = x if cur is None or cur < 0 else cur + x
    best = cur if best is None else max(best, cur)
print(best)
""",
    ["5\n-2 3 -1 4 -10\n", "3\n-3 -1 -2\n"]
    + [
        (lambda r, n: f"{n}\n{ints(r.randint(-(10**4), 10**4) for _ in range(n))}\n")(
            rnd(20 + i), n
        )
        for i, n in enumerate([1, 8, 100, 2000, 4000])
    ],
)

problem(
    "Bracket Check",
    "easy",
    """
For each string made of the characters ()[]{}, print YES if its brackets are balanced and
properly nested, otherwise NO.

Input: t (1 <= t <= 1000), then t non-empty strings of length at most 1000.
Output: t lines with YES or NO.
""",
    """
t = int(input())
pairs = {")": "(", "]": "[", "}": "{"}
for _ in range(t):
    stack, ok = [], True
    for c in input().strip():
        if c in "([{":
            stack.append(c)
        elif not stack or stack.pop() != pairs[c]:
            ok = False
            break
    print("YES" if ok and not stack else "NO")
""",
    ["3\n([]{})\n(]\n((\n", "2\n{}\n)(\n"]
    + [
        (
            lambda r, t: (
                f"{t}\n"
                + "".join(
                    (lambda s: s + "\n")(
                        "".join(r.choice("()[]{}") for _ in range(r.randint(1, 12)))
                        if r.random() < 0.5
                        else "([{" * 3 + "}])" * 3
                    )
                    for _ in range(t)
                )
            )
        )(rnd(30 + i), t)
        for i, t in enumerate([4, 40, 400, 1000])
    ],
)

problem(
    "Common Divisor and Multiple",
    "easy",
    """
Print the greatest common divisor and the least common multiple of n positive integers.

Input: n (1 <= n <= 20), then n integers in [1, 10^6].
Output: two integers separated by a space: the gcd and the lcm.
""",
    """
from math import gcd
n = int(input())
g, l = 0, 1
for x in map(int, input().split()):
    g = gcd(g, x)
    l = l * x // gcd(l, x)
print(g, l)
""",
    ["3\n4 6 8\n", "1\n7\n"]
    + [
        (lambda r, n: f"{n}\n{ints(r.randint(1, 10**6) for _ in range(n))}\n")(rnd(40 + i), n)
        for i, n in enumerate([2, 5, 12, 20])
    ]
    + ["4\n12 18 24 36\n"]
    # Numbers sharing a factor: a gcd other than 1 on as many tests as a gcd of 1.
    + [
        (lambda r, n, g: f"{n}\n{ints(g * r.randint(1, 10**6 // g) for _ in range(n))}\n")(
            rnd(45 + i), n, g
        )
        for i, (n, g) in enumerate([(3, 7), (6, 360), (10, 1001), (20, 2)])
    ],
)

problem(
    "Counting Primes",
    "medium",
    """
Count the prime numbers that are at most n.

Input: one integer n (1 <= n <= 2*10^6).
Output: the number of primes p with p <= n.
""",
    """
n = int(input())
sieve = bytearray([1]) * (n + 1)
sieve[0:2] = b"\\x00\\x00"[: n + 1]
for p in range(2, int(n ** 0.5) + 1):
    if sieve[p]:
        sieve[p * p :: p] = bytes(len(range(p * p, n + 1, p)))
print(sum(sieve))
""",
    ["10\n", "1\n", "2\n", "100\n", "97\n", "100000\n", "1999993\n", "2000000\n"],
)

problem(
    "Islands",
    "medium",
    """
A map has r rows and c columns of '#' (land) and '.' (water). Land cells that share a side
belong to the same island. Count the islands.

Input: r and c (1 <= r, c <= 300), then r lines of c characters.
Output: the number of islands.
""",
    """
import sys
from collections import deque
data = sys.stdin.read().split()
r, c = int(data[0]), int(data[1])
g = [list(row) for row in data[2:2 + r]]
count = 0
for i in range(r):
    for j in range(c):
        if g[i][j] == "#":
            count += 1
            g[i][j] = "."
            q = deque([(i, j)])
            while q:
                x, y = q.popleft()
                for nx, ny in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
                    if 0 <= nx < r and 0 <= ny < c and g[nx][ny] == "#":
                        g[nx][ny] = "."
                        q.append((nx, ny))
print(count)
""",
    ["3 4\n#..#\n#..#\n..##\n", "1 1\n.\n"]
    + [
        (
            lambda r, h, w, p: (
                f"{h} {w}\n"
                + "".join(
                    "".join("#" if r.random() < p else "." for _ in range(w)) + "\n"
                    for _ in range(h)
                )
            )
        )(rnd(50 + i), h, w, p)
        for i, (h, w, p) in enumerate(
            [(1, 10, 0.5), (5, 5, 0.4), (30, 40, 0.45), (100, 120, 0.5), (60, 80, 0.3)]
        )
    ],
)

problem(
    "Fewest Hops",
    "medium",
    """
An undirected network has n nodes (1..n) and m links. Print the fewest links on a path from
node 1 to node n, or -1 if n cannot be reached.

Input: n and m (2 <= n <= 10^5, 0 <= m <= 2*10^5), then m lines "u v".
Output: one integer.
""",
    """
import sys
from collections import deque
data = sys.stdin.buffer.read().split()
n, m = int(data[0]), int(data[1])
adj = [[] for _ in range(n + 1)]
for k in range(m):
    u, v = int(data[2 + 2 * k]), int(data[3 + 2 * k])
    adj[u].append(v)
    adj[v].append(u)
dist = [-1] * (n + 1)
dist[1] = 0
q = deque([1])
while q:
    u = q.popleft()
    for v in adj[u]:
        if dist[v] < 0:
            dist[v] = dist[u] + 1
            q.append(v)
print(dist[n])
""",
    ["4 4\n1 2\n2 3\n3 4\n1 3\n", "3 1\n1 2\n"]
    + [
        (
            lambda r, n, m: (
                f"{n} {m}\n" + "".join(f"{r.randint(1, n)} {r.randint(1, n)}\n" for _ in range(m))
            )
        )(rnd(60 + i), n, m)
        for i, (n, m) in enumerate([(2, 1), (10, 12), (1000, 1500), (3000, 4000), (2000, 3000)])
    ],
)

problem(
    "Cheapest Route",
    "hard",
    """
A directed road map has n towns (1..n) and m one-way roads with travel costs. Print the
cheapest total cost from town 1 to every town, in order, using -1 for unreachable towns.

Input: n and m (1 <= n <= 10^5, 0 <= m <= 2*10^5), then m lines "u v w" with
1 <= w <= 10^6.
Output: n integers separated by spaces.
""",
    """
import sys, heapq
data = sys.stdin.buffer.read().split()
n, m = int(data[0]), int(data[1])
adj = [[] for _ in range(n + 1)]
for k in range(m):
    u, v, w = int(data[2 + 3 * k]), int(data[3 + 3 * k]), int(data[4 + 3 * k])
    adj[u].append((v, w))
INF = float("inf")
dist = [INF] * (n + 1)
dist[1] = 0
heap = [(0, 1)]
while heap:
    d, u = heapq.heappop(heap)
    if d > dist[u]:
        continue
    for v, w in adj[u]:
        if d + w < dist[v]:
            dist[v] = d + w
            heapq.heappush(heap, (dist[v], v))
print(" ".join(str(d) if d < INF else "-1" for d in dist[1:]))
""",
    ["3 3\n1 2 5\n2 3 1\n1 3 10\n", "2 0\n"]
    + [
        (
            lambda r, n, m: (
                f"{n} {m}\n"
                + "".join(
                    f"{r.randint(1, n)} {r.randint(1, n)} {r.randint(1, 10**6)}\n" for _ in range(m)
                )
            )
        )(rnd(70 + i), n, m)
        for i, (n, m) in enumerate([(1, 0), (6, 10), (500, 2000), (2000, 4000)])
    ],
)

problem(
    "Rising Sequence",
    "medium",
    """
Print the length of the longest strictly increasing subsequence of a sequence.

Input: n (1 <= n <= 2*10^5), then n integers in [-10^9, 10^9].
Output: one integer.
""",
    """
from bisect import bisect_left
input()
tails = []
for x in map(int, input().split()):
    i = bisect_left(tails, x)
    if i == len(tails):
        tails.append(x)
    else:
        tails[i] = x
print(len(tails))
""",
    ["6\n10 9 2 5 3 7\n", "4\n5 5 5 5\n"]
    + [
        (lambda r, n: f"{n}\n{ints(r.randint(-(10**9), 10**9) for _ in range(n))}\n")(
            rnd(80 + i), n
        )
        for i, n in enumerate([1, 9, 1000, 4000])
    ]
    + ["5\n1 2 3 4 5\n"],
)

problem(
    "Backpack",
    "medium",
    """
There are n items with weights and values. Choose items of total weight at most W with the
largest total value (each item at most once).

Input: n and W (1 <= n <= 100, 1 <= W <= 10^4), then n lines "weight value"
(1 <= weight <= 10^4, 0 <= value <= 10^6).
Output: the largest total value.
""",
    """
n, W = map(int, input().split())
best = [0] * (W + 1)
for _ in range(n):
    w, v = map(int, input().split())
    for cap in range(W, w - 1, -1):
        if best[cap - w] + v > best[cap]:
            best[cap] = best[cap - w] + v
print(best[W])
""",
    ["3 5\n2 3\n3 4\n4 5\n", "1 1\n2 100\n"]
    + [
        (
            lambda r, n, W: (
                f"{n} {W}\n"
                + "".join(
                    f"{r.randint(1, max(1, W // 3))} {r.randint(0, 10**6)}\n" for _ in range(n)
                )
            )
        )(rnd(90 + i), n, W)
        for i, (n, W) in enumerate([(1, 10), (10, 50), (60, 1000), (100, 3000)])
    ],
)

problem(
    "Edit Steps",
    "medium",
    """
Print the minimum number of single-character insertions, deletions and replacements that
turn string a into string b.

Input: two lines, a and b (lowercase letters, 0 <= length <= 2000; a line may be empty).
Output: one integer.
""",
    """
import sys
lines = sys.stdin.read().split("\\n")
a = lines[0].strip() if lines else ""
b = lines[1].strip() if len(lines) > 1 else ""
prev = list(range(len(b) + 1))
for i, ca in enumerate(a, 1):
    cur = [i] + [0] * len(b)
    for j, cb in enumerate(b, 1):
        cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
    prev = cur
print(prev[-1])
""",
    ["kitten\nsitting\n", "abc\nabc\n", "\nabc\n"]
    + [
        (
            lambda r, x, y: (
                "".join(r.choice("abc") for _ in range(x))
                + "\n"
                + "".join(r.choice("abc") for _ in range(y))
                + "\n"
            )
        )(rnd(100 + i), x, y)
        for i, (x, y) in enumerate([(5, 7), (50, 40), (300, 350), (600, 500)])
    ],
)

problem(
    "Ways to Pay",
    "medium",
    """
Count the ways to pay exactly S using coins of the given denominations (unlimited supply;
order does not matter), modulo 1000000007.

Input: k and S (1 <= k <= 100, 0 <= S <= 10^5), then k distinct denominations in [1, 10^5].
Output: the number of ways modulo 1000000007.
""",
    """
k, S = map(int, input().split())
ways = [1] + [0] * S
for c in map(int, input().split()):
    for s in range(c, S + 1):
        ways[s] = (ways[s] + ways[s - c]) % 1000000007
print(ways[S])
""",
    ["3 5\n1 2 5\n", "1 3\n2\n", "2 0\n3 4\n"]
    + [
        (lambda r, k, S: f"{k} {S}\n{ints(r.sample(range(1, 200), k))}\n")(rnd(110 + i), k, S)
        for i, (k, S) in enumerate([(2, 10), (10, 1000), (40, 2000), (100, 3000)])
    ],
)

problem(
    "Run-Length Encoding",
    "easy",
    """
Compress a string by replacing each maximal run of equal characters with the character
followed by the run length.

Input: one line of lowercase letters (1 <= length <= 10^5).
Output: the encoded string, e.g. aaabcc becomes a3b1c2.
""",
    """
s = input().strip()
out, i = [], 0
while i < len(s):
    j = i
    while j < len(s) and s[j] == s[i]:
        j += 1
    out.append(f"{s[i]}{j - i}")
    i = j
print("".join(out))
""",
    ["aaabcc\n", "z\n"]
    + [
        (lambda r, n: "".join(r.choice("ab") * r.randint(1, 4) for _ in range(n)) + "\n")(
            rnd(120 + i), n
        )
        for i, n in enumerate([3, 30, 3000, 3000])
    ]
    + ["q" * 4000 + "\n"],
)

problem(
    "Shifted Letters",
    "easy",
    """
A message was encrypted by shifting every lowercase letter k places forward in the
alphabet (wrapping from z to a); other characters were left alone. Decrypt it.

Input: k (0 <= k <= 10^9) on the first line, the encrypted line on the second.
Output: the decrypted line.
""",
    """
k = int(input()) % 26
s = input()
print("".join(chr((ord(c) - 97 - k) % 26 + 97) if "a" <= c <= "z" else c for c in s))
""",
    ["3\nkhoor, zruog!\n", "26\nabc xyz\n"]
    + [
        (
            lambda r, k: (
                f"{k}\n"
                + "".join(
                    r.choice("abcdefghijklmnopqrstuvwxyz .,!?AZ") for _ in range(r.randint(1, 200))
                )
                + "\n"
            )
        )(rnd(130 + i), k)
        for i, k in enumerate([1, 25, 52, 999999999, 13])
    ],
)

problem(
    "Quarter Turn",
    "easy",
    """
Rotate an r x c grid of characters 90 degrees clockwise.

Input: r and c (1 <= r, c <= 200), then r lines of c characters (no spaces).
Output: c lines of r characters.
""",
    """
r, c = map(int, input().split())
g = [input().strip() for _ in range(r)]
for j in range(c):
    print("".join(g[i][j] for i in range(r - 1, -1, -1)))
""",
    ["2 3\nabc\ndef\n", "1 1\nx\n"]
    + [
        (
            lambda r, h, w: (
                f"{h} {w}\n"
                + "".join("".join(r.choice("ab#.") for _ in range(w)) + "\n" for _ in range(h))
            )
        )(rnd(140 + i), h, w)
        for i, (h, w) in enumerate([(1, 5), (5, 1), (7, 9), (80, 60)])
    ],
)

problem(
    "Anagram Families",
    "easy",
    """
Words are in the same family if one is an anagram of the other. Count the families.

Input: n (1 <= n <= 10^5), then n lowercase words (one per line, length <= 20).
Output: the number of families.
""",
    """
import sys
words = sys.stdin.read().split()[1:]
print(len({"".join(sorted(w)) for w in words}))
""",
    ["5\nlisten\nsilent\nenlist\ngoogle\nelgoog\n", "1\na\n"]
    + [
        (
            lambda r, n: (
                f"{n}\n"
                + "".join(
                    "".join(r.choice("abc") for _ in range(r.randint(1, 4))) + "\n"
                    for _ in range(n)
                )
            )
        )(rnd(150 + i), n)
        for i, n in enumerate([3, 30, 3000, 4000])
    ],
)

problem(
    "Covered Length",
    "medium",
    """
Given n closed intervals [l, r] on a line, merge the overlapping ones (intervals that touch
at a point also merge). Print the number of merged intervals and their total length.

Input: n (1 <= n <= 10^5), then n lines "l r" with -10^9 <= l <= r <= 10^9.
Output: two integers: the number of merged intervals and the sum of (r - l) over them.
""",
    """
import sys
data = list(map(int, sys.stdin.buffer.read().split()))
n = data[0]
iv = sorted(zip(data[1::2], data[2::2]))
merged = []
for l, r in iv:
    if merged and l <= merged[-1][1]:
        merged[-1][1] = max(merged[-1][1], r)
    else:
        merged.append([l, r])
print(len(merged), sum(r - l for l, r in merged))
""",
    ["3\n1 3\n2 6\n8 10\n", "2\n1 2\n2 3\n"]
    + [
        (
            lambda r, n, span, width: (
                f"{n}\n"
                + "".join(
                    (lambda a, b: f"{a} {a + b}\n")(
                        r.randint(-span, max(-span, span - width)), r.randint(0, width)
                    )
                    for _ in range(n)
                )
            )
        )(rnd(160 + i), n, span, width)
        # Short intervals far apart leave several merged ones; wide ones cover everything.
        for i, (n, span, width) in enumerate(
            [
                (1, 10, 10),
                (10, 50, 8),
                (10, 50, 100),
                (1000, 10**6, 1500),
                (4000, 10**9, 10**6),
                (4000, 10**9, 2 * 10**9),
            ]
        )
    ],
)

problem(
    "How Many Are Small",
    "easy",
    """
Given an array and q queries x, print for each query how many array elements are at most x.

Input: n and q (1 <= n, q <= 10^5), then n integers, then q integers (all |value| <= 10^9).
Output: q lines.
""",
    """
import sys
from bisect import bisect_right
data = sys.stdin.buffer.read().split()
n, q = int(data[0]), int(data[1])
a = sorted(map(int, data[2:2 + n]))
print("\\n".join(str(bisect_right(a, int(x))) for x in data[2 + n:2 + n + q]))
""",
    ["4 3\n5 1 3 3\n3\n0\n10\n", "1 1\n-7\n-7\n"]
    + [
        (
            lambda r, n, q: (
                f"{n} {q}\n{ints(r.randint(-100, 100) for _ in range(n))}\n"
                + "".join(f"{r.randint(-120, 120)}\n" for _ in range(q))
            )
        )(rnd(170 + i), n, q)
        for i, (n, q) in enumerate([(3, 5), (100, 100), (4000, 4000)])
    ],
)

problem(
    "Range Sums",
    "easy",
    """
Answer q queries "l r": the sum of a[l..r] (1-based, inclusive).

Input: n and q (1 <= n, q <= 10^5), then n integers (|a_i| <= 10^9), then q lines "l r".
Output: q lines.
""",
    """
import sys
data = list(map(int, sys.stdin.buffer.read().split()))
n, q = data[0], data[1]
pre = [0]
for x in data[2:2 + n]:
    pre.append(pre[-1] + x)
out = []
for k in range(q):
    l, r = data[2 + n + 2 * k], data[3 + n + 2 * k]
    out.append(pre[r] - pre[l - 1])
print("\\n".join(map(str, out)))
""",
    ["5 3\n1 2 3 4 5\n1 5\n2 3\n4 4\n", "1 1\n-3\n1 1\n"]
    + [
        (
            lambda r, n, q: (
                f"{n} {q}\n{ints(r.randint(-(10**9), 10**9) for _ in range(n))}\n"
                + "".join(
                    (lambda a, b: f"{min(a, b)} {max(a, b)}\n")(r.randint(1, n), r.randint(1, n))
                    for _ in range(q)
                )
            )
        )(rnd(180 + i), n, q)
        for i, (n, q) in enumerate([(2, 3), (100, 50), (4000, 4000)])
    ],
)

problem(
    "Course Order",
    "hard",
    """
There are n courses (1..n) and m rules "a b" meaning course a must be taken before course b.
Print an order that takes every course and respects every rule; among all such orders print
the lexicographically smallest. If no order exists, print IMPOSSIBLE.

Input: n and m (1 <= n <= 10^5, 0 <= m <= 2*10^5), then m lines "a b".
Output: n integers separated by spaces, or IMPOSSIBLE.
""",
    """
import sys, heapq
data = list(map(int, sys.stdin.buffer.read().split()))
n, m = data[0], data[1]
adj = [[] for _ in range(n + 1)]
indeg = [0] * (n + 1)
for k in range(m):
    a, b = data[2 + 2 * k], data[3 + 2 * k]
    adj[a].append(b)
    indeg[b] += 1
heap = [v for v in range(1, n + 1) if indeg[v] == 0]
heapq.heapify(heap)
order = []
while heap:
    u = heapq.heappop(heap)
    order.append(u)
    for v in adj[u]:
        indeg[v] -= 1
        if indeg[v] == 0:
            heapq.heappush(heap, v)
print(" ".join(map(str, order)) if len(order) == n else "IMPOSSIBLE")
""",
    ["4 3\n1 2\n4 2\n2 3\n", "2 2\n1 2\n2 1\n"]
    + [
        (
            lambda r, n, m, dag: (
                f"{n} {m}\n"
                + "".join(
                    # A rule "a a" is a cycle: a DAG's rules join distinct courses.
                    (lambda a, b: f"{min(a, b)} {max(a, b)}\n" if dag else f"{a} {b}\n")(
                        *(
                            r.sample(range(1, n + 1), 2)
                            if dag
                            else (r.randint(1, n), r.randint(1, n))
                        )
                    )
                    for _ in range(m)
                )
            )
        )(rnd(190 + i), n, m, dag)
        for i, (n, m, dag) in enumerate(
            [
                (1, 0, True),
                (8, 10, True),
                (8, 10, False),
                (1000, 3000, True),
                (1000, 3000, False),
                (4000, 6000, True),
            ]
        )
    ],
)

problem(
    "Friend Circles",
    "medium",
    """
n people (1..n) and m friendships "u v". Friendship is transitive: friends of friends are in
the same circle. Print the number of circles and the size of the largest one.

Input: n and m (1 <= n <= 10^5, 0 <= m <= 2*10^5), then m lines "u v".
Output: two integers.
""",
    """
import sys
data = list(map(int, sys.stdin.buffer.read().split()))
n, m = data[0], data[1]
parent = list(range(n + 1))
def find(x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x
for k in range(m):
    a, b = find(data[2 + 2 * k]), find(data[3 + 2 * k])
    if a != b:
        parent[a] = b
sizes = {}
for v in range(1, n + 1):
    root = find(v)
    sizes[root] = sizes.get(root, 0) + 1
print(len(sizes), max(sizes.values()))
""",
    ["5 3\n1 2\n2 3\n4 5\n", "3 0\n"]
    + [
        (
            lambda r, n, m: (
                f"{n} {m}\n" + "".join(f"{r.randint(1, n)} {r.randint(1, n)}\n" for _ in range(m))
            )
        )(rnd(200 + i), n, m)
        for i, (n, m) in enumerate([(1, 1), (20, 10), (2000, 4000), (4000, 3500)])
    ],
)

problem(
    "Average Reading",
    "easy",
    """
Print the average of n sensor readings with exactly 6 digits after the decimal point
(any output equal in value is accepted).

Input: n (1 <= n <= 10^5), then n integers in [-10^6, 10^6].
Output: the average.
""",
    """
n = int(input())
total = sum(map(int, input().split()))
print(f"{total / n:.6f}")
""",
    ["4\n1 2 3 4\n", "3\n-1 0 0\n"]
    + [
        (lambda r, n: f"{n}\n{ints(r.randint(-(10**6), 10**6) for _ in range(n))}\n")(
            rnd(210 + i), n
        )
        for i, n in enumerate([1, 7, 1000, 4000])
    ],
)

problem(
    "Huge Fibonacci",
    "hard",
    """
F(0) = 0, F(1) = 1, F(k) = F(k-1) + F(k-2). For each query n print F(n) modulo 1000000007.

Input: t (1 <= t <= 1000), then t integers n (0 <= n <= 10^18).
Output: t lines.
""",
    """
import sys
MOD = 1000000007
def fib(n):
    if n == 0:
        return (0, 1)
    a, b = fib(n >> 1)
    c = a * ((2 * b - a) % MOD) % MOD
    d = (a * a + b * b) % MOD
    return (d, (c + d) % MOD) if n & 1 else (c, d)
data = sys.stdin.read().split()
print("\\n".join(str(fib(int(x))[0]) for x in data[1:1 + int(data[0])]))
""",
    ["3\n0\n1\n10\n", "1\n50\n"]
    + [
        (lambda r, t: f"{t}\n" + "".join(f"{r.randint(0, 10**18)}\n" for _ in range(t)))(
            rnd(220 + i), t
        )
        for i, t in enumerate([1, 10, 1000])
    ]
    + ["2\n1000000000000000000\n2\n"],
)

problem(
    "Cheapest Wiring",
    "hard",
    """
Connect n buildings (1..n) with cables. There are m possible cables "u v c" (cost c). Print
the least total cost that connects all buildings, or -1 if it is impossible.

Input: n and m (1 <= n <= 10^5, 0 <= m <= 2*10^5), then m lines "u v c" (1 <= c <= 10^6).
Output: one integer.
""",
    """
import sys
data = list(map(int, sys.stdin.buffer.read().split()))
n, m = data[0], data[1]
edges = sorted((data[4 + 3 * k], data[2 + 3 * k], data[3 + 3 * k]) for k in range(m))
parent = list(range(n + 1))
def find(x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x
total, used = 0, 0
for c, u, v in edges:
    a, b = find(u), find(v)
    if a != b:
        parent[a] = b
        total += c
        used += 1
print(total if used == n - 1 else -1)
""",
    ["3 3\n1 2 5\n2 3 1\n1 3 3\n", "3 1\n1 2 4\n"]
    + [
        (
            lambda r, n, m: (
                f"{n} {m}\n"
                + "".join(
                    f"{r.randint(1, n)} {r.randint(1, n)} {r.randint(1, 10**6)}\n" for _ in range(m)
                )
            )
        )(rnd(230 + i), n, m)
        for i, (n, m) in enumerate([(1, 0), (6, 15), (300, 3000), (2000, 4000)])
    ],
)

problem(
    "Palindrome Pieces",
    "medium",
    """
Split a string into the fewest pieces such that every piece is a palindrome. Print that
number of pieces.

Input: one line, a lowercase string (1 <= length <= 1500).
Output: one integer.
""",
    """
s = input().strip()
n = len(s)
pal = [[False] * n for _ in range(n)]
for i in range(n - 1, -1, -1):
    for j in range(i, n):
        pal[i][j] = s[i] == s[j] and (j - i < 2 or pal[i + 1][j - 1])
best = [0] + [n] * n
for j in range(1, n + 1):
    for i in range(j):
        if pal[i][j - 1] and best[i] + 1 < best[j]:
            best[j] = best[i] + 1
print(best[n])
""",
    ["aab\n", "racecar\n"]
    + [
        (lambda r, n: "".join(r.choice("ab") for _ in range(n)) + "\n")(rnd(240 + i), n)
        for i, n in enumerate([1, 12, 200, 500])
    ],
)

# ------------------------------------------------------------------------ functional

problem(
    "Pair With Target",
    "easy",
    """
Given an integer list nums and an integer target, exactly one pair of positions i < j has
nums[i] + nums[j] == target. Return [i, j].

Constraints: 2 <= len(nums) <= 10^5, |values| <= 10^9.
""",
    """
class Solution:
    def pairWithTarget(self, nums: List[int], target: int) -> List[int]:
        seen = {}
        for j, x in enumerate(nums):
            if target - x in seen:
                return [seen[target - x], j]
            seen[x] = j
        return []
""",
    [[[2, 7, 11, 15], 9], [[3, 3], 6]]
    + [
        (
            lambda r, n: (lambda nums: [nums, nums[n // 3] + nums[n - 1]])(
                r.sample(range(0, 10**9, 7), n)
            )
        )(rnd(300 + i), n)
        for i, n in enumerate([2, 10, 1000, 3000])
    ],
    func_name="pairWithTarget",
    starter="class Solution:\n    def pairWithTarget(self, nums: List[int], target: int) -> List[int]:\n        ",  # noqa: E501
)

problem(
    "Mirror Number",
    "easy",
    """
Return True if the integer x reads the same forwards and backwards in base 10 (negative
numbers never do), otherwise False.

Constraints: -2^31 <= x <= 2^31 - 1.
""",
    """
class Solution:
    def isMirror(self, x: int) -> bool:
        return x >= 0 and str(x) == str(x)[::-1]
""",
    [[121], [-121], [10], [0], [1234321], [2147447412], [123454321], [1000021], [12], [-7]],
    func_name="isMirror",
    starter="class Solution:\n    def isMirror(self, x: int) -> bool:\n        ",
)

problem(
    "Longest Distinct Run",
    "medium",
    """
Return the length of the longest substring of s in which no character repeats.

Constraints: 0 <= len(s) <= 10^5.
""",
    """
class Solution:
    def longestDistinct(self, s: str) -> int:
        last, start, best = {}, 0, 0
        for i, c in enumerate(s):
            if last.get(c, -1) >= start:
                start = last[c] + 1
            last[c] = i
            best = max(best, i - start + 1)
        return best
""",
    [["abcabcbb"], ["bbbbb"], [""], ["pwwkew"]]
    + [
        [(lambda r, n: "".join(r.choice("abcdefghij") for _ in range(n)))(rnd(310 + i), n)]
        for i, n in enumerate([5, 100, 4000])
    ],
    func_name="longestDistinct",
    starter="class Solution:\n    def longestDistinct(self, s: str) -> int:\n        ",
)

problem(
    "Most Frequent",
    "medium",
    """
Return the k most frequent values of nums, most frequent first; values with equal
frequency are ordered from smallest to largest.

Constraints: 1 <= len(nums) <= 10^5, 1 <= k <= number of distinct values.
""",
    """
from collections import Counter
class Solution:
    def mostFrequent(self, nums: List[int], k: int) -> List[int]:
        counts = Counter(nums)
        return sorted(counts, key=lambda v: (-counts[v], v))[:k]
""",
    [[[1, 1, 1, 2, 2, 3], 2], [[4], 1]]
    + [
        (lambda r, n, k: [[r.randint(-20, 20) for _ in range(n)], k])(rnd(320 + i), n, k)
        for i, (n, k) in enumerate([(10, 2), (1000, 5), (4000, 30)])
    ],
    func_name="mostFrequent",
    starter="class Solution:\n    def mostFrequent(self, nums: List[int], k: int) -> List[int]:\n        ",  # noqa: E501
)

problem(
    "Merge Sorted",
    "easy",
    """
Merge two lists sorted in non-decreasing order into one sorted list.

Constraints: 0 <= len(a), len(b) <= 10^5.
""",
    """
class Solution:
    def mergeSorted(self, a: List[int], b: List[int]) -> List[int]:
        i = j = 0
        out = []
        while i < len(a) and j < len(b):
            if a[i] <= b[j]:
                out.append(a[i]); i += 1
            else:
                out.append(b[j]); j += 1
        return out + a[i:] + b[j:]
""",
    [[[1, 3, 5], [2, 4]], [[], [1]]]
    + [
        (
            lambda r, x, y: [
                sorted(r.randint(-99, 99) for _ in range(x)),
                sorted(r.randint(-99, 99) for _ in range(y)),
            ]
        )(rnd(330 + i), x, y)
        for i, (x, y) in enumerate([(0, 0), (5, 9), (1000, 2000), (3000, 3000)])
    ],
    func_name="mergeSorted",
    starter="class Solution:\n    def mergeSorted(self, a: List[int], b: List[int]) -> List[int]:\n        ",  # noqa: E501
)

problem(
    "Bit Counts",
    "easy",
    """
Return a list whose i-th element is the number of 1 bits in the binary form of i, for
every i from 0 to n.

Constraints: 0 <= n <= 10^5.
""",
    """
class Solution:
    def bitCounts(self, n: int) -> List[int]:
        out = [0] * (n + 1)
        for i in range(1, n + 1):
            out[i] = out[i >> 1] + (i & 1)
        return out
""",
    [[2], [5], [0], [1], [64], [1000], [4000]],
    func_name="bitCounts",
    starter="class Solution:\n    def bitCounts(self, n: int) -> List[int]:\n        ",
)

problem(
    "Cheapest Descent",
    "medium",
    """
A grid of non-negative costs is walked from the top-left to the bottom-right cell, moving
only right or down. Return the least total cost of the cells on the path (both ends count).

Constraints: 1 <= rows, cols <= 200, 0 <= cost <= 100.
""",
    """
class Solution:
    def cheapestDescent(self, grid: List[List[int]]) -> int:
        rows, cols = len(grid), len(grid[0])
        best = [0] * cols
        for i in range(rows):
            for j in range(cols):
                if i == 0 and j == 0:
                    best[j] = grid[0][0]
                elif i == 0:
                    best[j] = best[j - 1] + grid[i][j]
                elif j == 0:
                    best[j] = best[j] + grid[i][j]
                else:
                    best[j] = min(best[j], best[j - 1]) + grid[i][j]
        return best[-1]
""",
    [[[[1, 3, 1], [1, 5, 1], [4, 2, 1]]], [[[7]]]]
    + [
        [
            (lambda r, h, w: [[r.randint(0, 100) for _ in range(w)] for _ in range(h)])(
                rnd(340 + i), h, w
            )
        ]
        for i, (h, w) in enumerate([(1, 6), (6, 1), (20, 30), (100, 100)])
    ],
    func_name="cheapestDescent",
    starter="class Solution:\n    def cheapestDescent(self, grid: List[List[int]]) -> int:\n        ",  # noqa: E501
)

problem(
    "Spiral Reading",
    "medium",
    """
Return the elements of a matrix read in clockwise spiral order, starting at the top-left.

Constraints: 1 <= rows, cols <= 100.
""",
    """
class Solution:
    def spiral(self, matrix: List[List[int]]) -> List[int]:
        out = []
        top, bottom, left, right = 0, len(matrix) - 1, 0, len(matrix[0]) - 1
        while top <= bottom and left <= right:
            out += [matrix[top][j] for j in range(left, right + 1)]
            out += [matrix[i][right] for i in range(top + 1, bottom + 1)]
            if top < bottom:
                out += [matrix[bottom][j] for j in range(right - 1, left - 1, -1)]
            if left < right:
                out += [matrix[i][left] for i in range(bottom - 1, top, -1)]
            top, bottom, left, right = top + 1, bottom - 1, left + 1, right - 1
        return out
""",
    [[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]], [[[1, 2, 3, 4]]]]
    + [
        [
            (lambda r, h, w: [[r.randint(0, 9) for _ in range(w)] for _ in range(h)])(
                rnd(350 + i), h, w
            )
        ]
        for i, (h, w) in enumerate([(4, 1), (3, 5), (10, 7), (100, 100)])
    ],
    func_name="spiral",
    starter="class Solution:\n    def spiral(self, matrix: List[List[int]]) -> List[int]:\n        ",  # noqa: E501
)


# ------------------------------------------------------------------------------ build

PRELUDE = "from typing import *\n"


def _run_stdin(solution: str, data: str) -> str:
    out = io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(data.encode()))
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(solution, "solution", "exec"), {"__name__": "__main__"})
    finally:
        sys.stdin = old_stdin
    return out.getvalue()


def _run_functional(solution: str, name: str, args: list[Any]) -> Any:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(PRELUDE + solution, namespace)
    result = getattr(namespace["Solution"](), name)(*json.loads(json.dumps(args)))
    return result


def _statement(p: dict[str, Any], public: list[dict[str, str]]) -> str:
    parts = [p["statement"]]
    for n, t in enumerate(public, 1):
        if p["func_name"]:
            args = ", ".join(t["input"].split("\n"))
            parts.append(f"Example {n}:\nInput: {args}\nOutput: {t['output']}")
        else:
            parts.append(
                f"Example {n}:\nInput:\n{t['input'].rstrip()}\nOutput:\n{t['output'].rstrip()}"
            )
    return "\n\n".join(parts)


def _cpp_solution(question_id: str) -> str | None:
    path = CPP_DIR / f"{question_id}.cpp"
    return path.read_text(encoding="utf-8") if path.exists() else None


def build() -> list[dict[str, Any]]:
    records = []
    for number, p in enumerate(PROBLEMS, 1):
        tests = []
        for item in p["inputs"]:
            if p["func_name"]:
                out = json.dumps(_run_functional(p["solution"], p["func_name"], item))
                tests.append(
                    {
                        "input": "\n".join(json.dumps(a) for a in item),
                        "output": out,
                        "testtype": "functional",
                    }
                )
            else:
                tests.append(
                    {"input": item, "output": _run_stdin(p["solution"], item), "testtype": "stdin"}
                )
        public, private = tests[: p["public"]], tests[p["public"] :]
        records.append(
            {
                "question_id": f"rllm-{number:03d}",
                "question_title": p["title"],
                "question_content": _statement(p, public),
                "platform": "rllm-envs",
                "difficulty": p["difficulty"],
                "starter_code": p["starter"],
                "public_test_cases": json.dumps(public),
                "private_test_cases": json.dumps(private),
                "metadata": json.dumps({"func_name": p["func_name"]} if p["func_name"] else {}),
                "time_limit": p["time_limit"],
                "solution": p["solution"],
                "solution_cpp": _cpp_solution(f"rllm-{number:03d}"),
            }
        )
    return records


if __name__ == "__main__":
    target = DATA / "problems.jsonl"
    rows = build()
    with target.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} problems to {target}")
