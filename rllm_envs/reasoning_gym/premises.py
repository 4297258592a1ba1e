"""Restated premises in reasoning-gym's ``propositional_logic``: conclusions that infer nothing.

reasoning-gym's scorer pays any valid consequence of the premises, and the premises restated
are one: their conjunction, a premise doubled (``(p ∧ p)``, ``(p ∨ p)``, ``¬¬p``) or weakened
(``(p ∨ x)``). :func:`restates_premises` decides by truth tables, never by the text, whether a
conclusion is such a restatement (*trivial*):

1. a single premise entails it (a premise, an equivalent of one, a weakening of one);
2. it is equivalent to the conjunction of some premises;
3. it holds once every part of it equivalent to a premise is taken as true (the premises
   combined without looking inside them: ``(p1 ↔ p2)``, ``((p1 ∧ p2) ∨ x)``).

Formulas are read with reasoning-gym's own parser (its connectives ``∧ ∨ ¬ → ↔``); truth
tables are bit masks over the atoms of the premises and the conclusion, at most
:data:`MAX_ATOMS` of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

__all__ = ["MAX_ATOMS", "premises_are_consistent", "restates_premises"]

#: More atoms than this and a conclusion is left to reasoning-gym's scorer alone.
MAX_ATOMS = 12


class _Table:
    """Truth tables as bit masks: bit ``r`` is the formula's value on assignment ``r``."""

    def __init__(self, atoms: Sequence[str]) -> None:
        self.atoms = {name: i for i, name in enumerate(sorted(atoms))}
        rows = 1 << len(self.atoms)
        self.full = (1 << rows) - 1
        self.atom_mask = {
            name: sum(1 << r for r in range(rows) if (r >> i) & 1) for name, i in self.atoms.items()
        }

    def mask(self, expr: Any, true: frozenset[int] = frozenset()) -> int:
        """The table of ``expr``; a part whose table is in ``true`` counts as always true."""
        return self._masks(expr, true)[1]

    def _masks(self, expr: Any, true: frozenset[int]) -> tuple[int, int]:
        """(the table of ``expr``, its table with the parts in ``true`` taken as true)."""
        op = expr.operator
        if op is None:
            plain = kept = self.atom_mask[expr.left]
        elif op == "¬":
            inner, inner_kept = self._masks(expr.left, true)
            plain, kept = self.full & ~inner, self.full & ~inner_kept
        else:
            left, right = self._masks(expr.left, true), self._masks(expr.right, true)
            plain, kept = (self._combine(op, left[i], right[i]) for i in (0, 1))
        return plain, (self.full if plain in true else kept)

    def _combine(self, op: str, left: int, right: int) -> int:
        if op == "∧":
            return left & right
        if op == "∨":
            return left | right
        if op == "→":
            return (self.full & ~left) | right
        if op == "↔":
            return self.full & ~(left ^ right)
        raise ValueError(f"unknown connective {op!r}")


def _atoms(expr: Any, out: set[str]) -> set[str]:
    if expr.operator is None:
        out.add(expr.left)
    else:
        _atoms(expr.left, out)
        if expr.right is not None:
            _atoms(expr.right, out)
    return out


def _parse(texts: Sequence[str]) -> tuple[list[Any], _Table] | None:
    from reasoning_gym.logic.propositional_logic import parse_expr

    exprs = [parse_expr(t) for t in texts]
    atoms: set[str] = set()
    for e in exprs:
        _atoms(e, atoms)
    if len(atoms) > MAX_ATOMS:
        return None
    return exprs, _Table(sorted(atoms))


def restates_premises(conclusion: str, premises: Sequence[str]) -> bool | None:
    """Whether ``conclusion`` only restates ``premises`` (see the module docstring).

    ``None`` when it cannot be decided: a formula that does not parse, or more than
    :data:`MAX_ATOMS` atoms.
    """
    try:
        parsed = _parse([conclusion, *premises])
        if parsed is None:
            return None
        (answer, *given), table = parsed
        target = table.mask(answer)
        tables = [table.mask(p) for p in given]
        # 1. entailed by one premise: every row where the premise holds, the answer holds.
        if any(p & ~target == 0 for p in tables):
            return True
        # 2. equivalent to the conjunction of some premises.
        for size in range(2, len(tables) + 1):
            for subset in combinations(tables, size):
                conj = table.full
                for p in subset:
                    conj &= p
                if conj == target:
                    return True
        # 3. true whatever the premises say, once each premise found in it is taken as true.
        return table.mask(answer, frozenset(tables)) == table.full
    except Exception:  # noqa: BLE001 - model text that the parser refuses is decided elsewhere
        return None


def premises_are_consistent(premises: Sequence[str]) -> bool | None:
    """Whether some assignment makes every premise true (``None``: cannot be decided)."""
    try:
        parsed = _parse(list(premises))
        if parsed is None:
            return None
        given, table = parsed
        conj = table.full
        for p in given:
            conj &= table.mask(p)
        return conj != 0
    except Exception:  # noqa: BLE001 - a record that does not parse is left as it is
        return None
