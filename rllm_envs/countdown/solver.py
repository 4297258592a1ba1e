"""An exhaustive Countdown solver: the oracle for tasks that carry no reference solution.

It searches over pairs (pick two values of the pool, replace them with ``a + b``, ``a * b``,
``a - b``, ``b - a``, ``a / b`` or ``b / a`` in exact rationals), remembering every multiset
of values already explored, so each distinct state is expanded once. With ``use_all=True`` a
solution is a pool reduced to the single value ``target``; with ``use_all=False`` any value
built along the way (or a given number) that equals ``target``. The search is complete up to
``max_states`` explored states; past that budget it gives up and returns ``None`` (three or
four numbers take well under a thousand states; six numbers may need the budget).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

__all__ = ["DEFAULT_MAX_STATES", "solve"]

#: Explored-state budget of :func:`solve`.
DEFAULT_MAX_STATES = 200_000

_Item = tuple[Fraction, str]


class _BudgetExceeded(Exception):
    pass


def _wrap(expr: str) -> str:
    return expr if expr.isdigit() else f"({expr})"


def _combine(a: _Item, b: _Item) -> list[_Item]:
    (x, ex), (y, ey) = a, b
    pa, pb = _wrap(ex), _wrap(ey)
    out = [(x + y, f"{pa} + {pb}"), (x * y, f"{pa} * {pb}"), (x - y, f"{pa} - {pb}")]
    out.append((y - x, f"{pb} - {pa}"))
    if y != 0:
        out.append((x / y, f"{pa} / {pb}"))
    if x != 0:
        out.append((y / x, f"{pb} / {pa}"))
    return out


def _search(
    pool: list[_Item], target: Fraction, use_all: bool, seen: set[tuple[Fraction, ...]], limit: int
) -> str | None:
    key = tuple(sorted(v for v, _ in pool))
    if key in seen:
        return None
    seen.add(key)
    if len(seen) > limit:
        raise _BudgetExceeded
    if len(pool) == 1:
        return pool[0][1] if pool[0][0] == target else None
    for i in range(len(pool)):
        for j in range(i + 1, len(pool)):
            rest = pool[:i] + pool[i + 1 : j] + pool[j + 1 :]
            for item in _combine(pool[i], pool[j]):
                if not use_all and item[0] == target:
                    return item[1]
                found = _search([*rest, item], target, use_all, seen, limit)
                if found is not None:
                    return found
    return None


def solve(
    nums: Sequence[int],
    target: int,
    *,
    use_all: bool = True,
    max_states: int = DEFAULT_MAX_STATES,
) -> str | None:
    """Find an expression over ``nums`` that equals ``target``.

    Args:
        nums: The given numbers.
        target: The value to reach.
        use_all: Use every number exactly once (``True``) or each at most once (``False``).
        max_states: Give up after exploring this many distinct states.

    Returns:
        An expression in the answer grammar of :mod:`rllm_envs.countdown.rules` (fully
        parenthesised where needed), or ``None`` if there is none (or none within the budget).

    Example:
        >>> solve([2, 3, 4], 20)
        '4 * (2 + 3)'
        >>> solve([2, 3, 4], 7, use_all=False)
        '3 + 4'
        >>> solve([1, 1], 5) is None
        True
    """
    if not nums:
        return None
    goal = Fraction(int(target))
    pool: list[_Item] = [(Fraction(int(n)), str(int(n))) for n in nums]
    if not use_all:
        for value, expr in pool:
            if value == goal:
                return expr
    try:
        return _search(pool, goal, use_all, set(), max_states)
    except _BudgetExceeded:
        return None
