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

Weak conclusions (issue #25). A valid conclusion that restates nothing can still say almost
nothing: ``(P ↔ Q)`` follows from about a third of the premise sets the default generator
draws, so a policy answering it everywhere earned 28% without reading the premises. A
conclusion is *informative* (:func:`is_informative`) when it is equivalent to the task's
reference conclusion, or when it follows from at most :data:`MAX_VALID_SHARE` of the premise
sets the generator draws for the same config (:func:`valid_share`: :data:`SHARE_SAMPLE`
seeded draws, measured once per config and process). A constant answer then earns at most
that share plus the share of tasks whose reference it is equivalent to, which the answer
balance caps at 5% too (:func:`reference_class` is a task's answer label).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

__all__ = [
    "MAX_ATOMS",
    "MAX_VALID_SHARE",
    "SHARE_SAMPLE",
    "is_informative",
    "premises_are_consistent",
    "reference_class",
    "restates_premises",
    "valid_share",
]

#: More atoms than this and a conclusion is left to reasoning-gym's scorer alone.
MAX_ATOMS = 12
#: The largest share of a config's premise sets a paid conclusion may follow from (unless it
#: is equivalent to the task's reference conclusion).
MAX_VALID_SHARE = 0.05
#: Generator draws that estimate :func:`valid_share` (consistent premise sets only count).
SHARE_SAMPLE = 2000
#: reasoning-gym draw number of the share sample (no task's, no probe's).
_SHARE_ATTEMPT = 2**31 - 3


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


_CONFIG_FIELDS = {
    "vars": ("min_vars", "max_vars"),
    "statements": ("min_statements", "max_statements"),
    "complexity": ("min_complexity", "max_complexity"),
}


def _config_of(metadata: Mapping[str, Any]) -> dict[str, int] | None:
    """The generator config a task was drawn with, from its metadata's ``difficulty``."""
    difficulty = metadata.get("difficulty")
    if not isinstance(difficulty, Mapping):
        return None
    config: dict[str, int] = {}
    for name, (low, high) in _CONFIG_FIELDS.items():
        bounds = difficulty.get(name)
        if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
            return None
        if not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds):
            return None
        config[low], config[high] = int(bounds[0]), int(bounds[1])
    return config


def _config_atoms(config: Mapping[str, int]) -> list[str]:
    """Every atom the generator may name under ``config`` (``P``, ``Q``, ...)."""
    return [chr(ord("P") + i) for i in range(config["max_vars"])]


#: Share samples already drawn, by config: (their atoms, each consistent set's table).
_SAMPLES: dict[tuple[tuple[str, int], ...], tuple[_Table, list[int]] | None] = {}


def _share_sample(config: Mapping[str, int]) -> tuple[_Table, list[int]] | None:
    """The tables of :data:`SHARE_SAMPLE` premise sets drawn for ``config`` (seeded, cached)."""
    ident = tuple(sorted(config.items()))
    if ident not in _SAMPLES:
        _SAMPLES[ident] = None
        atoms = _config_atoms(config)
        if len(atoms) <= MAX_ATOMS:
            from reasoning_gym.logic.propositional_logic import parse_expr

            from rllm_envs.reasoning_gym.tasks import _create

            dataset = _create("propositional_logic", 0, SHARE_SAMPLE, config, _SHARE_ATTEMPT)
            table = _Table(atoms)
            sets = []
            for i in range(SHARE_SAMPLE):
                conj = table.full
                for premise in dataset[i]["metadata"]["premises"]:
                    conj &= table.mask(parse_expr(premise))
                if conj:
                    sets.append(conj)
            _SAMPLES[ident] = (table, sets) if sets else None
    return _SAMPLES[ident]


def _class_in(table: _Table, formula: str) -> int | None:
    """The truth table of ``formula`` over ``table``'s atoms (``None``: other atoms, no parse)."""
    from reasoning_gym.logic.propositional_logic import parse_expr

    expr = parse_expr(formula)
    if not _atoms(expr, set()) <= set(table.atoms):
        return None
    return table.mask(expr)


def valid_share(conclusion: str, metadata: Mapping[str, Any]) -> float | None:
    """The share of the config's premise sets that ``conclusion`` follows from.

    The config is read from the task's ``metadata`` (its ``difficulty`` ranges); the premise
    sets are :data:`SHARE_SAMPLE` generator draws of it (contradictory ones left out).
    ``None``: no config in the metadata, more than :data:`MAX_ATOMS` atoms, or a conclusion
    that does not parse or names an atom the config never draws.
    """
    try:
        config = _config_of(metadata)
        sample = _share_sample(config) if config is not None else None
        if sample is None:
            return None
        table, sets = sample
        target = _class_in(table, conclusion)
        if target is None:
            return None
        return sum(1 for conj in sets if conj & ~target == 0) / len(sets)
    except Exception:  # noqa: BLE001 - model text the parser refuses is decided elsewhere
        return None


def reference_class(metadata: Mapping[str, Any], reference: str | None) -> str | None:
    """A task's reference conclusion up to equivalence: its truth table over the config's atoms.

    ``None`` when it cannot be computed. The answer balance caps each class's share of tasks
    (:mod:`rllm_envs.reasoning_gym.balance`), so no single formula is the reference of more
    than 5% of them.
    """
    if reference is None:
        return None
    try:
        config = _config_of(metadata)
        if config is None or config["max_vars"] > MAX_ATOMS:
            return None
        table = _Table(_config_atoms(config))
        mask = _class_in(table, reference)
        return None if mask is None else f"⊨{''.join(table.atoms)}:{mask:x}"
    except Exception:  # noqa: BLE001 - a reference that does not parse has no class
        return None


def _equivalent(a: str, b: str) -> bool:
    parsed = _parse([a, b])
    if parsed is None:
        return False
    (x, y), table = parsed
    return table.mask(x) == table.mask(y)


def is_informative(
    conclusion: str, metadata: Mapping[str, Any], reference: str | None
) -> bool | None:
    """Whether a valid ``conclusion`` says enough to be paid (see the module docstring).

    True when it is equivalent to ``reference`` or follows from at most
    :data:`MAX_VALID_SHARE` of the config's premise sets; ``None`` when that cannot be
    decided (:func:`valid_share` is ``None``).
    """
    try:
        if reference is not None and _equivalent(conclusion, reference):
            return True
    except Exception:  # noqa: BLE001 - an unparsed conclusion is decided by its share
        pass
    share = valid_share(conclusion, metadata)
    return None if share is None else share <= MAX_VALID_SHARE
